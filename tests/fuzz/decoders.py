"""Targets of the decoders: ``json``, ``csv``, ``raw``, ``avro``, ``protobuf`` and the changelog
formats (``changelog``: debezium-json, canal-json, maxwell-json, ogg-json).

An input is one Kafka record of one of the target's tables (:class:`Table`, the tables taking
turns batch by batch): key, value and timestamp, the value most often a valid record after a
few edits. A batch goes the way a run's
records go, with no broker:

1. The reader's batch: the reader's own batch builder (``source.reader``) over the records,
   with the table's native decoding (the record scanners, Arrow's JSON parser) and
   the shedding of the raw fields that a run's reading tasks do. It must not raise.
2. With Spark (the full run): that batch decoded by ``decode_records`` as a run decodes it (the
   per-record decoding in Spark's JVM, or in its Python workers for the Avro and protobuf
   codecs), its statistics observed as a run observes them (``InputCounts``). The job must not
   fail, and every record is counted once: one row per record (none for a record the format
   yields no row for; a changelog record's rows start once), a dirty record one row with a
   reason, and the observed count of dirty records equal to the records not decoded.
3. Without Spark (``spark=False``: the CI-sized test), the Python codecs' Arrow UDF function,
   as Spark's Python workers call it, over the batch: one outcome per record (a row or a
   reason, not both), nothing raised.

A failure of a Spark job is narrowed down to one record (halving the batch) before it is
reported.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.options import Column, FlinkType

from .harness import Counts, Finding, Target, foreign
from .mutate import INTERESTING_BYTES, edge_integer, mutate_bytes, random_bytes, random_text

#: Inputs per batch: the records of one table, decoded by one Spark job (a job costs seconds
#: before its first record; the tables take turns, batch by batch).
SPARK_BATCH = 40_000
DRIVER_BATCH = 1_000
_BASE = {
    "connector": "kafka",
    "topic": "t",
    "properties.bootstrap.servers": "127.0.0.1:9",
    "scan.startup.mode": "earliest-offset",
}
_NOW_MS = 1_700_000_000_000
#: Each Spark job's time on stderr (``FUZZ_VERBOSE=1``).
VERBOSE = bool(os.environ.get("FUZZ_VERBOSE"))
#: A Spark job that runs longer is cancelled and reported, and its target stops (a task that
#: does not end holds one of the session's two cores).
JOB_TIMEOUT_S = float(os.environ.get("FUZZ_JOB_TIMEOUT", "1800"))
#: The optimizer rule that would evaluate the decoding on the driver, interpreted, because the
#: batch is a local table here: without it, the tasks run it, compiled, as a run's tasks do.
_LOCAL_RELATION = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"


@dataclass
class Table:
    """A table the target's records are decoded as: its options and columns, and how to make
    valid values (``make``: a random source → a value) and, with a key format, keys."""

    name: str
    options: dict[str, str]
    columns: Sequence[Column]
    make: Callable[[Any], bytes]
    make_key: Callable[[Any], bytes] | None = None
    primary_key: Sequence[str] = ()
    tokens: Sequence[bytes] = ()
    #: Valid values made once, spliced into each other by the mutations.
    seeds: list[bytes] = field(default_factory=list)

    @cached_property
    def spec(self) -> KafkaTableSpec:
        base = dict(_BASE)
        if self.options.get("connector") == "upsert-kafka":  # (it always reads from the start)
            del base["scan.startup.mode"]
        return KafkaTableSpec.from_options(
            {**base, **self.options},
            columns=list(self.columns),
            primary_key=list(self.primary_key) or None,
            role="source",
        )

    @property
    def keeps_tombstones(self) -> bool:
        """Whether a record without a value still yields a row (raw, upsert-kafka)."""
        spec = self.spec
        return spec.is_upsert or (spec.value_format is not None and spec.value_format.name == "raw")


# -- valid values, by Flink type -----------------------------------------------------------------

_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def _text(rng: Any) -> str:
    return rng.choice(
        (
            "",
            "a",
            "Ann",
            "é\u00e9",
            "x,y",
            'q"uote',
            "line\nbreak",
            "\U0001f600",
            random_text(rng, 12),
        )
    )


def _utf8(rng: Any) -> str:
    """Text without lone surrogates (what a protobuf string can hold)."""
    return _text(rng).encode("utf-8", "replace").decode()


def python_value(rng: Any, t: FlinkType, null: float = 0.1) -> Any:
    """A random value of Flink type ``t`` as Python holds it (None at rate ``null``)."""
    if rng.random() < null:
        return None
    name = t.name
    if name in _INT_BITS:
        bits = _INT_BITS[name]
        if rng.random() < 0.3:
            return rng.choice((-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 0, -1))
        return rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1))
    if name in ("DOUBLE", "FLOAT"):
        return rng.choice(
            (
                0.0,
                -0.0,
                1.5,
                -2.25e-7,
                1e300 if name == "DOUBLE" else 3.0e38,
                rng.uniform(-1e6, 1e6),
            )
        )
    if name == "DECIMAL":
        precision = t.params[0] if t.params else 10
        scale = t.params[1] if len(t.params) > 1 else 0
        digits = rng.randrange(10 ** (precision - scale)) if precision > scale else 0
        fraction = rng.randrange(10**scale) if scale else 0
        sign = "-" if rng.random() < 0.3 else ""
        return Decimal(f"{sign}{digits}.{fraction:0{scale}d}" if scale else f"{sign}{digits}")
    if name == "BOOLEAN":
        return rng.random() < 0.5
    if name in ("STRING", "VARCHAR", "CHAR"):
        return _text(rng)
    if name in ("BYTES", "VARBINARY", "BINARY"):
        return random_bytes(rng, 8)
    if name == "DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-719_000, 2_900_000))
    if name == "TIME":
        return dt.time(
            rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000) * 1000
        )
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return dt.datetime(2021, 3, 24, 10, tzinfo=dt.UTC) + dt.timedelta(
            milliseconds=rng.randrange(-(10**12), 10**12)
        )
    if name in ("ARRAY", "MULTISET"):
        return [python_value(rng, t.children[0]) for _ in range(rng.randrange(4))]
    if name == "MAP":
        return {
            python_value(rng, t.children[0], 0.0): python_value(rng, t.children[1])
            for _ in range(rng.randrange(3))
        }
    if name == "ROW":
        return {n: python_value(rng, c) for n, c in zip(t.field_names, t.children, strict=True)}
    return None


def json_text(value: Any, iso: bool = False) -> Any:
    """``value`` as JSON data the json format reads (temporal values as its text)."""
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%dT%H:%M:%S.%f" if iso else "%Y-%m-%d %H:%M:%S.%f")[:-3]
        return text + ("Z" if iso and value.tzinfo else "")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value) if abs(value) < 1e15 else str(value)
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(json_text(k, iso)): json_text(v, iso) for k, v in value.items()}
    if isinstance(value, list):
        return [json_text(v, iso) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_record(columns: Sequence[Column], iso: bool = False) -> Callable[[Any], bytes]:
    def make(rng: Any) -> bytes:
        fields = {c.name: json_text(python_value(rng, c.flink_type), iso) for c in columns}
        for name in [n for n in fields if rng.random() < 0.1]:  # missing fields
            del fields[name]
        if rng.random() < 0.2:
            fields["unknown"] = {"deep": [1, {"x": [True, None, -0.5e3]}]}
        return json.dumps(fields, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")

    return make


# -- json ----------------------------------------------------------------------------------------

_JSON_TOKENS = (
    b'"', b"\\", b"\\u0000", b"\\ud800", b"\\udc00\\ud800", b"{", b"}", b"[", b"]", b",", b":",
    b"null", b"true", b"false", b"-0", b"1e309", b"-1e-400", b"9223372036854775808",
    b"-9223372036854775809", b"0.1e1", b"1.", b".5", b"NaN", b"Infinity", b'"2021-02-29"',
    b'"24:00:00"', b'"2021-03-24T10:00:00Z"', b'"2021-03-24 10:00:00.123456789"', b"\xef\xbb\xbf",
    b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00", b" ", b"\n", b'{"a":', b"[[[[", b"]]]]",
)  # fmt: skip
FLAT = (
    Column("id", "BIGINT"), Column("t", "TINYINT"), Column("s", "SMALLINT"), Column("i", "INT"),
    Column("name", "STRING"), Column("amount", "DOUBLE"), Column("f", "FLOAT"),
    Column("price", "DECIMAL(6, 2)"), Column("ok", "BOOLEAN"), Column("at", "TIMESTAMP(3)"),
    Column("day", "DATE"),
)  # fmt: skip
NESTED = (
    Column("id", "BIGINT"), Column("tags", "ARRAY<STRING>"), Column("counts", "MAP<STRING, INT>"),
    Column("address", "ROW<city STRING, zip INT>"), Column("at", "TIMESTAMP_LTZ(3)"),
    Column("clock", "TIME(3)"), Column("big", "DECIMAL(38, 10)"), Column("blob", "BYTES"),
)  # fmt: skip


def _json_tables() -> list[Table]:
    flat, nested = json_record(FLAT), json_record(NESTED)
    return [
        Table("flat", {"format": "json"}, FLAT, flat, tokens=_JSON_TOKENS),
        Table(
            "flat, ignore-parse-errors",
            {"format": "json", "json.ignore-parse-errors": "true"},
            FLAT,
            flat,
            tokens=_JSON_TOKENS,
        ),
        Table(
            "flat, fail-on-missing-field",
            {"format": "json", "json.fail-on-missing-field": "true"},
            FLAT,
            flat,
            tokens=_JSON_TOKENS,
        ),
        Table(
            "flat, ISO-8601",
            {"format": "json", "json.timestamp-format.standard": "ISO-8601"},
            FLAT,
            json_record(FLAT, iso=True),
            tokens=_JSON_TOKENS,
        ),
        Table("nested", {"format": "json"}, NESTED, nested, tokens=_JSON_TOKENS),
        Table(
            "key and value",
            {"key.format": "json", "key.fields": "id", "value.format": "json"},
            FLAT,
            flat,
            make_key=json_record(FLAT[:1]),
            tokens=_JSON_TOKENS,
        ),
        Table(
            "upsert",
            {
                "connector": "upsert-kafka",
                "key.format": "json",
                "value.format": "json",
                "value.fields-include": "EXCEPT_KEY",
            },
            FLAT,
            json_record(FLAT[1:]),
            make_key=json_record(FLAT[:1]),
            primary_key=("id",),
            tokens=_JSON_TOKENS,
        ),
    ]


# -- csv -----------------------------------------------------------------------------------------

_CSV_TOKENS = (
    b",", b";", b'"', b'""', b"\\", b"'", b"\n", b"\r\n", b"#", b"null", b"n/a", b"", b"true",
    b"-0", b"1e309", b"9223372036854775808", b"2021-02-29", b"24:00:00", b"\x00", b"\xc3",
    b"\xed\xa0\x80", b" ", b"\t",
)  # fmt: skip


def _csv_field(value: Any, delimiter: str, quote: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    else:
        text = json_text(value) if isinstance(value, bytes) else str(value)
    if any(ch in text for ch in (delimiter, quote, "\n", "\r")) and quote:
        return quote + text.replace(quote, quote * 2) + quote
    return text


def csv_record(
    columns: Sequence[Column], delimiter: str = ",", quote: str = '"'
) -> Callable[[Any], bytes]:
    def make(rng: Any) -> bytes:
        fields = [_csv_field(python_value(rng, c.flink_type), delimiter, quote) for c in columns]
        ending = rng.choice(("", "", "\n", "\r\n"))
        return (delimiter.join(fields) + ending).encode("utf-8", "surrogatepass")

    return make


_CSV_COLUMNS = (*FLAT[:-2], Column("day", "DATE"), Column("clock", "TIME(0)"))


def _csv_tables() -> list[Table]:
    plain = csv_record(_CSV_COLUMNS)
    return [
        Table("plain", {"format": "csv"}, _CSV_COLUMNS, plain, tokens=_CSV_TOKENS),
        Table(
            "ignore-parse-errors",
            {"format": "csv", "csv.ignore-parse-errors": "true"},
            _CSV_COLUMNS,
            plain,
            tokens=_CSV_TOKENS,
        ),
        Table(
            "semicolons, null literal, comments",
            {
                "format": "csv",
                "csv.field-delimiter": ";",
                "csv.null-literal": "n/a",
                "csv.allow-comments": "true",
                "csv.escape-character": "\\",
            },
            _CSV_COLUMNS,
            csv_record(_CSV_COLUMNS, ";"),
            tokens=_CSV_TOKENS,
        ),
        Table(
            "no quotes",
            {"format": "csv", "csv.disable-quote-character": "true"},
            _CSV_COLUMNS,
            csv_record(_CSV_COLUMNS, ",", ""),
            tokens=_CSV_TOKENS,
        ),
        Table(
            "nested",
            {"format": "csv"},
            (
                Column("id", "INT"),
                Column("tags", "ARRAY<STRING>"),
                Column("r", "ROW<a INT, b STRING>"),
            ),
            csv_record(_CSV_COLUMNS[:3]),
            tokens=_CSV_TOKENS,
        ),
    ]


# -- raw -----------------------------------------------------------------------------------------

_RAW_SIZES = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "BIGINT": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
}


def _raw_number(kind: str) -> Callable[[Any], bytes]:
    size = _RAW_SIZES[kind]

    def make(rng: Any) -> bytes:
        if rng.random() < 0.2:
            return rng.choice(
                (
                    b"\x00" * size,
                    b"\xff" * size,
                    b"\x7f" + b"\xff" * (size - 1),
                    b"\x80" + b"\x00" * (size - 1),
                    b"\x7f\xf8" + b"\x00" * (size - 2),
                    b"\x7f\x80" + b"\x00" * (size - 2),
                )
            )[:size]
        return rng.randbytes(size)

    return make


def _raw_text(charset: str) -> Callable[[Any], bytes]:
    codec = {
        "UTF-16": "utf-16",
        "UTF-16BE": "utf-16-be",
        "UTF-16LE": "utf-16-le",
        "UTF-32": "utf-32-be",
        "US-ASCII": "ascii",
        "ISO-8859-1": "latin-1",
        "UTF-8": "utf-8",
    }[charset]

    def make(rng: Any) -> bytes:
        return _text(rng).encode(codec, "replace")

    return make


def _raw_tables() -> list[Table]:
    tables = [
        Table(
            f"{kind}, {order}",
            {"format": "raw", "raw.endianness": order},
            (Column("v", kind),),
            _raw_number(kind),
            tokens=(b"\x00", b"\xff", b"\x80"),
        )
        for kind in _RAW_SIZES
        for order in ("big-endian", "little-endian")
    ]
    tables += [
        Table(
            f"STRING, {charset}",
            {"format": "raw", "raw.charset": charset},
            (Column("v", "STRING"),),
            _raw_text(charset),
            tokens=(
                b"\xff\xfe",
                b"\xfe\xff",
                b"\xd8\x00",
                b"\xdc\x00",
                b"\x00\x00\xd8\x00",
                b"\x80",
            ),
        )
        for charset in (
            "UTF-8",
            "UTF-16",
            "UTF-16BE",
            "UTF-16LE",
            "UTF-32",
            "US-ASCII",
            "ISO-8859-1",
        )
    ]
    tables.append(
        Table(
            "BYTES", {"format": "raw"}, (Column("v", "BYTES"),), lambda rng: random_bytes(rng, 16)
        )
    )
    return tables


# -- avro ----------------------------------------------------------------------------------------

AVRO_COLUMNS = (
    Column("id", "BIGINT"), Column("name", "STRING"), Column("amount", "DOUBLE"),
    Column("ok", "BOOLEAN"), Column("rank", "INT"), Column("tags", "ARRAY<STRING>"),
    Column("counts", "MAP<STRING, BIGINT>"), Column("price", "DECIMAL(10, 2)"),
    Column("at", "TIMESTAMP(3)"), Column("day", "DATE"), Column("blob", "BYTES"),
    Column("address", "ROW<city STRING, zip INT>"),
)  # fmt: skip
#: Flat tables, whose binary datums the Avro record scanner decodes in the reader's batch: every
#: type Spark's from_avro reads as declared, then TIME, TINYINT and SMALLINT (Python's alone).
AVRO_FLAT_COLUMNS = (
    Column("id", "BIGINT"), Column("name", "STRING"), Column("amount", "DOUBLE"),
    Column("ratio", "FLOAT"), Column("ok", "BOOLEAN"), Column("rank", "INT"),
    Column("price", "DECIMAL(10, 2)"), Column("at", "TIMESTAMP(3)"), Column("at6", "TIMESTAMP(6)"),
    Column("ltz", "TIMESTAMP_LTZ(3)"), Column("day", "DATE"), Column("blob", "BYTES"),
)  # fmt: skip
AVRO_PYTHON_COLUMNS = (
    *AVRO_FLAT_COLUMNS[:4], Column("clock", "TIME"), Column("tiny", "TINYINT"),
    Column("small", "SMALLINT"),
)  # fmt: skip


def _encoded(
    fmt: str, columns: Sequence[Column], options: dict[str, str]
) -> Callable[[Any], bytes]:
    """Valid values written by the format's own encoder (as the sink writes them)."""
    from dagster_kafka_flinklike.formats import get_format

    format_ = get_format(fmt)
    settings = format_.checked_settings(columns, options)  # type: ignore[attr-defined]
    encode = format_.record_encoder(columns, settings)()  # type: ignore[attr-defined]

    def make(rng: Any) -> bytes:
        row = {c.name: python_value(rng, c.flink_type) for c in columns}
        for c in columns:  # maps with text keys, naive timestamps
            if isinstance(row[c.name], dict) and c.flink_type.name == "MAP":
                row[c.name] = {str(k): v for k, v in row[c.name].items()}
            if isinstance(row[c.name], dt.datetime):
                row[c.name] = row[c.name].replace(tzinfo=None)
        try:
            return bytes(encode(row))
        except Exception:
            return bytes(encode({c.name: None for c in columns}))

    return make


def _avro_tables() -> list[Table]:
    tables = []
    for encoding in ("binary", "json"):
        for legacy in ("true", "false"):
            options = {
                "format": "avro",
                "avro.encoding": encoding,
                "avro.timestamp_mapping.legacy": legacy,
            }
            make = _encoded(
                "avro", AVRO_COLUMNS, {"encoding": encoding, "timestamp_mapping.legacy": legacy}
            )
            tables.append(
                Table(f"{encoding}, legacy timestamps {legacy}", options, AVRO_COLUMNS, make)
            )
    for name, columns, legacy in (
        ("flat, binary", AVRO_FLAT_COLUMNS, "true"),
        ("flat, binary, local timestamps", AVRO_FLAT_COLUMNS, "false"),
        ("flat, binary, TIME and small integers", AVRO_PYTHON_COLUMNS, "true"),
    ):
        options = {"format": "avro", "avro.timestamp_mapping.legacy": legacy}
        make = _encoded("avro", columns, {"timestamp_mapping.legacy": legacy})
        tables.append(Table(name, options, columns, make))
    return tables


# -- protobuf ------------------------------------------------------------------------------------


def _protobuf_tables() -> list[Table]:
    import tempfile

    from tests.protobuf_defs import message_class, write_descriptor_set
    from tests.unit.test_options_protobuf import ORDER_COLUMNS
    from tests.unit.test_protobuf_codec import READING_COLUMNS, full_order

    desc = write_descriptor_set(Path(tempfile.mkdtemp(prefix="fuzz-protobuf-")))
    Order = message_class(desc, "shop.Order")
    Reading = message_class(desc, "legacy.Reading")
    full = full_order(Order).SerializeToString()

    def order(rng: Any) -> bytes:
        if rng.random() < 0.3:
            return full
        message = Order(
            id=rng.randrange(-(2**63), 2**63), customer=_utf8(rng), rank=edge_integer(rng) % 2**31
        )
        message.tags.extend(_utf8(rng) for _ in range(rng.randrange(3)))
        message.counters[_utf8(rng)] = rng.randrange(-(2**63), 2**63)
        return bytes(message.SerializeToString())

    def reading(rng: Any) -> bytes:
        message = Reading(sensor=_utf8(rng), level=rng.randrange(-(2**31), 2**31))
        return bytes(message.SerializePartialToString())

    base = {"format": "protobuf", "protobuf.descriptor-file": desc}
    return [
        Table("Order", {**base, "protobuf.message-class-name": "shop.Order"}, ORDER_COLUMNS, order),
        Table(
            "Order, ignore-parse-errors, defaults",
            {
                **base,
                "protobuf.message-class-name": "shop.Order",
                "protobuf.ignore-parse-errors": "true",
                "protobuf.read-default-values": "true",
            },
            ORDER_COLUMNS,
            order,
        ),
        Table(
            "Reading (proto2)",
            {**base, "protobuf.message-class-name": "legacy.Reading"},
            READING_COLUMNS,
            reading,
        ),
    ]


# -- changelog formats ---------------------------------------------------------------------------

CHANGE_COLUMNS = (
    Column("id", "BIGINT"), Column("name", "STRING"), Column("amount", "DOUBLE"),
    Column("at", "TIMESTAMP(3)"),
)  # fmt: skip


def _image(rng: Any) -> dict[str, Any]:
    return {c.name: json_text(python_value(rng, c.flink_type)) for c in CHANGE_COLUMNS}


def _debezium(rng: Any) -> bytes:
    op = rng.choice("crud")
    before = None if op in "cr" else _image(rng)
    after = None if op == "d" else _image(rng)
    payload = {
        "before": before,
        "after": after,
        "op": op,
        "ts_ms": _NOW_MS,
        "source": {"db": "db", "table": "t"},
    }
    return json.dumps(payload).encode()


def _debezium_schema(rng: Any) -> bytes:
    return json.dumps(
        {"schema": {"type": "struct"}, "payload": json.loads(_debezium(rng))}
    ).encode()


def _canal(rng: Any) -> bytes:
    kind = rng.choice(("INSERT", "UPDATE", "DELETE", "CREATE"))
    data = [_image(rng) for _ in range(rng.randrange(1, 3))]
    old = [{"name": "before"} for _ in data] if kind == "UPDATE" else None
    record = {
        "data": data,
        "old": old,
        "type": kind,
        "database": "db",
        "table": "t",
        "isDdl": kind == "CREATE",
        "es": _NOW_MS,
        "ts": _NOW_MS,
    }
    return json.dumps(record).encode()


def _maxwell(rng: Any) -> bytes:
    kind = rng.choice(("insert", "update", "delete"))
    record = {
        "database": "db",
        "table": "t",
        "type": kind,
        "ts": 1_700_000_000,
        "data": _image(rng),
    }
    if kind == "update":
        record["old"] = {"name": "before"}
    return json.dumps(record).encode()


def _ogg(rng: Any) -> bytes:
    op = rng.choice("IUDT")
    record = {
        "table": "db.t",
        "op_type": op,
        "op_ts": "2021-03-24 10:00:00.000000",
        "before": None if op == "I" else _image(rng),
        "after": None if op == "D" else _image(rng),
    }
    return json.dumps(record).encode()


def _changelog_tables() -> list[Table]:
    def table(name: str, fmt: str, make: Callable[[Any], bytes], **options: str) -> Table:
        return Table(
            name,
            {"format": fmt, **{f"{fmt}.{k}": v for k, v in options.items()}},
            CHANGE_COLUMNS,
            make,
            tokens=_JSON_TOKENS,
        )

    return [
        table("debezium-json", "debezium-json", _debezium),
        table(
            "debezium-json, schema", "debezium-json", _debezium_schema, **{"schema-include": "true"}
        ),
        table(
            "debezium-json, ignore-parse-errors",
            "debezium-json",
            _debezium,
            **{"ignore-parse-errors": "true"},
        ),
        table("canal-json", "canal-json", _canal),
        table(
            "canal-json, ignore-parse-errors",
            "canal-json",
            _canal,
            **{"ignore-parse-errors": "true"},
        ),
        table("maxwell-json", "maxwell-json", _maxwell),
        table("ogg-json", "ogg-json", _ogg, **{"ignore-parse-errors": "true"}),
    ]


# -- the reader's batch --------------------------------------------------------------------------


class Record:
    """A consumed record as the reader's batch builder reads it: a method per field."""

    __slots__ = ("_key", "_offset", "_stamp", "_value")

    def __init__(self, key: bytes | None, value: bytes | None, offset: int, stamp: tuple[int, int]):
        self._key, self._value, self._offset, self._stamp = key, value, offset, stamp

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return self._stamp

    def headers(self) -> None:
        return None

    def leader_epoch(self) -> None:
        return None


def reader_batch(spec: KafkaTableSpec, cases: Sequence[Any], first: int = 0) -> Any:
    """The Arrow batch a run's reading task builds of ``cases`` (one record each, at offsets
    ``first``, ``first + 1``, ...): the record fields ``spec`` needs, its native decoding and
    shedding."""
    from dagster_kafka_flinklike.source.enumerator import KafkaSplit
    from dagster_kafka_flinklike.source.reader import _BatchBuilder
    from dagster_kafka_flinklike.source.records import native_reading, record_fields

    derived, shedding = native_reading(spec)
    split = KafkaSplit("t", 0, first, first + len(cases))
    builder = _BatchBuilder(split, record_fields(spec), derived, shedding)
    builder._message = Record  # type: ignore[assignment]  # (the fields are read by method)
    records = [
        Record(key, value, first + i, (stamp[0], stamp[1]))
        for i, (_, key, value, stamp) in enumerate(cases)
    ]
    return builder.build(records), derived


# -- Spark ---------------------------------------------------------------------------------------


def spark_session() -> Any:
    """The active Spark session, else a local one as the tests build it (with Spark's Avro)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from dagster_kafka_flinklike.spark import (
        local_spark_config,
        prepare_spark_environment,
        with_spark_avro,
    )

    config = {
        **with_spark_avro(local_spark_config("fuzz")),
        "spark.ui.showConsoleProgress": "false",
    }
    prepare_spark_environment(config["spark.master"])
    builder = SparkSession.builder
    for key, value in config.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    return session


def _tasks_decode(spark: Any) -> Any:
    """Spark's optimizer leaves the decoding to the tasks (see :data:`_LOCAL_RELATION`) while in
    it; the setting is restored after."""
    import contextlib

    @contextlib.contextmanager
    def leaving() -> Any:
        key = "spark.sql.optimizer.excludedRules"
        before = spark.conf.get(key, "")
        rules = ",".join(r for r in (before, _LOCAL_RELATION) if r)
        spark.conf.set(key, rules)
        try:
            yield
        finally:
            if before:
                spark.conf.set(key, before)
            else:
                spark.conf.unset(key)

    return leaving()


def _spark_message(error: BaseException) -> str:
    """The lines of a Spark failure that say what failed (its Python or JVM exception)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if "Error" in line or "Exception" in line][:3]
    return f"{type(error).__name__}: {' | '.join(telling or lines[:3])[:700]}"


class Decoders(Target):
    """The decoder targets' common run (see the module's docstring); subclasses give the
    tables."""

    batch = SPARK_BATCH
    refused_as = "dirty"

    def __init__(self, spark: bool = True, batch: int | None = None) -> None:
        self.spark = spark
        #: Whether a Spark job did not finish (the target then checks nothing more).
        self.stalled = False
        self.tables = self.make_tables()
        self.batch = batch or (SPARK_BATCH if spark else DRIVER_BATCH)
        seed_random = __import__("random").Random(0)
        for table in self.tables:
            assert table.spec is not None  # (a table the options layer refuses fails here)
            table.seeds = [table.make(seed_random) for _ in range(20)]

    def make_tables(self) -> list[Table]:
        raise NotImplementedError

    # -- inputs ---------------------------------------------------------------------------------

    def _bytes(
        self, rng: Any, table: Table, make: Callable[[Any], bytes], seeds: Sequence[bytes]
    ) -> bytes | None:
        roll = rng.random()
        if roll < 0.03:
            return None
        if roll < 0.1:
            return random_bytes(rng, 64)
        if roll < 0.2:
            return make(rng)
        base = make(rng) if rng.random() < 0.5 else rng.choice(seeds)
        return mutate_bytes(
            rng, base, table.tokens or (bytes([rng.choice(INTERESTING_BYTES)]),), seeds
        )

    def case(self, rng: Any, index: int = 0) -> Any:
        table_index = (index // self.batch) % len(self.tables)  # (one table per batch)
        table = self.tables[table_index]
        value = self._bytes(rng, table, table.make, table.seeds)
        key = None
        if table.make_key is not None:
            key = (
                self._bytes(rng, table, table.make_key, table.seeds)
                if rng.random() < 0.5
                else table.make_key(rng)
            )
        stamp = [1, _NOW_MS + rng.randrange(10**9)]
        if rng.random() < 0.02:
            stamp = [
                rng.choice((0, 1, 2, 7)),
                rng.choice((2**63 - 1, -(2**63), 9223372036854776, -9223372036854776, -1, 0)),
            ]
        return [table_index, key, value, stamp]

    # -- checks ---------------------------------------------------------------------------------

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        groups: dict[int, list[int]] = {}
        for i, case in enumerate(cases):
            groups.setdefault(case[0], []).append(i)
        findings: list[Finding] = []
        for table_index, indices in sorted(groups.items()):
            table = self.tables[table_index]
            if self.stalled:
                counts.add("unchecked", len(indices))
                continue
            group = [cases[i] for i in indices]
            found, batch = self._reader_check(table, group, counts)
            if not found:
                found = (
                    self._spark_check(table, group, counts, batch)
                    if self.spark
                    else self._python_check(table, group, counts)
                )
            findings += [
                Finding(indices[f.index], f.kind, f"[{table.name}] {f.message}") for f in found
            ]
        return findings

    def _reader_check(
        self, table: Table, cases: list[Any], counts: Counts
    ) -> tuple[list[Finding], Any]:
        """The reader's batch of ``cases`` (and its derived columns), or what it raised."""
        try:
            batch, derived = reader_batch(table.spec, cases)
        except Exception as exc:
            if len(cases) == 1:
                return [Finding(0, "foreign exception in the reader's batch", foreign(exc))], None
            for i, case in enumerate(cases):  # narrowed down to one record
                found, _ = self._reader_check(table, [case], Counts())
                if found:
                    return [Finding(i, f.kind, f.message) for f in found], None
            return [
                Finding(
                    0, "foreign exception in the reader's batch (only in a batch)", foreign(exc)
                )
            ], None
        for column in derived:
            if column.name.endswith("_native"):
                decoded = batch.column(column.name)
                counts.add("native", len(decoded) - decoded.null_count)
        return [], (batch, derived)

    def _python_check(self, table: Table, cases: list[Any], counts: Counts) -> list[Finding]:
        """The Python codecs' Arrow UDF function over the values (formats decoded per record in
        Python only)."""
        function = self._udf_function(table)
        if function is None:
            return []
        import pyarrow as pa

        values = pa.array([c[2] for c in cases], pa.binary())
        try:
            out = function(values)
        except Exception as exc:
            return [Finding(0, "foreign exception in the Python decoding", foreign(exc))]
        rows, errors = out.field("row"), out.field("error")
        if len(out) != len(cases):
            return [Finding(0, "wrong length", f"{len(out)} results for {len(cases)} records")]
        findings = []
        for i, (row, error) in enumerate(
            zip(rows.is_valid().to_pylist(), errors.to_pylist(), strict=True)
        ):
            if row and error is not None:
                findings.append(Finding(i, "decoded and dirty", str(error)[:300]))
            elif error is not None and not error.strip():
                findings.append(Finding(i, "dirty without a reason", repr(error)))
            counts.refused += error is not None
        return findings

    def _udf_function(self, table: Table) -> Callable[[Any], Any] | None:
        """The function Spark's Python workers run for the table's value format, if it is a
        Python format (the Arrow UDF's own function, taken from what ``decode_udf`` returns)."""
        from dagster_kafka_flinklike.formats import get_format
        from dagster_kafka_flinklike.formats.base import PythonFormat

        spec = table.spec
        assert spec.value_format is not None
        format_ = get_format(spec.value_format.name)
        if not isinstance(format_, PythonFormat):
            return None
        settings = format_.checked_settings(spec.value_columns, spec.value_format)
        apply = format_.python_decoder(spec.value_columns, settings)
        udf = inspect.getclosurevars(apply).nonlocals["values_only"]
        return udf.func  # type: ignore[no-any-return]

    def _spark_check(
        self, table: Table, cases: list[Any], counts: Counts, batch: Any = None, first: int = 0
    ) -> list[Finding]:
        """The Spark check of ``cases`` (at offsets from ``first``); a failing job is run again
        on each half of the records (at the same offsets) until one record fails it."""
        started = time.monotonic()
        if self.stalled:
            counts.add("unchecked", len(cases))
            return []
        try:
            return self._spark_run(
                table, cases, counts, batch or reader_batch(table.spec, cases, first), first
            )
        except Exception as exc:
            failure = _spark_message(exc)
            if self.stalled:
                last = first + len(cases) - 1
                kind = f"the Spark job did not finish in {JOB_TIMEOUT_S:.0f} s"
                return [Finding(0, kind, f"records {first}..{last}; the target stopped")]
        finally:
            if VERBOSE:
                print(
                    f"    [{table.name}] {len(cases)} records: {time.monotonic() - started:.1f} s",
                    file=sys.stderr,
                )
        if len(cases) == 1:
            return [Finding(0, "the Spark job failed", failure)]
        middle = len(cases) // 2
        for start, part in ((0, cases[:middle]), (middle, cases[middle:])):
            scratch = Counts()
            found = self._spark_check(table, part, scratch, first=first + start)
            if found:
                counts.add("unchecked", len(cases) - 1)
                return [Finding(start + found[0].index, found[0].kind, found[0].message)]
        last = first + len(cases) - 1
        return [Finding(0, f"the Spark job failed (records {first}..{last} together)", failure)]

    def _spark_run(
        self, table: Table, cases: list[Any], counts: Counts, built: Any, first: int
    ) -> list[Finding]:
        spark = spark_session()
        batch, derived = built
        with _tasks_decode(spark), self._watchdog(spark):
            return self._spark_decode(spark, table, cases, counts, batch, derived, first)

    def _watchdog(self, spark: Any) -> Any:
        """Cancel the jobs started within it after :data:`JOB_TIMEOUT_S` (and mark the target
        :attr:`stalled`)."""
        import contextlib
        import threading

        group = f"fuzz-{self.name}-{time.monotonic_ns()}"

        def cancel() -> None:
            self.stalled = True
            spark.sparkContext.cancelJobGroup(group)

        @contextlib.contextmanager
        def watching() -> Any:
            spark.sparkContext.setJobGroup(group, "fuzz", interruptOnCancel=True)
            timer = threading.Timer(JOB_TIMEOUT_S, cancel)
            timer.start()
            try:
                yield
            finally:
                timer.cancel()

        return watching()

    def _spark_decode(
        self,
        spark: Any,
        table: Table,
        cases: list[Any],
        counts: Counts,
        batch: Any,
        derived: Any,
        first: int,
    ) -> list[Finding]:
        import pyarrow as pa
        from pyspark.sql import functions as F

        from dagster_kafka_flinklike.run.decode import InputCounts
        from dagster_kafka_flinklike.source.reader import spark_schema
        from dagster_kafka_flinklike.source.records import (
            ERROR,
            PARTIAL,
            RECORD_START,
            decode_records,
            record_fields,
        )

        spec = table.spec
        raw = spark.createDataFrame(
            pa.Table.from_batches([batch]), schema=spark_schema(record_fields(spec), derived)
        )
        decoded = decode_records(spec, raw)
        observed, input_counts = InputCounts.observing(decoded)
        reason = F.regexp_replace(F.col(ERROR), r"^(key|value) \([^)]*\): ", "")
        out = observed.select(
            F.col("__dkf_offset"),
            F.col(RECORD_START),
            F.col(ERROR).isNull(),
            F.length(F.trim(reason)) > 0,
            F.col(PARTIAL),
        ).collect()  # (not toArrow: a JVM error while it streams leaves the caller waiting)
        stats = input_counts.stats()
        offsets, starts, clean, reasons, partial = (
            (list(c) for c in zip(*out, strict=True)) if out else ([], [], [], [], [])
        )
        offsets = [o - first for o in offsets]  # (each record's index in ``cases``)
        rows = Counter(offsets)
        started = Counter(o for o, s in zip(offsets, starts, strict=True) if s)
        dirty = {o for o, c in zip(offsets, clean, strict=True) if not c}
        findings: list[Finding] = []

        def found(offset: int, kind: str, message: str) -> None:
            findings.append(Finding(offset, kind, message))

        for offset, times in started.items():
            if times > 1:
                found(offset, "counted twice", f"{times} rows start the record")
        kept = {o for o, p in zip(offsets, partial, strict=True) if p}
        for offset in dirty - kept:  # (one kept as rows, its failed fields null, has its rows)
            if rows[offset] != 1:
                found(offset, "dirty record in several rows", f"{rows[offset]} rows")
        for offset, ok in zip(offsets, reasons, strict=True):
            if ok is False:
                found(offset, "dirty without a reason", "the error says nothing after its side")
        if not spec.is_changelog:
            missing = [
                o
                for o, c in enumerate(cases)
                if o not in rows and (c[2] is not None or table.keeps_tombstones)
            ]
            for offset in self._not_skipped(spark, table, [cases[o][2] for o in missing], missing):
                found(
                    offset,
                    "record lost",
                    "no row, no dirty record, and the format does not skip it",
                )
            for offset, (_, _, value, _) in enumerate(cases):
                if value is None and not table.keeps_tombstones and offset in rows:
                    found(offset, "a row of a record without a value", f"{rows[offset]} rows")
        not_decoded = sum(1 for o in started if o in dirty)
        if stats.records != sum(started.values()) or stats.dirty != not_decoded:
            found(
                0,
                "miscounted",
                f"observed {stats.records} records, {stats.dirty} dirty; the rows "
                f"hold {sum(started.values())} records, {not_decoded} of them not decoded",
            )
        counts.refused += stats.dirty
        counts.add("decoded", stats.records - stats.dirty)
        return findings

    @staticmethod
    def _not_skipped(
        spark: Any, table: Table, values: list[bytes | None], offsets: list[int]
    ) -> list[int]:
        """Of records that yielded no row, those whose value the format does not skip."""
        if not offsets:
            return []
        from pyspark.sql import functions as F

        from dagster_kafka_flinklike.formats import get_format

        spec = table.spec
        assert spec.value_format is not None
        skipped = get_format(spec.value_format.name).skipped(F.col("value"), spec.value_format)
        frame = spark.createDataFrame([(v,) for v in values], "value binary")
        flags = [row[0] for row in frame.select(skipped).collect()]
        return [o for o, flag in zip(offsets, flags, strict=True) if not flag]


class Json(Decoders):
    name = "json"

    def make_tables(self) -> list[Table]:
        return _json_tables()


class Csv(Decoders):
    name = "csv"

    def make_tables(self) -> list[Table]:
        return _csv_tables()


class Raw(Decoders):
    name = "raw"

    def make_tables(self) -> list[Table]:
        return _raw_tables()


class Avro(Decoders):
    name = "avro"
    cap = 200_000

    def make_tables(self) -> list[Table]:
        return _avro_tables()


class Protobuf(Decoders):
    name = "protobuf"
    cap = 200_000

    def make_tables(self) -> list[Table]:
        return _protobuf_tables()


class Changelog(Decoders):
    name = "changelog"
    cap = 200_000

    def make_tables(self) -> list[Table]:
        return _changelog_tables()


__all__ = [
    "Avro",
    "Changelog",
    "Csv",
    "Decoders",
    "Json",
    "Protobuf",
    "Raw",
    "Table",
    "reader_batch",
]
