-- The two largest payments per account, and the two smallest overall (with NULL amounts and
-- ties), into upsert-kafka: a row pushed out of a top is deleted (a tombstone), as Flink's
-- append-only Top-N deletes it.
CREATE TABLE payments (
  id BIGINT,
  account STRING,
  amount INT
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE largest (
  account STRING,
  id BIGINT,
  amount INT,
  PRIMARY KEY (account, id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{sink}',
  'key.format' = 'json',
  'value.format' = 'json'
);

CREATE TABLE smallest (
  id BIGINT,
  amount INT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{sink}-smallest',
  'key.format' = 'json',
  'value.format' = 'json'
);

EXECUTE STATEMENT SET BEGIN
INSERT INTO largest
SELECT account, id, amount FROM (
  SELECT id, account, amount,
    ROW_NUMBER() OVER (PARTITION BY account ORDER BY amount DESC) AS row_num
  FROM payments)
WHERE row_num <= 2;
INSERT INTO smallest
SELECT id, amount FROM (
  SELECT id, amount, account,
    ROW_NUMBER() OVER (PARTITION BY account ORDER BY amount ASC, id DESC) AS rn
  FROM payments)
WHERE rn < 3;
END;
