"""Flink table columns ↔ Avro schemas, with Flink's type mapping (``AvroSchemaConverter``).

A table's columns become one Avro record named ``record`` in namespace
``org.apache.flink.avro.generated``, as Flink derives it; a nested ROW becomes a record named
after its path (``record_<field>``). A nullable column is a union of ``null`` and its type with
default ``null``; a NOT NULL column is the bare type. TIMESTAMP and TIMESTAMP_LTZ are Avro
``timestamp-millis``/``timestamp-micros`` (Flink's legacy mapping, its default); with
``avro.timestamp_mapping.legacy = false`` TIMESTAMP becomes ``local-timestamp-*``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..errors import KafkaOptionsError
from ._types import Column, FlinkType

RECORD_NAME = "record"
NAMESPACE = "org.apache.flink.avro.generated"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRIMITIVE = {
    "BOOLEAN": "boolean",
    "TINYINT": "int",
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "long",
    "FLOAT": "float",
    "DOUBLE": "double",
    "CHAR": "string",
    "VARCHAR": "string",
    "STRING": "string",
    "BINARY": "bytes",
    "VARBINARY": "bytes",
    "BYTES": "bytes",
}


def _checked_name(name: str, fmt: str) -> str:
    if not _NAME.match(name):
        raise KafkaOptionsError(
            f"Column or field '{name}' cannot be an Avro field name (letters, digits and '_', "
            f"not starting with a digit), so format '{fmt}' cannot hold it. Rename it, or use "
            f"'{fmt}.schema' / a computed column.",
            keys=("format",),
        )
    return name


def _timestamp(t: FlinkType, legacy: bool) -> dict[str, Any]:
    precision = t.params[0] if t.params else 6
    unit = "millis" if precision <= 3 else "micros"
    local = t.name == "TIMESTAMP" and not legacy
    return {"type": "long", "logicalType": f"{'local-' if local else ''}timestamp-{unit}"}


def avro_type(t: FlinkType, path: str, legacy: bool, fmt: str) -> Any:
    """The Avro type holding Flink type ``t`` (``path`` names nested records)."""
    base: Any
    if t.name in _PRIMITIVE:
        base = _PRIMITIVE[t.name]
    elif t.name == "DECIMAL":
        precision = t.params[0] if t.params else 10
        scale = t.params[1] if len(t.params) > 1 else 0
        base = {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    elif t.name == "DATE":
        base = {"type": "int", "logicalType": "date"}
    elif t.name == "TIME":
        base = {"type": "int", "logicalType": "time-millis"}
    elif t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        base = _timestamp(t, legacy)
    elif t.name == "ARRAY":
        base = {"type": "array", "items": avro_type(t.children[0], path, legacy, fmt)}
    elif t.name == "MAP" and t.children[0].name in ("STRING", "VARCHAR", "CHAR"):
        base = {"type": "map", "values": avro_type(t.children[1], path, legacy, fmt)}
    elif t.name == "ROW":
        base = _record(path, t.field_names, t.children, legacy, fmt, nested=True)
    else:
        raise KafkaOptionsError(
            f"Format '{fmt}' cannot hold type {t} (Avro maps need STRING keys; MULTISET and "
            "intervals have no Avro type here).",
            keys=("format",),
        )
    return ["null", base] if t.nullable else base


def _record(
    path: str,
    names: Sequence[str],
    types: Sequence[FlinkType],
    legacy: bool,
    fmt: str,
    *,
    nested: bool,
) -> dict[str, Any]:
    fields = []
    for name, t in zip(names, types, strict=True):
        _checked_name(name, fmt)
        field: dict[str, Any] = {"name": name, "type": avro_type(t, f"{path}_{name}", legacy, fmt)}
        if t.nullable:
            field["default"] = None
        fields.append(field)
    record: dict[str, Any] = {"type": "record", "name": path, "fields": fields}
    if not nested:
        record["namespace"] = NAMESPACE
    return record


def avro_schema(columns: Sequence[Column], *, legacy: bool = True, fmt: str = "avro") -> str:
    """The Avro schema (JSON text) Flink derives from ``columns``: a record named ``record``.

    Example:
        >>> json.loads(avro_schema([Column("id", "BIGINT NOT NULL")]))["fields"]
        [{'name': 'id', 'type': 'long'}]
    """
    record = _record(
        RECORD_NAME,
        [c.name for c in columns],
        [c.flink_type for c in columns],
        legacy,
        fmt,
        nested=False,
    )
    return json.dumps(record, separators=(",", ":"))


__all__ = ["NAMESPACE", "RECORD_NAME", "avro_schema", "avro_type"]
