-- Event-time tumbling windows on a payload column with a watermark: Flink's most common job.
CREATE TABLE orders (
  order_id BIGINT,
  channel STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE revenue (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  channel STRING,
  orders BIGINT,
  amount INT
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);

INSERT INTO revenue
SELECT window_start, window_end, channel, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, channel;
