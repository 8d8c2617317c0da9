-- Hopping windows of 20 minutes every 10 minutes, one hourly partition per run, into a plain
-- (append-only) topic: each run emits the windows that end in its hour, reading 10 minutes of
-- the hour before for the windows that begin there, so every window is written exactly once.
CREATE TABLE payments (
  amount INT,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'format' = 'json'
);

CREATE TABLE payment_windows (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  payments BIGINT,
  total INT
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);

INSERT INTO payment_windows
SELECT window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(
  HOP(DATA => TABLE payments, TIMECOL => DESCRIPTOR(ts), SLIDE => INTERVAL '10' MINUTES,
      SIZE => INTERVAL '20' MINUTES))
GROUP BY window_start, window_end;
