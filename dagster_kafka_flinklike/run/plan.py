"""Plan: where each source partition starts and stops in this run, without reading anything.

The start is the last checkpoint (or, under exactly-once, the consumer group's committed offsets,
read after the sink fenced the previous run), else ``scan.startup.mode``; the stop is
``scan.bounded.mode`` or the end of the log at planning time. Sensors and checks use the same
functions to see what a run would read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..errors import KafkaOptionsError
from ..options import KafkaTableSpec
from ..source.admin import KafkaAdmin
from ..source.enumerator import DEFAULT_MAX_RECORDS_PER_SPLIT, SourcePlan, plan_source
from ..source.offsets import TopicPartition
from ..state.checkpoint import OffsetsCheckpoint
from .tables import ResolvedTable


class OffsetsAuthority(Protocol):
    """An exactly-once writer, which knows where each source partition resumes (once it has
    fenced what an earlier run may have left open)."""

    def resume_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The offsets each partition resumes from (absent: none committed)."""
        ...  # pragma: no cover


def subscribed_partitions(table: ResolvedTable, admin: KafkaAdmin) -> list[TopicPartition]:
    """The partitions ``table`` subscribes to now (``topic`` list or ``topic-pattern``).

    Raises:
        OffsetsError: a named topic does not exist.
    """
    return admin.partitions(table.spec.topics, table.spec.topic_pattern)


def check_group_is_free(table: ResolvedTable, admin: KafkaAdmin) -> None:
    """``scan.check.duplicated.group.id``: refuse to run while another job uses the group.

    Raises:
        KafkaOptionsError: the option is true and the group has active members.
    """
    if table.spec.check_duplicated_group_id and admin.group_in_use():
        raise KafkaOptionsError(
            f"Consumer group {admin.group_id!r} has active members and "
            f"'scan.check.duplicated.group.id' is true: another job uses the group.",
            keys=("scan.check.duplicated.group.id", "properties.group.id"),
        )


def previous_offsets(
    table: ResolvedTable,
    admin: KafkaAdmin,
    partitions: Sequence[TopicPartition],
    checkpoint: OffsetsCheckpoint | None,
    *,
    transaction: OffsetsAuthority | None = None,
    sink: ResolvedTable | None = None,
) -> dict[TopicPartition, int] | None:
    """Where the source resumes: Kafka's committed group offsets under exactly-once (they are
    the authoritative checkpoint), else the last materialization's checkpoint; None for a first
    run.

    Raises:
        KafkaOptionsError: under exactly-once, the source has no group or is on another cluster
            than the sink.
    """
    if transaction is None:
        previous = checkpoint.offsets(table.name) if checkpoint else None
        return dict(previous) if previous else None
    if not admin.group_id:
        raise KafkaOptionsError(
            f"Exactly-once commits the offsets of source {table.name!r} to its consumer group: "
            f"set 'properties.group.id' on the table (or give the table a name).",
            keys=("properties.group.id",),
        )
    if sink is not None and table.bootstrap_servers != sink.bootstrap_servers:
        raise KafkaOptionsError(
            f"Exactly-once commits the offsets of source {table.name!r} in the sink's "
            f"transaction, so source and sink must be on one Kafka cluster; their "
            f"'properties.bootstrap.servers' differ.",
            keys=("properties.bootstrap.servers", "sink.delivery-guarantee"),
        )
    committed = transaction.resume_offsets(admin.group_id, partitions)
    return committed or None


def plan_table(
    table: ResolvedTable,
    admin: KafkaAdmin,
    checkpoint: OffsetsCheckpoint | None,
    *,
    transaction: OffsetsAuthority | None = None,
    sink: ResolvedTable | None = None,
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
    min_splits: int | None = None,
) -> SourcePlan:
    """The offsets ``table`` reads in this run, cut into splits.

    Example:
        >>> plan = plan_table(table, clients.admin(table), checkpoint)  # doctest: +SKIP
        >>> plan.pending_offsets  # doctest: +SKIP
        500

    Raises:
        KafkaOptionsError: the group is in use (``scan.check.duplicated.group.id``), or the
            exactly-once rules of :func:`previous_offsets` are broken.
        OffsetsError: a start or stop offset cannot be resolved.
    """
    check_group_is_free(table, admin)
    partitions = subscribed_partitions(table, admin)
    previous = previous_offsets(
        table, admin, partitions, checkpoint, transaction=transaction, sink=sink
    )
    return plan_source(
        table.spec,
        partitions,
        admin,
        previous,
        max_records_per_split=max_records_per_split,
        min_splits=min_splits,
    )


def read_min_splits(spec: KafkaTableSpec, min_splits: int | None) -> int | None:
    """The fewest Spark tasks that read ``spec`` in a run: the larger of the run's
    ``min_splits`` and the table's ``scan.parallelism`` (both are minimums), or None.

    Example:
        >>> orders = KafkaTableSpec.from_options(
        ...     {"connector": "kafka", "topic": "orders", "format": "json",
        ...      "scan.startup.mode": "earliest-offset", "scan.parallelism": "4"})
        >>> read_min_splits(orders, None), read_min_splits(orders, 8)
        (4, 8)
    """
    wanted = [n for n in (min_splits, spec.scan_parallelism) if n is not None]
    return max(wanted) if wanted else None


def pending_records(
    ends: Mapping[TopicPartition, int], positions: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Records each partition holds beyond ``positions`` (0 where the position is at the end).

    A partition without a position (new since the checkpoint) is pending from offset 0.

    Example:
        >>> pending_records({("t", 0): 10, ("t", 1): 5}, {("t", 0): 7})
        {('t', 0): 3, ('t', 1): 5}
    """
    return {tp: max(end - positions.get(tp, 0), 0) for tp, end in sorted(ends.items())}
