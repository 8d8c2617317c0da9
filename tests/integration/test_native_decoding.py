"""The json and csv formats' native decoding against their per-record decoding in Spark (Flink's
semantics, the reference): seeded corpora of flat records, clean and not, decoded both ways in
one local Spark session; every record decoded natively must give exactly the per-record row."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from typing import Any

import pyarrow as pa

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.formats._arrow_json import NativeJson
from dagster_kafka_flinklike.formats._changelog import NativeChangelog
from dagster_kafka_flinklike.formats._scanners import NativeCsv, scanner
from dagster_kafka_flinklike.source.reader import TIMESTAMP_ERROR, arrow_schema, spark_schema
from dagster_kafka_flinklike.source.records import (
    ERROR,
    TOLERATED,
    decode_records,
    exact_columns,
    native_columns,
    record_fields,
)

COLUMNS = [
    {"name": "id", "type": "BIGINT"},
    {"name": "t", "type": "TINYINT"},
    {"name": "i", "type": "INT"},
    {"name": "name", "type": "STRING"},
    {"name": "amount", "type": "DOUBLE"},
    {"name": "f", "type": "FLOAT"},
    {"name": "price", "type": "DECIMAL(8, 3)"},
    {"name": "ok", "type": "BOOLEAN"},
    {"name": "at", "type": "TIMESTAMP(3)"},
    {"name": "ltz", "type": "TIMESTAMP_LTZ(3)"},
    {"name": "day", "type": "DATE"},
    {"name": "clock", "type": "TIME"},
]

_TEXTS = ["", "a", "Ada Lovelace", "é ü 😀", 'quote " and \\ slash', "tab\there", "\u2028", "null"]
_NUMBERS = [
    "0", "-0", "7", "-128", "127", "128", "2147483647", "-2147483649", "9223372036854775807",
    "9223372036854775808", "1.5", "-0.0", "0.1", "1e2", "1E-3", "123.4567", "12.3450",
    "1e308", "1e400", "4.9e-324", "123456789012345678", "0.30000000000000004", "99999.999",
    "100000.0001", "3.4028235e38", "1.17549435e-38",
]  # fmt: skip
_STAMPS = [
    "2021-03-24 10:00:00", "2021-03-24 10:00:00.123", "2021-03-24 10:00:00.123456789",
    "2021-03-24T10:00:00", "2021-03-24 10:00:00Z", "2021-02-30 10:00:00", "2021-03-24 24:00:00",
    "2021-03-24", "10:00:00.5", "99:99:99", "24:00:00", "23:59:60", "yesterday", "2021-3-24",
]  # fmt: skip


def _token(rng: random.Random) -> str:
    """One JSON value of any of the kinds a column can meet."""
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice(["null", "true", "false"])
    if kind in (1, 2):
        return rng.choice(_NUMBERS)
    if kind == 3:
        return json.dumps(rng.choice(_TEXTS), ensure_ascii=rng.random() < 0.5)
    if kind == 4:
        return json.dumps(rng.choice(_STAMPS))
    if kind == 5:
        return json.dumps(rng.choice(_NUMBERS))  # a number written as a string
    if kind == 6:
        return rng.choice(['{"a": 1}', "[1, 2]", "[]", "{}"])
    return rng.choice([*_NUMBERS, "true", "null"])


#: Values a column of each type takes cleanly (mostly), for records that decode.
_FITTING = {
    "BIGINT": ["0", "-0", "7", "9223372036854775807", "-9223372036854775808", "null"],
    "TINYINT": ["-128", "127", "0"],
    "INT": ["2147483647", "-5", "42"],
    "STRING": [json.dumps(t) for t in _TEXTS] + ['"\\u00e9\\ud83d\\ude00"'],
    "DOUBLE": ["1.5", "-0.0", "0.1", "1e2", "1E-3", "123456789012345678", "4.9e-324", "7"],
    "FLOAT": ["0.1", "1.5", "3.4028235e38", "-2", "1e-3"],
    "DECIMAL": ["1.5", "-0.001", "99999.999", "12.3450", "0", "-0"],
    "BOOLEAN": ["true", "false"],
    "TIMESTAMP": ['"2021-03-24 10:00:00"', '"2021-03-24 10:00:00.123"', '"1999-12-31 23:59:59.9"'],
    "TIMESTAMP_LTZ": ['"2021-03-24 10:00:00Z"', '"2000-02-29 00:00:00.000001Z"'],
    "DATE": ['"2021-03-24"', '"2000-02-29"', '"0001-01-01"'],
    "TIME": ['"10:00:00"', '"23:59:59.123456789"', '"00:00:00.5"'],
}


def _fitting(rng: random.Random, column: dict[str, str]) -> str:
    return rng.choice(_FITTING[column["type"].split("(")[0]])


#: The types whose values Flink's json format also reads from a JSON string's text.
_NUMERIC = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")


def _json_fitting(rng: random.Random, column: dict[str, str]) -> str:
    """A fitting JSON value; a number sometimes written as a string, blanks or a sign added."""
    text = _fitting(rng, column)
    if column["type"].split("(")[0] in _NUMERIC and text != "null" and rng.random() < 0.3:
        return json.dumps(rng.choice([text] * 6 + [f" {text}", f"+{text}"]))
    return text


def corpus(count: int, seed: int = 17) -> list[bytes | None]:
    rng = random.Random(seed)
    by_name = {c["name"]: c for c in COLUMNS}
    out: list[bytes | None] = []
    for n in range(count):
        fields = rng.sample(list(by_name), rng.randrange(len(by_name) + 1))
        if rng.random() < 0.3:
            fields.append(rng.choice(["extra", "other"]))
        fitting = rng.random() < 0.6
        parts = [
            f"{json.dumps(f)}: "
            + (_json_fitting(rng, by_name[f]) if fitting and f in by_name else _token(rng))
            for f in fields
        ]
        text = "{" + ", ".join(parts) + "}"
        roll = rng.random()
        if roll < 0.03:
            text = text[:-1]  # malformed
        elif roll < 0.05:
            text = text + " {}"  # two documents
        elif roll < 0.07:
            text = "null" if n % 2 else ""
        out.append(None if roll > 0.995 else text.encode())
    return out


def _raw(spark: Any, spec: KafkaTableSpec, values: list[bytes | None], native: bool) -> Any:
    """The raw records frame the reader would give for ``values`` (one partition, offsets in
    order), with the native decoding computed here as the reading tasks compute it."""
    fields = record_fields(spec)
    n = len(values)
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    arrays = {
        "key": pa.nulls(n, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "topic": pa.array(["t"] * n, pa.string()),
        "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
        "timestamp": pa.array([stamp] * n, pa.timestamp("us", tz="UTC")),
        TIMESTAMP_ERROR: pa.nulls(n, pa.string()),
    }
    columns = [arrays[f] for f in fields]
    names = list(arrow_schema(fields).names)
    natives = native_columns(spec) if native else ()
    derived = (*natives, *exact_columns(spec, {d.name for d in natives}))
    for d in derived:
        columns.append(d.compute(arrays[d.source]))
        names.append(d.name)
    table = pa.Table.from_arrays(columns, names=names)
    return spark.createDataFrame(table, spark_schema(fields, derived))


def _spec(fmt: str, columns: list[dict[str, str]] = COLUMNS, **options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": "t",
            "properties.bootstrap.servers": "127.0.0.1:9",
            "scan.startup.mode": "earliest-offset",
            "format": fmt,
            f"{fmt}.ignore-parse-errors": "true",
            **options,
        },
        columns=columns,
        role="source",
    )


def test_native_json_decoding_gives_the_per_record_rows(spark: Any) -> None:
    assert scanner() is not None
    spec = _spec("json")
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeJson) and derived.compute.scan_columns is not None
    compared = _compare(spark, spec, corpus(1500))
    assert compared > 600  # a number as a string with blanks or a sign goes per record


#: A nested table with maps at every depth, for the pass that writes maps as their entries.
MAPS = [
    {"name": "id", "type": "INT"},
    {"name": "m", "type": "MAP<STRING, INT>"},
    {"name": "r", "type": "ROW<tags MAP<STRING, ARRAY<STRING>>, n DOUBLE>"},
    {"name": "a", "type": "ARRAY<MAP<STRING, DECIMAL(6, 2)>>"},
    {"name": "s", "type": "MAP<STRING, STRING>"},
]
_KEYS = ["a", "b", "c", "é", "a b", "", "😀"]


def _map(rng: random.Random, value: Any) -> str:
    """A JSON object of random keys and values from ``value()``; one in twenty repeats a key
    (a record the native decoding leaves to the per-record one)."""
    keys = rng.sample(_KEYS, rng.randrange(len(_KEYS) + 1))
    if keys and rng.random() < 0.05:
        keys.append(rng.choice(keys))
    entries = [f"{json.dumps(k, ensure_ascii=False)}: {value()}" for k in keys]
    return "{" + ", ".join(entries) + "}"


def maps_corpus(count: int, seed: int = 29) -> list[bytes | None]:
    """Records of :data:`MAPS`: most clean; a fifth with a map the pass leaves (no object, a key
    with an escape) or malformed."""
    rng = random.Random(seed)
    ints = ["1", "-7", "2147483647", "2.5", "null", "0"]
    texts = ['"x"', '"é\\n"', "1.50", "true", "null", '""']
    decimals = ["1.5", "-0.25", "99.99", "null", "0"]  # (Arrow's parser refuses 1e1: per record)
    out: list[bytes | None] = []
    for n in range(count):
        tags = _map(rng, lambda: json.dumps(rng.sample(["p", "q", "r"], rng.randrange(3))))
        row = f'{{"tags": {tags}, "n": {rng.choice(["1.5", "-0.0", "7", "null"])}}}'
        maps = [_map(rng, lambda: rng.choice(decimals)) for _ in range(rng.randrange(3))]
        fields = {
            "id": str(n),
            "m": _map(rng, lambda: rng.choice(ints)),
            "s": _map(rng, lambda: rng.choice(texts)),
            "r": rng.choice(["null", "{}"]) if rng.random() < 0.2 else row,
            "a": "[" + ", ".join(maps) + "]",
        }
        for name in rng.sample(list(fields), rng.randrange(2)):
            fields[name] = "null"
        roll = rng.random()
        if roll < 0.2:
            fields["m"] = rng.choice(["[]", "5", '"x"', '[{"key": "a", "value": 1}]'])
        elif roll < 0.25:
            fields["s"] = '{"a\\u0062": "1", "ab": "2"}'
        text = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
        if 0.25 <= roll < 0.28:
            text = text[:-1]  # malformed
        out.append(text.encode())
    return out


def test_native_json_decoding_of_maps_gives_the_per_record_rows(spark: Any) -> None:
    spec = _spec("json", MAPS)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeJson) and derived.compute.rewrite is not None
    compared = _compare(spark, spec, maps_corpus(1000))
    assert compared > 550  # (a fifth repeat a key or have a map the pass leaves)


#: The images of the Debezium corpus (a timestamp, a DECIMAL and a MAP in them).
IMAGE = [
    {"name": "id", "type": "INT"},
    {"name": "name", "type": "STRING"},
    {"name": "price", "type": "DECIMAL(8, 2)"},
    {"name": "at", "type": "TIMESTAMP(3)"},
    {"name": "tags", "type": "MAP<STRING, STRING>"},
]


def _image(rng: random.Random, n: int) -> str:
    """A row image: mostly clean; some with values the node-based reading converts (a number
    or a boolean as text, a fraction into INT) or that leave the record (a timestamp of another
    shape)."""
    name = rng.choice(['"Ada"', '"é\\n"', "1.50", "100", "true", "null", "1E+2", '""'])
    at = rng.choice(['"2021-03-24 10:00:00.5"', '"2021-03-24 10:00:00"', "null"])
    if rng.random() < 0.05:
        at = '"2021-03-24T10:00:00"'
    price = rng.choice(["12.5", "-0.01", "null", "999999.99", "0"])
    tags = _map(rng, lambda: rng.choice(['"x"', "1.50", "null"]))
    ident = rng.choice([str(n), str(n), f"{n}.9", "null"])
    return f'{{"id": {ident}, "name": {name}, "price": {price}, "at": {at}, "tags": {tags}}}'


def debezium_corpus(count: int, seed: int = 31) -> list[bytes | None]:
    """Debezium events: inserts, snapshot reads, updates and deletes, with Debezium's source
    block; some dirty (no op, an unknown op, an update without its before image, malformed),
    tombstones."""
    rng = random.Random(seed)
    out: list[bytes | None] = []
    for n in range(count):
        op = rng.choice(["c", "c", "r", "u", "u", "d"])
        before = _image(rng, n) if op in ("u", "d") else "null"
        after = _image(rng, n) if op in ("c", "r", "u") else "null"
        roll = rng.random()
        if roll < 0.06:
            before = "null"  # dirty for u and d
        elif roll < 0.1:
            op = rng.choice(["x", ""])
        source = '{"db": "shop", "table": "t", "ts_ms": 1795000000000, "snapshot": "false"}'
        fields = [f'"before": {before}', f'"after": {after}', f'"source": {source}']
        if not 0.1 <= roll < 0.13:
            fields.append(f'"op": "{op}"')
        fields.append(f'"ts_ms": {1795000000000 + n}')
        text = "{" + ", ".join(fields) + "}"
        if 0.13 <= roll < 0.16:
            text = text[:-2]  # malformed
        out.append(None if 0.16 <= roll < 0.18 else text.encode())
    return out


def test_native_debezium_decoding_gives_the_per_record_rows(spark: Any) -> None:
    spec = _spec("debezium-json", IMAGE)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeChangelog)
    assert isinstance(derived.compute.envelope, NativeJson)
    assert derived.compute.envelope.rewrite is not None
    compared = _compare(spark, spec, debezium_corpus(800), dirty=60)
    assert compared > 450


def _csv_field(rng: random.Random, column: dict[str, str], fitting: bool) -> str:
    if fitting:
        text = json.loads(_fitting(rng, column)) if column["type"] != "STRING" else None
        if text is None or not isinstance(text, str):
            text = _fitting(rng, column)
            text = json.loads(text) if text.startswith('"') else text
        text = str(text)
    else:
        odd = ["", " 5", "+5", "007", "1.0", "NaN", "TRUE", "yes", "-", "1e2", "n/a", "x y"]
        text = rng.choice([*odd, *_NUMBERS, *_STAMPS, *_TEXTS])
    if text.lower() in ("true", "false") and column["type"] == "BOOLEAN":
        text = text.lower()
    if "," in text or '"' in text or "\n" in text or rng.random() < 0.1:
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_corpus(count: int, seed: int = 23) -> list[bytes | None]:
    rng = random.Random(seed)
    out: list[bytes | None] = []
    for n in range(count):
        fitting = rng.random() < 0.7
        fields = [_csv_field(rng, c, fitting and rng.random() < 0.97) for c in COLUMNS]
        roll = rng.random()
        if roll < 0.03:
            fields.pop()
        elif roll < 0.05:
            fields.append("extra")
        text = ",".join(fields)
        roll = rng.random()
        if roll < 0.1:
            text += "\n"
        elif roll < 0.12:
            text += "\r\n"
        elif roll < 0.13:
            text = "#" + text
        elif roll < 0.14:
            text = ""
        out.append(None if n % 211 == 7 else text.encode())
    return out


def test_native_csv_decoding_gives_the_per_record_rows(spark: Any) -> None:
    spec = _spec("csv", **{"csv.null-literal": "n/a", "csv.allow-comments": "true"})
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeCsv)
    compared = _compare(spark, spec, csv_corpus(1500))
    assert compared > 450


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with NaN (never equal to itself) as a text."""
    return {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def _compare(spark: Any, spec: KafkaTableSpec, values: list[bytes | None], dirty: int = 150) -> int:
    """Decode ``values`` both ways; every row must agree (a changelog record's rows in turn).
    How many were decoded natively."""
    (derived,) = native_columns(spec)
    natively = derived.compute(pa.array(values, pa.binary())).is_valid().to_pylist()

    def decoded(native: bool) -> dict[int, list[dict[str, Any]]]:
        frame = decode_records(spec, _raw(spark, spec, values, native))
        rows: dict[int, list[dict[str, Any]]] = {}
        for r in frame.collect():
            row = _comparable(r.asDict(recursive=True))
            rows.setdefault(row["__dkf_offset"], []).append(row)
        return rows

    native, per_record = decoded(True), decoded(False)
    assert native.keys() == per_record.keys()  # the same records yield rows
    compared = 0
    for offset, rows in per_record.items():
        got = native[offset]
        assert len(got) == len(rows), values[offset]
        if natively[offset]:
            for mine, row in zip(got, rows, strict=True):
                # (a record decoded natively is clean: a dirty one, a changelog envelope with an
                # unknown operation among them, is left to the per-record decoding with its bytes)
                assert row[ERROR] is None, (values[offset], row[ERROR])
                assert {**mine, "__dkf_value": row["__dkf_value"]} == row, values[offset]
            compared += 1
        else:  # decoded per record in both frames
            assert got == rows, values[offset]
    # The corpus holds clean records of every kind, and records neither way accepts.
    tolerated = [r for rows in per_record.values() for r in rows[:1] if r[ERROR] and r[TOLERATED]]
    assert len(tolerated) > dirty
    return compared


#: TIME texts that name no time of day: dirty on every path, as Flink refuses them.
_BAD_TIMES = ["24:00:00", "99:99:99", "12:60:00", "12:00:60"]


def test_a_time_out_of_range_is_dirty_on_every_path(spark: Any) -> None:
    clock = [{"name": "id", "type": "INT"}, {"name": "clock", "type": "TIME"}]
    nested = [*clock, {"name": "tags", "type": "ARRAY<STRING>"}]  # no scanner: Arrow's parser
    texts = ["23:59:59.5", *_BAD_TIMES, "00:00:00"]
    as_json = [json.dumps({"id": i, "clock": t}).encode() for i, t in enumerate(texts)]
    as_csv = [f"{i},{t}".encode() for i, t in enumerate(texts)]
    for spec, values in (
        (_spec("json", clock), as_json),
        (_spec("json", nested), as_json),
        (_spec("csv", clock), as_csv),
    ):
        for native in (True, False):
            rows = decode_records(spec, _raw(spark, spec, values, native)).collect()
            assert [r["clock"] for r in rows] == ["23:59:59.5", None, None, None, None, "00:00:00"]
            errors = [r[ERROR] for r in rows]
            assert errors[0] is None and errors[-1] is None, (spec.value_format, native)
            for text, error in zip(_BAD_TIMES, errors[1:-1], strict=True):
                assert error is not None and text in error and "TIME" in error, error


def test_native_protobuf_decoding_gives_the_per_record_rows(spark: Any, tmp_path: Any) -> None:
    """The protobuf scanner in Spark, as a run decodes: every row the per-record decoding's."""
    from dagster_kafka_flinklike.formats._scanners import NativeProtobuf
    from tests.protobuf_defs import message_class, write_descriptor_set
    from tests.unit.test_protobuf_native import ORDER, order_corpus

    desc = write_descriptor_set(tmp_path)
    options = {"protobuf.message-class-name": "shop.Order", "protobuf.descriptor-file": desc}
    columns = [{"name": c.name, "type": c.type} for c in ORDER]
    spec = _spec("protobuf", columns, **options)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeProtobuf)
    records = order_corpus(message_class(desc, "shop.Order"), random.Random(3), 1500)
    assert _compare(spark, spec, list(records), dirty=40) > 750
