"""dagster-kafka-flinklike: Apache Flink's Kafka connector semantics for Dagster and PySpark.

Declare Kafka tables with Flink's option names, read and write them from Spark queries in
Dagster assets, with offsets checkpoints, delivery guarantees and dirty-data tolerance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from .state import OffsetsCheckpoint
from .version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .spark import SparkResource

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
    # SparkResource imports pyspark: load it only when asked for.
    if name == "SparkResource":
        from .spark import SparkResource

        return SparkResource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
