-- TUMBLE over a view.
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

CREATE VIEW web_orders AS SELECT * FROM orders WHERE channel = 'web';

INSERT INTO out_table SELECT window_start, window_end, SUM(amount) FROM TABLE(TUMBLE(TABLE web_orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end;
