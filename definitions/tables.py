"""The example's Kafka tables, declared with Flink's connector options.

Bootstrap servers are not set here: the ``KafkaResource`` supplies them, so the same tables run
against the embedded demo broker or a real cluster (``KAFKA_BOOTSTRAP_SERVERS``).
"""

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS

ORDERS = KafkaTableSpec.from_options(
    {
        "connector": "kafka",
        "topic": "orders",
        "properties.group.id": "channel_revenue",
        "scan.startup.mode": "earliest-offset",
        "format": "json",
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
        "sink.delivery-guarantee": "at-least-once",
    },
    columns=[
        {"name": "order_channel", "type": "STRING"},
        {"name": "order_count", "type": "BIGINT"},
        {"name": "revenue", "type": "DOUBLE"},
    ],
    role="sink",
    name="channel_revenue",
)
