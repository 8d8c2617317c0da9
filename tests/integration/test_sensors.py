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
