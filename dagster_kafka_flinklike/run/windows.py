"""Time windows → offset ranges: what a run over windows of record timestamps reads and keeps.

A window ``[start, end)`` reads, in each partition, from the first offset whose timestamp is at
or after ``start`` (less the window's lookback, for aggregations whose windows begin in the
previous one) to the first offset whose timestamp is at or after ``end + lateness`` (through
offsets-for-times, end exclusive: Flink's ``timestamp`` startup and bounded modes): its **stop
offset**. A record belongs to the window of its timestamp and is kept when it arrived before
that window's stop offset in its partition; one that arrived later is late, and in no window.

The rule is the record's, not the run's: a run over several windows (a single-run backfill)
reads the union of their ranges in one pass, and keeps each record by the stop offset of its
own window, so every window gets exactly the records a run over it alone would give it. A late
record is counted once, by the window that was being read when it arrived (the first whose stop
offset lies beyond it).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from typing import TYPE_CHECKING

from ..errors import KafkaOptionsError, KafkaOptionsWarning, OffsetsError
from ..options import KafkaTableSpec
from ..source.admin import KafkaAdmin
from ..source.enumerator import reset_strategy
from ..source.offsets import OffsetResetStrategy, TopicPartition
from ..source.probe import record_timestamps
from ..source.records import PROVENANCE
from .tables import ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

TOPIC, PARTITION, OFFSET, TIMESTAMP = PROVENANCE[0], PROVENANCE[1], PROVENANCE[2], PROVENANCE[5]
#: Columns :func:`with_record_windows` adds to the records of a run over time windows.
KEPT, POSITION, LATE_IN = "__dkf_kept", "__dkf_window", "__dkf_late_in"
_OWN, _STOPS, _ARRIVED = "__dkf_own_window", "__dkf_stops", "__dkf_arrived_in"

# Startup/bounded options replaced when a time window fixes the range.
_WINDOW_REPLACED = (
    "scan.startup.mode",
    "scan.startup.specific-offsets",
    "scan.startup.timestamp-millis",
    "scan.bounded.mode",
    "scan.bounded.specific-offsets",
    "scan.bounded.timestamp-millis",
)


def iso(ms: int) -> str:
    """An epoch-milliseconds timestamp as UTC ISO 8601, for messages."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class TimeWindow:
    """A window of record timestamps ``[start_ms, end_ms)``, how late records may arrive and how
    far before its start a run reads too.

    Example:
        >>> w = TimeWindow(3_600_000, 7_200_000, lateness_ms=60_000, lookback_ms=600_000)
        >>> w.read_start_ms, w.stop_ms, w.state(now_ms=7_000_000)
        (3000000, 7260000, 'open')
    """

    start_ms: int
    end_ms: int
    #: Records up to this long after the window's end still count (Flink's allowed lateness).
    lateness_ms: int = 0
    #: Records this long before the window's start are read and kept too: hopping windows that
    #: end in this window begin up to ``size - slide`` before it.
    lookback_ms: int = 0

    @property
    def read_start_ms(self) -> int:
        """The earliest record timestamp a run over the window reads."""
        return self.start_ms - self.lookback_ms

    @property
    def stop_ms(self) -> int:
        """Where reading stops: the first record at or after the end plus the lateness."""
        return self.end_ms + self.lateness_ms

    def state(self, now_ms: int | None = None) -> str:
        """``future`` (nothing can be in it yet), ``open`` (records may still arrive: the run
        reads up to the end of the log) or ``complete``."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        if self.start_ms > now:
            return "future"
        return "open" if self.stop_ms > now else "complete"


@dataclass(frozen=True)
class TimeWindows:
    """The time windows one run covers, in order (a partition, or a backfill's range of them),
    after the windows just before them.

    ``bounds`` are the boundaries of consecutive windows ``[bounds[i], bounds[i + 1])``; the
    run's windows are the last ``len(keys)``. The earlier ones (the previous window, and those
    the lookback reaches into) are there for their stop offsets: they tell which of the records
    the run reads arrived in time for their windows.

    Example:
        >>> hour = 3_600_000
        >>> ws = TimeWindows(("h1", "h2"), (0, hour, 2 * hour, 3 * hour), lateness_ms=60_000)
        >>> ws.span.start_ms, ws.span.stop_ms, ws.window("h2").start_ms
        (3600000, 10860000, 7200000)

    Raises:
        KafkaOptionsError: no key, bounds that do not increase, or too few earlier windows.
    """

    keys: tuple[str, ...]
    bounds: tuple[int, ...]
    #: Records up to this long after their window's end still count (Flink's allowed lateness).
    lateness_ms: int = 0
    #: How long before its first window the run reads and keeps records (hopping windows).
    lookback_ms: int = 0

    def __post_init__(self) -> None:
        bounds = self.bounds
        if not self.keys or len(bounds) < len(self.keys) + 2:
            raise KafkaOptionsError(
                f"A run over time windows needs at least one window and the one before it: "
                f"got {len(self.keys)} key(s) and {len(bounds)} bound(s).",
                keys=("windows",),
            )
        if any(a >= b for a, b in pairwise(bounds)):
            raise KafkaOptionsError("Window bounds must increase.", keys=("windows",))
        if bounds[0] > self.span.read_start_ms:
            raise KafkaOptionsError(
                f"The windows before the run's first must reach back to its lookback "
                f"({iso(self.span.read_start_ms)}); they start at {iso(bounds[0])}.",
                keys=("windows",),
            )

    @property
    def first(self) -> int:
        """The position of the run's first window among all of :attr:`bounds`' windows."""
        return len(self.bounds) - 1 - len(self.keys)

    @property
    def span(self) -> TimeWindow:
        """The union of the run's windows: what it reads."""
        return TimeWindow(
            self.bounds[self.first], self.bounds[-1], self.lateness_ms, self.lookback_ms
        )

    @property
    def windows(self) -> dict[str, TimeWindow]:
        """The run's windows by key, in order."""
        return {key: self.window(key) for key in self.keys}

    def window(self, key: str) -> TimeWindow:
        """The run's window ``key``."""
        i = self.first + self.keys.index(key)
        return TimeWindow(self.bounds[i], self.bounds[i + 1], self.lateness_ms, self.lookback_ms)


def window_spec(spec: KafkaTableSpec, window: TimeWindow) -> KafkaTableSpec:
    """``spec`` bounded to ``window``: ``timestamp`` startup and bounded modes.

    An ``upsert-kafka`` table always reads its changelog from the beginning (it has no startup
    options), so a window bounds only its end: the table as of the window's end.
    """
    options = {k: v for k, v in spec.options.items() if k not in _WINDOW_REPLACED}
    if not spec.is_upsert:
        options["scan.startup.mode"] = "timestamp"
        options["scan.startup.timestamp-millis"] = str(window.read_start_ms)
    options["scan.bounded.mode"] = "timestamp"
    options["scan.bounded.timestamp-millis"] = str(window.stop_ms)
    with warnings.catch_warnings():  # the table's own options were warned about when declared
        warnings.simplefilter("ignore", KafkaOptionsWarning)
        return KafkaTableSpec.from_options(
            options,
            columns=spec.columns,
            primary_key=spec.primary_key,
            role=spec.role,
            name=spec.name,
        )


def check_retention(
    table: ResolvedTable,
    admin: KafkaAdmin,
    ranges: Mapping[str, Mapping[TopicPartition, tuple[int, int]]],
    windows: Mapping[str, TimeWindow],
) -> dict[str, dict[TopicPartition, str]]:
    """Per window (of ``windows``, with its offset ``ranges``), the partitions where retention
    may have deleted its records.

    A window whose range starts at a partition's log start, when that log start is above 0 and
    its first retained record is younger than the window's start (or nothing is retained), may
    have lost records. With ``properties.auto.offset.reset`` set, the run reads what remains
    (the returned reasons go to the log and metadata); without, it fails.

    Raises:
        OffsetsError: records of a window were deleted and the table sets no reset strategy.
    """
    if table.spec.is_upsert or not ranges:
        return {}
    parts = sorted({tp for found in ranges.values() for tp in found})
    lows = admin.beginning_offsets(parts)
    edge = {
        tp: low
        for tp, low in lows.items()
        if low > 0 and any(found[tp][0] == low for found in ranges.values())
    }
    if not edge:
        return {}
    stamps = record_timestamps(table.consumer, edge, timeout_s=admin.timeout_s)
    reasons: dict[str, dict[TopicPartition, str]] = {}
    for key, window in windows.items():
        for tp, low in sorted(edge.items()):
            first = stamps.get(tp)
            if ranges[key][tp][0] != low or (first is not None and first <= window.read_start_ms):
                continue
            seen = (
                "nothing is retained" if first is None else f"its first record is at {iso(first)}"
            )
            reasons.setdefault(key, {})[tp] = (
                f"Records of window [{iso(window.read_start_ms)}, {iso(window.end_ms)}) in "
                f"{tp[0]}-{tp[1]} may have been deleted by retention: the log starts at offset "
                f"{low} and {seen}"
            )
    if reasons and reset_strategy(table.spec) == OffsetResetStrategy.NONE:
        raise OffsetsError(
            "; ".join(r for found in reasons.values() for r in found.values())
            + ". Set 'properties.auto.offset.reset' = 'earliest' to read what remains of the "
            "window."
        )
    return reasons


def window_ranges(
    admin: KafkaAdmin,
    partitions: Sequence[TopicPartition],
    windows: Mapping[str, TimeWindow],
    ends: Mapping[TopicPartition, int],
    found: Mapping[int, Mapping[TopicPartition, int]] | None = None,
) -> dict[str, dict[TopicPartition, tuple[int, int]]]:
    """The offset range ``[start, stop)`` of each named window in each partition (clamped to
    ``ends``), so a run over several windows records each one's range; ``found``: the
    offsets-for-times of their bounds, when asked already."""
    if found is None:
        bounds = [ms for w in windows.values() for ms in (w.read_start_ms, w.stop_ms)]
        found = admin.offsets_for_many_times(partitions, bounds)
    out: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
    for key, window in windows.items():
        starts, stops = found[window.read_start_ms], found[window.stop_ms]
        out[key] = {
            tp: (min(starts[tp], ends[tp]), min(max(stops[tp], starts[tp]), ends[tp]))
            for tp in partitions
        }
    return out


@dataclass(frozen=True)
class WindowOffsets:
    """Where the windows of a run stop in each partition of one source.

    Example:
        >>> offsets = window_offsets(admin, windows, plan.stops)  # doctest: +SKIP
        >>> offsets.ranges["2026-11-20-01:00"][("orders", 0)]  # doctest: +SKIP
        (160, 320)
    """

    #: Per partition, the stop offset of every window of :attr:`TimeWindows.bounds`, in order
    #: (clamped to the run's stop offsets).
    stops: dict[TopicPartition, tuple[int, ...]]
    #: Per run window (by key), its offset range ``[start, stop)`` in each partition.
    ranges: dict[str, dict[TopicPartition, tuple[int, int]]]


def window_offsets(
    admin: KafkaAdmin, windows: TimeWindows, ends: Mapping[TopicPartition, int]
) -> WindowOffsets:
    """The stop offset of each of ``windows``' windows in each partition of ``ends`` (the run's
    stop offsets, which clamp them) and the offset range of each of the run's windows (the
    offsets-for-times requests all in flight together)."""
    partitions = sorted(ends)
    late = windows.lateness_ms
    stopping = [bound + late for bound in windows.bounds[1:]]
    starting = [w.read_start_ms for w in windows.windows.values()]
    found = admin.offsets_for_many_times(partitions, [*stopping, *starting])
    stops = {tp: tuple(min(found[ms][tp], ends[tp]) for ms in stopping) for tp in partitions}
    ranges = window_ranges(admin, partitions, windows.windows, ends, found)
    return WindowOffsets(stops, ranges)


def with_record_windows(
    frame: DataFrame, windows: TimeWindows, offsets: WindowOffsets, *, changelog: bool = False
) -> DataFrame:
    """``frame`` (records with their provenance columns: topic, partition, offset, timestamp)
    with where each goes in a run over ``windows``:

    - :data:`KEPT`: whether the run keeps it: its timestamp lies in the run's windows (or its
      lookback) and it arrived before its own window's stop offset in its partition;
    - :data:`POSITION`: for a kept record of one of the run's windows, that window's position
      among them;
    - :data:`LATE_IN`: for a late record, the position of the run's window it arrived in: its
      offset lies at or beyond the previous window's stop offset and before that window's, and
      its timestamp is earlier than that window (its own window's stop offset is behind it).

    A record without a timestamp (its timestamp could not be read: it is dirty data) is kept
    and counts in the window being read when it arrived, so the dirty-data policy sees it.

    A ``changelog`` table (``upsert-kafka``: the table as of the run's end) keeps every record
    before the run's end, and none is late. Each record's window, and for the records not kept
    the window being read when they arrived, are found by binary search: trees of comparisons,
    written as SQL (one expression each, however many windows) that Spark compiles.
    """
    from pyspark.sql import functions as F

    bounds, first = windows.bounds, windows.first
    count = len(bounds) - 1
    stamp = f"unix_millis({TIMESTAMP})"
    framed = frame.withColumn(_OWN, F.expr(f"{_at_or_below(stamp, list(map(str, bounds)))} - 1"))
    unstamped = f"{TIMESTAMP} IS NULL"
    if changelog:
        kept = f"{unstamped} OR {stamp} < {windows.span.end_ms}"
    else:
        stops = _partition_stops(offsets.stops, count)
        kept = (
            f"{unstamped} OR CASE WHEN {_OWN} >= 0 AND {_OWN} < {count} THEN "
            f"{OFFSET} < element_at({stops}, {_OWN} + 1) END "
            f"AND {stamp} >= {windows.span.read_start_ms}"
        )
    framed = framed.withColumn(KEPT, F.expr(f"coalesce({kept}, false)"))
    own = f"CASE WHEN {KEPT} AND {_OWN} >= {first} AND {_OWN} < {count} THEN {_OWN} - {first} END"
    if changelog:
        framed = framed.withColumns({POSITION: F.expr(own), LATE_IN: F.lit(None).cast("int")})
        return framed.drop(_OWN)
    framed = framed.withColumn(
        _STOPS, F.expr(f"CASE WHEN NOT {KEPT} OR {unstamped} THEN {stops} END")
    )
    each = [f"element_at({_STOPS}, {i + 1})" for i in range(count)]
    arrived = f"CASE WHEN {_STOPS} IS NOT NULL THEN {_at_or_below(OFFSET, each)} END"
    framed = framed.withColumn(_ARRIVED, F.expr(arrived))
    arrived_here = f"{_ARRIVED} >= {first} AND {_ARRIVED} < {count}"
    position = f"CASE WHEN {unstamped} AND {arrived_here} THEN {_ARRIVED} - {first} ELSE {own} END"
    late = (
        f"CASE WHEN NOT {unstamped} AND {arrived_here} AND {stamp} < "
        f"element_at(array({', '.join(map(str, bounds))}), {_ARRIVED} + 1) "
        f"THEN {_ARRIVED} - {first} END"
    )
    framed = framed.withColumns({POSITION: F.expr(position), LATE_IN: F.expr(late)})
    return framed.drop(_OWN, _STOPS, _ARRIVED)


def _at_or_below(value: str, bounds: Sequence[str]) -> str:
    """SQL: how many of the increasing ``bounds`` are at or below ``value``, as a balanced tree
    of comparisons (log of the number of bounds per record)."""
    if not bounds:
        return "0"
    mid = len(bounds) // 2
    below = _at_or_below(value, bounds[:mid])
    above = _at_or_below(value, bounds[mid + 1 :])
    return f"CASE WHEN {value} < {bounds[mid]} THEN {below} ELSE {mid + 1} + {above} END"


def _partition_stops(stops: Mapping[TopicPartition, tuple[int, ...]], count: int) -> str:
    """SQL: each record's partition's window stop offsets (an array literal per topic, indexed
    by partition; the records' topic decides only when there are several)."""
    by_topic: dict[str, dict[int, tuple[int, ...]]] = {}
    for (topic, partition), found in stops.items():
        by_topic.setdefault(topic, {})[partition] = found
    if not by_topic:
        return "CAST(array() AS array<bigint>)"

    def arrays(found: dict[int, tuple[int, ...]]) -> str:
        rows = [found.get(p, (0,) * count) for p in range(max(found) + 1)]
        literal = ", ".join(f"array({', '.join(f'{o}L' for o in row)})" for row in rows)
        return f"element_at(array({literal}), {PARTITION} + 1)"

    topics = sorted(by_topic)
    if len(topics) == 1:
        return arrays(by_topic[topics[0]])
    cases = " ".join(f"WHEN {TOPIC} = '{_quoted(t)}' THEN {arrays(by_topic[t])}" for t in topics)
    return f"CASE {cases} END"


def _quoted(text: str) -> str:
    """``text`` inside a SQL string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")
