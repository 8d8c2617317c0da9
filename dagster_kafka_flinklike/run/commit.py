"""Commit: record the run's new offsets checkpoint, and (for monitoring, as Flink does) commit
the stop offsets to each source's consumer group.

The checkpoint is authoritative and lives in the materialization's metadata; the group commit is
skipped when a source sets ``properties.commit.offsets.on.checkpoint`` = false, and under
exactly-once the offsets were committed in the sink's transaction already.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..source.admin import KafkaAdmin
from ..source.offsets import TopicPartition
from ..state.checkpoint import OffsetsCheckpoint


def next_checkpoint(
    previous: OffsetsCheckpoint | None, stops: Mapping[str, Mapping[TopicPartition, int]]
) -> OffsetsCheckpoint:
    """The checkpoint after a run that read each source up to ``stops`` (others kept).

    Example:
        >>> next_checkpoint(None, {"orders": {("orders", 0): 5}}).offsets("orders")
        {('orders', 0): 5}
    """
    merged: dict[str, Mapping[TopicPartition, int]] = {}
    if previous is not None:
        merged.update(previous.sources)
    merged.update({name: dict(offsets) for name, offsets in stops.items()})
    return OffsetsCheckpoint(merged)


def commit_group_offsets(
    name: str,
    admin: KafkaAdmin,
    stops: Mapping[TopicPartition, int],
    *,
    commit: bool,
    log: logging.Logger | Any,
) -> dict[TopicPartition, int]:
    """Commit ``stops`` to the source's group (when ``commit``) and read back what it holds.

    Monitoring only: a failure is logged, never fails the run. Returns the group's committed
    offsets (empty when it has none or could not be read).
    """
    try:
        if commit:
            admin.commit_group_offsets(stops)
        groups = admin.group_offsets(list(stops))
    except Exception as exc:  # monitoring only: the checkpoint is authoritative
        log.warning(f"Could not commit offsets of {name!r} to its group: {exc}")
        return {}
    return {tp: o for tp, o in groups.items() if o is not None}
