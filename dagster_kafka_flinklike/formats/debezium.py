"""The ``debezium-json`` changelog format: Debezium's change events in JSON, as Flink reads and
writes them.

Reading, ``op`` says what a record is: ``c`` (insert) and ``r`` (snapshot read) yield ``+I`` of
``after``; ``u`` yields ``-U`` of ``before`` then ``+U`` of ``after``; ``d`` yields ``-D`` of
``before``. An update or delete without ``before`` (Debezium's Postgres connector without
``REPLICA IDENTITY FULL``), an insert without ``after``, a missing or unknown ``op`` is dirty. With
``schema-include`` the event is the ``payload`` of ``{"schema": ..., "payload": ...}``. A null or
empty value (the tombstone Debezium writes after a delete) yields no row.

Writing, as Flink writes: ``+I`` and ``+U`` rows become ``{"before": null, "after": row, "op":
"c"}``, ``-U`` and ``-D`` rows ``{"before": row, "after": null, "op": "d"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FormatSpec
from . import _changelog as cl

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "debezium-json"
CHANGELOG = True
#: Why an update or delete without a before image is dirty (Debezium JSON and Avro alike).
NO_BEFORE = (
    "the \"before\" field of {op} is null (for Debezium's Postgres connector, set the table's "
    "REPLICA IDENTITY to FULL)"
)
_NO_PAYLOAD = (
    'the "payload" field is missing (records without a schema need '
    "'debezium-json.schema-include' = 'false')"
)
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


def skipped(raw: SparkColumn, options: FormatSpec | Mapping[str, Any]) -> SparkColumn:
    """Tombstones (null or empty values) yield no row."""
    return cl.is_tombstone(raw)


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


def decode_changelog_stages(
    raw: SparkColumn,
    columns: Sequence[Column],
    metadata: Sequence[str],
    options: FormatSpec | Mapping[str, Any],
    prefix: str | None = None,
) -> tuple[list[dict[str, SparkColumn]], tuple[Any, Any, Any, Any]]:
    """Decode Debezium JSON into changelog rows of ``columns`` and the ``metadata`` keys."""
    schema_include = bool(cl.settings(NAME, options)["schema-include"])

    def interpret(struct: SparkColumn, text: SparkColumn, stage: Any) -> tuple[Any, Any, list]:
        from pyspark.sql import functions as F

        payload = struct["payload"] if schema_include else struct
        operations = cl.before_after(
            payload["before"], payload["after"], (("c", "r"), "u", "d"), NO_BEFORE
        )
        rows, error = cl.dispatch(payload["op"], "op", operations)
        if schema_include:
            missing = F.when(
                payload.isNull(),
                F.lit(_NO_PAYLOAD),
            )
            error = F.coalesce(missing, error)
        return rows, error, [_metadata_value(k, struct, payload) for k in metadata]

    envelope = _envelope(columns, metadata, schema_include)
    return cl.decode_envelope(NAME, raw, envelope, options, prefix, interpret)


def encode(
    fields: Sequence[tuple[SparkColumn, Column]],
    options: FormatSpec | Mapping[str, Any],
    kind: SparkColumn | None = None,
) -> SparkColumn:
    """Each row as a Debezium event: ``op`` ``c`` with ``after`` for ``+I``/``+U`` (and rows
    without a kind), ``d`` with ``before`` for ``-U``/``-D``."""
    return cl.encode_before_after(NAME, fields, options, kind, ("op", "c", "d"))


__all__ = ["CHANGELOG", "NO_BEFORE", "decode_changelog_stages", "encode", "skipped"]
