"""Sink partitioners against the real broker: key placement equal to the Java client's (checked
with Kafka's own Java console producer), and where default / fixed / round-robin / a user class
put each Spark task's records."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from dagster_kafka_flinklike import KafkaOptionsError, KafkaTableSpec
from dagster_kafka_flinklike.local import fetch_kafka
from dagster_kafka_flinklike.local.fetch import find_java
from dagster_kafka_flinklike.sink.partitioners import (
    KafkaPartitioner,
    SinkPartitioner,
    java_default_partition,
)
from dagster_kafka_flinklike.sink.serializer import serialize
from dagster_kafka_flinklike.sink.writer import (
    DeliveryReport,
    produce_arrow_batches,
    produce_batches,
    reporting_producer,
    write,
)


@dataclass(frozen=True)
class Record:
    """One consumed record."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Any  # list of (name, bytes) pairs, or None


def consume_all(bootstrap: str, topic: str) -> list[Record]:
    """Every record of ``topic`` (read_committed), in partition then offset order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records: list[Record] = []
        pending = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + 60
        while pending:
            assert time.monotonic() < deadline, f"records of {topic} not all read: {pending}"
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                assert msg.error() is None, msg.error()
                partition, offset = msg.partition(), msg.offset()
                assert partition is not None and offset is not None
                stamp = msg.timestamp()[1]
                records.append(
                    Record(partition, offset, msg.key(), msg.value(), stamp, msg.headers())
                )
                if offset + 1 >= ends[partition]:
                    pending.discard(partition)
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def sink_spec(topic: str, bootstrap: str, **options: str) -> KafkaTableSpec:
    """A ``raw`` key / ``raw`` value sink table of columns ``k`` (key) and ``v``."""
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "key.format": "raw",
            "key.fields": "k",
            "value.format": "raw",
            "value.fields-include": "EXCEPT_KEY",
            **options,
        },
        columns=[{"name": "k", "type": "STRING"}, {"name": "v", "type": "STRING"}],
        role="sink",
    )


def write_table(spec: KafkaTableSpec, frame: Any, bootstrap: str) -> int:
    """Serialize and write ``frame`` as the sink table ``spec``; the number of records written."""
    result = write(
        serialize(spec, frame),
        spec.topics[0],
        {"bootstrap.servers": bootstrap},
        spec.delivery_guarantee,
        parallelism=spec.sink_parallelism,
        partitioner=spec.sink_partitioner,
    )
    assert result.failed == 0, result.first_error
    return result.records


def placement(records: list[Record]) -> dict[bytes | None, int]:
    """Key → partition, asserting each key is in exactly one partition."""
    where: dict[bytes | None, set[int]] = defaultdict(set)
    for r in records:
        where[r.key].add(r.partition)
    assert all(len(parts) == 1 for parts in where.values()), where
    return {key: parts.pop() for key, parts in where.items()}


KEYS = [
    *(f"user-{i}" for i in range(150)),
    *(f"Grüße-{i}-日本語-\U0001f600" for i in range(20)),
    *(f"{i}" for i in range(20)),
    "",
    "a",
    "ab",
    "abc",
    "k" * 1000,
    "long-" + "xyz" * 700,
    "spaces in key",
    "ünïcödé",
]


def test_keys_land_where_the_java_producer_puts_them(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    partitions = 7
    java_topic, our_topic = new_topic(partitions=partitions), new_topic(partitions=partitions)
    lines = "".join(f"{key}\t{i}\n" for i, key in enumerate(KEYS)).encode("utf-8")
    command = [
        find_java(),
        "-Dfile.encoding=UTF-8",
        "-cp",
        f"{fetch_kafka()}/*",
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server",
        kafka_bootstrap,
        "--topic",
        java_topic,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=\t",
        "--producer-property",
        "acks=all",
    ]
    done = subprocess.run(command, input=lines, capture_output=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]

    frame = spark.createDataFrame([(k, str(i)) for i, k in enumerate(KEYS)], "k string, v string")
    assert write_table(sink_spec(our_topic, kafka_bootstrap), frame.repartition(3), kafka_bootstrap)

    expected = {
        k.encode("utf-8"): java_default_partition(k.encode("utf-8"), partitions) for k in KEYS
    }
    by_java = placement(consume_all(kafka_bootstrap, java_topic))
    by_us = placement(consume_all(kafka_bootstrap, our_topic))
    assert set(by_java) == set(expected)  # the Java side read every key as the same UTF-8 bytes
    assert by_java == expected
    assert by_us == expected
    assert len(set(expected.values())) == partitions


def test_default_keeps_each_key_in_its_murmur2_partition(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=4)
    rows = [(f"key-{i % 40}", f"{i}") for i in range(200)]  # each key written 5 times
    frame = spark.createDataFrame(rows, "k string, v string").repartition(4)
    assert write_table(sink_spec(topic, kafka_bootstrap), frame, kafka_bootstrap) == 200
    records = consume_all(kafka_bootstrap, topic)
    assert len(records) == 200
    assert placement(records) == {
        f"key-{i}".encode(): java_default_partition(f"key-{i}".encode(), 4) for i in range(40)
    }


def value_only_spec(topic: str, bootstrap: str, **options: str) -> KafkaTableSpec:
    """A JSON value sink without a key format: every record has a null key."""
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "format": "json",
            **options,
        },
        columns=[{"name": "task", "type": "INT"}, {"name": "n", "type": "BIGINT"}],
        role="sink",
    )


def tasks_frame(spark: Any, tasks: int, per_task: int) -> Any:
    """``tasks`` Spark partitions of ``per_task`` rows, each row naming its Spark partition."""
    from pyspark.sql import functions as F

    return spark.range(0, tasks * per_task, 1, numPartitions=tasks).select(
        F.spark_partition_id().alias("task"), F.col("id").alias("n")
    )


def by_task(records: list[Record]) -> dict[int, Counter[int]]:
    """Spark task → how many of its records each partition received."""
    counts: dict[int, Counter[int]] = defaultdict(Counter)
    for r in records:
        counts[json.loads(r.value or b"null")["task"]][r.partition] += 1
    return counts


def test_default_spreads_null_keys(kafka_bootstrap: str, new_topic: Any, spark: Any) -> None:
    topic = new_topic(partitions=4)
    spec = value_only_spec(topic, kafka_bootstrap)
    assert write_table(spec, tasks_frame(spark, 8, 50), kafka_bootstrap) == 400
    records = consume_all(kafka_bootstrap, topic)
    assert all(r.key is None for r in records)
    assert len({r.partition for r in records}) > 1


def test_fixed_sends_a_tasks_records_to_task_index_modulo_partitions(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = value_only_spec(topic, kafka_bootstrap, **{"sink.partitioner": "fixed"})
    assert write_table(spec, tasks_frame(spark, 5, 20), kafka_bootstrap) == 100
    counts = by_task(consume_all(kafka_bootstrap, topic))
    assert {task: dict(c) for task, c in counts.items()} == {t: {t % 3: 20} for t in range(5)}


def test_round_robin_spreads_each_tasks_records_evenly(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=4)
    spec = value_only_spec(topic, kafka_bootstrap, **{"sink.partitioner": "round-robin"})
    assert write_table(spec, tasks_frame(spark, 3, 30), kafka_bootstrap) == 90
    counts = by_task(consume_all(kafka_bootstrap, topic))
    assert sorted(counts) == [0, 1, 2]
    for per_partition in counts.values():
        assert sorted(per_partition) == [0, 1, 2, 3]
        assert max(per_partition.values()) - min(per_partition.values()) <= 1
        assert sum(per_partition.values()) == 30


class ByValueParity(KafkaPartitioner):
    """Even ``n`` to the topic's first partition, odd to its second."""

    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return partitions[json.loads(value or b"{}")["n"] % 2]


class MirrorTasks(KafkaPartitioner):
    """Task ``i`` of ``n`` writes to partition ``n - 1 - i``: shows what ``open`` received."""

    def open(self, task_index: int, num_tasks: int) -> None:
        self.target = num_tasks - 1 - task_index

    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return partitions[self.target]


class Nowhere(KafkaPartitioner):
    """Returns a partition the topic does not have."""

    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return len(partitions) + 5


def test_a_user_partitioner_routes_by_value(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = value_only_spec(
        topic, kafka_bootstrap, **{"sink.partitioner": f"{__name__}.ByValueParity"}
    )
    assert write_table(spec, tasks_frame(spark, 2, 25), kafka_bootstrap) == 50
    records = consume_all(kafka_bootstrap, topic)
    parity = {(json.loads(r.value or b"{}")["n"] % 2, r.partition) for r in records}
    assert parity == {(0, 0), (1, 1)}
    assert len(records) == 50


def test_a_user_partitioner_is_opened_with_task_index_and_count(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = value_only_spec(
        topic, kafka_bootstrap, **{"sink.partitioner": f"{__name__}.MirrorTasks"}
    )
    assert write_table(spec, tasks_frame(spark, 3, 10), kafka_bootstrap) == 30
    counts = by_task(consume_all(kafka_bootstrap, topic))
    assert {task: dict(c) for task, c in counts.items()} == {t: {2 - t: 10} for t in range(3)}


def test_a_user_partitioner_returning_an_unknown_partition_fails_the_write(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=2)
    spec = value_only_spec(topic, kafka_bootstrap, **{"sink.partitioner": f"{__name__}.Nowhere"})
    with pytest.raises(KafkaOptionsError, match=r"returned partition 7.*has partitions \[0, 1\]"):
        write_table(spec, tasks_frame(spark, 1, 5), kafka_bootstrap)
    assert consume_all(kafka_bootstrap, topic) == []


def test_an_explicit_partitioner_fails_clearly_when_the_topic_cannot_be_read(
    kafka_bootstrap: str, spark: Any
) -> None:
    from dagster_kafka_flinklike import DeliveryError

    frame = spark.createDataFrame([(None, b"v")], "key binary, value binary")
    with pytest.raises(DeliveryError, match=r"sink topic 'bad topic!'.*Invalid topic"):
        write(frame, "bad topic!", {"bootstrap.servers": kafka_bootstrap}, partitioner="fixed")


def test_produce_batches_drives_any_producer_and_waits_out_a_full_queue(
    kafka_bootstrap: str, new_topic: Any
) -> None:
    import pyarrow as pa
    from confluent_kafka import Producer

    topic = new_topic(partitions=3)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "queue.buffering.max.messages": 7})
    batches = [
        pa.RecordBatch.from_pydict(
            {"key": [f"k{b}-{i}".encode() for i in range(40)], "value": [b"v"] * 40},
            schema=pa.schema([("key", pa.binary()), ("value", pa.binary())]),
        )
        for b in range(3)
    ]
    report = DeliveryReport()
    fixed = SinkPartitioner.resolve("fixed", topic, [0, 1, 2]).open(task_index=4, num_tasks=5)
    counts = produce_batches(producer, batches, topic, fixed, report)
    assert producer.flush(30) == 0
    assert (counts.records, report.failed) == (120, 0)
    assert counts.bytes == sum(len(f"k{b}-{i}") + 1 for b in range(3) for i in range(40))
    records = consume_all(kafka_bootstrap, topic)
    assert len(records) == 120
    assert {r.partition for r in records} == {1}


def test_produce_batches_reports_to_the_producers_own_callback(
    kafka_bootstrap: str, new_topic: Any
) -> None:
    import pyarrow as pa

    topic = new_topic(partitions=1, config={"max.message.bytes": "1024"})
    producer, report = reporting_producer({"bootstrap.servers": kafka_bootstrap})
    batch = pa.RecordBatch.from_pydict(
        {"key": [b"a", b"b", b"c"], "value": [b"small", b"x" * 5000, b"small"]},
        schema=pa.schema([("key", pa.binary()), ("value", pa.binary())]),
    )
    task = SinkPartitioner.resolve("default", topic).open(0, 1)
    counts = produce_batches(producer, [batch], topic, task)  # no per-record callback
    assert producer.flush(30) == 0
    assert counts.records == 3
    # The broker rejects the whole batch holding the oversized record.
    assert 1 <= report.failed <= 3
    assert report.failed_bytes >= 5001
    assert "too large" in (report.first_error or "").lower()
    report.reset()
    assert (report.failed, report.failed_bytes, report.first_error) == (0, 0, None)


def test_produce_arrow_batches_keeps_each_tasks_partitioner_across_calls(
    kafka_bootstrap: str, new_topic: Any
) -> None:
    import pyarrow as pa

    topic = new_topic(partitions=3)
    producer, report = reporting_producer({"bootstrap.servers": kafka_bootstrap})
    state: dict[str, Any] = {}
    for i in range(4):  # one batch per call, as a driver-side writer streams them
        batch = pa.RecordBatch.from_pydict(
            {"key": [None, None], "value": [f"t1-{i}".encode(), f"t1-{i}b".encode()]}
        )
        assert (
            produce_arrow_batches(
                producer, [batch], topic, state, partitioner="round-robin", task=1
            )
            == 2
        )
    fixed = pa.RecordBatch.from_pydict({"key": [b"k"], "value": [b"t2"]})
    produce_arrow_batches(producer, [fixed], topic, state, partitioner="fixed", task=2)
    assert producer.flush(30) == 0
    assert (report.failed, report.first_error) == (0, None)
    assert state["bytes"] == sum(len(f"t1-{i}") * 2 + 1 for i in range(4)) + 3
    records = consume_all(kafka_bootstrap, topic)
    by_value = {r.value: r.partition for r in records}
    sent = [v for i in range(4) for v in (f"t1-{i}".encode(), f"t1-{i}b".encode())]
    # one cycle over the 8 records of task 1, starting at partition 1, across the 4 calls
    assert [by_value[v] for v in sent] == [1, 2, 0, 1, 2, 0, 1, 2]
    assert [r.partition for r in records if r.value == b"t2"] == [2]
