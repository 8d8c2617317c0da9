"""The Spark session resource (dagster-pyspark), with the environment PySpark needs here: a
classic session (a JVM in this process) or a Spark Connect session (a client of a server).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from dagster import InitResourceContext
from dagster_pyspark import PySparkResource
from dagster_pyspark.resources import spark_session_from_config
from pydantic import Field

from ._sessions import is_connect

__all__ = [
    "CONNECTOR_SPARK_CONFIG",
    "SparkResource",
    "connect_session",
    "has_spark_avro",
    "is_connect",
    "local_spark_config",
    "prepare_spark_environment",
    "spark_avro_jar",
    "with_spark_avro",
]

logger = logging.getLogger(__name__)

#: Spark's own Avro package (``from_avro``/``to_avro``), the Avro formats' fast path.
SPARK_AVRO = "spark-avro_2.13"

#: Where PySpark reads a Spark Connect server's URL from when no setting names one.
SPARK_REMOTE_ENV = "SPARK_REMOTE"


def spark_avro_jar() -> str | None:
    """Spark's ``spark-avro`` jar for this PySpark release, fetched once; None if unavailable.

    The jar of the same version is tried first, then the first release of the same minor
    version (patch releases of a Spark minor version are compatible). Without it, the Avro
    formats decode in Python only.

    Example:
        >>> spark_avro_jar()  # doctest: +SKIP
        '/root/.cache/dagster_kafka_flinklike/spark-packages/spark-avro_2.13-4.2.0/...jar'
    """
    import pyspark

    from .errors import EmbeddedServiceError
    from .local._fetch import fetch_spark_package

    version = pyspark.__version__.split("+")[0]
    major_minor = ".".join(version.split(".")[:2])
    reasons = []
    for candidate in dict.fromkeys((version, f"{major_minor}.0")):
        try:
            return str(fetch_spark_package(SPARK_AVRO, candidate))
        except EmbeddedServiceError as exc:
            reasons.append(str(exc))
    logger.warning(
        "Spark's Avro package is not available (%s); the Avro formats decode in Python only.",
        "; ".join(reasons),
    )
    return None


def with_spark_avro(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with Spark's Avro package added to ``spark.jars`` (unless it is already in
    ``spark.jars`` or ``spark.jars.packages``, or cannot be fetched).

    Example:
        >>> with_spark_avro({"spark.master": "local[2]"})["spark.jars"]  # doctest: +SKIP
        '/root/.cache/.../spark-avro_2.13-4.2.0.jar'
    """
    out = dict(config)
    given = f"{out.get('spark.jars', '')},{out.get('spark.jars.packages', '')}"
    if "spark-avro" in given:
        return out
    jar = spark_avro_jar()
    if jar is not None:
        out["spark.jars"] = ",".join(j for j in (out.get("spark.jars"), jar) if j)
    return out


def has_spark_avro(spark: Any) -> bool:
    """Whether the session was started with Spark's Avro package (``spark.jars`` or
    ``spark.jars.packages`` name it)."""
    try:
        jars = f"{spark.conf.get('spark.jars', '')},{spark.conf.get('spark.jars.packages', '')}"
    except Exception:  # a session that cannot report its settings: assume the package is absent
        return False
    return "spark-avro" in jars


def connect_session(remote: str, config: Mapping[str, Any] | None = None) -> Any:
    """A Spark Connect session with the server at ``remote`` (``sc://host:port[/;param=...]``).

    ``config`` is applied as the session's settings; those the server fixes at its start
    (``spark.master``, ``spark.jars``, memory, ...) are skipped, as PySpark skips them. PySpark
    runs one kind of session per process: once this returns, ``pyspark.sql.functions`` build
    Spark Connect columns in this process.

    Raises:
        SparkConnectError: ``remote`` is no ``sc://`` URL, or PySpark's Spark Connect client
            packages (``pyspark[connect]``: grpcio, grpcio-status, googleapis-common-protos,
            zstandard) are missing.

    Example:
        >>> spark = connect_session("sc://127.0.0.1:15002")  # doctest: +SKIP
    """
    from .errors import SparkConnectError

    url = remote.strip()
    if not url.startswith("sc://") or len(url) <= len("sc://"):
        raise SparkConnectError(
            f"Spark Connect URL {remote!r} is not an sc:// URL: write it as sc://host:port "
            "(`dkf local-spark start` prints the URL of a local server)."
        )
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:  # PySparkImportError is an ImportError
        raise SparkConnectError(
            f"A Spark Connect session needs PySpark's Spark Connect client packages: {exc} "
            "Install them with `pip install 'pyspark[connect]'`."
        ) from exc
    # PySpark's own switch (set by its builder for a remote session): its functions and
    # helpers build Spark Connect plans from here on.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    builder = ConnectSession.builder.remote(url)
    settings = {
        k: v for k, v in (config or {}).items() if k not in ("spark.remote", "spark.master")
    }
    if settings:
        builder = builder.config(map=settings)
    return builder.getOrCreate()


def _names_a_session(remote: str | None) -> bool:
    """Whether a Spark Connect URL names its server-side session (``;session_id=...``), which
    later processes then share: such a session is not released at the end of a run."""
    return remote is not None and ";session_id=" in remote.split("/", 3)[-1]


def prepare_spark_environment(master: str | None) -> None:
    """Set what a PySpark driver needs before it starts, without overriding the user's values.

    ``PYSPARK_PYTHON`` is this interpreter (executors must run the same environment);
    ``SPARK_LOCAL_IP`` is 127.0.0.1 only for ``local`` masters, never for a cluster.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is None or master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


class SparkResource(PySparkResource):
    """dagster-pyspark's ``PySparkResource`` that prepares the environment and starts the
    session on first use; with ``remote`` (or ``spark.remote`` / ``$SPARK_REMOTE``), a Spark
    Connect session instead, so a run starts no JVM.

    A run that never touches Spark (Kafka asset checks run alone, a sensor-launched check job)
    so never pays the session's start.

    Example:
        >>> SparkResource(spark_config={"spark.master": "local[2]"})
        >>> SparkResource(remote="sc://127.0.0.1:15002")  # `dkf local-spark start` prints it
    """

    spark_config: dict[str, Any] = {}
    spark_avro: bool = Field(
        default=True,
        description="Add Spark's own Avro package (spark-avro of this Spark release, fetched "
        "once from Maven Central) to the session: the Avro formats then decode with Spark's "
        "from_avro, falling back to Python per record only where it fails. Classic sessions "
        "only: a Spark Connect server brings its own packages (`dkf local-spark` adds it).",
    )

    remote: str | None = Field(
        default=None,
        description="The URL of a Spark Connect server (sc://host:port, as `dkf local-spark "
        "start` prints it): the session is a Spark Connect client of that server, and the run "
        "starts no JVM. Unset: spark_config's 'spark.remote', else $SPARK_REMOTE, else a "
        "classic session from spark_config. The server provides Spark's packages and the "
        "Python workers, which must import dagster_kafka_flinklike.",
    )

    def remote_url(self) -> str | None:
        """The Spark Connect URL the session uses: ``remote``, else ``spark_config``'s
        ``spark.remote``, else ``$SPARK_REMOTE``; ``None`` for a classic session."""
        for candidate in (
            self.remote,
            self.spark_config.get("spark.remote"),
            os.environ.get(SPARK_REMOTE_ENV),
        ):
            if candidate is not None and str(candidate).strip():
                return str(candidate).strip()
        return None

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if self.remote_url() is None:
            prepare_spark_environment(self.spark_config.get("spark.master"))

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        """Release a Spark Connect session on its server (its cached data, its state, its
        Python workers) unless the URL names the session (``;session_id=``) for later runs to
        share; a classic session stays up for the rest of the process, as dagster-pyspark
        leaves it."""
        session = self._spark_session
        if session is not None and is_connect(session) and not _names_a_session(self.remote_url()):
            session.stop()
            self._spark_session = None

    @property
    def spark_session(self) -> Any:
        """The Spark session, built (``getOrCreate``) on first use: a Spark Connect session
        when :meth:`remote_url` names a server, else a classic one from ``spark_config``."""
        if self._spark_session is None:
            remote = self.remote_url()
            if remote is not None:
                self._spark_session = connect_session(remote, self.spark_config)
            else:
                config = (
                    with_spark_avro(self.spark_config) if self.spark_avro else self.spark_config
                )
                self._spark_session = spark_session_from_config(config)
        return self._spark_session


#: Spark settings that make the connector's ``mapInArrow`` queries cheaper (see the README's
#: "Spark settings"): PySpark's 64 MiB default byte limit on an Arrow batch makes the JVM
#: measure the batch after every row it adds, about 0.3 µs per record a sink writes; batches
#: stay bounded by ``spark.sql.execution.arrow.maxRecordsPerBatch`` (10,000 rows).
CONNECTOR_SPARK_CONFIG: dict[str, str] = {
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
}


def local_spark_config(app_name: str = "dagster-kafka-flinklike") -> dict[str, Any]:
    """A small local-mode Spark configuration for demos and tests (2 cores, quiet UI), with
    :data:`CONNECTOR_SPARK_CONFIG`."""
    return {
        **CONNECTOR_SPARK_CONFIG,
        "spark.master": "local[2]",
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
