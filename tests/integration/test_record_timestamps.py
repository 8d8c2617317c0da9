"""Record timestamps Spark cannot hold, on the real broker: a producer may set any 64-bit
CreateTime, and one whose milliseconds have no 64-bit microseconds (Spark's TIMESTAMP) makes its
record dirty, with the reason, through the same policy as a record that fails to decode; the
other records of the run read as they are.

Kafka 4's brokers refuse CreateTimes more than an hour ahead unless a topic raises
``message.timestamp.after.max.ms`` (earlier brokers accept them), and accept any earlier one by
default: ``-9223372036854776`` ms needs no setting at all."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.source.reader import MAX_TIMESTAMP_MS
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import IN_ORDER
from tests.integration.test_dirty_data import good, read_topic

COLUMNS = [
    {"name": "id", "type": "BIGINT"},
    {"name": "name", "type": "STRING"},
    {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "timestamp"},
]
OUT = [{"name": "id", "type": "BIGINT"}, {"name": "ms", "type": "BIGINT"}]
#: The CreateTime of the records that read cleanly (2026-01-01T00:00:00.123Z).
CLEAN_MS = 1_767_225_600_123


def produce_stamped(bootstrap: str, topic: str, records: list[tuple[bytes, bytes, int]]) -> None:
    """Produce ``(key, value, timestamp ms)`` records with those CreateTimes (acks=all)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **IN_ORDER})
    errors: list[str] = []
    for key, value, stamp in records:
        producer.produce(
            topic,
            value,
            key,
            timestamp=stamp,
            on_delivery=lambda err, _m: errors.append(str(err)) if err else None,
        )
    assert producer.flush(30) == 0
    assert not errors, errors


def stamped_asset(source_topic: str, sink_topic: str, **options: str):
    """Copies each record's id and timestamp (in milliseconds) from the source to the sink."""
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"stamps-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            **options,
        },
        columns=COLUMNS,
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json"}, columns=OUT, role="sink"
    )

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name="stamps")
    def stamps(context, events):
        return events.selectExpr("id", "unix_millis(ts) AS ms")

    return stamps


@pytest.fixture
def resources(kafka_bootstrap, spark):
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def _records(*beyond: int) -> list[tuple[bytes, bytes, int]]:
    """Five clean records, and after the third one record per ``beyond`` timestamp (ids 99..)."""
    clean = [(k, v, CLEAN_MS) for k, v in good(0, 5)]
    far = [(b"far", b'{"id": %d, "name": "far"}' % (99 + i), ms) for i, ms in enumerate(beyond)]
    return [*clean[:3], *far, *clean[3:]]


def test_a_timestamp_beyond_microseconds_fails_the_run_when_errors_are_not_ignored(
    kafka_bootstrap, new_topic, resources
):
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    beyond = -(MAX_TIMESTAMP_MS + 1)  # the broker's defaults take it
    produce_stamped(kafka_bootstrap, source, _records(beyond))
    result = materialize(
        [stamped_asset(source, sink)],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    text = result.failure_data_for_node("stamps").error.to_string()
    assert "1 dirty record(s)" in text and f"{source}-0@3" in text
    assert f"timestamp: {beyond} ms (CreateTime) is beyond the range of Spark's TIMESTAMP" in text
    assert "checkpoint did not advance" in text
    # At-least-once writes while it counts: the clean records, each with its own timestamp.
    rows = [json.loads(m.value()) for m in read_topic(kafka_bootstrap, sink)]
    assert sorted((r["id"], r["ms"]) for r in rows) == [(i, CLEAN_MS) for i in range(5)]


def test_timestamps_beyond_microseconds_are_skipped_counted_and_dead_lettered(
    kafka_bootstrap, new_topic, resources
):
    # Kafka 4 refuses CreateTimes over an hour ahead unless the topic allows them.
    source = new_topic(partitions=1, config={"message.timestamp.after.max.ms": str(2**63 - 1)})
    sink, dead = new_topic(partitions=1), new_topic(partitions=1)
    beyond = (-(MAX_TIMESTAMP_MS + 1), MAX_TIMESTAMP_MS + 1)
    produce_stamped(kafka_bootstrap, source, _records(*beyond))
    asset = stamped_asset(
        source, sink, **{"ingestion.ignore-errors": "true", "ingestion.dead-letter.topic": dead}
    )
    result = materialize(
        [asset], resources=resources, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert result.success
    meta = result.asset_materializations_for_node("stamps")[0].metadata
    assert (meta["numRecordsIn"].value, meta["dirtyRecords"].value) == (7, 2)
    assert meta["numRecordsOut"].value == 5
    samples = meta["dirtySamples"].value
    assert [(s["offset"], s["value"]) for s in samples] == [
        (3, '{"id": 99, "name": "far"}'),
        (4, '{"id": 100, "name": "far"}'),
    ]
    for sample, ms in zip(samples, beyond, strict=True):
        assert sample["error"].startswith(f"timestamp: {ms} ms (CreateTime) is beyond the range")
    rows = [json.loads(m.value()) for m in read_topic(kafka_bootstrap, sink)]
    assert sorted((r["id"], r["ms"]) for r in rows) == [(i, CLEAN_MS) for i in range(5)]
    letters = read_topic(kafka_bootstrap, dead)
    assert [(m.key(), m.value()) for m in letters] == [
        (b"far", b'{"id": 99, "name": "far"}'),
        (b"far", b'{"id": 100, "name": "far"}'),
    ]
    assert [dict(m.headers())["source.offset"] for m in letters] == [b"3", b"4"]
