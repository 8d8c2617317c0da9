"""The json format's record scanner (C): what it decodes and what it leaves, record by record, to
Arrow's parser and the per-record decoding; that where it and Arrow's parser both decode a
record, they agree; and that both scanners refuse arguments outside their buffers."""

from __future__ import annotations

import json
import math
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_kafka_flinklike.formats import native_decoder
from dagster_kafka_flinklike.formats._arrow_json import NativeJson
from dagster_kafka_flinklike.formats._scanners import scanner
from dagster_kafka_flinklike.options import Column

FLAT = [
    Column("id", "BIGINT"),
    Column("t", "TINYINT"),
    Column("s", "SMALLINT"),
    Column("i", "INT"),
    Column("name", "STRING"),
    Column("amount", "DOUBLE"),
    Column("f", "FLOAT"),
    Column("price", "DECIMAL(6, 2)"),
    Column("ok", "BOOLEAN"),
    Column("at", "TIMESTAMP(3)"),
    Column("day", "DATE"),
]


def decoder(columns: list[Column] = FLAT, **options: str) -> NativeJson:
    found = native_decoder("json", columns, options)
    assert isinstance(found, NativeJson)
    return found


def scanned(values: list[bytes | None], columns: list[Column] = FLAT) -> list[bool]:
    """Which records the scanner alone decodes."""
    found = decoder(columns)
    assert found.scan_columns is not None
    array = pa.array(values, pa.binary())
    validity, offsets, data = array.buffers()
    bitmap, _ = scanner().scan(
        validity, offsets, data, array.offset, len(array), found.scan_columns
    )
    return pa.Array.from_buffers(pa.bool_(), len(array), [None, pa.py_buffer(bitmap)]).to_pylist()


def decode(values: list[bytes | None], columns: list[Column] = FLAT) -> list[Any]:
    out = decoder(columns)(pa.array(values, pa.binary()))
    assert out.type == decoder(columns).arrow_type
    return out.to_pylist()


def arrow_only(values: list[bytes | None], columns: list[Column] = FLAT) -> list[Any]:
    """What Arrow's parser alone gives (record by record, so one record cannot spoil others)."""
    found = decoder(columns)
    return [found._arrow(pa.array([v], pa.binary())).to_pylist()[0] for v in values]


def test_the_scanner_is_built_and_scans_flat_tables() -> None:
    assert scanner() is not None, "the C record scanner was not built (make env builds it)"
    assert decoder().scan_columns is not None
    assert decoder([Column("tags", "ARRAY<STRING>")]).scan_columns is None  # nested: Arrow only
    assert decoder([Column(f"c{i}", "INT") for i in range(65)]).scan_columns is None


def test_flat_records_decode_into_the_declared_types() -> None:
    record = (
        b'{"id": -9223372036854775808, "t": 127, "s": -32768, "i": 2147483647,'
        b' "name": "A\\u00e9\\ud83d\\ude00 \\"q\\" \\\\ \\/ \\n\xc3\xa9", "amount": -1.5e-7,'
        b' "f": 0.1, "price": 12.5, "ok": false, "at": "2021-03-24 10:00:00.123",'
        b' "day": "2021-03-24", "unknown": {"deep": [1, {"x": [true, null, -0.5e3]}]}}'
    )
    assert scanned([record]) == [True]
    (row,) = decode([record])
    assert row["id"] == -(2**63) and row["t"] == 127 and row["s"] == -32768
    assert row["i"] == 2**31 - 1
    assert row["name"] == 'A\u00e9\U0001f600 "q" \\ / \n\u00e9'
    assert row["amount"] == -1.5e-7 and row["f"] == pytest.approx(0.1) and row["ok"] is False
    assert row["price"] == Decimal("12.50")
    assert row["at"].isoformat() == "2021-03-24T10:00:00.123000"
    assert row["day"].isoformat() == "2021-03-24"


def test_nulls_missing_fields_whitespace_and_an_empty_object() -> None:
    values = [b'{"id": null, "name": null}', b" \t{ }\r\n", b'{\n"id" :\t1 ,"name":"x"\n}  ']
    assert scanned(values) == [True, True, True]
    got = decode(values)
    assert [(r["id"], r["name"], r["ok"]) for r in got] == [
        (None, None, None),
        (None, None, None),
        (1, "x", None),
    ]


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"null",
        b"[1]",
        b'"text"',
        b'{"id": 1}{"id": 2}',  # two documents
        b'{"id": 1} x',
        b'{"id": 1,}',  # malformed anywhere, also in a field the table does not declare
        b'{"x": [1,], "id": 1}',
        b'{"x": 01, "id": 1}',
        b'{"x": 1., "id": 1}',
        b'{"x": NaN, "id": 1}',
        b'{"x": -Infinity}',
        b'{"x": tru}',
        b'{"x": "\\x"}',  # an unknown escape
        b'{"x": "\xff"}',  # not UTF-8
        b'{"x": "\xed\xa0\x80"}',  # an encoded surrogate
        b'{"name": "\\ud800"}',  # a lone surrogate escape in a declared field
        b'{"id": 1, "id": 2}',  # a declared field twice
        b'{"i\\u0064": 1}',  # an escape in a key
        b'{"id": " 5"}',  # a number as a string with blanks, which Flink trims
        b'{"id": "+5.0"}',
        b'{"i": "1e2"}',
        b'{"t": "128"}',
        b'{"amount": ".5"}',  # Java's notations beyond JSON's
        b'{"amount": "1.5d"}',
        b'{"amount": "NaN"}',
        b'{"amount": "1e400"}',
        b'{"price": "1.255"}',
        b'{"price": "+99.99"}',
        b'{"id": 5.0}',  # an integral number written with a fraction
        b'{"id": 5e0}',
        b'{"id": 9223372036854775808}',  # out of range
        b'{"t": 128}',
        b'{"s": 32768}',
        b'{"i": -2147483649}',
        b'{"name": {"a": 1}}',
        b'{"name": [1]}',
        b'{"name": 01}',
        b'{"ok": "true"}',
        b'{"ok": 1}',
        b'{"amount": 1e400}',  # overflows a double
        b'{"amount": 1e-400}',
        b'{"price": 1.255}',  # needs rounding
        b'{"price": 10000.5}',  # does not fit DECIMAL(6, 2)
        b'{"price": 1e2}',
        b'{"day": 20210324}',
    ],
)
def test_records_the_scanner_leaves_to_the_next_decoders(value: bytes | None) -> None:
    assert scanned([b'{"id": 1}', value, b'{"id": 3}']) == [True, False, True]


def test_raw_control_characters_in_a_string_are_its_content_as_in_flink() -> None:
    values = [b'{"name": "a\tb\x01\n", "x": "\x00"}']
    assert scanned(values) == [True]
    assert [r["name"] for r in decode(values)] == ["a\tb\x01\n"]


def test_a_number_or_a_boolean_into_a_string_column_is_its_text_as_written() -> None:
    values = [b'{"name": 1.50}', b'{"name": -0}', b'{"name": 1E+2}', b'{"name": true}',
              b'{"name": false, "id": 7}', b'{"name": 12345678901234567890.5e-3}']  # fmt: skip
    assert scanned(values) == [True] * len(values)
    assert [r["name"] for r in decode(values)] == [
        "1.50", "-0", "1E+2", "true", "false", "12345678901234567890.5e-3"
    ]  # fmt: skip


def test_numbers_written_as_strings_are_read_from_their_text_as_flink_reads_them() -> None:
    values = [
        b'{"id": "-9223372036854775808", "t": "+7", "s": "007", "i": "\\u0034\\u0032"}',
        b'{"amount": "1.5", "f": "0.1", "price": "99.99"}',
        b'{"amount": "-0", "f": "1E3", "price": "1.2500", "id": "-0"}',
        b'{"i": "0000000000000000000000000042"}',  # leading zeros, however many
    ]
    assert scanned(values) == [True] * len(values)
    rows = decode(values)
    assert [(r["id"], r["t"], r["s"], r["i"]) for r in rows[:1]] == [(-(2**63), 7, 7, 42)]
    assert (rows[1]["amount"], rows[1]["f"], rows[1]["price"]) == (1.5, struct.unpack(
        "f", struct.pack("f", 0.1))[0], Decimal("99.99"))  # fmt: skip
    assert (rows[2]["amount"], rows[2]["f"], rows[2]["price"], rows[2]["id"]) == (
        -0.0, 1000.0, Decimal("1.25"), 0
    )  # fmt: skip
    assert math.copysign(1, rows[2]["amount"]) == -1
    assert rows[3]["i"] == 42


def test_records_the_scanner_leaves_are_decoded_by_arrow_where_it_can() -> None:
    values = [b'{"id": 1}', b'{"price": "+99.99", "id": 2}', b'{"id": " 5"}', b'{"id": 4}']
    assert scanned(values) == [True, False, False, True]
    got = decode(values)
    # Arrow takes the records the scanner left, as a batch of their own: a DECIMAL written as a
    # string it reads; an integer written as a string it refuses, and so both go per record.
    assert [r and r["id"] for r in got] == [1, None, None, 4]
    values = [b'{"id": 1}', b'{"price": "+99.99", "id": 2}', b'{"id": 4}']
    assert [(r["id"], r["price"]) for r in decode(values)] == [
        (1, None),
        (2, Decimal("99.99")),
        (4, None),
    ]


def test_zeros_past_the_scale_and_signed_zeros() -> None:
    values = [b'{"price": 1.2500, "amount": -0.0, "id": -0}', b'{"price": -0.00}']
    assert scanned(values) == [True, True]
    got = decode(values)
    assert got[0]["price"] == Decimal("1.25") and got[0]["id"] == 0
    assert math.copysign(1.0, got[0]["amount"]) == -1.0
    assert got[1]["price"] == Decimal("0.00")


def test_a_sliced_array_is_scanned_from_its_offset() -> None:
    values = pa.array([b'{"id": 1}', b"oops", b'{"id": 3}', b'{"id": 4}'], pa.binary())
    got = decoder()(values.slice(1, 3)).to_pylist()
    assert [r and r["id"] for r in got] == [None, 3, 4]


def test_a_big_batch_grows_its_string_buffers() -> None:
    values = [json.dumps({"id": i, "name": "x" * (i % 700)}).encode() for i in range(3000)]
    got = decode(values)
    assert [r["name"] for r in got] == ["x" * (i % 700) for i in range(3000)]


class _Number(str):
    """A JSON number token, written as it is."""


_NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(lambda n: _Number(str(n))),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: _Number(repr(x))),
    st.from_regex(
        r"-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,6})?([eE][+-]?[0-9]{1,3})?", fullmatch=True
    ).map(_Number),
)
_SCALARS = st.one_of(st.none(), st.booleans(), st.text(max_size=12), _NUMBERS)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_NAMES = st.sampled_from([c.name for c in FLAT] + ["other", "x"])


def _dumps(value: Any, ascii_only: bool, spaced: bool) -> str:
    """JSON text of ``value`` (numbers as their tokens)."""
    comma, colon = (", ", ": ") if spaced else (",", ":")
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, dict):
        items = (
            json.dumps(k, ensure_ascii=ascii_only) + colon + _dumps(v, ascii_only, spaced)
            for k, v in value.items()
        )
        return "{" + comma.join(items) + "}"
    if isinstance(value, list):
        return "[" + comma.join(_dumps(v, ascii_only, spaced) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(st.dictionaries(_NAMES, _VALUES, max_size=6), min_size=1, max_size=8),
    ascii_only=st.booleans(),
    spaced=st.booleans(),
)
def test_the_scanner_agrees_with_arrows_parser_where_both_decode(
    records: list[dict[str, Any]], ascii_only: bool, spaced: bool
) -> None:
    values = [_dumps(r, ascii_only, spaced).encode("utf-8", "surrogatepass") for r in records]
    found = decoder()
    by_scanner = scanned(values)
    combined = found(pa.array(values, pa.binary())).to_pylist()
    alone = arrow_only(values)
    for value, scanned_it, got, arrow in zip(values, by_scanner, combined, alone, strict=True):
        if scanned_it:
            json.loads(value)  # never decodes what is not JSON
            assert got is not None
            if arrow is not None:
                assert got == arrow, value
        else:  # left to Arrow's parser, which reads the records left as one batch
            assert got is None or got == arrow, value


CLOCK = [Column("id", "BIGINT"), Column("clock", "TIME")]
#: TIME texts naming no time of day: Flink refuses them (hours 0-23, minutes and seconds 0-59).
OUT_OF_RANGE_TIMES = ["24:00:00", "99:99:99", "12:60:00", "12:00:60", "23:59:60.5"]


@pytest.mark.parametrize("text", OUT_OF_RANGE_TIMES)
def test_a_time_out_of_range_is_left_by_the_scanner_and_arrows_parser(text: str) -> None:
    values = [b'{"id": 1, "clock": "23:59:59.999"}', json.dumps({"id": 2, "clock": text}).encode()]
    assert scanned(values, CLOCK) == [True, False]
    assert arrow_only(values, CLOCK) == [{"id": 1, "clock": "23:59:59.999"}, None]
    assert decode(values, CLOCK) == [{"id": 1, "clock": "23:59:59.999"}, None]


def _buffers(values: list[bytes | None]) -> tuple[Any, bytes, bytes]:
    validity, offsets, data = pa.array(values, pa.binary()).buffers()
    assert offsets is not None and data is not None
    return validity, offsets.to_pybytes(), data.to_pybytes()


_ID = ((b"id", "L", 0, 0),)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ((None, struct.pack("<3i", 0, 3, 6), b"{}{}{}", 0, 3), "shorter than offset"),
        ((None, struct.pack("<3i", 0, 3, 6), b"{}{}{}", 2, 1), "shorter than offset"),
        ((None, struct.pack("<3i", 0, 3, 6), b"{}{}{}", 2**62, 1), "shorter than offset"),
        ((None, struct.pack("<3i", 0, 3, 6), b"{}{}{}", 2**63 - 1, 2**63 - 1), "shorter"),
        ((None, b"", b"", 0, 0), "shorter than offset"),
        ((b"", struct.pack("<3i", 0, 2, 4), b"{}{}", 0, 2), "shorter than offset"),
        ((None, struct.pack("<3i", 0, 2, 1000), b"{}{}", 0, 2), "offsets of record 1"),
        ((None, struct.pack("<3i", 0, 4, 2), b"{}{}", 0, 2), "offsets of record 1"),
        ((None, struct.pack("<3i", -4, 2, 4), b"{}{}", 0, 2), "offsets of record 0"),
        ((None, struct.pack("<3i", 0, 2, 4), b"{}{}", -1, 2), "must not be negative"),
    ],
)
def test_buffers_offsets_and_lengths_that_do_not_fit_are_refused(
    arguments: tuple[Any, ...], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        scanner().scan(*arguments, _ID)
    with pytest.raises(ValueError, match=error):
        scanner().scan_csv(*arguments, _ID, ord(","), ord('"'), -1, None, False)


def test_columns_and_csv_characters_that_are_not_described_are_refused() -> None:
    arguments = (None, struct.pack("<2i", 0, 2), b"{}", 0, 1)
    with pytest.raises(TypeError, match="a column must be"):
        scanner().scan(*arguments, (b"id",))
    with pytest.raises(ValueError, match="unknown column kind 'LL'"):
        scanner().scan(*arguments, ((b"id", "LL", 0, 0),))
    with pytest.raises(ValueError, match="DECIMAL precision"):
        scanner().scan(*arguments, ((b"id", "m", 39, 0),))
    with pytest.raises(ValueError, match="ASCII"):
        scanner().scan_csv(*arguments, _ID, ord(","), -2, -1, None, False)


def test_offsets_in_a_buffer_of_any_alignment_are_read() -> None:
    validity, offsets, data = _buffers([b'{"id": 1}', None, b'{"id": 3}'])
    aligned = scanner().scan(validity, offsets, data, 0, 3, _ID)
    misaligned = memoryview(b"\0" + offsets)[1:]
    assert scanner().scan(validity, misaligned, data, 0, 3, _ID) == aligned
    assert aligned[0] == bytes([0b101])
