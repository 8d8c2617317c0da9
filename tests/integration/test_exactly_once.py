"""Exactly-once sink on the real broker: one transaction for output and offsets, fencing, timeouts.

Transaction-timeout tests use a second embedded broker started with a small
``transaction.max.timeout.ms``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.local import EmbeddedKafka
from dagster_kafka_flinklike.sink import transactional
from dagster_kafka_flinklike.sink.transactional import transaction_timeout_ms
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import SMALL_MAX_TIMEOUT_MS, consume_all, produce, wait_for_topic

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "payload", "type": "STRING"}]


def copy_asset(
    source_topic: str, sink_topic: str, *, control: dict, sink_props: dict | None = None
):
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"eos-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
        },
        columns=COLUMNS,
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": sink_topic,
            "format": "json",
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": f"eos-{sink_topic}",
            **{f"properties.{k}": v for k, v in (sink_props or {}).items()},
        },
        columns=COLUMNS,
        role="sink",
    )

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name="copy")
    def copy(context, events):
        from pyspark.sql import functions as F

        delay = control.get("sleep_s", 0.0)
        if delay:
            started = control.setdefault("started", threading.Event())

            @F.udf("bigint")
            def slow(value):  # runs inside the open transaction, on the driver's pull
                time.sleep(delay)
                return value

            started.set()
            return events.coalesce(1).select(slow("id").alias("id"), "payload")
        return events.select("id", "payload")

    return copy


def events(first: int, count: int) -> list[tuple[None, bytes]]:
    return [
        (None, json.dumps({"id": i, "payload": f"p{i}"}).encode())
        for i in range(first, first + count)
    ]


def output_ids(
    bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed"
) -> Counter:
    return Counter(
        json.loads(m.value())["id"] for m in consume_all(bootstrap, topic, partitions, isolation)
    )


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    consumer.close()
    return [tp.offset for tp in found]


def resources_for(bootstrap: str) -> dict:
    return {
        "kafka": KafkaResource(bootstrap_servers=bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def test_output_and_offsets_commit_in_one_transaction(kafka_bootstrap, new_topic, spark) -> None:
    source, sink = new_topic(partitions=2), new_topic(partitions=2)
    asset = copy_asset(source, sink, control={})
    resources = resources_for(kafka_bootstrap)
    produce(kafka_bootstrap, source, events(0, 300))

    first = materialize([asset], resources=resources, instance=DagsterInstance.ephemeral())
    meta = first.asset_materializations_for_node("copy")[0].metadata
    assert meta["numRecordsIn"].value == 300
    assert meta["numRecordsOut"].value == 300
    assert meta["transactionalId"].value == f"eos-{sink}-copy-0"
    assert isinstance(meta["producerEpoch"].value, int)
    assert meta["transactionDurationMs"].value > 0
    # Kafka holds the checkpoint: the group's offsets moved with the transaction.
    assert sum(committed(kafka_bootstrap, f"eos-{source}", source, 2)) == 300

    # A fresh Dagster instance (no materialization history) still resumes from Kafka's offsets.
    produce(kafka_bootstrap, source, events(300, 120))
    second = materialize([asset], resources=resources, instance=DagsterInstance.ephemeral())
    assert second.asset_materializations_for_node("copy")[0].metadata["numRecordsIn"].value == 120
    ids = output_ids(kafka_bootstrap, sink, 2)
    assert ids == Counter(range(420))
    # Uncommitted readers see the same records plus nothing else (no aborted leftovers here).
    assert sum(output_ids(kafka_bootstrap, sink, 2, "read_uncommitted").values()) == 420


def test_a_cluster_silent_after_the_commit_never_fails_the_committed_run(
    kafka_bootstrap, new_topic, spark, monkeypatch
) -> None:
    """The pending records are asked after the commit: a cluster that no longer lists offsets
    then leaves them out of the metadata; the run, whose output is committed, succeeds."""
    from dagster_kafka_flinklike.errors import OffsetsError
    from dagster_kafka_flinklike.source.admin import KafkaAdmin

    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, source, events(0, 50))
    committed_now = threading.Event()
    commit, end_offsets = transactional.TransactionalSink._commit, KafkaAdmin.end_offsets

    def commit_then_fall_silent(self, *args):  # type: ignore[no-untyped-def]
        attempts = commit(self, *args)
        committed_now.set()
        return attempts

    def silent_after_the_commit(self, partitions):  # type: ignore[no-untyped-def]
        if committed_now.is_set():
            raise OffsetsError(f"Could not list offsets of {partitions}: timed out")
        return end_offsets(self, partitions)

    monkeypatch.setattr(transactional.TransactionalSink, "_commit", commit_then_fall_silent)
    monkeypatch.setattr(KafkaAdmin, "end_offsets", silent_after_the_commit)
    result = materialize(
        [copy_asset(source, sink, control={})],
        resources=resources_for(kafka_bootstrap),
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert result.success
    meta = result.asset_materializations_for_node("copy")[0].metadata
    assert meta["numRecordsOut"].value == 50
    assert "pendingRecords" not in meta  # unknown, never a wrong 0
    assert output_ids(kafka_bootstrap, sink, 1) == Counter(range(50))
    assert committed(kafka_bootstrap, f"eos-{source}", source, 1) == [50]


def test_a_failed_query_commits_nothing(kafka_bootstrap, new_topic, spark) -> None:
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    control: dict = {}
    asset = copy_asset(source, sink, control=control)
    resources = resources_for(kafka_bootstrap)
    produce(kafka_bootstrap, source, events(0, 50))
    materialize([asset], resources=resources, instance=DagsterInstance.ephemeral())

    produce(kafka_bootstrap, source, [(None, b"{broken"), *events(50, 10)])
    failed = materialize(
        [asset], resources=resources, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not failed.success
    assert committed(kafka_bootstrap, f"eos-{source}", source, 1) == [50]
    assert output_ids(kafka_bootstrap, sink, 1) == Counter(range(50))


def test_concurrent_runs_one_is_fenced_output_once(kafka_bootstrap, new_topic, spark) -> None:
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    produce(kafka_bootstrap, source, events(0, 40))
    slow, fast = {"sleep_s": 0.1}, {}
    resources = resources_for(kafka_bootstrap)
    results: dict[str, object] = {}

    def run(name: str, control: dict) -> None:
        asset = copy_asset(source, sink, control=control)
        results[name] = materialize(
            [asset],
            resources=resources,
            instance=DagsterInstance.ephemeral(),
            raise_on_error=False,
        )

    first = threading.Thread(target=run, args=("slow", slow))
    first.start()
    # Start the second run once the first one's transaction is open and producing slowly.
    assert slow.setdefault("started", threading.Event()).wait(120)
    time.sleep(1.0)
    run("fast", fast)
    first.join(300)
    assert results["fast"].success
    assert not results["slow"].success
    error = results["slow"].failure_data_for_node("copy").error.to_string()
    assert "TransactionError" in error and "fenced" in error
    assert output_ids(kafka_bootstrap, sink, 1) == Counter(range(40))
    assert committed(kafka_bootstrap, f"eos-{source}", source, 1) == [40]


@pytest.fixture
def small_timeout_broker(small_broker: EmbeddedKafka) -> str:
    return small_broker.bootstrap_servers


def _topic(bootstrap: str, name: str) -> str:
    from confluent_kafka.admin import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(60)
    wait_for_topic(admin, name, 1)
    return name


def test_timeout_above_broker_maximum_is_refused(small_timeout_broker, spark) -> None:
    assert transaction_timeout_ms({}, SMALL_MAX_TIMEOUT_MS) == SMALL_MAX_TIMEOUT_MS
    source, sink = (
        _topic(small_timeout_broker, "refuse-in"),
        _topic(small_timeout_broker, "refuse-out"),
    )
    produce(small_timeout_broker, source, events(0, 10))
    asset = copy_asset(source, sink, control={}, sink_props={"transaction.timeout.ms": "60000"})
    result = materialize(
        [asset],
        resources=resources_for(small_timeout_broker),
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    error = result.failure_data_for_node("copy").error.to_string()
    assert "60000" in error and str(SMALL_MAX_TIMEOUT_MS) in error
    assert "properties.transaction.timeout.ms" in error
    assert output_ids(small_timeout_broker, sink, 1, "read_uncommitted") == Counter()


def test_transaction_outliving_its_timeout_fails_then_rerun_delivers_once(
    small_timeout_broker, spark
) -> None:
    source, sink = _topic(small_timeout_broker, "slow-in"), _topic(small_timeout_broker, "slow-out")
    produce(small_timeout_broker, source, events(0, 30))
    props = {"transaction.timeout.ms": "3000"}
    resources = resources_for(small_timeout_broker)
    slow = copy_asset(source, sink, control={"sleep_s": 0.2}, sink_props=props)
    failed = materialize(
        [slow], resources=resources, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not failed.success
    error = failed.failure_data_for_node("copy").error.to_string()
    assert "transaction.timeout.ms" in error and "3000" in error
    assert output_ids(small_timeout_broker, sink, 1) == Counter()
    assert committed(small_timeout_broker, f"eos-{source}", source, 1) == [-1001]

    fast = copy_asset(source, sink, control={}, sink_props=props)
    materialize([fast], resources=resources, instance=DagsterInstance.ephemeral())
    assert output_ids(small_timeout_broker, sink, 1) == Counter(range(30))


class PauseBrokerAtCommit:
    """A log that freezes the broker (SIGSTOP) as the commit starts and resumes it later."""

    def __init__(self, pid: int, pause_s: float) -> None:
        self.pid, self.pause_s = pid, pause_s
        self.warnings: list[str] = []

    def info(self, message: str) -> None:
        if message.endswith("committing."):
            os.kill(self.pid, signal.SIGSTOP)
            threading.Timer(self.pause_s, os.kill, (self.pid, signal.SIGCONT)).start()

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def test_a_commit_that_times_out_is_retried_never_aborted(small_broker, spark, monkeypatch) -> None:
    bootstrap = small_broker.bootstrap_servers
    source, sink_topic = _topic(bootstrap, "retry-in"), _topic(bootstrap, "retry-out")
    monkeypatch.setattr(transactional, "COMMIT_ATTEMPT_TIMEOUT_S", 0.5)
    pid = int(json.loads(small_broker.state_file.read_text())["pid"])
    log = PauseBrokerAtCommit(pid, pause_s=2.0)
    sink = transactional.TransactionalSink(
        sink_topic, {"bootstrap.servers": bootstrap}, "retry-commit-0", log=log
    )
    encoded = spark.createDataFrame(
        [(None, json.dumps({"id": i}).encode()) for i in range(100)], "key binary, value binary"
    )
    try:
        sink.begin()
        result = sink.write(encoded, {"retry-group": {(source, 0): 100}})
    finally:
        os.kill(pid, signal.SIGCONT)
        sink.close()
    assert result.records == 100
    assert result.commit_attempts >= 2
    assert any("retrying" in w for w in log.warnings)
    assert output_ids(bootstrap, sink_topic, 1) == Counter(range(100))
    assert committed(bootstrap, "retry-group", source, 1) == [100]


class LostCommitAnswers:
    """The sink's producer, whose ``commit_transaction`` never answers (a timeout, as when the
    answer is lost on the network); the first call still commits, or freezes the broker."""

    def __init__(self, producer, *, commit: bool, freeze_pid: int | None = None) -> None:
        self._producer, self._commit, self._freeze_pid = producer, commit, freeze_pid
        self.calls = 0

    def __getattr__(self, name: str):
        return getattr(self._producer, name)

    def commit_transaction(self, timeout: float) -> None:
        from confluent_kafka import KafkaError, KafkaException

        self.calls += 1
        if self.calls == 1 and self._commit:
            self._producer.commit_transaction(timeout)
        if self.calls == 1 and self._freeze_pid:
            os.kill(self._freeze_pid, signal.SIGSTOP)
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "no answer", retriable=True))


def _write_losing_commit_answers(bootstrap: str, spark, tid: str, **lost) -> tuple:
    """Write 50 records and offset 50 of a source through a sink whose commits never answer
    (transaction timeout 6 s); the outcome (a result or the error) and the topics."""
    source, sink_topic = _topic(bootstrap, f"{tid}-in"), _topic(bootstrap, f"{tid}-out")
    log = Lines()
    sink = transactional.TransactionalSink(
        sink_topic, {"bootstrap.servers": bootstrap, "transaction.timeout.ms": 6000}, tid, log=log
    )
    encoded = spark.createDataFrame(
        [(None, json.dumps({"id": i}).encode()) for i in range(50)], "key binary, value binary"
    )
    try:
        sink.begin()
        sink._producer = LostCommitAnswers(sink._producer, **lost)
        try:
            outcome = sink.write(encoded, {f"group-{tid}": {(source, 0): 50}})
        except transactional.TransactionError as exc:
            outcome = exc
    finally:
        sink.close()
    return outcome, log, source, sink_topic


def test_a_commit_whose_answer_is_lost_succeeds_when_its_offsets_say_it_committed(
    small_broker, spark
) -> None:
    bootstrap = small_broker.bootstrap_servers
    tid = f"lost-answer-{time.time_ns()}"
    result, log, source, sink_topic = _write_losing_commit_answers(
        bootstrap, spark, tid, commit=True
    )
    assert isinstance(result, transactional.TransactionResult), result
    assert result.records == 50 and result.commit_attempts >= 2
    assert any("confirms that it committed" in line for line in log.lines), log.lines
    assert output_ids(bootstrap, sink_topic, 1) == Counter(range(50))
    assert committed(bootstrap, f"group-{tid}", source, 1) == [50]


def test_a_commit_never_answered_fails_within_the_timeout_and_commits_nothing(
    small_broker, spark
) -> None:
    bootstrap = small_broker.bootstrap_servers
    tid = f"never-answered-{time.time_ns()}"
    began = time.monotonic()
    error, _, source, sink_topic = _write_losing_commit_answers(bootstrap, spark, tid, commit=False)
    assert isinstance(error, transactional.TransactionError), error
    assert time.monotonic() - began < 30  # the 6 s transaction timeout bounds the retries
    assert "aborted it" in str(error) and "nothing was committed" in str(error)
    assert output_ids(bootstrap, sink_topic, 1, "read_uncommitted") == Counter(range(50))
    assert output_ids(bootstrap, sink_topic, 1) == Counter()
    assert committed(bootstrap, f"group-{tid}", source, 1) == [-1001]


def test_a_commit_a_frozen_cluster_never_answers_is_unknown_and_the_next_run_settles_it(
    small_broker, spark, monkeypatch
) -> None:
    bootstrap = small_broker.bootstrap_servers
    pid = int(json.loads(small_broker.state_file.read_text())["pid"])
    monkeypatch.setattr(transactional, "SETTLE_TIMEOUT_S", 2.0)
    monkeypatch.setattr(transactional, "_REQUEST_TIMEOUT_S", 2.0)
    tid = f"frozen-{time.time_ns()}"
    try:
        error, _, source, sink_topic = _write_losing_commit_answers(
            bootstrap, spark, tid, commit=False, freeze_pid=pid
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    assert isinstance(error, transactional.TransactionError), error
    message = str(error)
    assert bootstrap in message and "not known" in message and "next run settles it" in message
    # the next run fences the transactional id: the open transaction is aborted, never half-seen
    monkeypatch.setattr(transactional, "_REQUEST_TIMEOUT_S", 30.0)
    nxt = transactional.TransactionalSink(sink_topic, {"bootstrap.servers": bootstrap}, tid)
    try:
        nxt.begin()
        assert nxt.committed_offsets(f"group-{tid}", [(source, 0)]) == {}
    finally:
        nxt.close()
    assert output_ids(bootstrap, sink_topic, 1) == Counter()


class Lines:
    """A log that keeps its info lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message: str) -> None:
        self.lines.append(message)

    def warning(self, message: str) -> None:
        self.lines.append(message)


def test_the_log_says_whether_a_transactional_id_was_used_before(kafka_bootstrap) -> None:
    tid = f"identity-{time.time_ns()}-0"
    said = []
    for _ in range(2):
        log = Lines()
        sink = transactional.TransactionalSink(
            "unused", {"bootstrap.servers": kafka_bootstrap}, tid, log=log
        )
        try:
            sink.begin()
            sink.write_outputs([], {})
        finally:
            sink.close()
        assert not any("fenced" in line for line in log.lines[:1])  # init claims nothing
        said.append(next(line for line in log.lines if "producer id" in line))
    assert "epoch 0: first use of this transactional id" in said[0]
    assert "no earlier producer to fence" in said[0]
    assert "epoch 1: the id was used before" in said[1]
    assert "fenced its earlier producers" in said[1]
