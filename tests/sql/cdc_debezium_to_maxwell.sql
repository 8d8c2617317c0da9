-- A Debezium changelog re-encoded as Maxwell: SELECT * carries each row's kind to the sink.
CREATE TABLE products (
  id BIGINT,
  name STRING,
  weight DECIMAL(10, 2),
  origin_table STRING METADATA FROM 'value.source.table' VIRTUAL
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'properties.group.id' = 'cdc-{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json'
);

CREATE TABLE products_maxwell (
  id BIGINT,
  name STRING,
  weight DECIMAL(10, 2),
  origin_table STRING
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'maxwell-json'
);

INSERT INTO products_maxwell SELECT * FROM products;
