"""Read: Spark tasks read the planned offset ranges with confluent-kafka, as raw records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..source.enumerator import SourcePlan
from ..source.reader import read_splits
from ..source.records import native_reading, record_fields
from .tables import ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def read_table(
    spark: SparkSession, table: ResolvedTable, plan: SourcePlan, keep: Sequence[str] = ()
) -> DataFrame:
    """The raw records of ``plan``'s splits: the record fields decoding ``table`` needs, and the
    columns its formats decode natively in the reading tasks (:func:`native_reading`: the raw
    fields that only the records decoded per record need are left out of the others, except
    those of ``keep``, which every record keeps).

    Example:
        >>> raw = read_table(spark, table, plan)  # doctest: +SKIP
    """
    spec = table.spec
    derived, shedding = native_reading(spec)
    if shedding is not None and keep:
        shedding = replace(shedding, fields=tuple(f for f in shedding.fields if f not in keep))
    fields = record_fields(spec)
    consumer = table.consumer
    return read_splits(spark, plan.splits, consumer, fields, derived=derived, shedding=shedding)
