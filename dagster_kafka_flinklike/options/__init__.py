"""Kafka table options: Flink's option keys, validated into one typed :class:`KafkaTableSpec`.

Also the Flink SQL front end (:func:`parse_flink_sql`), the Flink → Spark type mapping and the
``properties.*`` → librdkafka translation.
"""

from ..errors import FlinkSqlError, KafkaOptionsError
from ._ddl import (
    CreateTable,
    CreateView,
    InsertInto,
    SetOption,
    Statement,
    Watermark,
    parse_flink_sql,
)
from ._docs import render_options_reference
from ._formats import FORMAT_OPTIONS, SUPPORTED_FORMATS, FormatSpec
from ._header_filter import HeaderCondition, HeaderFilter, parse_header_filter
from ._metadata import METADATA, MetadataKey
from ._partitioner import BUILT_IN as BUILT_IN_PARTITIONERS
from ._partitioner import check_partitioner_option, load_partitioner
from ._properties import client_config, is_secret, redact, role_config, translate_properties
from ._spec import KafkaTableSpec, parse_specific_offsets
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
    "BUILT_IN_PARTITIONERS",
    "FORMAT_OPTIONS",
    "METADATA",
    "OPTIONS",
    "SUPPORTED_FORMATS",
    "BoundedMode",
    "Column",
    "ConfigOption",
    "CreateTable",
    "CreateView",
    "DeliveryGuarantee",
    "FlinkSqlError",
    "FlinkType",
    "FormatSpec",
    "HeaderCondition",
    "HeaderFilter",
    "InsertInto",
    "KafkaOptionsError",
    "KafkaTableSpec",
    "MetadataKey",
    "SetOption",
    "StartupMode",
    "Statement",
    "ValueFieldsInclude",
    "Watermark",
    "check_partitioner_option",
    "client_config",
    "is_secret",
    "load_partitioner",
    "parse_duration_ms",
    "parse_flink_sql",
    "parse_flink_type",
    "parse_header_filter",
    "parse_specific_offsets",
    "redact",
    "render_options_reference",
    "role_config",
    "spark_type",
    "struct_type",
    "translate_properties",
]
