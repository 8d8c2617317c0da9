"""The csv format's record scanner (C): what it decodes and what it leaves, record by record,
to the per-record decoding."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from dagster_kafka_flinklike.formats import native_decoder
from dagster_kafka_flinklike.formats._scanners import NativeCsv
from dagster_kafka_flinklike.options import Column

COLUMNS = [
    Column("id", "BIGINT"),
    Column("name", "STRING"),
    Column("amount", "DOUBLE"),
    Column("price", "DECIMAL(6, 2)"),
    Column("ok", "BOOLEAN"),
    Column("at", "TIMESTAMP(3)"),
    Column("ltz", "TIMESTAMP_LTZ(3)"),
]


def decode(values: list[bytes | None], columns: list[Column] = COLUMNS, **options: str) -> list:
    found = native_decoder("csv", columns, options)
    assert isinstance(found, NativeCsv)
    out = found(pa.array(values, pa.binary()))
    assert out.type == found.arrow_type
    return out.to_pylist()


def test_flat_records_decode_into_the_declared_types() -> None:
    record = (
        b'-7,"Ada, ""the"" first",1.5e-3,12.50,true,2021-03-24 10:00:00.5,2021-03-24 10:00:00\n'
    )
    (row,) = decode([record])
    assert row == {
        "id": -7,
        "name": 'Ada, "the" first',
        "amount": 1.5e-3,
        "price": Decimal("12.50"),
        "ok": True,
        "at": dt.datetime(2021, 3, 24, 10, 0, 0, 500000),
        "ltz": dt.datetime(2021, 3, 24, 10, tzinfo=dt.UTC),
    }
    got = decode([b"1,,2,3,false,2021-03-24 10:00:00,2021-03-24 10:00:00Z\r\n"])
    assert got[0]["name"] == "" and got[0]["ltz"] == dt.datetime(2021, 3, 24, 10, tzinfo=dt.UTC)


def test_an_integer_is_read_as_javas_parselong_reads_it() -> None:
    tail = b",a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00"
    got = decode([b"+7" + tail, b"007" + tail, b"-0" + tail, b"00000000000000000000042" + tail])
    assert [r["id"] for r in got] == [7, 7, 0, 42]


def test_the_null_literal_other_delimiters_and_no_quoting() -> None:
    columns = [Column("id", "INT"), Column("name", "STRING")]
    options = {"null-literal": "n/a", "field-delimiter": ";"}
    got = decode([b"n/a;x", b"5;n/a", b'6;"q"'], columns, **options)
    assert got == [{"id": None, "name": "x"}, {"id": 5, "name": None}, {"id": 6, "name": "q"}]
    got = decode([b'6;"q"'], columns, **{**options, "disable-quote-character": "true"})
    assert got == [{"id": 6, "name": '"q"'}]


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"\n",
        b"1,a,1,1,true,2021-03-24 10:00:00",  # fewer fields
        b"1,a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00,x",  # more fields
        b" 1,a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00",  # spaces around a number
        b"1.0,a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00",
        b"1,a,NaN,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00",
        b"1,a,1,1.255,true,2021-03-24 10:00:00,2021-03-24 10:00:00",  # needs rounding
        b"1,a,1,1,TRUE,2021-03-24 10:00:00,2021-03-24 10:00:00",
        b"1,a,1,1,yes,2021-03-24 10:00:00,2021-03-24 10:00:00",
        b"1,a,1,1,true,2021-02-30 10:00:00,2021-03-24 10:00:00",
        b'1,a"b,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00',  # a quote inside
        b'1,"a"b,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00',
        b'1,"a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00',  # an open quote
        b"1,a\nb,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00",  # a line break inside
        b"1,\xff,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00",  # not UTF-8
        b"1,,1,1,true,2021-03-24 10:00:00,",  # an empty timestamp
        b"99999999999999999999,a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00",
    ],
)
def test_records_the_scanner_leaves_to_the_per_record_decoding(value: bytes | None) -> None:
    good = b"1,a,1,1,true,2021-03-24 10:00:00,2021-03-24 10:00:00"
    got = decode([good, value, good])
    assert got[1] is None and got[0] == got[2] and got[0] is not None


def test_comments_escapes_and_tables_it_does_not_cover() -> None:
    columns = [Column("id", "INT"), Column("name", "STRING")]
    assert decode([b"#1,a", b"2,b"], columns, **{"allow-comments": "true"}) == [
        None,
        {"id": 2, "name": "b"},
    ]
    assert decode([b"1,a\\,b", b"2,b"], columns, **{"escape-character": "\\"})[0] is None
    assert native_decoder("csv", [Column("tags", "ARRAY<STRING>")], {}) is None
    assert native_decoder("csv", columns, {"field-delimiter": "\u00a7"}) is None
    assert native_decoder("csv", [], {}) is None


@pytest.mark.parametrize("text", ["24:00:00", "99:99:99", "12:60:00", "12:00:60", "23:59:60.5"])
def test_a_time_out_of_range_is_left_to_the_per_record_decoding(text: str) -> None:
    columns = [Column("id", "INT"), Column("clock", "TIME")]
    got = decode([b"1,23:59:59.5", f"2,{text}".encode(), b"3,00:00:00"], columns)
    assert got == [{"id": 1, "clock": "23:59:59.5"}, None, {"id": 3, "clock": "00:00:00"}]
