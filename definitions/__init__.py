"""Example code location: orders in Kafka → per-channel revenue in Kafka, computed by Spark.

It shows the Dagster side of the connector on one pipeline: the source topic as an observable
external asset, the streaming asset with its four Kafka checks (dirty data, transaction timeout,
hanging transactions, consumer lag), an hourly-partitioned streaming asset over the same topic
(windows of record timestamps, single-run backfills, a late-data check), the orders as Avro
with a Schema Registry (``orders_avro``, ``avro-confluent``), a scheduled job that
runs the checks alone, and the partition-discovery and new-data sensors.

The components under ``definitions/defs/`` (a YAML-declared pipeline, ``large_orders``) are merged
in, so the same code location is a ``dg`` project: ``dg check defs``, ``dg list defs``, ``dg dev``.

Load it with ``dagster dev -w workspace.yaml`` (or ``dg dev``). It talks to
``$KAFKA_BOOTSTRAP_SERVERS`` or, when unset, to the embedded demo broker started by ``make demo`` /
``dkf local-kafka start``.
"""

from datetime import timedelta
from pathlib import Path

from dagster import (
    AssetSelection,
    Definitions,
    HourlyPartitionsDefinition,
    ScheduleDefinition,
    define_asset_job,
    in_process_executor,
    load_from_defs_folder,
)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dagster_kafka_flinklike import (
    ConsumerLagCheck,
    DirtyDataCheck,
    HangingTransactionsCheck,
    KafkaResource,
    LateDataCheck,
    SparkResource,
    TransactionTimeoutCheck,
    build_kafka_discovery_sensors,
    build_kafka_new_data_sensor,
    build_kafka_source_assets,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.local import resolve_bootstrap_servers, resolve_spark_remote
from dagster_kafka_flinklike.spark import default_spark_config

from .tables import (
    CHANNEL_REVENUE,
    CHANNEL_REVENUE_HOURLY,
    ORDERS,
    ORDERS_AVRO,
    ORDERS_BY_TIME,
    ORDERS_FOR_AVRO,
)


@kafka_streaming_asset(
    sources={"orders": ORDERS},
    sink=CHANNEL_REVENUE,
    group_name="orders",
    checks=[
        # More than 5% malformed orders: the check fails and blocks downstream assets.
        DirtyDataCheck(max_ratio=0.05, blocking=True),
        TransactionTimeoutCheck(),
        HangingTransactionsCheck(),
        ConsumerLagCheck(
            max_pending_records=10_000, max_pending_age=timedelta(minutes=30), severity="WARN"
        ),
    ],
)
def channel_revenue(context, orders: DataFrame) -> DataFrame:
    """Per order channel: how many orders this run read and their revenue (sum of real_pay)."""
    return orders.groupBy("order_channel").agg(
        F.count(F.lit(1)).alias("order_count"),
        F.round(F.sum("real_pay"), 2).alias("revenue"),
    )


@kafka_streaming_asset(
    sources={"orders": ORDERS_BY_TIME},
    sink=CHANNEL_REVENUE_HOURLY,
    group_name="orders",
    partitions_def=HourlyPartitionsDefinition(start_date="2026-11-20-00:00", end_offset=1),
    allowed_lateness=timedelta(minutes=5),
    checks=[DirtyDataCheck(max_ratio=0.05), LateDataCheck(severity="WARN")],
)
def channel_revenue_hourly(context, orders: DataFrame) -> DataFrame:
    """Per order channel and hour of the records' timestamps: orders and revenue. A backfill
    over many hours is one run (one Spark job)."""
    return orders.groupBy(F.date_trunc("hour", "ts").alias("window_start"), "order_channel").agg(
        F.count(F.lit(1)).alias("order_count"),
        F.round(F.sum("real_pay"), 2).alias("revenue"),
    )


@kafka_streaming_asset(sources={"orders": ORDERS_FOR_AVRO}, sink=ORDERS_AVRO, group_name="orders")
def orders_avro(context, orders: DataFrame) -> DataFrame:
    """The clean orders re-encoded as Avro with the Schema Registry (topic 'orders_avro')."""
    return orders


class ExampleKafkaResource(KafkaResource):
    """Falls back to the embedded demo broker when no cluster is configured."""

    def default_bootstrap_servers(self) -> str | None:
        return resolve_bootstrap_servers()


def spark_config() -> dict:
    """Local Spark by default; ``SPARK_MASTER`` points the same code at a cluster. Every run
    is a process of its own that materializes one increment, so the driver JVM is tuned for
    short runs."""
    return default_spark_config("channel_revenue", short_runs=True)


#: The checks alone (no data read): lag and transaction health between runs.
kafka_health = define_asset_job(
    "kafka_health",
    selection=AssetSelection.checks_for_assets(channel_revenue, channel_revenue_hourly),
)

#: The Python definitions, and the YAML components of ``definitions/defs/``.
defs = Definitions.merge(
    Definitions(
        # The graph reads topic 'orders' → channel_revenue (which is topic 'channel_revenue').
        assets=[
            channel_revenue,
            channel_revenue_hourly,
            orders_avro,
            *build_kafka_source_assets(
                [channel_revenue, channel_revenue_hourly, orders_avro], group_name="orders"
            ),
        ],
        jobs=[kafka_health],
        schedules=[ScheduleDefinition(job=kafka_health, cron_schedule="*/15 * * * *")],
        sensors=[
            *build_kafka_discovery_sensors([channel_revenue]),
            build_kafka_new_data_sensor(
                channel_revenue, min_pending_records=500, max_pending_age=timedelta(minutes=5)
            ),
        ],
        resources={
            "kafka": ExampleKafkaResource(),
            # A running `dkf local-spark` server (or $SPARK_REMOTE): runs are its clients.
            "pyspark": SparkResource(spark_config=spark_config(), remote=resolve_spark_remote()),
        },
        # A run's steps share its process and so one Spark session (the default executor
        # would start a process, and a Spark driver, per step).
        executor=in_process_executor,
    ),
    load_from_defs_folder(path_within_project=Path(__file__).parent),
)
