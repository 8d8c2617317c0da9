"""Which records a run over time windows keeps, on synthetic logs: a run over several windows
gives each window exactly what a run over it alone gives it, and counts each late record once."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from dagster_kafka_flinklike import KafkaOptionsError
from dagster_kafka_flinklike.run.decode import WINDOW_CODE, InputCounts, WindowCounts
from dagster_kafka_flinklike.run.windows import (
    KEPT,
    LATE_IN,
    POSITION,
    TimeWindows,
    window_offsets,
    with_record_windows,
)
from dagster_kafka_flinklike.source.records import ERROR, RECORD_START, TOLERATED, VALUE_BYTES

HOUR = 3_600_000
Log = dict[tuple[str, int], list[int]]  # topic-partition → record timestamps in offset order


class LogAdmin:
    """offsets-for-times over a synthetic log, as the broker answers it."""

    def __init__(self, log: Log) -> None:
        self.log = log

    def offsets_for_times(self, partitions: Sequence[tuple[str, int]], ms: int) -> dict:
        return {tp: _first_at_or_after(self.log[tp], ms) for tp in partitions}

    def offsets_for_many_times(self, partitions: Sequence, timestamps: Sequence[int]) -> dict:
        return {ms: self.offsets_for_times(partitions, ms) for ms in timestamps}


def _first_at_or_after(stamps: list[int], ms: int) -> int:
    return next((o for o, t in enumerate(stamps) if t >= ms), len(stamps))


def hours(keys: int, before: int, lateness: int = 0, lookback: int = 0) -> TimeWindows:
    """``keys`` hourly windows from hour ``before``, after ``before`` earlier ones."""
    bounds = tuple(h * HOUR for h in range(before + keys + 1))
    names = tuple(f"h{h}" for h in range(before, before + keys))
    return TimeWindows(names, bounds, lateness, lookback)


def random_log(seed: int) -> Log:
    """Two topics of two partitions; mostly in order, some records early, some late."""
    rng = random.Random(seed)
    log: Log = {}
    for tp in [("t", 0), ("t", 1), ("u", 0), ("u", 1)]:
        clock, stamps = 0, []
        for _ in range(rng.randrange(20, 60)):
            clock += rng.randrange(0, 15 * 60_000)
            drift = rng.choice([0, 0, 0, -rng.randrange(HOUR // 2), -rng.randrange(2 * HOUR)])
            stamps.append(max(clock + drift + rng.randrange(-60_000, 60_000), 0))
        log[tp] = stamps
    return log


def classify(spark: Any, log: Log, windows: TimeWindows) -> dict[tuple, tuple]:
    """What a run over ``windows`` does with each record it reads, by (topic, partition,
    offset): (kept, the key of the window it counts in, the key of the window it arrived late
    in)."""
    from pyspark.sql import functions as F

    admin = LogAdmin(log)
    span = windows.span
    starts = admin.offsets_for_times(list(log), span.read_start_ms)
    ends = admin.offsets_for_times(list(log), span.stop_ms)
    offsets = window_offsets(admin, windows, ends)  # type: ignore[arg-type]
    rows = [
        (topic, p, o, log[(topic, p)][o])
        for (topic, p) in log
        for o in range(starts[(topic, p)], ends[(topic, p)])
    ]
    frame = spark.createDataFrame(
        rows, "__dkf_topic string, __dkf_partition int, __dkf_offset long, ms long"
    ).withColumn("__dkf_timestamp", F.timestamp_millis("ms"))
    got = with_record_windows(frame, windows, offsets).select(
        "__dkf_topic", "__dkf_partition", "__dkf_offset", KEPT, POSITION, LATE_IN
    )
    keys = windows.keys
    return {
        (t, p, o): (k, keys[w] if k and w is not None else None, None if lt is None else keys[lt])
        for t, p, o, k, w, lt in got.collect()
    }


def stop(log: Log, record: tuple, hour: int, lateness: int) -> int:
    """Hour ``hour``'s stop offset in the record's partition."""
    return _first_at_or_after(log[record[:2]], (hour + 1) * HOUR + lateness)


def in_time(log: Log, record: tuple, lateness: int) -> bool:
    """The rule: a record arrived in time when its offset lies before its hour's stop offset."""
    return record[2] < stop(log, record, log[record[:2]][record[2]] // HOUR, lateness)


def arrived_in(log: Log, record: tuple, lateness: int) -> int:
    """The hour being read when the record arrived: the first whose stop offset is beyond it."""
    return next(h for h in range(100) if record[2] < stop(log, record, h, lateness))


@pytest.mark.parametrize(
    ("seed", "lateness", "lookback"),
    [(1, 0, 0), (2, 300_000, 0), (3, 0, 1_800_000), (4, 5_400_000, 600_000)],
)
def test_a_run_over_several_windows_gives_each_what_a_run_over_it_alone_gives(
    spark: Any, seed: int, lateness: int, lookback: int
) -> None:
    log = random_log(seed)
    union = hours(3, 2, lateness, lookback)
    together = classify(spark, log, union)

    def stamp(record: tuple) -> int:
        return log[record[:2]][record[2]]

    for i, key in enumerate(union.keys):
        lone = hours(1, 2 + i, lateness, lookback)
        alone = classify(spark, log, lone)
        mine = {r for r, (_, w, _) in together.items() if w == key}
        assert mine == {r for r, (_, w, _) in alone.items() if w == key}
        assert mine == {
            r for r in together if stamp(r) // HOUR == 2 + i and in_time(log, r, lateness)
        }
        late = {r for r, (_, _, lt) in together.items() if lt == key}
        assert late == {r for r, (_, _, lt) in alone.items() if lt == key}
        assert late == {
            r
            for r in together
            if not in_time(log, r, lateness) and arrived_in(log, r, lateness) == 2 + i
        }
        handed_on = {r for r, (k, _, _) in alone.items() if k}
        assert handed_on == {  # its window's records, and its lookback's
            r
            for r in alone
            if lone.span.read_start_ms <= stamp(r) < lone.span.end_ms and in_time(log, r, lateness)
        }
        assert handed_on <= {r for r, (k, _, _) in together.items() if k}
    assert any(late for *_, late in together.values())  # the logs do have late records


def test_a_changelog_source_keeps_every_record_before_the_runs_end(spark: Any) -> None:
    from pyspark.sql import functions as F

    windows = hours(2, 1)
    rows = [("t", 0, o, stamp) for o, stamp in enumerate([0, 5 * HOUR // 2, HOUR, 3 * HOUR])]
    frame = spark.createDataFrame(
        rows, "__dkf_topic string, __dkf_partition int, __dkf_offset long, ms long"
    ).withColumn("__dkf_timestamp", F.timestamp_millis("ms"))
    admin = LogAdmin({("t", 0): [r[3] for r in rows]})
    offsets = window_offsets(admin, windows, {("t", 0): 4})  # type: ignore[arg-type]
    got = with_record_windows(frame, windows, offsets, changelog=True)
    assert [tuple(r) for r in got.select(KEPT, POSITION, LATE_IN).collect()] == [
        (True, None, None),  # before the first window: part of the table as of its end
        (True, 1, None),
        (True, 0, None),
        (False, None, None),  # after the run's end
    ]


def test_window_counts_are_exact_over_many_windows_and_tasks(spark: Any) -> None:
    from pyspark.sql import functions as F

    windows = 120
    frame = spark.range(0, 60_000, 1, 16).select(
        F.lit(True).alias(RECORD_START),
        F.when(F.col("id") % 7 == 0, "bad").alias(ERROR),
        F.lit(True).alias(TOLERATED),
        F.lit(10).alias(VALUE_BYTES),
        F.timestamp_millis(F.col("id")).alias("__dkf_timestamp"),
        F.lit(True).alias(KEPT),
        ((F.col("id") * 7919) % (3 * windows)).cast("int").alias(WINDOW_CODE),
    )
    observed, counts = InputCounts.observing(frame, windows)
    observed.write.format("noop").mode("overwrite").save()
    codes = dict(frame.groupBy(WINDOW_CODE).count().collect())
    assert counts.stats().windows == tuple(
        WindowCounts(codes.get(3 * w, 0), codes.get(3 * w + 1, 0), codes.get(3 * w + 2, 0))
        for w in range(windows)
    )


def test_time_windows_need_the_window_before_their_first_and_their_lookback() -> None:
    assert hours(2, 1).span.start_ms == HOUR
    with pytest.raises(KafkaOptionsError, match="the one before it"):
        TimeWindows(("h0",), (0, HOUR))
    with pytest.raises(KafkaOptionsError, match="must increase"):
        TimeWindows(("h1",), (0, HOUR, HOUR))
    with pytest.raises(KafkaOptionsError, match="reach back to its lookback"):
        TimeWindows(("h1",), (0, HOUR, 2 * HOUR), lookback_ms=HOUR + 1)


def test_a_record_without_a_timestamp_is_kept_in_the_window_it_arrived_in(spark: Any) -> None:
    """A record whose timestamp could not be read (dirty: out of range) is never dropped by
    the window rule: the run keeps it, in the window being read when it arrived, so the
    dirty-data policy counts it (or fails the run)."""
    from pyspark.sql import functions as F

    log: Log = {("t", 0): [10, HOUR + 10, HOUR + 20, 2 * HOUR + 10]}
    windows = hours(2, 1)  # h1, h2 (after h0)
    admin = LogAdmin(log)
    offsets = window_offsets(admin, windows, {("t", 0): 4})  # type: ignore[arg-type]
    rows = [("t", 0, o, None if o == 2 else ms) for o, ms in enumerate(log[("t", 0)])]
    frame = spark.createDataFrame(
        rows, "__dkf_topic string, __dkf_partition int, __dkf_offset long, ms long"
    ).withColumn("__dkf_timestamp", F.timestamp_millis("ms"))
    got = {
        r["__dkf_offset"]: (r[KEPT], r[POSITION], r[LATE_IN])
        for r in with_record_windows(frame, windows, offsets).collect()
    }
    assert got[2] == (True, 0, None)  # arrived while h1 was read
    assert got[1] == (True, 0, None) and got[3] == (True, 1, None) and not got[0][0]
    changelog = with_record_windows(frame, windows, offsets, changelog=True)
    assert changelog.where(F.col("__dkf_offset") == 2).first()[KEPT] is True
