"""Source planning semantics on the real broker, read back with Spark record by record.

Subscription (topic list, pattern, partition set), every ``scan.startup.mode``, checkpoint
priority, every ``scan.bounded.mode``, retention and re-created topics, transactions under both
isolation levels, split planning, duplicated group detection and group offsets for metrics.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from dagster_kafka_flinklike import KafkaTableSpec, OffsetsError
from dagster_kafka_flinklike.options import client_config
from dagster_kafka_flinklike.source import SourcePlan, plan_source
from dagster_kafka_flinklike.source.admin import KafkaAdmin
from dagster_kafka_flinklike.source.reader import read_splits
from tests.conftest import IN_ORDER, produce, wait_for_topic

Record = tuple[str, int, int, str]


def make_spec(bootstrap: str, subscription: dict[str, str], **options: str) -> KafkaTableSpec:
    """A raw-format source table; ``options`` are Flink keys (pass them as ``**{...}``)."""
    group = options.pop("group", f"g-{uuid.uuid4().hex[:8]}")
    opts = {
        "connector": "kafka",
        "format": "raw",
        "properties.bootstrap.servers": bootstrap,
        "properties.group.id": group,
        **subscription,
        **options,
    }
    return KafkaTableSpec.from_options(opts, columns=[{"name": "v", "type": "STRING"}])


def plan(
    spec: KafkaTableSpec,
    checkpoint: dict[tuple[str, int], int] | None = None,
    *,
    partitions: Iterable[tuple[str, int]] | None = None,
    min_splits: int | None = None,
) -> SourcePlan:
    """Plan as the orchestrator does: a fresh admin, the spec's subscription, the checkpoint."""
    admin = KafkaAdmin(spec.properties, group_id=spec.effective_group_id)
    if partitions is not None:
        subscribed = admin.partitions(partitions=partitions)
    else:
        subscribed = admin.partitions(spec.topics, spec.topic_pattern)
    return plan_source(spec, subscribed, admin, checkpoint, min_splits=min_splits)


def read(spark, spec: KafkaTableSpec, source_plan: SourcePlan) -> list[Record]:
    """Every record the plan's splits read: sorted (topic, partition, offset, value)."""
    frame = read_splits(
        spark,
        source_plan.splits,
        client_config(spec.properties, role="consumer"),
        ("topic", "partition", "offset", "value"),
    )
    return sorted(
        (r["topic"], r["partition"], r["offset"], bytes(r["value"]).decode())
        for r in frame.collect()
    )


def send(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes, int]]) -> None:
    """Produce ``(key, value, partition)`` records synchronously."""
    batch: list[tuple[bytes | None, bytes | None, int]] = list(records)
    produce(bootstrap, topic, batch)


def fill(bootstrap: str, topic: str, counts: dict[int, int], tag: str = "v") -> list[Record]:
    """Produce ``counts[p]`` records to each partition; the records as they will be read."""
    records = [(None, f"{tag}{p}-{i}".encode(), p) for p, n in counts.items() for i in range(n)]
    send(bootstrap, topic, records)
    return sorted((topic, p, i, f"{tag}{p}-{i}") for p, n in counts.items() for i in range(n))


def produce_at(bootstrap: str, topic: str, records: list[tuple[int, int]]) -> None:
    """Produce ``(partition, timestamp_ms)`` records valued ``p<partition>@<timestamp>``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **IN_ORDER})
    for partition, ts in records:
        producer.produce(topic, f"p{partition}@{ts}".encode(), partition=partition, timestamp=ts)
    assert producer.flush(30) == 0


def create_topic(admin: AdminClient, name: str, partitions: int) -> str:
    """Create ``name`` (retrying while a deletion of the same name completes) and wait for it."""
    deadline = time.monotonic() + 60
    while True:
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
            break
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    wait_for_topic(admin, name, partitions)
    return name


# -- subscription ---------------------------------------------------------------------------------


def test_topic_list_reads_every_partition_of_each_topic(kafka_bootstrap, new_topic, spark) -> None:
    a, b = new_topic(partitions=2), new_topic(partitions=1)
    expected = fill(kafka_bootstrap, a, {0: 2, 1: 1}) + fill(kafka_bootstrap, b, {0: 3})
    spec = make_spec(
        kafka_bootstrap, {"topic": f"{a};{b}"}, **{"scan.startup.mode": "earliest-offset"}
    )
    source_plan = plan(spec)
    assert list(source_plan.starts) == [(a, 0), (a, 1), (b, 0)]
    assert read(spark, spec, source_plan) == sorted(expected)

    missing = make_spec(kafka_bootstrap, {"topic": f"{a};nope-{uuid.uuid4().hex}"})
    with pytest.raises(OffsetsError, match=r"Topic 'nope-[0-9a-f]+' does not exist"):
        plan(missing)


def test_topic_pattern_picks_up_new_matching_topic_at_earliest(
    kafka_bootstrap, admin, spark
) -> None:
    prefix = f"pattern-{uuid.uuid4().hex[:8]}"
    first = create_topic(admin, f"{prefix}-a", 2)
    fill(kafka_bootstrap, first, {0: 2, 1: 1})
    spec = make_spec(
        kafka_bootstrap,
        {"topic-pattern": re.escape(prefix) + r"-[a-z]"},
        **{"scan.startup.mode": "latest-offset"},
    )
    run1 = plan(spec)
    assert run1.starts == run1.stops == {(first, 0): 2, (first, 1): 1}
    assert read(spark, spec, run1) == []

    send(kafka_bootstrap, first, [(None, b"after", 1)])
    second = create_topic(admin, f"{prefix}-b", 1)
    fill(kafka_bootstrap, second, {0: 2}, tag="new")
    other = create_topic(admin, f"{prefix}-other", 1)  # does not match: the whole name must
    fill(kafka_bootstrap, other, {0: 1})

    run2 = plan(spec, run1.stops)
    assert run2.starts == {(first, 0): 2, (first, 1): 1, (second, 0): 0}
    assert read(spark, spec, run2) == [
        (first, 1, 1, "after"),
        (second, 0, 0, "new0-0"),
        (second, 0, 1, "new0-1"),
    ]


def test_explicit_partition_set(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=3)
    expected = fill(kafka_bootstrap, topic, {0: 2, 1: 2, 2: 2})
    spec = make_spec(kafka_bootstrap, {"topic": topic}, **{"scan.startup.mode": "earliest-offset"})
    source_plan = plan(spec, partitions=[(topic, 2), (topic, 0)])
    assert list(source_plan.starts) == [(topic, 0), (topic, 2)]
    assert read(spark, spec, source_plan) == [r for r in expected if r[1] != 1]

    admin = KafkaAdmin(spec.properties)
    with pytest.raises(OffsetsError, match=rf"Partition\(s\) {re.escape(topic)}-5 do not exist"):
        admin.partitions(partitions=[(topic, 0), (topic, 5)])
    with pytest.raises(OffsetsError, match="exactly one"):
        admin.partitions([topic], partitions=[(topic, 0)])


# -- start offsets --------------------------------------------------------------------------------


def test_earliest_and_latest_offset(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=2)
    expected = fill(kafka_bootstrap, topic, {0: 3, 1: 2})
    earliest = make_spec(
        kafka_bootstrap, {"topic": topic}, **{"scan.startup.mode": "earliest-offset"}
    )
    assert read(spark, earliest, plan(earliest)) == expected

    latest = make_spec(kafka_bootstrap, {"topic": topic}, **{"scan.startup.mode": "latest-offset"})
    run1 = plan(latest)
    assert run1.starts == {(topic, 0): 3, (topic, 1): 2}
    assert run1.splits == ()
    send(kafka_bootstrap, topic, [(None, b"late", 1)])
    assert read(spark, latest, plan(latest, run1.stops)) == [(topic, 1, 2, "late")]


@pytest.mark.parametrize(("reset", "unset_start"), [("earliest", 0), ("latest", 4)])
def test_group_offsets_with_reset_strategy(
    kafka_bootstrap, new_topic, spark, reset: str, unset_start: int
) -> None:
    topic = new_topic(partitions=3)
    expected = fill(kafka_bootstrap, topic, {0: 4, 1: 4, 2: 4})
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{"scan.startup.mode": "group-offsets", "properties.auto.offset.reset": reset},
    )
    KafkaAdmin(spec.properties).commit_group_offsets({(topic, 0): 1})
    source_plan = plan(spec)
    assert source_plan.starts == {(topic, 0): 1, (topic, 1): unset_start, (topic, 2): unset_start}
    assert read(spark, spec, source_plan) == [
        r for r in expected if r[2] >= source_plan.starts[(topic, r[1])]
    ]


def test_group_offsets_without_commit_and_reset_names_group_partition_and_option(
    kafka_bootstrap, new_topic
) -> None:
    topic = new_topic(partitions=2)
    fill(kafka_bootstrap, topic, {0: 1, 1: 1})
    spec = make_spec(kafka_bootstrap, {"topic": topic}, group=f"billing-{topic}")
    KafkaAdmin(spec.properties).commit_group_offsets({(topic, 0): 1})
    with pytest.raises(OffsetsError) as err:
        plan(spec)
    message = str(err.value)
    assert f"Consumer group 'billing-{topic}' has no committed offset" in message
    assert f"{topic}-1" in message
    assert f"{topic}-0" not in message
    assert "'properties.auto.offset.reset'" in message


def test_timestamp_start(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=2)
    produce_at(kafka_bootstrap, topic, [(0, 1000), (0, 2000), (0, 3000), (0, 4000), (1, 1500)])
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "3000"},
    )
    source_plan = plan(spec)
    # p0: first timestamp >= 3000 is offset 2; p1 has none, so it starts at its end.
    assert source_plan.starts == {(topic, 0): 2, (topic, 1): 1}
    assert read(spark, spec, source_plan) == [
        (topic, 0, 2, "p0@3000"),
        (topic, 0, 3, "p0@4000"),
    ]


def test_specific_offsets_fall_back_to_group_offsets_then_reset(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic = new_topic(partitions=3)
    expected = fill(kafka_bootstrap, topic, {0: 5, 1: 5, 2: 5})
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:3",
            "properties.auto.offset.reset": "latest",
        },
    )
    KafkaAdmin(spec.properties).commit_group_offsets({(topic, 0): 1, (topic, 1): 2})
    source_plan = plan(spec)
    assert source_plan.starts == {(topic, 0): 3, (topic, 1): 2, (topic, 2): 5}
    assert read(spark, spec, source_plan) == [
        r for r in expected if (r[1] == 0 and r[2] >= 3) or (r[1] == 1 and r[2] >= 2)
    ]


def test_checkpoint_beats_startup_mode_and_added_partitions_start_at_earliest(
    kafka_bootstrap, new_topic, admin, spark
) -> None:
    topic = new_topic(partitions=2)
    fill(kafka_bootstrap, topic, {0: 3, 1: 3})
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{"scan.startup.mode": "group-offsets", "properties.auto.offset.reset": "latest"},
    )
    KafkaAdmin(spec.properties).commit_group_offsets({(topic, 0): 0, (topic, 1): 0})
    checkpoint = {(topic, 0): 2, (topic, 1): 3}

    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=30)
    wait_for_topic(admin, topic, 3)
    send(kafka_bootstrap, topic, [(None, b"p2-0", 2), (None, b"p2-1", 2), (None, b"p0-3", 0)])

    source_plan = plan(spec, checkpoint)
    assert source_plan.starts == {(topic, 0): 2, (topic, 1): 3, (topic, 2): 0}
    assert read(spark, spec, source_plan) == [
        (topic, 0, 2, "v0-2"),
        (topic, 0, 3, "p0-3"),
        (topic, 2, 0, "p2-0"),
        (topic, 2, 1, "p2-1"),
    ]


# -- stop offsets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["unbounded", "latest-offset"])
def test_stop_is_the_end_at_planning_time(kafka_bootstrap, new_topic, spark, mode: str) -> None:
    topic = new_topic(partitions=2)
    expected = fill(kafka_bootstrap, topic, {0: 2, 1: 1})
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": mode},
    )
    source_plan = plan(spec)
    assert source_plan.stops == {(topic, 0): 2, (topic, 1): 1}
    send(kafka_bootstrap, topic, [(None, b"later", 0), (None, b"later", 1)])
    assert read(spark, spec, source_plan) == expected


def test_bounded_group_offsets(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=2)
    expected = fill(kafka_bootstrap, topic, {0: 4, 1: 4})
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "group-offsets"},
    )
    admin = KafkaAdmin(spec.properties)
    admin.commit_group_offsets({(topic, 0): 3})
    with pytest.raises(OffsetsError, match=rf"{re.escape(topic)}-1 .*'scan.bounded.mode'"):
        plan(spec)
    admin.commit_group_offsets({(topic, 0): 3, (topic, 1): 1})
    source_plan = plan(spec)
    assert source_plan.stops == {(topic, 0): 3, (topic, 1): 1}
    assert read(spark, spec, source_plan) == [
        r for r in expected if r[2] < source_plan.stops[(topic, r[1])]
    ]


def test_bounded_timestamp(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=2)
    produce_at(kafka_bootstrap, topic, [(0, 1000), (0, 2000), (0, 3000), (1, 500), (1, 900)])
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{
            "scan.startup.mode": "earliest-offset",
            "scan.bounded.mode": "timestamp",
            "scan.bounded.timestamp-millis": "2000",
        },
    )
    source_plan = plan(spec)
    # p0 stops before its first record at or after 2000; p1 has none, so it stops at its end.
    assert source_plan.stops == {(topic, 0): 1, (topic, 1): 2}
    assert read(spark, spec, source_plan) == [
        (topic, 0, 0, "p0@1000"),
        (topic, 1, 0, "p1@500"),
        (topic, 1, 1, "p1@900"),
    ]


def test_bounded_specific_offsets(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=2)
    expected = fill(kafka_bootstrap, topic, {0: 4, 1: 2})
    spec = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{
            "scan.startup.mode": "earliest-offset",
            "scan.bounded.mode": "specific-offsets",
            "scan.bounded.specific-offsets": "partition:0,offset:2",
        },
    )
    source_plan = plan(spec)
    assert source_plan.stops == {(topic, 0): 2, (topic, 1): 2}
    assert read(spark, spec, source_plan) == [r for r in expected if r[1] == 1 or r[2] < 2]


# -- retention and re-created topics --------------------------------------------------------------


def test_start_below_log_start_follows_reset_strategy_or_fails(
    kafka_bootstrap, new_topic, admin, spark
) -> None:
    topic = new_topic(partitions=2)
    expected = fill(kafka_bootstrap, topic, {0: 6, 1: 6})
    deleted = admin.delete_records([CTopicPartition(topic, 0, 4)])
    assert next(iter(deleted.values())).result(timeout=30).low_watermark == 4
    checkpoint = {(topic, 0): 1, (topic, 1): 2}

    spec = make_spec(kafka_bootstrap, {"topic": topic})
    with pytest.raises(OffsetsError) as err:
        plan(spec, checkpoint)
    message = str(err.value)
    assert f"Start offset 1 of {topic}-0 (the checkpoint offset)" in message
    assert "below the log start offset 4" in message

    committed = make_spec(kafka_bootstrap, {"topic": topic}, group=f"retention-{topic}")
    KafkaAdmin(committed.properties).commit_group_offsets({(topic, 0): 1, (topic, 1): 0})
    with pytest.raises(OffsetsError, match=r"committed offset of consumer group 'retention-"):
        plan(committed)

    for reset, p0_start in (("earliest", 4), ("latest", 6)):
        spec = make_spec(
            kafka_bootstrap, {"topic": topic}, **{"properties.auto.offset.reset": reset}
        )
        source_plan = plan(spec, checkpoint)
        assert source_plan.starts == {(topic, 0): p0_start, (topic, 1): 2}
        assert list(source_plan.resets) == [(topic, 0)]
        assert read(spark, spec, source_plan) == [
            r for r in expected if r[2] >= source_plan.starts[(topic, r[1])]
        ]


def test_checkpoint_past_the_end_of_a_recreated_topic(kafka_bootstrap, admin, spark) -> None:
    topic = create_topic(admin, f"recreated-{uuid.uuid4().hex[:8]}", 1)
    fill(kafka_bootstrap, topic, {0: 5}, tag="old")
    first = plan(
        make_spec(kafka_bootstrap, {"topic": topic}, **{"scan.startup.mode": "earliest-offset"})
    )
    assert first.stops == {(topic, 0): 5}

    admin.delete_topics([topic])[topic].result(timeout=30)
    deadline = time.monotonic() + 60
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "topic deletion did not complete"
        time.sleep(0.2)
    create_topic(admin, topic, 1)
    fill(kafka_bootstrap, topic, {0: 2}, tag="new")

    with pytest.raises(OffsetsError) as err:
        plan(make_spec(kafka_bootstrap, {"topic": topic}), first.stops)
    message = str(err.value)
    assert f"Start offset 5 of {topic}-0 (the checkpoint offset)" in message
    assert "beyond the end of the log (2)" in message

    earliest = make_spec(
        kafka_bootstrap, {"topic": topic}, **{"properties.auto.offset.reset": "earliest"}
    )
    assert read(spark, earliest, plan(earliest, first.stops)) == [
        (topic, 0, 0, "new0-0"),
        (topic, 0, 1, "new0-1"),
    ]
    latest = make_spec(
        kafka_bootstrap, {"topic": topic}, **{"properties.auto.offset.reset": "latest"}
    )
    after_latest = plan(latest, first.stops)
    assert after_latest.starts == after_latest.stops == {(topic, 0): 2}


# -- transactions ---------------------------------------------------------------------------------


def test_open_transaction_bounds_read_committed_plan(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    tp = (topic, 0)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"committed-{i}".encode(), partition=0)  # offsets 0-2
    producer.commit_transaction(30)  # marker 3
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"aborted-{i}".encode(), partition=0)  # offsets 4-5
    producer.flush(30)
    producer.abort_transaction(30)  # marker 6
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"open-{i}".encode(), partition=0)  # offsets 7-8
    assert producer.flush(30) == 0  # in the log, not committed
    send(kafka_bootstrap, topic, [(None, b"plain", 0)])  # offset 9, after the open txn

    committed = make_spec(
        kafka_bootstrap, {"topic": topic}, **{"scan.startup.mode": "earliest-offset"}
    )
    run1 = plan(committed)
    assert run1.stops == {tp: 7}  # the last stable offset: the open transaction's first offset
    assert read(spark, committed, run1) == [
        (topic, 0, 0, "committed-0"),
        (topic, 0, 1, "committed-1"),
        (topic, 0, 2, "committed-2"),
    ]

    uncommitted = make_spec(
        kafka_bootstrap,
        {"topic": topic},
        **{
            "scan.startup.mode": "earliest-offset",
            "properties.isolation.level": "read_uncommitted",
        },
    )
    everything = plan(uncommitted)
    assert everything.stops == {tp: 10}  # the high watermark
    assert [(r[2], r[3]) for r in read(spark, uncommitted, everything)] == [
        (0, "committed-0"),
        (1, "committed-1"),
        (2, "committed-2"),
        (4, "aborted-0"),
        (5, "aborted-1"),
        (7, "open-0"),
        (8, "open-1"),
        (9, "plain"),
    ]

    producer.commit_transaction(30)  # marker 10
    run2 = plan(committed, run1.stops)
    assert (run2.starts, run2.stops) == ({tp: 7}, {tp: 11})
    assert read(spark, committed, run2) == [
        (topic, 0, 7, "open-0"),
        (topic, 0, 8, "open-1"),
        (topic, 0, 9, "plain"),
    ]


# -- splits ---------------------------------------------------------------------------------------


def test_min_splits_reads_every_record_exactly_once(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=3)
    expected = fill(kafka_bootstrap, topic, {0: 10, 1: 10, 2: 1})
    spec = make_spec(kafka_bootstrap, {"topic": topic}, **{"scan.startup.mode": "earliest-offset"})
    source_plan = plan(spec, min_splits=6)
    assert [(s.partition, s.start, s.stop) for s in source_plan.splits] == [
        (0, 0, 3),
        (0, 3, 6),
        (0, 6, 10),
        (1, 0, 3),
        (1, 3, 6),
        (1, 6, 10),
        (2, 0, 1),
    ]
    assert read(spark, spec, source_plan) == expected


# -- consumer group -------------------------------------------------------------------------------


def test_whether_the_group_is_in_use(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1)
    group = f"busy-{topic}"
    admin = KafkaAdmin({"bootstrap.servers": kafka_bootstrap}, group_id=group)
    assert admin.group_in_use() is False

    assigned = threading.Event()
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    consumer.subscribe([topic], on_assign=lambda _c, _parts: assigned.set())
    try:
        deadline = time.monotonic() + 60
        while not assigned.is_set():
            assert time.monotonic() < deadline, "consumer was never assigned"
            consumer.poll(0.2)
        assert admin.group_in_use() is True
    finally:
        consumer.close()
    deadline = time.monotonic() + 30
    while admin.group_in_use():
        assert time.monotonic() < deadline, "member did not leave"
        time.sleep(0.2)


def test_group_offsets_for_metrics_never_fail_for_a_group_without_commits(
    kafka_bootstrap, new_topic
) -> None:
    topic = new_topic(partitions=2)
    parts = [(topic, 0), (topic, 1)]
    fill(kafka_bootstrap, topic, {0: 5, 1: 1})
    fresh = KafkaAdmin({"bootstrap.servers": kafka_bootstrap}, group_id=f"fresh-{topic}")
    assert fresh.group_offsets(parts) == {(topic, 0): None, (topic, 1): None}
    assert fresh.committed_offsets(parts) == {}

    fresh.commit_group_offsets({(topic, 0): 3})
    assert fresh.group_offsets(parts) == {(topic, 0): 3, (topic, 1): None}
    assert fresh.committed_offsets(parts) == {(topic, 0): 3}

    no_group = KafkaAdmin({"bootstrap.servers": kafka_bootstrap})
    assert no_group.group_offsets(parts) == {(topic, 0): None, (topic, 1): None}
    with pytest.raises(OffsetsError, match=r"'properties.group.id' is required"):
        no_group.committed_offsets(parts)


def test_committed_offsets_wait_for_a_pending_transactional_commit(
    kafka_bootstrap, new_topic
) -> None:
    """require-stable (KIP-447): offsets sent in an open transaction are returned once it ends."""
    topic = new_topic(partitions=1)
    group = f"eos-{topic}"
    admin = KafkaAdmin({"bootstrap.servers": kafka_bootstrap}, group_id=group)
    admin.commit_group_offsets({(topic, 0): 1})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"x", partition=0)
    metadata = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    producer.send_offsets_to_transaction(
        [CTopicPartition(topic, 0, 7)], metadata.consumer_group_metadata(), 30
    )
    committer = threading.Timer(1.5, lambda: producer.commit_transaction(30))
    committer.start()
    try:
        assert admin.committed_offsets([(topic, 0)]) == {(topic, 0): 7}
    finally:
        committer.join()
        metadata.close()
