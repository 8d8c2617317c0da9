-- Keyed readings from two topics (a topic list): key fields with a prefix, a computed column, a
-- virtual metadata column, a header filter, into an exactly-once sink.
CREATE TABLE readings (
  k_sensor STRING,
  celsius DOUBLE,
  site STRING,
  fahrenheit AS celsius * 9 / 5 + 32,
  src STRING METADATA FROM 'topic' VIRTUAL
) WITH (
  'connector' = 'kafka',
  'topic' = '{source};{source}-b',
  'scan.startup.mode' = 'earliest-offset',
  'key.format' = 'json',
  'key.fields' = 'k_sensor',
  'key.fields-prefix' = 'k_',
  'value.format' = 'json',
  'value.fields-include' = 'EXCEPT_KEY',
  'scan.header-filter' = 'env:prod'
);

CREATE TABLE hot (
  sensor STRING,
  fahrenheit DOUBLE,
  src STRING
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'hot-{sink}'
);

INSERT INTO hot
SELECT k_sensor, fahrenheit, src FROM readings WHERE fahrenheit > 100;
