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


def _castable(key: str, declared: FlinkType) -> bool:
    if declared.name not in _CASTABLE[key]:
        return False
    if key == "headers":
        k, v = declared.children
        return k.name in _CHAR and v.name in _CHAR | _BINARY
    return True


def check_metadata_columns(columns: Iterable[Column], *, role: str | None) -> None:
    """Validate metadata columns: known keys, castable types, and writability in a sink.

    Raises:
        KafkaOptionsError: naming the column and the metadata key.
    """
    persisted: dict[str, str] = {}
    for column in columns:
        key = column.metadata_key
        if key is None:
            continue
        meta = METADATA.get(key)
        if meta is None:
            allowed = ", ".join(f"'{k}'" for k in METADATA)
            raise KafkaOptionsError(
                f"Invalid metadata key '{key}' in column '{column.name}'. Kafka tables support "
                f"the metadata keys {allowed}."
            )
        if not _castable(key, column.flink_type):
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
