"""Decode: raw records into the table's columns, with the run's input statistics.

Decoded rows are cached so the statistics (records, bytes, dirty records, the newest timestamp),
the dirty-data policy and the user's query see one reading of the data. A run over a time window
keeps the records whose timestamp lies in it; those of earlier windows in its range are counted
as late.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..source.records import ERROR, PROVENANCE, RECORD_START, TOLERATED, decode_records
from .tables import ResolvedTable
from .windows import TimeWindow

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
    #: Records read whose timestamps lie before the run's time window (late records of earlier
    #: windows), left out.
    late: int = 0

    @property
    def dirty_ratio(self) -> float:
        """Dirty records as a share of the records read (0.0 when none was read)."""
        return self.dirty / self.records if self.records else 0.0


@dataclass(frozen=True)
class DecodedTable:
    """A source's decoded records: clean rows, the cached decoding, and its statistics."""

    #: Clean rows: the table's columns (and ``_rowkind`` for a changelog table).
    frame: DataFrame
    #: Every decoded record with its error and provenance columns (cached until the run closes).
    decoded: DataFrame
    stats: InputStats
    #: The records of the run: all, or those whose timestamps lie in its time window.
    kept: Any = None

    @property
    def dirty_rows(self) -> DataFrame:
        """The records that failed to decode, with error and provenance columns."""
        rows = self.decoded.filter(self.decoded[ERROR].isNotNull())
        return rows if self.kept is None else rows.filter(self.kept)


def _bounds(table: ResolvedTable, window: TimeWindow | None) -> tuple[Any, Any]:
    """(kept, late) conditions on the record timestamp; both None without a window."""
    from pyspark.sql import functions as F

    if window is None:
        return None, None
    ts = F.unix_millis(F.col("__dkf_timestamp"))
    if table.spec.is_upsert:  # the changelog as of the window's end
        return ts < F.lit(window.end_ms), F.lit(False)
    start = F.lit(window.read_start_ms)
    return (ts >= start) & (ts < F.lit(window.end_ms)), ts < start


def input_stats(decoded: DataFrame, kept: Any = None, late: Any = None) -> InputStats:
    """Count records, value bytes and dirty records of ``decoded`` (those ``kept``, when given)
    and the ``late`` ones, in one Spark job. A record that yields several changelog rows counts
    once."""
    from pyspark.sql import functions as F

    keep = F.col(RECORD_START) & (F.lit(True) if kept is None else kept)
    value_bytes = F.coalesce(F.length("__dkf_value"), F.lit(0))
    row = decoded.agg(
        F.count(F.when(keep, 1)).alias("records"),
        F.count(F.when(keep & F.col(ERROR).isNotNull(), 1)).alias("dirty"),
        F.count(F.when(keep & F.col(ERROR).isNotNull() & ~F.col(TOLERATED), 1)).alias("strict"),
        F.coalesce(F.sum(F.when(keep, value_bytes)), F.lit(0)).alias("bytes"),
        F.max(F.when(keep, F.unix_millis(F.col("__dkf_timestamp")))).alias("newest"),
        F.count(F.when(F.col(RECORD_START) & (F.lit(False) if late is None else late), 1)).alias(
            "late"
        ),
    ).collect()[0]
    return InputStats(
        records=row["records"],
        bytes=row["bytes"],
        dirty=row["dirty"],
        strict=row["strict"],
        newest_timestamp_ms=row["newest"],
        late=row["late"],
    )


def decode_table(
    table: ResolvedTable, raw: DataFrame, window: TimeWindow | None = None
) -> DecodedTable:
    """Decode ``raw`` into ``table``'s columns, cache it and count what it holds; with a
    ``window``, keep only the records whose timestamps lie in it.

    Example:
        >>> decoded = decode_table(table, read_table(spark, table, plan))  # doctest: +SKIP
        >>> decoded.stats.dirty  # doctest: +SKIP
        0
    """
    decoded = decode_records(table.spec, raw).persist()
    kept, late = _bounds(table, window)
    clean = decoded.filter(decoded[ERROR].isNull())
    if kept is not None:
        clean = clean.filter(kept)
    return DecodedTable(
        frame=clean.drop(ERROR, TOLERATED, *PROVENANCE),
        decoded=decoded,
        stats=input_stats(decoded, kept, late),
        kept=kept,
    )
