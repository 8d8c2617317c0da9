"""Building the Spark session without Dagster: short-run JVM options and their class archive."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagster_kafka_flinklike import _spark_session as session
from dagster_kafka_flinklike._sessions import per_session


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("DKF_CACHE_DIR", str(tmp_path))
    session.short_run_jvm_options.cache_clear()
    yield tmp_path
    session.short_run_jvm_options.cache_clear()


def _archive(cache: Path) -> Path:
    path = session.class_archive_path()
    assert path is not None
    assert path.parent.parent == cache
    return path


def _old(path: Path) -> Path:
    stamp = time.time() - 60
    os.utime(path, (stamp, stamp))
    return path


def test_the_module_imports_neither_dagster_nor_pyspark() -> None:
    # The demo starts Spark with it before Dagster is imported; Spark's workers unpickle the
    # warm-up task from it.
    code = (
        "import sys, dagster_kafka_flinklike._spark_session\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'pyspark'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_local_config_adds_the_connectors_jvm_options_and_those_of_short_runs(cache: Path) -> None:
    options = session.local_spark_config()["spark.driver.extraJavaOptions"]
    assert options == session.CONNECTOR_JVM_OPTIONS
    assert "-Darrow.enable_unsafe_memory_access=true" in options
    assert "-XX:-DontCompileHugeMethods" in options
    options = session.local_spark_config(short_runs=True)["spark.driver.extraJavaOptions"]
    assert options.startswith(f"{session.CONNECTOR_JVM_OPTIONS} {session.SHORT_RUN_JVM_OPTIONS}")


def test_without_an_archive_the_session_writes_one_of_its_own(cache: Path) -> None:
    options = session.short_run_jvm_options()
    path = _archive(cache)
    assert f"-XX:ArchiveClassesAtExit={path.parent / path.stem}." in options
    assert options.endswith("-Xlog:cds=off -Xlog:cds+dynamic=off")
    assert session.short_run_jvm_options() == options  # the same in every call of a process


def test_a_complete_written_archive_is_adopted_and_used(cache: Path) -> None:
    path = _archive(cache)
    path.parent.mkdir(parents=True)
    written = path.parent / f"{path.stem}.1-a.part"
    written.write_bytes(session._DYNAMIC_ARCHIVE_MAGIC + b"\0" * 64)
    _old(written)
    broken = path.parent / f"{path.stem}.2-b.part"
    broken.write_bytes(b"\0" * 68)  # a JVM that died before writing the header
    _old(broken)
    options = session.short_run_jvm_options()
    assert f"-XX:SharedArchiveFile={path}" in options
    assert path.exists()
    assert not written.exists()
    assert not broken.exists()


def test_an_archive_still_being_written_is_left_alone(cache: Path) -> None:
    path = _archive(cache)
    path.parent.mkdir(parents=True)
    writing = path.parent / f"{path.stem}.3-c.part"
    writing.write_bytes(session._DYNAMIC_ARCHIVE_MAGIC)
    options = session.short_run_jvm_options()
    assert "-XX:ArchiveClassesAtExit=" in options
    assert writing.exists()
    assert not path.exists()


def test_without_java_only_the_plain_options(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    assert session.short_run_jvm_options() == session.SHORT_RUN_JVM_OPTIONS


def test_per_session_builds_once_per_session_and_key() -> None:
    class Session:  # any object a weak reference can name
        pass

    first, second = Session(), Session()
    built: list[str] = []

    def build(name: str) -> list[str]:
        built.append(name)
        return [name]

    a = per_session(first, ("k", 1), lambda: build("a"))
    assert per_session(first, ("k", 1), lambda: build("again")) is a
    assert per_session(first, ("k", 2), lambda: build("b")) == ["b"]
    assert per_session(second, ("k", 1), lambda: build("c")) == ["c"]
    assert built == ["a", "b", "c"]
    # What cannot be referenced weakly is built every time.
    assert per_session(3, ("k", 1), lambda: build("d")) == ["d"]
    assert per_session(3, ("k", 1), lambda: build("e")) == ["e"]


def test_each_pyspark_installation_has_an_archive_of_its_own(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyspark

    here = _archive(cache)
    # Another checkout's environment: the same release, other jars on the class path.
    monkeypatch.setattr(pyspark, "__file__", str(cache / "other-env" / "pyspark" / "__init__.py"))
    elsewhere = _archive(cache)
    assert elsewhere != here and elsewhere.parent == here.parent


def test_a_session_built_outside_a_run_gives_its_workers_this_interpreter() -> None:
    """``SparkResource(...).spark_session`` without Dagster's setup (a notebook, a script):
    Spark's Python workers must run the interpreter that imports the connector."""
    code = (
        "import sys\n"
        "from dagster_kafka_flinklike import SparkResource\n"
        "spark = SparkResource(spark_config={'spark.master': 'local[1]'}, spark_avro=False,"
        " start_early=False).spark_session\n"
        "def probe(_):\n"
        "    import sys, dagster_kafka_flinklike\n"
        "    return sys.executable\n"
        "seen = spark.sparkContext.parallelize([0], 1).map(probe).collect()\n"
        "print(seen[0] == sys.executable, seen[0], sys.executable)\n"
        "spark.stop()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[0] == "True", done.stdout


def test_spark_avro_goes_with_the_packages_when_there_are_packages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A session's spark.jars replaces the jars Spark resolved for spark.jars.packages in what it
    # ships to a cluster's executors: with packages, Spark's Avro package is one of them.
    jar = tmp_path / "spark-avro_2.13-4.2.0" / "spark-avro_2.13-4.2.0.jar"
    monkeypatch.setattr(session, "spark_avro_jar", lambda: str(jar))
    plain = session.with_spark_avro({"spark.master": "spark://h:7077"})
    assert plain["spark.jars"] == str(jar) and "spark.jars.packages" not in plain
    packaged = session.with_spark_avro({"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0"})
    assert "spark.jars" not in packaged
    assert packaged["spark.jars.packages"] == (
        "io.delta:delta-spark_2.13:4.0.0,org.apache.spark:spark-avro_2.13:4.2.0"
    )
    given = session.with_spark_avro({"spark.jars.packages": "org.apache.spark:spark-avro_2.13:4"})
    assert given == {"spark.jars.packages": "org.apache.spark:spark-avro_2.13:4"}


def test_a_cluster_session_ships_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "spark_avro_jar", lambda: None)
    local = session.session_config({"spark.master": "local[2]"})
    assert "spark.archives" not in local
    cluster = session.session_config(
        {"spark.master": "spark://h:7077", "spark.executorEnv.PYTHONPATH": "deps"}
    )
    archive, folder = cluster["spark.archives"].split("#")
    assert folder == "dagster_kafka_flinklike_package" and Path(archive).is_file()
    assert cluster["spark.executorEnv.PYTHONPATH"] == "dagster_kafka_flinklike_package:deps"
    off = session.session_config({"spark.master": "spark://h:7077"}, ship_package=False)
    assert "spark.archives" not in off
