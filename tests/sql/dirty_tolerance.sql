-- Malformed JSON is dirty data: skipped and counted up to the tolerance, then the run fails and
-- the checkpoint stays where it was.
CREATE TABLE events (
  id BIGINT,
  name STRING
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json',
  'ingestion.ignore-errors' = 'true',
  'ingestion.error-tolerance.max-count' = '1'
);

CREATE TABLE names (id BIGINT, name STRING) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'csv'
);

INSERT INTO names SELECT id, UPPER(name) FROM events;
