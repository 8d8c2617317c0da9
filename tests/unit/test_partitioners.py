"""Sink partitioners without a broker: Java murmur2 vectors, fixed / round-robin / user classes,
class-path validation, and recovering a task's connector error from Spark's wrapping."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from dagster_kafka_flinklike import DeliveryError, KafkaConnectorError, KafkaOptionsError
from dagster_kafka_flinklike.sink.partitioners import (
    UNASSIGNED,
    KafkaPartitioner,
    SinkPartitioner,
    java_default_partition,
    load_partitioner,
    murmur2,
)
from dagster_kafka_flinklike.sink.writer import connector_error

HERE = __name__


@pytest.mark.parametrize(
    ("key", "expected", "partition_of_7"),
    [  # computed with the Kafka 4.2.1 client's Utils.murmur2 / Utils.toPositive
        ("", 275646681, 2),
        ("a", -1563381124, 5),
        ("ab", 316155434, 0),
        ("abcd", -1323649548, 5),
        ("abcde", 461995741, 4),
        ("héllo", 614509002, 2),
        ("日本語キー", 1445825182, 4),
        ("emoji-\U0001f600", -1225718728, 6),
        ("k" * 1000, -1575721008, 1),
        ("order-42", 501153024, 1),
    ],
)
def test_murmur2_and_partition_match_the_java_client(
    key: str, expected: int, partition_of_7: int
) -> None:
    assert murmur2(key.encode("utf-8")) == expected
    assert java_default_partition(key.encode("utf-8"), 7) == partition_of_7


def test_murmur2_of_arbitrary_bytes_matches_java() -> None:
    assert murmur2(bytes([0xFF, 0x80, 0x00, 0x01, 0xFE])) == -173560464


def test_default_leaves_the_choice_to_the_producer() -> None:
    task = SinkPartitioner.resolve("default", "t").open(task_index=3, num_tasks=4)
    assert task.assign([b"a", None], [b"1", b"2"]) == UNASSIGNED


def test_fixed_is_task_index_modulo_the_partitions_in_ascending_order() -> None:
    spec = SinkPartitioner.resolve("fixed", "t", [5, 1, 3])  # ids need not be 0..n-1
    assert spec.partitions == (1, 3, 5)
    chosen = [spec.open(task_index=i, num_tasks=7).assign([b"k"], [b"v"]) for i in range(7)]
    assert chosen == [1, 3, 5, 1, 3, 5, 1]


def test_round_robin_cycles_over_every_partition_across_batches() -> None:
    task = SinkPartitioner.resolve("round-robin", "t", [0, 1, 2, 3]).open(1, 2)
    seen: list[int] = []
    for size in (3, 5, 2):  # the cycle continues from one batch to the next
        keys = [None] * size
        assigned = task.assign(keys, keys)
        assert not isinstance(assigned, int)
        seen.extend(p for _, p in zip(keys, assigned, strict=False))
    assert seen == [1, 2, 3, 0, 1, 2, 3, 0, 1, 2]
    counts = Counter(seen)
    assert max(counts.values()) - min(counts.values()) <= 1


class ByValueParity(KafkaPartitioner):
    """Even-length values to the first partition, odd to the second."""

    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return partitions[len(value or b"") % 2]


class RemembersOpen:
    """Not a subclass: any class with ``partition`` (and optionally ``open``) will do."""

    def open(self, task_index: int, num_tasks: int) -> None:
        self.opened = (task_index, num_tasks)

    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return partitions[self.opened[0] % len(partitions)]


class OutOfRange(KafkaPartitioner):
    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return 99


class NoPartitionMethod:
    pass


class StillAbstract(KafkaPartitioner):
    pass


class NeedsArguments(KafkaPartitioner):
    def __init__(self, region: str) -> None:
        self.region = region

    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        return partitions[0]


def not_a_class(key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
    return 0


def test_a_user_class_is_loaded_opened_per_task_and_asked_per_record() -> None:
    spec = SinkPartitioner.resolve(f"{HERE}.ByValueParity", "t", [0, 1, 2])
    assert spec.custom is ByValueParity
    assert spec.open(0, 1).assign([None, None, b"k"], [b"ab", b"abc", b""]) == [0, 1, 0]
    opened = SinkPartitioner.resolve(f"{HERE}.RemembersOpen", "t", [0, 1, 2]).open(2, 5)
    assert opened.assign([None, None], [b"x", b"y"]) == [2, 2]


def test_a_partition_the_topic_does_not_have_is_an_error_naming_the_option() -> None:
    task = SinkPartitioner.resolve(f"{HERE}.OutOfRange", "orders", [0, 1]).open(0, 1)
    with pytest.raises(KafkaOptionsError, match=r"returned partition 99.*'orders'") as exc:
        task.assign([None], [b"v"])
    assert exc.value.keys == ("sink.partitioner",)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_module_xyz.Partitioner", "cannot be imported"),
        (f"{HERE}.Missing", "has no class 'Missing'"),
        (f"{HERE}.not_a_class", "has no class 'not_a_class'"),
        (f"{HERE}.NoPartitionMethod", "does not implement KafkaPartitioner"),
        (f"{HERE}.StillAbstract", "does not implement KafkaPartitioner"),
        (f"{HERE}.NeedsArguments", "constructible without arguments"),
        ("Partitioner", "not a class path"),
    ],
)
def test_a_bad_class_path_fails_naming_sink_partitioner(path: str, message: str) -> None:
    with pytest.raises(KafkaOptionsError, match=message) as exc:
        load_partitioner(path)
    assert exc.value.keys == ("sink.partitioner",)
    assert "'sink.partitioner'" in str(exc.value)


def test_non_default_partitioners_need_the_topics_partitions() -> None:
    with pytest.raises(KafkaOptionsError, match="needs the partitions of topic 'orders'"):
        SinkPartitioner.resolve("fixed", "orders", [])


def test_a_task_error_is_recovered_from_sparks_wrapping_exception() -> None:
    wrapped = RuntimeError(
        "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n"
        '  File "writer.py", line 1, in _write_task\n    raise DeliveryError(\n'
        "dagster_kafka_flinklike.errors.DeliveryError: 2 record(s) to topic 't' were not "
        "delivered: Broker: Message size too large.\n"
    )
    error = connector_error(wrapped)
    assert isinstance(error, DeliveryError)
    assert str(error).startswith("2 record(s) to topic 't' were not delivered")
    option = connector_error(
        RuntimeError("x.KafkaOptionsError: Partitioner p ('sink.partitioner') returned 9")
    )
    assert isinstance(option, KafkaOptionsError) and option.keys == ("sink.partitioner",)
    raised = connector_error(
        RuntimeError("[USER_RAISED_EXCEPTION] Column '__row_kind' holds 'X'. SQLSTATE: P0001")
    )
    assert type(raised) is KafkaConnectorError
    assert str(raised) == "Column '__row_kind' holds 'X'."
    assert connector_error(RuntimeError("something else")) is None
