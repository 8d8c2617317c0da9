"""Dagster resources: the Kafka connection shared by every table of a code location."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster import AssetKey, ConfigurableResource
from pydantic import Field

from .options import KafkaTableSpec, redact
from .run.tables import ResolvedTable, merge_properties, resolve_table

if TYPE_CHECKING:  # pragma: no cover
    from .checks import KafkaAssetCheck
    from .run import StreamingRun


class KafkaResource(ConfigurableResource):
    """Connection defaults for Kafka tables: bootstrap servers and client properties.

    A table's own ``properties.*`` win over these, so one resource can point every table of a
    code location at a cluster (e.g. from ``EnvVar("KAFKA_BOOTSTRAP_SERVERS")``) while tables
    keep their own group ids. Property values are never logged or shown (secrets are redacted).

    Example:
        >>> KafkaResource(bootstrap_servers="127.0.0.1:9092",
        ...               properties={"security.protocol": "PLAINTEXT"})
    """

    bootstrap_servers: str | None = Field(
        default=None,
        description="Comma-separated host:port list; used when a table sets no "
        "'properties.bootstrap.servers'.",
    )
    properties: dict[str, str] = Field(
        default_factory=dict,
        description="Kafka client settings (Flink's 'properties.*' without the prefix) applied "
        "to every table unless the table sets them itself.",
    )

    def connection_defaults(self) -> dict[str, str]:
        """The client properties every table gets unless it sets them: ``properties`` plus
        ``bootstrap.servers`` (``bootstrap_servers``, else :meth:`default_bootstrap_servers`)."""
        defaults = dict(self.properties)
        servers = self.bootstrap_servers or self.default_bootstrap_servers()
        if servers:
            defaults["bootstrap.servers"] = servers
        return defaults

    def client_properties(self, spec: KafkaTableSpec) -> dict[str, str]:
        """The effective client properties of ``spec``: resource defaults, then the table's own.

        Raises:
            KafkaOptionsError: neither the table nor the resource names bootstrap servers.
        """
        return merge_properties(spec, self.connection_defaults())

    def resolve(self, spec: KafkaTableSpec, name: str | None = None) -> ResolvedTable:
        """``spec`` resolved against this connection: merged properties, per-role client
        settings, group id (see :class:`~dagster_kafka_flinklike.run.ResolvedTable`).

        Raises:
            KafkaOptionsError: no bootstrap servers, or a client setting librdkafka rejects.
        """
        return resolve_table(spec, self.connection_defaults(), name)

    def default_bootstrap_servers(self) -> str | None:
        """Servers used when ``bootstrap_servers`` is unset: ``$KAFKA_BOOTSTRAP_SERVERS``.

        Resolved at run time, so a code location loads before the cluster is reachable.
        """
        return os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip() or None

    def run(
        self,
        context: Any,
        body: Callable[[StreamingRun], Any],
        *,
        sources: Mapping[str, KafkaTableSpec],
        sink: KafkaTableSpec | None = None,
        asset_key: AssetKey | str | Sequence[str] | None = None,
        checks: Sequence[KafkaAssetCheck] = (),
        spark_resource_key: str = "pyspark",
    ) -> Iterator[Any]:
        """Materialize one asset of a ``@multi_asset`` of your own over Kafka tables, as
        dagster-sling's ``replicate(context)``: yields its ``MaterializeResult`` and its checks'
        results.

        ``body(run)`` reads the ``sources`` (``run.read(name, spec)``: a Spark DataFrame from
        the last checkpoint) and writes (``run.write(sink, frame)``); the run then commits the
        new checkpoint, which the next materialization resumes from, exactly as a
        ``@kafka_streaming_asset`` does; the asset needs the Spark resource too
        (``spark_resource_key``). A run that fails commits nothing. ``asset_key`` names
        the asset (default: the context's only asset); ``checks`` (their specs declared on the
        asset with ``check.spec(key)``) gate the commit or follow it as on a streaming asset.

        Example:
            >>> @multi_asset(specs=[AssetSpec("revenue")])  # doctest: +SKIP
            ... def revenue(context, kafka: KafkaResource, pyspark: SparkResource):
            ...     yield from kafka.run(
            ...         context,
            ...         lambda run: run.write(sink, run.read("orders", orders).groupBy(...)...),
            ...         sources={"orders": orders},
            ...         sink=sink,
            ...     )

        Raises:
            KafkaConnectorError: the run failed (its checkpoint stays).
        """
        from .checks import selected_checks
        from .materialization import KafkaMaterialization, StreamingTables

        key = AssetKey.from_coercible(asset_key) if asset_key is not None else context.asset_key
        tables = StreamingTables(dict(sources), sink, kafka_resource_key="", checks=tuple(checks))
        selected = selected_checks(context, key, checks)
        materialization = KafkaMaterialization(
            context, key, tables, selected, spark_resource_key=spark_resource_key, kafka=self
        )
        return materialization.events(body)

    def __repr__(self) -> str:
        return (
            f"KafkaResource(bootstrap_servers={self.bootstrap_servers!r}, "
            f"properties={redact(self.properties)!r})"
        )
