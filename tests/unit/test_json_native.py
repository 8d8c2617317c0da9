"""The json format's native batch decoding (Arrow's JSON parser in the reading tasks): which
records it decodes and what it gives; every record it leaves null is decoded per record."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from dagster_kafka_flinklike.formats import native_decoder
from dagster_kafka_flinklike.formats._arrow_json import NativeJson
from dagster_kafka_flinklike.options import Column

COLUMNS = [
    Column("id", "BIGINT"),
    Column("name", "STRING"),
    Column("amount", "DOUBLE"),
    Column("price", "DECIMAL(6, 2)"),
    Column("ok", "BOOLEAN"),
    Column("at", "TIMESTAMP(3)"),
    Column("day", "DATE"),
    Column("tags", "ARRAY<STRING>"),
    Column("address", "ROW<city STRING, zip INT>"),
]
GOOD = {
    "id": 7,
    "name": "Ada",
    "amount": 1.5,
    "price": 12.25,
    "ok": True,
    "at": "2021-03-24 10:00:00.123",
    "day": "2021-03-24",
    "tags": ["a", None],
    "address": {"city": "Pisa", "zip": 56100},
}


def decoder(columns: list[Column] = COLUMNS, **options: str) -> NativeJson:
    found = native_decoder("json", columns, options)
    assert isinstance(found, NativeJson)
    return found


def decode(values: list[bytes | None], columns: list[Column] = COLUMNS, **options: str) -> list:
    out = decoder(columns, **options)(pa.array(values, pa.binary()))
    assert out.type == decoder(columns, **options).arrow_type
    return out.to_pylist()


def doc(**changes: Any) -> bytes:
    return json.dumps({**GOOD, **changes}).encode()


def test_clean_records_decode_into_the_declared_types() -> None:
    (row,) = decode([doc()])
    assert row == {
        "id": 7,
        "name": "Ada",
        "amount": 1.5,
        "price": Decimal("12.25"),
        "ok": True,
        "at": dt.datetime(2021, 3, 24, 10, 0, 0, 123000),
        "day": dt.date(2021, 3, 24),
        "tags": ["a", None],
        "address": {"city": "Pisa", "zip": 56100},
    }


def test_whitespace_and_newlines_inside_a_record_are_whitespace() -> None:
    got = decode([b'{"id": 1,\n"name":\r\n "x"}', b'{ "id" : 2 }'])
    assert [(r["id"], r["name"]) for r in got] == [(1, "x"), (2, None)]


def test_missing_fields_and_nulls_are_null_and_unknown_fields_are_ignored() -> None:
    (row,) = decode([b'{"id": 1, "extra": {"deep": [1, 2]}, "address": {"city": null}}'])
    assert row["id"] == 1
    assert row["name"] is None and row["tags"] is None
    assert row["address"] == {"city": None, "zip": None}


def test_records_that_are_not_objects_are_left_to_the_per_record_decoding() -> None:
    values = [doc(id=1), None, b"", b"null", b"  " + doc(id=2), b"[1]", doc(id=3)]
    got = decode(values)
    # (blanks before the object: the record scanner reads them as Flink does)
    assert [r and r["id"] for r in got] == [1, None, None, None, 2, None, 3]


@pytest.mark.parametrize(
    "bad",
    [
        doc(id="5"),  # a number as a string: Flink converts it
        doc(id=5.0),  # an integral number written with a fraction
        doc(amount="1.5"),
        doc(name=5),  # a number into a STRING column: Flink keeps its text
        doc(ok="true"),
        doc(price=1.255),  # needs rounding
        doc(address=[1]),
        b'{"id": 1, "id": 2}',  # the last of duplicate keys wins in Flink
        b'{"id": 1, "x": NaN}',  # Flink refuses NaN anywhere
        b'{"id": 1, "x": -Infinity}',
        b'{"id": 1}{"id": 2}',  # two documents in one value
        b'{"id": 1, "name": "\xff"}',  # not UTF-8
        b'{"id": 1, "name": "a\tb"}',  # a raw control character
        b'{"id": 1,}',
        b'{"id": 99999999999999999999}',
    ],
)
def test_a_batch_with_a_record_arrow_would_read_otherwise_than_flink_decodes_per_record(
    bad: bytes,
) -> None:
    values = pa.array([doc(id=1), bad, doc(id=3)], pa.binary())
    assert decoder()._arrow(values).to_pylist() == [None, None, None]
    # The record scanner goes first, record by record: the others are decoded all the same.
    got = decode([doc(id=1), bad, doc(id=3)])
    assert (got[0]["id"], got[2]["id"]) == (1, 3)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("at", "2021-03-24T10:00:00"),  # ISO-8601 while the table reads SQL
        ("at", "2021-03-24 10:00:00Z"),
        ("at", "2021-03-24 25:00:00"),
        ("day", "2021-3-24"),
        ("at", "yesterday"),
    ],
)
def test_temporal_text_of_another_shape_leaves_only_its_record(field: str, text: str) -> None:
    got = decode([doc(id=1), doc(**{field: text}), doc(id=3)])
    assert got[1] is None
    if text != "2021-03-24 25:00:00":  # a shape that matches but no time: the batch goes
        assert [got[0]["id"], got[2]["id"]] == [1, 3]


def test_iso_8601_and_local_zone_timestamps() -> None:
    columns = [Column("at", "TIMESTAMP(3)"), Column("ltz", "TIMESTAMP_LTZ(3)")]
    values = [b'{"at": "2021-03-24T10:00:00.5", "ltz": "2021-03-24T10:00:00Z"}']
    (row,) = decode(values, columns, **{"timestamp-format.standard": "ISO-8601"})
    assert row["at"] == dt.datetime(2021, 3, 24, 10, 0, 0, 500000)
    assert row["ltz"] == dt.datetime(2021, 3, 24, 10, tzinfo=dt.UTC)
    assert decode(
        [b'{"at": "2021-03-24 10:00:00"}'], columns[:1], **{"timestamp-format.standard": "ISO-8601"}
    ) == [None]


MAPS = [
    Column("id", "INT"),
    Column("m", "MAP<STRING, INT>"),
    Column("r", "ROW<n MAP<STRING, ARRAY<MAP<STRING, STRING>>>, s STRING>"),
]


def test_maps_are_read_from_their_entries() -> None:
    values = [
        b'{"id": 1, "m": {"b": 2, "a": 3}}',
        b'{"id": 2, "m": {}, "r": {"n": {"k": [{"z": "1"}, null, {}], "j": null}}}',
        b'{"id": 3, "m": null, "r": {"s": 1.50, "n": null}}',
        b'{"id": 4.9, "m": {"\xc3\xa9": -1}}',  # a fraction truncated, as Flink reads an INT
    ]
    got = decode(values, MAPS)
    assert [(r["id"], r["m"]) for r in got] == [
        (1, [("b", 2), ("a", 3)]),
        (2, []),
        (3, None),
        (4, [("\xe9", -1)]),
    ]
    assert got[1]["r"] == {"n": [("k", [[("z", "1")], None, []]), ("j", None)], "s": None}
    assert got[2]["r"] == {"n": None, "s": "1.50"}


@pytest.mark.parametrize(
    "left",
    [
        b'{"id": 1, "m": []}',  # no object: Arrow would read an empty map
        b'{"id": 1, "m": 5}',
        b'{"id": 1, "m": {"a\\u0062": 1, "ab": 2}}',  # a key with an escape: one key or two
        b'{"id": 1, "m": {"a": 1,}}',
        # a repeated key: Flink keeps the last entry but converts every one (an earlier "x"
        # fails the record), so the per-record decoding, which does the same, decides
        b'{"id": 1, "m": {"a": 1, "b": 2, "a": 3}}',
        b'{"id": 1, "m": {"a": "x", "a": 3}}',
        b'{"id": 1, "r": {"n": {"k": [], "k": []}}}',
    ],
)
def test_a_record_whose_map_the_pass_cannot_write_goes_per_record_alone(left: bytes) -> None:
    values = pa.array([b'{"id": 1, "m": {"a": 1}}', left, b'{"id": 3}'], pa.binary())
    got = decoder(MAPS)._arrow(values).to_pylist()
    assert [r and r["id"] for r in got] == [1, None, 3]


def test_the_record_scanner_reads_maps_with_escaped_or_repeated_keys_as_flink_does() -> None:
    values = [
        b'{"id": 1, "m": {"a\\u0062": 1, "ab": 2, "\\u00e9": 3}}',
        b'{"id": 2, "m": {"a": 1, "b": 2, "a": 3}}',  # the last entry of a key wins
        b'{"id": 3, "r": {"n": {"k": [], "j": null, "k": [{"x": "y"}]}}}',
        b'{"id": 4, "m": {"a": "x", "a": 3}}',  # every entry converts in Flink: per record
        b'{"id": 5, "m": []}',
    ]
    got = decode(values, MAPS)
    assert got[0]["m"] == [("ab", 2), ("\xe9", 3)]
    assert got[1]["m"] == [("b", 2), ("a", 3)]
    assert got[2]["r"] == {"n": [("j", None), ("k", [[("x", "y")]])], "s": None}
    assert got[3] is None and got[4] is None


def test_temporal_text_in_rows_is_checked_and_converted_and_leaves_only_its_record() -> None:
    columns = [Column("id", "INT"), Column("r", "ROW<at TIMESTAMP(3), d DATE, q ROW<t TIME>>")]
    values = [
        b'{"id": 1, "r": {"at": "2021-03-24 10:00:00.5", "d": "2021-03-24", '
        b'"q": {"t": "10:00:00"}}}',
        b'{"id": 2, "r": {"at": "2021-03-24T10:00:00"}}',  # ISO-8601 while the table reads SQL
        b'{"id": 3, "r": {"q": {"t": "24:00:00"}}}',
        b'{"id": 4, "r": null}',
    ]
    got = decode(values, columns)
    assert got[0] == {
        "id": 1,
        "r": {
            "at": dt.datetime(2021, 3, 24, 10, 0, 0, 500000),
            "d": dt.date(2021, 3, 24),
            "q": {"t": "10:00:00"},
        },
    }
    assert got[1] is None and got[2] is None
    assert got[3] == {"id": 4, "r": None}


def test_tables_it_does_not_cover_decode_per_record_only() -> None:
    assert native_decoder("json", COLUMNS, {"fail-on-missing-field": "true"}) is None
    assert native_decoder("json", [Column("m", "MAP<INT, INT>")], {}) is None
    assert native_decoder("json", [Column("m", "MAP<STRING, TIMESTAMP(3)>")], {}) is None
    assert native_decoder("json", [Column("b", "BYTES")], {}) is None
    assert native_decoder("json", [Column("r", "ARRAY<TIMESTAMP(3)>")], {}) is None
    assert native_decoder("json", [Column("r", "ROW<m MAP<STRING, DATE>>")], {}) is None
    assert native_decoder("json", [], {}) is None
    assert native_decoder("csv", COLUMNS, {}) is None
