"""Planning against a fake offsets retriever: start/stop offsets, checkpoint priority, splits."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import KafkaTableSpec, OffsetsError
from dagster_kafka_flinklike.source import KafkaSplit, plan_source, split_ranges
from dagster_kafka_flinklike.source.offsets import OffsetResetStrategy, OffsetsInitializer

T = "orders"
PARTS = [(T, 0), (T, 1), (T, 2)]


class FakeRetriever:
    """Log start 10, end 100 on every partition; committed offsets as given."""

    def __init__(self, committed=None, begin=10, end=100, times=None):
        self.committed = committed or {}
        self.begin, self.end, self.times = begin, end, times or {}

    def committed_offsets(self, partitions):
        return {tp: self.committed[tp] for tp in partitions if tp in self.committed}

    def beginning_offsets(self, partitions):
        return {tp: self.begin for tp in partitions}

    def end_offsets(self, partitions):
        return {tp: self.end for tp in partitions}

    def offsets_for_times(self, partitions, ts):
        return {tp: self.times.get(tp, self.end) for tp in partitions}


def spec(**extra: str) -> KafkaTableSpec:
    options = {"connector": "kafka", "topic": T, "format": "json", "properties.group.id": "g"}
    options.update(extra)
    return KafkaTableSpec.from_options(options)


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
    plan = plan_source(spec(**{"scan.startup.mode": mode}), PARTS, FakeRetriever(), checkpoint)
    assert plan.starts == checkpoint
    assert plan.stops == dict.fromkeys(PARTS, 100)
    assert plan.pending_offsets == 50 + 40 + 30


def test_partition_new_since_checkpoint_starts_at_earliest() -> None:
    plan = plan_source(
        spec(**{"scan.startup.mode": "latest-offset"}),
        PARTS,
        FakeRetriever(),
        {(T, 0): 50, (T, 1): 60},
    )
    assert plan.starts[(T, 2)] == 10


def test_group_offsets_without_commit_and_reset_is_an_error() -> None:
    with pytest.raises(OffsetsError, match=r"auto\.offset\.reset"):
        plan_source(spec(), PARTS, FakeRetriever())


def test_group_offsets_with_reset_strategy() -> None:
    retriever = FakeRetriever(committed={(T, 0): 42})
    plan = plan_source(spec(**{"properties.auto.offset.reset": "latest"}), PARTS, retriever)
    assert plan.starts == {(T, 0): 42, (T, 1): 100, (T, 2): 100}


def test_checkpoint_below_log_start_fails_naming_both_offsets() -> None:
    with pytest.raises(OffsetsError, match=r"Offset 3 of orders-0 .* start offset is 10"):
        plan_source(spec(), PARTS, FakeRetriever(), {(T, 0): 3, (T, 1): 10, (T, 2): 10})


def test_checkpoint_below_log_start_follows_reset_strategy() -> None:
    plan = plan_source(
        spec(**{"properties.auto.offset.reset": "earliest"}),
        PARTS,
        FakeRetriever(),
        {(T, 0): 3, (T, 1): 10, (T, 2): 10},
    )
    assert plan.starts[(T, 0)] == 10


def test_specific_offsets_fall_back_to_group_offsets() -> None:
    s = spec(
        **{
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42",
        }
    )
    plan = plan_source(s, PARTS, FakeRetriever(committed={(T, 1): 55, (T, 2): 66}))
    assert plan.starts == {(T, 0): 42, (T, 1): 55, (T, 2): 66}


def test_timestamp_mode_uses_offsets_for_times() -> None:
    s = spec(**{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1000"})
    plan = plan_source(s, PARTS, FakeRetriever(times={(T, 0): 20}))
    assert plan.starts == {(T, 0): 20, (T, 1): 100, (T, 2): 100}


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


def test_committed_initializer_reset_none_names_partitions() -> None:
    init = OffsetsInitializer.committed_offsets(OffsetResetStrategy.NONE)
    with pytest.raises(OffsetsError, match="orders-1"):
        init.get_offsets([(T, 1)], FakeRetriever())


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
    starts = {(T, p): r[0] for p, r in ranges.items()}
    stops = {(T, p): r[1] for p, r in ranges.items()}
    splits = split_ranges(starts, stops, max_size)
    assert [s.size for s in splits] == expected_sizes
    for (topic, partition), start in starts.items():
        mine = [s for s in splits if (s.topic, s.partition) == (topic, partition)]
        covered = [o for s in mine for o in range(s.start, s.stop)]
        assert covered == list(range(start, stops[(topic, partition)]))
    assert all(isinstance(s, KafkaSplit) and s.size <= max_size for s in splits)
