"""One materialization of a Kafka → Spark → Kafka copy asset, run as a child process.

The kill tests start this with ``python -m tests.integration.kill_child BOOTSTRAP SOURCE SINK
GUARANTEE [SINK_OPTIONS_JSON]`` under a persistent ``$DAGSTER_HOME`` and SIGKILL it at chosen
moments; the broker fault tests add sink options (a shorter transaction timeout).
"""

from __future__ import annotations

import json
import sys

from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.spark import default_spark_config

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "payload", "type": "STRING"}]


def build(
    source_topic: str, sink_topic: str, guarantee: str, sink_extra: dict[str, str] | None = None
) -> object:
    """The copy asset: every source record becomes one sink record."""
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"copy-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
        },
        columns=COLUMNS,
        role="source",
    )
    sink_options = {
        "connector": "kafka",
        "topic": sink_topic,
        "format": "json",
        "sink.delivery-guarantee": guarantee,
    }
    if guarantee == "exactly-once":
        sink_options["sink.transactional-id-prefix"] = f"copy-{sink_topic}"
    sink_options.update(sink_extra or {})
    sink = KafkaTableSpec.from_options(sink_options, columns=COLUMNS, role="sink")

    @kafka_streaming_asset(
        sources={"events": source}, sink=sink, name="copy", max_records_per_split=40_000
    )
    def copy(context, events):  # type: ignore[no-untyped-def]
        return events.select("id", "payload")

    return copy


def main(argv: list[str]) -> int:
    bootstrap, source_topic, sink_topic, guarantee = argv[:4]
    sink_extra = json.loads(argv[4]) if len(argv) > 4 else None
    config = default_spark_config("kill-test")  # $SPARK_MASTER: a cluster
    result = materialize(
        [build(source_topic, sink_topic, guarantee, sink_extra)],
        instance=DagsterInstance.get(),
        resources={
            "kafka": KafkaResource(bootstrap_servers=bootstrap),
            "pyspark": SparkResource(spark_config=config),
        },
        raise_on_error=False,
    )
    print(f"KILL-CHILD-RESULT success={result.success}", flush=True)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
