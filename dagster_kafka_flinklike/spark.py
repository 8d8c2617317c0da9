"""The Spark session resource (dagster-pyspark), with the environment PySpark needs here."""

from __future__ import annotations

from typing import Any

from dagster import InitResourceContext
from dagster_pyspark import PySparkResource
from dagster_pyspark.resources import spark_session_from_config
from pydantic import Field, PrivateAttr

from ._spark_session import (
    CONNECTOR_SPARK_CONFIG,
    SHORT_RUN_JVM_OPTIONS,
    SPARK_AVRO,
    BackgroundSession,
    class_archive_path,
    has_spark_avro,
    local_spark_config,
    prepare_spark_environment,
    short_run_jvm_options,
    spark_avro_jar,
    start_session_in_background,
    warm_up_in_background,
    warm_up_python_workers,
    with_spark_avro,
)

__all__ = [
    "CONNECTOR_SPARK_CONFIG",
    "SHORT_RUN_JVM_OPTIONS",
    "SPARK_AVRO",
    "SparkResource",
    "class_archive_path",
    "has_spark_avro",
    "local_spark_config",
    "prepare_spark_environment",
    "short_run_jvm_options",
    "spark_avro_jar",
    "start_session_in_background",
    "warm_up_in_background",
    "warm_up_python_workers",
    "with_spark_avro",
]


class SparkResource(PySparkResource):
    """dagster-pyspark's ``PySparkResource`` that prepares the environment and starts the
    session on first use.

    A run that never touches Spark (Kafka asset checks run alone, a sensor-launched check job)
    so never pays the JVM's start. A run that materializes assets starts the session in the
    background as soon as the resource is set up (``start_early``), so the JVM's start overlaps
    with the run's own preparation (opening the sink's transaction, planning offsets), and then
    starts a local session's Python workers with the connector's code imported.

    Example:
        >>> SparkResource(spark_config={"spark.master": "local[2]"})
    """

    spark_config: dict[str, Any] = {}
    spark_avro: bool = Field(
        default=True,
        description="Add Spark's own Avro package (spark-avro of this Spark release, fetched "
        "once from Maven Central) to the session: the Avro formats then decode with Spark's "
        "from_avro, falling back to Python per record only where it fails.",
    )
    start_early: bool = Field(
        default=True,
        description="In a run that selects assets to materialize, start the session in the "
        "background when the resource is set up instead of at its first use (runs that select "
        "only asset checks start none); and once a local session is up, start its Python "
        "workers in the background while the first query is planned.",
    )
    _starting: BackgroundSession | None = PrivateAttr(default=None)

    def _config(self) -> dict[str, Any]:
        return with_spark_avro(self.spark_config) if self.spark_avro else dict(self.spark_config)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        prepare_spark_environment(self.spark_config.get("spark.master"))
        run = context.dagster_run
        materializes = bool(run is not None and run.asset_selection)
        if self.start_early and materializes and self._spark_session is None:
            from pyspark import SparkContext

            if SparkContext._active_spark_context is not None:  # already up in this process
                return
            self._starting = start_session_in_background(self._config())

    @property
    def spark_session(self) -> Any:
        """The Spark session, built (``getOrCreate``) from ``spark_config`` on first use."""
        if self._spark_session is None:
            if self._starting is not None:
                self._starting.result()  # a failed start is raised by the build below
                self._starting = None
            from pyspark import SparkContext

            fresh = SparkContext._active_spark_context is None
            self._spark_session = spark_session_from_config(self._config())
            if fresh and self.start_early:
                warm_up_in_background(self._spark_session)
        return self._spark_session
