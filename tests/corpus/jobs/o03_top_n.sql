-- Top-2 per channel.
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
  channel STRING, order_id BIGINT, amount INT,
  PRIMARY KEY (channel, order_id) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'key.format' = 'json',
  'value.format' = 'json');

INSERT INTO out_table SELECT channel, order_id, amount FROM (SELECT channel, order_id, amount, ROW_NUMBER() OVER (PARTITION BY channel ORDER BY amount DESC) AS rn FROM orders) WHERE rn <= 2;
