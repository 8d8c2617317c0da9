"""The embedded development services on 127.0.0.1: a real Apache Kafka, a real Schema Registry,
a Spark Connect server and a Spark standalone cluster.

This package is the only place that knows about local services. Everything else takes bootstrap
servers and registry URLs as configuration; the demo and the tests get them from
:func:`resolve_bootstrap_servers` / :func:`ensure_local_kafka` and
:func:`resolve_schema_registry_url` / :func:`ensure_local_schema_registry` and
:func:`resolve_spark_remote` / :func:`ensure_local_spark_connect`, which honour
``$KAFKA_BOOTSTRAP_SERVERS``, ``$SCHEMA_REGISTRY_URL`` and ``$SPARK_REMOTE`` first.

Example:
    >>> from pathlib import Path
    >>> from dagster_kafka_flinklike.local import (
    ...     EmbeddedKafka, EmbeddedKafkaCluster, EmbeddedSchemaRegistry
    ... )
    >>> with EmbeddedKafka(Path("/tmp/kafka")) as kafka:  # doctest: +SKIP
    ...     print(kafka.bootstrap_servers)
    127.0.0.1:41234
    >>> with EmbeddedKafkaCluster(Path("/tmp/kafka3"), nodes=3) as cluster:  # doctest: +SKIP
    ...     print(cluster.bootstrap_servers)
    127.0.0.1:41236,127.0.0.1:41238,127.0.0.1:41240
    >>> with EmbeddedSchemaRegistry(Path("/tmp/sr")) as registry:  # doctest: +SKIP
    ...     print(registry.url)
    http://127.0.0.1:41235/apis/ccompat/v7
"""

from __future__ import annotations

from ..errors import (
    EmbeddedKafkaError,
    EmbeddedSchemaRegistryError,
    EmbeddedServiceError,
    EmbeddedSparkClusterError,
    EmbeddedSparkConnectError,
)
from ._broker import (
    EmbeddedKafka,
    default_home,
    ensure_local_kafka,
    free_port,
    render_server_properties,
    resolve_bootstrap_servers,
)
from ._cluster import EmbeddedKafkaCluster
from ._registry import (
    EmbeddedSchemaRegistry,
    ensure_local_schema_registry,
    resolve_schema_registry_url,
)
from ._security import KafkaListenerSecurity
from ._service import JvmService
from ._spark_cluster import EmbeddedSparkCluster
from ._spark_connect import (
    EmbeddedSparkConnect,
    ensure_local_spark_connect,
    resolve_spark_remote,
)
from .fetch import (
    KAFKA_VERSION,
    SCHEMA_REGISTRY_VERSION,
    default_cache_dir,
    fetch_kafka,
    fetch_schema_registry,
)

__all__ = [
    "KAFKA_VERSION",
    "SCHEMA_REGISTRY_VERSION",
    "EmbeddedKafka",
    "EmbeddedKafkaCluster",
    "EmbeddedKafkaError",
    "EmbeddedSchemaRegistry",
    "EmbeddedSchemaRegistryError",
    "EmbeddedServiceError",
    "EmbeddedSparkCluster",
    "EmbeddedSparkClusterError",
    "EmbeddedSparkConnect",
    "EmbeddedSparkConnectError",
    "JvmService",
    "KafkaListenerSecurity",
    "default_cache_dir",
    "default_home",
    "ensure_local_kafka",
    "ensure_local_schema_registry",
    "ensure_local_spark_connect",
    "fetch_kafka",
    "fetch_schema_registry",
    "free_port",
    "render_server_properties",
    "resolve_bootstrap_servers",
    "resolve_schema_registry_url",
    "resolve_spark_remote",
]
