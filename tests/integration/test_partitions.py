"""Time-window partitioned streaming assets on a real broker: windows, backfills, late data."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from dagster import (
    AssetKey,
    AssetSelection,
    DagsterInstance,
    HourlyPartitionsDefinition,
    StaticPartitionsDefinition,
    materialize,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaResource,
    KafkaTableSpec,
    LateDataCheck,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import IN_ORDER, consume_all

T0 = datetime(2026, 11, 20, tzinfo=UTC)
HOURLY = HourlyPartitionsDefinition(start_date="2026-11-20-00:00")
H0, H1, H2 = "2026-11-20-00:00", "2026-11-20-01:00", "2026-11-20-02:00"
COLUMNS = [{"name": "id", "type": "STRING"}]


def at(hours: float) -> int:
    return int((T0 + timedelta(hours=hours)).timestamp() * 1000)


#: partition 0, in offset order: (id, timestamp). ``a*`` belong to H0, ``b*`` to H1, ``c*`` to
#: H2. ``a2`` arrives among H1's records (within an hour's lateness); ``a3`` after H2's records
#: (later than that); ``b9`` among H0's records (out of order, early).
PARTITION_0 = [
    ("a0", at(0.1)),
    ("b9", at(1.9)),
    ("a1", at(0.5)),
    ("b0", at(1.2)),
    ("a2", at(0.9)),
    ("b1", at(1.4)),
    ("c0", at(2.1)),
    ("c1", at(2.5)),
    ("a3", at(0.3)),
]
PARTITION_1 = [("a5", at(0.7)), ("b5", at(1.5)), ("c5", at(2.7))]


def produce_at(bootstrap: str, topic: str, partition: int, rows: list[tuple[str, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **IN_ORDER})
    for ident, stamp in rows:
        producer.produce(
            topic, json.dumps({"id": ident}).encode(), partition=partition, timestamp=stamp
        )
        producer.flush(30)  # one at a time: offsets in exactly this order
    assert producer.flush(30) == 0


def events(topic: str, columns: list[dict] = COLUMNS, **options: str) -> KafkaTableSpec:
    """The JSON source table ``events`` over ``topic``."""
    return KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "format": "json", **options},
        columns=columns,
        role="source",
        name="events",
    )


def upsert_sink(topic: str, columns: list[dict]) -> KafkaTableSpec:
    """An upsert-kafka sink keyed by its first column (raw key, JSON value)."""
    return KafkaTableSpec.from_options(
        {"connector": "upsert-kafka", "topic": topic, "key.format": "raw", "value.format": "json"},
        columns=columns,
        primary_key=[columns[0]["name"]],
        role="sink",
    )


def windowed(source_topic: str, sink_topic: str, **kwargs: Any) -> Any:
    extra = kwargs.pop("source_options", {})
    partitions_def = kwargs.pop("partitions_def", HOURLY)
    sink_options = kwargs.pop("sink_options", {})
    source = events(source_topic, **{"properties.group.id": f"win-{source_topic}", **extra})
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json", **sink_options},
        columns=COLUMNS,
        role="sink",
    )

    @kafka_streaming_asset(
        sources={"events": source},
        sink=sink,
        name="hourly_copy",
        partitions_def=partitions_def,
        checks=kwargs.pop("checks", []),
        **kwargs,
    )
    def hourly_copy(context, events):  # type: ignore[no-untyped-def]
        return events

    return hourly_copy


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


class Sink:
    """What the sink topic gained since the last look."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic, self.seen = bootstrap, topic, 0

    def new(self) -> Counter:
        messages = consume_all(self.bootstrap, self.topic, 1)
        fresh = messages[self.seen :]
        self.seen = len(messages)
        return Counter(json.loads(m.value())["id"] for m in fresh)


def run_window(asset: Any, resources: dict, instance: Any, first: str, last: str | None = None):
    """The metadata of the run's (first) window."""
    return next(iter(run_windows(asset, resources, instance, first, last).values()))


def run_windows(
    asset: Any, resources: dict, instance: Any, first: str, last: str | None = None
) -> dict[str, dict[str, Any]]:
    """Run the windows ``first`` .. ``last`` (one run); the metadata of each, by partition."""
    tags = {}
    if last is not None:
        tags = {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
    result = materialize(
        [asset],
        instance=instance,
        resources=resources,
        partition_key=None if last is not None else first,
        tags=tags,
    )
    return {
        event.partition: {k: getattr(v, "value", v) for k, v in event.metadata.items()}
        for event in result.asset_materializations_for_node(asset.key.path[-1])
    }


def test_each_window_reads_exactly_its_records_and_a_backfill_their_union(
    kafka_bootstrap, new_topic, resources
) -> None:
    topic, out = new_topic(partitions=2), new_topic(partitions=1)
    produce_at(kafka_bootstrap, topic, 0, PARTITION_0)
    produce_at(kafka_bootstrap, topic, 1, PARTITION_1)
    asset = windowed(topic, out, allowed_lateness=timedelta(hours=1))
    instance, sink = DagsterInstance.ephemeral(), Sink(kafka_bootstrap, out)

    first = run_window(asset, resources, instance, H0)
    assert sink.new() == Counter(["a0", "a1", "a2", "a5"])  # a3 came too late
    assert first["numRecordsIn"] == 4
    assert first["windowStart"] == at(0) and first["windowEnd"] == at(1)
    assert first["windowState"] == "complete"
    assert first["windows"][H0][f"events/{topic}-0"] == [0, 6]  # up to c0, at 02:00 and after
    assert "kafka_checkpoint" not in first  # a window moves no streaming checkpoint

    second = run_window(asset, resources, instance, H1)
    assert sink.new() == Counter(["b9", "b0", "b1", "b5"])
    assert second["lateRecords"] == 1  # a3: of 00:00, it arrived while 01:00 was being read
    third = run_window(asset, resources, instance, H2)
    assert sink.new() == Counter(["c0", "c1", "c5"])

    again = run_window(asset, resources, instance, H1)
    assert sink.new() == Counter(["b9", "b0", "b1", "b5"])  # a window replays exactly
    assert again["windows"] == second["windows"]

    union = run_windows(asset, resources, instance, H0, H2)
    everything = Counter(["a0", "a1", "a2", "a5", "b9", "b0", "b1", "b5", "c0", "c1", "c5"])
    assert sink.new() == everything  # one run; a3 is late for 00:00 in it too
    assert {k: w["numRecordsIn"] for k, w in union.items()} == {H0: 4, H1: 4, H2: 3}
    assert union[H1]["windows"] == {H1: second["windows"][H1]}
    assert union[H0]["run"]["numRecordsIn"] == 11
    records = instance.fetch_materializations(AssetKey("hourly_copy"), limit=20).records
    assert Counter(r.asset_materialization.partition for r in records) == Counter(
        {H0: 2, H1: 3, H2: 2}
    )
    latest = {r.asset_materialization.partition: r.run_id for r in reversed(records)}
    assert len(set(latest.values())) == 1  # the backfill's three windows: one run
    assert third["numRecordsIn"] == 3


#: Five minutes' lateness. Partition 0, in offset order: ``b0`` (01:03) comes before 01:05, so
#: ``a2`` after it is still in time for 00:00; ``a3`` arrives after ``b1`` (01:12), beyond 00:00's
#: lateness, and ``b2`` after ``c0`` (02:15), beyond 01:00's: both are late, in no window.
LATE_0 = [
    ("a0", at(0.1)),
    ("a1", at(0.3)),
    ("b0", at(1.05)),
    ("a2", at(0.9)),
    ("b1", at(1.2)),
    ("a3", at(0.5)),
    ("c0", at(2.25)),
    ("b2", at(1.75)),
    ("c1", at(2.5)),
]
LATE_1 = [("a4", at(0.6)), ("b3", at(1.5)), ("c2", at(2.7))]


def hourly_counts(source_topic: str, sink_topic: str) -> Any:
    """Records per hour into an upsert-kafka sink keyed by the hour's start (epoch ms)."""
    stamp = {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "timestamp"}
    counted = [{"name": "hour", "type": "STRING"}, {"name": "n", "type": "BIGINT"}]

    @kafka_streaming_asset(
        sources={"events": events(source_topic, [*COLUMNS, stamp])},
        sink=upsert_sink(sink_topic, counted),
        name="hourly_counts",
        partitions_def=HOURLY,
        allowed_lateness=timedelta(minutes=5),
        checks=[],
    )
    def counts(context, events):  # type: ignore[no-untyped-def]
        from pyspark.sql import functions as F

        hour = (F.floor(F.unix_millis("ts") / 3_600_000) * 3_600_000).cast("string")
        return events.groupBy(hour.alias("hour")).agg(F.count("*").alias("n"))

    return counts


def latest(bootstrap: str, topic: str) -> dict[int, int]:
    """What a reader of the upsert sink ends up with: the latest count per hour."""
    changelog = consume_all(bootstrap, topic, 1)
    return {int(m.key()): json.loads(m.value())["n"] for m in changelog}


def test_a_backfill_gives_every_window_what_a_run_over_it_alone_gives(
    kafka_bootstrap, new_topic, resources
) -> None:
    topic, out = new_topic(partitions=2), new_topic(partitions=1)
    produce_at(kafka_bootstrap, topic, 0, LATE_0)
    produce_at(kafka_bootstrap, topic, 1, LATE_1)
    asset, instance = hourly_counts(topic, out), DagsterInstance.ephemeral()
    expected = {at(0): 4, at(1): 3, at(2): 3}  # a3 and b2 arrived late: in no window

    backfill = run_windows(asset, resources, instance, H0, H2)
    assert latest(kafka_bootstrap, out) == expected
    figures = {k: (w["numRecordsIn"], w["lateRecords"]) for k, w in backfill.items()}
    assert figures == {H0: (4, 0), H1: (3, 1), H2: (3, 1)}  # each late record counted once
    assert backfill[H1]["windowStart"] == at(1) and backfill[H1]["windowEnd"] == at(2)
    assert set(backfill[H1]["windows"]) == {H1}
    assert "numRecordsOut" not in backfill[H1]  # what the run wrote is the run's, not H1's
    run = backfill[H1]["run"]
    assert (run["partitionRange"], run["partitionCount"]) == ([H0, H2], 3)
    assert (run["numRecordsIn"], run["numRecordsOut"], run["lateRecords"]) == (10, 3, 2)

    for key in (H0, H1, H2):
        alone = run_window(asset, resources, instance, key)
        assert latest(kafka_bootstrap, out) == expected  # the same value per key again
        assert {k: alone[k] for k in backfill[key] if k != "run"} == {
            k: v for k, v in backfill[key].items() if k != "run"
        }
    changelog = consume_all(kafka_bootstrap, out, 1)
    hour_0 = [json.loads(m.value())["n"] for m in changelog if int(m.key()) == at(0)]
    assert hour_0 == [4, 4]  # the backfill, then 00:00 alone: no flip


def test_open_and_future_windows_say_so(kafka_bootstrap, new_topic, resources) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    now = datetime.now(UTC)
    hour = now.replace(minute=0, second=0, microsecond=0)
    produce_at(kafka_bootstrap, topic, 0, [("now", int(now.timestamp() * 1000) - 1)])
    ahead = HourlyPartitionsDefinition(start_date="2026-11-20-00:00", end_offset=2)
    asset = windowed(topic, out, partitions_def=ahead)
    instance = DagsterInstance.ephemeral()
    current = run_window(asset, resources, instance, hour.strftime("%Y-%m-%d-%H:%M"))
    assert current["windowState"] == "open"  # read to the end of the log at planning time
    assert current["numRecordsIn"] == 1
    later = run_window(asset, resources, instance, ahead.get_last_partition_key())
    assert later["windowState"] == "future"
    assert later["numRecordsIn"] == 0


def test_a_window_deleted_by_retention_fails_unless_a_reset_strategy_is_set(
    kafka_bootstrap, new_topic, resources
) -> None:
    from confluent_kafka import TopicPartition as CTopicPartition

    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce_at(kafka_bootstrap, topic, 0, PARTITION_0)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.delete_records([CTopicPartition(topic, 0, 2)], request_timeout=60).values():
        future.result(90)
    instance = DagsterInstance.ephemeral()
    strict = windowed(topic, out)
    result = materialize(
        [strict], instance=instance, resources=resources, partition_key=H0, raise_on_error=False
    )
    assert not result.success
    error = result.failure_data_for_node("hourly_copy").error.to_string()
    assert "deleted by retention" in error and "auto.offset.reset" in error

    lenient = windowed(topic, out, source_options={"properties.auto.offset.reset": "earliest"})
    meta = run_window(lenient, resources, instance, H0)
    assert meta["numRecordsIn"] == 1  # a1 (a0 was deleted; a2 came after 01:00's first record)
    assert "deleted by retention" in meta["windowNotes"][0]


def test_late_data_check_names_the_windows_to_rerun(kafka_bootstrap, new_topic, resources) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce_at(kafka_bootstrap, topic, 0, PARTITION_0[:8])
    asset = windowed(topic, out, checks=[LateDataCheck(severity="WARN")])
    instance = DagsterInstance.ephemeral()
    run_window(asset, resources, instance, H0, H2)
    evaluation = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key()])[
        check_key()
    ].evaluation
    assert evaluation.passed
    # no lateness: a1 and a2 (00:00) arrived after b9 (01:54), while 01:00 was being read
    assert evaluation.metadata["lateRecords"].value == 2
    assert evaluation.metadata["lateRecordsByWindow"].value == {H1: 2}
    assert "2 record(s) arrived after their window's allowed lateness" in evaluation.description

    produce_at(kafka_bootstrap, topic, 0, [("c7", at(2.8))])  # arrives after the run read 02:00
    alone = materialize(
        [asset],
        instance=instance,
        resources=resources,
        selection=AssetSelection.checks_for_assets(asset),
    )
    assert alone.success
    evaluation = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key()])[
        check_key()
    ].evaluation
    assert not evaluation.passed
    rerun = evaluation.metadata["windowsToRerun"].value
    assert H2 in rerun and H0 not in rerun
    assert evaluation.metadata["offsetsGained"].value[H2] == 1


def check_key() -> Any:
    from dagster import AssetCheckKey

    return AssetCheckKey(AssetKey("hourly_copy"), "kafka_late_data")


def test_exactly_once_windows_have_their_own_transactional_ids_and_commit_no_offsets(
    kafka_bootstrap, new_topic, resources
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce_at(kafka_bootstrap, topic, 0, PARTITION_0)
    asset = windowed(
        topic,
        out,
        sink_options={
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": f"win-{out}",
        },
    )
    instance = DagsterInstance.ephemeral()
    first = run_window(asset, resources, instance, H0)
    second = run_window(asset, resources, instance, H1)
    assert first["transactionalId"] == f"win-{out}-hourly_copy-{H0}-0"
    assert second["transactionalId"] == f"win-{out}-hourly_copy-{H1}-0"
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"win-{topic}"})
    [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    consumer.close()
    assert committed.offset < 0  # windows are not a position in the log


def test_only_time_windows_partition_a_streaming_asset() -> None:
    with pytest.raises(KafkaOptionsError, match="StaticPartitionsDefinition") as exc:
        windowed("t", "o", partitions_def=StaticPartitionsDefinition(["a"]))
    assert exc.value.keys == ("partitions_def",)


@pytest.mark.parametrize("name", ["allowed_lateness", "lookback"])
def test_window_durations_need_time_partitions_and_a_sign(name: str) -> None:
    with pytest.raises(KafkaOptionsError, match=f"{name} applies to time windows") as exc:
        windowed("t", "o", partitions_def=None, **{name: timedelta(minutes=5)})
    assert exc.value.keys == (name, "partitions_def")
    with pytest.raises(KafkaOptionsError, match=f"{name} must be a timedelta >= 0"):
        windowed("t", "o", **{name: timedelta(minutes=-5)})


def test_rerunning_a_window_into_upsert_kafka_rewrites_the_same_keys(
    kafka_bootstrap, new_topic, resources
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce_at(kafka_bootstrap, topic, 0, PARTITION_0)

    @kafka_streaming_asset(
        sources={"events": events(topic)},
        sink=upsert_sink(out, [*COLUMNS, {"name": "seen", "type": "STRING"}]),
        name="hourly_copy",
        partitions_def=HOURLY,
        allowed_lateness=timedelta(hours=1),
        checks=[],
    )
    def hourly_copy(context, events):  # type: ignore[no-untyped-def]
        from pyspark.sql import functions as F

        return events.withColumn("seen", F.lit("yes"))

    instance = DagsterInstance.ephemeral()
    run_window(hourly_copy, resources, instance, H0)
    run_window(hourly_copy, resources, instance, H0)
    changelog = [(m.key(), m.value()) for m in consume_all(kafka_bootstrap, out, 1)]
    assert Counter(k for k, _ in changelog) == Counter({b"a0": 2, b"a1": 2, b"a2": 2})
    latest = dict(changelog)  # what a reader of the changelog ends up with: the same rows
    assert {k: json.loads(v) for k, v in latest.items()} == {
        k.encode(): {"id": k, "seen": "yes"} for k in ("a0", "a1", "a2")
    }
