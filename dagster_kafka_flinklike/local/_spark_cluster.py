"""A local Spark standalone cluster on 127.0.0.1: a master and workers from the installed PySpark,
so that the same code is tested where executors are JVMs of their own with Python workers of
their own, as on a real cluster, and nothing assumes local mode.

PySpark's wheel ships Spark's standalone daemons (``org.apache.spark.deploy.master.Master`` and
``...worker.Worker``) and ``bin/spark-class``, which assembles their command lines. The master
and each worker run as detached processes with the life cycle of :class:`JvmService`, each in a
folder of the cluster's directory (``master/``, ``worker-1/``, ...). Drivers connect from this
machine in client mode (``spark.master = spark://127.0.0.1:<port>``); each application's
executors run in the workers' ``work/`` folders, where Spark unpacks the application's
``spark.archives`` (how :class:`~dagster_kafka_flinklike.SparkResource` ships this package).
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import EmbeddedSparkClusterError
from ._service import (
    HOST,
    JvmService,
    Probe,
    StartedWhileUsed,
    render_properties,
    rolling_log4j2_properties,
)
from ._spark_connect import pyspark_home
from .fetch import find_java

__all__ = ["EmbeddedSparkCluster"]

logger = logging.getLogger(__name__)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_SPARK_NEEDS = (
    "The local Spark cluster",
    "set spark.master to an existing Spark cluster",
    EmbeddedSparkClusterError,
)
#: The daemons' own heap: they schedule, the executors compute.
_DAEMON_MEMORY = "512m"


def _master_json(webui_port: int, timeout: float) -> dict[str, Any]:
    """The master's state as its web UI's JSON endpoint gives it (workers, applications)."""
    url = f"http://{HOST}:{webui_port}/json/"
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        state: dict[str, Any] = json.loads(answer.read().decode("utf-8"))
    return state


class _SparkDaemon(JvmService):
    """What the master and the workers share: ``bin/spark-class`` of the installed PySpark with
    an isolated configuration folder, a properties file and a rolling log."""

    port_names = ("port", "webui_port")
    error = EmbeddedSparkClusterError
    stop_hint = "`dkf local-spark stop --workers N` or EmbeddedSparkCluster.stop()"
    properties_name = "spark-defaults.conf"
    main_class = ""

    def __init__(self, data_dir: Path, *, extra_properties: Mapping[str, str] | None = None):
        super().__init__(data_dir, extra_properties=extra_properties)
        self._java = ""

    def _find_java(self) -> str:
        self._java = find_java(_SPARK_NEEDS)
        return self._java

    def _fetch(self) -> Path:
        home = pyspark_home()
        if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
            raise EmbeddedSparkClusterError(
                f"The installed PySpark ({home}) has no bin/spark-class or jars/: install "
                "PySpark from its wheel (pip install pyspark), or set spark.master to an "
                "existing Spark cluster."
            )
        return home

    def _is_ours(self, cmdline: list[bytes]) -> bool:
        return self.main_class.encode() in cmdline and str(self.properties_file).encode() in cmdline

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SPARK_HOME"] = str(pyspark_home())
        # An empty configuration folder: no spark-env.sh or defaults of the installation leak in.
        env["SPARK_CONF_DIR"] = str(self.data_dir / "conf")
        env["SPARK_LOCAL_IP"] = HOST
        env["SPARK_DAEMON_MEMORY"] = _DAEMON_MEMORY
        log4j = self.data_dir / "log4j2.properties"
        env["SPARK_DAEMON_JAVA_OPTS"] = f"-Dlog4j2.configurationFile=file:{log4j}"
        if self._java:
            env["JAVA_HOME"] = str(Path(self._java).resolve().parents[1])
        # The daemons are JVMs; their executors' Python workers inherit this environment, and
        # must import what each application ships, not the starting process's path.
        for name in (
            "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE", "MASTER",
            "PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
        ):  # fmt: skip
            env.pop(name, None)
        return env

    def _write_configuration(self, props: list[tuple[str, str]]) -> None:
        (self.data_dir / "conf").mkdir(exist_ok=True)
        (self.data_dir / "log4j2.properties").write_text(
            rolling_log4j2_properties(
                self.server_log, f"dkf-{self.main_class.rsplit('.', 1)[-1].lower()}", self.label
            ),
            encoding="latin-1",
        )
        self.properties_file.write_text(
            render_properties(
                "Generated by dagster_kafka_flinklike.local: rewritten on every start.",
                props,
                self.extra_properties,
                EmbeddedSparkClusterError,
            ),
            encoding="latin-1",
        )

    def _command(self, fetched: Path, ports: Mapping[str, int], *arguments: str) -> list[str]:
        return [
            "bash",
            str(fetched / "bin" / "spark-class"),
            self.main_class,
            "--host",
            HOST,
            "--port",
            str(ports["port"]),
            "--webui-port",
            str(ports["webui_port"]),
            "--properties-file",
            str(self.properties_file),
            *arguments,
        ]


class _SparkMaster(_SparkDaemon):
    """The standalone master: schedules applications' executors on the workers."""

    label = "Spark master"
    address_key = "url"
    console_name = "master.out"
    log_name = "logs/master.log"
    main_class = MASTER_CLASS

    def _address(self, ports: Mapping[str, int]) -> str:
        return f"spark://{HOST}:{ports['port']}"

    def _prepare(self, java: str, fetched: Path, ports: Mapping[str, int]) -> list[str]:
        self._write_configuration([("spark.master.rest.enabled", "false")])
        return self._command(fetched, ports)

    def webui_port(self) -> int:
        """The port of the running master's web UI (and its JSON state)."""
        state = self._read_state()
        if state is None:
            raise EmbeddedSparkClusterError(f"The Spark master in {self.data_dir} is not running.")
        return int(state["webui_port"])

    def _make_probe(self) -> Probe:
        """Ready once its JSON state says ALIVE (a recovering master says RECOVERING)."""

        def probe(url: str, timeout: float) -> None:
            status = _master_json(self.webui_port(), timeout).get("status")
            if status != "ALIVE":
                raise EmbeddedSparkClusterError(f"the master is {status}")

        return probe


class _SparkWorker(_SparkDaemon):
    """A standalone worker: offers ``cores`` and ``memory`` to the master's applications and
    runs their executors in ``work/``."""

    label = "Spark worker"
    address_key = "url"
    console_name = "worker.out"
    log_name = "logs/worker.log"
    main_class = WORKER_CLASS

    def __init__(
        self,
        data_dir: Path,
        master: _SparkMaster,
        *,
        cores: int,
        memory: str,
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir, extra_properties=extra_properties)
        self.master = master
        self.cores = cores
        self.memory = memory

    def _address(self, ports: Mapping[str, int]) -> str:
        return f"spark://{HOST}:{ports['port']}"

    def _prepare(self, java: str, fetched: Path, ports: Mapping[str, int]) -> list[str]:
        (self.data_dir / "work").mkdir(exist_ok=True)
        self._write_configuration(
            [
                # Applications' folders (their archives, the executors' logs) go after a day.
                ("spark.worker.cleanup.enabled", "true"),
                ("spark.worker.cleanup.appDataTtl", "86400"),
            ]
        )
        return self._command(
            fetched,
            ports,
            "--cores",
            str(self.cores),
            "--memory",
            self.memory,
            "--work-dir",
            str(self.data_dir / "work"),
            self.master.status() or self.master._running_address(),
        )

    def _make_probe(self) -> Probe:
        """Ready once the master lists this worker as ALIVE."""

        def probe(url: str, timeout: float) -> None:
            port = int(url.rsplit(":", 1)[1])
            workers = _master_json(self.master.webui_port(), timeout).get("workers", [])
            if not any(w.get("port") == port and w.get("state") == "ALIVE" for w in workers):
                raise EmbeddedSparkClusterError("the master does not list the worker yet")

        return probe


class EmbeddedSparkCluster(StartedWhileUsed):
    """A Spark standalone cluster in ``data_dir``: a master and ``workers`` workers, each a
    detached ``java`` process of the installed PySpark's Spark, on 127.0.0.1.

    :meth:`start` returns the master URL (``spark://127.0.0.1:<port>``) once every worker has
    registered; :meth:`session_config` gives the Spark settings of a driver on this machine.
    Executors run the Python that the driver names (``spark.pyspark.python``, by default the
    driver's own), in the workers' ``work/`` folders.

    Args:
        data_dir: the cluster's directory, created if needed.
        workers: how many workers (at least 1).
        cores_per_worker: the cores each worker offers (one executor each by default).
        memory_per_worker: the memory each worker offers its executors (``"2g"``).
        extra_properties: Spark settings of the master and every worker.

    Example:
        >>> cluster = EmbeddedSparkCluster(Path("/tmp/spark-cluster"), workers=2)
        >>> with cluster:  # doctest: +SKIP
        ...     spark = SparkResource(spark_config=cluster.session_config()).spark_session
    """

    def __init__(
        self,
        data_dir: Path,
        workers: int = 2,
        *,
        cores_per_worker: int = 1,
        memory_per_worker: str = "2g",
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        if workers < 1:
            raise EmbeddedSparkClusterError(
                f"A Spark cluster needs at least 1 worker, not {workers}."
            )
        if cores_per_worker < 1:
            raise EmbeddedSparkClusterError(
                f"cores_per_worker must be at least 1, not {cores_per_worker}."
            )
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.size = workers
        self.cores_per_worker = cores_per_worker
        self.memory_per_worker = memory_per_worker
        self.extra_properties = dict(extra_properties or {})
        self.master = _SparkMaster(self.data_dir / "master", extra_properties=extra_properties)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.data_dir)!r}, workers={self.size})"

    def worker(self, number: int) -> _SparkWorker:
        """Worker ``number`` (1 to ``workers``): its pid, stop and start alone."""
        if not 1 <= number <= self.size:
            raise EmbeddedSparkClusterError(
                f"The cluster has workers 1 to {self.size}, not {number}."
            )
        return self._worker(number)

    def _worker(self, number: int) -> _SparkWorker:
        return _SparkWorker(
            self.data_dir / f"worker-{number}",
            self.master,
            cores=self.cores_per_worker,
            memory=self.memory_per_worker,
            extra_properties=self.extra_properties,
        )

    @property
    def workers(self) -> list[_SparkWorker]:
        """Every worker, in order."""
        return [self.worker(n) for n in range(1, self.size + 1)]

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>`` of the running master.

        Raises:
            EmbeddedSparkClusterError: the master is not running.
        """
        return self.master._running_address()

    def start(self, timeout: float = 120) -> str:
        """Start the master and every worker that is not running; returns :attr:`master_url`
        once the master lists every worker as alive.

        Raises:
            EmbeddedSparkClusterError: a process could not start, or a worker did not register
                in time.
        """
        deadline = time.monotonic() + timeout
        url = self.master.start(timeout)
        workers = self.workers
        with ThreadPoolExecutor(len(workers), thread_name_prefix="dkf-spark-worker") as pool:
            started = [pool.submit(w.start, max(1.0, deadline - time.monotonic())) for w in workers]
            for future in started:
                future.result()
        return url

    def alive_workers(self, timeout: float = 10) -> int:
        """How many workers the running master lists as alive (0 when it does not answer)."""
        try:
            state = _master_json(self.master.webui_port(), timeout)
        except (OSError, ValueError, EmbeddedSparkClusterError):
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def status(self) -> str | None:
        """The master URL while the master runs, else ``None``."""
        return self.master.status()

    def stop(self, timeout: float = 30) -> bool:
        """Stop the workers (and with them their executors), then the master; whether any ran.
        Every worker of the directory stops, also those of a larger cluster started there."""
        started = [
            int(p.name.split("-", 1)[1])
            for p in self.data_dir.glob("worker-*")
            if p.name.split("-", 1)[1].isdigit()
        ]
        workers = [self._worker(n) for n in sorted({*range(1, self.size + 1), *started})]
        with ThreadPoolExecutor(len(workers), thread_name_prefix="dkf-spark-worker") as pool:
            stopped = list(pool.map(lambda w: w.stop(timeout), workers))
        return self.master.stop(timeout) or any(stopped)

    def session_config(self, executor_memory: str = "1g") -> dict[str, str]:
        """The Spark settings of a driver on this machine in client mode: the master URL, the
        driver reachable on 127.0.0.1 (executors connect to it), one executor per worker.

        Example:
            >>> cluster.session_config()["spark.master"]  # doctest: +SKIP
            'spark://127.0.0.1:41237'
        """
        return {
            "spark.master": self.master_url,
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.executor.cores": str(self.cores_per_worker),
            "spark.executor.memory": executor_memory,
            "spark.cores.max": str(self.cores_per_worker * self.size),
        }
