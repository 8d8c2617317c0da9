"""Discovery and new-data sensors against a real broker and a real Dagster instance."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRunStatus,
    SensorResult,
    SkipReason,
    build_sensor_context,
    materialize,
)
from dagster._core.test_utils import create_run_for_test

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    build_kafka_discovery_sensor,
    build_kafka_discovery_sensors,
    build_kafka_new_data_sensor,
    kafka_streaming_asset,
    sensors,
)
from dagster_kafka_flinklike.local import EmbeddedKafka
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import produce, wait_for_topic


@pytest.fixture(autouse=True)
def drop_sensor_clients() -> Iterator[None]:
    """The sensors keep an admin client per cluster for the code server's life: each test
    drops them, or they retry a stopped test broker for the rest of the session."""
    yield
    sensors._CLIENTS.clear()


COLUMNS = [{"name": "id", "type": "BIGINT"}]


def table(**options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {"connector": "kafka", "format": "json", "scan.startup.mode": "earliest-offset", **options},
        columns=COLUMNS,
        role="source",
        name="events",
    )


def streaming(source: KafkaTableSpec, sink_topic: str, name: str = "copied") -> Any:
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json"}, columns=COLUMNS, role="sink"
    )

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name=name, checks=[])
    def _copy(context, events):  # type: ignore[no-untyped-def]
        return events

    return _copy


def create(admin: AdminClient, name: str, partitions: int) -> None:
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(60)
    wait_for_topic(admin, name, partitions)


def tick(sensor: Any, instance: DagsterInstance, cursor: str | None, bootstrap: str) -> Any:
    context = build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"kafka": KafkaResource(bootstrap_servers=bootstrap)},
    )
    return sensor(context)


def records(count: int, first: int = 0) -> list[tuple[None, bytes]]:
    return [(None, json.dumps({"id": i}).encode()) for i in range(first, first + count)]


def test_discovery_reports_new_topics_and_partitions_once(kafka_bootstrap, admin) -> None:
    stem = f"disc-{uuid.uuid4().hex[:8]}"
    create(admin, f"{stem}-a", 2)
    source = table(**{"topic-pattern": f"{stem}-.*"})
    sensor = build_kafka_discovery_sensor(source, ["copied"])
    assert sensor.minimum_interval_seconds == 300  # Flink's default: 5 minutes
    instance = DagsterInstance.ephemeral()

    first = tick(sensor, instance, None, kafka_bootstrap)
    assert isinstance(first, SensorResult) and not first.run_requests
    assert "1 topic(s), 2 partition(s)" in first.skip_reason.skip_message

    quiet = tick(sensor, instance, first.cursor, kafka_bootstrap)
    assert not quiet.run_requests and quiet.cursor == first.cursor

    create(admin, f"{stem}-b", 1)
    admin.create_partitions([NewPartitions(f"{stem}-a", 4)])[f"{stem}-a"].result(60)
    wait_for_topic(admin, f"{stem}-a", 4)
    found = tick(sensor, instance, quiet.cursor, kafka_bootstrap)
    [request] = found.run_requests
    assert request.asset_selection == [AssetKey("copied")]
    assert json.loads(found.cursor)["topics"] == {f"{stem}-a": 4, f"{stem}-b": 1}

    again = tick(sensor, instance, found.cursor, kafka_bootstrap)
    assert not again.run_requests  # the same discovery is never requested twice
    admin.create_partitions([NewPartitions(f"{stem}-b", 2)])[f"{stem}-b"].result(60)
    wait_for_topic(admin, f"{stem}-b", 2)
    more = tick(sensor, instance, again.cursor, kafka_bootstrap)
    [second] = more.run_requests
    assert second.run_key != request.run_key


def test_discovery_sensors_follow_the_tables_interval(kafka_bootstrap) -> None:
    fast = table(topic="a", **{"scan.topic-partition-discovery.interval": "45 s"})
    off = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": "b",
            "format": "json",
            "scan.topic-partition-discovery.interval": "0",
        },
        columns=COLUMNS,
        name="off",
    )
    one, two = streaming(fast, "x", "one"), streaming(fast, "x", "two")
    [sensor] = build_kafka_discovery_sensors([one, two, streaming(off, "x", "three")])
    assert sensor.minimum_interval_seconds == 45
    assert set(sensor.asset_selection.resolve([one, two])) == {AssetKey("one"), AssetKey("two")}


def test_new_data_requests_a_batch_once_and_records_lag(kafka_bootstrap, new_topic, spark) -> None:
    topic, out = new_topic(partitions=2), new_topic(partitions=1)
    asset = streaming(table(topic=topic, **{"properties.group.id": f"nd-{topic}"}), out)
    sensor = build_kafka_new_data_sensor(asset, min_pending_records=10)
    instance = DagsterInstance.ephemeral()
    produce(kafka_bootstrap, topic, [(k, v, 0) for k, v in records(4)])

    below = tick(sensor, instance, None, kafka_bootstrap)
    assert not below.run_requests and "4 record(s) pending" in below.skip_reason.skip_message
    [observation] = below.asset_events
    assert observation.asset_key == AssetKey("copied")
    assert observation.metadata["pendingRecords"].value == 4
    assert observation.metadata["offsets"].value == {f"events/{topic}-0": 4, f"events/{topic}-1": 0}

    produce(kafka_bootstrap, topic, [(k, v, 1) for k, v in records(8, 4)])
    over = tick(sensor, instance, below.cursor, kafka_bootstrap)
    [request] = over.run_requests
    same = tick(sensor, instance, over.cursor, kafka_bootstrap)
    assert [r.run_key for r in same.run_requests] == [request.run_key]  # the daemon dedups it

    run = create_run_for_test(
        instance,
        job_name="__ASSET_JOB",
        status=DagsterRunStatus.STARTED,
        asset_selection=frozenset({AssetKey("copied")}),
    )
    busy = tick(sensor, instance, same.cursor, kafka_bootstrap)
    assert not busy.run_requests and run.run_id in busy.skip_reason.skip_message
    instance.report_run_failed(run)

    resources = {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }
    assert materialize([asset], instance=instance, resources=resources).success
    caught_up = tick(sensor, instance, busy.cursor, kafka_bootstrap)
    assert not caught_up.run_requests
    assert caught_up.asset_events[0].metadata["pendingRecords"].value == 0

    produce(kafka_bootstrap, topic, [(k, v, 0) for k, v in records(12, 20)])
    fresh = tick(sensor, instance, caught_up.cursor, kafka_bootstrap)
    [next_batch] = fresh.run_requests
    assert next_batch.run_key != request.run_key


def test_records_pending_too_long_request_a_run(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=1)
    asset = streaming(table(topic=topic), "unused-sink")
    sensor = build_kafka_new_data_sensor(
        asset, min_pending_records=1000, max_pending_age=timedelta(seconds=2)
    )
    instance = DagsterInstance.ephemeral()
    produce(kafka_bootstrap, topic, records(3))
    first = tick(sensor, instance, None, kafka_bootstrap)
    assert not first.run_requests
    time.sleep(2.2)
    late = tick(sensor, instance, first.cursor, kafka_bootstrap)
    assert len(late.run_requests) == 1
    assert late.asset_events[0].metadata["oldestPendingAgeMs"].value >= 2000


def test_a_broker_that_is_down_gives_a_skip_and_then_recovers(tmp_path: Path) -> None:
    broker = EmbeddedKafka(tmp_path / "kafka")
    bootstrap = broker.start(timeout=180)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        create(admin, "down-a", 1)
        source = table(**{"topic-pattern": "down-.*"})
        sensor = build_kafka_discovery_sensor(source, ["copied"])
        instance = DagsterInstance.ephemeral()
        first = tick(sensor, instance, None, bootstrap)
        broker.stop()
        began = time.monotonic()
        down = tick(sensor, instance, first.cursor, bootstrap)
        assert isinstance(down, SkipReason)  # a skip keeps the cursor where it was
        assert "Could not read the topics" in down.skip_message
        assert time.monotonic() - began < 30
        assert broker.start(timeout=180) == bootstrap
        create(AdminClient({"bootstrap.servers": bootstrap}), "down-b", 1)
        back = tick(sensor, instance, first.cursor, bootstrap)
        [request] = back.run_requests
        assert json.loads(back.cursor)["topics"] == {"down-a": 1, "down-b": 1}
        assert request.asset_selection == [AssetKey("copied")]
    finally:
        sensors._CLIENTS.clear()  # before its broker stops (see drop_sensor_clients)
        broker.stop()


def test_source_topics_are_observed_with_their_end_offsets(kafka_bootstrap, new_topic) -> None:
    from dagster import Definitions, define_asset_job

    from dagster_kafka_flinklike import build_kafka_source_assets

    topic = new_topic(partitions=2)
    asset = streaming(table(topic=topic), "unused-sink")
    [topics] = build_kafka_source_assets([asset])
    instance = DagsterInstance.ephemeral()
    job = Definitions(
        assets=[topics],
        jobs=[define_asset_job("observe_topics", selection=[AssetKey("events")])],
        resources={"kafka": KafkaResource(bootstrap_servers=kafka_bootstrap)},
    ).resolve_job_def("observe_topics")
    produce(kafka_bootstrap, topic, [(k, v, 1) for k, v in records(3)])
    assert job.execute_in_process(instance=instance).success
    produce(kafka_bootstrap, topic, [(k, v, 0) for k, v in records(2)])
    assert job.execute_in_process(instance=instance).success
    second, first = instance.fetch_observations(AssetKey("events"), limit=2).records
    assert first.asset_observation.metadata["endOffsets"].value == {
        f"{topic}-0": 0,
        f"{topic}-1": 3,
    }
    assert second.asset_observation.metadata["records"].value == 5
    assert second.asset_observation.metadata["partitions"].value == 2
    assert first.asset_observation.data_version != second.asset_observation.data_version


def launch(
    sensor: Any, request: Any, assets: list, instance: DagsterInstance, bootstrap: str
) -> bool:
    """Run a sensor's request as the daemon does (its tags, run key and partition); success?"""
    tags = {**request.tags, "dagster/run_key": request.run_key, "dagster/sensor_name": sensor.name}
    result = materialize(
        assets,
        instance=instance,
        resources={
            "kafka": KafkaResource(bootstrap_servers=bootstrap),
            "pyspark": SparkResource(spark_config=local_spark_config("tests")),
        },
        tags=tags,
        partition_key=request.partition_key,
        raise_on_error=False,
    )
    return result.success


class Clock:
    """The sensors' clock, moved forward by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ahead_ms = 0
        monkeypatch.setattr(sensors, "_now_ms", lambda: int(time.time() * 1000) + self.ahead_ms)

    def advance(self, delta: timedelta) -> None:
        self.ahead_ms += int(delta.total_seconds() * 1000)


def test_a_failed_batch_is_retried_after_a_backoff_then_given_up(
    kafka_bootstrap, new_topic, spark, monkeypatch
) -> None:
    clock = Clock(monkeypatch)
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [*records(3), (None, b"not json")])  # errors not ignored
    asset = streaming(table(topic=topic), out)
    sensor = build_kafka_new_data_sensor(asset, max_retries=1, retry_backoff=timedelta(minutes=1))
    instance = DagsterInstance.ephemeral()

    first = tick(sensor, instance, None, kafka_bootstrap)
    [request] = first.run_requests
    assert request.tags["dagster-kafka-flinklike/attempt"] == "1"
    assert not launch(sensor, request, [asset], instance, kafka_bootstrap)  # the dirty record
    failed = instance.get_run_records(limit=1)[0].dagster_run.run_id

    waiting = tick(sensor, instance, first.cursor, kafka_bootstrap)
    assert not waiting.run_requests
    text = waiting.skip_reason.skip_message
    assert text.startswith("4 record(s) pending. ")
    assert f"Run {failed} of the records of 'copied' pending from its checkpoint failed" in text
    assert "(attempt 1 of 2); attempt 2 of 2 is requested at " in text
    assert "after a backoff of 60s" in text
    assert (
        tick(sensor, instance, waiting.cursor, kafka_bootstrap).skip_reason == waiting.skip_reason
    )

    clock.advance(timedelta(seconds=61))
    due = tick(sensor, instance, waiting.cursor, kafka_bootstrap)
    [retry] = due.run_requests
    assert retry.run_key == f"{request.run_key}-attempt-2-after-{failed}"
    assert retry.tags["dagster-kafka-flinklike/attempt"] == "2"
    again = tick(sensor, instance, due.cursor, kafka_bootstrap)  # the daemon dedups it
    assert [r.run_key for r in again.run_requests] == [retry.run_key]
    assert not launch(sensor, retry, [asset], instance, kafka_bootstrap)
    second = instance.get_run_records(limit=1)[0].dagster_run.run_id

    clock.advance(timedelta(days=1))
    gave_up = tick(sensor, instance, again.cursor, kafka_bootstrap)
    assert not gave_up.run_requests
    text = gave_up.skip_reason.skip_message
    assert "Gave up on the records of 'copied' pending from its checkpoint after 2 failed" in text
    assert f"(runs {failed}, {second})" in text
    assert f"re-execute run {second}" in text
    assert f"`dagster sensor cursor {sensor.name} --delete`" in text
    assert gave_up.asset_events[0].metadata["pendingRecords"].value == 4

    # a deleted cursor starts a new count at once
    [fresh] = tick(sensor, instance, None, kafka_bootstrap).run_requests
    assert fresh.run_key == f"{request.run_key}-attempt-1-after-{second}"


def failing(topic: str, sink_topic: str, control: dict, **decorator: Any) -> Any:
    """A copy asset whose run fails while ``control["fail"]`` is set (the cause is fixed)."""
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json"}, columns=COLUMNS, role="sink"
    )

    @kafka_streaming_asset(
        sources={"events": table(topic=topic)}, sink=sink, checks=[], **decorator
    )
    def _copy(context, events):  # type: ignore[no-untyped-def]
        if control["fail"]:
            raise RuntimeError("the cluster was away")
        return events

    return _copy


def test_a_successful_retry_leads_to_the_next_batch(
    kafka_bootstrap, new_topic, spark, monkeypatch
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    control = {"fail": True}
    flaky = failing(topic, out, control, name="flaky")
    sensor = build_kafka_new_data_sensor(flaky, retry_backoff=timedelta(0))
    instance = DagsterInstance.ephemeral()
    produce(kafka_bootstrap, topic, records(5))
    first = tick(sensor, instance, None, kafka_bootstrap)
    [request] = first.run_requests
    assert not launch(sensor, request, [flaky], instance, kafka_bootstrap)
    retried = tick(sensor, instance, first.cursor, kafka_bootstrap)
    [retry] = retried.run_requests  # no backoff: at once
    assert retry.tags["dagster-kafka-flinklike/attempt"] == "2"
    control["fail"] = False
    assert launch(sensor, retry, [flaky], instance, kafka_bootstrap)

    caught_up = tick(sensor, instance, retried.cursor, kafka_bootstrap)
    assert not caught_up.run_requests
    assert "0 record(s) pending" in caught_up.skip_reason.skip_message
    produce(kafka_bootstrap, topic, records(5, 5))
    [following] = tick(sensor, instance, caught_up.cursor, kafka_bootstrap).run_requests
    assert following.tags["dagster-kafka-flinklike/attempt"] == "1"
    assert "-attempt-" not in following.run_key and following.run_key != request.run_key
    assert launch(sensor, following, [flaky], instance, kafka_bootstrap)


def test_a_failed_discovery_is_not_requested_again_and_says_so(kafka_bootstrap) -> None:
    stem = f"disc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create(admin, f"{stem}-a", 1)
    sensor = build_kafka_discovery_sensor(table(**{"topic-pattern": f"{stem}-.*"}), ["copied"])
    instance = DagsterInstance.ephemeral()
    first = tick(sensor, instance, None, kafka_bootstrap)
    create(admin, f"{stem}-b", 1)
    found = tick(sensor, instance, first.cursor, kafka_bootstrap)
    [request] = found.run_requests
    run = create_run_for_test(
        instance,
        job_name="__ASSET_JOB",
        status=DagsterRunStatus.STARTED,
        tags={**request.tags, "dagster/run_key": request.run_key},
        asset_selection=frozenset({AssetKey("copied")}),
    )
    instance.report_run_failed(run)
    quiet = tick(sensor, instance, found.cursor, kafka_bootstrap)
    assert not quiet.run_requests
    text = quiet.skip_reason.skip_message
    assert f"The run of the last discovery ({run.run_id}) did not succeed" in text
    assert "a discovery is not requested again" in text and "copied" in text


def test_a_failed_offset_batch_is_retried_before_the_next_one(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    control = {"fail": True}
    batched = failing(topic, out, control, name="batched", offset_batches=True)
    sensor = build_kafka_new_data_sensor(batched, max_retries=1, retry_backoff=timedelta(0))
    instance = DagsterInstance.ephemeral()

    def batch_tick(cursor: str | None) -> Any:
        result = tick(sensor, instance, cursor, kafka_bootstrap)
        for added in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(added.partitions_def_name, list(added.partition_keys))
        return result

    produce(kafka_bootstrap, topic, records(4))
    first = batch_tick(None)
    [request] = first.run_requests
    assert request.partition_key == f"events/{topic}:0=0-4"
    assert not launch(sensor, request, [batched], instance, kafka_bootstrap)

    produce(kafka_bootstrap, topic, records(3, 4))  # the next batch waits for the failed one
    retried = batch_tick(first.cursor)
    [retry] = retried.run_requests
    assert retry.partition_key == request.partition_key and retry.run_key != request.run_key
    assert not retried.dynamic_partitions_requests
    assert not launch(sensor, retry, [batched], instance, kafka_bootstrap)
    stuck = batch_tick(retried.cursor)
    assert not stuck.run_requests
    assert stuck.skip_reason.skip_message.startswith(
        f"3 record(s) pending. Gave up on offset batch '{request.partition_key}' of 'batched' "
        f"after 2 failed attempt(s)"
    )
    assert instance.get_dynamic_partitions("batched_offset_batches") == [request.partition_key]

    control["fail"] = False  # fixed: a re-execution of the last run succeeds
    [last] = instance.get_run_records(limit=1)
    reexecution = materialize(
        [batched],
        instance=instance,
        resources={
            "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
            "pyspark": SparkResource(spark_config=local_spark_config("tests")),
        },
        tags=last.dagster_run.tags,  # a re-execution keeps the run's tags
        partition_key=request.partition_key,
    )
    assert reexecution.success
    [following] = batch_tick(stuck.cursor).run_requests
    assert following.partition_key == f"events/{topic}:0=4-7"
    assert following.tags["dagster-kafka-flinklike/attempt"] == "1"
