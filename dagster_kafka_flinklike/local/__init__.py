"""The embedded development Kafka broker: a real Apache Kafka fetched and run on 127.0.0.1.

This package is the only place that knows about a local broker. Everything else takes bootstrap
servers as configuration; the demo and the tests get them from :func:`resolve_bootstrap_servers`
or :func:`ensure_local_kafka`, which honour ``$KAFKA_BOOTSTRAP_SERVERS`` first.

Example:
    >>> from pathlib import Path
    >>> from dagster_kafka_flinklike.local import EmbeddedKafka
    >>> with EmbeddedKafka(Path("/tmp/kafka")) as kafka:  # doctest: +SKIP
    ...     print(kafka.bootstrap_servers)
    127.0.0.1:41234
"""

from __future__ import annotations

from ..errors import EmbeddedKafkaError
from ._broker import (
    EmbeddedKafka,
    default_home,
    ensure_local_kafka,
    free_port,
    render_server_properties,
    resolve_bootstrap_servers,
)
from ._fetch import KAFKA_VERSION, default_cache_dir, fetch_kafka

__all__ = [
    "KAFKA_VERSION",
    "EmbeddedKafka",
    "EmbeddedKafkaError",
    "default_cache_dir",
    "default_home",
    "ensure_local_kafka",
    "fetch_kafka",
    "free_port",
    "render_server_properties",
    "resolve_bootstrap_servers",
]
