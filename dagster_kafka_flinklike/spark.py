"""The Spark session resource (dagster-pyspark), with the environment PySpark needs here: a
classic session (a JVM in this process) or a Spark Connect session (a client of a server).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dagster import InitResourceContext
from dagster_pyspark import PySparkResource
from dagster_pyspark.resources import spark_session_from_config
from pydantic import Field, PrivateAttr

from ._executor_package import package_archive
from ._sessions import has_spark_avro, is_connect
from ._spark_session import (
    CONNECTOR_JVM_OPTIONS,
    CONNECTOR_SPARK_CONFIG,
    SHORT_RUN_JVM_OPTIONS,
    SPARK_AVRO,
    BackgroundSession,
    class_archive_path,
    default_spark_config,
    local_spark_config,
    prepare_spark_environment,
    session_config,
    short_run_jvm_options,
    spark_avro_jar,
    start_session_in_background,
    warm_up_in_background,
    warm_up_python_workers,
    with_spark_avro,
)

__all__ = [
    "CONNECTOR_JVM_OPTIONS",
    "CONNECTOR_SPARK_CONFIG",
    "SHORT_RUN_JVM_OPTIONS",
    "SPARK_AVRO",
    "SparkResource",
    "class_archive_path",
    "connect_session",
    "default_spark_config",
    "has_spark_avro",
    "is_connect",
    "local_spark_config",
    "package_archive",
    "prepare_spark_environment",
    "session_config",
    "short_run_jvm_options",
    "spark_avro_jar",
    "start_session_in_background",
    "warm_up_in_background",
    "warm_up_python_workers",
    "with_spark_avro",
]

#: Where PySpark reads a Spark Connect server's URL from when no setting names one.
SPARK_REMOTE_ENV = "SPARK_REMOTE"


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


class SparkResource(PySparkResource):
    """dagster-pyspark's ``PySparkResource`` that prepares the environment and starts the
    session on first use; with ``remote`` (or ``spark.remote`` / ``$SPARK_REMOTE``), a Spark
    Connect session instead, so a run starts no JVM.

    A run that never touches Spark (Kafka asset checks run alone, a sensor-launched check job)
    so never pays the session's start. A run that materializes assets starts a classic session
    in the background as soon as the resource is set up (``start_early``), so the JVM's start
    overlaps with the run's own preparation (opening the sink's transaction, planning offsets),
    and then starts a local session's Python workers with the connector's code imported.

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
    start_early: bool = Field(
        default=True,
        description="In a run that selects assets to materialize, start the session (or "
        "connect to the Spark Connect server) in the background when the resource is set up "
        "instead of at its first use (runs that select only asset checks start none); and once "
        "a local session is up, start its Python workers in the background while the first "
        "query is planned.",
    )
    remote: str | None = Field(
        default=None,
        description="The URL of a Spark Connect server (sc://host:port, as `dkf local-spark "
        "start` prints it): the session is a Spark Connect client of that server, and the run "
        "starts no JVM. Unset: spark_config's 'spark.remote', else $SPARK_REMOTE, else a "
        "classic session from spark_config. The server provides Spark's packages and the "
        "Python workers, which must import dagster_kafka_flinklike.",
    )
    ship_package: bool | None = Field(
        default=None,
        description="Ship this package to the executors with the application: an archive of "
        "its installed files (compiled modules included) in spark.archives, unpacked first on "
        "the executors' PYTHONPATH, so a cluster's executors need only its dependencies "
        "(pyarrow, pandas, confluent-kafka, fastavro, protobuf). Unset: when spark.master names "
        "a cluster (not local mode). False: the executors' Python has it installed. Classic "
        "sessions only: a Spark Connect server's executors import what the server gives them.",
    )
    _starting: BackgroundSession | None = PrivateAttr(default=None)

    def _config(self) -> dict[str, Any]:
        return session_config(
            self.spark_config, spark_avro=self.spark_avro, ship_package=self.ship_package
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
        run = context.dagster_run
        # A run of selected assets, or of a whole job; not one of asset checks alone.
        materializes = run is not None and (
            bool(run.asset_selection) or run.asset_check_selection is None
        )
        remote = self.remote_url()
        if remote is not None:
            # Connecting imports PySpark's Spark Connect client (about half a second) and talks
            # to the server: done meanwhile, while Dagster prepares the run's first step.
            if self.start_early and materializes and self._spark_session is None:
                config = self.spark_config
                self._starting = BackgroundSession(
                    {}, build=lambda: connect_session(remote, config), warm_workers=False
                )
            return
        prepare_spark_environment(self.spark_config.get("spark.master"))
        if self.start_early and materializes and self._spark_session is None:
            from pyspark import SparkContext

            if SparkContext._active_spark_context is not None:  # already up in this process
                return
            self._starting = start_session_in_background(self._config())

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
            if self._starting is not None:
                early = self._starting.result()  # a failed start is raised by the build below
                self._starting = None
                if remote is not None and early is not None:
                    self._spark_session = early
                    return early
            if remote is not None:
                self._spark_session = connect_session(remote, self.spark_config)
                return self._spark_session
            from pyspark import SparkContext

            # Outside a run (no setup_for_execution) too: the Python workers run this
            # interpreter, which imports the connector.
            prepare_spark_environment(self.spark_config.get("spark.master"))
            fresh = SparkContext._active_spark_context is None
            self._spark_session = spark_session_from_config(self._config())
            if fresh and self.start_early:
                warm_up_in_background(self._spark_session)
        return self._spark_session
