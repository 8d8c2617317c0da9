"""Dagster time-window partitions as the time windows a run reads (:mod:`.run.windows`).

A run over partitions (one, or a backfill's range in one run) reads their windows; whether it
keeps a record depends on the stop offset of the record's own window, so it also needs the
window before its first (late records of the first window arrive after that one's stop offset)
and those its lookback reaches into.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise

from dagster import TimeWindowPartitionsDefinition

from .errors import KafkaConnectorError
from .run.windows import TimeWindows


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def time_windows(
    partitions_def: TimeWindowPartitionsDefinition,
    keys: Sequence[str],
    lateness_ms: int = 0,
    lookback_ms: int = 0,
) -> TimeWindows:
    """The time windows of consecutive partition ``keys``, after the windows before them that a
    run over them needs (the previous one, and those ``lookback_ms`` reaches into).

    Example:
        >>> hourly = HourlyPartitionsDefinition(start_date="2026-11-20-00:00")  # doctest: +SKIP
        >>> time_windows(hourly, ["2026-11-20-00:00"]).bounds  # doctest: +SKIP
        (1763593200000, 1763596800000, 1763600400000)

    Raises:
        KafkaConnectorError: the keys are not consecutive windows.
    """
    found = [partitions_def.time_window_for_partition_key(key) for key in keys]
    for before, after in pairwise(found):
        if before.end != after.start:
            raise KafkaConnectorError(
                f"Partitions {list(keys)} are not consecutive time windows: one run reads a "
                f"range of windows."
            )
    bounds = [_ms(found[0].start), *(_ms(w.end) for w in found)]
    reach = bounds[0] - lookback_ms
    start = found[0].start
    while len(bounds) < len(keys) + 2 or bounds[0] > reach:
        previous = partitions_def.get_prev_partition_window(start, respect_bounds=False)
        if previous is None:  # (only within the definition's bounds, which are not asked for)
            raise KafkaConnectorError(f"No time window before {start.isoformat()}.")
        start = previous.start
        bounds.insert(0, _ms(start))
    return TimeWindows(tuple(keys), tuple(bounds), lateness_ms, lookback_ms)
