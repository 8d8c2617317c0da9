"""Each table resolved once per run, and the run's admin clients, one per cluster.

A :class:`ResolvedTable` is what every phase of a run takes: the table's client properties merged
with the connection defaults (a ``KafkaResource``), its librdkafka settings per client role with
``properties.client.id.prefix`` applied, its consumer group, and the partitioner class its spec
loaded when it was declared. :class:`KafkaClients` gives every table of a cluster one shared
``AdminClient`` for planning, partitioner lookups and broker settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaOptionsError
from ..options import KafkaTableSpec, client_config
from ..source.admin import DEFAULT_TIMEOUT_S, KafkaAdmin, admin_client

#: The suffix of each client role's ``client.id`` under ``properties.client.id.prefix``.
CLIENT_ID_SUFFIXES = {"consumer": "reader", "producer": "writer", "admin": "admin"}


def merge_properties(spec: KafkaTableSpec, defaults: Mapping[str, str]) -> dict[str, str]:
    """The table's client properties over the connection ``defaults`` (the table wins).

    Raises:
        KafkaOptionsError: neither the table nor the defaults name bootstrap servers.
    """
    merged = {k: v for k, v in defaults.items() if v is not None}
    merged.update(spec.properties)
    if not merged.get("bootstrap.servers"):
        raise KafkaOptionsError(
            f"Table {spec.name or ''!r} has no 'properties.bootstrap.servers' and the "
            f"KafkaResource sets no bootstrap_servers (nor is $KAFKA_BOOTSTRAP_SERVERS set).",
            keys=("properties.bootstrap.servers",),
        )
    return merged


def _role_config(properties: Mapping[str, str], role: str) -> dict[str, Any]:
    config = client_config(properties, role=role)
    prefix = properties.get("client.id.prefix")
    if prefix:
        config["client.id"] = f"{prefix}-{CLIENT_ID_SUFFIXES[role]}"
    return config


@dataclass(frozen=True)
class ResolvedTable:
    """A Kafka table as one run uses it: resolved once, then taken by every phase.

    Example:
        >>> table = resolve_table(spec, {"bootstrap.servers": "127.0.0.1:9092"})  # doctest: +SKIP
        >>> table.consumer["isolation.level"]  # doctest: +SKIP
        'read_committed'
    """

    name: str
    spec: KafkaTableSpec
    #: Client properties (``properties.*`` without the prefix), connection defaults merged.
    properties: Mapping[str, str]
    #: librdkafka settings of the consumers that read the table.
    consumer: Mapping[str, Any]
    #: librdkafka settings of the producers that write the table.
    producer: Mapping[str, Any]
    #: librdkafka settings of the admin client of the table's cluster.
    admin: Mapping[str, Any]
    #: The consumer group: ``properties.group.id`` or Flink's default ``KafkaSource-<table>``.
    group_id: str | None = None
    #: Keys of :attr:`admin` that identify the cluster (tables that share them share a client).
    cluster_key: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def topic(self) -> str:
        """The table's single topic (a sink's)."""
        return self.spec.topics[0]

    @property
    def bootstrap_servers(self) -> str:
        """The cluster's bootstrap servers."""
        return self.properties["bootstrap.servers"]

    @property
    def commit_offsets(self) -> bool:
        """``properties.commit.offsets.on.checkpoint``: commit the run's offsets to the group."""
        return self.spec.commit_offsets

    @property
    def partitioner_class(self) -> type | None:
        """The user ``sink.partitioner`` class, loaded once when the table was declared."""
        return self.spec.partitioner_class


def resolve_table(
    spec: KafkaTableSpec, defaults: Mapping[str, str], name: str | None = None
) -> ResolvedTable:
    """Resolve ``spec`` for one run against the connection ``defaults``.

    Args:
        spec: the table.
        defaults: client properties every table gets unless it sets them (a ``KafkaResource``'s
            properties, with ``bootstrap.servers``).
        name: the table's name in the run (a source's name, the asset's); defaults to the
            spec's own name.

    Raises:
        KafkaOptionsError: no bootstrap servers, or a client property librdkafka cannot honour.
    """
    properties = merge_properties(spec, defaults)
    admin = _role_config(properties, "admin")
    label = name or spec.name or ",".join(spec.topics) or str(spec.topic_pattern)
    return ResolvedTable(
        name=label,
        spec=spec,
        properties=properties,
        consumer=_role_config(properties, "consumer"),
        producer=_role_config(properties, "producer"),
        admin=admin,
        group_id=spec.effective_group_id,
        cluster_key=tuple(sorted((k, str(v)) for k, v in admin.items())),
    )


class KafkaClients:
    """The admin clients of one run (or one sensor tick, one check): one per cluster.

    Args:
        timeout_s: how long one request, with its retries, may take.

    Example:
        >>> clients = KafkaClients()
        >>> clients.admin(table).end_offsets([("orders", 0)])  # doctest: +SKIP
        {('orders', 0): 42}
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._clients: dict[tuple[tuple[str, str], ...], Any] = {}

    def admin(self, table: ResolvedTable) -> KafkaAdmin:
        """An admin view of ``table``: its group and isolation level over its cluster's client."""
        client = self._clients.get(table.cluster_key)
        if client is None:
            client = self._clients[table.cluster_key] = admin_client(table.admin)
        return KafkaAdmin(
            table.properties, group_id=table.group_id, client=client, timeout_s=self.timeout_s
        )

    def clear(self) -> None:
        """Drop every client (they close once nothing else holds them)."""
        self._clients.clear()

    def forget(self, table: ResolvedTable) -> None:
        """Drop the client of ``table``'s cluster: the next :meth:`admin` builds a new one.

        For long-lived holders (a code server's sensors) after a failed request: an admin
        client whose group-coordinator requests timed out while the cluster was down can keep
        failing them after it is back.
        """
        self._clients.pop(table.cluster_key, None)
