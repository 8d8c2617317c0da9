"""Which tables a run's records belong to, and each table's schema.

A record's table id comes from the record (:func:`table_id_column`): Debezium's
``source.db`` [``source.schema``] ``source.table`` (or ``source.collection``); Canal's
``database`` and ``table``; for JSON the topic name, or the values of
``json.decode.parser-table-id.fields`` joined with ``.``.

Each table's columns are inferred from its rows as a JSON table's are
(:mod:`..source.inference`): Debezium's ``before`` and ``after`` images, Canal's ``data`` and
``old`` rows, a JSON value (and key) object; with Canal's ``SQL_TYPE`` / ``MYSQL_TYPE``
strategies the types come from ``sqlType`` / ``mysqlType`` instead. One Python pass over the
run's records observes every table (:func:`observe_tables`); :func:`table_schemas` then evolves
each table's schema kept from the last run, by ``schema.inference.strategy``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..options import FlinkType, parse_flink_type
from ..run.schema import InferredSchema, evolve_schema, parse_schema, settings_of
from ..source.inference import (
    InferenceSettings,
    Observed,
    merge_observed,
    observe_record,
)
from .tables import TableId

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from .definition import IngestionSource

__all__ = [
    "TABLE_ID",
    "TableObservation",
    "jdbc_type",
    "mysql_type",
    "observe_tables",
    "table_id",
    "table_id_column",
    "table_schemas",
]

#: The column holding each raw record's table id (its parts joined by :data:`_SEP`).
TABLE_ID = "__dkf_table_id"
_SEP = "\x01"

#: JDBC type codes (Canal's ``sqlType``) → Flink types; any other code is STRING.
JDBC_TYPES = {
    -7: "BOOLEAN", 16: "BOOLEAN", -6: "TINYINT", 5: "SMALLINT", 4: "INT", -5: "BIGINT",
    3: "DECIMAL(38, 18)", 2: "DECIMAL(38, 18)", 7: "FLOAT", 6: "DOUBLE", 8: "DOUBLE",
    -2: "BYTES", -3: "BYTES", -4: "BYTES", 2004: "BYTES", 91: "DATE", 92: "TIME",
    93: "TIMESTAMP", 1: "STRING", 12: "STRING", -1: "STRING",
}  # fmt: skip
_MYSQL = re.compile(r"\s*([a-z]+)\s*(?:\(([^)]*)\))?\s*(unsigned)?", re.IGNORECASE)
_MYSQL_TYPES = {
    "smallint": "SMALLINT", "mediumint": "INT", "int": "INT", "integer": "INT",
    "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "real": "DOUBLE", "date": "DATE",
    "time": "TIME", "year": "INT", "char": "STRING", "varchar": "STRING", "text": "STRING",
    "tinytext": "STRING", "mediumtext": "STRING", "longtext": "STRING", "json": "STRING",
    "binary": "BYTES", "varbinary": "BYTES", "blob": "BYTES", "tinyblob": "BYTES",
    "mediumblob": "BYTES", "longblob": "BYTES", "boolean": "BOOLEAN", "bool": "BOOLEAN",
}  # fmt: skip
_UNSIGNED = {"TINYINT": "SMALLINT", "SMALLINT": "INT", "INT": "BIGINT", "BIGINT": "DECIMAL(20, 0)"}


def table_id(text: str) -> TableId:
    """The table id of a :data:`TABLE_ID` value."""
    return TableId(tuple(text.split(_SEP)))


def table_id_column(source: IngestionSource) -> SparkColumn:
    """Each raw record's table id (null when the record names none)."""
    from pyspark.sql import functions as F

    value = F.col("value").cast("string")

    def field(path: str) -> SparkColumn:
        return F.nullif(F.get_json_object(value, path), F.lit(""))

    fmt = source.value_format
    if fmt == "debezium-json":
        root = (
            "$.payload.source"
            if source.spec.value_format.settings.get("schema-include")
            else "$.source"
        )
        table = F.coalesce(field(f"{root}.table"), field(f"{root}.collection"))
        parts = [field(f"{root}.db"), field(f"{root}.schema"), table]
    elif fmt == "canal-json":
        table = field("$.table")
        parts = [field("$.database"), table]
    elif source.table_id_fields:
        parts = [field(f"$['{name}']") for name in source.table_id_fields]
        table = F.when(~F.exists(F.array(*parts), lambda p: p.isNull()), F.lit(""))
    else:
        return F.col("topic")
    return F.when(table.isNotNull(), F.concat_ws(_SEP, *parts))


def jdbc_type(code: object) -> FlinkType:
    """The Flink type of a JDBC type code (Canal's ``sqlType``).

    Example:
        >>> str(jdbc_type(93)), str(jdbc_type(3)), str(jdbc_type(1111))
        ('TIMESTAMP', 'DECIMAL(38, 18)', 'STRING')
    """
    return parse_flink_type(JDBC_TYPES.get(code if isinstance(code, int) else -999, "STRING"))


def mysql_type(
    text: str, tinyint1_as_boolean: bool = True, timestamp_as_datetime: bool = True
) -> FlinkType:
    """The Flink type of a MySQL column type (Canal's ``mysqlType``).

    Example:
        >>> [str(mysql_type(t)) for t in ("tinyint(1)", "int(10) unsigned", "decimal(10,2)")]
        ['BOOLEAN', 'BIGINT', 'DECIMAL(10, 2)']
        >>> str(mysql_type("timestamp(3)", timestamp_as_datetime=False))
        'TIMESTAMP_LTZ(3)'
    """
    found = _MYSQL.match(text or "")
    if found is None:
        return FlinkType("STRING")
    name, args, unsigned = found.group(1).lower(), (found.group(2) or "").strip(), found.group(3)
    precision = [int(a) for a in re.findall(r"\d+", args)]
    if name == "tinyint":
        base = "BOOLEAN" if args == "1" and tinyint1_as_boolean else "TINYINT"
    elif name == "bit":
        base = "BOOLEAN" if not precision or precision[0] == 1 else "BYTES"
    elif name in ("decimal", "numeric", "dec"):
        p, s = [*precision, 10, 0][:2] if precision else (10, 0)
        base = f"DECIMAL({min(p, 38)}, {s})"
    elif name in ("datetime", "timestamp"):
        ltz = name == "timestamp" and not timestamp_as_datetime
        base = f"{'TIMESTAMP_LTZ' if ltz else 'TIMESTAMP'}({precision[0] if precision else 0})"
    else:
        base = _MYSQL_TYPES.get(name, "STRING")
    if unsigned:
        base = _UNSIGNED.get(base, base)
    return parse_flink_type(base)


@dataclass
class TableObservation:
    """What one pass saw of one table: its fields, which came from the record key, its
    primary key (Canal's ``pkNames``), its first record's fields and how many records."""

    fields: Observed = field(default_factory=dict)
    key_fields: set[str] = field(default_factory=set)
    primary_key: tuple[str, ...] = ()
    records: int = 0
    first: tuple[tuple[Any, ...], Observed] | None = None

    def add(self, other: TableObservation) -> None:
        """Merge another task's observation of the same table."""
        merge_observed(self.fields, other.fields)
        self.key_fields |= other.key_fields
        self.primary_key = self.primary_key or other.primary_key
        self.records += other.records
        if other.first is not None and (self.first is None or other.first[0] < self.first[0]):
            self.first = other.first


@dataclass(frozen=True)
class _Reader:
    """How one record's rows are found and typed (shipped to the Spark tasks)."""

    fmt: str
    schema_include: bool
    settings: InferenceSettings
    key_prefix: str
    value_prefix: str
    with_key: bool
    canal_strategy: str
    tinyint1_as_boolean: bool
    timestamp_as_datetime: bool

    def observe(self, key: Any, value: Any, seen: Observed, keys: set[str]) -> tuple[str, ...]:
        """Observe one record into ``seen``; returns its primary key names (Canal)."""
        record = json.loads(value)
        if not isinstance(record, dict):
            return ()
        typed: Observed = {}
        if self.fmt == "debezium-json":
            payload = record.get("payload") if self.schema_include else record
            images = (
                [payload.get(k) for k in ("before", "after")] if isinstance(payload, dict) else []
            )
        elif self.fmt == "canal-json":
            images = [
                r for k in ("data", "old") for r in (record.get(k) or []) if isinstance(r, dict)
            ]
            typed = self._canal_types(record)
        else:
            images = [record]
            if self.with_key and key:
                found = json.loads(key)
                if isinstance(found, dict):
                    observed = observe_record(found, self.settings, {}, self.key_prefix)
                    keys.update(observed)
                    merge_observed(seen, observed)
        for image in images:
            if isinstance(image, dict):
                untyped = {k: v for k, v in image.items() if self.value_prefix + k not in typed}
                observe_record(untyped, self.settings, seen, self.value_prefix)
        merge_observed(seen, typed)
        names = record.get("pkNames") if self.fmt == "canal-json" else None
        return tuple(str(n) for n in names) if isinstance(names, list) else ()

    def _canal_types(self, record: Mapping[str, Any]) -> Observed:
        """The column types a Canal record declares (``SQL_TYPE``: ``sqlType``, ``MYSQL_TYPE``:
        ``mysqlType``); none under ``AUTO``."""
        out: Observed = {}
        if self.canal_strategy == "SQL_TYPE" and isinstance(record.get("sqlType"), dict):
            for name, code in record["sqlType"].items():
                out[self.value_prefix + name] = jdbc_type(code)
        elif self.canal_strategy == "MYSQL_TYPE" and isinstance(record.get("mysqlType"), dict):
            for name, text in record["mysqlType"].items():
                typed = mysql_type(str(text), self.tinyint1_as_boolean, self.timestamp_as_datetime)
                out[self.value_prefix + name] = typed
        return out


def _reader(source: IngestionSource) -> _Reader:
    fmt = source.value_format
    settings = (
        settings_of(source.spec)
        if fmt == "json"
        else InferenceSettings(primitive_as_string=source.primitive_as_string)
    )
    return _Reader(
        fmt=fmt,
        schema_include=bool(source.spec.value_format.settings.get("schema-include")),
        settings=settings,
        key_prefix=source.key_prefix,
        value_prefix=source.value_prefix,
        with_key=source.key_format is not None,
        canal_strategy=source.canal_strategy,
        tinyint1_as_boolean=source.tinyint1_as_boolean,
        timestamp_as_datetime=source.timestamp_as_datetime,
    )


def _texts(seen: Observed) -> dict[str, str | None]:
    return {n: (str(t) if t is not None else None) for n, t in seen.items()}


def _observed(texts: Mapping[str, str | None]) -> Observed:
    return {n: (parse_flink_type(t) if t is not None else None) for n, t in texts.items()}


def _observe_partition(reader: _Reader) -> Any:
    def observe(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        tables: dict[str, TableObservation] = {}
        for batch in batches:
            columns = batch.to_pydict()
            names = (TABLE_ID, "key", "value", "topic", "partition", "offset")
            rows = zip(*[columns[n] for n in names], strict=True)
            for tid, key, value, topic, partition, offset in rows:
                if tid is None or not value:
                    continue
                table = tables.setdefault(tid, TableObservation())
                own: Observed = {}
                try:
                    pk = reader.observe(key, value, own, table.key_fields)
                except ValueError:  # not JSON: dirty when decoded
                    continue
                merge_observed(table.fields, own)
                table.primary_key = table.primary_key or pk
                table.records += 1
                position = (topic, partition, offset)
                if table.first is None or position < table.first[0]:
                    table.first = (position, own)
        out = [
            {
                "table": tid,
                "fields": json.dumps(_texts(t.fields)),
                "keys": json.dumps(sorted(t.key_fields)),
                "pk": json.dumps(list(t.primary_key)),
                "first": json.dumps([list(t.first[0]), _texts(t.first[1])] if t.first else None),
                "records": t.records,
            }
            for tid, t in tables.items()
        ]
        if out:
            yield pa.RecordBatch.from_pylist(out)

    return observe


_OBSERVED = "table string, fields string, keys string, pk string, first string, records long"


def observe_tables(raw: DataFrame, source: IngestionSource) -> dict[str, TableObservation]:
    """Observe every table of ``raw`` (records with :data:`TABLE_ID`, ``key``, ``value``,
    ``topic``, ``partition``, ``offset``): one Spark pass, one result row per task and table."""
    columns = raw.select(TABLE_ID, "key", "value", "topic", "partition", "offset")
    found: dict[str, TableObservation] = {}
    for row in columns.mapInArrow(_observe_partition(_reader(source)), _OBSERVED).collect():
        first = json.loads(row["first"])
        other = TableObservation(
            fields=_observed(json.loads(row["fields"])),
            key_fields=set(json.loads(row["keys"])),
            primary_key=tuple(json.loads(row["pk"])),
            records=row["records"],
            first=(tuple(first[0]), _observed(first[1])) if first else None,
        )
        found.setdefault(row["table"], TableObservation()).add(other)
    return found


def table_schemas(
    source: IngestionSource,
    observed: Mapping[str, TableObservation],
    saved: Mapping[str, Mapping[str, str]],
    sampled: Mapping[str, TableObservation] | None = None,
) -> dict[str, InferredSchema]:
    """Each observed table's schema for this run, by its :data:`TABLE_ID` value.

    ``continuous``: the schema kept from the last run (else the table's initial schema, else
    none) widened by what this run observed. ``static``: the kept or initial schema; for a new
    table, what the first run ``sampled`` of it, else its first record in this run.

    Raises:
        DeserializationError: an incompatible change under ``continuous`` and no tolerance.
    """
    spec = source.spec
    fixed: Observed = dict(settings_of(spec).fixed_types) if source.value_format == "json" else {}
    flatten = source.value_format == "json" and settings_of(spec).flatten_nested
    tolerant = spec.ignore_errors or spec.value_format.ignore_parse_errors
    out: dict[str, InferredSchema] = {}
    for tid, seen in observed.items():
        table = table_id(tid)
        initial = source.initial_schemas.get(table)
        current = parse_schema(saved.get(str(table))) or dict(initial.fields if initial else {})
        if spec.inference_strategy == "static":
            if not current:
                sample = (sampled or {}).get(tid)
                own = seen.first[1] if seen.first else {}
                first = merge_observed(dict(sample.fields if sample else own), fixed)
                current = {name: t or FlinkType("STRING") for name, t in first.items()}
            out[tid] = InferredSchema(current, flatten=flatten)
            continue
        found = merge_observed(dict(seen.fields), fixed)
        out[tid] = evolve_schema(f"Table {str(table)!r}", current, found, tolerant, flatten)
    return out
