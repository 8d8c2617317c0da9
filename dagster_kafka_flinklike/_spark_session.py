"""Building the Spark session, without Dagster: settings, Spark's Avro package, and starting a
session in the background.

A Spark session's start is mostly the JVM's: the driver process launches, loads Spark and opens
its gateway, while the Python side waits. :func:`start_session_in_background` lets that wait
overlap with work the caller still has to do (importing Dagster, loading definitions, planning
offsets), and then starts the Spark Python workers of a local session with the connector's
modules imported, so the first query's tasks find them ready.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

#: Spark's own Avro package (``from_avro``/``to_avro``), the Avro formats' fast path.
SPARK_AVRO = "spark-avro_2.13"


def spark_avro_jar() -> str | None:
    """Spark's ``spark-avro`` jar for this PySpark release, fetched once; None if unavailable.

    The jar of the same version is tried first, then the first release of the same minor
    version (patch releases of a Spark minor version are compatible). Without it, the Avro
    formats decode in Python only.

    Example:
        >>> spark_avro_jar()  # doctest: +SKIP
        '/root/.cache/dagster_kafka_flinklike/maven-jars/spark-avro_2.13-4.2.0/...jar'
    """
    import pyspark

    from .errors import EmbeddedServiceError
    from .local.fetch import fetch_spark_package

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
    ``spark.jars`` or ``spark.jars.packages``, or cannot be fetched); to
    ``spark.jars.packages``, as Maven coordinates, when the config has packages: Spark then
    ships only ``spark.jars`` to a cluster's executors, without the packages it resolved.

    Example:
        >>> with_spark_avro({"spark.master": "local[2]"})["spark.jars"]  # doctest: +SKIP
        '/root/.cache/.../spark-avro_2.13-4.2.0.jar'
    """
    out = dict(config)
    given = f"{out.get('spark.jars', '')},{out.get('spark.jars.packages', '')}"
    if "spark-avro" in given:
        return out
    jar = spark_avro_jar()
    if jar is None:
        return out
    packages = str(out.get("spark.jars.packages") or "").strip()
    if packages:
        version = Path(jar).name.removeprefix(f"{SPARK_AVRO}-").removesuffix(".jar")
        out["spark.jars.packages"] = f"{packages},org.apache.spark:{SPARK_AVRO}:{version}"
    else:
        out["spark.jars"] = ",".join(j for j in (out.get("spark.jars"), jar) if j)
    return out


def session_config(
    config: Mapping[str, Any], *, spark_avro: bool = True, ship_package: bool | None = None
) -> dict[str, Any]:
    """``config`` as the library starts a classic session with it: Spark's Avro package added
    (``spark_avro``, see :func:`with_spark_avro`) and, on a cluster, this package shipped to the
    executors (``ship_package``; ``None``: when ``spark.master`` names a cluster; see
    :mod:`._executor_package`).

    Example:
        >>> session_config({"spark.master": "spark://h:7077"})["spark.archives"]  # doctest: +SKIP
        '/tmp/dagster_kafka_flinklike-executors/...zip#dagster_kafka_flinklike_package'
    """
    from ._executor_package import ships_package, with_package_shipped

    out = with_spark_avro(config) if spark_avro else dict(config)
    ship = ships_package(out) if ship_package is None else ship_package
    return with_package_shipped(out) if ship else out


def prepare_spark_environment(master: str | None) -> None:
    """Set what a PySpark driver needs before it starts, without overriding the user's values.

    ``PYSPARK_PYTHON`` is this interpreter (executors must run the same environment);
    ``SPARK_LOCAL_IP`` is 127.0.0.1 only for ``local`` masters, never for a cluster.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is None or master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


#: Spark settings that make the connector's ``mapInArrow`` queries cheaper (see the README's
#: "Spark settings"): PySpark's 64 MiB default byte limit on an Arrow batch makes the JVM
#: measure the batch after every row it adds, about 0.3 µs per record a sink writes; batches
#: stay bounded by ``spark.sql.execution.arrow.maxRecordsPerBatch`` (10,000 rows).
CONNECTOR_SPARK_CONFIG: dict[str, str] = {
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
}


#: JVM options for the connector's queries, in the sessions this library builds (recommended
#: for a cluster's driver and executors as well, see the README):
#:
#: - Arrow's Java buffers check bounds and reference counts on each field they give, and Spark
#:   turns every record a reading task returns into a row through them (7-10 % of the JVM's
#:   time in a JSON read here); Spark reads only within the batches it received.
#: - HotSpot leaves methods of more than 8,000 bytes of bytecode to the interpreter, and the
#:   code Spark generates for a table's decoding (the per-record fallback next to the natively
#:   decoded columns) is such a method: a CSV read ran at 330k records/s with it interpreted,
#:   630-680k compiled.
#: - Avro's decoder allocates what a datum's lengths say before it reads the bytes: a corrupt
#:   record whose array claims 10^9 items failed the job with an OutOfMemoryError. Bounded
#:   (Avro's own limits), such a record is one Spark's ``from_avro`` cannot read, and the Python
#:   decoding that reads those decides it (dirty, or decoded if it really is that large).
CONNECTOR_JVM_OPTIONS = (
    "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false "
    "-XX:-DontCompileHugeMethods "
    "-Dorg.apache.avro.limits.collectionItems.maxLength=16777216 "
    "-Dorg.apache.avro.limits.bytes.maxLength=268435456 "
    "-Dorg.apache.avro.limits.string.maxLength=268435456"
)


#: JVM options for a driver that lives for one short run (a process that materializes an
#: increment and exits): the JIT's first tier only and the serial collector. On two cores the
#: optimizing compiler and the parallel collector's threads otherwise compete with the run
#: itself: a local session started in 5-7 s instead of 10-11 s here, and its first queries
#: planned faster. Long-lived sessions that move millions of records want the optimizing
#: compiler: leave these out there.
SHORT_RUN_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def class_archive_path() -> Path | None:
    """Where the driver JVM's class-data archive for this PySpark release and this Java lives
    (under :func:`~dagster_kafka_flinklike.local.default_cache_dir`), or None without a ``java``.

    The name carries the PySpark version and installation and the Java binary's path and
    modification time: an archive only serves the JVM and class path it was written by.
    """
    import hashlib
    import shutil

    import pyspark

    from .local.fetch import default_cache_dir

    home = os.environ.get("JAVA_HOME", "").strip()
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        return None
    binary = Path(java).resolve()
    # The JVM maps an archive only for the class path it was written with: the jars of this
    # PySpark installation (another checkout's environment has its own).
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    key = f"{pyspark.__version__}|{jars}|{binary}|{binary.stat().st_mtime_ns}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return default_cache_dir() / "spark-class-archive" / f"spark-{pyspark.__version__}-{digest}.jsa"


@functools.lru_cache(maxsize=1)
def short_run_jvm_options() -> str:
    """:data:`SHORT_RUN_JVM_OPTIONS`, plus a class-data archive of the classes Spark's driver
    loads (Java's AppCDS): a session without one writes it when its JVM exits (about 160 MB, once
    per PySpark release and Java), later ones map it instead of loading and verifying those
    classes again (the session started in 5-6 s instead of 9-10 s here, and its first queries
    ran faster). The same in every call of a process; an archive that does not fit the JVM is
    ignored by the JVM."""
    path = class_archive_path()
    if path is None:
        return SHORT_RUN_JVM_OPTIONS
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
    try:
        _adopt_written_archives(path)
        if path.exists():
            return f"{SHORT_RUN_JVM_OPTIONS} -XX:SharedArchiveFile={path} {quiet}"
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return SHORT_RUN_JVM_OPTIONS
    # Each writer has a file of its own; the next process adopts a complete one.
    part = path.with_name(f"{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.part")
    return f"{SHORT_RUN_JVM_OPTIONS} -XX:ArchiveClassesAtExit={part} {quiet}"


#: The first bytes of a complete dynamic class-data archive (HotSpot writes its header last).
_DYNAMIC_ARCHIVE_MAGIC = (0xF00BABA8).to_bytes(4, "little")
#: A file written to within this many seconds may still be being written by its JVM.
_ARCHIVE_SETTLE_S = 10.0


def _adopt_written_archives(path: Path) -> None:
    """Move a complete archive some earlier JVM wrote to ``path``; delete the other files
    written for it (extra copies, or files of JVMs that died while writing)."""
    for part in path.parent.glob(f"{path.stem}.*.part"):
        try:
            if time.time() - part.stat().st_mtime < _ARCHIVE_SETTLE_S:
                continue
            with part.open("rb") as f:
                complete = f.read(4) == _DYNAMIC_ARCHIVE_MAGIC
            if complete and not path.exists():
                os.replace(part, path)
            else:
                part.unlink()
        except OSError:  # another process adopted or deleted it meanwhile
            continue


def local_spark_config(
    app_name: str = "dagster-kafka-flinklike", *, short_runs: bool = False
) -> dict[str, Any]:
    """A small local-mode Spark configuration for demos and tests (2 cores, quiet UI), with
    :data:`CONNECTOR_SPARK_CONFIG` and :data:`CONNECTOR_JVM_OPTIONS` for the driver's and the
    executors' JVMs; with
    ``short_runs``, the driver JVM also gets :func:`short_run_jvm_options` (for processes that
    run one materialization and exit).

    Example:
        >>> local_spark_config(short_runs=True)["spark.driver.extraJavaOptions"]  # doctest: +SKIP
        '-Darrow.enable_unsafe_memory_access=true ... -XX:TieredStopAtLevel=1 -XX:+UseSerialGC ...'
    """
    config: dict[str, Any] = {
        **CONNECTOR_SPARK_CONFIG,
        "spark.master": "local[2]",
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": CONNECTOR_JVM_OPTIONS,
        # On a cluster the reading tasks run in executors' JVMs of their own (locally, in the
        # driver's, where this has no effect).
        "spark.executor.extraJavaOptions": CONNECTOR_JVM_OPTIONS,
    }
    if short_runs:
        options = f"{CONNECTOR_JVM_OPTIONS} {short_run_jvm_options()}"
        config["spark.driver.extraJavaOptions"] = options
    return config


#: The variable that points the example, ``dkf sql`` and the tests at a Spark cluster.
SPARK_MASTER_ENV = "SPARK_MASTER"


def default_spark_config(
    app_name: str = "dagster-kafka-flinklike", *, short_runs: bool = False
) -> dict[str, Any]:
    """:func:`local_spark_config`, with ``$SPARK_MASTER`` as ``spark.master`` when it is set
    (``spark://host:7077``, as ``dkf local-spark start --workers 2`` prints it): the same code
    then runs on that cluster. Spark's own variables say the rest (``SPARK_LOCAL_IP``: the
    driver's address for the executors; ``PYSPARK_PYTHON``: the executors' Python).

    Example:
        >>> os.environ["SPARK_MASTER"] = "spark://127.0.0.1:7077"
        >>> default_spark_config()["spark.master"]
        'spark://127.0.0.1:7077'
        >>> del os.environ["SPARK_MASTER"]
    """
    config = local_spark_config(app_name, short_runs=short_runs)
    master = os.environ.get(SPARK_MASTER_ENV, "").strip()
    if master:
        config["spark.master"] = master
    return config


def build_session(config: Mapping[str, Any]) -> SparkSession:
    """``SparkSession.builder`` with ``config`` (flat ``spark.*`` keys), ``getOrCreate()``: the
    session already running in this process if there is one."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in config.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _warm_up_worker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task that does once what the connector's first tasks in a new Python worker would pay
    for: import the reader, the writer, confluent-kafka and pyarrow.compute, build an Arrow array
    from Python values (pyarrow then imports pandas, when installed: about a second), and send
    an Arrow batch back to the JVM."""
    import pyarrow as pa
    import pyarrow.compute

    from dagster_kafka_flinklike._worker import settle_worker_heap
    from dagster_kafka_flinklike.sink import writer  # noqa: F401
    from dagster_kafka_flinklike.source import reader  # noqa: F401

    rows = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_arrays([pa.array([rows], pa.int64())], names=["id"])
    settle_worker_heap()


def warm_up_python_workers(spark: SparkSession) -> None:
    """Start the Spark Python workers of a local session (one task per core, at most 4) with the
    connector's modules imported.

    A new worker forks from Spark's Python daemon, which starts with the first Python task, and
    imports the connector's code with its first task: about a second per worker on two cores,
    otherwise paid inside the first query. Spark reuses workers across tasks
    (``spark.python.worker.reuse``, on by default).
    """
    try:
        context = spark.sparkContext  # a Spark Connect session has none: its server's workers
    except Exception:
        return
    if not (context.master or "").startswith("local"):
        return
    context.setJobDescription("dagster-kafka-flinklike: start Python workers")
    try:
        tasks = max(1, min(context.defaultParallelism, 4))
        spark.range(0, tasks, 1, tasks).mapInArrow(_warm_up_worker, "id long").collect()
    finally:
        context.setJobDescription(None)  # type: ignore[arg-type]


def warm_up_in_background(spark: SparkSession) -> threading.Thread:
    """:func:`warm_up_python_workers` on a daemon thread: the workers start while the driver
    plans the first query. Errors are left to the query (its tasks start workers themselves)."""

    def run() -> None:
        try:
            warm_up_python_workers(spark)
        except Exception as exc:
            logger.debug("Starting Spark's Python workers in the background failed: %s", exc)

    thread = threading.Thread(target=run, name="dkf-spark-workers", daemon=True)
    thread.start()
    return thread


class BackgroundSession:
    """A Spark session being built on a daemon thread (:func:`start_session_in_background`).

    :meth:`result` waits for it; a start that failed is not raised here: the caller builds
    the session again and sees the error itself.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        warm_workers: bool = True,
        build: Callable[[], SparkSession] | None = None,
    ) -> None:
        self.config = dict(config)
        self.warm_workers = warm_workers
        self._build = build
        self.session: SparkSession | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="dkf-spark-start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self._build is not None:  # a Spark Connect session: no JVM, no workers here
                self.session = self._build()
                return
            from pyspark import SparkContext

            fresh = SparkContext._active_spark_context is None
            self.session = build_session(self.config)
            if self.warm_workers and fresh:
                warm_up_in_background(self.session)
        except BaseException as exc:  # reported by the caller's own start
            self.error = exc
            logger.debug("Starting Spark in the background failed: %s", exc)

    def result(self, timeout: float | None = None) -> SparkSession | None:
        """The session once built (None if the start failed or ``timeout`` passed)."""
        self._thread.join(timeout)
        return self.session


def start_session_in_background(
    config: Mapping[str, Any], *, warm_workers: bool = True
) -> BackgroundSession:
    """Start the Spark session of ``config`` on a daemon thread and return at once.

    The session is the process's one session (``getOrCreate``), so whoever builds it next with
    the same settings gets it as soon as it is up. ``config`` is taken as it is (add Spark's Avro
    package first with :func:`with_spark_avro` where the later builder would). With
    ``warm_workers``, a local session's Python workers are started next
    (:func:`warm_up_python_workers`).

    Example:
        >>> early = start_session_in_background(with_spark_avro(local_spark_config()))
        >>> # ... import, load definitions, talk to Kafka ...
        >>> spark = early.result()  # doctest: +SKIP
    """
    prepare_spark_environment(config.get("spark.master"))
    return BackgroundSession(config, warm_workers=warm_workers)


@contextmanager
def session_settings(spark: SparkSession, settings: Iterable[tuple[str, str]]) -> Iterator[None]:
    """Spark ``settings`` set on ``spark`` for the block, and each one restored (or unset)
    afterwards, whatever the block raises."""
    pairs = list(settings)
    before = {key: spark.conf.get(key, None) for key, _ in pairs}
    try:
        for key, value in pairs:
            spark.conf.set(key, value)
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
