-- CREATE TABLE ... AS SELECT: the sink's columns are the query's, CSV in, JSON out.
CREATE TABLE trips (
  city STRING,
  km DOUBLE,
  minutes INT
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'csv'
);

CREATE TABLE speeds WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
) AS SELECT LOWER(city) AS city, ROUND(km / minutes * 60, 1) AS kmh FROM trips WHERE minutes > 0;
