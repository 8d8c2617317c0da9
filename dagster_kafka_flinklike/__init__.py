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
    from .assets import kafka_streaming_asset
    from .errors import (
        DeliveryError,
        DeserializationError,
        EmbeddedKafkaError,
        KafkaConnectorError,
        KafkaOptionsError,
        OffsetsError,
        TransactionError,
    )
    from .io_manager import KafkaIOManager, kafka_table_metadata
    from .options import (
        BoundedMode,
        Column,
        DeliveryGuarantee,
        KafkaTableSpec,
        StartupMode,
        ValueFieldsInclude,
    )
    from .resources import KafkaResource
    from .spark import SparkResource
    from .state import OffsetsCheckpoint

#: Each public name and the module (relative to this package) that defines it.
_EXPORTS = {
    "BoundedMode": ".options",
    "Column": ".options",
    "DeliveryError": ".errors",
    "DeliveryGuarantee": ".options",
    "DeserializationError": ".errors",
    "EmbeddedKafkaError": ".errors",
    "KafkaConnectorError": ".errors",
    "KafkaIOManager": ".io_manager",
    "KafkaOptionsError": ".errors",
    "KafkaResource": ".resources",
    "KafkaTableSpec": ".options",
    "OffsetsCheckpoint": ".state",
    "OffsetsError": ".errors",
    "SparkResource": ".spark",
    "StartupMode": ".options",
    "TransactionError": ".errors",
    "ValueFieldsInclude": ".options",
    "kafka_streaming_asset": ".assets",
    "kafka_table_metadata": ".io_manager",
}

__all__ = [
    "BoundedMode",
    "Column",
    "DeliveryError",
    "DeliveryGuarantee",
    "DeserializationError",
    "EmbeddedKafkaError",
    "KafkaConnectorError",
    "KafkaIOManager",
    "KafkaOptionsError",
    "KafkaResource",
    "KafkaTableSpec",
    "OffsetsCheckpoint",
    "OffsetsError",
    "SparkResource",
    "StartupMode",
    "TransactionError",
    "ValueFieldsInclude",
    "__version__",
    "kafka_streaming_asset",
    "kafka_table_metadata",
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
