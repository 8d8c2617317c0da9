-- String functions.
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
  order_id BIGINT, label STRING, first_letter STRING, n INT
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT order_id, CONCAT(UPPER(channel), '-', user_name), SUBSTRING(user_name FROM 1 FOR 1), CHAR_LENGTH(user_name) FROM orders;
