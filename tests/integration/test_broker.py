"""The embedded Kafka broker against real clients: lifecycle, records, transactions, the CLI.

Every test talks to a real broker. The lifecycle tests start their own ``EmbeddedKafka`` in
``tmp_path``; the record tests use the session broker (``kafka_bootstrap``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dagster_kafka_flinklike.local import (
    KAFKA_VERSION,
    EmbeddedKafka,
    EmbeddedKafkaError,
    free_port,
)
from tests.conftest import run_dkf

pytestmark = pytest.mark.kafka

BOOTSTRAP_RE = re.compile(r"^127\.0\.0\.1:\d+$")
START_TIMEOUT = 180.0  # seconds; generous for a busy 2-core CI machine


def _produce(bootstrap: str, topic: str, records: Iterable[tuple[str, str]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
    assert producer.flush(30) == 0, "records still undelivered after 30 s"
    assert errors == []


def _consume(
    bootstrap: str,
    topic: str,
    *,
    expect: int,
    isolation: str = "read_uncommitted",
    timeout: float = 30,
) -> list[tuple[int, str, str]]:
    """All records of ``topic`` as (partition, key, value), read from the beginning.

    Reads until at least ``expect`` records arrived and every partition is at its end, so that
    records beyond the expected ones would be seen too.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])  # 0: from the start
        records: list[tuple[int, str, str]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(records) >= expect and at_end == set(partitions):
                break
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                raise KafkaException(msg.error())
            at_end.discard(msg.partition())
            records.append((msg.partition(), msg.key().decode(), msg.value().decode()))
        return records
    finally:
        consumer.close()


def _state(data_dir: Path) -> dict[str, object]:
    return dict(json.loads((data_dir / "state.json").read_text()))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[-1].split()[0] != "Z"


# ------------------------------------------------------------------------------ lifecycle


def test_start_status_idempotent_start_stop(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka"
    kafka = EmbeddedKafka(data_dir)
    assert kafka.status() is None
    try:
        bootstrap = kafka.start(timeout=START_TIMEOUT)
        assert BOOTSTRAP_RE.match(bootstrap)
        assert kafka.status() == bootstrap
        assert kafka.bootstrap_servers == bootstrap

        state = _state(data_dir)
        assert state["bootstrap"] == bootstrap
        assert state["port"] == int(bootstrap.rsplit(":", 1)[1])
        assert state["kafka_version"] == KAFKA_VERSION == "4.2.1"
        pid = int(str(state["pid"]))
        assert _pid_alive(pid)
        assert (data_dir / "logs" / "server.log").stat().st_size > 0

        # Starting again, from this object or another one on the same directory, starts nothing.
        assert kafka.start(timeout=START_TIMEOUT) == bootstrap
        other = EmbeddedKafka(data_dir)
        assert other.bootstrap_servers == bootstrap
        assert other.start(timeout=START_TIMEOUT) == bootstrap
        assert int(str(_state(data_dir)["pid"])) == pid

        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert list(metadata.brokers) == [1]
    finally:
        stopped = kafka.stop()
    assert stopped is True
    assert not (data_dir / "state.json").exists()
    assert not _pid_alive(pid)
    assert kafka.status() is None
    assert kafka.stop() is False


def test_restart_keeps_data(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka"
    records = [(f"k{i}", f"v{i}") for i in range(20)]
    with EmbeddedKafka(data_dir) as kafka:
        bootstrap = kafka.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(timeout=60)
        _produce(bootstrap, "kept", records)
    assert EmbeddedKafka(data_dir).status() is None

    with EmbeddedKafka(data_dir) as kafka:
        assert kafka.bootstrap_servers == bootstrap  # the previous port is reused when free
        got = _consume(kafka.bootstrap_servers, "kept", expect=len(records))
    assert sorted((k, v) for _, k, v in got) == sorted(records)


def test_extra_properties_are_honoured(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka"
    external = free_port()
    kafka = EmbeddedKafka(
        data_dir,
        extra_properties={
            "transaction.max.timeout.ms": "5000",
            # A second listener, written with the placeholders a SASL listener would use.
            "listeners": "PLAINTEXT://127.0.0.1:{port},EXTERNAL://127.0.0.1:"
            f"{external},CONTROLLER://127.0.0.1:{{controller_port}}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{{port}},EXTERNAL://127.0.0.1:{external}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,"
            "CONTROLLER:PLAINTEXT",
        },
    )
    try:
        bootstrap = kafka.start(timeout=START_TIMEOUT)
        assert "\ntransaction.max.timeout.ms=5000\n" in (data_dir / "server.properties").read_text()

        too_long = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"too-long-{uuid.uuid4().hex}",
                "transaction.timeout.ms": 10000,
            }
        )
        with pytest.raises(KafkaException) as info:
            too_long.init_transactions(30)
        assert info.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT

        short_enough = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"short-{uuid.uuid4().hex}",
                "transaction.timeout.ms": 4000,
            }
        )
        short_enough.init_transactions(30)

        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{external}"}).list_topics(
            timeout=10
        )
        assert [b.port for b in metadata.brokers.values()] == [external]
    finally:
        kafka.stop()


def test_startup_failure_reports_the_broker_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka"
    kafka = EmbeddedKafka(
        data_dir, extra_properties={"authorizer.class.name": "no.such.Authorizer"}
    )
    with pytest.raises(EmbeddedKafkaError, match="exited during startup") as info:
        kafka.start(timeout=START_TIMEOUT)
    assert "ClassNotFoundException: no.such.Authorizer" in str(info.value)
    assert not (data_dir / "state.json").exists()
    assert kafka.status() is None


def test_explicit_port_in_use_fails_fast(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(EmbeddedKafkaError, match="in use"):
            EmbeddedKafka(tmp_path / "kafka", port=port).start(timeout=START_TIMEOUT)


# ------------------------------------------------------------------------------ records


def test_produce_and_consume(kafka_bootstrap: str, new_topic: Callable[..., str]) -> None:
    topic = new_topic(partitions=3)
    records = [(f"key-{i % 7}", f"value-{i}") for i in range(60)]
    _produce(kafka_bootstrap, topic, records)

    got = _consume(kafka_bootstrap, topic, expect=len(records))
    assert sorted((k, v) for _, k, v in got) == sorted(records)
    partition_of_key: dict[str, int] = {}
    for partition, key, _ in got:  # the default partitioner keeps a key in one partition
        assert partition_of_key.setdefault(key, partition) == partition
    # Within a partition, records keep the order in which they were produced.
    for partition in set(partition_of_key.values()):
        values = [int(v.split("-")[1]) for p, _, v in got if p == partition]
        assert values == sorted(values)


def test_transactions_read_committed_and_uncommitted(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(60)

    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, key=f"c{i}", value=f"committed-{i}")
    producer.commit_transaction(60)

    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, key=f"a{i}", value=f"aborted-{i}")
    producer.flush(30)  # the aborted records really reach the log before the abort
    producer.abort_transaction(60)

    committed = _consume(kafka_bootstrap, topic, expect=3, isolation="read_committed")
    assert sorted(v for _, _, v in committed) == ["committed-0", "committed-1", "committed-2"]

    everything = _consume(kafka_bootstrap, topic, expect=5, isolation="read_uncommitted")
    assert sorted(v for _, _, v in everything) == [
        "aborted-0",
        "aborted-1",
        "committed-0",
        "committed-1",
        "committed-2",
    ]


# ------------------------------------------------------------------------------ CLI


def test_cli_local_kafka_start_status_stop(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    try:
        # Two concurrent starts launch one broker and both report it.
        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda _: run_dkf(home, "local-kafka", "start"), range(2))
        assert first.returncode == 0, first.stderr
        assert second.returncode == 0, second.stderr
        address = first.stdout.strip().splitlines()[-1]
        assert BOOTSTRAP_RE.match(address)
        assert second.stdout.strip().splitlines()[-1] == address

        again = run_dkf(home, "local-kafka", "start")
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip().splitlines()[-1] == address

        # The broker outlived the `start` processes and is found from a new one.
        status = run_dkf(home, "local-kafka", "status")
        assert status.returncode == 0, status.stderr
        assert address in status.stdout.splitlines()
        assert EmbeddedKafka(home / "kafka").status() == address

        stop = run_dkf(home, "local-kafka", "stop")
        assert stop.returncode == 0, stop.stderr
        assert "stopped" in stop.stdout

        after = run_dkf(home, "local-kafka", "status")
        assert after.returncode == 1
        assert "not running" in after.stderr
        assert after.stdout == ""

        again_stop = run_dkf(home, "local-kafka", "stop")
        assert again_stop.returncode == 0
        assert "no local Kafka broker" in again_stop.stdout
    finally:
        EmbeddedKafka(home / "kafka").stop()
