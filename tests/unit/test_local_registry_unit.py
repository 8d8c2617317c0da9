"""The embedded Schema Registry's pure parts, download checks and state handling, without Java."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from dagster_kafka_flinklike import cli
from dagster_kafka_flinklike.errors import EmbeddedSchemaRegistryError, EmbeddedServiceError
from dagster_kafka_flinklike.local import (
    SCHEMA_REGISTRY_VERSION,
    EmbeddedKafkaError,
    EmbeddedSchemaRegistry,
    ensure_local_schema_registry,
    fetch_schema_registry,
    resolve_schema_registry_url,
)
from dagster_kafka_flinklike.local._registry import render_registry_properties
from dagster_kafka_flinklike.local.fetch import _unpack, maven_repository
from tests.unit.test_local_unit import _dead_pid, _parse_properties


def test_properties_listen_on_loopback_and_keep_data_in_the_directory() -> None:
    props = _parse_properties(render_registry_properties(Path("/data/sr"), port=18081))
    assert props["quarkus.http.host"] == "127.0.0.1"
    assert props["quarkus.http.port"] == "18081"
    assert props["apicurio.storage.kind"] == "sql"
    assert props["apicurio.datasource.url"] == "jdbc:h2:file:/data/sr/data/registry"
    assert props["apicurio.rules.global.compatibility"] == "BACKWARD"
    assert props["quarkus.log.file.path"] == "/data/sr/logs/registry.log"


def test_extra_properties_come_last_and_win() -> None:
    text = render_registry_properties(
        Path("/sr"), port=1, extra_properties={"apicurio.rules.global.compatibility": "FULL"}
    )
    assert _parse_properties(text)["apicurio.rules.global.compatibility"] == "FULL"
    assert text.splitlines()[-1] == "apicurio.rules.global.compatibility=FULL"
    with pytest.raises(EmbeddedSchemaRegistryError, match="empty key"):
        render_registry_properties(Path("/sr"), port=1, extra_properties={" ": "x"})


def test_errors_share_the_embedded_service_base() -> None:
    assert issubclass(EmbeddedSchemaRegistryError, EmbeddedServiceError)
    assert issubclass(EmbeddedKafkaError, EmbeddedServiceError)
    assert not issubclass(EmbeddedSchemaRegistryError, EmbeddedKafkaError)


# ------------------------------------------------------------------------------ download


def _archive(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _repository_with(tmp_path: Path, archive: bytes) -> str:
    """A Maven repository layout in ``tmp_path`` holding ``archive`` as the registry's."""
    folder = tmp_path / "repo" / "io/apicurio/apicurio-registry-app" / SCHEMA_REGISTRY_VERSION
    folder.mkdir(parents=True)
    (folder / f"apicurio-registry-app-{SCHEMA_REGISTRY_VERSION}-all.tar.gz").write_bytes(archive)
    return (tmp_path / "repo").as_uri()


def test_a_download_with_another_checksum_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive({"apicurio-registry-app-3.0.9-runner.jar": b"not the release"})
    monkeypatch.setenv("DKF_MAVEN_REPOSITORY", _repository_with(tmp_path, archive) + "/")
    assert maven_repository() == (tmp_path / "repo").as_uri()
    with pytest.raises(EmbeddedSchemaRegistryError, match="not the pinned") as info:
        fetch_schema_registry(tmp_path / "cache")
    assert hashlib.sha512(archive).hexdigest() in str(info.value)
    version_dir = tmp_path / "cache" / f"apicurio-registry-{SCHEMA_REGISTRY_VERSION}"
    assert [p.name for p in version_dir.iterdir()] == [".fetch.lock"]  # nothing half-written


def test_an_unreachable_repository_explains_the_way_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DKF_MAVEN_REPOSITORY", (tmp_path / "no-such-repo").as_uri())
    with pytest.raises(EmbeddedSchemaRegistryError, match="SCHEMA_REGISTRY_URL"):
        fetch_schema_registry(tmp_path / "cache")


def test_fetch_is_skipped_when_marker_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / f"apicurio-registry-{SCHEMA_REGISTRY_VERSION}" / "app"
    app.mkdir(parents=True)
    (app / ".dkf-fetch-complete").write_text("{}")
    monkeypatch.setenv("DKF_MAVEN_REPOSITORY", (tmp_path / "no-such-repo").as_uri())
    assert fetch_schema_registry(tmp_path) == app


def test_unpack_refuses_members_that_leave_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(_archive({"lib/ok.jar": b"ok", "../outside.txt": b"no"}))
    (tmp_path / "out").mkdir()
    with pytest.raises(EmbeddedSchemaRegistryError, match="leaves its folder"):
        _unpack(archive, tmp_path / "out")
    assert not (tmp_path / "outside.txt").exists()


# ------------------------------------------------------------------------------ state file


def test_state_of_a_dead_or_foreign_process_is_removed(tmp_path: Path) -> None:
    registry = EmbeddedSchemaRegistry(tmp_path)
    assert registry.status() is None
    with pytest.raises(EmbeddedSchemaRegistryError, match="not running"):
        _ = registry.url
    for pid in (_dead_pid(), os.getpid()):  # gone; alive but no registry
        (tmp_path / "state.json").write_text(
            json.dumps({"pid": pid, "port": 1, "url": "http://127.0.0.1:1/apis/ccompat/v7"})
        )
        assert registry.status() is None
        assert not (tmp_path / "state.json").exists()
    assert registry.stop() is False


# ------------------------------------------------------------------------------ resolution


def test_env_url_wins_and_starts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", "https://registry.example:8081")
    assert resolve_schema_registry_url() == "https://registry.example:8081"
    assert ensure_local_schema_registry() == "https://registry.example:8081"
    assert not (tmp_path / "schema-registry").exists()

    monkeypatch.delenv("SCHEMA_REGISTRY_URL")
    assert resolve_schema_registry_url() is None


def test_cli_status_and_stop_when_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DKF_HOME", str(tmp_path))
    assert cli.main(["local-registry", "status"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "not running" in err
    assert cli.main(["local-registry", "stop"]) == 0
    assert "no local Schema Registry" in capsys.readouterr().out
