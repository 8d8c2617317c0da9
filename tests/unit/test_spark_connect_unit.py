"""Spark Connect without a server: the resource's remote setting, the local server's
configuration, environment and state handling, and ``dkf local-spark`` when nothing runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dagster_kafka_flinklike import SparkConnectError, SparkResource, cli
from dagster_kafka_flinklike.errors import EmbeddedServiceError, EmbeddedSparkConnectError
from dagster_kafka_flinklike.local import (
    EmbeddedSparkConnect,
    ensure_local_spark_connect,
    resolve_spark_remote,
)
from dagster_kafka_flinklike.local._spark_connect import (
    SERVER_CLASS,
    package_root,
    render_spark_properties,
)
from dagster_kafka_flinklike.sink.driver_stream import _client_address
from dagster_kafka_flinklike.spark import CONNECTOR_JVM_OPTIONS, connect_session, is_connect
from tests.unit.test_local_unit import _dead_pid, _parse_properties

REPO_ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------------------ the resource


def test_remote_url_prefers_the_field_then_spark_remote_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert SparkResource(spark_config={"spark.master": "local[2]"}).remote_url() is None

    monkeypatch.setenv("SPARK_REMOTE", "sc://env:15002")
    assert SparkResource(spark_config={}).remote_url() == "sc://env:15002"
    config = {"spark.remote": "sc://config:15002"}
    assert SparkResource(spark_config=config).remote_url() == "sc://config:15002"
    resource = SparkResource(spark_config=config, remote=" sc://field:15002 ")
    assert resource.remote_url() == "sc://field:15002"

    monkeypatch.setenv("SPARK_REMOTE", "  ")
    assert SparkResource(spark_config={}, remote="").remote_url() is None


def test_the_remote_setting_is_described() -> None:
    assert "sc://host:port" in (SparkResource.model_fields["remote"].description or "")


@pytest.mark.parametrize("url", ["localhost:15002", "http://localhost:15002", "sc://", "local"])
def test_a_url_that_is_not_sc_is_refused_with_the_way_to_write_it(url: str) -> None:
    with pytest.raises(SparkConnectError, match=r"not an sc:// URL: write it as sc://host:port"):
        connect_session(url)
    with pytest.raises(SparkConnectError, match="not an sc:// URL"):
        _ = SparkResource(spark_config={}, remote=url).spark_session


def test_a_classic_session_is_not_a_connect_session() -> None:
    class Session:  # what matters is where the session's class comes from
        pass

    assert not is_connect(Session())
    Session.__module__ = "pyspark.sql.connect.session"
    assert is_connect(Session())


def test_the_client_address_toward_a_local_server_is_loopback() -> None:
    assert _client_address("127.0.0.1") == "127.0.0.1"
    assert _client_address("localhost") == "127.0.0.1"


# ------------------------------------------------------------------------------ local server


def test_server_properties_listen_on_loopback_with_this_python(tmp_path: Path) -> None:
    props = _parse_properties(
        render_spark_properties(tmp_path, port=15999, jars=("/jars/spark-avro.jar",))
    )
    assert props["spark.master"] == "local[*]"
    assert props["spark.connect.grpc.binding.port"] == "15999"
    assert props["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert props["spark.driver.host"] == "127.0.0.1"
    assert props["spark.pyspark.python"] == sys.executable
    assert props["spark.jars"] == "/jars/spark-avro.jar"
    assert props["spark.local.dir"] == str(tmp_path / "tmp")
    assert props["spark.sql.execution.arrow.maxBytesPerBatch"] == "2147483647"
    assert str(tmp_path / "log4j2.properties") in props["spark.driver.extraJavaOptions"]
    assert CONNECTOR_JVM_OPTIONS in props["spark.driver.extraJavaOptions"]


def test_extra_properties_come_last_and_win(tmp_path: Path) -> None:
    text = render_spark_properties(
        tmp_path, port=1, master="local[2]", extra_properties={"spark.driver.memory": "4g"}
    )
    props = _parse_properties(text)
    assert (props["spark.master"], props["spark.driver.memory"]) == ("local[2]", "4g")
    assert text.splitlines()[-1] == "spark.driver.memory=4g"
    with pytest.raises(EmbeddedSparkConnectError, match="empty key"):
        render_spark_properties(tmp_path, port=1, extra_properties={"": "x"})


def test_workers_import_this_checkout_and_the_server_is_a_plain_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://elsewhere:15002")
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    env = EmbeddedSparkConnect(tmp_path, python="/opt/py/bin/python")._environment()
    assert env["PYSPARK_PYTHON"] == "/opt/py/bin/python"
    assert "SPARK_REMOTE" not in env and "SPARK_CONNECT_MODE_ENABLED" not in env
    assert Path(env["SPARK_HOME"], "bin", "spark-submit").is_file()
    # Run from a checkout, the package is not in site-packages: the workers need its folder.
    assert package_root() == REPO_ROOT
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/somewhere/else"]


def test_the_server_process_is_recognised_by_class_and_properties_file(tmp_path: Path) -> None:
    server = EmbeddedSparkConnect(tmp_path)
    properties = str(tmp_path.resolve() / "spark.properties").encode()
    launched = [b"bash", b"spark-submit", b"--properties-file", properties, b"--class"]
    assert server._is_ours([*launched, SERVER_CLASS.encode()])
    assert not server._is_ours([*launched, b"org.example.Other"])
    other = str(tmp_path / "other" / "spark.properties").encode()
    assert not server._is_ours([b"java", b"--properties-file", other, SERVER_CLASS.encode()])


def test_state_of_a_dead_or_foreign_process_is_removed(tmp_path: Path) -> None:
    server = EmbeddedSparkConnect(tmp_path)
    assert server.status() is None
    with pytest.raises(EmbeddedSparkConnectError, match="not running"):
        _ = server.url
    for pid in (_dead_pid(), os.getpid()):  # gone; alive but no server
        state = {"pid": pid, "port": 1, "url": "sc://127.0.0.1:1"}
        (tmp_path / "state.json").write_text(json.dumps(state))
        assert server.status() is None
        assert not (tmp_path / "state.json").exists()
    assert server.stop() is False
    assert issubclass(EmbeddedSparkConnectError, EmbeddedServiceError)


def test_env_remote_wins_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark.example:15002")
    assert resolve_spark_remote() == "sc://spark.example:15002"
    assert ensure_local_spark_connect() == "sc://spark.example:15002"
    assert not (tmp_path / "spark-connect").exists()

    monkeypatch.delenv("SPARK_REMOTE")
    assert resolve_spark_remote() is None


def test_cli_status_and_stop_when_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    assert cli.main(["local-spark", "status"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "not running" in err
    assert cli.main(["local-spark", "stop"]) == 0
    assert "no local Spark Connect server" in capsys.readouterr().out


def test_a_session_named_in_the_url_is_kept_for_later_runs() -> None:
    from dagster_kafka_flinklike.spark import _names_a_session

    assert _names_a_session("sc://127.0.0.1:15002/;session_id=6f1c3a52-0c58-4a4e-8d07-f4b1c0e0a001")
    assert _names_a_session("sc://host:15002/;use_ssl=true;session_id=x")
    assert not _names_a_session("sc://127.0.0.1:15002")
    assert not _names_a_session("sc://127.0.0.1:15002/;token=abc")
    assert not _names_a_session(None)
