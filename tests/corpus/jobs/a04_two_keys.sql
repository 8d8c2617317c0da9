-- Two grouping keys.
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
  channel STRING, user_name STRING, orders BIGINT,
  PRIMARY KEY (channel, user_name) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'key.format' = 'json',
  'value.format' = 'json');

INSERT INTO out_table SELECT channel, user_name, COUNT(*) FROM orders GROUP BY channel, user_name;
