"""Source topics as Dagster assets: external, observable assets for the topics streaming assets
read (a table another streaming asset writes is that asset), and their observation (partitions,
end offsets, record count; the end offsets as the data version).

Each topic's observation ends within :data:`OBSERVE_BUDGET_S` whatever the cluster does, and
records only offsets the cluster gave: a topic that could not be observed fails the observation
with why and where (its bootstrap servers), after the other topics are observed; a cluster that
did not answer one topic is not asked again for the next ones.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
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

from ._budget import BudgetedClients, Memo, servers_of
from .errors import KafkaConnectorError, KafkaOptionsError
from .materialization import streaming_tables
from .options import KafkaTableSpec
from .translator import KafkaTranslator, table_label

__all__ = ["build_kafka_source_assets", "observe_topic"]

#: How long one Kafka request of an observation may take.
OBSERVE_TIMEOUT_S = 15.0
#: How long all the Kafka requests of one topic's observation may take together.
OBSERVE_BUDGET_S = 30.0


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
        kafka = getattr(context.resources, kafka_resource_key)
        keys = sorted(context.selected_asset_keys, key=str)
        yield from _observe_topics([(key, tables[key]) for key in keys], kafka)

    return [_observe]


def _observe_topics(
    topics: Sequence[tuple[AssetKey, KafkaTableSpec]], kafka: Any
) -> Iterator[ObserveResult]:
    """Observe each of ``topics``, each within :data:`OBSERVE_BUDGET_S`; then fail with the
    reasons of those that could not be observed.

    Raises:
        KafkaConnectorError: a topic could not be observed (all reasons, one after another).
    """
    from .run import KafkaClients

    clients = KafkaClients(timeout_s=OBSERVE_TIMEOUT_S)
    memo = Memo()
    failures: list[KafkaConnectorError] = []
    for key, table in topics:
        budget = BudgetedClients(clients, OBSERVE_BUDGET_S, memo=memo)
        try:
            yield observe_topic(key, table, kafka, budget)
        except KafkaConnectorError as exc:  # the other topics are observed first
            failures.append(exc)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise KafkaConnectorError(" ".join(str(f) for f in failures)) from failures[0]


def observe_topic(key: AssetKey, table: KafkaTableSpec, kafka: Any, clients: Any) -> ObserveResult:
    """An observation of a source topic: partitions, end offsets, records, data version.

    Raises:
        KafkaConnectorError: the cluster did not answer, or gave no offset for a partition
            (the observation fails with why, naming the bootstrap servers).
    """
    resolved = None
    try:
        resolved = kafka.resolve(table)
        admin = clients.admin(resolved)
        found = admin.discover(table.topics, table.topic_pattern)
        partitions = [(t, p) for t, n in found.items() for p in range(n)]
        ends = admin.end_offsets(partitions)
        starts = admin.beginning_offsets(partitions)
        lost = sorted(tp for tp in partitions if min(ends[tp], starts[tp]) < 0)
        if lost:  # what librdkafka gives for a partition whose leader did not answer
            raise KafkaConnectorError(
                f"no offsets for {', '.join(f'{t}-{p}' for t, p in lost)} (their leader did "
                f"not answer)"
            )
    except KafkaOptionsError:  # the table's settings, not the cluster: as they are
        raise
    except Exception as exc:
        raise KafkaConnectorError(
            f"Could not observe Kafka table {table_label(table)!r} at "
            f"{servers_of([resolved])}: {exc}"
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
