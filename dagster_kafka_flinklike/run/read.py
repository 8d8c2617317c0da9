"""Read: Spark tasks read the planned offset ranges with confluent-kafka, as raw records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..source.enumerator import SourcePlan
from ..source.reader import read_splits
from ..source.records import native_columns, record_fields
from .tables import ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def read_table(spark: SparkSession, table: ResolvedTable, plan: SourcePlan) -> DataFrame:
    """The raw records of ``plan``'s splits: the record fields decoding ``table`` needs, and the
    columns its formats decode natively in the reading tasks (:func:`native_columns`).

    Example:
        >>> raw = read_table(spark, table, plan)  # doctest: +SKIP
    """
    spec = table.spec
    return read_splits(
        spark, plan.splits, table.consumer, record_fields(spec), derived=native_columns(spec)
    )
