-- One source, two sinks, one statement set: raw lines routed by a regex.
CREATE TABLE lines (
  line STRING
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'raw'
);

CREATE TABLE errors (msg STRING) WITH ('connector' = 'kafka', 'topic' = '{sink}-errors', 'format' = 'raw');
CREATE TABLE infos (msg STRING) WITH ('connector' = 'kafka', 'topic' = '{sink}-infos', 'format' = 'raw');

EXECUTE STATEMENT SET
BEGIN
  INSERT INTO errors SELECT REGEXP_EXTRACT(line, '^ERROR (.*)$', 1) FROM lines WHERE line LIKE 'ERROR %';
  INSERT INTO infos SELECT REGEXP_EXTRACT(line, '^INFO (.*)$', 1) FROM lines WHERE line LIKE 'INFO %';
END;
