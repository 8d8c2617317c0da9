"""The ``debezium-json`` changelog format: Debezium's change events in JSON, as Flink reads and
writes them.

Reading, ``op`` says what a record is: ``c`` (insert) and ``r`` (snapshot read) yield ``+I`` of
``after``; ``u`` yields ``-U`` of ``before`` then ``+U`` of ``after``; ``d`` yields ``-D`` of
``before``. An update or delete without ``before`` (Debezium's Postgres connector without
``REPLICA IDENTITY FULL``), an insert without ``after``, a missing or unknown ``op`` is dirty. With
``schema-include`` the event is the ``payload`` of ``{"schema": ..., "payload": ...}``. A null or
empty value (the tombstone Debezium writes after a delete) yields no row.

Writing, as Flink writes: ``+I`` and ``+U`` rows become ``{"before": null, "after": row, "op":
"c"}``, ``-U`` and ``-D`` rows ``{"before": row, "after": null, "op": "d"}``. The event's fields
(:func:`change_event`) and its Kafka Connect schema (:func:`connect_schema`) are built here for
every writer of Debezium events: this format, ``debezium-avro-confluent`` and the data-ingestion
sink (which writes Flink CDC's events: ``op`` ``u`` for an update with both images, a ``source``
and, optionally, the schema).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FlinkType
from . import _changelog as cl
from .base import Fields, Options

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "debezium-json"
#: Why an update or delete without a before image is dirty (Debezium JSON and Avro alike).
NO_BEFORE = (
    "the \"before\" field of {op} is null (for Debezium's Postgres connector, set the table's "
    "REPLICA IDENTITY to FULL)"
)
_NO_PAYLOAD = (
    'the "payload" field is missing (records without a schema need '
    "'debezium-json.schema-include' = 'false')"
)
#: Debezium's operations: inserts (``c``, and ``r`` for a snapshot read), update, delete.
OPERATIONS: cl.Operations = (("c", "r"), "u", "d")
#: Metadata key → (envelope field it needs, where it lives: the payload or the root).
_FIELDS = {
    "schema": ("schema", "STRING", False),
    "ingestion-timestamp": ("ts_ms", "BIGINT", True),
    "source.timestamp": ("source", "MAP<STRING, STRING>", True),
    "source.database": ("source", "MAP<STRING, STRING>", True),
    "source.schema": ("source", "MAP<STRING, STRING>", True),
    "source.table": ("source", "MAP<STRING, STRING>", True),
    "source.properties": ("source", "MAP<STRING, STRING>", True),
}


def _envelope(
    columns: Sequence[Column], metadata: Sequence[str], schema_include: bool
) -> list[Column]:
    row = cl.row_type(columns)
    payload = [Column("before", row), Column("after", row), Column("op", "STRING")]
    root: list[Column] = []
    for key in metadata:
        field, type_, in_payload = _FIELDS[key]
        target = payload if in_payload or not schema_include else root
        if all(c.name != field for c in target):
            target.append(Column(field, type_))
    if not schema_include:
        return payload
    inner = cl.row_type(payload)
    return [Column("payload", inner), *root]


def event_rows(event: SparkColumn) -> tuple[SparkColumn, SparkColumn]:
    """(rows, error) of a Debezium change event (a struct of ``before``, ``after`` and ``op``),
    JSON or Avro alike: ``c`` and ``r`` yield ``+I`` of ``after``, ``u`` ``-U`` of ``before``
    and ``+U`` of ``after``, ``d`` ``-D`` of ``before``; a missing image or ``op`` is dirty."""
    images = cl.before_after(event["before"], event["after"], OPERATIONS, NO_BEFORE)
    return cl.dispatch(event["op"], "op", images)


def _metadata_value(key: str, root: SparkColumn, payload: SparkColumn) -> SparkColumn:
    from pyspark.sql import functions as F

    if key == "schema":
        return root["schema"]
    if key == "ingestion-timestamp":
        return cl.epoch_millis(payload["ts_ms"])
    source = payload["source"]
    if key == "source.timestamp":
        return cl.epoch_millis(source["ts_ms"])
    if key == "source.database":
        return source["db"]
    if key == "source.schema":
        return source["schema"]
    if key == "source.table":
        return F.coalesce(source["table"], source["collection"])
    return source


#: The type of the ``source`` block of a data-ingestion sink's events.
SOURCE_TYPE = "ROW<`db` STRING, `table` STRING>"


def change_event(
    before: SparkColumn,
    after: SparkColumn,
    op: SparkColumn,
    row_type: str,
    source: SparkColumn | None = None,
) -> list[tuple[SparkColumn, Column]]:
    """The fields of a Debezium change event, in Debezium's order: ``before`` and ``after``
    (images of Flink ROW type ``row_type``), ``op`` and, when given, ``source``.

    Example:
        >>> change_event(F.lit(None), F.col("row"), F.lit("c"), "ROW<`id` INT>")  # doctest: +SKIP
    """
    fields = [
        (before, Column("before", row_type)),
        (after, Column("after", row_type)),
        (op, Column("op", "STRING")),
    ]
    if source is not None:
        fields.append((source, Column("source", SOURCE_TYPE)))
    return fields


def with_connect_schema(payload: SparkColumn, columns: Mapping[str, FlinkType]) -> SparkColumn:
    """An event's JSON ``payload`` wrapped as ``{"schema": ..., "payload": ...}`` with the Kafka
    Connect schema of images holding ``columns`` (Kafka Connect's ``schemas.enable``)."""
    from pyspark.sql import functions as F

    head = f'{{"schema":{connect_schema(columns)},"payload":'
    return F.concat(F.lit(head), payload.cast("string"), F.lit("}")).cast("binary")


def _connect_type(t: FlinkType) -> dict[str, Any]:
    """The Kafka Connect schema of one Flink type, as Flink CDC's Debezium sink writes it."""
    name = t.name
    if name in ("TINYINT", "SMALLINT"):
        return {"type": "int16"}
    simple = {"INT": "int32", "BIGINT": "int64", "BOOLEAN": "boolean", "FLOAT": "float",
              "DOUBLE": "double"}  # fmt: skip
    if name in simple:
        return {"type": simple[name]}
    if name == "DECIMAL":
        precision, scale = (*t.params, 10, 0)[:2] if t.params else (10, 0)
        return {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        }
    if name == "DATE":
        return {"type": "int32", "name": "io.debezium.time.Date", "version": 1}
    if name == "TIME":
        return {"type": "int64", "name": "io.debezium.time.MicroTime", "version": 1}
    if name == "TIMESTAMP":
        micro = (t.params[0] if t.params else 6) > 3
        kind = "MicroTimestamp" if micro else "Timestamp"
        return {"type": "int64", "name": f"io.debezium.time.{kind}", "version": 1}
    if name == "TIMESTAMP_LTZ":
        return {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "version": 1}
    if name in ("BYTES", "BINARY", "VARBINARY"):
        return {"type": "bytes"}
    if name in ("ARRAY", "MULTISET"):
        return {"type": "array", "items": _connect_field(None, t.children[0])}
    if name == "MAP":
        key, value = t.children
        return {
            "type": "map",
            "keys": _connect_field(None, key),
            "values": _connect_field(None, value),
        }
    if name == "ROW":
        fields = [_connect_field(n, c) for n, c in zip(t.field_names, t.children, strict=True)]
        return {"type": "struct", "fields": fields}
    return {"type": "string"}


def _connect_field(name: str | None, t: FlinkType) -> dict[str, Any]:
    out = {**_connect_type(t), "optional": t.nullable}
    if name is not None:
        out["field"] = name
    return out


def connect_schema(columns: Mapping[str, FlinkType]) -> str:
    """The Kafka Connect schema of a Debezium envelope whose ``before`` and ``after`` hold
    ``columns``, as JSON text.

    Example:
        >>> connect_schema({"id": FlinkType("BIGINT", nullable=False)})[:60]
        '{"type":"struct","fields":[{"type":"struct","fields":[{"type"'
    """
    fields = [_connect_field(n, t) for n, t in columns.items()]
    images = [
        {"type": "struct", "fields": fields, "optional": True, "field": f}
        for f in ("before", "after")
    ]
    schema = {"type": "struct", "fields": images, "optional": False}
    return json.dumps(schema, separators=(",", ":"))


class Debezium(cl.JsonChangelogFormat):
    """The ``debezium-json`` format (see the module's docstring)."""

    name = NAME
    native_operations = OPERATIONS

    def native_payload(self, options: Options) -> str | None:
        """With ``schema-include``, the event is the envelope's ``payload``."""
        return "payload" if self.settings(options)["schema-include"] else None

    def envelope(
        self, columns: Sequence[Column], metadata: Sequence[str], options: Options
    ) -> list[Column]:
        """The event's images and ``op`` (in its ``payload`` with ``schema-include``) and the
        fields of the ``metadata`` keys."""
        return _envelope(columns, metadata, bool(self.settings(options)["schema-include"]))

    def interpret(
        self,
        parsed: cl.EnvelopeParse,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
    ) -> tuple[Any, Any, Sequence[Any]]:
        """Debezium's ``op`` as changelog rows (see the module's docstring)."""
        from pyspark.sql import functions as F

        schema_include = bool(self.settings(options)["schema-include"])
        struct = parsed.struct
        payload = struct["payload"] if schema_include else struct
        rows, error = event_rows(payload)
        if schema_include:
            error = F.coalesce(F.when(payload.isNull(), F.lit(_NO_PAYLOAD)), error)
        return rows, error, [_metadata_value(k, struct, payload) for k in metadata]

    def encode(
        self, fields: Fields, options: Options, kind: SparkColumn | None = None
    ) -> SparkColumn:
        """Each row as a Debezium event: ``op`` ``c`` with ``after`` for ``+I``/``+U`` (and
        rows without a kind), ``d`` with ``before`` for ``-U``/``-D``."""
        event = change_event(*cl.images(fields, kind, "c", "d"))
        return cl.encode_envelope(NAME, event, options)


FORMAT = Debezium()

__all__ = [
    "FORMAT",
    "NO_BEFORE",
    "OPERATIONS",
    "SOURCE_TYPE",
    "Debezium",
    "change_event",
    "connect_schema",
    "event_rows",
    "with_connect_schema",
]
