-- MATCH_RECOGNIZE.
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
  user_name STRING, first_id BIGINT
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT * FROM orders MATCH_RECOGNIZE (PARTITION BY user_name ORDER BY ts MEASURES A.order_id AS first_id ONE ROW PER MATCH PATTERN (A B) DEFINE A AS A.amount > 0, B AS B.amount > 0);
