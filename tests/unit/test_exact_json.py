"""The json format's exactness pass (``formats/_exact_json.py``, ``_text_scan.exact``): which
records it rewrites and how, and the C pass and the Python one giving the same documents."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest

from dagster_kafka_flinklike.formats._exact_json import ExactJson, _exact_python, exact_json
from dagster_kafka_flinklike.formats._scanners import scanner
from dagster_kafka_flinklike.options import Column

COLUMNS = [
    Column("id", "INT"),
    Column("s", "STRING"),
    Column("p", "DECIMAL(10, 2)"),
    Column("r", "ROW<a STRING, b ARRAY<STRING>, d DECIMAL(5, 1)>"),
    Column("m", "MAP<STRING, STRING>"),
    Column("n", "MAP<INT, ARRAY<DECIMAL(38, 0)>>"),
    Column("b", "BIGINT"),
    Column("d", "DOUBLE"),
    Column("t", "TINYINT"),
    Column("q", "ROW<i ARRAY<INT>, f FLOAT>"),
]
CASES = [
    # a number in a STRING position: quoted, as written
    (b'{"id": 1, "s": 1.50}', {"id": 1, "s": "1.50"}),
    (b'{"s": -0, "r": {"a": 1e2, "b": [1.0, "x", 2]}}',
     {"s": "-0", "r": {"a": "1e2", "b": ["1.0", "x", "2"]}}),
    (b'{"m": {"k": 1.50, "j": "1.50"}}', {"m": {"k": "1.50", "j": "1.50"}}),
    # a DECIMAL beyond any precision: null; a huge negative exponent: 0
    (b'{"p": 1e400}', {"p": None}),
    (b'{"p": "+1e40"}', {"p": None}),
    (b'{"p": 1.5e-99999999}', {"p": 0}),
    (b'{"r": {"d": 12345678901234567890123456789012345678}}', {"r": {"d": None}}),
    (b'{"n": {"1": [1e38, 1e37, "1e38"]}}', {"n": {"1": [None, 1e37, None]}}),
    # a DECIMAL string trimmed; with a comma, in an array (the record fails)
    (b'{"p": " 12.5 "}', {"p": "12.5"}),
    (b'{"p": "1,000"}', {"p": ["1,000"]}),
    # a number with a fraction or an exponent into INT or BIGINT: truncated as a double
    (b'{"id": 1.9, "b": -1.5}', {"id": 1, "b": -1}),
    (b'{"id": 1e2, "b": -0.5, "q": {"i": [2.5, 3, -7e-1]}}',
     {"id": 100, "b": 0, "q": {"i": [2, 3, 0]}}),
    (b'{"b": 9223372036854775806.5}', {"b": 9223372036854775807}),
    (b'{"b": 2147483647.5, "id": 2147483647.0}', {"b": 2147483647, "id": 2147483647}),
    # texts longer than the C pass's stack copy (read from the heap)
    (b'{"id": 1.' + b"5" * 300 + b'}', {"id": 1}),
    (b'{"d": 1' + b"0" * 400 + b'.5}', {"d": "1" + "0" * 400 + ".5"}),
    # out of range: left (dirty, as in Flink)
    (b'{"id": 2147483647.5, "b": 1e19, "t": 1.5}', None),
    (b'{"id": -2147483648.9, "b": 1e400}', None),
    # a number beyond a double's range into FLOAT or DOUBLE: quoted (infinity)
    (b'{"d": 1e400, "q": {"f": -1E+999999999}}', {"d": "1e400", "q": {"f": "-1E+999999999"}}),
    (b'{"d": 1e308, "q": {"f": 1e39}}', None),
    # nothing to change
    (b'{"id": 1, "s": "1.50", "p": 1.5}', None),
    (b'{"p": 0e99999999, "other": 1e400, "r": {"a": {"x": 1.50}}}', None),
    (b'{"p": 99999999.995, "s": true}', None),
    (b'{"p": "  "}', None),
    # not one JSON object: left to the decoding, which reports it
    (b'{"s": 1.5', None),
    (b'{"s": 1.50} x', None),
    (b'{"s": 01}', None),
    (b"[1.5]", None),
    (None, None),
]  # fmt: skip


def _decoded(value: bytes | None) -> Any:
    return None if value is None else json.loads(value)


@pytest.mark.parametrize("python", [False, True])
def test_the_pass_rewrites_what_spark_would_read_otherwise(python: bool, monkeypatch: Any) -> None:
    if python:
        monkeypatch.setattr("dagster_kafka_flinklike.formats._exact_json.scanner", lambda: None)
    else:
        assert scanner() is not None, "the C modules are built with the package here"
    rewrite = exact_json(COLUMNS)
    assert isinstance(rewrite, ExactJson)
    values = pa.array([record for record, _ in CASES], pa.binary())
    out = rewrite(values).to_pylist()
    assert [_decoded(v) for v in out] == [expected for _, expected in CASES]
    # an array that starts inside its buffers
    assert rewrite(values.slice(3, 5)).to_pylist() == out[3:8]


def test_a_table_without_positions_to_rewrite_has_no_pass() -> None:
    assert exact_json([Column("t", "TINYINT"), Column("m", "MAP<SMALLINT, BOOLEAN>")]) is None
    assert exact_json([Column("m", "MAP<STRING, DECIMAL(3, 1)>")]) is not None
    assert exact_json([Column("m", "MAP<STRING, BIGINT>")]) is not None
    assert exact_json([Column("d", "ARRAY<DOUBLE>")]) is not None


_TOKENS = [
    "1.50", "-0", "1e2", "1E+400", "1.5e-99999999", "0e99999", "12345678901234567890123456789",
    '"1.50"', '" 12 "', '"1,000"', '"+1e40"', '"x"', "true", "null", "[]", "{}", '"\\u0031"',
    "1.9", "-2.5e3", "9223372036854775806.5", "2147483647.5", "-0.0", "1e308", "1e309", "-1e400",
    "12345678901234567890123.5",
]  # fmt: skip


def _value(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.15:
        keys = ["a", "b", "d", "k"]
        return "{" + ", ".join(f'"{rng.choice(keys)}": {_value(rng, depth + 1)}'
                               for _ in range(rng.randrange(4))) + "}"  # fmt: skip
    if depth < 3 and roll < 0.3:
        return "[" + ", ".join(_value(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"
    return rng.choice(_TOKENS)


def test_the_c_pass_and_the_python_pass_give_the_same_documents(monkeypatch: Any) -> None:
    rng = random.Random(7)
    names = [c.name for c in COLUMNS] + ["other"]
    records = [
        ("{" + ", ".join(f'"{rng.choice(names)}": {_value(rng)}' for _ in range(rng.randrange(6)))
         + "}").encode()
        for _ in range(3000)
    ]  # fmt: skip
    rewrite = exact_json(COLUMNS)
    assert rewrite is not None
    native = rewrite(pa.array(records, pa.binary())).to_pylist()
    python = [_exact_python(r, rewrite.root) for r in records]
    differ = [
        (r, n, p)
        for r, n, p in zip(records, native, python, strict=True)
        if _decoded(n or r) != _decoded(p or r)
    ]
    assert not differ, differ[:5]
    assert sum(n is not None for n in native) > 500  # the corpus meets the pass


NODE_TEXTS = [
    ("1.50", "1.5"), ("1e2", "1E+2"), ("100.0", "1E+2"), ("-0", "0"), ("-0.0", "0"), ("5", "5"),
    ("-7", "-7"), ("0.000001", "0.000001"), ("0.0000001", "1E-7"), ("-12.3400e5", "-1.234E+6"),
    ("120e-1", "12"), ("1234567890123.125e-1", "123456789012.3125"),
    ("123456789012345678901234567890", "123456789012345678901234567890"),
]  # fmt: skip


@pytest.mark.parametrize("python", [False, True])
def test_in_node_mode_a_number_into_a_string_is_javas_normalised_decimal(
    python: bool, monkeypatch: Any
) -> None:
    """The changelog formats' envelopes: Flink reads them node by node."""
    if python:
        monkeypatch.setattr("dagster_kafka_flinklike.formats._exact_json.scanner", lambda: None)
    rewrite = exact_json([Column("s", "STRING"), Column("p", "DECIMAL(10, 2)")], node=True)
    assert rewrite is not None
    records = [b'{"s": %s}' % n.encode() for n, _ in NODE_TEXTS]
    records += [b'{"p": " 2.5 "}', b'{"p": "1,000"}', b'{"p": 1e400}', b'{"s": 1e100000}']
    out = [_decoded(v) for v in rewrite(pa.array(records, pa.binary())).to_pylist()]
    assert out[: len(NODE_TEXTS)] == [{"s": text} for _, text in NODE_TEXTS]
    # not trimmed (Flink's node reading fails it, as Spark's reader does); the rest as json's
    assert out[len(NODE_TEXTS) :] == [None, {"p": ["1,000"]}, {"p": None}, None]


#: Java's Double.toString() texts, as Flink's node-based reading gives a fractional number in a
#: STRING when the table has no DECIMAL (Jackson then reads it as a double; Flink agreed on the
#: first six).
NODE_DOUBLE_TEXTS = [
    ("100.0", "100.0"), ("1e2", "100.0"), ("1.50", "1.5"), ("0.0000001", "1.0E-7"),
    ("-0.0", "-0.0"), ("-0", "0"), ("12345678901234567890123", "12345678901234567890123"),
    ("1e400", "Infinity"), ("-1e400", "-Infinity"), ("1e-400", "0.0"), ("1e7", "1.0E7"),
    ("9999999.5", "9999999.5"), ("0.001", "0.001"), ("0.0009999", "9.999E-4"),
    ("-1.5e-5", "-1.5E-5"), ("123456789.125", "1.23456789125E8"), ("0.1", "0.1"),
    ("4.9e-324", "4.9E-324"), ("1.7976931348623157e308", "1.7976931348623157E308"),
    ("2.5E+10", "2.5E10"), ("0.30000000000000004", "0.30000000000000004"), ("1e100000", "Infinity"),
]  # fmt: skip


@pytest.mark.parametrize("python", [False, True])
def test_in_node_mode_without_a_decimal_a_number_into_a_string_is_javas_double_text(
    python: bool, monkeypatch: Any
) -> None:
    if python:
        monkeypatch.setattr("dagster_kafka_flinklike.formats._exact_json.scanner", lambda: None)
    rewrite = exact_json([Column("id", "INT"), Column("r", "ROW<s STRING>")], node=True)
    assert rewrite is not None
    records = [b'{"r": {"s": %s}}' % n.encode() for n, _ in NODE_DOUBLE_TEXTS]
    out = [_decoded(v) for v in rewrite(pa.array(records, pa.binary())).to_pylist()]
    assert out == [{"r": {"s": text}} for _, text in NODE_DOUBLE_TEXTS]


@pytest.mark.parametrize("decimal", [True, False])
def test_in_node_mode_the_c_pass_and_the_python_pass_agree(decimal: bool) -> None:
    rng = random.Random(11)
    digits = "0123456789"
    numbers = []
    for _ in range(4000):
        whole = rng.choice(["0", "".join(rng.choice(digits) for _ in range(rng.randrange(1, 25)))])
        whole = whole.lstrip("0") or "0"
        text = ("-" if rng.random() < 0.3 else "") + whole
        if rng.random() < 0.6:
            text += "." + "".join(rng.choice(digits) for _ in range(rng.randrange(1, 12)))
        if rng.random() < 0.5:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randrange(0, 40))
        numbers.append(text)
    columns = [Column("s", "STRING"), *([Column("p", "DECIMAL(5, 2)")] if decimal else [])]
    rewrite = exact_json(columns, node=True)
    assert rewrite is not None and rewrite.node == (1 if decimal else 2)
    records = [b'{"s": %s}' % n.encode() for n in numbers]
    native = rewrite(pa.array(records, pa.binary())).to_pylist()
    python = [_exact_python(r, rewrite.root, rewrite.node) for r in records]
    differ = [(r, n, p) for r, n, p in zip(records, native, python, strict=True)
              if _decoded(n) != _decoded(p)]  # fmt: skip
    assert not differ, differ[:5]
