"""Kafka table options: Flink's option keys, validated into one typed :class:`KafkaTableSpec`."""

from ._properties import client_config, redact
from ._spec import FormatSpec, KafkaTableSpec, parse_specific_offsets
from ._table import (
    OPTIONS,
    BoundedMode,
    ConfigOption,
    DeliveryGuarantee,
    StartupMode,
    ValueFieldsInclude,
    parse_duration_ms,
)
from ._types import Column, FlinkType, parse_flink_type, spark_type, struct_type

__all__ = [
    "OPTIONS",
    "BoundedMode",
    "Column",
    "ConfigOption",
    "DeliveryGuarantee",
    "FlinkType",
    "FormatSpec",
    "KafkaTableSpec",
    "StartupMode",
    "ValueFieldsInclude",
    "client_config",
    "parse_duration_ms",
    "parse_flink_type",
    "parse_specific_offsets",
    "redact",
    "spark_type",
    "struct_type",
]
