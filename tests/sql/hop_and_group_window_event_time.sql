-- Hopping windows (a table function), a legacy group window and cumulating windows with a
-- distinct count, on event time, one statement set.
CREATE TABLE clicks (
  user_name STRING,
  url STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE hop_counts (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  user_name STRING,
  clicks BIGINT,
  last_click TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

CREATE TABLE minute_urls (
  w_start TIMESTAMP(3),
  w_end TIMESTAMP(3),
  urls BIGINT
) WITH ('connector' = 'kafka', 'topic' = '{sink}-legacy', 'format' = 'json');

CREATE TABLE cumulative_users (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  users BIGINT,
  clicks BIGINT
) WITH ('connector' = 'kafka', 'topic' = '{sink}-cumulate', 'format' = 'json');

EXECUTE STATEMENT SET BEGIN
INSERT INTO hop_counts
SELECT window_start, window_end, user_name, COUNT(url), MAX(ts)
FROM TABLE(HOP(TABLE clicks, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end, user_name;
INSERT INTO minute_urls
SELECT TUMBLE_START(ts, INTERVAL '20' SECOND), TUMBLE_END(ts, INTERVAL '20' SECOND), COUNT(*)
FROM clicks
GROUP BY TUMBLE(ts, INTERVAL '20' SECOND);
INSERT INTO cumulative_users
SELECT window_start, window_end, COUNT(DISTINCT user_name), COUNT(*)
FROM TABLE(CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '20' SECOND))
GROUP BY window_start, window_end;
END;
