"""Shared pytest fixtures: a Kafka broker, a Schema Registry and a Spark Connect server for the
whole session, an admin client, fresh topics.

The broker is ``$KAFKA_BOOTSTRAP_SERVERS`` when set, else an embedded broker started once per
session in a temporary directory; the registry likewise is ``$SCHEMA_REGISTRY_URL`` or an
embedded one, and the Spark Connect server ``$SPARK_REMOTE`` or a local one started with
``dkf local-spark start``; both are started only when a test asks for them (see
``dagster_kafka_flinklike.local``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from dagster_kafka_flinklike.local import EmbeddedKafka, EmbeddedSchemaRegistry

NewTopicFactory = Callable[..., str]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the broker with ``kafka`` and every one that uses the registry
    with ``schema_registry`` (``-m "not kafka"`` deselects them)."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "kafka_bootstrap" in names:
            item.add_marker(pytest.mark.kafka)
        if "schema_registry_url" in names:
            item.add_marker(pytest.mark.schema_registry)
        if "spark_connect_url" in names:
            item.add_marker(pytest.mark.spark_connect)


#: Tests write records stamped with fixed dates that the calendar overtakes; under the
#: default 7-day retention the broker's periodic check would delete them mid-test. The
#: session's brokers are thrown away, so they keep everything (a topic may still set its own).
KEEP_EVERYTHING = {"log.retention.ms": "-1"}


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap servers of the session's Kafka: ``$KAFKA_BOOTSTRAP_SERVERS`` or embedded."""
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        yield env
        return
    broker = EmbeddedKafka(Path(tmp_path_factory.mktemp("kafka")), extra_properties=KEEP_EVERYTHING)
    # Generous: the very first run also downloads Kafka (not counted) and a busy 2-core CI
    # machine can take much longer than the usual few seconds to start a JVM.
    bootstrap = broker.start(timeout=180)
    try:
        yield bootstrap
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def oracle() -> Iterator[Any]:
    """Apache Flink as the oracle (PyFlink in its own environment, installed on first use).

    Its server starts at once and boots while the first test that asks for it runs its side.
    """
    from tests.oracle import flink_oracle

    flink = flink_oracle()
    flink.start()
    try:
        yield flink
    finally:
        flink.close()


@pytest.fixture(scope="session")
def schema_registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the session's Schema Registry: ``$SCHEMA_REGISTRY_URL`` or an embedded one.

    Started on first use only, so a session whose tests never ask for it pays nothing.
    """
    env = os.environ.get("SCHEMA_REGISTRY_URL", "").strip()
    if env:
        yield env
        return
    registry = EmbeddedSchemaRegistry(Path(tmp_path_factory.mktemp("schema-registry")))
    url = registry.start(timeout=180)  # generous, as for the broker; the download is not counted
    try:
        yield url
    finally:
        registry.stop()


@pytest.fixture(scope="session")
def spark_connect_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``$DKF_HOME`` of the session's local Spark Connect server (``<it>/spark-connect``)."""
    return Path(tmp_path_factory.mktemp("dkf-home-spark"))


@pytest.fixture(scope="session")
def spark_connect_url(spark_connect_home: Path) -> Iterator[str]:
    """URL of the session's Spark Connect server: ``$SPARK_REMOTE`` or a local one.

    The local server is started and stopped with the command line a user runs (``dkf
    local-spark start`` / ``stop``), once per session and on first use only; its ``start``
    prints the URL alone on a line and its ``stop`` must leave nothing running.
    """
    env = os.environ.get("SPARK_REMOTE", "").strip()
    if env:
        yield env
        return
    # Generous, as for the broker: a busy 2-core CI machine starts a JVM slowly.
    started = run_dkf(spark_connect_home, "local-spark", "start", "--timeout", "240")
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert url.startswith("sc://127.0.0.1:") and "\n" not in url, started.stdout
    try:
        yield url
    finally:
        _stop_connect_sessions()  # else each client retries releasing its session at exit
        stopped = run_dkf(spark_connect_home, "local-spark", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.startswith("stopped the local Spark Connect server"), stopped.stdout
        after = run_dkf(spark_connect_home, "local-spark", "status")
        assert (after.returncode, after.stdout) == (1, ""), after


def _stop_connect_sessions() -> None:
    """Release this process's Spark Connect sessions (PySpark keeps the default one)."""
    connect = sys.modules.get("pyspark.sql.connect.session")
    if connect is None:
        return
    sessions = connect.SparkSession
    for session in (sessions.getActiveSession(), sessions._get_default_session()):
        if session is not None:
            session.stop()


@pytest.fixture
def connect_spark(spark_connect_url: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """A Spark Connect session with the session's server, as ``SparkResource(remote=...)``
    builds it.

    PySpark runs one kind of session per process at a time (a process-wide switch makes its
    functions build Spark Connect plans); the switch is turned back off after the test, so the
    classic ``spark`` fixture keeps working in the same test session.
    """
    from dagster_kafka_flinklike.spark import SparkResource

    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # restored (removed) after the test
    session = SparkResource(remote=spark_connect_url).spark_session
    session.conf.set("spark.sql.session.timeZone", "UTC")
    return session


#: ``transaction.max.timeout.ms`` of the small-timeout broker (:func:`small_broker`).
SMALL_MAX_TIMEOUT_MS = 6000


@pytest.fixture(scope="session")
def small_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedKafka]:
    """A second embedded broker whose brokers allow transactions of at most
    :data:`SMALL_MAX_TIMEOUT_MS` and abort timed-out ones within a second (started once)."""
    broker = EmbeddedKafka(
        Path(tmp_path_factory.mktemp("kafka-small-txn")),
        extra_properties={
            **KEEP_EVERYTHING,
            "transaction.max.timeout.ms": str(SMALL_MAX_TIMEOUT_MS),
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        },
    )
    broker.start(timeout=180)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def admin(kafka_bootstrap: str) -> AdminClient:
    """A confluent-kafka AdminClient connected to the session's broker."""
    return AdminClient({"bootstrap.servers": kafka_bootstrap})


def wait_for_topic(admin: AdminClient, topic: str, partitions: int, timeout: float = 30) -> None:
    """Wait until ``topic`` shows ``partitions`` partitions, each with a leader, in metadata."""
    deadline = time.monotonic() + timeout
    while True:
        metadata = admin.list_topics(topic=topic, timeout=10)
        info = metadata.topics.get(topic)
        if (
            info is not None
            and info.error is None
            and len(info.partitions) == partitions
            and all(p.leader >= 0 and p.error is None for p in info.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} not ready after {timeout} s: {info}")
        time.sleep(0.1)


@pytest.fixture
def new_topic(admin: AdminClient, request: pytest.FixtureRequest) -> NewTopicFactory:
    """Factory ``new_topic(partitions=3, config=None) -> name`` creating a unique, ready topic.

    Topics are named after the test and never deleted (the session broker is thrown away).
    They keep every record (``retention.ms=-1`` unless ``config`` says otherwise), also on
    a broker given by ``$KAFKA_BOOTSTRAP_SERVERS``.
    """

    def create(partitions: int = 3, config: Mapping[str, str] | None = None) -> str:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:150]
        name = f"{stem}-{uuid.uuid4().hex[:8]}"
        futures = admin.create_topics(
            [NewTopic(name, partitions, 1, config={"retention.ms": "-1", **(config or {})})],
            operation_timeout=30,
        )
        futures[name].result(timeout=60)
        wait_for_topic(admin, name, partitions)
        return name

    return create


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the test session (built as the SparkResource builds it)."""
    from pyspark.sql import SparkSession

    from dagster_kafka_flinklike.spark import (
        local_spark_config,
        prepare_spark_environment,
        with_spark_avro,
    )

    config = with_spark_avro(local_spark_config("tests"))
    prepare_spark_environment(config["spark.master"])
    builder = SparkSession.builder
    for key, value in config.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


#: Test producers' setting that keeps a partition's records in the order sent even when a
#: request is retried (just after a topic is created, under load): one request in flight.
IN_ORDER = {"max.in.flight.requests.per.connection": 1}


def produce(
    bootstrap: str,
    topic: str,
    records: list[tuple[bytes | None, bytes | None]] | list[tuple[bytes | None, bytes | None, int]],
) -> None:
    """Produce ``(key, value[, partition])`` records synchronously (acks=all)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **IN_ORDER})
    errors: list[str] = []
    for record in records:
        kwargs = {"partition": record[2]} if len(record) > 2 else {}
        producer.produce(
            topic,
            record[1],
            record[0],
            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
            **kwargs,
        )
    assert producer.flush(30) == 0
    assert not errors, errors


def consume_all(
    bootstrap: str,
    topic: str,
    partitions: int,
    isolation: str = "read_committed",
    settle_s: float = 10.0,
) -> list:
    """Every record of ``topic`` (partitions ``0..partitions-1``) up to its end, as messages.

    Reads with ``isolation`` (read_committed by default: aborted and open transactions unseen).
    A transaction's markers are written just after its commit returns, so read_committed first
    waits (up to ``settle_s``) for every last stable offset to reach the high watermark.
    """
    from confluent_kafka import Consumer, IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    if isolation == "read_committed":
        admin = AdminClient({"bootstrap.servers": bootstrap})

        def ends(level: IsolationLevel) -> dict[int, int]:
            wanted = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
            found = admin.list_offsets(wanted, isolation_level=level, request_timeout=30)
            return {tp.partition: f.result().offset for tp, f in found.items()}

        deadline = time.monotonic() + settle_s
        while ends(IsolationLevel.READ_COMMITTED) != ends(IsolationLevel.READ_UNCOMMITTED):
            if time.monotonic() > deadline:
                break  # an open transaction: read what is committed
            time.sleep(0.1)

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "tests-consume-all",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list = []
    eof: set[int] = set()
    while len(eof) < partitions:
        # consume() waits its whole timeout unless the batch fills, so a short one: a long one
        # was paid again after the last record of every read (2 s a call, 200-odd calls a run).
        for message in consumer.consume(10_000, timeout=0.1):
            if message.error():
                eof.add(message.partition())
            else:
                messages.append(message)
    consumer.close()
    return messages


REPO_ROOT = Path(__file__).resolve().parents[1]


def run_dkf(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``dkf <args>`` in a new process with ``$DKF_HOME`` = ``home`` (this checkout's code)."""
    env = dict(os.environ)
    env["DKF_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "dagster_kafka_flinklike.cli", *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
