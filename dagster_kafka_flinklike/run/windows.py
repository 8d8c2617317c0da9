"""Time windows → offset ranges: what a run over a window of record timestamps reads.

A window ``[start, end)`` reads, in each partition, from the first offset whose timestamp is at
or after ``start`` (less the window's lookback, for aggregations whose windows begin in the
previous one) to the first offset whose timestamp is at or after ``end + lateness`` (through
offsets-for-times, end exclusive: Flink's ``timestamp`` startup and bounded modes), and keeps the
records whose timestamp lies in the window. Records of the window written after that stop
offset arrived later than the allowed lateness; records in the range with earlier timestamps
belong to earlier windows (they are counted as late, not read twice).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import KafkaOptionsWarning, OffsetsError
from ..options import KafkaTableSpec
from ..source.admin import KafkaAdmin
from ..source.enumerator import SourcePlan, reset_strategy
from ..source.offsets import OffsetResetStrategy, TopicPartition
from ..source.probe import record_timestamps
from .tables import ResolvedTable

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
    table: ResolvedTable, admin: KafkaAdmin, plan: SourcePlan, window: TimeWindow
) -> dict[TopicPartition, str]:
    """Partitions where retention may have deleted records of ``window``.

    A window that starts at a partition's log start, when that log start is above 0 and its
    first retained record is younger than the window's start (or nothing is retained), may have
    lost records. With ``properties.auto.offset.reset`` set, the run reads what remains (the
    returned reasons go to the log and metadata); without, it fails.

    Raises:
        OffsetsError: records of the window were deleted and the table sets no reset strategy.
    """
    if table.spec.is_upsert or not plan.starts:
        return {}
    lows = admin.beginning_offsets(list(plan.starts))
    edge = {tp: low for tp, low in lows.items() if low > 0 and plan.starts[tp] == low}
    if not edge:
        return {}
    stamps = record_timestamps(table.consumer, edge, timeout_s=admin.timeout_s)
    reasons: dict[TopicPartition, str] = {}
    for tp, low in sorted(edge.items()):
        first = stamps.get(tp)
        if first is not None and first <= window.read_start_ms:
            continue
        seen = "nothing is retained" if first is None else f"its first record is at {iso(first)}"
        reasons[tp] = (
            f"Records of window [{iso(window.read_start_ms)}, {iso(window.end_ms)}) in "
            f"{tp[0]}-{tp[1]} may have been deleted by retention: the log starts at offset {low} "
            f"and {seen}"
        )
    if reasons and reset_strategy(table.spec) == OffsetResetStrategy.NONE:
        raise OffsetsError(
            "; ".join(reasons.values()) + ". Set 'properties.auto.offset.reset' = 'earliest' "
            "to read what remains of the window."
        )
    return reasons


def window_ranges(
    admin: KafkaAdmin,
    partitions: Sequence[TopicPartition],
    windows: Mapping[str, TimeWindow],
    ends: Mapping[TopicPartition, int],
) -> dict[str, dict[TopicPartition, tuple[int, int]]]:
    """The offset range ``[start, stop)`` of each named window in each partition (clamped to
    ``ends``), so a run over several windows records each one's range (one offsets-for-times
    request per window boundary)."""
    cache: dict[int, dict[TopicPartition, int]] = {}

    def at(ms: int) -> dict[TopicPartition, int]:
        if ms not in cache:
            cache[ms] = admin.offsets_for_times(list(partitions), ms)
        return cache[ms]

    out: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
    for key, window in windows.items():
        starts, stops = at(window.read_start_ms), at(window.stop_ms)
        out[key] = {
            tp: (min(starts[tp], ends[tp]), min(max(stops[tp], starts[tp]), ends[tp]))
            for tp in partitions
        }
    return out
