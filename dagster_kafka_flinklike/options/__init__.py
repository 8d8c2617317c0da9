"""Kafka table options: Flink's option keys, validated into one typed :class:`KafkaTableSpec`.

Also the Flink → Spark type mapping, the ``properties.*`` → librdkafka translation and the
small grammars of option values (header filter, partitioner class path). It imports nothing else
of the package but its errors; the Flink SQL front end (:mod:`dagster_kafka_flinklike.sql`) is
built on it.
"""

from ..errors import KafkaOptionsError
from ._avro import avro_schema
from ._docs import render_options_reference
from ._formats import (
    CHANGELOG_FORMATS,
    FORMAT_OPTIONS,
    SUPPORTED_FORMATS,
    FormatSpec,
    parse_fixed_types,
    resolve_format,
    spark_charset,
)
from ._header_filter import HeaderCondition, HeaderFilter, parse_header_filter
from ._lists import split_top_level, top_level_spans
from ._metadata import (
    ACCUMULATIONS,
    FORMAT_METADATA,
    METADATA,
    RETRACTIONS,
    ROW_KIND,
    ROW_KINDS,
    MetadataKey,
)
from ._partitioner import BUILT_IN as BUILT_IN_PARTITIONERS
from ._partitioner import check_partitioner_option, load_partitioner
from ._properties import (
    REDACTED,
    client_config,
    is_secret,
    redact,
    role_config,
    translate_properties,
)
from ._rules import CSV_NESTED, csv_column_types, prefixes_overlap
from ._spec import KafkaTableSpec, check_sink_not_read, parse_specific_offsets
from ._table import (
    CONNECTORS,
    OPTIONS,
    BoundedMode,
    ConfigOption,
    DeliveryGuarantee,
    StartupMode,
    TransactionNamingStrategy,
    TransactionScope,
    ValueFieldsInclude,
    did_you_mean,
    parse_duration_ms,
)
from ._types import (
    Column,
    FlinkType,
    FlinkTypeError,
    flink_type_of,
    parse_flink_type,
    row_type,
    spark_type,
    struct_type,
)
from ._watermark import EventTime

__all__ = [
    "ACCUMULATIONS",
    "BUILT_IN_PARTITIONERS",
    "CHANGELOG_FORMATS",
    "CONNECTORS",
    "CSV_NESTED",
    "FORMAT_METADATA",
    "FORMAT_OPTIONS",
    "METADATA",
    "OPTIONS",
    "REDACTED",
    "RETRACTIONS",
    "ROW_KIND",
    "ROW_KINDS",
    "SUPPORTED_FORMATS",
    "BoundedMode",
    "Column",
    "ConfigOption",
    "DeliveryGuarantee",
    "EventTime",
    "FlinkType",
    "FlinkTypeError",
    "FormatSpec",
    "HeaderCondition",
    "HeaderFilter",
    "KafkaOptionsError",
    "KafkaTableSpec",
    "MetadataKey",
    "StartupMode",
    "TransactionNamingStrategy",
    "TransactionScope",
    "ValueFieldsInclude",
    "avro_schema",
    "check_partitioner_option",
    "check_sink_not_read",
    "client_config",
    "csv_column_types",
    "did_you_mean",
    "flink_type_of",
    "is_secret",
    "load_partitioner",
    "parse_duration_ms",
    "parse_fixed_types",
    "parse_flink_type",
    "parse_header_filter",
    "parse_specific_offsets",
    "prefixes_overlap",
    "redact",
    "render_options_reference",
    "resolve_format",
    "role_config",
    "row_type",
    "spark_charset",
    "spark_type",
    "split_top_level",
    "struct_type",
    "top_level_spans",
    "translate_properties",
]
