"""The embedded broker's pure parts and state handling, without Java or a broker."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagster_kafka_flinklike import cli
from dagster_kafka_flinklike.errors import EmbeddedKafkaError, KafkaConnectorError
from dagster_kafka_flinklike.local import (
    KAFKA_VERSION,
    EmbeddedKafka,
    EmbeddedKafkaCluster,
    _service,
    default_cache_dir,
    default_home,
    ensure_local_kafka,
    fetch_kafka,
    render_server_properties,
    resolve_bootstrap_servers,
)
from dagster_kafka_flinklike.local._broker import _new_cluster_id, render_log4j2_properties
from dagster_kafka_flinklike.local.fetch import render_pom


def _parse_properties(text: str) -> dict[str, str]:
    """Last value wins, as in java.util.Properties (enough for the lines rendered here)."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            props[key] = value
    return props


# ------------------------------------------------------------------------------ rendering


def test_server_properties_single_node_kraft() -> None:
    text = render_server_properties(Path("/data/k"), port=19092, controller_port=19093)
    props = _parse_properties(text)
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "1"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["log.dirs"] == "/data/k/data"
    for key in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
    ):
        assert props[key] == "1", key
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["auto.create.topics.enable"] == "true"


def test_extra_properties_come_last_and_substitute_placeholders() -> None:
    text = render_server_properties(
        Path("/data/k"),
        port=1000,
        controller_port=2000,
        extra_properties={
            "auto.create.topics.enable": "false",
            "transaction.max.timeout.ms": "5000",
            "listeners": "PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:3000,"
            "CONTROLLER://127.0.0.1:{controller_port}",
            "custom.path": "{data_dir}/x",
        },
    )
    lines = text.splitlines()
    assert lines.index("auto.create.topics.enable=false") > lines.index(
        "auto.create.topics.enable=true"
    )
    props = _parse_properties(text)
    assert props["auto.create.topics.enable"] == "false"
    assert props["transaction.max.timeout.ms"] == "5000"
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:1000,SASL_PLAINTEXT://127.0.0.1:3000,CONTROLLER://127.0.0.1:2000"
    )
    assert props["custom.path"] == "/data/k/x"


def test_properties_escaping_keeps_values_intact() -> None:
    text = render_server_properties(
        Path("/k"),
        port=1,
        controller_port=2,
        extra_properties={"a.b": "back\\slash", "c": "caf\u00e9 \u2603", "d": " lead"},
    )
    assert "a.b=back\\\\slash" in text.splitlines()
    assert "c=caf\\u00e9 \\u2603" in text.splitlines()
    assert "d=\\ lead" in text.splitlines()
    text.encode("ascii")  # Kafka reads the file as ISO-8859-1: keep it plain ASCII
    with pytest.raises(EmbeddedKafkaError):
        render_server_properties(Path("/k"), port=1, controller_port=2, extra_properties={"": "x"})


def test_log4j2_config_logs_to_the_broker_dir() -> None:
    text = render_log4j2_properties(Path("/data/k"))
    assert "appender.server.fileName = /data/k/logs/server.log" in text
    assert "rootLogger.level = INFO" in text


def test_pom_pins_kafka_and_slf4j2() -> None:
    pom = render_pom()
    assert KAFKA_VERSION == "4.2.1"
    for artifact in ("kafka_2.13", "kafka-tools", "log4j-core", "log4j-slf4j2-impl", "slf4j-api"):
        assert f"<artifactId>{artifact}</artifactId>" in pom
    assert f"<version>{KAFKA_VERSION}</version>" in pom
    assert "<version>2.0." in pom  # slf4j-api 2.x, or logging silently goes to the NOP logger


def test_cluster_id_is_kafka_uuid_text() -> None:
    for _ in range(50):
        cid = _new_cluster_id()
        assert len(cid) == 22 and not cid.startswith("-")
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


# ------------------------------------------------------------------------------ fetch cache


def test_fetch_is_skipped_when_marker_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libs = tmp_path / f"kafka-{KAFKA_VERSION}" / "libs"
    libs.mkdir(parents=True)
    (libs / ".dkf-fetch-complete").write_text("{}")
    monkeypatch.setattr(shutil, "which", lambda _name: None)  # no mvn: must not be needed
    assert fetch_kafka(tmp_path) == libs
    monkeypatch.setenv("DKF_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path
    assert fetch_kafka() == libs


def test_fetch_without_maven_explains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(EmbeddedKafkaError, match="Maven"):
        fetch_kafka(tmp_path)
    assert not (tmp_path / f"kafka-{KAFKA_VERSION}" / "libs").exists()
    assert issubclass(EmbeddedKafkaError, KafkaConnectorError)


# ------------------------------------------------------------------------------ state file


def _write_state(data_dir: Path, pid: int, port: int = 1) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    state = data_dir / "state.json"
    state.write_text(
        json.dumps(
            {"pid": pid, "port": port, "bootstrap": f"127.0.0.1:{port}", "kafka_version": "4.2.1"}
        )
    )
    return state


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_no_state_means_not_running(tmp_path: Path) -> None:
    kafka = EmbeddedKafka(tmp_path / "never-started")
    assert kafka.status() is None
    assert kafka.stop() is False
    with pytest.raises(EmbeddedKafkaError, match="not running"):
        _ = kafka.bootstrap_servers


def test_state_of_dead_process_is_removed(tmp_path: Path) -> None:
    state = _write_state(tmp_path, _dead_pid())
    assert EmbeddedKafka(tmp_path).status() is None
    assert not state.exists()

    state = _write_state(tmp_path, _dead_pid())
    assert EmbeddedKafka(tmp_path).stop() is False
    assert not state.exists()


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs procfs")
def test_state_of_reused_pid_is_removed(tmp_path: Path) -> None:
    state = _write_state(tmp_path, os.getpid())  # alive, but pytest is no Kafka broker
    assert EmbeddedKafka(tmp_path).status() is None
    assert not state.exists()


def test_corrupt_state_is_removed(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text("{not json")
    assert EmbeddedKafka(tmp_path).status() is None
    assert not state.exists()


@pytest.fixture
def fake_broker(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A process whose command line looks like the broker's, and a port that answers."""
    props = tmp_path / "server.properties"
    code = "import time; time.sleep(120)"
    proc = subprocess.Popen([sys.executable, "-c", code, "kafka.Kafka", str(props)])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        yield proc, listener.getsockname()[1]
    finally:
        listener.close()
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs")
def test_status_and_stop_of_a_live_recorded_process(
    tmp_path: Path, fake_broker: tuple[subprocess.Popen[bytes], int]
) -> None:
    proc, port = fake_broker
    state = _write_state(tmp_path, proc.pid, port)
    kafka = EmbeddedKafka(tmp_path)
    assert kafka.status() == f"127.0.0.1:{port}"
    assert kafka.bootstrap_servers == f"127.0.0.1:{port}"
    assert kafka.stop(timeout=10) is True  # SIGTERM; the zombie it leaves counts as stopped
    assert proc.wait(5) != 0
    assert not state.exists()
    assert kafka.status() is None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs")
def test_a_reused_pid_of_a_reaped_child_is_asked_of_the_system(
    tmp_path: Path,
    fake_broker: tuple[subprocess.Popen[bytes], int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A service child that died long ago must not make a live process with its pid look dead."""
    proc, port = fake_broker
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # After a wrap-around of pids, the broker got the pid the dead child once had.
    monkeypatch.setitem(_service._CHILDREN, proc.pid, dead)
    _write_state(tmp_path, proc.pid, port)
    assert EmbeddedKafka(tmp_path).status() == f"127.0.0.1:{port}"
    assert proc.pid not in _service._CHILDREN


def test_a_cluster_node_knows_every_voter_and_replicates_to_three() -> None:
    text = render_server_properties(
        Path("/k/node-2"), port=19094, controller_port=19095, node_id=2,
        voters={1: 19093, 2: 19095, 3: 19097},
    )  # fmt: skip
    props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:19093,2@127.0.0.1:19095,3@127.0.0.1:19097"
    )
    assert props["default.replication.factor"] == props["offsets.topic.replication.factor"] == "3"
    assert props["min.insync.replicas"] == props["transaction.state.log.min.isr"] == "2"
    assert text.count("min.insync.replicas=") == 1  # replaced, not appended
    with pytest.raises(EmbeddedKafkaError, match="voters"):
        render_server_properties(Path("/k"), port=1, controller_port=2, node_id=2, voters={1: 2})


def test_a_cluster_keeps_its_layout_and_refuses_another_size(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedKafkaError, match="at least 2 nodes"):
        EmbeddedKafkaCluster(tmp_path / "c", 1)
    cluster = EmbeddedKafkaCluster(tmp_path / "c", 3)
    first = cluster.bootstrap_servers
    assert len(first.split(",")) == 3
    assert EmbeddedKafkaCluster(tmp_path / "c", 3).bootstrap_servers == first  # ports kept
    node = cluster.node(3)
    assert (node.node_id, node.data_dir.name) == (3, "node-3")
    assert node.cluster_id and cluster.node(1).cluster_id == node.cluster_id  # one cluster id
    assert node.voters is not None and len(set(node.voters.values())) == 3
    assert cluster.status() is None and node.pid is None
    with pytest.raises(EmbeddedKafkaError, match="not 4"):
        cluster.node(4)
    with pytest.raises(EmbeddedKafkaError, match="has 3 nodes, not 5"):
        EmbeddedKafkaCluster(tmp_path / "c", 5).node(1)


def test_cli_local_kafka_nodes_manages_the_cluster_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    assert cli.main(["local-kafka", "status", "--nodes", "3"]) == 1
    assert cli.main(["local-kafka", "stop", "--nodes", "3"]) == 0
    assert "kafka-cluster" in capsys.readouterr().out


# ------------------------------------------------------------------------------ resolution


def test_default_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DKF_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_home() == tmp_path / ".local"
    monkeypatch.setenv("DKF_HOME", str(tmp_path / "home"))
    assert default_home() == tmp_path / "home"


def test_env_bootstrap_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka-a:9092,kafka-b:9092")
    assert resolve_bootstrap_servers() == "kafka-a:9092,kafka-b:9092"
    assert ensure_local_kafka() == "kafka-a:9092,kafka-b:9092"  # starts nothing
    assert not (tmp_path / "kafka").exists()

    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS")
    assert resolve_bootstrap_servers() is None


def test_cli_status_and_stop_when_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    assert cli.main(["local-kafka", "status"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "not running" in err
    assert cli.main(["local-kafka", "stop"]) == 0
    assert "no local Kafka broker" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main([])
