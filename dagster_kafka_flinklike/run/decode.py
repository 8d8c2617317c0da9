"""Decode: raw records into the table's columns, with the run's input statistics.

Decoded rows are cached so the statistics (records, bytes, dirty records, the newest timestamp),
the dirty-data policy and the user's query see one reading of the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..source.records import ERROR, PROVENANCE, TOLERATED, decode_records
from .tables import ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class InputStats:
    """What a source's decoded records amount to.

    Example:
        >>> InputStats(records=10, bytes=200, dirty=1, strict=0).dirty_ratio
        0.1
    """

    records: int
    bytes: int
    dirty: int
    #: Dirty records no format tolerates (its ``ignore-parse-errors`` is off).
    strict: int
    newest_timestamp_ms: int | None = None

    @property
    def dirty_ratio(self) -> float:
        """Dirty records as a share of the records read (0.0 when none was read)."""
        return self.dirty / self.records if self.records else 0.0


@dataclass(frozen=True)
class DecodedTable:
    """A source's decoded records: clean rows, the cached decoding, and its statistics."""

    #: Clean rows, the table's columns only.
    frame: DataFrame
    #: Every decoded record with its error and provenance columns (cached until the run closes).
    decoded: DataFrame
    stats: InputStats

    @property
    def dirty_rows(self) -> DataFrame:
        """The records that failed to decode, with error and provenance columns."""
        return self.decoded.filter(self.decoded[ERROR].isNotNull())


def input_stats(decoded: DataFrame) -> InputStats:
    """Count records, value bytes and dirty records of ``decoded`` in one Spark job."""
    from pyspark.sql import functions as F

    row = decoded.agg(
        F.count(F.lit(1)).alias("records"),
        F.count(F.col(ERROR)).alias("dirty"),
        F.count(F.when(F.col(ERROR).isNotNull() & ~F.col(TOLERATED), 1)).alias("strict"),
        F.coalesce(F.sum(F.coalesce(F.length("__dkf_value"), F.lit(0))), F.lit(0)).alias("bytes"),
        F.max(F.unix_millis(F.col("__dkf_timestamp"))).alias("newest"),
    ).collect()[0]
    return InputStats(
        records=row["records"],
        bytes=row["bytes"],
        dirty=row["dirty"],
        strict=row["strict"],
        newest_timestamp_ms=row["newest"],
    )


def decode_table(table: ResolvedTable, raw: DataFrame) -> DecodedTable:
    """Decode ``raw`` into ``table``'s columns, cache it and count what it holds.

    Example:
        >>> decoded = decode_table(table, read_table(spark, table, plan))  # doctest: +SKIP
        >>> decoded.stats.dirty  # doctest: +SKIP
        0
    """
    decoded = decode_records(table.spec, raw).persist()
    clean = decoded.filter(decoded[ERROR].isNull()).drop(ERROR, TOLERATED, *PROVENANCE)
    return DecodedTable(frame=clean, decoded=decoded, stats=input_stats(decoded))
