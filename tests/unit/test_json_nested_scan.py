"""The json format's record scanner (C) on nested tables: rows at any depth, arrays of scalars
and of rows, maps with text keys. What it decodes and what it leaves, record by record, to
Arrow's parser and the per-record decoding; and that where it and Arrow's parser (after the
exactness pass) both decode a record, they agree (the rows against the per-record decoding in
Spark: ``tests/integration/test_native_nested_decoding.py``)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_kafka_flinklike.formats import native_decoder
from dagster_kafka_flinklike.formats._arrow_json import NativeJson
from dagster_kafka_flinklike.formats._scanners import scanned_tree, tree_columns
from dagster_kafka_flinklike.options import Column

COLUMNS = [
    Column("id", "BIGINT"),
    Column("r", "ROW<name STRING, n INT, q ROW<x DOUBLE, d DECIMAL(6, 2), at TIMESTAMP(3)>>"),
    Column("tags", "ARRAY<STRING>"),
    Column("items", "ARRAY<ROW<sku STRING, ok BOOLEAN>>"),
    Column("m", "MAP<STRING, INT>"),
    Column("mm", "MAP<STRING, ARRAY<MAP<STRING, STRING>>>"),
    Column("grid", "ARRAY<ARRAY<SMALLINT>>"),
]


def decoder(columns: list[Column] = COLUMNS) -> NativeJson:
    found = native_decoder("json", columns, {})
    assert isinstance(found, NativeJson) and found.tree_columns is not None
    return found


def scan(values: list[bytes | None], columns: list[Column] = COLUMNS) -> list[Any]:
    """The scanner's rows alone (None: a record it left)."""
    found = decoder(columns)
    assert found.tree_columns is not None
    struct, _ = scanned_tree(
        pa.array(values, pa.binary()), found.arrow_type, found.tree_columns, False
    )
    struct.validate(full=True)
    return struct.to_pylist()


def test_nested_tables_are_described_for_the_scanner() -> None:
    described = tree_columns(COLUMNS, "SQL")
    assert described is not None and described[4] == (
        b"m",
        "M",
        0,
        0,
        ((b"", "s", 0, 0), (b"", "I", 0, 0)),
    )
    assert tree_columns([Column("a", "INT")], "SQL") is None  # flat: the flat scanner's
    assert tree_columns([Column("m", "MAP<INT, INT>")], "SQL") is None
    assert tree_columns([Column("b", "ARRAY<BYTES>")], "SQL") is None


def test_nested_records_decode_with_nulls_and_empties_at_every_depth() -> None:
    values = [
        b'{"id": 1, "r": {"name": "a\\n\\u00e9", "n": -5, "q": {"x": 1.5, "d": 12.3400,'
        b' "at": "2021-03-24 10:00:00.5"}}, "tags": ["x", null, 7, true], "items": [{"sku":'
        b' "s", "ok": false}, null, {}], "m": {"b": 2, "a": null}, "mm": {"k": [{"z": "1"},'
        b' null, {}], "j": null, "e": []}, "grid": [[1, -2], [], null]}',
        b'{"r": null, "tags": [], "items": [], "m": {}, "mm": {}, "grid": []}',
        b'{"r": {}, "unknown": {"deep": [1, {"x": [true, null]}]}}',
        b" \n{}\t",
    ]
    got = scan(values)
    assert got[0] == {
        "id": 1,
        "r": {
            "name": "a\n\xe9",
            "n": -5,
            "q": {"x": 1.5, "d": Decimal("12.34"), "at": got[0]["r"]["q"]["at"]},
        },
        "tags": ["x", None, "7", "true"],
        "items": [{"sku": "s", "ok": False}, None, {"sku": None, "ok": None}],
        "m": [("b", 2), ("a", None)],
        "mm": [("k", [[("z", "1")], None, []]), ("j", None), ("e", [])],
        "grid": [[1, -2], [], None],
    }
    assert got[0]["r"]["q"]["at"].isoformat() == "2021-03-24T10:00:00.500000"
    assert got[1] == {"id": None, "r": None, "tags": [], "items": [], "m": [], "mm": [], "grid": []}
    assert got[2]["r"] == {"name": None, "n": None, "q": None} and got[2]["m"] is None
    assert got[3] == dict.fromkeys(got[3])


def test_a_repeated_map_key_keeps_its_last_entry_in_the_order_of_the_last_entries() -> None:
    many = ", ".join(f'"k{i % 7}": {i}' for i in range(40))  # past the pairwise comparison
    values = [
        b'{"m": {"a": 1, "b": 2, "a": 3}}',
        b'{"m": {"a\\u0062": 1, "ab": 2, "\\u00e9": 3, "\xc3\xa9": 4}}',  # the same text twice
        b'{"mm": {"k": [{"a": "1", "a": "2"}], "k": null}}',
        ("{" + f'"m": {{{many}}}' + "}").encode(),
    ]
    got = scan(values)
    assert got[0]["m"] == [("b", 2), ("a", 3)]
    assert got[1]["m"] == [("ab", 2), ("\xe9", 4)]
    assert got[2]["mm"] == [("k", None)]
    assert got[3]["m"] == [(f"k{i % 7}", i) for i in range(33, 40)]


@pytest.mark.parametrize(
    "value",
    [
        b'{"r": []}',  # a value of another kind, at every depth
        b'{"r": "x"}',
        b'{"r": {"q": 1}}',
        b'{"tags": {}}',
        b'{"tags": "a"}',
        b'{"tags": [[1]]}',
        b'{"items": [1]}',
        b'{"m": []}',
        b'{"m": {"a": "1.5"}}',
        b'{"m": {"a": "x", "a": 1}}',  # every entry converts (Flink fails the first)
        b'{"mm": {"k": [{"z": {}}]}}',
        b'{"grid": [[1, 40000]]}',  # beyond SMALLINT
        b'{"grid": [[1.5]]}',
        b'{"r": {"n": 1, "n": 2}}',  # a declared field twice in a row
        b'{"r": {"\\u006e": 1}}',  # an escape in a row's key
        b'{"m": {"\\ud800": 1}}',  # a lone surrogate in a map's key
        b'{"r": {"q": {"x": NaN}}}',
        b'{"tags": [1,]}',
        b'{"r": {"q": {"d": 1.255}}}',
        b'{"r": {"q": {"at": "2021-03-24T10:00:00"}}}',
        b'{"r": {"q": {"x": 1e400}}}',
        b'{"m": {"a": 1}} {}',
        b'{"x": [' * 300 + b"]" * 300 + b"}",  # nested deeper than any table's
    ],
)
def test_records_the_scanner_leaves_to_the_next_decoders(value: bytes) -> None:
    assert [r is not None for r in scan([b'{"id": 1}', value, b'{"id": 3}'])] == [
        True,
        False,
        True,
    ]


def test_in_node_mode_a_number_in_a_text_position_leaves_the_record() -> None:
    found = decoder()
    assert found.tree_columns is not None
    values = pa.array([b'{"tags": ["1.50"]}', b'{"tags": [1.50]}', b'{"m": {"1": 1}}'], pa.binary())
    _, decoded = scanned_tree(values, found.arrow_type, found.tree_columns, True)
    assert decoded.to_pylist() == [True, False, True]


_KEYS = st.sampled_from(["id", "r", "name", "n", "q", "x", "d", "tags", "items", "sku", "ok",
                         "m", "mm", "grid", "a", "é", "a b", ""])  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([1.5, -0.25, 12.345, 99.99]),
    st.text(max_size=6),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(st.dictionaries(_KEYS, _VALUES, max_size=6), min_size=1, max_size=8),
    ascii_only=st.booleans(),
)
def test_the_scanner_agrees_with_arrows_parser_where_both_decode(
    records: list[dict[str, Any]], ascii_only: bool
) -> None:
    values = [
        json.dumps(r, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") for r in records
    ]
    found = decoder()
    by_scanner = scan(values)
    combined = found(pa.array(values, pa.binary())).to_pylist()
    for value, mine, got in zip(values, by_scanner, combined, strict=True):
        arrow = found._arrow(pa.array([value], pa.binary())).to_pylist()[0]
        if mine is not None:
            json.loads(value)  # never decodes what is not JSON
            assert got == mine, value
            if arrow is not None:
                assert mine == arrow, value
        else:  # left to Arrow's parser (after the exactness pass), which reads what it can
            assert got is None or got == arrow, value
