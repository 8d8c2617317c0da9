-- Last-row deduplication on event time into an upsert sink.
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
  user_name STRING, order_id BIGINT, amount INT,
  PRIMARY KEY (user_name) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'key.format' = 'json',
  'value.format' = 'json');

INSERT INTO out_table SELECT user_name, order_id, amount FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY user_name ORDER BY ts DESC) AS rn FROM orders) WHERE rn = 1;
