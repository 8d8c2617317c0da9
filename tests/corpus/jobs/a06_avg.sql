-- AVG per channel (the argument's type).
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
  channel STRING, mean INT,
  PRIMARY KEY (channel) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'key.format' = 'json',
  'value.format' = 'json');

INSERT INTO out_table SELECT channel, AVG(amount) FROM orders GROUP BY channel;
