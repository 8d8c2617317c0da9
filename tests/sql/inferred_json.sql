-- A source that declares no columns: they are inferred from its JSON records when it runs
-- (here: id BIGINT, name STRING, score DOUBLE), and the query reads them by name.
CREATE TABLE readings WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE high_readings (
  id BIGINT,
  label STRING
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);

INSERT INTO high_readings
SELECT id, UPPER(name) FROM readings WHERE score > 1;
