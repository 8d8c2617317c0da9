"""What the connector asks of a Spark session that differs between classic and Spark Connect
sessions; kept free of Dagster so that the run cycle imports it cheaply."""

from __future__ import annotations

from typing import Any

__all__ = ["is_connect"]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a server), not a classic one.

    Example:
        >>> from dagster_kafka_flinklike.spark import SparkResource
        >>> is_connect(SparkResource(remote="sc://127.0.0.1:15002").spark_session)  # doctest: +SKIP
        True
    """
    return type(spark).__module__.startswith("pyspark.sql.connect.")
