"""The translator: how a Kafka table appears in Dagster (asset key, group, kinds, metadata).

``KafkaTranslator.get_asset_spec(table)`` is the one override point, as in dagster-sling and
dagster-dbt: a streaming asset depends on the specs of its source tables, the source topics are
external observable assets (:func:`build_kafka_source_assets`), and the sink topic is what the
streaming asset materializes, so the asset graph reads topic → asset → topic. A table whose
asset key equals a streaming asset's key (by default: the table's name and the asset's name)
is that asset, so a pipeline of streaming assets links up.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DataVersion,
    MetadataValue,
    ObserveResult,
    TableColumn,
    TableSchema,
    multi_observable_source_asset,
)

from .errors import KafkaConnectorError
from .options import KafkaTableSpec, is_secret

#: Dagster's standard metadata keys the translator fills.
COLUMN_SCHEMA = "dagster/column_schema"
TABLE_NAME = "dagster/table_name"
ROW_COUNT = "dagster/row_count"
URI = "dagster/uri"
#: The kind every Kafka topic asset carries (the UI shows its icon).
KIND = "kafka"


def table_label(table: KafkaTableSpec) -> str:
    """What the table reads or writes: its topic(s) or its topic pattern."""
    if table.topic_pattern is not None:
        return table.topic_pattern
    return ";".join(table.topics)


def column_schema(table: KafkaTableSpec) -> TableSchema:
    """The declared columns, exactly, as Dagster's table schema (type: the Flink SQL type).

    A changelog table's frames carry a ``_rowkind`` column too, but the table has none (as in
    Flink, where the row kind is not part of the schema), so it is not listed."""
    columns = []
    for c in table.columns:
        kind = "metadata" if c.is_metadata else "computed" if c.is_computed else None
        description = c.comment
        if kind is not None:
            description = f"{kind} column" + (f": {c.comment}" if c.comment else "")
        columns.append(TableColumn(name=c.name, type=c.type, description=description))
    return TableSchema(columns=columns)


def table_metadata(table: KafkaTableSpec) -> dict[str, Any]:
    """Standard Dagster table metadata of a Kafka table: name, column schema, and its URI when
    the table names its cluster."""
    out: dict[str, Any] = {TABLE_NAME: table_label(table)}
    if table.columns:
        out[COLUMN_SCHEMA] = MetadataValue.table_schema(column_schema(table))
    servers = table.bootstrap_servers
    if servers and table.topics and len(table.topics) == 1:
        out[URI] = MetadataValue.url(f"kafka://{servers.split(',')[0].strip()}/{table.topics[0]}")
    return out


class KafkaTranslator:
    """Maps a Kafka table to the Dagster asset that stands for its topic.

    Override :meth:`get_asset_spec` (call ``super()`` and ``replace_attributes`` /
    ``merge_attributes`` on the result) to change keys, groups, owners or tags of every Kafka
    asset at once; give the translator to ``@kafka_streaming_asset(translator=...)`` and to
    :func:`build_kafka_source_assets`.

    Example:
        >>> class Prefixed(KafkaTranslator):
        ...     def get_asset_spec(self, table):
        ...         spec = super().get_asset_spec(table)
        ...         return spec.replace_attributes(key=spec.key.with_prefix("kafka"))
    """

    def get_asset_spec(self, table: KafkaTableSpec) -> AssetSpec:
        """The asset of ``table``'s topic: key (the table's name, else its topic or a
        sanitized topic pattern), kind ``kafka``, standard table metadata and, when the table
        sets no secret option, its declaration (so ``KafkaIOManager`` can load it)."""
        from .io_manager import kafka_table_metadata

        if table.name:
            key = AssetKey([table.name])
        elif table.topic_pattern is not None:
            key = AssetKey(["topic-pattern", re.sub(r"[^\w.-]+", "_", table.topic_pattern)])
        else:
            key = AssetKey([table_label(table)])
        metadata = table_metadata(table)
        if not any(is_secret(k) for k in table.options):
            metadata.update(kafka_table_metadata(table))
        kind = "topic pattern" if table.topic_pattern is not None else "topic"
        return AssetSpec(
            key=key,
            kinds={KIND},
            description=f"Kafka {kind} {table_label(table)!r} ({table.value_format.name}).",
            metadata=metadata,
        )


def streaming_asset_attributes(spec: AssetSpec) -> dict[str, Any]:
    """What ``@kafka_streaming_asset`` takes from the translated spec of its sink table: the key
    (as ``name`` and ``key_prefix``), group, owners, tags (kinds aside) and metadata, so a
    translator that renames, groups or tags topics does the same to the assets writing them."""
    kinds = "dagster/kind/"
    return {
        "name": spec.key.path[-1],
        "key_prefix": list(spec.key.path[:-1]) or None,
        "group_name": spec.group_name,
        "owners": list(spec.owners) or None,
        "tags": {k: v for k, v in spec.tags.items() if not k.startswith(kinds)} or None,
        "metadata": dict(spec.metadata) or None,
    }


def _digest(offsets: Mapping[str, int]) -> str:
    text = ",".join(f"{k}={v}" for k, v in sorted(offsets.items()))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def build_kafka_source_assets(
    assets: Sequence[AssetsDefinition],
    *,
    translator: KafkaTranslator | None = None,
    kafka_resource_key: str = "kafka",
    name: str = "kafka_source_topics",
    group_name: str | None = None,
) -> list[AssetsDefinition]:
    """External, observable assets for the source topics of streaming ``assets``.

    One asset per distinct source table that none of ``assets`` materializes (a table another
    streaming asset writes is that asset). Observing one records its partitions, end offsets and
    record count, with the end offsets as the data version, so the UI shows when a topic got new
    data. ``group_name`` puts the topics whose spec names no group into that group.

    Example:
        >>> defs = Definitions(assets=[channel_revenue,  # doctest: +SKIP
        ...                            *build_kafka_source_assets([channel_revenue])])

    Raises:
        KafkaConnectorError: an asset was not built by ``@kafka_streaming_asset``.
    """
    from .asset_decorator import streaming_tables

    translator = translator or KafkaTranslator()
    produced = {key for a in assets for key in a.keys}
    tables: dict[AssetKey, KafkaTableSpec] = {}
    for asset in assets:
        for spec in streaming_tables(asset).sources.values():
            key = translator.get_asset_spec(spec).key
            if key not in produced:
                tables.setdefault(key, spec)
    if not tables:
        return []
    specs = [translator.get_asset_spec(spec) for spec in tables.values()]
    if group_name is not None:
        specs = [s if s.group_name else s.replace_attributes(group_name=group_name) for s in specs]

    with warnings.catch_warnings():  # observable external assets are "beta" in Dagster 1.13
        warnings.simplefilter("ignore", BetaWarning)
        decorate = multi_observable_source_asset(
            specs=specs, name=name, can_subset=True, required_resource_keys={kafka_resource_key}
        )

    @decorate
    def _observe(context):  # type: ignore[no-untyped-def]
        # (unannotated: Dagster checks the annotation's object, and annotations are strings)
        from .run import KafkaClients

        kafka = getattr(context.resources, kafka_resource_key)
        clients = KafkaClients(timeout_s=15.0)
        for key in sorted(context.selected_asset_keys, key=str):
            yield observe_topic(key, tables[key], kafka, clients)

    return [_observe]


def observe_topic(key: AssetKey, table: KafkaTableSpec, kafka: Any, clients: Any) -> ObserveResult:
    """An observation of a source topic: partitions, end offsets, records, data version.

    Raises:
        KafkaConnectorError: the cluster did not answer (the observation fails with why).
    """
    try:
        resolved = kafka.resolve(table)
        admin = clients.admin(resolved)
        found = admin.discover(table.topics, table.topic_pattern)
        partitions = [(t, p) for t, n in found.items() for p in range(n)]
        ends = admin.end_offsets(partitions)
        starts = admin.beginning_offsets(partitions)
    except KafkaConnectorError:
        raise
    except Exception as exc:
        raise KafkaConnectorError(
            f"Could not observe Kafka table {table_label(table)!r}: {exc}"
        ) from exc
    end_offsets = {f"{t}-{p}": o for (t, p), o in sorted(ends.items())}
    return ObserveResult(
        asset_key=key,
        metadata={
            "partitions": len(partitions),
            "records": sum(ends[tp] - starts[tp] for tp in partitions),
            "endOffsets": MetadataValue.json(end_offsets),
        },
        data_version=DataVersion(_digest(end_offsets)),
    )


__all__ = ["KafkaTranslator", "build_kafka_source_assets"]
