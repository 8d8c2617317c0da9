"""Lag: what the next run of a source would read, planned exactly as the run plans it.

Sensors and the lag check ask the same planner the run uses (:func:`~.plan.plan_table`'s
starting points, :func:`~dagster_kafka_flinklike.source.enumerator.plan_source`), without reading
a record: the pending records of a source are the offsets between where it resumes (its
checkpoint, or under exactly-once its group's committed offsets) and where a run would stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..source.admin import KafkaAdmin
from ..source.enumerator import SourcePlan, plan_source
from ..source.offsets import TopicPartition
from ..source.probe import record_timestamps
from ..state.checkpoint import OffsetsCheckpoint
from .plan import subscribed_partitions
from .tables import ResolvedTable


@dataclass(frozen=True)
class SourceLag:
    """The records of a source that no successful run has read yet, per partition.

    Example:
        >>> lag = SourceLag("orders", {("orders", 0): 5}, {("orders", 0): 9})
        >>> lag.pending, lag.total
        ({('orders', 0): 4}, 4)
    """

    source: str
    #: Where the next run starts, per partition.
    starts: Mapping[TopicPartition, int]
    #: Where it would stop (the end of the log, or ``scan.bounded.mode``).
    stops: Mapping[TopicPartition, int]
    #: Timestamp (ms) of the first pending record of partitions that have one, when probed.
    oldest_timestamps: Mapping[TopicPartition, int] | None = None

    @property
    def pending(self) -> dict[TopicPartition, int]:
        """Pending records (offsets) per partition."""
        return {tp: max(self.stops[tp] - start, 0) for tp, start in sorted(self.starts.items())}

    @property
    def total(self) -> int:
        """Pending records in all partitions."""
        return sum(self.pending.values())

    def oldest_age_ms(self, now_ms: int) -> int | None:
        """Age of the oldest pending record, when timestamps were probed and any is pending."""
        if not self.oldest_timestamps:
            return None
        return max(now_ms - min(self.oldest_timestamps.values()), 0)


def resume_offsets(
    table: ResolvedTable,
    admin: KafkaAdmin,
    partitions: list[TopicPartition],
    checkpoint: OffsetsCheckpoint | None,
    *,
    exactly_once: bool = False,
) -> dict[TopicPartition, int] | None:
    """Where the source resumes, as the run decides it: under exactly-once the consumer group's
    committed offsets, else the checkpoint; None before the first run."""
    if exactly_once:
        return admin.committed_offsets(partitions) or None
    found = checkpoint.offsets(table.name) if checkpoint is not None else None
    return dict(found) if found else None


def next_plan(
    table: ResolvedTable,
    admin: KafkaAdmin,
    checkpoint: OffsetsCheckpoint | None,
    *,
    exactly_once: bool = False,
) -> SourcePlan:
    """The offsets the next run of the source would read now (no splits are cut).

    Raises:
        OffsetsError: a named topic is missing, or a start offset cannot be resolved.
        KafkaClientError: the cluster did not answer.
    """
    partitions = subscribed_partitions(table, admin)
    previous = resume_offsets(table, admin, partitions, checkpoint, exactly_once=exactly_once)
    plan = plan_source(table.spec, partitions, admin, previous, max_records_per_split=2**62)
    return SourcePlan(starts=plan.starts, stops=plan.stops, resets=plan.resets)


def source_lag(
    table: ResolvedTable,
    admin: KafkaAdmin,
    checkpoint: OffsetsCheckpoint | None,
    *,
    exactly_once: bool = False,
    probe_ages: bool = False,
) -> SourceLag:
    """The source's pending records; with ``probe_ages`` also the timestamp of the first
    pending record of each partition (one fetch per partition with records pending).

    Raises:
        OffsetsError: a named topic is missing, or a start offset cannot be resolved.
        KafkaClientError: the cluster did not answer.
    """
    plan = next_plan(table, admin, checkpoint, exactly_once=exactly_once)
    lag = SourceLag(table.name, plan.starts, plan.stops)
    if not probe_ages:
        return lag
    waiting = {tp: start for tp, start in lag.starts.items() if lag.pending[tp] > 0}
    stamps = record_timestamps(
        table.consumer, waiting, read_committed=admin.read_committed, timeout_s=admin.timeout_s
    )
    return SourceLag(table.name, plan.starts, plan.stops, stamps)
