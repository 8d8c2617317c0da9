"""Driver-side planning, as Flink's split enumerator: subscription → partitions → offset ranges.

Every run is bounded: the plan fixes, for each partition, a start offset (checkpoint first, then
``scan.startup.mode``) and a stop offset (``scan.bounded.mode``, by default the end of the log at
planning time), then cuts the ranges into splits that Spark tasks read, as Spark's own Kafka
source does (``maxRecordsPerPartition`` and ``minPartitions``).
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import KafkaOptionsError, OffsetsError
from ..options import BoundedMode, KafkaTableSpec, StartupMode
from .offsets import OffsetResetStrategy, OffsetsInitializer, OffsetsRetriever, TopicPartition

DEFAULT_MAX_RECORDS_PER_SPLIT = 2_000_000
_log = logging.getLogger(__name__)
_STOP_HINT = (
    "'scan.bounded.mode' = 'group-offsets' stops at the group's committed offsets; commit "
    "offsets for the group first or choose another 'scan.bounded.mode'"
)


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
    """The offsets a run reads: ``[start, stop)`` per partition, and the splits to read them.

    ``resets`` says, per partition, why its start was moved by ``properties.auto.offset.reset``
    (records deleted by retention, or an offset beyond the end of the log), so it can be logged.
    """

    starts: dict[TopicPartition, int]
    stops: dict[TopicPartition, int]
    splits: tuple[KafkaSplit, ...] = field(default=())
    resets: dict[TopicPartition, str] = field(default_factory=dict)

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
    offsets: Mapping[int, int] | None, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    offsets = offsets or {}
    return {tp: offsets[tp[1]] for tp in partitions if tp[1] in offsets}


def startup_initializer(
    spec: KafkaTableSpec, partitions: Sequence[TopicPartition]
) -> OffsetsInitializer:
    """The start strategy that ``scan.startup.mode`` names.

    ``specific-offsets``: partitions not listed start at the group's committed offset, else as
    ``properties.auto.offset.reset`` says (the log start when it is not set, as in Flink).
    """
    mode = spec.startup_mode
    if mode == StartupMode.EARLIEST_OFFSET:
        return OffsetsInitializer.earliest()
    if mode == StartupMode.LATEST_OFFSET:
        return OffsetsInitializer.latest()
    if mode == StartupMode.TIMESTAMP:
        return OffsetsInitializer.timestamp(spec.startup_timestamp_millis or 0)
    reset = reset_strategy(spec)
    if mode == StartupMode.SPECIFIC_OFFSETS:
        if "auto.offset.reset" not in spec.properties:
            reset = OffsetResetStrategy.EARLIEST
        return OffsetsInitializer.offsets(
            _per_partition(spec.startup_specific_offsets, partitions),
            OffsetsInitializer.committed_offsets(reset),
        )
    return OffsetsInitializer.committed_offsets(reset)


def stopping_initializer(
    spec: KafkaTableSpec, partitions: Sequence[TopicPartition]
) -> OffsetsInitializer:
    """The stop strategy that ``scan.bounded.mode`` names (end of log when unbounded).

    ``group-offsets`` requires a committed offset for every partition, as Flink does;
    ``specific-offsets`` stops partitions not listed at the end of the log.
    """
    mode = spec.bounded_mode
    if mode == BoundedMode.TIMESTAMP:
        return OffsetsInitializer.timestamp(spec.bounded_timestamp_millis or 0)
    if mode == BoundedMode.GROUP_OFFSETS:
        return OffsetsInitializer.committed_offsets(OffsetResetStrategy.NONE, hint=_STOP_HINT)
    if mode == BoundedMode.SPECIFIC_OFFSETS:
        return OffsetsInitializer.offsets(
            _per_partition(spec.bounded_specific_offsets, partitions), OffsetsInitializer.latest()
        )
    return OffsetsInitializer.latest()


class _Snapshot:
    """Memoizes log starts, ends and high watermarks so one plan sees one state of each log."""

    def __init__(self, retriever: OffsetsRetriever) -> None:
        self._retriever = retriever
        self.group_id: str | None = getattr(retriever, "group_id", None)
        self._cache: dict[str, dict[TopicPartition, int]] = {"begin": {}, "end": {}, "high": {}}

    def _cached(self, kind: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        cache = self._cache[kind]
        missing = [tp for tp in dict.fromkeys(partitions) if tp not in cache]
        if missing:
            fetch = {
                "begin": self._retriever.beginning_offsets,
                "end": self._retriever.end_offsets,
                "high": self._retriever.high_watermarks,
            }[kind]
            cache.update(fetch(missing))
        return {tp: cache[tp] for tp in partitions}

    def committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._retriever.committed_offsets(partitions)

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._cached("begin", partitions)

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._cached("end", partitions)

    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._cached("high", partitions)

    def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        return self._retriever.offsets_for_times(partitions, timestamp_ms)


def _start_offsets(
    spec: KafkaTableSpec,
    partitions: list[TopicPartition],
    facts: _Snapshot,
    checkpoint: Mapping[TopicPartition, int] | None,
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, str]]:
    """Start offsets and where each came from (for messages)."""
    if checkpoint is not None:
        starts = {tp: checkpoint[tp] for tp in partitions if tp in checkpoint}
        origins = dict.fromkeys(starts, "the checkpoint offset")
        new = [tp for tp in partitions if tp not in checkpoint]
        starts.update(OffsetsInitializer.earliest().get_offsets(new, facts))
        origins.update(dict.fromkeys(new, "the log start offset"))
        return starts, origins
    starts = startup_initializer(spec, partitions).get_offsets(partitions, facts)
    committed = f"the committed offset of consumer group {facts.group_id!r}"
    specific = _per_partition(spec.startup_specific_offsets, partitions)
    origins = {}
    for tp in partitions:
        if spec.startup_mode == StartupMode.SPECIFIC_OFFSETS and tp in specific:
            origins[tp] = "the offset in 'scan.startup.specific-offsets'"
        elif spec.startup_mode in (StartupMode.GROUP_OFFSETS, StartupMode.SPECIFIC_OFFSETS):
            origins[tp] = committed
        else:
            origins[tp] = f"the '{spec.startup_mode.value}' start offset"
    return starts, origins


def _out_of_range(
    spec: KafkaTableSpec,
    tp: TopicPartition,
    start: int,
    origin: str,
    low: int,
    end: int,
    high: int,
) -> tuple[int, str]:
    """Apply ``properties.auto.offset.reset`` to a start outside ``[low, high]``, or fail."""
    name = f"{tp[0]}-{tp[1]}"
    if start < low:
        problem = (
            f"Start offset {start} of {name} ({origin}) is below the log start offset {low}: "
            f"records {start}..{low - 1} were deleted by retention"
        )
    else:
        problem = (
            f"Start offset {start} of {name} ({origin}) is beyond the end of the log ({high}): "
            f"the topic was probably deleted and re-created, or the offset is wrong"
        )
    reset = reset_strategy(spec)
    if reset == OffsetResetStrategy.NONE:
        raise OffsetsError(
            f"{problem}. Set 'properties.auto.offset.reset' to 'earliest' (start at {low}) or "
            f"'latest' (start at {end}) to go on from there."
        )
    target = low if reset == OffsetResetStrategy.EARLIEST else end
    option = f"'properties.auto.offset.reset' = '{reset.value}'"
    return target, f"{problem}; {option} starts at {target}."


def plan_source(
    spec: KafkaTableSpec,
    partitions: Sequence[TopicPartition],
    retriever: OffsetsRetriever,
    checkpoint: Mapping[TopicPartition, int] | None = None,
    *,
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
    min_splits: int | None = None,
) -> SourcePlan:
    """Fix start and stop offsets of every partition and cut them into splits.

    Start offsets: with a checkpoint (even an empty one), its offset where it has the partition
    and the log start for partitions new since it was taken; without one, ``scan.startup.mode``
    decides. A start below the log start (deleted by retention) or beyond the end of the log
    (topic re-created) follows ``properties.auto.offset.reset`` or fails; never silently.
    Stops are clamped to the end of the log: the last stable offset under ``read_committed``,
    the high watermark under ``read_uncommitted``.

    Example:
        >>> plan = plan_source(spec, admin.partitions(spec.topics), admin)  # doctest: +SKIP
        >>> plan.splits  # doctest: +SKIP
        (KafkaSplit(topic='orders', partition=0, start=0, stop=100),)

    Raises:
        OffsetsError: a start offset cannot be resolved or is out of range without a reset
            strategy, or ``scan.bounded.mode`` = ``group-offsets`` finds no committed offset.
    """
    parts = list(dict.fromkeys(partitions))
    if not parts:
        return SourcePlan(starts={}, stops={})
    facts = _Snapshot(retriever)
    starts, origins = _start_offsets(spec, parts, facts, checkpoint)
    stops = stopping_initializer(spec, parts).get_offsets(parts, facts)
    lows = facts.beginning_offsets(parts)
    ends = facts.end_offsets(parts)
    beyond = [tp for tp in parts if starts[tp] > ends[tp]]
    highs = facts.high_watermarks(beyond) if beyond else {}
    resets: dict[TopicPartition, str] = {}
    for tp in parts:
        start, low, end = starts[tp], lows[tp], ends[tp]
        high = max(highs.get(tp, end), end)
        if start < low or start > high:
            start, resets[tp] = _out_of_range(spec, tp, start, origins[tp], low, end, high)
            _log.warning(resets[tp])
        starts[tp] = start
        stops[tp] = max(start, min(stops[tp], end))
    splits = split_ranges(starts, stops, max_records_per_split, min_splits)
    return SourcePlan(starts=starts, stops=stops, splits=splits, resets=resets)


def _divide(topic: str, partition: int, start: int, stop: int, parts: int) -> list[KafkaSplit]:
    """``[start, stop)`` in ``parts`` contiguous pieces; the last absorbs the rounding."""
    remaining = stop - start
    pieces: list[KafkaSplit] = []
    for part in range(parts):
        size = remaining // (parts - part)
        remaining -= size
        if size > 0:
            pieces.append(KafkaSplit(topic, partition, start, start + size))
        start += size
    return pieces


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def _proportional_parts(sizes: Sequence[int], wanted: int) -> list[int]:
    """How many pieces each range becomes so that there are at least ``wanted`` in all.

    Spark's rule: ranges whose share of ``wanted`` rounds to at most one stay whole; the others
    share what is left in proportion to their size. Rounding down is then made up by splitting
    the ranges with the largest pieces further, so the total reaches ``wanted`` (or one piece per
    offset); a range never has more pieces than offsets.
    """
    total = sum(sizes)

    def count(size: int, of: int, n: int) -> int:
        return max(_round_half_up(size / of * n), 1)

    whole = [count(size, total, wanted) == 1 for size in sizes]
    split_total = total - sum(size for size, w in zip(sizes, whole, strict=True) if w)
    split_wanted = max(wanted - sum(whole), 1)
    parts = [
        1 if w else min(count(size, split_total, split_wanted), size)
        for size, w in zip(sizes, whole, strict=True)
    ]
    shortfall = wanted - sum(parts)
    if shortfall > 0:
        heap = [(-size / n, i) for i, (size, n) in enumerate(zip(sizes, parts, strict=True))]
        heap = [item for item in heap if parts[item[1]] < sizes[item[1]]]
        heapq.heapify(heap)
        while shortfall > 0 and heap:
            _, i = heapq.heappop(heap)
            parts[i] += 1
            shortfall -= 1
            if parts[i] < sizes[i]:
                heapq.heappush(heap, (-sizes[i] / parts[i], i))
    return parts


def split_ranges(
    starts: Mapping[TopicPartition, int],
    stops: Mapping[TopicPartition, int],
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
    min_splits: int | None = None,
) -> tuple[KafkaSplit, ...]:
    """Cut each non-empty ``[start, stop)`` into splits, as Spark's Kafka source plans tasks.

    A range larger than ``max_records_per_split`` is cut into near-equal pieces no larger than
    that. With ``min_splits`` (Spark's ``minPartitions``) and fewer pieces than that, the larger
    pieces are split further in proportion to their size until there are at least
    ``min(min_splits, offsets)`` splits; small ranges are kept whole, never dropped or merged.
    Empty ranges produce no split. Splits come out ordered by topic, partition and offset.

    Example:
        >>> [s.size for s in split_ranges({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10,
        ...     ("t", 1): 1}, min_splits=4)]
        [3, 3, 4, 1]

    Raises:
        KafkaOptionsError: ``max_records_per_split`` or ``min_splits`` is below 1.
    """
    if max_records_per_split < 1:
        raise KafkaOptionsError(f"max_records_per_split must be >= 1, got {max_records_per_split}.")
    if min_splits is not None and min_splits < 1:
        raise KafkaOptionsError(f"min_splits must be >= 1 (or None), got {min_splits}.")
    pieces: list[KafkaSplit] = []
    for (topic, partition), start in sorted(starts.items()):
        stop = stops[(topic, partition)]
        if stop <= start:
            continue
        parts = math.ceil((stop - start) / max_records_per_split)
        pieces.extend(_divide(topic, partition, start, stop, parts))
    if min_splits is None or len(pieces) >= min_splits:
        return tuple(pieces)
    counts = _proportional_parts([p.size for p in pieces], min_splits)
    return tuple(
        split
        for piece, n in zip(pieces, counts, strict=True)
        for split in _divide(piece.topic, piece.partition, piece.start, piece.stop, n)
    )
