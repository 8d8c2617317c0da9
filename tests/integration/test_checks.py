"""Kafka asset checks on a real broker, Spark and a Dagster instance: pass and fail for real
causes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import IsolationLevel, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    AssetSelection,
    AssetSpec,
    DagsterInstance,
    Definitions,
    asset,
    define_asset_job,
    materialize,
)

from dagster_kafka_flinklike import (
    ConsumerLagCheck,
    DirtyDataCheck,
    HangingTransactionsCheck,
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    TransactionTimeoutCheck,
    build_kafka_asset_checks,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike import checks as checks_module
from dagster_kafka_flinklike import spark as spark_module
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import SMALL_MAX_TIMEOUT_MS, consume_all, produce, wait_for_topic

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "payload", "type": "STRING"}]


def source_table(topic: str, **options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.group.id": f"checks-{topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            **options,
        },
        columns=COLUMNS,
        role="source",
    )


def sink_table(topic: str, **options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "format": "json", **options},
        columns=COLUMNS,
        role="sink",
    )


def eos(topic: str, **properties: str) -> KafkaTableSpec:
    return sink_table(
        topic,
        **{
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": f"checks-{topic}",
            **{f"properties.{k}": v for k, v in properties.items()},
        },
    )


def resources(bootstrap: str) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def records(first: int, count: int) -> list[tuple[None, bytes]]:
    return [(None, json.dumps({"id": i, "payload": f"p{i}"}).encode()) for i in range(first, count)]


def evaluation(instance: DagsterInstance, key: str, name: str) -> Any:
    check_key = AssetCheckKey(AssetKey(key), name)
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key])
    return record[check_key].evaluation


def topic_on(bootstrap: str, name: str, partitions: int = 1) -> str:
    from confluent_kafka.admin import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(60)
    wait_for_topic(admin, name, partitions)
    return name


def copy(source: KafkaTableSpec, sink: KafkaTableSpec, checks: list, name: str = "copied") -> Any:
    @kafka_streaming_asset(sources={"events": source}, sink=sink, name=name, checks=checks)
    def _copy(context, events):  # type: ignore[no-untyped-def]
        return events

    return _copy


def run_checks_alone(defs_assets: list, checks: list, bootstrap: str, instance: Any) -> Any:
    job = define_asset_job("checks_alone", selection=AssetSelection.all_asset_checks())
    defs = Definitions(
        assets=defs_assets,
        asset_checks=checks,
        jobs=[job],
        resources={"kafka": KafkaResource(bootstrap_servers=bootstrap)},
    )
    return defs.resolve_job_def("checks_alone").execute_in_process(instance=instance)


def test_dirty_data_over_the_ratio_blocks_downstream_and_under_it_passes(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [*records(0, 8), (None, b"not json"), (None, b"{broken")])
    tolerant = source_table(topic, **{"ingestion.ignore-errors": "true"})
    ran: list[str] = []
    strict = copy(tolerant, sink_table(out), [DirtyDataCheck(max_ratio=0.1, blocking=True)])

    @asset(deps=[strict])
    def downstream() -> None:
        ran.append("downstream")

    instance = DagsterInstance.ephemeral()
    result = materialize(
        [strict, downstream],
        instance=instance,
        resources=resources(kafka_bootstrap),
        raise_on_error=False,
    )
    assert not result.success
    assert ran == []  # the blocking check kept the downstream asset from running
    failed = evaluation(instance, "copied", "kafka_dirty_data")
    assert not failed.passed and failed.severity == AssetCheckSeverity.ERROR
    assert failed.metadata["dirtyRecords"].value == 2
    assert failed.metadata["numRecordsIn"].value == 10
    assert failed.metadata["dirtyRatio"].value == 0.2
    samples = failed.metadata["dirtySamples"].value
    assert [(s["topic"], s["offset"]) for s in samples] == [(topic, 8), (topic, 9)]
    assert "max_ratio 0.1" in failed.description

    # The run failed before its commit: no materialization, so a check run alone has no figures.
    assert instance.get_latest_materialization_event(AssetKey("copied")) is None
    alone = materialize(
        [strict],
        instance=instance,
        resources=resources(kafka_bootstrap),
        selection=AssetSelection.checks_for_assets(strict),
        raise_on_error=False,
    )
    assert alone.get_asset_materialization_events() == []
    assert evaluation(instance, "copied", "kafka_dirty_data").description.startswith(
        "No materialization"
    )

    lenient = copy(tolerant, sink_table(out), [DirtyDataCheck(max_ratio=0.5, blocking=True)])
    again = DagsterInstance.ephemeral()
    assert materialize(
        [lenient, downstream], instance=again, resources=resources(kafka_bootstrap)
    ).success
    assert ran == ["downstream"]
    assert evaluation(again, "copied", "kafka_dirty_data").passed


def _group_offsets(bootstrap: str, group: str, topic: str) -> list[int]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    found = consumer.committed([CTopicPartition(topic, 0)], timeout=10)
    consumer.close()
    return [tp.offset for tp in found]


def _dirty_batch(first: int) -> list[tuple[None, bytes]]:
    """Twenty records, two of them (10%) malformed."""
    return [*records(first, first + 18), (None, b"not json"), (None, b"{broken")]


@pytest.mark.parametrize("guarantee", ["exactly-once", "at-least-once"])
def test_a_failing_blocking_check_fails_the_run_before_its_commit(
    kafka_bootstrap, new_topic, spark, guarantee
) -> None:
    """Blocking checks are decided between the write and the commit: a failing one fails the
    run, whose transaction is aborted (exactly-once) or whose checkpoint and group offsets stay
    (at-least-once, records delivered stay); re-running fails the same way until the threshold
    changes, and then the run reads everything the failed runs did not commit."""
    topic, out = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, topic, _dirty_batch(0))
    tolerant = source_table(topic, **{"ingestion.ignore-errors": "true"})
    options = (
        {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": f"g-{out}"}
        if guarantee == "exactly-once"
        else {"sink.delivery-guarantee": "at-least-once"}
    )
    sink = sink_table(out, **options)
    ran: list[str] = []
    strict = copy(tolerant, sink, [DirtyDataCheck(max_ratio=0.05, blocking=True)])

    @asset(deps=[strict])
    def downstream() -> None:
        ran.append("downstream")

    instance = DagsterInstance.ephemeral()
    for _attempt in range(2):  # "re-execute": the same records, the same verdict
        result = materialize(
            [strict, downstream],
            instance=instance,
            resources=resources(kafka_bootstrap),
            raise_on_error=False,
        )
        assert not result.success and ran == []
        failure = result.failure_data_for_node("copied")
        assert failure is not None and "BlockingCheckError" in str(failure.error)
        assert "kafka_dirty_data: Too much dirty data" in str(failure.error)
        assert result.get_asset_materialization_events() == []
        assert instance.get_latest_materialization_event(AssetKey("copied")) is None
        assert _group_offsets(kafka_bootstrap, f"checks-{topic}", topic) == [-1001]
        check = evaluation(instance, "copied", "kafka_dirty_data")
        assert not check.passed and check.metadata["dirtyRatio"].value == 0.1
        assert check.metadata["numRecordsIn"].value == 20
        committed = consume_all(kafka_bootstrap, out, 1, "read_committed", settle_s=15)
        if guarantee == "exactly-once":
            assert committed == []  # the transaction was aborted
            assert "transaction is aborted" in check.description
        else:
            assert "the clean records were written and stay" in check.description
    # Both attempts produced their 18 clean records (aborted, or delivered at-least-once).
    assert len(consume_all(kafka_bootstrap, out, 1, "read_uncommitted")) == 36

    produce(kafka_bootstrap, topic, records(100, 110))
    lenient = copy(tolerant, sink, [DirtyDataCheck(max_ratio=0.2, blocking=True)])
    passed = materialize(
        [lenient, downstream], instance=instance, resources=resources(kafka_bootstrap)
    )
    assert passed.success and ran == ["downstream"]
    meta = passed.asset_materializations_for_node("copied")[0].metadata
    assert meta["numRecordsIn"].value == 30 and meta["dirtyRecords"].value == 2
    assert _group_offsets(kafka_bootstrap, f"checks-{topic}", topic) == [30]
    assert evaluation(instance, "copied", "kafka_dirty_data").passed
    ids = sorted(json.loads(m.value())["id"] for m in consume_all(kafka_bootstrap, out, 1))
    expected = [*range(18), *range(100, 110)]
    if guarantee == "exactly-once":
        assert ids == expected
    else:  # the two failed attempts' records stay, as at-least-once promises
        assert ids == sorted([*range(18), *range(18), *expected])


def test_transaction_timeout_above_the_brokers_maximum_fails_the_check_alone(
    small_broker, monkeypatch
) -> None:
    def no_spark(config: Any) -> Any:
        raise AssertionError("checks run alone must not start Spark")

    monkeypatch.setattr(spark_module, "spark_session_from_config", no_spark)
    bootstrap = small_broker.bootstrap_servers
    topic, out = topic_on(bootstrap, "ttl-drift-in"), topic_on(bootstrap, "ttl-drift-out")
    drifted = copy(
        source_table(topic),
        eos(out, **{"transaction.timeout.ms": "60000"}),
        [TransactionTimeoutCheck()],
    )
    instance = DagsterInstance.ephemeral()
    result = materialize(
        [drifted],
        instance=instance,
        resources=resources(bootstrap),
        selection=AssetSelection.checks_for_assets(drifted),
        raise_on_error=False,
    )
    assert result.success  # the check failed; the run that ran it did not crash
    failed = evaluation(instance, "copied", "kafka_transaction_timeout")
    assert not failed.passed and failed.severity == AssetCheckSeverity.ERROR
    assert "60000" in failed.description and str(SMALL_MAX_TIMEOUT_MS) in failed.description
    assert failed.metadata["transaction.max.timeout.ms"].value == SMALL_MAX_TIMEOUT_MS


def test_transaction_duration_is_measured_against_the_timeout(small_broker, spark) -> None:
    bootstrap = small_broker.bootstrap_servers
    topic, out = topic_on(bootstrap, "ttl-run-in"), topic_on(bootstrap, "ttl-run-out")
    produce(bootstrap, topic, records(0, 20))
    strict = TransactionTimeoutCheck(name="strict", warn_ratio=0.0001, fail_ratio=0.0002)
    lenient = TransactionTimeoutCheck(name="lenient", warn_ratio=0.98, fail_ratio=0.99)
    timed = copy(
        source_table(topic),
        eos(out, **{"transaction.timeout.ms": "5000"}),
        [
            strict,
            lenient,
        ],
    )
    instance = DagsterInstance.ephemeral()
    assert materialize([timed], instance=instance, resources=resources(bootstrap)).success
    tight = evaluation(instance, "copied", "strict")
    assert not tight.passed and tight.severity == AssetCheckSeverity.ERROR
    duration = tight.metadata["transactionDurationMs"].value
    assert duration > 5000 * 0.0002
    assert tight.metadata["transactionTimeoutMs"].value == 5000
    assert "read less per run" in tight.description
    loose = evaluation(instance, "copied", "lenient")
    assert loose.passed and loose.metadata["transactionDurationMs"].value == duration


HANGING_PRODUCER = """
import sys, time
from confluent_kafka import Producer
bootstrap, topic, tid, timeout_ms = sys.argv[1:5]
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                     "transaction.timeout.ms": int(timeout_ms)})
producer.init_transactions(30)
producer.begin_transaction()
for i in range(5):
    producer.produce(topic, b"open-%d" % i, partition=i % 2)
producer.flush(30)
print("ready", flush=True)
time.sleep(600)
"""


def offsets(bootstrap: str, topic: str, level: Any) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {CTopicPartition(topic, p): OffsetSpec.latest() for p in range(2)}
    found = admin.list_offsets(wanted, isolation_level=level, request_timeout=30)
    return [f.result().offset for _, f in sorted(found.items(), key=lambda i: i[0].partition)]


def test_once_the_broker_aborts_a_killed_producers_transaction_the_check_passes(
    small_broker,
) -> None:
    bootstrap = small_broker.bootstrap_servers
    topic = topic_on(bootstrap, "hanging-out", partitions=2)
    produce(bootstrap, topic, [(None, b"before", 0)])
    child = subprocess.Popen(
        [sys.executable, "-c", HANGING_PRODUCER, bootstrap, topic, "hanging-producer-0", "6000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    os.kill(child.pid, signal.SIGKILL)  # killed inside its transaction: nothing ends it
    child.wait()
    assert offsets(bootstrap, topic, IsolationLevel.READ_COMMITTED) == [1, 0]
    deadline = time.monotonic() + 30  # the coordinator aborts it after transaction.timeout.ms
    while offsets(bootstrap, topic, IsolationLevel.READ_COMMITTED) != offsets(
        bootstrap, topic, IsolationLevel.READ_UNCOMMITTED
    ):
        assert time.monotonic() < deadline, "the broker never aborted the transaction"
        time.sleep(0.5)
    check = HangingTransactionsCheck(max_open=timedelta(seconds=1))
    checks = build_kafka_asset_checks("hanging_target", [check], sink=sink_table(topic))
    instance = DagsterInstance.ephemeral()
    assert run_checks_alone([AssetSpec("hanging_target")], checks, bootstrap, instance).success
    resolved = evaluation(instance, "hanging_target", "kafka_hanging_transactions")
    assert resolved.passed
    assert resolved.metadata["openTransactions"].value == 0


def transactions_command(command: str) -> None:
    """Run a ``kafka-transactions.sh`` command line with the embedded broker's own jars."""
    from dagster_kafka_flinklike.local.fetch import fetch_kafka, find_java

    args = command.split()
    assert args[0] == "kafka-transactions.sh"
    classpath = f"{fetch_kafka()}/*"
    done = subprocess.run(
        [find_java(), "-cp", classpath, "org.apache.kafka.tools.TransactionsCommand", *args[1:]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_a_producer_killed_in_its_transaction_fails_the_check_by_default(
    kafka_bootstrap, new_topic, monkeypatch
) -> None:
    # the session broker allows 15-minute transactions: the sink's timeout is far away
    monkeypatch.setattr(checks_module, "DEFAULT_MAX_BLOCKED", timedelta(seconds=2))
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, b"before", 0)])
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HANGING_PRODUCER,
            kafka_bootstrap,
            topic,
            f"killed-{topic}",
            "120000",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    checks = build_kafka_asset_checks(
        "killed_target",
        [HangingTransactionsCheck(), HangingTransactionsCheck(name="warned", severity="WARN")],
        sink=sink_table(topic),
    )
    instance = DagsterInstance.ephemeral()
    time.sleep(2.5)
    assert run_checks_alone([AssetSpec("killed_target")], checks, kafka_bootstrap, instance).success
    found = evaluation(instance, "killed_target", "kafka_hanging_transactions")
    assert not found.passed and found.severity == AssetCheckSeverity.ERROR
    warned = evaluation(instance, "killed_target", "warned")
    assert not warned.passed and warned.severity == AssetCheckSeverity.WARN
    text = found.description
    assert f"{topic}-0: blocked for " in text
    assert "at last stable offset 1, high watermark 4 (3 offset(s) held)" in text
    assert "at last stable offset 0, high watermark 2 (2 offset(s) held)" in text
    assert "'transaction.timeout.ms' has passed since it began" in text
    assert "the sink's producers use 900000 ms" in text
    first = f"kafka-transactions.sh --bootstrap-server {kafka_bootstrap} abort --topic {topic}"
    commands = found.metadata["abortCommands"].value
    assert commands == [
        f"{first} --partition 0 --start-offset 1",
        f"{first} --partition 1 --start-offset 0",
    ]
    assert all(f"`{c}`" in text for c in commands)
    rows = {r["partition"]: r for r in found.metadata["partitions"].value}
    assert rows[0]["limitMs"] == 2000 and rows[0]["openMs"] > 2000

    for command in commands:  # the advice works: readers move on
        transactions_command(command)
    assert offsets(kafka_bootstrap, topic, IsolationLevel.READ_COMMITTED) == offsets(
        kafka_bootstrap, topic, IsolationLevel.READ_UNCOMMITTED
    )
    assert run_checks_alone([AssetSpec("killed_target")], checks, kafka_bootstrap, instance).success
    assert evaluation(instance, "killed_target", "kafka_hanging_transactions").passed


def test_a_transaction_that_ends_while_watched_is_not_stuck(kafka_bootstrap, new_topic) -> None:
    from dagster_kafka_flinklike.run.transactions import open_transactions, still_open
    from dagster_kafka_flinklike.source.admin import KafkaAdmin

    topic = new_topic(partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"pending", partition=0)
    assert producer.flush(30) == 0
    admin = KafkaAdmin({"bootstrap.servers": kafka_bootstrap})
    [held] = open_transactions(admin, [(topic, 0)], {"bootstrap.servers": kafka_bootstrap})
    assert still_open(admin, [held], settle_s=0.5) == [held]  # nothing ends it: stuck
    committer = threading.Timer(0.5, producer.commit_transaction, (30,))
    committer.start()
    try:
        assert still_open(admin, [held], settle_s=20) == []  # it moved once committed
    finally:
        committer.join()


def test_a_runs_own_transaction_is_never_reported_as_hanging(
    kafka_bootstrap, new_topic, spark, monkeypatch
) -> None:
    monkeypatch.setattr(checks_module, "DEFAULT_MAX_BLOCKED", timedelta(milliseconds=1))
    topic, out = new_topic(partitions=1), new_topic(partitions=2)
    produce(kafka_bootstrap, topic, records(0, 50))
    sink = eos(out)
    asset = copy(source_table(topic), sink, [HangingTransactionsCheck()])
    instance = DagsterInstance.ephemeral()
    for _ in range(2):
        assert materialize([asset], instance=instance, resources=resources(kafka_bootstrap)).success
        check = evaluation(instance, "copied", "kafka_hanging_transactions")
        assert check.passed, check.description
        produce(kafka_bootstrap, topic, records(50, 80))


def test_lag_over_and_under_the_thresholds(kafka_bootstrap, new_topic, spark) -> None:
    topic, out = new_topic(partitions=2), new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [(k, v, 0) for k, v in records(0, 20)])
    checks = [
        ConsumerLagCheck(name="lag_records", max_pending_records=10),
        ConsumerLagCheck(name="lag_age", max_pending_age=timedelta(minutes=10), severity="WARN"),
    ]
    lagging = copy(source_table(topic), sink_table(out), checks)
    instance = DagsterInstance.ephemeral()
    assert materialize([lagging], instance=instance, resources=resources(kafka_bootstrap)).success
    assert evaluation(instance, "copied", "lag_records").passed
    assert evaluation(instance, "copied", "lag_age").metadata["pendingRecords"].value == 0

    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    hour_ago = int(time.time() * 1000) - 3_600_000
    for key, value in records(20, 35):
        producer.produce(topic, value, key, partition=1, timestamp=hour_ago)
    assert producer.flush(30) == 0
    assert materialize(
        [lagging],
        instance=instance,
        resources=resources(kafka_bootstrap),
        selection=AssetSelection.checks_for_assets(lagging),
    ).success
    by_count = evaluation(instance, "copied", "lag_records")
    assert not by_count.passed
    assert by_count.metadata["pendingRecords"].value == 15
    assert by_count.metadata["offsets"].value == {f"events/{topic}-0": 0, f"events/{topic}-1": 15}
    by_age = evaluation(instance, "copied", "lag_age")
    assert not by_age.passed and by_age.severity == AssetCheckSeverity.WARN
    assert 3_600_000 <= by_age.metadata["oldestPendingAgeMs"].value < 3_900_000

    assert materialize([lagging], instance=instance, resources=resources(kafka_bootstrap)).success
    assert evaluation(instance, "copied", "lag_records").passed
    assert evaluation(instance, "copied", "lag_age").passed


def test_an_unreachable_broker_fails_the_check_without_crashing(monkeypatch) -> None:
    monkeypatch.setattr(checks_module, "CHECK_TIMEOUT_S", 2.0)
    checks = build_kafka_asset_checks(
        "far_away", [TransactionTimeoutCheck(), HangingTransactionsCheck()], sink=eos("far")
    )
    instance = DagsterInstance.ephemeral()
    began = time.monotonic()
    assert run_checks_alone([AssetSpec("far_away")], checks, "127.0.0.1:9", instance).success
    assert time.monotonic() - began < 45
    for name in ("kafka_transaction_timeout", "kafka_hanging_transactions"):
        failed = evaluation(instance, "far_away", name)
        assert not failed.passed
        assert "could not be evaluated" in failed.description
        assert "error" in failed.metadata


def test_invalid_check_thresholds_fail_when_the_asset_is_declared() -> None:
    with pytest.raises(ValueError, match="'max_ratio'"):
        copy(source_table("t"), sink_table("o"), [DirtyDataCheck(max_ratio=-0.1)])
