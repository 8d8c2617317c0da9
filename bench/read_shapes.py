"""Record shapes of the read benchmark: a run's JSON read step against Spark's own Kafka source
on several shapes of record, each with the fairest Spark query for it, in the read benchmark's
Spark session, after its other measurements (:func:`measure_shapes`, called by
``read_bench.run``).

The shapes (:data:`SHAPES`; deterministic, seeded data, each in its own topic, deleted after it
was measured):

- ``flat``: the benchmark's orders (~220 bytes, the same table);
- ``wide``: 40 flat columns of mixed types (STRING, INT, BIGINT, DOUBLE, BOOLEAN,
  DECIMAL(10, 2), TIMESTAMP(3) as Flink's SQL text, DATE), ~900 bytes;
- ``nested``: rows of rows, an ARRAY<STRING>, an ARRAY<ROW<...>> and a MAP<STRING, INT>, ~600
  bytes; ``nested_no_map`` the same without the MAP;
- ``escapes``: strings with JSON escapes (``\\n``, ``\\"``, ``\\\\``, ``\\u00e9``) and surrogate
  pairs;
- ``numbers_as_strings``: INT, BIGINT, DOUBLE and DECIMAL values written as JSON strings, which
  Flink's json format reads as numbers; Spark's query reads them as STRING and ``try_cast`` s;
- ``debezium``: Debezium change events (format ``debezium-json``, inserts, updates and deletes)
  as Flink's changelog rows; Spark's query explodes each event into the same rows.

Per shape: both queries warmed up on a slice (not timed); both sides' rows compared once over
the whole topic (not timed: the row count and an order-independent sum of ``xxhash64`` of each
row's ``to_json``), a difference reported, not raised (``shapes_differ``); then
``BENCH_REPEATS`` paired rounds, each timing our step and Spark's query in turn.

Environment: ``BENCH_SHAPES`` (``0``: none; a comma-separated list of names: those; all by
default), ``BENCH_SHAPE_RECORDS`` (records per shape, 300,000).
"""

from __future__ import annotations

import os
import random
import statistics
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import _common as common
import read_bench as bench

from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

#: Records per shape unless ``BENCH_SHAPE_RECORDS`` says otherwise.
DEFAULT_SHAPE_RECORDS = 300_000
#: How the shapes other than ``flat`` write TIMESTAMP(3): Flink's SQL text with milliseconds.
MILLIS_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"
#: Templates per shape: record ``i`` is template ``i % TEMPLATES`` with its own id.
TEMPLATES = 1000

Columns = tuple[Mapping[str, str], ...]


def _columns(*declared: str) -> Columns:
    """Columns as a DDL declares them (``"price DECIMAL(10, 2)"``: a name, then its type)."""
    return tuple({"name": name, "type": t} for name, t in (d.split(" ", 1) for d in declared))


@dataclass(frozen=True)
class Shape:
    """One record shape: its table's columns and format, its data, and Spark's query for it."""

    name: str
    columns: Columns
    #: The values' templates (:func:`_common.produce_records`): a module-level function, as the
    #: producer processes call it.
    templates: Callable[[], Sequence[tuple[bytes, ...]]]
    #: Spark's fairest query for the table, from the table's columns.
    query: Callable[[Sequence[Any]], bench.SparkQuery]
    value_format: str = "json"


# ----------------------------------------------------------------------------- data

_BASE = datetime(2026, 11, 21)
_WORDS = (
    "amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
    "juniper", "kestrel", "lagoon", "meadow", "nectar", "orchid", "pebble", "quartz", "ridge",
)  # fmt: skip


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _stamp(rng: random.Random) -> str:
    """A TIMESTAMP(3) in Flink's SQL text form, ``yyyy-MM-dd HH:mm:ss.SSS``."""
    when = _BASE + timedelta(milliseconds=rng.randrange(30 * 86_400_000))
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _cents(rng: random.Random, high: float) -> float:
    """A value with two decimals (a DECIMAL(10, 2) or a DOUBLE), written as a JSON number."""
    return round(rng.uniform(0, high), 2)


def _templates(
    seed: int, record: Callable[[random.Random], dict[str, Any]]
) -> list[tuple[bytes, ...]]:
    """:data:`TEMPLATES` JSON values of ``record`` (which puts :data:`_common.ID_MARKER` where
    the record's id goes), from a generator seeded with ``seed``."""
    rng = random.Random(seed)
    return [common.cut_json(record(rng)) for _ in range(TEMPLATES)]


#: The wide table's columns after ``id``: (name prefix, Flink type, how many).
_WIDE = (
    ("str", "STRING", 10),
    ("int", "INT", 6),
    ("big", "BIGINT", 5),
    ("dbl", "DOUBLE", 6),
    ("flag", "BOOLEAN", 4),
    ("dec", "DECIMAL(10, 2)", 4),
    ("ts", "TIMESTAMP(3)", 3),
    ("day", "DATE", 1),
)
WIDE_COLUMNS = _columns(
    "id STRING",
    *(f"{prefix}_{n:02d} {t}" for prefix, t, count in _WIDE for n in range(1, count + 1)),
)


def _wide_value(rng: random.Random, flink_type: str) -> Any:
    if flink_type == "STRING":
        return _text(rng, 2, 4)
    if flink_type == "INT":
        return rng.randrange(-1_000_000, 1_000_000)
    if flink_type == "BIGINT":
        return rng.randrange(10**12, 10**13)
    if flink_type == "DOUBLE":
        return _cents(rng, 10_000)
    if flink_type == "BOOLEAN":
        return rng.random() < 0.5
    if flink_type.startswith("DECIMAL"):
        return _cents(rng, 100_000)
    if flink_type == "TIMESTAMP(3)":
        return _stamp(rng)
    return (_BASE.date() + timedelta(days=rng.randrange(3650))).isoformat()  # DATE


def wide_templates() -> list[tuple[bytes, ...]]:
    """The ``wide`` shape's values: 40 flat columns of mixed types, ~900 bytes."""

    def record(rng: random.Random) -> dict[str, Any]:
        row = {c["name"]: _wide_value(rng, c["type"]) for c in WIDE_COLUMNS[1:]}
        return {"id": common.ID_MARKER, **row}

    return _templates(11, record)


NESTED_COLUMNS = _columns(
    "id STRING",
    "customer ROW<name STRING, tier INT, address ROW<street STRING, city STRING, zip STRING, "
    "country STRING, geo ROW<lat DOUBLE, lon DOUBLE>>>",
    "tags ARRAY<STRING>",
    "items ARRAY<ROW<sku STRING, name STRING, qty INT, price DECIMAL(10, 2)>>",
    "attrs MAP<STRING, INT>",
    "total DOUBLE",
    "created TIMESTAMP(3)",
)
NESTED_NO_MAP_COLUMNS: Columns = tuple(c for c in NESTED_COLUMNS if c["name"] != "attrs")


def _nested_templates(with_map: bool) -> list[tuple[bytes, ...]]:
    """The ``nested`` values (the same without ``attrs`` when not ``with_map``), ~600 bytes."""

    def record(rng: random.Random) -> dict[str, Any]:
        items = [
            {"sku": f"SKU-{rng.randrange(100_000):05d}", "name": _text(rng, 1, 2),
             "qty": rng.randint(1, 9), "price": _cents(rng, 500)}
            for _ in range(rng.randint(3, 5))
        ]  # fmt: skip
        attrs = {rng.choice(_WORDS): rng.randrange(1000) for _ in range(4)}
        row = {
            "id": common.ID_MARKER,
            "customer": {
                "name": _text(rng, 2, 2).title(),
                "tier": rng.randint(1, 5),
                "address": {
                    "street": f"{rng.randint(1, 999)} {_text(rng, 1, 2).title()} Street",
                    "city": rng.choice(_WORDS).title(),
                    "zip": f"{rng.randrange(100_000):05d}",
                    "country": rng.choice(("DE", "FR", "NL", "CH", "AT")),
                    "geo": {
                        "lat": round(rng.uniform(-90, 90), 5),
                        "lon": round(rng.uniform(-180, 180), 5),
                    },
                },
            },
            "tags": [rng.choice(_WORDS) for _ in range(rng.randint(2, 5))],
            "items": items,
            "attrs": attrs,
            "total": round(sum(i["qty"] * i["price"] for i in items), 2),
            "created": _stamp(rng),
        }
        if not with_map:
            del row["attrs"]
        return row

    return _templates(12, record)


def nested_templates() -> list[tuple[bytes, ...]]:
    """The ``nested`` shape's values."""
    return _nested_templates(True)


def nested_no_map_templates() -> list[tuple[bytes, ...]]:
    """The ``nested_no_map`` shape's values: ``nested``'s without the MAP."""
    return _nested_templates(False)


ESCAPES_COLUMNS = _columns(
    "id STRING", "title STRING", "body STRING", "quote STRING", "path STRING", "emoji STRING",
    "qty INT",
)  # fmt: skip
_TITLES = (
    "Café crème",
    "Naïve résumé",
    "Zürich \u2013 Genève",
    "São Paulo",
    "Ελληνικά",
    "Ærøskøbing",
)
_QUOTES = ('He said "hello" and left', 'a "quoted" word', '"both ends"', "it's 'single'")
_PATHS = ("C:\\Users\\élodie\\docs", "\\\\server\\share\\x", "a\\b/c", "D:\\tmp")
_EMOJI = ("😀 smile", "🎉 party 🎉", "flag 🇫🇷", "𝄞 clef", "plain text")


def escapes_templates() -> list[tuple[bytes, ...]]:
    """The ``escapes`` shape's values: every non-ASCII character written as ``\\u`` escapes
    (those outside the BMP as surrogate pairs), with newlines, tabs, quotes and backslashes."""

    def record(rng: random.Random) -> dict[str, Any]:
        lines = [_text(rng, 2, 5) for _ in range(rng.randint(2, 4))]
        return {
            "id": common.ID_MARKER,
            "title": rng.choice(_TITLES),
            "body": "\n".join(lines) + ("\tend" if rng.random() < 0.5 else ""),
            "quote": rng.choice(_QUOTES),
            "path": rng.choice(_PATHS),
            "emoji": rng.choice(_EMOJI),
            "qty": rng.randint(0, 100),
        }

    return _templates(13, record)


NUMBERS_COLUMNS = _columns(
    "id STRING", "label STRING", "qty INT", "stock INT", "delta INT", "views BIGINT",
    "bytes_total BIGINT", "price DOUBLE", "ratio DOUBLE", "score DOUBLE",
    "amount DECIMAL(10, 2)", "fee DECIMAL(10, 2)",
)  # fmt: skip
#: The Flink types whose values ``numbers_as_strings`` writes as JSON strings.
_NUMERIC = ("INT", "BIGINT", "DOUBLE", "DECIMAL")


def numbers_templates() -> list[tuple[bytes, ...]]:
    """The ``numbers_as_strings`` shape's values: every number a JSON string (``"42"``,
    ``"3.5"``), as Flink's json format accepts them."""

    def record(rng: random.Random) -> dict[str, Any]:
        return {
            "id": common.ID_MARKER,
            "label": _text(rng, 1, 3),
            "qty": str(rng.randint(1, 500)),
            "stock": str(rng.randrange(100_000)),
            "delta": str(rng.randint(-5000, 5000)),
            "views": str(rng.randrange(10**9, 10**12)),
            "bytes_total": str(rng.randrange(10**12, 10**15)),
            "price": str(_cents(rng, 1000)),
            "ratio": str(round(rng.random(), 4)),
            "score": str(rng.randint(0, 40) / 4),
            "amount": f"{rng.uniform(0, 100_000):.2f}",
            "fee": f"{rng.uniform(0, 50):.2f}",
        }

    return _templates(14, record)


DEBEZIUM_COLUMNS = _columns(
    "id STRING", "product STRING", "quantity INT", "price DECIMAL(10, 2)", "note STRING",
    "updated_at TIMESTAMP(3)", "active BOOLEAN",
)  # fmt: skip


def debezium_templates() -> list[tuple[bytes, ...]]:
    """The ``debezium`` shape's values: Debezium change events of one row each, half inserts
    (``c``), a third updates (``u``, both images), the rest deletes (``d``), with Debezium's
    ``source`` block and ``ts_ms``."""

    def image(rng: random.Random) -> dict[str, Any]:
        return {
            "id": common.ID_MARKER,
            "product": _text(rng, 1, 3),
            "quantity": rng.randint(0, 1000),
            "price": _cents(rng, 1000),
            "note": _text(rng, 2, 6),
            "updated_at": _stamp(rng),
            "active": rng.random() < 0.8,
        }

    def record(rng: random.Random) -> dict[str, Any]:
        draw = rng.random()
        op = "c" if draw < 0.5 else "u" if draw < 0.85 else "d"
        before: dict[str, Any] | None = None
        after: dict[str, Any] | None = None
        if op == "c":
            after = image(rng)
        elif op == "u":  # the same row, changed
            before = image(rng)
            after = {**before, "quantity": rng.randint(0, 1000), "price": _cents(rng, 1000),
                     "updated_at": _stamp(rng)}  # fmt: skip
        else:
            before = image(rng)
        ts_ms = 1_795_000_000_000 + rng.randrange(10**9)
        source = {
            "version": "2.7.3.Final", "connector": "mysql", "name": "shop", "ts_ms": ts_ms,
            "snapshot": "false", "db": "shop", "sequence": None, "table": "products",
            "server_id": 1, "gtid": None, "file": "mysql-bin.000042",
            "pos": rng.randrange(10**8), "row": 0, "thread": 7, "query": None,
        }  # fmt: skip
        return {"before": before, "after": after, "source": source, "op": op,
                "ts_ms": ts_ms + rng.randrange(500), "transaction": None}  # fmt: skip

    return _templates(15, record)


# ----------------------------------------------------------------------------- Spark's queries


def _numbers_query(columns: Sequence[Any]) -> bench.SparkQuery:
    """Spark's query for numbers written as strings: ``from_json`` with each numeric column as
    STRING, then ``try_cast`` to its declared type (null where the text is no such number)."""
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.options import Column, spark_type

    numeric = {c.name for c in columns if c.flink_type.name in _NUMERIC}
    parse = bench.json_query(
        [Column(c.name, "STRING") if c.name in numeric else c for c in columns], MILLIS_FORMAT
    )

    def query(frame: DataFrame) -> DataFrame:
        rows = parse(frame)
        return rows.select(
            *[
                F.col(c.name).try_cast(spark_type(c.flink_type)).alias(c.name)
                if c.name in numeric
                else F.col(c.name)
                for c in columns
            ]
        )

    return query


def _debezium_query(columns: Sequence[Any]) -> bench.SparkQuery:
    """Spark's query for Debezium events: ``from_json`` of ``before``, ``after`` and ``op``
    alone, then each event's changelog rows exploded from an array built per ``op`` (``c``/``r``:
    ``+I`` after; ``u``: ``-U`` before, ``+U`` after; ``d``: ``-D`` before), with the row kind
    as Flink's (the library's ``_rowkind`` column)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from dagster_kafka_flinklike.options import ROW_KIND, struct_type

    row = struct_type(list(columns))
    envelope = T.StructType(
        [T.StructField("before", row), T.StructField("after", row),
         T.StructField("op", T.StringType())]
    )  # fmt: skip
    options = {"timestampNTZFormat": MILLIS_FORMAT}

    def change(kind: str, image: SparkColumn) -> SparkColumn:
        return F.struct(F.lit(kind).alias("k"), image.alias("r"))

    def query(frame: DataFrame) -> DataFrame:
        event = frame.select(
            F.from_json(F.col("value").cast("string"), envelope, options).alias("e")
        )
        before, after, op = F.col("e.before"), F.col("e.after"), F.col("e.op")
        rows = (
            F.when(op.isin("c", "r"), F.array(change("+I", after)))
            .when(op == "u", F.array(change("-U", before), change("+U", after)))
            .when(op == "d", F.array(change("-D", before)))
        )
        changes = event.select(F.explode(rows).alias("c"))
        return changes.select("c.r.*", F.col("c.k").alias(ROW_KIND))

    return query


def _millis_json(columns: Sequence[Any]) -> bench.SparkQuery:
    """Spark's ``from_json`` of a table whose TIMESTAMP(3) text has milliseconds."""
    return bench.json_query(columns, MILLIS_FORMAT)


#: Every shape, in the order they are measured.
SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("flat", tuple(ORDER_COLUMNS), common.order_templates, bench.json_query),
        Shape("wide", WIDE_COLUMNS, wide_templates, _millis_json),
        Shape("nested", NESTED_COLUMNS, nested_templates, _millis_json),
        Shape("nested_no_map", NESTED_NO_MAP_COLUMNS, nested_no_map_templates, _millis_json),
        Shape("escapes", ESCAPES_COLUMNS, escapes_templates, _millis_json),
        Shape("numbers_as_strings", NUMBERS_COLUMNS, numbers_templates, _numbers_query),
        Shape("debezium", DEBEZIUM_COLUMNS, debezium_templates, _debezium_query,
              "debezium-json"),
    )
}  # fmt: skip


def selected_shapes() -> list[Shape]:
    """The shapes ``BENCH_SHAPES`` asks for: all by default, none for ``0``, else the listed
    names (an unknown name stops the run before anything is produced)."""
    raw = os.environ.get("BENCH_SHAPES", "").strip()
    if raw in ("", "1", "all"):
        return list(SHAPES.values())
    if raw == "0":
        return []
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        raise SystemExit(f"BENCH_SHAPES: unknown {', '.join(unknown)}; shapes: {', '.join(SHAPES)}")
    return [SHAPES[n] for n in dict.fromkeys(names)]


def disk_bytes(shapes: Sequence[Shape], records: int) -> int:
    """Broker disk the largest of ``shapes`` takes with ``records`` records (one shape's topic
    exists at a time): its mean value, the key and ~100 bytes of log overhead per record."""
    sizes = [
        statistics.fmean(sum(map(len, parts)) + 19 * (len(parts) - 1) for parts in s.templates())
        for s in shapes
    ]
    return int(records * (max(sizes, default=0) + 19 + 100))


# ----------------------------------------------------------------------------- measuring


def fingerprint(frame: DataFrame, names: Sequence[str]) -> tuple[int, Decimal, list[str]]:
    """Rows, an order-independent checksum (the sum of ``xxhash64`` of each row's ``to_json``
    over the ``names`` columns; a MAP compares by its JSON) and the columns' types."""
    from pyspark.sql import functions as F

    picked = frame.select(*[F.col(f"`{n}`") for n in names])
    hashed = F.xxhash64(F.to_json(F.struct(*[F.col(f"`{n}`") for n in names])))
    row = picked.agg(
        F.count(F.lit(1)).alias("rows"), F.sum(hashed.cast("decimal(20,0)")).alias("sum")
    ).collect()[0]
    types = [f"{f.name} {f.dataType.simpleString()}" for f in picked.schema.fields]
    return int(row["rows"]), row["sum"] or Decimal(0), types


def native_share(spark: SparkSession, spec: Any, splits: Sequence[Any]) -> float:
    """Share of the ``splits``' records that the reader's tasks decode natively (batch by batch,
    C scanner or Arrow); the others are decoded per record by Spark. 0 for a format without a
    native decoder."""
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.options import client_config
    from dagster_kafka_flinklike.source.reader import read_splits
    from dagster_kafka_flinklike.source.records import native_columns, record_fields

    native = [d for d in native_columns(spec) if d.source == "value"]
    if not native:
        return 0.0
    raw = read_splits(
        spark, splits, client_config(spec.properties), record_fields(spec), derived=native
    )
    row = raw.agg(F.count(native[0].name).alias("native"), F.count(F.lit(1)).alias("all"))
    first = row.collect()[0]
    return round(first["native"] / max(1, first["all"]), 4)


@dataclass
class ShapeResult:
    """What one shape measured: records/s of both sides per round, the mean value size, the
    native share, why the rows differ (None when they are the same), and the CPU per record of
    each side's cheapest round by process kind (:meth:`read_bench.SparkRun.cpu_us`)."""

    name: str
    ours_rps: list[float]
    spark_rps: list[float]
    value_bytes: float
    native: float
    differs: str | None
    cpu_us: dict[str, dict[str, float]] = field(default_factory=dict)


def _compare(spark: SparkSession, spec: Any, query: bench.SparkQuery) -> tuple[str | None, float]:
    """Both sides' rows over the whole topic, compared once (not timed): why they differ (None
    when they do not) and the mean value size our side counted."""
    with bench.json_step_table(spark, spec) as decoded:
        names = list(decoded.frame.columns)
        ours = fingerprint(decoded.frame, names)
        stats = decoded.stats
    theirs_frame = bench.spark_kafka_frame(spark, spec, query)
    missing = [n for n in names if n not in theirs_frame.columns]
    if missing:
        return f"Spark's query lacks {', '.join(missing)}", stats.bytes / max(1, stats.records)
    theirs = fingerprint(theirs_frame, names)
    reasons = []
    if stats.dirty:
        reasons.append(f"{stats.dirty:,} of our records dirty")
    if ours[2] != theirs[2]:
        pairs = [f"{a} / {b}" for a, b in zip(ours[2], theirs[2], strict=True) if a != b]
        reasons.append(f"types differ ({'; '.join(pairs)})")
    if ours[:2] != theirs[:2]:
        reasons.append(
            f"ours {ours[0]:,} rows (checksum {ours[1]}), Spark's {theirs[0]:,} rows "
            f"(checksum {theirs[1]})"
        )
    else:
        common.log(f"  same rows: {ours[0]:,} rows, checksum {ours[1]}")
    return ("; ".join(reasons) or None), stats.bytes / max(1, stats.records)


def measure_shape(
    spark: SparkSession,
    bootstrap: str,
    shape: Shape,
    records: int,
    partitions: int,
    warmup: int,
    repeats: int,
    compression: str,
) -> ShapeResult:
    """Fill a topic of its own with ``records`` values of ``shape``, warm both queries up on a
    slice, compare their rows once, then time ``repeats`` paired rounds; the topic is deleted
    afterwards."""
    topic = f"dkf-read-shape-{shape.name.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    common.create_topic(bootstrap, topic, partitions)
    try:
        common.produce_records(
            bootstrap, topic, records, partitions, shape.templates, compression=compression
        )
        spec = bench.table_spec(bootstrap, topic, shape.value_format, shape.columns)
        query = shape.query(spec.columns)
        ends = common.end_offsets(bootstrap, topic, partitions)
        warm = bench.warm_splits(topic, ends, warmup)
        bench.json_step(spark, spec, records, warm, clean=False)
        warm_ends = {s.partition: s.stop for s in warm}
        bench.timed_noop_write(spark, bench.spark_kafka_frame(spark, spec, query, warm_ends))
        native = native_share(spark, spec, warm)
        differs, value_bytes = _compare(spark, spec, query)
        if differs:
            common.log(f"  shape {shape.name}: ROWS DIFFER: {differs}")
        ours_rps, spark_rps = [], []
        ours_runs, spark_runs = [], []
        for attempt in range(1, repeats + 1):
            ours = bench.json_step(spark, spec, records, clean=False)
            theirs = bench.timed_noop_write(spark, bench.spark_kafka_frame(spark, spec, query))
            ours_runs.append(ours)
            spark_runs.append(theirs)
            ours_rps.append(records / ours.seconds)
            spark_rps.append(records / theirs.seconds)
            split = ours.cpu_us(records)
            common.log(
                f"  {shape.name} ({attempt}/{repeats}): JSON step {ours_rps[-1]:,.0f} records/s "
                f"({ours.cpu / records * 1e6:.2f} CPU µs/record: JVM {split['spark_jvm']}, "
                f"Python workers {split['spark_python_workers']}), Spark's source + query "
                f"{spark_rps[-1]:,.0f} ({theirs.cpu / records * 1e6:.2f}): "
                f"{ours_rps[-1] / spark_rps[-1]:.2f}x"
            )
    finally:
        common.delete_topic(bootstrap, topic)
    cpu_us = {
        "json_step": min(ours_runs, key=lambda run: run.cpu).cpu_us(records),
        "spark": min(spark_runs, key=lambda run: run.cpu).cpu_us(records),
    }
    return ShapeResult(shape.name, ours_rps, spark_rps, value_bytes, native, differs, cpu_us)


def measure_shapes(
    spark: SparkSession,
    bootstrap: str,
    shapes: Sequence[Shape],
    records: int,
    partitions: int,
    warmup: int,
    repeats: int,
    compression: str,
) -> dict[str, Any]:
    """Measure every shape in turn (:func:`measure_shape`) and return the summary's shape
    figures (see ``bench/README.md``); nothing without Spark's Kafka source."""
    if not shapes:
        return {}
    if not common.SPARK_KAFKA:
        common.log("shapes: left out (they compare with Spark's Kafka source: BENCH_SPARK_KAFKA=0)")
        return {}
    warm = min(warmup, max(10_000, records // 20))
    results = []
    for shape in shapes:
        common.log(f"shape {shape.name}: {records:,} records ({shape.value_format})...")
        began = time.monotonic()
        result = measure_shape(
            spark, bootstrap, shape, records, partitions, warm, repeats, compression
        )
        common.log(
            f"shape {shape.name}: {result.value_bytes:.0f} bytes a value, "
            f"{result.native:.0%} decoded natively ({time.monotonic() - began:.0f}s)"
        )
        results.append(result)
    return shape_summary(results, records)


def shape_summary(results: Sequence[ShapeResult], records: int) -> dict[str, Any]:
    """The shape keys of the summary: per shape the ratio (median of the rounds' own), both
    sides' best records/s, the mean value size and the native share; the smallest ratio, the
    shapes whose rows differ and every round's ratios."""
    out: dict[str, Any] = {"shape_records": records}
    per_round: dict[str, list[float]] = {}
    for r in results:
        per_round[r.name], out[f"ratio_json_step_vs_spark_{r.name}"] = common.paired_ratios(
            r.ours_rps, r.spark_rps
        )
    for r in results:
        out[f"json_step_rps_{r.name}"] = round(max(r.ours_rps))
        out[f"spark_rps_{r.name}"] = round(max(r.spark_rps))
        out[f"shape_bytes_{r.name}"] = round(r.value_bytes, 1)
        out[f"shape_native_share_{r.name}"] = r.native
        out[f"shape_cpu_us_{r.name}"] = r.cpu_us
    out["ratio_json_step_vs_spark_min"] = min(
        out[f"ratio_json_step_vs_spark_{r.name}"] for r in results
    )
    out["shapes_differ"] = [r.name for r in results if r.differs]
    out["shape_ratios_per_run"] = per_round
    return out
