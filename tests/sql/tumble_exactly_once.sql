-- Event-time tumbling windows into an exactly-once sink: the crash-safety job.
CREATE TABLE readings (
  id BIGINT,
  sensor STRING,
  reading INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE sensor_windows (
  window_start TIMESTAMP(3),
  sensor STRING,
  readings BIGINT,
  total BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'windows-{sink}'
);

INSERT INTO sensor_windows
SELECT window_start, sensor, COUNT(*), SUM(CAST(reading AS BIGINT))
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, sensor;
