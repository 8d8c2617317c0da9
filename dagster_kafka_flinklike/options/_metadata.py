"""Kafka record metadata columns (``METADATA FROM 'timestamp'``): keys, types, read/write rules."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import KafkaOptionsError
from ._types import Column, FlinkType, parse_flink_type


@dataclass(frozen=True)
class MetadataKey:
    """One metadata key a Kafka table can declare as a column, with its Flink type.

    ``writable`` keys are written to the record by a sink unless the column is ``VIRTUAL``;
    read-only keys must be ``VIRTUAL`` in a sink table.

    Example:
        >>> METADATA["timestamp"].writable
        True
    """

    key: str
    type: str
    writable: bool
    description: str

    @property
    def flink_type(self) -> FlinkType:
        """The metadata's own Flink type, parsed."""
        return parse_flink_type(self.type)


METADATA: dict[str, MetadataKey] = {
    m.key: m
    for m in (
        MetadataKey("topic", "STRING NOT NULL", False, "Topic of the record."),
        MetadataKey("partition", "INT NOT NULL", False, "Partition of the record."),
        MetadataKey("headers", "MAP<STRING, BYTES> NOT NULL", True,
                    "Headers of the record, values as raw bytes."),
        MetadataKey("leader-epoch", "INT", False, "Leader epoch of the record, if available."),
        MetadataKey("offset", "BIGINT NOT NULL", False, "Offset of the record in its partition."),
        MetadataKey("timestamp", "TIMESTAMP_LTZ(3) NOT NULL", True, "Timestamp of the record."),
        MetadataKey("timestamp-type", "STRING NOT NULL", False,
                    "NoTimestampType, CreateTime or LogAppendTime."),
        MetadataKey("__raw_key__", "STRING NOT NULL", True,
                    "The record key, undecoded (written as the key when persisted)."),
        MetadataKey("__raw_value__", "STRING NOT NULL", True,
                    "The record value, undecoded (written as the value when persisted)."),
    )
}  # fmt: skip

#: The column a changelog table (a changelog format, or ``upsert-kafka``) gains after its declared
#: columns, and that a sink frame may carry: each row's Flink ``RowKind`` short string.
ROW_KIND = "_rowkind"

#: Flink's ``RowKind`` short strings, in Flink's order.
ROW_KINDS = ("+I", "-U", "+U", "-D")
#: Row kinds that add a row (its after image) and that retract one (its before image).
ACCUMULATIONS = ("+I", "+U")
RETRACTIONS = ("-U", "-D")


def _fm(key: str, type_: str, description: str) -> MetadataKey:
    return MetadataKey(key, type_, False, description)


#: Read-only metadata of the changelog value formats (``METADATA FROM 'value.<key>'``).
FORMAT_METADATA: dict[str, dict[str, MetadataKey]] = {
    name: {m.key: m for m in keys}
    for name, keys in {
        "debezium-json": (
            _fm("schema", "STRING", "The record's Kafka Connect schema as JSON text; null "
                "unless 'debezium-json.schema-include' is true."),
            _fm("ingestion-timestamp", "TIMESTAMP_LTZ(3)",
                "When the connector processed the event ('ts_ms')."),
            _fm("source.timestamp", "TIMESTAMP_LTZ(3)",
                "When the source database made the change ('source.ts_ms')."),
            _fm("source.database", "STRING", "The originating database ('source.db')."),
            _fm("source.schema", "STRING", "The originating database schema ('source.schema')."),
            _fm("source.table", "STRING",
                "The originating table ('source.table', else 'source.collection')."),
            _fm("source.properties", "MAP<STRING, STRING>",
                "Every field of 'source', values as text."),
        ),
        "canal-json": (
            _fm("database", "STRING", "The originating database ('database')."),
            _fm("table", "STRING", "The originating table ('table')."),
            _fm("sql-type", "MAP<STRING, INT>", "JDBC type code of each column ('sqlType')."),
            _fm("pk-names", "ARRAY<STRING>", "Primary key column names ('pkNames')."),
            _fm("ingestion-timestamp", "TIMESTAMP_LTZ(3)",
                "When the connector processed the event ('ts', epoch milliseconds)."),
            _fm("event-timestamp", "TIMESTAMP_LTZ(3)",
                "When the database made the change ('es', epoch milliseconds)."),
        ),
        "maxwell-json": (
            _fm("database", "STRING", "The originating database ('database')."),
            _fm("table", "STRING", "The originating table ('table')."),
            _fm("primary-key-columns", "ARRAY<STRING>",
                "Primary key column names ('primary_key_columns')."),
            _fm("ingestion-timestamp", "TIMESTAMP_LTZ(3)",
                "When the connector processed the event ('ts', epoch seconds)."),
        ),
        "ogg-json": (
            _fm("table", "STRING", "Fully qualified table name ('table')."),
            _fm("primary_keys", "ARRAY<STRING>", "Primary key column names ('primary_keys')."),
            _fm("op_type", "STRING", "The operation: I, U or D ('op_type')."),
            _fm("pos", "STRING", "Position in the source trail file ('pos')."),
            _fm("current_ts", "TIMESTAMP_LTZ(6)",
                "When the formatter processed the operation ('current_ts', UTC)."),
            _fm("op_ts", "TIMESTAMP_LTZ(6)", "When the source made the change ('op_ts', UTC)."),
        ),
    }.items()
}  # fmt: skip

_CHAR = {"STRING", "VARCHAR", "CHAR"}
_BINARY = {"BYTES", "VARBINARY", "BINARY"}
_NUMBER = {"TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL", "FLOAT", "DOUBLE"}
_TIME = {"TIMESTAMP", "TIMESTAMP_LTZ"}
# Declared types a metadata value can be cast to (Flink casts the metadata to the column type).
_CASTABLE = {
    "topic": _CHAR,
    "partition": _NUMBER | _CHAR,
    "headers": {"MAP"},
    "leader-epoch": _NUMBER | _CHAR,
    "offset": _NUMBER | _CHAR,
    "timestamp": _TIME | _CHAR,
    "timestamp-type": _CHAR,
    "__raw_key__": _CHAR | _BINARY,
    "__raw_value__": _CHAR | _BINARY,
}


def _castable_from(source: FlinkType, declared: FlinkType) -> bool:
    """Whether a value of Flink type ``source`` can be cast to ``declared`` (format metadata)."""
    if source.name in ("MAP", "ARRAY"):
        return (
            declared.name == source.name
            and len(declared.children) == len(source.children)
            and all(map(_castable_from, source.children, declared.children))
        )
    for family in (_CHAR, _NUMBER, _TIME):
        if source.name in family:
            return declared.name in family | _CHAR
    return declared.name == source.name


def _castable(key: str, declared: FlinkType) -> bool:
    if declared.name not in _CASTABLE[key]:
        return False
    if key == "headers":
        k, v = declared.children
        return k.name in _CHAR and v.name in _CHAR | _BINARY
    return True


def format_metadata_key(key: str, value_format: str | None) -> MetadataKey | None:
    """The value format's metadata named by ``value.<key>`` (None for any other key)."""
    if value_format is None or not key.startswith("value."):
        return None
    return FORMAT_METADATA.get(value_format, {}).get(key[len("value.") :])


def check_metadata_columns(
    columns: Iterable[Column], *, role: str | None, value_format: str | None = None
) -> None:
    """Validate metadata columns: known keys, castable types, and writability in a sink.

    ``value_format`` names the table's value format, whose own metadata (``value.<key>``) the
    table may declare too.

    Raises:
        KafkaOptionsError: naming the column and the metadata key.
    """
    persisted: dict[str, str] = {}
    for column in columns:
        key = column.metadata_key
        if key is None:
            continue
        format_meta = format_metadata_key(key, value_format)
        meta = METADATA.get(key) or format_meta
        if meta is None:
            own = FORMAT_METADATA.get(value_format or "", {})
            allowed = ", ".join([f"'{k}'" for k in METADATA] + [f"'value.{k}'" for k in own])
            raise KafkaOptionsError(
                f"Invalid metadata key '{key}' in column '{column.name}'. Kafka tables "
                f"{f'in format {value_format!r} ' if own else ''}support the metadata keys "
                f"{allowed}."
            )
        castable = (
            _castable_from(meta.flink_type, column.flink_type)
            if format_meta is not None
            else _castable(key, column.flink_type)
        )
        if not castable:
            raise KafkaOptionsError(
                f"Invalid data type for metadata column '{column.name}': it cannot be declared "
                f"as '{column.flink_type}' because the type must be castable from the metadata "
                f"type '{meta.type}'."
            )
        if column.virtual:
            continue
        if role == "sink" and not meta.writable:
            writable = ", ".join(f"'{m.key}'" for m in METADATA.values() if m.writable)
            raise KafkaOptionsError(
                f"Metadata column '{column.name}' (key '{key}') is read-only, but the sink "
                f"table would write it. Declare it VIRTUAL, or use a writable key: {writable}."
            )
        if role == "sink" and key in persisted:
            raise KafkaOptionsError(
                f"Columns '{persisted[key]}' and '{column.name}' both persist metadata key "
                f"'{key}'; declare one of them VIRTUAL."
            )
        persisted[key] = column.name
