"""Offset batches as partitions, on a real broker: each batch is named by its exact ranges and
replays exactly."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient
from dagster import AssetKey, DagsterInstance, build_sensor_context, materialize

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    build_kafka_new_data_sensor,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.run.batches import batch_key, parse_batch_key
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import consume_all, produce

COLUMNS = [{"name": "id", "type": "BIGINT"}]


def batched(topic: str, sink_topic: str, **options: str) -> Any:
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            **options,
        },
        columns=COLUMNS,
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json"}, columns=COLUMNS, role="sink"
    )

    @kafka_streaming_asset(
        sources={"events": source}, sink=sink, name="batched", offset_batches=True, checks=[]
    )
    def _batched(context, events):  # type: ignore[no-untyped-def]
        return events

    return _batched


def records(first: int, count: int, partition: int) -> list[tuple[None, bytes, int]]:
    return [(None, json.dumps({"id": i}).encode(), partition) for i in range(first, first + count)]


def tick(sensor: Any, instance: DagsterInstance, bootstrap: str) -> Any:
    """One daemon tick: evaluate, then apply the partitions it adds (as the daemon does)."""
    result = sensor(
        build_sensor_context(
            instance=instance, resources={"kafka": KafkaResource(bootstrap_servers=bootstrap)}
        )
    )
    for request in getattr(result, "dynamic_partitions_requests", None) or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_each_batch_is_named_by_its_ranges_and_replays_exactly(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic, out = new_topic(partitions=2), new_topic(partitions=1)
    asset = batched(topic, out)
    sensor = build_kafka_new_data_sensor(asset, min_pending_records=5)
    instance = DagsterInstance.ephemeral()
    resources = {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }
    produce(kafka_bootstrap, topic, [*records(0, 6, 0), *records(6, 2, 1)])

    first = tick(sensor, instance, kafka_bootstrap)
    [request] = first.run_requests
    assert request.partition_key == f"events/{topic}:0=0-6,1=0-2"
    assert instance.get_dynamic_partitions("batched_offset_batches") == [request.partition_key]
    again = tick(sensor, instance, kafka_bootstrap)
    assert not again.run_requests  # nothing new after the batch: no empty batch is added

    produce(kafka_bootstrap, topic, records(8, 5, 1))
    [second] = tick(sensor, instance, kafka_bootstrap).run_requests
    assert second.partition_key == f"events/{topic}:0=6-6,1=2-7"

    seen = 0

    def run(key: str) -> Counter:
        nonlocal seen
        result = materialize([asset], instance=instance, resources=resources, partition_key=key)
        assert result.success
        messages = consume_all(kafka_bootstrap, out, 1)
        fresh, seen = messages[seen:], len(messages)
        return Counter(json.loads(m.value())["id"] for m in fresh)

    assert run(request.partition_key) == Counter(range(8))
    assert run(second.partition_key) == Counter(range(8, 13))
    assert run(request.partition_key) == Counter(range(8))  # a past batch, exactly again
    events = instance.fetch_materializations(AssetKey("batched"), limit=5).records
    assert events[0].asset_materialization.partition == request.partition_key
    assert "kafka_checkpoint" not in events[0].asset_materialization.metadata

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # kept: it serves the future
    deleted = admin.delete_records([CTopicPartition(topic, 0, 3)], request_timeout=60)
    for future in deleted.values():
        future.result(90)
    gone = materialize(
        [asset],
        instance=instance,
        resources=resources,
        partition_key=request.partition_key,
        raise_on_error=False,
    )
    assert not gone.success
    error = gone.failure_data_for_node("batched").error.to_string()
    assert "can no longer be read exactly" in error and f"{topic}-0" in error


def test_batch_keys_round_trip_and_bad_declarations_are_refused() -> None:
    ranges = {"a": {("t.x", 0): (0, 5), ("t.x", 1): (3, 3)}, "b": {("u", 2): (7, 9)}}
    key = batch_key(ranges)
    assert key == "a/t.x:0=0-5,1=3-3;b/u:2=7-9"
    assert parse_batch_key(key) == ranges
    with pytest.raises(Exception, match="does not name an offset batch"):
        parse_batch_key("2026-11-20-00:00")
    source = KafkaTableSpec.from_options({"connector": "kafka", "topic": "t", "format": "json"})
    with pytest.raises(KafkaOptionsError, match="must use only letters") as exc:
        kafka_streaming_asset(sources={"my events": source}, offset_batches=True)
    assert exc.value.keys == ("sources",)
