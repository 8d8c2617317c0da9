"""dagster-kafka-flinklike: Apache Flink's Kafka connector semantics for Dagster and PySpark.

Declare Kafka tables with Flink's option names, read and write them from Spark queries in
Dagster assets, with offsets checkpoints, delivery guarantees and dirty-data tolerance.

The public names load on first use: Spark's Python workers import only the reader and writer
modules, not Dagster (about a CPU second and tens of MiB per worker).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .asset_decorator import kafka_stateful_asset, kafka_streaming_asset
    from .changelog import ROW_KIND, latest_per_key
    from .checks import (
        ConsumerLagCheck,
        DirtyDataCheck,
        HangingTransactionsCheck,
        KafkaAssetCheck,
        LateDataCheck,
        TransactionTimeoutCheck,
        build_kafka_asset_checks,
    )
    from .components import (
        KafkaPipelineComponent,
        build_data_ingestion_definitions,
        build_flink_sql_definitions,
    )
    from .errors import (
        BlockingCheckError,
        DeliveryError,
        DeserializationError,
        EmbeddedKafkaError,
        EmbeddedSparkConnectError,
        FlinkSqlError,
        KafkaAuthenticationError,
        KafkaClientError,
        KafkaComponentError,
        KafkaConnectorError,
        KafkaErrorKind,
        KafkaOptionsError,
        KafkaOptionsWarning,
        KafkaYamlError,
        OffsetsError,
        SchemaRegistryClientError,
        SparkConnectError,
        TransactionError,
    )
    from .ingestion import DataIngestionPipeline, parse_data_ingestion
    from .io_manager import KafkaIOManager
    from .options import (
        BoundedMode,
        Column,
        DeliveryGuarantee,
        EventTime,
        KafkaTableSpec,
        StartupMode,
        TransactionNamingStrategy,
        TransactionScope,
        ValueFieldsInclude,
    )
    from .resources import KafkaResource
    from .run import StreamingRun
    from .sensors import (
        build_kafka_discovery_sensor,
        build_kafka_discovery_sensors,
        build_kafka_new_data_sensor,
    )
    from .source_assets import build_kafka_source_assets
    from .spark import SparkResource
    from .sql import FlinkSqlPipeline, parse_flink_sql, plan_flink_sql
    from .state import OffsetsCheckpoint
    from .translator import KafkaTranslator, kafka_table_metadata

#: Each public name and the module (relative to this package) that defines it.
_EXPORTS = {
    "BlockingCheckError": ".errors",
    "BoundedMode": ".options",
    "Column": ".options",
    "ConsumerLagCheck": ".checks",
    "DeliveryError": ".errors",
    "DeliveryGuarantee": ".options",
    "DeserializationError": ".errors",
    "DirtyDataCheck": ".checks",
    "EmbeddedKafkaError": ".errors",
    "EmbeddedSparkConnectError": ".errors",
    "FlinkSqlError": ".errors",
    "HangingTransactionsCheck": ".checks",
    "KafkaAssetCheck": ".checks",
    "KafkaAuthenticationError": ".errors",
    "KafkaClientError": ".errors",
    "KafkaComponentError": ".errors",
    "KafkaConnectorError": ".errors",
    "KafkaErrorKind": ".errors",
    "KafkaIOManager": ".io_manager",
    "KafkaOptionsError": ".errors",
    "KafkaOptionsWarning": ".errors",
    "KafkaYamlError": ".errors",
    "KafkaPipelineComponent": ".components",
    "KafkaResource": ".resources",
    "KafkaTranslator": ".translator",
    "LateDataCheck": ".checks",
    "KafkaTableSpec": ".options",
    "OffsetsCheckpoint": ".state",
    "OffsetsError": ".errors",
    "SchemaRegistryClientError": ".errors",
    "SparkConnectError": ".errors",
    "SparkResource": ".spark",
    "StartupMode": ".options",
    "StreamingRun": ".run",
    "TransactionError": ".errors",
    "TransactionTimeoutCheck": ".checks",
    "TransactionNamingStrategy": ".options",
    "TransactionScope": ".options",
    "ValueFieldsInclude": ".options",
    "build_kafka_asset_checks": ".checks",
    "build_kafka_discovery_sensor": ".sensors",
    "build_kafka_discovery_sensors": ".sensors",
    "build_kafka_new_data_sensor": ".sensors",
    "build_kafka_source_assets": ".source_assets",
    "kafka_streaming_asset": ".asset_decorator",
    "kafka_stateful_asset": ".asset_decorator",
    "EventTime": ".options",
    "kafka_table_metadata": ".translator",
    "parse_flink_sql": ".sql",
    "latest_per_key": ".changelog",
    "ROW_KIND": ".changelog",
    "plan_flink_sql": ".sql",
    "FlinkSqlPipeline": ".sql",
    "build_flink_sql_definitions": ".components",
    "build_data_ingestion_definitions": ".components",
    "DataIngestionPipeline": ".ingestion",
    "parse_data_ingestion": ".ingestion",
}

__all__ = [
    "ROW_KIND",
    "BlockingCheckError",
    "BoundedMode",
    "Column",
    "ConsumerLagCheck",
    "DataIngestionPipeline",
    "DeliveryError",
    "DeliveryGuarantee",
    "DeserializationError",
    "DirtyDataCheck",
    "EmbeddedKafkaError",
    "EmbeddedSparkConnectError",
    "EventTime",
    "FlinkSqlError",
    "FlinkSqlPipeline",
    "HangingTransactionsCheck",
    "KafkaAssetCheck",
    "KafkaAuthenticationError",
    "KafkaClientError",
    "KafkaComponentError",
    "KafkaConnectorError",
    "KafkaErrorKind",
    "KafkaIOManager",
    "KafkaOptionsError",
    "KafkaOptionsWarning",
    "KafkaPipelineComponent",
    "KafkaResource",
    "KafkaTableSpec",
    "KafkaTranslator",
    "KafkaYamlError",
    "LateDataCheck",
    "OffsetsCheckpoint",
    "OffsetsError",
    "SchemaRegistryClientError",
    "SparkConnectError",
    "SparkResource",
    "StartupMode",
    "StreamingRun",
    "TransactionError",
    "TransactionNamingStrategy",
    "TransactionScope",
    "TransactionTimeoutCheck",
    "ValueFieldsInclude",
    "__version__",
    "build_data_ingestion_definitions",
    "build_flink_sql_definitions",
    "build_kafka_asset_checks",
    "build_kafka_discovery_sensor",
    "build_kafka_discovery_sensors",
    "build_kafka_new_data_sensor",
    "build_kafka_source_assets",
    "kafka_stateful_asset",
    "kafka_streaming_asset",
    "kafka_table_metadata",
    "latest_per_key",
    "parse_data_ingestion",
    "parse_flink_sql",
    "plan_flink_sql",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
