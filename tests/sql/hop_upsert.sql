-- Hopping 10-minute windows every 5 minutes over a topic pattern, counted into upsert-kafka:
-- each run recomputes from the earliest offsets, so the latest value per window is the total.
CREATE TABLE visits (
  page STRING,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) WITH (
  'connector' = 'kafka',
  'topic-pattern' = '{source}-visits-.*',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE visit_windows (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  visits BIGINT,
  pages BIGINT,
  PRIMARY KEY (window_start, window_end) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{sink}',
  'key.format' = 'json',
  'value.format' = 'json'
);

INSERT INTO visit_windows
SELECT window_start, window_end, COUNT(*), COUNT(DISTINCT page)
FROM TABLE(HOP(TABLE visits, DESCRIPTOR(ts), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))
GROUP BY window_start, window_end;
