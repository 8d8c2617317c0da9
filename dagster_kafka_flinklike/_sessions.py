"""What the connector asks of a running Spark session: whether it is a Spark Connect session,
whether it has Spark's Avro package, and objects built once per session. Free of Dagster and of
the rest of the package, so that the formats, the reader and the run cycle import it cheaply
(and Spark's Python workers with them)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")

__all__ = ["has_spark_avro", "is_connect", "per_session"]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a server), not a classic one.

    Example:
        >>> from dagster_kafka_flinklike.spark import SparkResource
        >>> is_connect(SparkResource(remote="sc://127.0.0.1:15002").spark_session)  # doctest: +SKIP
        True
    """
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def has_spark_avro(spark: Any) -> bool:
    """Whether the session was started with Spark's Avro package (``spark.jars`` or
    ``spark.jars.packages`` name it)."""
    try:
        jars = f"{spark.conf.get('spark.jars', '')},{spark.conf.get('spark.jars.packages', '')}"
    except Exception:  # a session that cannot report its settings: assume the package is absent
        return False
    return "spark-avro" in jars


#: Per Spark session, objects built for it: Spark columns live in the session's JVM (or are plain
#: protobuf with Spark Connect), and building them asks the JVM once per function and operator.
_MEMO: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
_MEMO_PER_SESSION = 128


def per_session(session: Any, key: Any, build: Callable[[], T]) -> T:
    """``build()``, once per Spark ``session`` and hashable ``key``: what is built from Spark
    columns (a table's decoding, the statistics' aggregates) is built once and reused by every
    run of a long-lived process, instead of about 2,500 calls into the JVM per run.

    Example:
        >>> per_session(spark, ("stats",), lambda: [F.count(F.lit(1))])  # doctest: +SKIP
    """
    try:
        known = _MEMO.setdefault(session, {})
    except TypeError:  # a session that cannot be referenced weakly: build every time
        return build()
    if key not in known:
        if len(known) >= _MEMO_PER_SESSION:
            known.clear()
        known[key] = build()
    return cast("T", known[key])
