-- Legacy TUMBLE group window.
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
  window_start TIMESTAMP(3), window_end TIMESTAMP(3), orders BIGINT
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT TUMBLE_START(ts, INTERVAL '10' SECOND), TUMBLE_END(ts, INTERVAL '10' SECOND), COUNT(*) FROM orders GROUP BY TUMBLE(ts, INTERVAL '10' SECOND);
