-- A view, then an insert over it.
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
  order_id BIGINT, doubled INT
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

CREATE VIEW big_orders AS SELECT order_id, amount FROM orders WHERE amount > 3;

INSERT INTO out_table SELECT order_id, amount * 2 FROM big_orders;
