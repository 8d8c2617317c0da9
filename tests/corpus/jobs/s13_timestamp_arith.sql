-- TIMESTAMPADD and comparisons.
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
  order_id BIGINT, later TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT order_id, TIMESTAMPADD(MINUTE, 1, ts) FROM orders WHERE ts < TIMESTAMP '2026-11-20 00:00:20';
