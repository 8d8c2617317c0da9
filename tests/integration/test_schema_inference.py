"""Schema inference on a real broker: JSON tables without columns, evolving over runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, materialize
from pyspark.sql import functions as F

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import consume_all, produce

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def send(bootstrap: str, topic: str, *records: dict | str) -> None:
    produce(
        bootstrap,
        topic,
        [(None, (r if isinstance(r, str) else json.dumps(r)).encode()) for r in records],
    )


def inferring_asset(topic: str, out: str, seen: list, **options: str) -> Any:
    """An asset reading ``topic`` with inferred columns; it records what each run saw and writes
    each row as JSON text to ``out``."""
    source = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "format": "json", **options},
        columns=[{"name": "off", "type": "BIGINT", "metadata_key": "offset"}],
        role="source",
        name="events",
    )
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": out, "format": "raw"},
        columns=[{"name": "line", "type": "STRING"}],
        role="sink",
    )

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name="evolving", checks=[])
    def evolving(context: Any, events: Any) -> Any:
        seen.append((events.dtypes, sorted(events.drop("off").collect(), key=str)))
        return events.select(F.to_json(F.struct("*")).alias("line"))

    return evolving


def materialization(instance: DagsterInstance) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(AssetKey("evolving"))
    assert event is not None and event.asset_materialization is not None
    return dict(event.asset_materialization.metadata)


def columns(metadata: dict[str, Any]) -> dict[str, str]:
    return {c.name: c.type for c in metadata["kafka/schema/events"].schema.columns}


def test_continuous_inference_widens_over_three_batches_then_refuses_an_incompatible_change(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    topic, out = new_topic(partitions=2), new_topic(partitions=1)
    seen: list = []
    asset = inferring_asset(topic, out, seen, **{"scan.startup.mode": "earliest-offset"})
    instance = DagsterInstance.ephemeral()

    def run(ok: bool = True) -> Any:
        result = materialize([asset], instance=instance, resources=resources, raise_on_error=False)
        assert result.success is ok
        return result

    send(kafka_bootstrap, topic, {"id": 1, "name": "a"}, {"id": 2, "name": None})
    run()
    assert seen[-1][0] == [("id", "bigint"), ("name", "string"), ("off", "bigint")]
    assert [tuple(r) for r in seen[-1][1]] == [(1, "a"), (2, None)]
    assert columns(materialization(instance)) == {"id": "BIGINT", "name": "STRING"}

    send(kafka_bootstrap, topic, {"id": 3, "name": "c", "score": 7})
    run()
    assert [tuple(r) for r in seen[-1][1]] == [(3, "c", 7)]
    metadata = materialization(instance)
    assert columns(metadata) == {"id": "BIGINT", "name": "STRING", "score": "BIGINT"}
    assert metadata["kafka/schema_changes/events"].data == ["added column `score` BIGINT"]

    send(kafka_bootstrap, topic, {"id": 4.5, "name": "d"})
    run()
    assert [tuple(r) for r in seen[-1][1]] == [(4.5, "d", None)]
    metadata = materialization(instance)
    assert columns(metadata)["id"] == "DOUBLE"
    assert metadata["kafka/schema_changes/events"].data == [
        "widened column `id` from BIGINT to DOUBLE"
    ]
    written = [json.loads(m.value()) for m in consume_all(kafka_bootstrap, out, 1)]
    assert sorted(w["id"] for w in written) == [1, 2, 3, 4.5]

    send(kafka_bootstrap, topic, {"id": 5, "name": "e", "score": "high"})
    failed = run(ok=False)
    errors = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
    message = str(errors[0].event_specific_data.error)  # type: ignore[union-attr]
    assert "widened column `score` from BIGINT to STRING" in message
    assert "`score` BIGINT" in message and "`score` STRING" in message
    assert len(seen) == 3  # the failed run never reached the query
    assert columns(materialization(instance))["score"] == "BIGINT"  # the schema kept


def test_an_incompatible_change_is_dirty_data_when_errors_are_ignored(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    seen: list = []
    asset = inferring_asset(
        topic,
        out,
        seen,
        **{"scan.startup.mode": "earliest-offset", "ingestion.ignore-errors": "true"},
    )
    instance = DagsterInstance.ephemeral()
    send(kafka_bootstrap, topic, {"id": 1, "score": 3})
    materialize([asset], instance=instance, resources=resources)
    send(kafka_bootstrap, topic, {"id": 2, "score": "high"}, {"id": 3, "score": 4}, "not json")
    materialize([asset], instance=instance, resources=resources)
    assert [tuple(r) for r in seen[-1][1]] == [(3, 4)]
    metadata = materialization(instance)
    assert columns(metadata) == {"id": "BIGINT", "score": "BIGINT"}
    assert metadata["kafka/schema_changes/events"].data == [
        "refused (incompatible): widened column `score` from BIGINT to STRING"
    ]
    assert metadata["dirtyRecords"].value == 2


def test_static_inference_samples_the_newest_records_once(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    seen: list = []
    asset = inferring_asset(
        topic,
        out,
        seen,
        **{
            "scan.startup.mode": "earliest-offset",
            "schema.inference.strategy": "static",
            "scan.max.pre.fetch.records": "2",
            "json.infer-schema.fixed-types": "amount DECIMAL(10, 2)",
        },
    )
    instance = DagsterInstance.ephemeral()
    send(kafka_bootstrap, topic, {"old": True}, {"id": 1, "amount": 2}, {"id": 2, "amount": 3.5})
    materialize([asset], instance=instance, resources=resources)
    assert columns(materialization(instance)) == {"id": "BIGINT", "amount": "DECIMAL(10, 2)"}
    assert sorted(str(r) for r in seen[-1][1]) == [
        "Row(id=1, amount=Decimal('2.00'))",
        "Row(id=2, amount=Decimal('3.50'))",
        "Row(id=None, amount=None)",
    ]
    send(kafka_bootstrap, topic, {"id": 3, "amount": 1, "extra": "x"})
    materialize([asset], instance=instance, resources=resources)
    assert seen[-1][0][:2] == [("id", "bigint"), ("amount", "decimal(10,2)")]
    assert "kafka/schema_changes/events" not in materialization(instance)


def test_flattened_nested_columns_and_primitives_as_strings(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    seen: list = []
    asset = inferring_asset(
        topic,
        out,
        seen,
        **{
            "scan.startup.mode": "earliest-offset",
            "json.infer-schema.flatten-nested-columns.enable": "true",
            "json.infer-schema.primitive-as-string": "true",
        },
    )
    send(
        kafka_bootstrap,
        topic,
        {"id": 1, "user": {"name": "x", "geo": {"lat": 1.5}}, "tags": ["a", "b"]},
    )
    materialize([asset], instance=DagsterInstance.ephemeral(), resources=resources)
    dtypes, rows = seen[-1]
    assert dtypes == [
        ("id", "string"),
        ("user.name", "string"),
        ("user.geo.lat", "string"),
        ("tags", "string"),
        ("off", "bigint"),
    ]
    assert [tuple(r) for r in rows] == [("1", "x", "1.5", '["a","b"]')]
