-- Cumulating windows: every 15 minutes, the running total since the hour began, one hourly
-- partition per run (each partition holds one whole cumulating window of an hour).
CREATE TABLE sales (
  amount INT,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'format' = 'csv'
);

CREATE TABLE running_sales (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  total BIGINT,
  PRIMARY KEY (window_start, window_end) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{sink}',
  'key.format' = 'json',
  'value.format' = 'json'
);

INSERT INTO running_sales
SELECT window_start, window_end, SUM(amount)
FROM TABLE(CUMULATE(TABLE sales, DESCRIPTOR(ts), INTERVAL '15' MINUTES, INTERVAL '1' HOUR))
GROUP BY window_start, window_end;
