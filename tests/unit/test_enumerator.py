"""Planning against a fake offsets retriever: start/stop offsets, checkpoint priority, splits."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_kafka_flinklike import KafkaTableSpec, OffsetsError
from dagster_kafka_flinklike.errors import KafkaOptionsError
from dagster_kafka_flinklike.source import KafkaSplit, plan_source, split_ranges
from dagster_kafka_flinklike.source import enumerator as enumerator_module
from dagster_kafka_flinklike.source import offsets as offsets_module
from dagster_kafka_flinklike.source.enumerator import reset_strategy
from dagster_kafka_flinklike.source.offsets import OffsetResetStrategy, OffsetsInitializer

T = "orders"
PARTS = [(T, 0), (T, 1), (T, 2)]


class FakeRetriever:
    """Log start 10, end 100 on every partition unless given per partition; committed as given.

    ``high`` is the high watermark (above ``end`` when a transaction is open); ``calls`` counts
    requests per method.
    """

    def __init__(self, committed=None, begin=10, end=100, times=None, high=None, group_id="g"):
        self.committed = committed or {}
        self.begin, self.end, self.times = begin, end, times or {}
        self.high = high
        self.group_id = group_id
        self.calls: dict[str, int] = {}

    def _count(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    @staticmethod
    def _value(value, tp):
        return value[tp] if isinstance(value, dict) else value

    def committed_offsets(self, partitions):
        self._count("committed")
        return {tp: self.committed[tp] for tp in partitions if tp in self.committed}

    def beginning_offsets(self, partitions):
        self._count("begin")
        return {tp: self._value(self.begin, tp) for tp in partitions}

    def end_offsets(self, partitions):
        self._count("end")
        return {tp: self._value(self.end, tp) for tp in partitions}

    def high_watermarks(self, partitions):
        self._count("high")
        high = self.end if self.high is None else self.high
        return {tp: self._value(high, tp) for tp in partitions}

    def offsets_for_times(self, partitions, ts):
        self._count("times")
        return {tp: self.times.get(tp, self._value(self.end, tp)) for tp in partitions}


def spec(**extra: str) -> KafkaTableSpec:
    options = {"connector": "kafka", "topic": T, "format": "json", "properties.group.id": "g"}
    options.update(extra)
    return KafkaTableSpec.from_options(options)


# -- start offsets --------------------------------------------------------------------------------


def test_earliest_without_checkpoint_reads_whole_log() -> None:
    plan = plan_source(spec(**{"scan.startup.mode": "earliest-offset"}), PARTS, FakeRetriever())
    assert plan.starts == dict.fromkeys(PARTS, 10)
    assert plan.stops == dict.fromkeys(PARTS, 100)
    assert [s.size for s in plan.splits] == [90, 90, 90]


def test_latest_without_checkpoint_reads_nothing() -> None:
    plan = plan_source(spec(**{"scan.startup.mode": "latest-offset"}), PARTS, FakeRetriever())
    assert plan.starts == dict.fromkeys(PARTS, 100)
    assert plan.splits == ()


@pytest.mark.parametrize("mode", ["earliest-offset", "latest-offset", "group-offsets"])
def test_checkpoint_has_priority_over_startup_mode(mode: str) -> None:
    checkpoint = {(T, 0): 50, (T, 1): 60, (T, 2): 70}
    retriever = FakeRetriever(committed=dict.fromkeys(PARTS, 20))
    plan = plan_source(spec(**{"scan.startup.mode": mode}), PARTS, retriever, checkpoint)
    assert plan.starts == checkpoint
    assert plan.stops == dict.fromkeys(PARTS, 100)
    assert plan.pending_offsets == 50 + 40 + 30
    assert "committed" not in retriever.calls


def test_partition_new_since_checkpoint_starts_at_earliest() -> None:
    plan = plan_source(
        spec(**{"scan.startup.mode": "latest-offset"}),
        PARTS,
        FakeRetriever(),
        {(T, 0): 50, (T, 1): 60},
    )
    assert plan.starts == {(T, 0): 50, (T, 1): 60, (T, 2): 10}


def test_empty_checkpoint_is_a_checkpoint_every_partition_is_new() -> None:
    """A previous run that subscribed nothing: what appeared since starts at the log start."""
    plan = plan_source(spec(**{"scan.startup.mode": "latest-offset"}), PARTS, FakeRetriever(), {})
    assert plan.starts == dict.fromkeys(PARTS, 10)


def test_checkpoint_partitions_no_longer_subscribed_are_ignored() -> None:
    plan = plan_source(spec(), [(T, 0)], FakeRetriever(), {(T, 0): 40, ("gone", 0): 7})
    assert plan.starts == {(T, 0): 40}
    assert plan.stops == {(T, 0): 100}


def test_group_offsets_without_commit_and_reset_is_an_error() -> None:
    retriever = FakeRetriever(committed={(T, 0): 42}, group_id="billing")
    with pytest.raises(OffsetsError) as err:
        plan_source(spec(), PARTS, retriever)
    message = str(err.value)
    assert "'billing'" in message
    assert "orders-1, orders-2" in message
    assert "orders-0" not in message
    assert "'properties.auto.offset.reset'" in message


@pytest.mark.parametrize(
    ("reset", "expected"),
    [("earliest", 10), ("latest", 100), ("smallest", 10), ("largest", 100)],
)
def test_group_offsets_with_reset_strategy(reset: str, expected: int) -> None:
    retriever = FakeRetriever(committed={(T, 0): 42})
    plan = plan_source(spec(**{"properties.auto.offset.reset": reset}), PARTS, retriever)
    assert plan.starts == {(T, 0): 42, (T, 1): expected, (T, 2): expected}


@pytest.mark.parametrize(
    ("value", "strategy"),
    [
        (None, OffsetResetStrategy.NONE),
        ("none", OffsetResetStrategy.NONE),
        ("EARLIEST", OffsetResetStrategy.EARLIEST),
        ("beginning", OffsetResetStrategy.EARLIEST),
        ("end", OffsetResetStrategy.LATEST),
    ],
)
def test_reset_strategy_spellings(value: str | None, strategy: OffsetResetStrategy) -> None:
    extra = {} if value is None else {"properties.auto.offset.reset": value}
    assert reset_strategy(spec(**extra)) is strategy


def test_specific_offsets_fall_back_to_group_offsets() -> None:
    s = spec(
        **{
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42",
        }
    )
    plan = plan_source(s, PARTS, FakeRetriever(committed={(T, 1): 55, (T, 2): 66}))
    assert plan.starts == {(T, 0): 42, (T, 1): 55, (T, 2): 66}


@pytest.mark.parametrize(("reset", "expected"), [(None, 10), ("earliest", 10), ("latest", 100)])
def test_specific_offsets_without_commit_follow_the_reset_strategy(
    reset: str | None, expected: int
) -> None:
    """Unset, the fallback is Flink's ``OffsetsInitializer.offsets`` default: the log start."""
    extra = {
        "scan.startup.mode": "specific-offsets",
        "scan.startup.specific-offsets": "partition:0,offset:42;partition:7,offset:1",
    }
    if reset:
        extra["properties.auto.offset.reset"] = reset
    plan = plan_source(spec(**extra), PARTS, FakeRetriever(committed={(T, 1): 55}))
    assert plan.starts == {(T, 0): 42, (T, 1): 55, (T, 2): expected}


def test_specific_offsets_with_reset_none_fail_for_unlisted_partition_without_commit() -> None:
    s = spec(
        **{
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42",
            "properties.auto.offset.reset": "none",
        }
    )
    with pytest.raises(OffsetsError, match=r"'g' has no committed offset .*orders-1, orders-2"):
        plan_source(s, PARTS, FakeRetriever())


def test_timestamp_mode_uses_offsets_for_times() -> None:
    s = spec(**{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1000"})
    plan = plan_source(s, PARTS, FakeRetriever(times={(T, 0): 20}))
    assert plan.starts == {(T, 0): 20, (T, 1): 100, (T, 2): 100}
    assert [(s.partition, s.start, s.stop) for s in plan.splits] == [(0, 20, 100)]


def test_one_plan_sees_one_end_of_each_log() -> None:
    """latest-offset start and the default stop come from the same ListOffsets answer."""

    class Growing(FakeRetriever):
        def end_offsets(self, partitions):
            self.end += 5
            return super().end_offsets(partitions)

    retriever = Growing()
    plan = plan_source(spec(**{"scan.startup.mode": "latest-offset"}), PARTS, retriever)
    assert plan.starts == plan.stops == dict.fromkeys(PARTS, 105)
    assert retriever.calls["end"] == 1


def test_no_partitions_no_plan() -> None:
    retriever = FakeRetriever()
    plan = plan_source(spec(), [], retriever)
    assert (plan.starts, plan.stops, plan.splits) == ({}, {}, ())
    assert retriever.calls == {}


# -- out of range starts --------------------------------------------------------------------------


def test_checkpoint_below_log_start_fails_naming_both_offsets() -> None:
    with pytest.raises(OffsetsError) as err:
        plan_source(spec(), PARTS, FakeRetriever(), {(T, 0): 3, (T, 1): 10, (T, 2): 10})
    message = str(err.value)
    assert "Start offset 3 of orders-0 (the checkpoint offset)" in message
    assert "below the log start offset 10" in message
    assert "records 3..9 were deleted by retention" in message
    assert "'properties.auto.offset.reset'" in message


@pytest.mark.parametrize(("reset", "expected"), [("earliest", 10), ("latest", 100)])
def test_checkpoint_below_log_start_follows_reset_strategy(reset: str, expected: int) -> None:
    plan = plan_source(
        spec(**{"properties.auto.offset.reset": reset}),
        PARTS,
        FakeRetriever(),
        {(T, 0): 3, (T, 1): 10, (T, 2): 10},
    )
    assert plan.starts == {(T, 0): expected, (T, 1): 10, (T, 2): 10}
    assert list(plan.resets) == [(T, 0)]
    assert f"'properties.auto.offset.reset' = '{reset}' starts at {expected}" in plan.resets[(T, 0)]


def test_committed_offset_below_log_start_names_the_group() -> None:
    retriever = FakeRetriever(committed=dict.fromkeys(PARTS, 4), group_id="billing")
    with pytest.raises(OffsetsError, match=r"committed offset of consumer group 'billing'"):
        plan_source(spec(), PARTS, retriever)


def test_checkpoint_beyond_end_fails_naming_both_offsets() -> None:
    with pytest.raises(OffsetsError) as err:
        plan_source(spec(), PARTS, FakeRetriever(), {(T, 0): 10, (T, 1): 500, (T, 2): 10})
    message = str(err.value)
    assert "Start offset 500 of orders-1 (the checkpoint offset)" in message
    assert "beyond the end of the log (100)" in message
    assert "re-created" in message


@pytest.mark.parametrize(("reset", "expected"), [("earliest", 10), ("latest", 100)])
def test_checkpoint_beyond_end_follows_reset_strategy(reset: str, expected: int) -> None:
    plan = plan_source(
        spec(**{"properties.auto.offset.reset": reset}), PARTS, FakeRetriever(), {(T, 1): 500}
    )
    assert plan.starts[(T, 1)] == expected
    assert plan.stops[(T, 1)] == 100
    assert "beyond the end of the log (100)" in plan.resets[(T, 1)]


def test_start_inside_an_open_transaction_is_not_beyond_the_end() -> None:
    """Between the last stable offset and the high watermark: valid, nothing to read yet."""
    retriever = FakeRetriever(end=100, high=120)
    plan = plan_source(spec(), PARTS, retriever, {(T, 0): 110, (T, 1): 100, (T, 2): 50})
    assert plan.starts == {(T, 0): 110, (T, 1): 100, (T, 2): 50}
    assert plan.stops == {(T, 0): 110, (T, 1): 100, (T, 2): 100}
    assert [(s.partition, s.start, s.stop) for s in plan.splits] == [(2, 50, 100)]
    assert plan.resets == {}


def test_high_watermarks_are_only_asked_for_when_a_start_is_past_the_end() -> None:
    retriever = FakeRetriever()
    plan_source(spec(), PARTS, retriever, {(T, 0): 50})
    assert "high" not in retriever.calls


# -- stop offsets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["unbounded", "latest-offset"])
def test_default_and_latest_bounded_stop_at_end(mode: str) -> None:
    ends = {(T, 0): 30, (T, 1): 40, (T, 2): 50}
    plan = plan_source(spec(**{"scan.bounded.mode": mode}), PARTS, FakeRetriever(end=ends), {})
    assert plan.stops == ends


def test_bounded_specific_offsets_stop_early() -> None:
    s = spec(
        **{
            "scan.startup.mode": "earliest-offset",
            "scan.bounded.mode": "specific-offsets",
            "scan.bounded.specific-offsets": "partition:0,offset:15;partition:1,offset:5",
        }
    )
    plan = plan_source(s, PARTS, FakeRetriever())
    assert plan.stops == {(T, 0): 15, (T, 1): 10, (T, 2): 100}


def test_bounded_specific_offset_beyond_end_is_clamped() -> None:
    s = spec(
        **{
            "scan.startup.mode": "earliest-offset",
            "scan.bounded.mode": "specific-offsets",
            "scan.bounded.specific-offsets": "partition:0,offset:5000",
        }
    )
    assert plan_source(s, PARTS, FakeRetriever()).stops[(T, 0)] == 100


def test_bounded_group_offsets_stop_at_committed() -> None:
    s = spec(**{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "group-offsets"})
    plan = plan_source(s, PARTS, FakeRetriever(committed={(T, 0): 20, (T, 1): 30, (T, 2): 5}))
    assert plan.stops == {(T, 0): 20, (T, 1): 30, (T, 2): 10}


def test_bounded_group_offsets_without_commit_is_an_error() -> None:
    s = spec(
        **{
            "scan.startup.mode": "earliest-offset",
            "scan.bounded.mode": "group-offsets",
            "properties.auto.offset.reset": "latest",  # a start strategy: not used for stops
        }
    )
    with pytest.raises(OffsetsError) as err:
        plan_source(s, PARTS, FakeRetriever(committed={(T, 0): 20}))
    message = str(err.value)
    assert "'g' has no committed offset for partition(s) orders-1, orders-2" in message
    assert "'scan.bounded.mode'" in message


def test_bounded_timestamp_stops_before_first_record_at_or_after_it() -> None:
    s = spec(
        **{
            "scan.startup.mode": "earliest-offset",
            "scan.bounded.mode": "timestamp",
            "scan.bounded.timestamp-millis": "5000",
        }
    )
    plan = plan_source(s, PARTS, FakeRetriever(times={(T, 0): 33, (T, 1): 4}))
    assert plan.stops == {(T, 0): 33, (T, 1): 10, (T, 2): 100}


def test_committed_initializer_reset_none_names_partitions() -> None:
    init = OffsetsInitializer.committed_offsets(OffsetResetStrategy.NONE)
    with pytest.raises(OffsetsError, match="orders-1"):
        init.get_offsets([(T, 1)], FakeRetriever())


def test_offsets_initializer_default_fallback_is_committed_then_earliest() -> None:
    init = OffsetsInitializer.offsets({(T, 0): 77})
    got = init.get_offsets(PARTS, FakeRetriever(committed={(T, 1): 50}))
    assert got == {(T, 0): 77, (T, 1): 50, (T, 2): 10}


# -- splits ---------------------------------------------------------------------------------------


def _split(ranges: dict[int, tuple[int, int]], max_size: int, min_splits: int | None = None):
    starts = {(T, p): r[0] for p, r in ranges.items()}
    stops = {(T, p): r[1] for p, r in ranges.items()}
    return starts, stops, split_ranges(starts, stops, max_size, min_splits)


def _assert_exact_cover(starts, stops, splits) -> None:
    for tp, start in starts.items():
        mine = [s for s in splits if (s.topic, s.partition) == tp]
        covered = [o for s in mine for o in range(s.start, s.stop)]
        assert covered == list(range(start, max(start, stops[tp])))
    assert all(s.size > 0 for s in splits)


@pytest.mark.parametrize(
    ("ranges", "max_size", "expected_sizes"),
    [
        ({0: (0, 10), 1: (0, 10), 2: (0, 1)}, 2, [2] * 5 + [2] * 5 + [1]),
        ({0: (0, 10), 1: (0, 10), 2: (0, 1)}, 100, [10, 10, 1]),
        ({0: (5, 5), 1: (0, 3)}, 1, [1, 1, 1]),
        ({0: (0, 7)}, 3, [2, 2, 3]),
    ],
)
def test_split_ranges_cover_every_offset_exactly_once(ranges, max_size, expected_sizes) -> None:
    starts, stops, splits = _split(ranges, max_size)
    assert [s.size for s in splits] == expected_sizes
    _assert_exact_cover(starts, stops, splits)
    assert all(isinstance(s, KafkaSplit) and s.size <= max_size for s in splits)


@pytest.mark.parametrize(
    ("ranges", "min_splits", "expected"),
    [
        # Spark's vector: the two large ranges get 3 pieces each, the small one stays whole.
        (
            {0: (0, 10), 1: (0, 10), 2: (0, 1)},
            6,
            [(0, 0, 3), (0, 3, 6), (0, 6, 10), (1, 0, 3), (1, 3, 6), (1, 6, 10), (2, 0, 1)],
        ),
        # Enough ranges already: nothing changes.
        ({0: (0, 10), 1: (0, 10), 2: (0, 1)}, 3, [(0, 0, 10), (1, 0, 10), (2, 0, 1)]),
        # Skewed: the big range takes every extra piece.
        ({0: (0, 100), 1: (0, 5)}, 4, [(0, 0, 33), (0, 33, 66), (0, 66, 100), (1, 0, 5)]),
        # Empty ranges give no split and take no share.
        ({0: (7, 7), 1: (0, 4), 2: (9, 3)}, 2, [(1, 0, 2), (1, 2, 4)]),
        # More splits wanted than offsets: one split per offset, none empty.
        ({0: (0, 2), 1: (0, 1)}, 10, [(0, 0, 1), (0, 1, 2), (1, 0, 1)]),
        # Rounding down is made up: 3 equal ranges and 10 wanted give 10, not 9.
        (
            {0: (0, 9), 1: (0, 9), 2: (0, 9)},
            10,
            [
                *[(0, 0, 2), (0, 2, 4), (0, 4, 6), (0, 6, 9)],
                *[(1, 0, 3), (1, 3, 6), (1, 6, 9), (2, 0, 3), (2, 3, 6), (2, 6, 9)],
            ],
        ),
    ],
)
def test_min_splits_split_large_ranges_proportionally(ranges, min_splits, expected) -> None:
    starts, stops, splits = _split(ranges, 1_000, min_splits)
    assert [(s.partition, s.start, s.stop) for s in splits] == expected
    _assert_exact_cover(starts, stops, splits)


def test_min_splits_apply_after_max_records_per_split() -> None:
    _, _, splits = _split({0: (0, 12), 1: (0, 2)}, 6, 5)
    assert [(s.partition, s.start, s.stop) for s in splits] == [
        (0, 0, 3),
        (0, 3, 6),
        (0, 6, 9),
        (0, 9, 12),
        (1, 0, 2),
    ]


def test_plan_source_passes_min_splits() -> None:
    plan = plan_source(
        spec(**{"scan.startup.mode": "earliest-offset"}), [(T, 0)], FakeRetriever(), min_splits=3
    )
    assert [(s.start, s.stop) for s in plan.splits] == [(10, 40), (40, 70), (70, 100)]


@pytest.mark.parametrize(("max_size", "min_splits"), [(0, None), (1, 0), (-5, 3)])
def test_split_arguments_are_checked(max_size: int, min_splits: int | None) -> None:
    with pytest.raises(KafkaOptionsError, match="must be >= 1"):
        split_ranges({(T, 0): 0}, {(T, 0): 10}, max_size, min_splits)


_ranges = st.dictionaries(
    st.integers(0, 6),
    st.tuples(st.integers(0, 1_000), st.integers(-5, 400)).map(lambda r: (r[0], r[0] + r[1])),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(
    ranges=_ranges,
    max_size=st.integers(1, 500),
    min_splits=st.none() | st.integers(1, 60),
)
def test_split_property_exact_contiguous_cover(ranges, max_size, min_splits) -> None:
    starts, stops, splits = _split(ranges, max_size, min_splits)
    _assert_exact_cover(starts, stops, splits)
    assert all(s.size <= max_size for s in splits)
    order = [(s.topic, s.partition, s.start) for s in splits]
    assert order == sorted(order)
    total = sum(max(0, stops[tp] - starts[tp]) for tp in starts)
    floor = min(min_splits or 0, total)
    assert len(splits) >= floor
    if min_splits is None:
        assert len(splits) == sum(
            -(-(stops[tp] - starts[tp]) // max_size) for tp in starts if stops[tp] > starts[tp]
        )


def test_docstring_examples_run() -> None:
    for module in (enumerator_module, offsets_module):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
