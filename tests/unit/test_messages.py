"""The reader's extraction of message fields in C (``source/_messages.c``), on stand-in messages:
the same Arrow arrays the Python lists would give."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from dagster_kafka_flinklike.source.reader import _fields_module


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
    validity, micros = native.timestamps(messages, Message.timestamp)
    kind = pa.timestamp("us", tz="UTC")
    stamps = pa.Array.from_buffers(kind, 4, [pa.py_buffer(validity), pa.py_buffer(micros)])
    assert stamps.cast(pa.int64()).to_pylist() == [5000, None, 7000, 0]
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
