-- First-row deduplication on processing time into an append-only sink (insert-only in Flink).
CREATE TABLE orders (
  order_id BIGINT,
  channel STRING,
  amount INT,
  user_name STRING,
  ts TIMESTAMP(3),
  pt AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{orders}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE out_table (
  channel STRING, order_id BIGINT, user_name STRING
) WITH ('connector' = 'kafka', 'topic' = '{sink}', 'format' = 'json');

INSERT INTO out_table SELECT channel, order_id, user_name FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY channel ORDER BY pt ASC) AS rn FROM orders) WHERE rn = 1;
