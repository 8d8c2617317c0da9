"""The connector on a real Spark standalone cluster (``dkf local-spark start --workers 2``): a
master and two workers, each a JVM of its own, whose executors run in JVMs of their own with
Python workers of their own, as on a cluster of machines.

The executors' Python is an environment of its own with the package's dependencies but not the
package (as a cluster's image has them): the driver ships the package with each application
(``SparkResource``'s ``ship_package``: an archive in ``spark.archives``, unpacked first on the
executors' ``PYTHONPATH``), and a test fails where anything the executors run imports what is
not shipped. Every run is a process of its own pointed at the cluster by ``SPARK_MASTER``, as a
user points the example at one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagster_kafka_flinklike._executor_package import PACKAGE_FOLDER, package_archive
from dagster_kafka_flinklike.local import EmbeddedSparkCluster
from dagster_kafka_flinklike.local.fetch import default_cache_dir, fetch_once
from tests.conftest import REPO_ROOT, run_dkf
from tests.integration import test_kills

pytestmark = [pytest.mark.spark]

#: What the executors' Python has installed: the reader's and writers' dependencies, at the
#: driver's versions (so that installing them takes them from the local cache).
EXECUTOR_DEPENDENCIES = ("pyarrow", "pandas", "numpy", "confluent-kafka", "fastavro", "protobuf")


def _install_executor_python(tmp: Path) -> dict[str, object]:
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in EXECUTOR_DEPENDENCIES]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    python = tmp / "venv" / "bin" / "python"
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv:
        command = [uv, "pip", "install", "--quiet", "--python", str(python)]
    else:
        subprocess.run([str(python), "-m", "ensurepip", "--upgrade"], check=True)
        command = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*command, *pins], check=True)
    return {"installed": pins}


@pytest.fixture(scope="module")
def executor_python() -> Path:
    """A Python with the executors' dependencies and without this package."""
    pins = " ".join(f"{n}=={importlib.metadata.version(n)}" for n in EXECUTOR_DEPENDENCIES)
    digest = hashlib.sha256(f"{sys.version} {pins}".encode()).hexdigest()[:12]
    root = default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = fetch_once(
        root / f"spark-executor-python-{digest}",
        "the Spark executors' Python",
        _install_executor_python,
        "seconds",
    )
    python = folder / "venv" / "bin" / "python"
    probe = "import importlib.util as u; print(u.find_spec('dagster_kafka_flinklike'))"
    found = subprocess.run(
        [str(python), "-c", probe],
        cwd=folder,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "None", "the executors' Python must not have the package"
    return python


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedSparkCluster]:
    """Two workers of one core each, started and stopped with ``dkf local-spark``."""
    home = tmp_path_factory.mktemp("dkf-home")
    started = run_dkf(home, "local-spark", "start", "--workers", "2", "--timeout", "180")
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", url), started.stdout
    status = run_dkf(home, "local-spark", "status", "--workers", "2")
    assert (status.returncode, status.stdout.strip()) == (0, url)
    cluster = EmbeddedSparkCluster(home / "spark-cluster", 2)
    assert cluster.alive_workers() == 2
    try:
        yield cluster
    finally:
        stopped = run_dkf(home, "local-spark", "stop", "--workers", "2")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.startswith("stopped the local Spark standalone cluster")
        assert run_dkf(home, "local-spark", "status", "--workers", "2").returncode == 1


def _on(cluster: EmbeddedSparkCluster, executor_python: Path) -> dict[str, str]:
    """The environment of a driver process that runs on ``cluster``: Spark's own variables."""
    return {
        "SPARK_MASTER": cluster.master_url,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": str(executor_python),
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def _applications(cluster: EmbeddedSparkCluster) -> list[dict]:
    url = f"http://127.0.0.1:{cluster.master.webui_port()}/json/"
    with urllib.request.urlopen(url, timeout=10) as answer:
        state = json.loads(answer.read())
    return [*state["activeapps"], *state["completedapps"]]


def _executor_folders(cluster: EmbeddedSparkCluster, app_name: str) -> list[Path]:
    """The executors' working folders of the applications called ``app_name``."""
    ids = {a["id"] for a in _applications(cluster) if a["name"] == app_name}
    return [
        folder
        for worker in cluster.workers
        for app in ids
        for folder in (worker.data_dir / "work" / app).glob("*")
        if folder.is_dir()
    ]


def _executor_errors(folders: list[Path]) -> str:
    return "\n".join(
        line
        for folder in folders
        for line in (folder / "stderr").read_text(errors="replace").splitlines()
        if "Error" in line or "Traceback" in line
    )


def _run(arguments: list[str], env: dict[str, str]) -> str:
    """A driver process of this checkout; its output, once it succeeded."""
    out = subprocess.run(
        [sys.executable, *arguments],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    return out.stdout


def test_the_package_archive_holds_the_compiled_modules() -> None:
    names = zipfile.ZipFile(package_archive()).namelist()
    assert "dagster_kafka_flinklike/source/reader.py" in names
    assert not [n for n in names if "__pycache__" in n]
    compiled = [n for n in names if n.endswith(".so")]
    built = list((REPO_ROOT / "dagster_kafka_flinklike").rglob("*.so"))
    assert len(compiled) == len(built)


def test_the_demo_runs_on_the_cluster(
    cluster: EmbeddedSparkCluster, executor_python: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """``make demo``'s pipeline with ``SPARK_MASTER`` set: both executors read and decode, in
    the Python that has no package but the shipped one."""
    (tmp_path / "dagster_home").mkdir()
    env = {
        **os.environ,
        **_on(cluster, executor_python),
        "DKF_HOME": str(tmp_path / "home"),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "DEMO_BATCH_SIZE": "300",
    }
    for _ in range(2):  # the second run reads only its own batch
        out = _run(["definitions/demo.py"], env)
        assert re.search(r"orders read\s+300\b", out), out
    folders = _executor_folders(cluster, "channel_revenue")
    assert len({f.parents[2] for f in folders}) == 2, folders  # both workers
    assert all((f / PACKAGE_FOLDER / "dagster_kafka_flinklike").is_dir() for f in folders)
    assert not _executor_errors(folders)


@pytest.mark.parametrize(
    ("guarantee", "scope"),
    [("exactly-once", "run"), ("exactly-once", "split"), ("at-least-once", None)],
)
def test_a_run_killed_on_the_cluster_loses_nothing(
    cluster: EmbeddedSparkCluster,
    executor_python: Path,
    kafka_bootstrap: str,
    new_topic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    guarantee: str,
    scope: str | None,
) -> None:
    """The kill tests' copy asset on the cluster, its driver SIGKILLed at random moments: its
    executors are the workers' children, not the driver's, and outlive it for a moment. With a
    transaction per split, the prepared transactions are held in the executors' Python workers
    and the driver's verdict reaches them over the network."""
    for name, value in _on(cluster, executor_python).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(test_kills, "RECORDS", 6000)
    kills = 1
    extra = {"sink.transaction-scope": scope} if scope else None
    ids, counts = test_kills._run_with_kills(
        kafka_bootstrap, new_topic, tmp_path, guarantee, kills, extra
    )
    assert counts["killed"] >= kills
    missing = [i for i in range(6000) if ids[i] == 0]
    assert not missing, f"{len(missing)} input records lost, e.g. {missing[:10]}"
    assert not [i for i in ids if not 0 <= i < 6000]
    if guarantee == "exactly-once":
        assert sum(ids.values()) == 6000, "records duplicated"
    folders = _executor_folders(cluster, "kill-test")
    assert len({f.parents[2] for f in folders}) == 2


def test_a_stateful_query_on_the_cluster_gives_flinks_windows(
    cluster: EmbeddedSparkCluster,
    executor_python: Path,
    kafka_bootstrap: str,
    new_topic,
    tmp_path: Path,
    oracle,
) -> None:
    """Event-time windows (Structured Streaming, the reader as a Python streaming source) in
    two runs of ``dkf sql run`` on the cluster, the second going on from the first's state:
    Flink's windows."""
    from tests.integration.test_flink_oracle import for_flink
    from tests.integration.test_flink_sql import script, values

    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    path = tmp_path / "windows.sql"
    path.write_text(script("tumble_exactly_once.sql", source, ours))
    env = {
        **os.environ,
        **_on(cluster, executor_python),
        "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "DKF_HOME": str(tmp_path / "dkf_home"),
        "DAGSTER_HOME": str(tmp_path / "dkf_home"),
    }
    test_kills._write_instance_config(tmp_path / "dkf_home")
    sent = 0

    def produce(count: int) -> None:
        nonlocal sent
        test_kills._produce_readings(kafka_bootstrap, source, sent, count)
        sent += count

    def run_on_the_cluster() -> None:
        _run(["-m", "dagster_kafka_flinklike.cli", "sql", "run", str(path)], env)

    produce(400)
    run_on_the_cluster()
    produce(400)
    # All input is in the topic: Flink works beside our second run.
    flink = for_flink(script("tumble_exactly_once.sql", source, theirs))
    flink = flink.replace("'exactly-once'", "'at-least-once'")
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)
    run_on_the_cluster()
    flink_done.result()
    closed = test_kills._closed_windows(values(kafka_bootstrap, theirs), sent)
    mine = values(kafka_bootstrap, ours)
    key = lambda r: (r["window_start"], r["sensor"])  # noqa: E731
    assert len(mine) > 3 * (sent // 40 - 2)
    assert sorted(mine, key=key) == sorted(closed, key=key)
    assert _executor_folders(cluster, "dkf-sql")
