"""Dirty data in each mode, on the real broker: fail, skip and collect, threshold, dead letters.

Also the source metrics a successful run records and the duplicated-group-id guard.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import produce

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "STRING"}]


def good(first: int, count: int) -> list[tuple[bytes, bytes]]:
    return [
        (f"k{i}".encode(), json.dumps({"id": i, "name": f"n{i}"}).encode())
        for i in range(first, first + count)
    ]


def copy_asset(
    source_topic: str, sink_topic: str, sink_options: dict[str, str] | None = None, **options: str
):
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"dirty-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            **options,
        },
        columns=COLUMNS,
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json", **(sink_options or {})},
        columns=COLUMNS,
        role="sink",
    )

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name="copy")
    def copy(context, events):
        return events

    return copy


def read_topic(bootstrap: str, topic: str) -> list:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "dirty-check", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out, done = [], False
    while not done:
        for message in consumer.consume(500, timeout=0.1):  # returns at its timeout
            if message.error():
                done = True
            else:
                out.append(message)
    consumer.close()
    return out


@pytest.fixture
def resources(kafka_bootstrap, spark):
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def _run(asset, resources, instance=None):
    return materialize(
        [asset],
        resources=resources,
        instance=instance or DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def test_threshold_exceeded_fails_and_does_not_advance(kafka_bootstrap, new_topic, resources):
    """At-least-once: the statistics come from the pass that writes, so the clean records are
    in the sink when the policy fails the run; the checkpoint stays, and the retry (here with a
    higher threshold) reads the same records and writes them again."""
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [*good(0, 5), (b"x", b"{"), (b"y", b"nope"), *good(5, 3)])
    options = {"ingestion.ignore-errors": "true", "ingestion.error-tolerance.max-count": "1"}
    instance = DagsterInstance.ephemeral()
    result = _run(copy_asset(source, sink, **options), resources, instance)
    assert not result.success
    text = result.failure_data_for_node("copy").error.to_string()
    assert "ingestion.error-tolerance.max-count" in text and "2 dirty record(s)" in text
    assert f"{source}-0@5" in text
    assert "checkpoint did not advance" in text and "writes them again" in text
    assert len(read_topic(kafka_bootstrap, sink)) == 8
    options["ingestion.error-tolerance.max-count"] = "2"
    retry = _run(copy_asset(source, sink, **options), resources, instance)
    assert retry.success
    meta = retry.asset_materializations_for_node("copy")[0].metadata
    assert (meta["numRecordsIn"].value, meta["dirtyRecords"].value) == (10, 2)
    ids = sorted(json.loads(m.value())["id"] for m in read_topic(kafka_bootstrap, sink))
    assert ids == sorted([*range(8), *range(8)])


def test_threshold_exceeded_under_exactly_once_commits_nothing(
    kafka_bootstrap, new_topic, resources
):
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [*good(0, 5), (b"x", b"{"), (b"y", b"nope"), *good(5, 3)])
    asset = copy_asset(
        source,
        sink,
        sink_options={
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": f"dirty-{sink}",
        },
        **{"ingestion.ignore-errors": "true", "ingestion.error-tolerance.max-count": "1"},
    )
    result = _run(asset, resources)
    assert not result.success
    text = result.failure_data_for_node("copy").error.to_string()
    assert "2 dirty record(s)" in text and "Nothing was committed" in text
    assert read_topic(kafka_bootstrap, sink) == []  # read_committed: the aborted output is not seen


def test_within_threshold_skips_counts_and_dead_letters(kafka_bootstrap, new_topic, resources):
    source, sink, dead = (new_topic(partitions=1) for _ in range(3))
    produce(kafka_bootstrap, source, [*good(0, 4), (b"bad-key", b"{oops"), *good(4, 4)])
    asset = copy_asset(
        source,
        sink,
        **{
            "ingestion.ignore-errors": "true",
            "ingestion.error-tolerance.max-count": "1",
            "ingestion.dead-letter.topic": dead,
        },
    )
    result = _run(asset, resources)
    assert result.success
    meta = result.asset_materializations_for_node("copy")[0].metadata
    assert meta["numRecordsIn"].value == 9
    assert meta["dirtyRecords"].value == 1
    assert meta["numRecordsInErrors"].value == 1
    assert meta["numRecordsOut"].value == 8
    assert [s["offset"] for s in meta["dirtySamples"].value] == [4]
    assert sorted(json.loads(m.value())["id"] for m in read_topic(kafka_bootstrap, sink)) == list(
        range(8)
    )
    [letter] = read_topic(kafka_bootstrap, dead)
    assert (letter.key(), letter.value()) == (b"bad-key", b"{oops")
    headers = dict(letter.headers())
    assert headers["source.topic"] == source.encode()
    assert headers["source.partition"] == b"0"
    assert headers["source.offset"] == b"4"
    assert headers["error"]
    # The source tolerates dirty records, so the asset got the dirty-data check by default.
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "kafka_dirty_data" and check.passed
    figures = check.metadata["sources"].value["events"]
    assert (figures["dirty"], figures["records"], figures["max_count"]) == (1, 9, 1)
    assert figures["dead_letter_topic"] == dead
    assert figures["dead_letter_end_offsets"] == {f"{dead}-0": 1}


def test_format_ignore_parse_errors_tolerates_without_ingestion_option(
    kafka_bootstrap, new_topic, resources
):
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [*good(0, 3), (None, b"{not json"), *good(3, 2)])
    asset = copy_asset(source, sink, **{"json.ignore-parse-errors": "true"})
    result = _run(asset, resources)
    assert result.success
    meta = result.asset_materializations_for_node("copy")[0].metadata
    assert meta["dirtyRecords"].value == 1
    assert meta["numRecordsOut"].value == 5


def test_source_metrics_named_as_flink_names_them(kafka_bootstrap, new_topic, resources):
    source, sink = new_topic(partitions=2), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [(k, v, i % 2) for i, (k, v) in enumerate(good(0, 10))])
    before = int(time.time() * 1000)
    result = _run(copy_asset(source, sink), resources)
    assert result.success
    meta = result.asset_materializations_for_node("copy")[0].metadata
    assert meta["numRecordsIn"].value == 10
    assert meta["numBytesIn"].value == sum(len(v) for _, v in good(0, 10))
    assert meta["numRecordsInPerSecond"].value > 0
    assert meta["pendingRecords"].value == 0
    lag = meta["currentEmitEventTimeLag"].value
    assert 0 <= lag <= int(time.time() * 1000) - before + 60_000
    offsets = meta["offsets"].value
    for p in (0, 1):
        entry = offsets[f"events/{source}-{p}"]
        assert entry["currentOffset"] == 5 and entry["committedOffset"] == 5
        assert entry["start"] == 0 and entry["pendingRecords"] == 0


def test_duplicated_group_id_is_refused_while_another_member_is_active(
    kafka_bootstrap, new_topic, resources
):
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, source, good(0, 2))
    member = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"dirty-{source}"})
    member.subscribe([source])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    try:
        asset = copy_asset(source, sink, **{"scan.check.duplicated.group.id": "true"})
        result = _run(asset, resources)
        assert not result.success
        text = result.failure_data_for_node("copy").error.to_string()
        assert "scan.check.duplicated.group.id" in text and f"dirty-{source}" in text
    finally:
        member.close()
    assert _run(asset, resources).success


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_statistics_come_from_the_pass_that_writes(kafka_bootstrap, new_topic, spark, guarantee):
    """No pass of its own: the write's action fills the sources' statistics (observed), and the
    dirty-data policy reads them after it."""
    from dagster_kafka_flinklike.run import StreamingRun

    source, sink = new_topic(partitions=2), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [*good(0, 6), (b"x", b"{")])
    source_spec = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source,
            "properties.group.id": f"observed-{source}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            "ingestion.ignore-errors": "true",
        },
        columns=COLUMNS,
        role="source",
    )
    sink_spec = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": sink,
            "format": "json",
            "sink.delivery-guarantee": guarantee,
            **(
                {"sink.transactional-id-prefix": f"observed-{sink}"}
                if "exactly" in guarantee
                else {}
            ),
        },
        columns=COLUMNS,
        role="sink",
    )
    run = StreamingRun(spark, {"bootstrap.servers": kafka_bootstrap}, sink=sink_spec,
                       asset_name="observed")  # fmt: skip
    try:
        frame = run.read("events", source_spec)
        read = run.sources["events"]
        assert not read.decoded.counts.counted and not read.policy_applied
        result = run.write(sink_spec, frame)
        assert read.decoded.counts.counted and read.policy_applied
        assert (read.decoded.stats.records, read.decoded.stats.dirty) == (7, 1)
        assert read.dirty.dirty == 1 and result.records == 6
        assert run.commit() is not None
    finally:
        run.close()
    assert sorted(json.loads(m.value())["id"] for m in read_topic(kafka_bootstrap, sink)) == list(
        range(6)
    )
