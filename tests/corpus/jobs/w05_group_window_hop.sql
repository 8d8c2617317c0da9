-- Legacy HOP group window.
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
  window_start TIMESTAMP(3), window_end TIMESTAMP(3), total INT
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT HOP_START(ts, INTERVAL '10' SECOND, INTERVAL '20' SECOND), HOP_END(ts, INTERVAL '10' SECOND, INTERVAL '20' SECOND), SUM(amount) FROM orders GROUP BY HOP(ts, INTERVAL '10' SECOND, INTERVAL '20' SECOND);
