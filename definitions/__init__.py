"""Example code location: orders in Kafka → per-channel revenue in Kafka, computed by Spark.

Load it with ``dagster dev -w workspace.yaml``. It talks to ``$KAFKA_BOOTSTRAP_SERVERS`` or, when
unset, to the embedded demo broker started by ``make demo`` / ``dkf local-kafka start``.
"""

import os

from dagster import Definitions
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dagster_kafka_flinklike import KafkaResource, SparkResource, kafka_streaming_asset
from dagster_kafka_flinklike.local import resolve_bootstrap_servers
from dagster_kafka_flinklike.spark import local_spark_config

from .tables import CHANNEL_REVENUE, ORDERS


@kafka_streaming_asset(sources={"orders": ORDERS}, sink=CHANNEL_REVENUE, group_name="orders")
def channel_revenue(context, orders: DataFrame) -> DataFrame:
    """Per order channel: how many orders this run read and their revenue (sum of real_pay)."""
    return orders.groupBy("order_channel").agg(
        F.count(F.lit(1)).alias("order_count"),
        F.round(F.sum("real_pay"), 2).alias("revenue"),
    )


class ExampleKafkaResource(KafkaResource):
    """Falls back to the embedded demo broker when no cluster is configured."""

    def default_bootstrap_servers(self) -> str | None:
        return resolve_bootstrap_servers()


def spark_config() -> dict:
    """Local Spark by default; ``SPARK_MASTER`` points the same code at a cluster."""
    config = local_spark_config("channel_revenue")
    if os.environ.get("SPARK_MASTER"):
        config["spark.master"] = os.environ["SPARK_MASTER"]
    return config


defs = Definitions(
    assets=[channel_revenue],
    resources={
        "kafka": ExampleKafkaResource(),
        "pyspark": SparkResource(spark_config=spark_config()),
    },
)
