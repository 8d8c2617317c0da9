"""The reader's extraction of message fields in C (``source/_messages.c``), on stand-in messages:
the same Arrow arrays the Python lists would give; record timestamps Spark cannot hold, with and
without the C module."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Message as KafkaMessage
from pyspark.sql.types import StructType

from dagster_kafka_flinklike.source.enumerator import KafkaSplit
from dagster_kafka_flinklike.source.reader import (
    MAX_TIMESTAMP_MS,
    TIMESTAMP_ERROR,
    DerivedColumn,
    Shedding,
    _BatchBuilder,
    _fields_module,
    timestamp_error,
)


class Message:
    """What the extraction calls: a method per field, as confluent-kafka's Message has."""

    def __init__(self, value: Any, stamp: tuple[int, int]) -> None:
        self._value, self._stamp = value, stamp

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return self._stamp


def test_the_module_is_built() -> None:
    assert _fields_module() is not None, "the C module was not built (make env builds it)"


def test_binaries_and_timestamps_as_arrow_arrays() -> None:
    native = _fields_module()
    messages = [
        Message(b"a", (1, 5)),
        Message(None, (0, -1)),
        Message(b"", (2, 7)),
        Message(b"\x00z", (1, 0)),
    ]
    validity, offsets, data = native.binaries(messages, Message.value)
    buffers = [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
    values = pa.Array.from_buffers(pa.binary(), len(messages), buffers)
    assert values.to_pylist() == [b"a", None, b"", b"\x00z"]
    validity, micros, beyond = native.timestamps(messages, Message.timestamp)
    kind = pa.timestamp("us", tz="UTC")
    stamps = pa.Array.from_buffers(kind, 4, [pa.py_buffer(validity), pa.py_buffer(micros)])
    assert stamps.cast(pa.int64()).to_pylist() == [5000, None, 7000, 0] and beyond == []
    # Without nulls there is no validity bitmap.
    assert native.binaries(messages[:1], Message.value)[0] is None
    assert native.timestamps(messages[:1], Message.timestamp)[0] is None


def test_a_field_of_another_type_is_an_error() -> None:
    native = _fields_module()
    with pytest.raises(TypeError, match="bytes or None"):
        native.binaries([Message("text", (1, 1))], Message.value)
    with pytest.raises(TypeError, match="tuple"):
        native.timestamps([Message(b"", None)], Message.timestamp)  # type: ignore[arg-type]
    with pytest.raises(ZeroDivisionError):
        native.binaries([Message(b"", (1, 1))], lambda m: 1 / 0)


#: Milliseconds at and beyond the edges of Spark's TIMESTAMP (64-bit microseconds).
EDGES = [
    (1, MAX_TIMESTAMP_MS),
    (1, MAX_TIMESTAMP_MS + 1),
    (2, -MAX_TIMESTAMP_MS),
    (1, -MAX_TIMESTAMP_MS - 1),
    (0, 2**63 - 1),  # no timestamp: null whatever the milliseconds say
    (1, -(2**63)),
    (2, 2**63 - 1),
    (1, 1_767_225_600_123),
]


def test_timestamps_beyond_microseconds_are_null_and_listed() -> None:
    messages = [Message(b"", stamp) for stamp in EDGES]
    validity, micros, beyond = _fields_module().timestamps(messages, Message.timestamp)
    kind = pa.timestamp("us", tz="UTC")
    stamps = pa.Array.from_buffers(kind, len(EDGES), [pa.py_buffer(validity), pa.py_buffer(micros)])
    assert stamps.cast(pa.int64()).to_pylist() == [
        MAX_TIMESTAMP_MS * 1000,
        None,
        -MAX_TIMESTAMP_MS * 1000,
        None,
        None,
        None,
        None,
        1_767_225_600_123_000,
    ]
    assert beyond == [
        (1, 1, MAX_TIMESTAMP_MS + 1),
        (3, 1, -MAX_TIMESTAMP_MS - 1),
        (5, 1, -(2**63)),
        (6, 2, 2**63 - 1),
    ]


def _built(native: bool) -> pa.RecordBatch:
    records = [
        KafkaMessage(topic="t", partition=0, offset=i, value=b"v", timestamp=stamp)
        for i, stamp in enumerate(EDGES)
    ]
    builder = _BatchBuilder(
        KafkaSplit("t", 0, 0, 100), ("timestamp", TIMESTAMP_ERROR, "timestamp-type")
    )
    if not native:
        builder._native = None
    return builder.build(records)


def test_the_timestamp_and_its_error_are_the_same_with_and_without_the_c_module() -> None:
    with_c, without = _built(True), _built(False)
    assert with_c.equals(without)
    stamps = with_c.column("timestamp").cast(pa.int64()).to_pylist()
    assert stamps[0] == MAX_TIMESTAMP_MS * 1000 and stamps[7] == 1_767_225_600_123_000
    assert with_c.column("timestamp_error").to_pylist() == [
        None,
        timestamp_error(1, MAX_TIMESTAMP_MS + 1),
        None,
        timestamp_error(1, -MAX_TIMESTAMP_MS - 1),
        None,
        timestamp_error(1, -(2**63)),
        timestamp_error(2, 2**63 - 1),
        None,
    ]
    assert timestamp_error(2, 2**63 - 1) == (
        "timestamp: 9223372036854775807 ms (LogAppendTime) is beyond the range of Spark's "
        "TIMESTAMP (microseconds in 64 bits: at most 9223372036854775 ms from the epoch either way)"
    )
    # A batch without such a record has no error at all.
    clean = _BatchBuilder(KafkaSplit("t", 0, 0, 9), ("timestamp", TIMESTAMP_ERROR)).build(
        [KafkaMessage(topic="t", partition=0, offset=0, value=b"v", timestamp=(1, 5))]
    )
    assert clean.column("timestamp_error").null_count == 1


def test_a_record_with_a_timestamp_error_keeps_the_fields_a_clean_record_sheds() -> None:
    decoded = DerivedColumn("__dkf_value_native", "value", StructType([]), lambda v: v)
    builder = _BatchBuilder(
        KafkaSplit("t", 0, 0, 9),
        ("value", "timestamp", TIMESTAMP_ERROR),
        (decoded,),
        Shedding(("value",), ("__dkf_value_native",)),
    )
    stamps = [(1, 5), (1, MAX_TIMESTAMP_MS + 1), (1, 6)]
    records = [
        KafkaMessage(topic="t", partition=0, offset=i, value=b"v%d" % i, timestamp=stamp)
        for i, stamp in enumerate(stamps)
    ]
    # Every value decoded natively: only the record whose timestamp Spark cannot hold keeps it.
    assert builder.build(records).column("value").to_pylist() == [None, b"v1", None]


def test_a_list_the_field_method_changes_is_read_as_it_was() -> None:
    native = _fields_module()
    messages = [Message(b"a", (1, 1)), Message(b"b", (1, 2)), Message(b"c", (1, 3))]

    def clearing(field: str) -> Any:
        def method(message: Message) -> Any:
            messages.clear()  # the list changes under the loop: its items stay alive
            return getattr(message, field)()

        return method

    listed = list(messages)
    validity, _, data = native.binaries(messages, clearing("value"))
    assert (validity, data) == (None, b"abc") and messages == []
    messages[:] = listed
    validity, micros, _ = native.timestamps(messages, clearing("timestamp"))
    assert validity is None and len(micros) == 24 and messages == []
