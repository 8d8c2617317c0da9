"""The json format's record scanner on nested tables (rows at any depth, arrays of scalars and of
rows, maps with text keys) against the per-record decoding in Spark (Flink's semantics, the
reference): seeded corpora of nested records, clean and not, decoded both ways in one local
Spark session; every record decoded natively must give exactly the per-record row, and the
scanner must decode most clean records itself (not Arrow's parser after it)."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa

from dagster_kafka_flinklike.formats._arrow_json import NativeJson
from dagster_kafka_flinklike.formats._changelog import NativeChangelog
from dagster_kafka_flinklike.formats._scanners import scanned_tree
from dagster_kafka_flinklike.options import Column, FlinkType
from dagster_kafka_flinklike.source.records import native_columns

from .test_native_decoding import _compare, _fitting, _json_fitting, _spec

NESTED = [
    {"name": "id", "type": "BIGINT"},
    {
        "name": "customer",
        "type": "ROW<name STRING, tier INT, address ROW<city STRING, zip STRING, "
        "geo ROW<lat DOUBLE, lon DOUBLE>>, since DATE, at TIMESTAMP(3), clock TIME>",
    },
    {"name": "tags", "type": "ARRAY<STRING>"},
    {
        "name": "items",
        "type": "ARRAY<ROW<sku STRING, qty INT, price DECIMAL(8, 2), ok BOOLEAN, f FLOAT>>",
    },
    {"name": "attrs", "type": "MAP<STRING, INT>"},
    {"name": "deep", "type": "MAP<VARCHAR(10), ARRAY<ROW<k STRING, v DOUBLE>>>"},
    {"name": "grid", "type": "ARRAY<ARRAY<BIGINT>>"},
    {"name": "names", "type": "MAP<STRING, STRING>"},
    {"name": "total", "type": "DOUBLE"},
]
#: Keys of maps: plain, empty, non-ASCII, with escapes (one the same text as a plain one).
_KEYS = ["a", "b", "ab", "", "é", "a b", "😀", "a\\u0062", "\\u00e9", "\\n", "\\ud83d\\ude00"]
#: Values of no declared type's kind, or not JSON at all (the record is then malformed).
_WRONG = ['"x"', "1", "[]", "{}", "true", "1.5", '"1.5"', "-0", "1e400", "NaN", '"\\ud800"']


def _scalar(rng: random.Random, t: FlinkType) -> str:
    name = t.name
    if name in ("VARCHAR", "CHAR"):
        name = "STRING"
    if name == "STRING" and rng.random() < 0.2:
        return json.dumps(rng.choice(["tab\tin", 'q"uote', "back\\slash", "é😀", "\u2028"]))
    if name == "DECIMAL" and rng.random() < 0.8:  # (those that fit DECIMAL(8, 2) exactly)
        return rng.choice(["1.5", "-0.25", "99.99", "0", "-0", "12.3450", "123456.78"])
    # (a number as a string, sometimes with blanks or a sign, which the scanner leaves)
    fitting = _json_fitting if rng.random() < 0.1 else _fitting
    return fitting(rng, {"type": name})


def value(rng: random.Random, t: FlinkType, depth: int = 0) -> str:
    """A JSON value for type ``t``: mostly fitting; nulls at every depth, sometimes a value of
    another kind, a repeated field or key, an escaped key, an unknown field."""
    roll = rng.random()
    if roll < 0.06:
        return "null"
    if roll < 0.065:
        return rng.choice(_WRONG)
    if t.name == "ROW":
        names = [n for n in t.field_names if rng.random() < 0.85]
        fields = zip(t.field_names, t.children, strict=True)
        members = [f"{json.dumps(n)}: {value(rng, c, depth + 1)}" for n, c in fields if n in names]
        if rng.random() < 0.15:
            members.insert(rng.randrange(len(members) + 1), f'"extra": {rng.choice(_WRONG[:7])}')
        if members and rng.random() < 0.02:
            members.append(rng.choice(members))  # a field twice
        if rng.random() < 0.02 and t.field_names:
            first = t.field_names[0]
            escaped = json.dumps(first, ensure_ascii=True)[1:-1]
            members.append(f'"\\u{ord(escaped[0]):04x}{escaped[1:]}": null')  # an escaped key
        rng.shuffle(members)
        return "{" + ", ".join(members) + "}"
    if t.name in ("ARRAY", "MULTISET"):
        items = [value(rng, t.children[0], depth + 1) for _ in range(rng.randrange(5))]
        return "[" + ", ".join(items) + "]"
    if t.name == "MAP":
        keys = [rng.choice(_KEYS) for _ in range(rng.randrange(6))]
        entries = [f'"{k}": {value(rng, t.children[1], depth + 1)}' for k in keys]
        return "{" + ", ".join(entries) + "}"
    return _scalar(rng, t)


def nested_corpus(count: int, seed: int = 41) -> list[bytes | None]:
    """Records of :data:`NESTED`; a few malformed, empty, ``null`` or two documents."""
    rng = random.Random(seed)
    columns = [Column(c["name"], c["type"]) for c in NESTED]
    root = FlinkType(
        "ROW", (), tuple(c.flink_type for c in columns), tuple(c.name for c in columns)
    )
    out: list[bytes | None] = []
    for n in range(count):
        text = value(rng, root)
        while not text.startswith("{"):
            text = value(rng, root)
        text = text.replace('"id": ', f'"id": {n}, "id_": ', 1) if rng.random() < 0.1 else text
        roll = rng.random()
        if roll < 0.02:
            text = text[:-1]  # malformed
        elif roll < 0.03:
            text += " {}"  # two documents
        elif roll < 0.04:
            text = rng.choice(["null", "", " [1]"])
        elif roll < 0.06:
            text = "\n " + text + " \t"
        out.append(None if roll > 0.995 else text.encode("utf-8", "surrogatepass"))
    return out


def _scanner_decoded(decoder: NativeJson, values: list[bytes | None], node: bool = False) -> int:
    """How many of ``values`` the record scanner decodes itself."""
    assert decoder.tree_columns is not None
    _, decoded = scanned_tree(
        pa.array(values, pa.binary()), decoder.arrow_type, decoder.tree_columns, node
    )
    return decoded.true_count


def test_native_nested_json_decoding_gives_the_per_record_rows(spark: Any) -> None:
    spec = _spec("json", NESTED)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeJson)
    values = nested_corpus(3000)
    compared = _compare(spark, spec, values, dirty=300)
    by_scanner = _scanner_decoded(derived.compute, values)
    assert by_scanner > 700 and compared >= by_scanner


#: The benchmark's nested shape, as written there (clean records, a map of distinct keys).
SHAPE = [
    {"name": "id", "type": "STRING"},
    {
        "name": "customer",
        "type": "ROW<name STRING, tier INT, address ROW<street STRING, city STRING, zip STRING, "
        "country STRING, geo ROW<lat DOUBLE, lon DOUBLE>>>",
    },
    {"name": "tags", "type": "ARRAY<STRING>"},
    {"name": "items", "type": "ARRAY<ROW<sku STRING, name STRING, qty INT, price DECIMAL(10, 2)>>"},
    {"name": "attrs", "type": "MAP<STRING, INT>"},
    {"name": "total", "type": "DOUBLE"},
    {"name": "created", "type": "TIMESTAMP(3)"},
]


def shape_corpus(count: int, seed: int = 43) -> list[bytes | None]:
    """Clean records of :data:`SHAPE`, each a little different; one in ten with a repeated map
    key, one in twenty with an empty array or map."""
    rng = random.Random(seed)
    out: list[bytes | None] = []
    for n in range(count):
        items = [
            {"sku": f"SKU-{rng.randrange(10**5):05d}", "name": rng.choice(["a b", "c", "é"]),
             "qty": rng.randint(1, 9), "price": round(rng.uniform(0, 500), 2)}
            for _ in range(rng.randrange(6))
        ]  # fmt: skip
        keys = [rng.choice("abcdef") for _ in range(rng.randrange(5))]
        attrs = [f'"{k}": {rng.randrange(1000)}' for k in keys]
        record = {
            "id": f"o-{n}",
            "customer": {
                "name": "Ada Lovelace",
                "tier": rng.randint(1, 5),
                "address": {
                    "street": "1 Main Street",
                    "city": "Pisa",
                    "zip": f"{rng.randrange(10**5):05d}",
                    "country": "IT",
                    "geo": {
                        "lat": round(rng.uniform(-90, 90), 5),
                        "lon": round(rng.uniform(-180, 180), 5),
                    },
                },
            },
            "tags": [rng.choice(["x", "y", "z\\n"]) for _ in range(rng.randrange(4))],
            "items": items,
            "total": round(rng.uniform(0, 5000), 2),
            "created": "2026-11-21 10:00:00.123",
        }
        text = json.dumps(record)
        text = text[:-1] + ', "attrs": {' + ", ".join(attrs) + "}}"
        out.append(text.encode())
    return out


def test_the_benchmarks_nested_shape_is_decoded_by_the_scanner_as_per_record(spark: Any) -> None:
    spec = _spec("json", SHAPE)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeJson)
    values = shape_corpus(600)
    assert _scanner_decoded(derived.compute, values) == len(values)
    assert _compare(spark, spec, values, dirty=-1) == len(values)


def debezium_corpus(count: int, seed: int = 47) -> list[bytes | None]:
    """Debezium events whose images are records of :data:`NESTED` (see :func:`value`): inserts,
    updates and deletes; some without their image or with an unknown operation; tombstones."""
    rng = random.Random(seed)
    columns = [Column(c["name"], c["type"]) for c in NESTED]
    image = FlinkType(
        "ROW", (), tuple(c.flink_type for c in columns), tuple(c.name for c in columns)
    )
    out: list[bytes | None] = []
    for _ in range(count):
        op = rng.choice(["c", "c", "r", "u", "u", "d", "x"])
        before = value(rng, image) if op in ("u", "d") or rng.random() < 0.05 else "null"
        after = value(rng, image) if op in ("c", "r", "u") else "null"
        source = '{"db": "shop", "table": "t", "ts_ms": 1795000000000}'
        text = f'{{"before": {before}, "after": {after}, "source": {source}, "op": "{op}"}}'
        out.append(None if rng.random() < 0.02 else text.encode("utf-8", "surrogatepass"))
    return out


def test_native_nested_debezium_decoding_gives_the_per_record_rows(spark: Any) -> None:
    spec = _spec("debezium-json", NESTED)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeChangelog)
    envelope = derived.compute.envelope
    assert isinstance(envelope, NativeJson) and envelope.node
    values = debezium_corpus(1500)
    compared = _compare(spark, spec, values, dirty=100)
    by_scanner = _scanner_decoded(envelope, values, node=True)
    # The scanner parses the dirty envelopes too (an unknown operation, a missing image); the
    # interpretation leaves those to the per-record decoding.
    assert compared > 250 and by_scanner > compared
