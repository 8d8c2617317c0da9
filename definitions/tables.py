"""The example's Kafka tables, declared with Flink's connector options.

Bootstrap servers are not set here: the ``KafkaResource`` supplies them, so the same tables run
against the embedded demo broker or a real cluster (``KAFKA_BOOTSTRAP_SERVERS``).
"""

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.local import resolve_schema_registry_url
from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS

#: ``$SCHEMA_REGISTRY_URL``, else the local registry while it runs (``dkf local-registry start``),
#: else Confluent's usual address. Nothing connects to it while definitions load; a run whose
#: registry is not there fails, saying so.
SCHEMA_REGISTRY_URL = resolve_schema_registry_url() or "http://127.0.0.1:8081"

ORDERS = KafkaTableSpec.from_options(
    {
        "connector": "kafka",
        "topic": "orders",
        "properties.group.id": "channel_revenue",
        "scan.startup.mode": "earliest-offset",
        # Flink's default: look for new partitions every 5 minutes (the discovery sensor).
        "scan.topic-partition-discovery.interval": "5 min",
        "format": "json",
        # Some producers send malformed orders: skip and count them, up to 50 per run.
        "ingestion.ignore-errors": "true",
        "ingestion.error-tolerance.max-count": "50",
    },
    columns=ORDER_COLUMNS,
    role="source",
    name="orders",
)

CHANNEL_REVENUE = KafkaTableSpec.from_options(
    {
        "connector": "kafka",
        "topic": "channel_revenue",
        "key.format": "raw",
        "key.fields": "order_channel",
        "value.format": "json",
        # Output and the orders' offsets commit in one Kafka transaction.
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": "channel-revenue",
    },
    columns=[
        {"name": "order_channel", "type": "STRING"},
        {"name": "order_count", "type": "BIGINT"},
        {"name": "revenue", "type": "DOUBLE"},
    ],
    role="sink",
    name="channel_revenue",
)

#: The same topic read by record timestamps (the hourly asset's windows): ``ts`` is each
#: record's Kafka timestamp. Windows commit no offsets, so no group id is needed.
ORDERS_BY_TIME = KafkaTableSpec.from_options(
    {
        "connector": "kafka",
        "topic": "orders",
        "format": "json",
        "ingestion.ignore-errors": "true",
        "ingestion.error-tolerance.max-count": "50",
    },
    columns=[
        *ORDER_COLUMNS,
        {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "timestamp"},
    ],
    role="source",
    name="orders",
)

#: Revenue per channel and hour, keyed by both: re-materializing an hour rewrites the same keys
#: (an upsert changelog, so a backfill is idempotent for its readers).
CHANNEL_REVENUE_HOURLY = KafkaTableSpec.from_options(
    {
        "connector": "upsert-kafka",
        "topic": "channel_revenue_hourly",
        "key.format": "json",
        "value.format": "json",
    },
    columns=[
        {"name": "window_start", "type": "TIMESTAMP_LTZ(3)"},
        {"name": "order_channel", "type": "STRING"},
        {"name": "order_count", "type": "BIGINT"},
        {"name": "revenue", "type": "DOUBLE"},
    ],
    primary_key=["window_start", "order_channel"],
    role="sink",
    name="channel_revenue_hourly",
)

#: The orders again, for the Avro copy: its own consumer group and checkpoint.
ORDERS_FOR_AVRO = KafkaTableSpec.from_options(
    {**ORDERS.options, "properties.group.id": "orders_avro"},
    columns=ORDER_COLUMNS,
    role="source",
    name="orders",
)

#: Clean orders as Avro in Confluent's wire format: the schema derived from the columns is
#: registered under subject 'orders_avro-value' on the first write, and every record carries
#: its id, so Avro consumers (Flink's 'avro-confluent', Kafka Connect, ksqlDB) read it as is.
ORDERS_AVRO = KafkaTableSpec.from_options(
    {
        "connector": "kafka",
        "topic": "orders_avro",
        "key.format": "raw",
        "key.fields": "order_id",
        "value.format": "avro-confluent",
        "value.avro-confluent.url": SCHEMA_REGISTRY_URL,
        "sink.delivery-guarantee": "at-least-once",
    },
    columns=ORDER_COLUMNS,
    role="sink",
    name="orders_avro",
)
