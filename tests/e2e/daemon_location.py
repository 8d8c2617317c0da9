"""A code location for the daemon test: a streaming asset and its new-data sensor, running.

Topics come from ``DKF_DAEMON_SOURCE`` / ``DKF_DAEMON_SINK``, the cluster from
``KAFKA_BOOTSTRAP_SERVERS`` (the ``KafkaResource`` default).
"""

import os

from dagster import DefaultSensorStatus, Definitions, in_process_executor

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    build_kafka_new_data_sensor,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.spark import local_spark_config

COLUMNS = [{"name": "id", "type": "BIGINT"}]
SOURCE = KafkaTableSpec.from_options(
    {
        "connector": "kafka",
        "topic": os.environ["DKF_DAEMON_SOURCE"],
        "properties.group.id": f"daemon-{os.environ['DKF_DAEMON_SOURCE']}",
        "scan.startup.mode": "earliest-offset",
        "format": "json",
    },
    columns=COLUMNS,
    role="source",
)
SINK = KafkaTableSpec.from_options(
    {"connector": "kafka", "topic": os.environ["DKF_DAEMON_SINK"], "format": "json"},
    columns=COLUMNS,
    role="sink",
)


@kafka_streaming_asset(sources={"events": SOURCE}, sink=SINK, checks=[])
def daemon_copy(context, events):  # type: ignore[no-untyped-def]
    """Copies the events the sensor found."""
    return events


defs = Definitions(
    assets=[daemon_copy],
    sensors=[
        build_kafka_new_data_sensor(
            daemon_copy,
            min_pending_records=5,
            minimum_interval_seconds=5,
            default_status=DefaultSensorStatus.RUNNING,
        )
    ],
    resources={
        "kafka": KafkaResource(),
        "pyspark": SparkResource(spark_config=local_spark_config("daemon-test")),
    },
    executor=in_process_executor,
)
