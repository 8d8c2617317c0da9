"""Debezium's operations interpreted where the records are read (``NativeChangelog``): each clean
record's changelog rows in order, and null for every record the per-record decoding must see
(dirty envelopes, records the native parse leaves, tombstones)."""

from __future__ import annotations

import json

import pyarrow as pa

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.formats._changelog import NativeChangelog
from dagster_kafka_flinklike.formats._scanners import scanner
from dagster_kafka_flinklike.source.records import native_columns

COLUMNS = [{"name": "id", "type": "INT"}, {"name": "name", "type": "STRING"}]


def _decoder(**options: str) -> NativeChangelog:
    spec = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "t", "format": "debezium-json", **options},
        columns=COLUMNS,
        role="source",
    )
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeChangelog)
    return derived.compute


def _event(op: str | None, before: dict | None, after: dict | None) -> bytes:
    event: dict = {"before": before, "after": after, "source": {"db": "shop"}}
    if op is not None:
        event["op"] = op
    return json.dumps(event).encode()


def test_each_operation_gives_flinks_rows_and_dirty_envelopes_are_left() -> None:
    assert scanner() is not None
    ada, bob = {"id": 1, "name": "Ada"}, {"id": 1, "name": "Bob"}
    values = [
        _event("c", None, ada),  # +I after
        _event("r", None, bob),  # +I after (a snapshot read)
        _event("u", ada, bob),  # -U before, +U after
        _event("d", bob, None),  # -D before
        _event("u", None, bob),  # dirty: an update without its before image
        _event("c", None, None),  # dirty: an insert without its after image
        _event("x", ada, bob),  # dirty: an unknown operation
        _event(None, ada, bob),  # dirty: no operation
        None,  # a tombstone
        b"{not json",  # left by the parse
        _event("d", {"id": 2, "name": None}, None),
    ]
    rows = _decoder()(pa.array(values, pa.binary())).to_pylist()
    assert rows == [
        [{"k": "+I", "r": ada}],
        [{"k": "+I", "r": bob}],
        [{"k": "-U", "r": ada}, {"k": "+U", "r": bob}],
        [{"k": "-D", "r": bob}],
        None,
        None,
        None,
        None,
        None,
        None,
        [{"k": "-D", "r": {"id": 2, "name": None}}],
    ]


def test_with_schema_include_the_event_is_the_payload() -> None:
    decoder = _decoder(**{"debezium-json.schema-include": "true"})
    ada = {"id": 7, "name": "Ada"}
    wrapped = json.dumps(
        {"schema": {"type": "struct"}, "payload": json.loads(_event("c", None, ada))}
    )
    values = [wrapped.encode(), json.dumps({"schema": {}}).encode(), _event("c", None, ada)]
    rows = decoder(pa.array(values, pa.binary())).to_pylist()
    # (no payload, or the event at the root instead of in it: left to the per-record decoding)
    assert rows == [[{"k": "+I", "r": ada}], None, None]


def test_a_slice_of_a_batch_and_an_empty_batch() -> None:
    decoder = _decoder()
    values = pa.array(
        [_event("d", {"id": i, "name": str(i)}, None) for i in range(6)], pa.binary()
    ).slice(2, 3)
    rows = decoder(values).to_pylist()
    assert rows == [[{"k": "-D", "r": {"id": i, "name": str(i)}}] for i in (2, 3, 4)]
    assert decoder(pa.array([], pa.binary())).to_pylist() == []
