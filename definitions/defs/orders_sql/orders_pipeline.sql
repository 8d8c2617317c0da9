-- The orders pipeline in Flink SQL: revenue per channel in tumbling 10-minute windows of the
-- orders' Kafka timestamps. Each run materializes one hourly partition (six whole windows), so
-- a backfill re-runs exactly the hours it names; the upsert sink makes re-runs idempotent.
SET 'pipeline.name' = 'orders_sql';

CREATE TABLE orders (
  order_id STRING,
  order_channel STRING,
  order_time TIMESTAMP(3),
  pay_amount DOUBLE,
  real_pay DOUBLE,
  pay_time STRING,
  user_id STRING,
  user_name STRING,
  area_id STRING,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'format' = 'json',
  'ingestion.ignore-errors' = 'true',
  'ingestion.error-tolerance.max-count' = '50'
);

CREATE TABLE channel_revenue_10min (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  order_channel STRING,
  order_count BIGINT,
  revenue DOUBLE,
  PRIMARY KEY (window_start, order_channel) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'channel_revenue_10min',
  'key.format' = 'json',
  'value.format' = 'json'
);

INSERT INTO channel_revenue_10min
SELECT window_start, window_end, order_channel, COUNT(*), ROUND(SUM(real_pay), 2)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
GROUP BY window_start, window_end, order_channel;
