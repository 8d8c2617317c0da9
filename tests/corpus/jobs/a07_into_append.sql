-- An aggregate into an append-only sink.
CREATE TABLE orders (
  order_id BIGINT,
  channel STRING,
  amount INT,
  user_name STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{orders}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE out_table (
  channel STRING, orders BIGINT
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT channel, COUNT(*) FROM orders GROUP BY channel;
