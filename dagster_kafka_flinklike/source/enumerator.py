"""Driver-side planning, as Flink's split enumerator: subscription → partitions → offset ranges.

Every run is bounded: the plan fixes, for each partition, a start offset (checkpoint first, then
``scan.startup.mode``) and a stop offset (``scan.bounded.mode``, by default the end of the log at
planning time), then cuts the ranges into splits that Spark tasks read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import OffsetsError
from ..options import BoundedMode, KafkaTableSpec, StartupMode
from .offsets import OffsetResetStrategy, OffsetsInitializer, OffsetsRetriever, TopicPartition

DEFAULT_MAX_RECORDS_PER_SPLIT = 2_000_000


@dataclass(frozen=True)
class KafkaSplit:
    """A topic-partition range ``[start, stop)`` read by one Spark task."""

    topic: str
    partition: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        """Offsets covered (records, plus transaction markers and aborted records if any)."""
        return self.stop - self.start


@dataclass(frozen=True)
class SourcePlan:
    """The offsets a run reads: ``[start, stop)`` per partition, and the splits to read them."""

    starts: dict[TopicPartition, int]
    stops: dict[TopicPartition, int]
    splits: tuple[KafkaSplit, ...] = field(default=())

    @property
    def pending_offsets(self) -> int:
        """Offsets between the starts and the stops (an upper bound of records to read)."""
        return sum(self.stops[tp] - self.starts[tp] for tp in self.starts)


def reset_strategy(spec: KafkaTableSpec) -> OffsetResetStrategy:
    """``properties.auto.offset.reset`` as a strategy (Java and librdkafka spellings)."""
    value = spec.properties.get("auto.offset.reset", "none").strip().lower()
    if value in ("earliest", "smallest", "beginning"):
        return OffsetResetStrategy.EARLIEST
    if value in ("latest", "largest", "end"):
        return OffsetResetStrategy.LATEST
    return OffsetResetStrategy.NONE


def _per_partition(
    offsets: Mapping[int, int] | None, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    offsets = offsets or {}
    return {tp: offsets[tp[1]] for tp in partitions if tp[1] in offsets}


def startup_initializer(
    spec: KafkaTableSpec, partitions: list[TopicPartition]
) -> OffsetsInitializer:
    """The start strategy that ``scan.startup.mode`` names."""
    mode = spec.startup_mode
    if mode == StartupMode.EARLIEST_OFFSET:
        return OffsetsInitializer.earliest()
    if mode == StartupMode.LATEST_OFFSET:
        return OffsetsInitializer.latest()
    if mode == StartupMode.TIMESTAMP:
        return OffsetsInitializer.timestamp(spec.startup_timestamp_millis or 0)
    committed = OffsetsInitializer.committed_offsets(reset_strategy(spec))
    if mode == StartupMode.SPECIFIC_OFFSETS:
        return OffsetsInitializer.offsets(
            _per_partition(spec.startup_specific_offsets, partitions), committed
        )
    return committed


def stopping_initializer(
    spec: KafkaTableSpec, partitions: list[TopicPartition]
) -> OffsetsInitializer:
    """The stop strategy that ``scan.bounded.mode`` names (end of log when unbounded)."""
    mode = spec.bounded_mode
    if mode == BoundedMode.TIMESTAMP:
        return OffsetsInitializer.timestamp(spec.bounded_timestamp_millis or 0)
    if mode == BoundedMode.GROUP_OFFSETS:
        return OffsetsInitializer.committed_offsets(OffsetResetStrategy.LATEST)
    if mode == BoundedMode.SPECIFIC_OFFSETS:
        return OffsetsInitializer.offsets(
            _per_partition(spec.bounded_specific_offsets, partitions), OffsetsInitializer.latest()
        )
    return OffsetsInitializer.latest()


def plan_source(
    spec: KafkaTableSpec,
    partitions: list[TopicPartition],
    retriever: OffsetsRetriever,
    checkpoint: Mapping[TopicPartition, int] | None = None,
    *,
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
) -> SourcePlan:
    """Fix start and stop offsets of every partition and cut them into splits.

    Start offsets: the checkpoint's where it has the partition; partitions new since the
    checkpoint start at the log start; without a checkpoint, ``scan.startup.mode`` decides.
    A start below the log start (deleted by retention) follows ``properties.auto.offset.reset``
    or fails; it is never skipped silently.
    """
    if checkpoint:
        starts = {tp: checkpoint[tp] for tp in partitions if tp in checkpoint}
        new = [tp for tp in partitions if tp not in checkpoint]
        starts.update(OffsetsInitializer.earliest().get_offsets(new, retriever))
    else:
        starts = startup_initializer(spec, partitions).get_offsets(partitions, retriever)
    stops = stopping_initializer(spec, partitions).get_offsets(partitions, retriever)

    beginnings = retriever.beginning_offsets(partitions) if partitions else {}
    ends = retriever.end_offsets(partitions) if partitions else {}
    for tp in partitions:
        start, low, end = starts[tp], beginnings[tp], ends[tp]
        if start < low:
            reset = reset_strategy(spec)
            if reset == OffsetResetStrategy.NONE:
                raise OffsetsError(
                    f"Offset {start} of {tp[0]}-{tp[1]} is no longer in the log (its start "
                    f"offset is {low}: records were deleted by retention). Set "
                    f"'properties.auto.offset.reset' to 'earliest' or 'latest' to skip them."
                )
            start = low if reset == OffsetResetStrategy.EARLIEST else end
        if start > end:
            raise OffsetsError(
                f"Start offset {start} of {tp[0]}-{tp[1]} is beyond the end of the log ({end}); "
                f"was the topic deleted and re-created?"
            )
        starts[tp] = start
        stops[tp] = max(start, min(stops[tp], end))
    splits = split_ranges(starts, stops, max_records_per_split)
    return SourcePlan(starts=starts, stops=stops, splits=splits)


def split_ranges(
    starts: Mapping[TopicPartition, int],
    stops: Mapping[TopicPartition, int],
    max_records_per_split: int,
) -> tuple[KafkaSplit, ...]:
    """Cut each non-empty ``[start, stop)`` into near-equal splits of at most the given size."""
    if max_records_per_split < 1:
        raise ValueError("max_records_per_split must be >= 1")
    splits: list[KafkaSplit] = []
    for (topic, partition), start in sorted(starts.items()):
        stop = stops[(topic, partition)]
        size = stop - start
        if size <= 0:
            continue
        pieces = math.ceil(size / max_records_per_split)
        for i in range(pieces):
            lo = start + size * i // pieces
            hi = start + size * (i + 1) // pieces
            splits.append(KafkaSplit(topic, partition, lo, hi))
    return tuple(splits)
