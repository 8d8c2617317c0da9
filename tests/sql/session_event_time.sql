-- Sessions of orders per channel on a payload time column: Flink's SESSION window table
-- function (and the legacy group window), each session written once the watermark passes its
-- end.
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

CREATE TABLE channel_sessions (
  channel STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  orders BIGINT,
  revenue INT,
  last_id BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);

-- the same sessions as a legacy group window
CREATE TABLE channel_sessions_legacy (
  channel STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  orders BIGINT,
  revenue INT,
  last_id BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}-legacy',
  'format' = 'json'
);

EXECUTE STATEMENT SET BEGIN
INSERT INTO channel_sessions
SELECT channel, window_start, window_end, COUNT(*), SUM(amount), MAX(order_id)
FROM TABLE(SESSION(TABLE orders PARTITION BY channel, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY channel, window_start, window_end;
INSERT INTO channel_sessions_legacy
SELECT channel, SESSION_START(ts, INTERVAL '5' SECOND), SESSION_END(ts, INTERVAL '5' SECOND),
  COUNT(*), SUM(amount), MAX(order_id)
FROM orders
GROUP BY channel, SESSION(ts, INTERVAL '5' SECOND);
END;
