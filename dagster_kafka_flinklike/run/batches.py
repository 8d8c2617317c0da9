"""Offset batches: the exact offset ranges one run reads, written down as a name.

A streaming asset partitioned by offset batches records each batch its runs read as a dynamic
partition whose key names the batch's ranges, e.g. ``orders/orders:0=0-160,1=0-160,2=0-183``
(``<source>/<topic>:<partition>=<start>-<stop>`` per topic, topics joined by ``;``), so any past
batch can be re-run and reads exactly the same records. The next batch starts where the last one
stopped, and ends at the end of the log (or ``scan.bounded.mode``) when it is planned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import KafkaConnectorError, OffsetsError
from ..source.admin import KafkaAdmin
from ..source.enumerator import SourcePlan, plan_source, split_ranges
from ..source.offsets import TopicPartition
from .plan import subscribed_partitions
from .tables import ResolvedTable

#: ``source -> topic-partition -> (start, stop)``: the ranges of one batch.
OffsetRanges = dict[str, dict[TopicPartition, tuple[int, int]]]
#: Source names a batch key can carry.
SOURCE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_GROUP = re.compile(r"([A-Za-z0-9_.-]+)/([A-Za-z0-9._-]+):((?:\d+=\d+-\d+)(?:,\d+=\d+-\d+)*)")


def batch_key(ranges: OffsetRanges) -> str:
    """The partition key that names ``ranges``. Empty ranges stay in it: they record where the
    partition stood, so the next batch starts there.

    Example:
        >>> batch_key({"orders": {("orders", 1): (0, 160), ("orders", 0): (9, 9)}})
        'orders/orders:0=9-9,1=0-160'
    """
    groups: list[str] = []
    for source in sorted(ranges):
        by_topic: dict[str, list[str]] = {}
        for (topic, partition), (start, stop) in sorted(ranges[source].items()):
            by_topic.setdefault(topic, []).append(f"{partition}={start}-{stop}")
        groups += [f"{source}/{topic}:{','.join(parts)}" for topic, parts in by_topic.items()]
    return ";".join(groups)


def parse_batch_key(key: str) -> OffsetRanges:
    """The ranges a batch key names (:func:`batch_key`'s inverse).

    Raises:
        KafkaConnectorError: the key is not an offset batch's name.
    """
    ranges: OffsetRanges = {}
    for group in key.split(";") if key else []:
        found = _GROUP.fullmatch(group)
        if found is None:
            raise KafkaConnectorError(
                f"Partition key {key[:120]!r} does not name an offset batch "
                f"('<source>/<topic>:<partition>=<start>-<stop>,...', topics joined by ';')."
            )
        source, topic, parts = found.groups()
        for part in parts.split(","):
            partition, span = part.split("=")
            start, stop = (int(x) for x in span.split("-"))
            ranges.setdefault(source, {})[(topic, int(partition))] = (start, stop)
    return ranges


def batch_positions(keys: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """Where each source's partitions stand after the batches ``keys``: the furthest stop."""
    positions: dict[str, dict[TopicPartition, int]] = {}
    for key in keys:
        for source, ranges in parse_batch_key(key).items():
            mine = positions.setdefault(source, {})
            for tp, (_start, stop) in ranges.items():
                mine[tp] = max(mine.get(tp, stop), stop)
    return positions


def next_batch(
    table: ResolvedTable, admin: KafkaAdmin, previous: Mapping[TopicPartition, int] | None
) -> dict[TopicPartition, tuple[int, int]]:
    """The ranges of a source's next batch: from the last batch's stops (partitions new since
    then from their log start; before any batch, ``scan.startup.mode``) to where a run would
    stop now.

    Raises:
        OffsetsError: a named topic is missing or a start offset cannot be resolved.
    """
    partitions = subscribed_partitions(table, admin)
    plan = plan_source(table.spec, partitions, admin, previous, max_records_per_split=2**62)
    return {tp: (plan.starts[tp], plan.stops[tp]) for tp in partitions}


def replay_plan(
    table: ResolvedTable,
    admin: KafkaAdmin,
    ranges: Mapping[TopicPartition, tuple[int, int]],
    *,
    max_records_per_split: int,
    min_splits: int | None = None,
) -> SourcePlan:
    """The plan that reads exactly ``ranges`` again.

    Raises:
        OffsetsError: part of a range is gone (deleted by retention, or a re-created topic):
            the batch can no longer be read exactly.
    """
    parts = list(ranges)
    lows = admin.beginning_offsets(parts) if parts else {}
    highs = admin.high_watermarks(parts) if parts else {}
    for tp, (start, stop) in sorted(ranges.items()):
        if start < lows[tp] or stop > highs[tp]:
            raise OffsetsError(
                f"Offsets {start}..{stop - 1} of {tp[0]}-{tp[1]} can no longer be read exactly: "
                f"the log now holds {lows[tp]}..{highs[tp] - 1} (retention deleted records, or "
                f"the topic was re-created). The batch cannot be replayed."
            )
    starts = {tp: r[0] for tp, r in ranges.items()}
    stops = {tp: r[1] for tp, r in ranges.items()}
    splits = split_ranges(starts, stops, max_records_per_split, min_splits)
    return SourcePlan(starts=starts, stops=stops, splits=splits)
