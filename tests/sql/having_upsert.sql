-- An unbounded aggregate with HAVING into upsert-kafka: a group that leaves the result is
-- deleted (a tombstone), as Flink retracts it.
CREATE TABLE payments (
  account STRING,
  amount INT
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'properties.group.id' = 'having-{source}',
  'scan.startup.mode' = 'group-offsets',
  'properties.auto.offset.reset' = 'earliest',
  'format' = 'json'
);

CREATE TABLE big_accounts (
  account STRING,
  balance INT,
  moves BIGINT,
  PRIMARY KEY (account) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{sink}',
  'key.format' = 'json',
  'value.format' = 'json'
);

INSERT INTO big_accounts
SELECT account, SUM(amount), COUNT(*)
FROM payments
GROUP BY account
HAVING SUM(amount) >= 10;
