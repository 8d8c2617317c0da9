-- A running aggregate into an upsert-kafka table (Flink emits updates; the latest per key wins).
CREATE TABLE payments (
  `user` STRING,
  amount BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE user_totals (
  `user` STRING,
  total BIGINT,
  payments BIGINT,
  PRIMARY KEY (`user`) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{sink}',
  'key.format' = 'json',
  'value.format' = 'json'
);

INSERT INTO user_totals
SELECT `user`, SUM(amount), COUNT(*) FROM payments GROUP BY `user`;
