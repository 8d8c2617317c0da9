-- Stateless enrichment: metadata columns, functions, a filter; JSON in, JSON out.
SET 'pipeline.name' = 'enrich';
SET 'table.exec.source.idle-timeout' = '10 s';

CREATE TABLE orders (
  order_id BIGINT,
  channel STRING,
  price DECIMAL(10, 2),
  payload STRING,
  `ts` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  `partition` INT METADATA VIRTUAL
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'properties.group.id' = 'enrich-{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE enriched (
  order_id BIGINT,
  channel_upper STRING,
  price_cents BIGINT,
  coupon STRING,
  first_tag STRING,
  hour_of_day STRING
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);

CREATE TEMPORARY VIEW paid AS
SELECT * FROM orders WHERE price > 0;

INSERT INTO enriched
SELECT
  order_id,
  UPPER(channel),
  CAST(price * 100 AS BIGINT),
  JSON_VALUE(payload, '$.coupon'),
  SPLIT_INDEX(JSON_VALUE(payload, '$.tags'), ',', 0),
  DATE_FORMAT(`ts`, 'HH')
FROM paid;
