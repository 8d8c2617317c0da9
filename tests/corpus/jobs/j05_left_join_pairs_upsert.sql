-- A left join into an upsert sink keyed by both sides: the NULL-padded row leaves when a match arrives.
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
CREATE TABLE others (
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
  'properties.group.id' = 'others-{orders}',
  'format' = 'json'
);

CREATE TABLE out_table (
  order_id BIGINT, other_id BIGINT, user_name STRING,
  PRIMARY KEY (order_id, other_id) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'key.format' = 'json',
  'value.format' = 'json');

INSERT INTO out_table SELECT o.order_id, x.order_id, o.user_name FROM orders AS o LEFT JOIN others AS x ON o.user_name = x.user_name AND x.amount > o.amount;
