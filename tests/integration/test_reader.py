"""The split reader against the real broker: exact ranges, bounded batches, markers, errors."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator

import confluent_kafka
import pyarrow as pa
import pytest
from confluent_kafka import Message, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from dagster_kafka_flinklike.errors import OffsetsError
from dagster_kafka_flinklike.options import client_config
from dagster_kafka_flinklike.source import KafkaSplit, split_ranges
from dagster_kafka_flinklike.source.reader import (
    CONSUMER_DEFAULTS,
    RECORD_FIELDS,
    _BatchBuilder,
    close_idle_consumers,
    consumer_settings,
    read_split,
    read_splits,
)
from tests.conftest import IN_ORDER, produce


def _config(bootstrap: str) -> dict[str, str]:
    return client_config({"bootstrap.servers": bootstrap})


def _read(
    split: KafkaSplit, bootstrap: str, fields: tuple[str, ...], **kwargs: object
) -> list[pa.RecordBatch]:
    return list(read_split(split, _config(bootstrap), fields, **kwargs))  # type: ignore[arg-type]


def _values(values: list[bytes]) -> list[tuple[bytes | None, bytes | None, int]]:
    """``produce`` records of ``values`` without keys, all to partition 0."""
    return [(None, value, 0) for value in values]


def _rows(batches: list[pa.RecordBatch]) -> list[dict]:
    return [row for batch in batches for row in batch.to_pylist()]


@pytest.fixture
def created_consumers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every consumer the reader creates during the test; idle ones are closed afterwards."""
    created: list[object] = []
    real = confluent_kafka.Consumer

    def counting(config: dict) -> object:
        consumer = real(config)
        created.append(consumer)
        return consumer

    close_idle_consumers()
    monkeypatch.setattr(confluent_kafka, "Consumer", counting)
    yield created
    close_idle_consumers()


def _transactions(bootstrap: str, topic: str, plan: list[tuple[str, int]]) -> None:
    """Produce transactions in order: ``("commit", n)`` or ``("abort", n)`` records each."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    for number, (outcome, count) in enumerate(plan):
        producer.begin_transaction()
        for i in range(count):
            producer.produce(topic, f"{outcome}-{number}-{i}".encode(), partition=0)
        producer.flush(30)  # the records reach the log before the marker
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def test_batches_never_exceed_batch_size(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([f"v{i}".encode() for i in range(250)]))
    for batch_size in (1, 7, 100):
        batches = []
        config = _config(kafka_bootstrap)
        split = KafkaSplit(topic, 0, 0, 250)
        for batch in read_split(split, config, ("offset",), batch_size=batch_size):
            # The garbage collector is paused only inside the reader, never while we hold a batch.
            assert gc.isenabled()
            batches.append(batch)
        assert max(b.num_rows for b in batches) <= batch_size
        assert len(batches) >= -(-250 // batch_size)
        offsets = [o for b in batches for o in b.column(0).to_pylist()]
        assert offsets == list(range(250))


def test_batches_stay_near_the_byte_budget(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1)
    payload = b"x" * 10_000
    produce(kafka_bootstrap, topic, _values([payload for _ in range(300)]))
    batches = _read(
        KafkaSplit(topic, 0, 0, 300), kafka_bootstrap, ("value",), max_batch_bytes=50_000
    )
    assert sum(b.num_rows for b in batches) == 300
    # The first batch sizes the records; every later one holds about 50 kB.
    assert all(b.num_rows <= 5 for b in batches[1:])
    assert all(b.column(0).nbytes <= 60_000 for b in batches[1:])


@pytest.mark.parametrize("batch_size", [1, 3, 64, 10_000])
def test_sub_range_is_read_exactly_with_every_field(kafka_bootstrap, new_topic, batch_size) -> None:
    topic = new_topic(partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0, **IN_ORDER})
    base_ms = 1_790_000_000_000
    for i in range(120):
        headers: list[tuple[str, str | bytes | None]] | None = None
        if i % 3 == 0:
            headers = [("h", f"{i}".encode()), ("empty", None)]
        producer.produce(
            topic,
            f"value-{i}".encode(),
            f"key-{i}".encode() if i % 5 else None,
            partition=1,
            timestamp=base_ms + i,
            headers=headers,
        )
    assert producer.flush(30) == 0

    batches = _read(
        KafkaSplit(topic, 1, 37, 91), kafka_bootstrap, RECORD_FIELDS, batch_size=batch_size
    )
    rows = _rows(batches)
    assert [r["offset"] for r in rows] == list(range(37, 91))
    for row in rows:
        i = row["offset"]
        assert row["value"] == f"value-{i}".encode()
        assert row["key"] == (f"key-{i}".encode() if i % 5 else None)
        assert (row["topic"], row["partition"]) == (topic, 1)
        assert int(row["timestamp"].timestamp() * 1000) == base_ms + i
        assert row["timestamp_type"] == "CreateTime"
        assert row["leader_epoch"] >= 0
        expected = [{"key": "h", "value": f"{i}".encode()}, {"key": "empty", "value": None}]
        assert row["headers"] == (expected if i % 3 == 0 else [])


def test_log_append_time_topic(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    before = time.time() * 1000 - 60_000
    produce(kafka_bootstrap, topic, _values([b"a", b"b"]))
    rows = _rows(
        _read(KafkaSplit(topic, 0, 0, 2), kafka_bootstrap, ("timestamp", "timestamp-type"))
    )
    assert [r["timestamp_type"] for r in rows] == ["LogAppendTime"] * 2
    assert all(r["timestamp"].timestamp() * 1000 > before for r in rows)


def test_stop_reached_through_transaction_markers(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1)
    # Offsets: 0-2 committed, 3 marker; 4-5 aborted, 6 marker; 7-8 committed, 9 marker.
    _transactions(kafka_bootstrap, topic, [("commit", 3), ("abort", 2), ("commit", 2)])
    cases = {
        (0, 4): ["commit-0-0", "commit-0-1", "commit-0-2"],  # ends on a marker, more follows
        (3, 4): [],  # only a commit marker
        (4, 7): [],  # aborted records and their marker
        (2, 8): ["commit-0-2", "commit-2-0"],
        (7, 10): ["commit-2-0", "commit-2-1"],  # ends on the last marker (end of the log)
        (0, 10): ["commit-0-0", "commit-0-1", "commit-0-2", "commit-2-0", "commit-2-1"],
    }
    for (start, stop), expected in cases.items():
        began = time.monotonic()
        # A reader that missed the stop would wait for records that never come: the short
        # idle timeout turns that into a failure here.
        rows = _rows(
            _read(
                KafkaSplit(topic, 0, start, stop),
                kafka_bootstrap,
                ("value", "offset"),
                idle_timeout_s=3,
            )
        )
        assert [r["value"].decode() for r in rows] == expected, (start, stop)
        assert all(start <= r["offset"] < stop for r in rows)
        assert time.monotonic() - began < 3, (start, stop)


def test_many_small_splits_of_one_partition_cover_the_range_once(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([f"plain-{i}".encode() for i in range(50)]))
    # Offsets 50-53 committed + 54 marker, 55-56 aborted + 57 marker, 58-60 + 61, 62 + 63.
    _transactions(
        kafka_bootstrap, topic, [("commit", 4), ("abort", 2), ("commit", 3), ("commit", 1)]
    )
    splits = split_ranges({(topic, 0): 0}, {(topic, 0): 64}, 3)
    assert len(splits) == 22
    rows = read_splits(
        spark, splits, _config(kafka_bootstrap), ("topic", "partition", "offset", "value")
    ).collect()
    got = sorted((r["offset"], bytes(r["value"]).decode()) for r in rows)
    expected = [(i, f"plain-{i}") for i in range(50)]
    expected += [(50 + i, f"commit-0-{i}") for i in range(4)]
    expected += [(58 + i, f"commit-2-{i}") for i in range(3)] + [(62, "commit-3-0")]
    assert got == expected
    assert {(r["topic"], r["partition"]) for r in rows} == {(topic, 0)}


def test_spark_columns_have_the_raw_record_shape(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, b"v0", b"k0", partition=0, headers=[("a", b"1")])
    producer.produce(topic, b"v1", None, partition=0)
    assert producer.flush(30) == 0
    df = read_splits(spark, [KafkaSplit(topic, 0, 0, 2)], _config(kafka_bootstrap), RECORD_FIELDS)
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestamp_type:string,"
        "headers:array<struct<key:string,value:binary>>,leader_epoch:int>"
    )
    rows = df.orderBy("offset").collect()
    assert [r["headers"] for r in rows] == [[("a", bytearray(b"1"))], []]
    assert [r["key"] for r in rows] == [bytearray(b"k0"), None]
    assert [r["timestamp_type"] for r in rows] == ["CreateTime", "CreateTime"]


def test_deleted_start_offset_fails_naming_the_offset(kafka_bootstrap, new_topic, admin) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([f"v{i}".encode() for i in range(20)]))
    futures = admin.delete_records([CTopicPartition(topic, 0, 10)])
    for future in futures.values():
        future.result(timeout=30)
    # Reading from offset 10 still works; from 0 the records are gone: an error, not a skip.
    rows = _rows(_read(KafkaSplit(topic, 0, 10, 20), kafka_bootstrap, ("offset",)))
    assert [r["offset"] for r in rows] == list(range(10, 20))
    with pytest.raises(OffsetsError, match=rf"{topic}-0 failed at offset 0") as info:
        _read(KafkaSplit(topic, 0, 0, 20), kafka_bootstrap, ("offset",), idle_timeout_s=10)
    assert "[0, 20)" in str(info.value)


def test_stop_beyond_the_log_times_out(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([b"only"]))
    with pytest.raises(OffsetsError, match=rf"{topic}-0 made no progress .* stop offset is 5"):
        _read(KafkaSplit(topic, 0, 0, 5), kafka_bootstrap, ("value",), idle_timeout_s=1)


def test_table_properties_win_over_reader_defaults() -> None:
    assert CONSUMER_DEFAULTS["fetch.queue.backoff.ms"] == 10
    settings = consumer_settings(
        {
            "fetch.queue.backoff.ms": "500",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": "false",
        }
    )
    assert settings["fetch.queue.backoff.ms"] == "500"
    assert settings["auto.offset.reset"] == "earliest"
    assert settings["enable.partition.eof"] is True  # the reader needs end-of-partition events
    assert consumer_settings({})["max.partition.fetch.bytes"] == 4 * 1024 * 1024
    with pytest.raises(ValueError, match="batch_size"):
        list(read_split(KafkaSplit("t", 0, 0, 1), {}, ("value",), batch_size=0))


def test_kept_consumer_reads_every_next_range_exactly(
    kafka_bootstrap, new_topic, created_consumers
) -> None:
    topic = new_topic(partitions=2)
    records: list[tuple[bytes | None, bytes | None, int]] = [
        (None, f"a{i}".encode(), 0) for i in range(300)
    ]
    records += [(None, f"b{i}".encode(), 1) for i in range(50)]
    produce(kafka_bootstrap, topic, records)
    config = _config(kafka_bootstrap)
    # The first range ends at the log end (its last fetch waits there, and an end-of-partition
    # event follows it); the next ranges start below it and on another partition.
    for split, prefix in [
        (KafkaSplit(topic, 0, 200, 300), "a"),
        (KafkaSplit(topic, 0, 0, 100), "a"),
        (KafkaSplit(topic, 1, 10, 50), "b"),
        (KafkaSplit(topic, 0, 150, 160), "a"),
    ]:
        batches = read_split(split, config, ("partition", "offset", "value"), keep_consumer=True)
        rows = _rows(list(batches))
        assert [r["offset"] for r in rows] == list(range(split.start, split.stop))
        assert [r["value"] for r in rows] == [
            f"{prefix}{o}".encode() for o in range(split.start, split.stop)
        ]
        assert {r["partition"] for r in rows} == {split.partition}
    assert len(created_consumers) == 1
    assert close_idle_consumers() == 1


def test_kept_consumer_starts_the_next_range_without_waiting(
    kafka_bootstrap, new_topic, created_consumers
) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([f"v{i}".encode() for i in range(100)]))

    def first_batch_seconds(properties: dict[str, str]) -> tuple[float, float]:
        """Fastest and slowest of three: a range read to the log end, then the start of another
        range."""
        config = {**_config(kafka_bootstrap), **properties}
        times = []
        for _ in range(3):
            list(read_split(KafkaSplit(topic, 0, 50, 100), config, ("offset",), keep_consumer=True))
            began = time.monotonic()
            batches = read_split(
                KafkaSplit(topic, 0, 0, 50), config, ("offset",), keep_consumer=True
            )
            next(batches)
            times.append(time.monotonic() - began)
            list(batches)
        return min(times), max(times)

    # The last fetch of a range at the log end waits on the broker for fetch.wait.max.ms; the
    # reader's short wait lets the kept consumer fetch the next range at once. With a long wait
    # the next range usually waits for it, unless the consumer's fetcher had not yet sent that
    # fetch when the range changed: so the slowest of three shows it.
    assert first_batch_seconds({})[0] < 0.25
    assert first_batch_seconds({"fetch.wait.max.ms": "500"})[1] > 0.3
    assert len(created_consumers) == 2  # one per settings, each kept across its six ranges


def test_consumer_of_a_failed_or_abandoned_range_is_not_kept(
    kafka_bootstrap, new_topic, admin, created_consumers
) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([f"v{i}".encode() for i in range(30)]))
    config = _config(kafka_bootstrap)
    batches = read_split(KafkaSplit(topic, 0, 0, 30), config, ("offset",), batch_size=5)
    next(batches)
    batches.close()  # the caller stopped early: the consumer is closed, not kept
    assert close_idle_consumers() == 0

    futures = admin.delete_records([CTopicPartition(topic, 0, 10)])
    for future in futures.values():
        future.result(timeout=30)
    with pytest.raises(OffsetsError, match="failed at offset 0"):
        list(read_split(KafkaSplit(topic, 0, 0, 30), config, ("offset",), keep_consumer=True))
    assert close_idle_consumers() == 0
    rows = _rows(
        list(read_split(KafkaSplit(topic, 0, 10, 30), config, ("offset",), keep_consumer=True))
    )
    assert [r["offset"] for r in rows] == list(range(10, 30))
    assert len(created_consumers) == 3  # a new consumer after the failed one
    assert close_idle_consumers() == 1


def test_timestamps_are_null_for_records_without_one() -> None:
    # librdkafka reports (0, -1) for a record without a timestamp (pre-0.10 message format);
    # brokers of the supported versions always set one, so the records are built here.
    split = KafkaSplit("t", 0, 0, 10)
    stamps = [(1, 1_790_000_000_123), (0, -1), (2, 1_790_000_000_456)]
    records = [
        Message(topic="t", partition=0, offset=i, value=b"v", timestamp=stamp)
        for i, stamp in enumerate(stamps)
    ]
    batch = _BatchBuilder(split, ("timestamp", "timestamp-type")).build(records)
    rows = batch.to_pylist()
    assert [r["timestamp_type"] for r in rows] == ["CreateTime", "NoTimestampType", "LogAppendTime"]
    assert [
        None if r["timestamp"] is None else int(r["timestamp"].timestamp() * 1000) for r in rows
    ] == [
        1_790_000_000_123,
        None,
        1_790_000_000_456,
    ]
    assert batch.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    only_stamped = _BatchBuilder(split, ("timestamp",)).build([records[0], records[2]])
    assert only_stamped.column(0).null_count == 0


def test_forked_child_does_not_reuse_the_parents_consumer(
    kafka_bootstrap, new_topic, created_consumers
) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _values([b"x", b"y"]))
    split = KafkaSplit(topic, 0, 0, 2)
    list(read_split(split, _config(kafka_bootstrap), ("offset",), keep_consumer=True))
    pid = os.fork()
    if pid == 0:  # the child's copy of the kept consumer has no librdkafka threads behind it
        os._exit(0 if close_idle_consumers() == 0 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert close_idle_consumers() == 1
