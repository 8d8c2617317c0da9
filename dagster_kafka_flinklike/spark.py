"""The Spark session resource (dagster-pyspark), with the environment PySpark needs here."""

from __future__ import annotations

import os
import sys
from typing import Any

from dagster import InitResourceContext
from dagster_pyspark import PySparkResource
from dagster_pyspark.resources import spark_session_from_config


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
    session on first use.

    A run that never touches Spark (Kafka asset checks run alone, a sensor-launched check job)
    so never pays the JVM's start.

    Example:
        >>> SparkResource(spark_config={"spark.master": "local[2]"})
    """

    spark_config: dict[str, Any] = {}

    def setup_for_execution(self, context: InitResourceContext) -> None:
        prepare_spark_environment(self.spark_config.get("spark.master"))

    @property
    def spark_session(self) -> Any:
        """The Spark session, built (``getOrCreate``) from ``spark_config`` on first use."""
        if self._spark_session is None:
            self._spark_session = spark_session_from_config(self.spark_config)
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
