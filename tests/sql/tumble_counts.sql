-- Tumbling 10-minute windows of event time (the Kafka timestamp), per channel.
CREATE TABLE clicks (
  channel STRING,
  amount INT,
  event_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  WATERMARK FOR event_time AS event_time - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'format' = 'csv'
);

CREATE TABLE channel_windows (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  channel STRING,
  clicks BIGINT,
  amount BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);

INSERT INTO channel_windows
SELECT window_start, window_end, channel, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(event_time), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, channel;
