"""Source topics as Dagster assets: external, observable assets for the topics streaming assets
read (a table another streaming asset writes is that asset), and their observation (partitions,
end offsets, record count; the end offsets as the data version)."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    BetaWarning,
    DataVersion,
    MetadataValue,
    ObserveResult,
    multi_observable_source_asset,
)

from .errors import KafkaConnectorError
from .materialization import streaming_tables
from .options import KafkaTableSpec
from .translator import KafkaTranslator, table_label

__all__ = ["build_kafka_source_assets", "observe_topic"]


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
