"""Decode: raw records into the table's columns, with the run's input statistics.

The statistics (records, bytes, dirty records, the newest timestamp, late records) come from the
pass that reads the data: they are observed (Spark's ``DataFrame.observe``) on the decoded
records, so the action that consumes the clean rows (the sink's write) also counts them; nothing
is persisted and nothing is read twice. A run that never consumes its rows gets them from one
pass of its own when they are first asked for. A run over a time window keeps the records whose
timestamp lies in it; those of earlier windows in its range are counted as late.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._sessions import per_session
from ..source.records import (
    ERROR,
    PROVENANCE,
    RECORD_START,
    TOLERATED,
    VALUE_BYTES,
    decode_records,
)
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


class InputCounts:
    """A source's input statistics, from the pass that reads its records (an observation of
    the decoded frame), or from one Spark job of their own when no action read them.

    Example:
        >>> counts = InputCounts.observing(decoded)  # doctest: +SKIP
        >>> counts.stats().records  # doctest: +SKIP
        1000
    """

    def __init__(
        self,
        decoded: DataFrame | None,
        observation: Any = None,
        known: InputStats | None = None,
        bounds: tuple[Any, Any] = (None, None),
    ):
        self._decoded = decoded
        self._observation = observation
        self._stats = known
        self._bounds = bounds

    @classmethod
    def known(cls, stats: InputStats) -> InputCounts:
        """Statistics counted already."""
        return cls(None, known=stats)

    @classmethod
    def observing(
        cls, decoded: DataFrame, kept: Any = None, late: Any = None
    ) -> tuple[DataFrame, InputCounts]:
        """``decoded`` with its statistics observed (the frame to read the records from), and
        the counts that the first action over it fills."""
        from pyspark.sql import Observation

        observation = Observation()
        if kept is None and late is None:  # the same aggregates in every run without a window
            columns = per_session(decoded.sparkSession, ("input_stats",), _stat_columns)
        else:
            columns = _stat_columns(kept, late)
        observed = decoded.observe(observation, *columns)
        return observed, cls(decoded, observation, bounds=(kept, late))

    @property
    def counted(self) -> bool:
        """Whether the statistics are known without running anything."""
        return self._stats is not None or _observed(self._observation) is not None

    def stats(self) -> InputStats:
        """The statistics; one job over the records when no action has read them yet."""
        if self._stats is None:
            row = _observed(self._observation)
            if row is None:
                assert self._decoded is not None
                self._stats = input_stats(self._decoded, *self._bounds)
            else:
                self._stats = _input_stats(row)
        return self._stats


def _observed(observation: Any) -> dict[str, Any] | None:
    """The observation's values once an action has filled them, else None (never waits)."""
    if observation is None:
        return None
    try:
        jo = getattr(observation, "_jo", None)
        if jo is not None:  # a classic session: the JVM observation's future
            return dict(observation.get) if jo.future().isCompleted() else None
        result = getattr(observation, "_result", None)  # Spark Connect: filled by the action
        return dict(result) if result else None
    except Exception:  # e.g. a plan Spark emptied, whose metrics row has no schema: count anew
        return None


@dataclass(frozen=True)
class DecodedTable:
    """A source's decoded records: clean rows, every decoded record, and their statistics."""

    #: Clean rows: the table's columns (and ``_rowkind`` for a changelog table).
    frame: DataFrame
    #: Every decoded record with its error and provenance columns (not cached: reading it
    #: reads the records again, which only the dirty records' samples and dead letters do).
    decoded: DataFrame
    counts: InputCounts
    #: The records of the run: all, or those whose timestamps lie in its time window.
    kept: Any = None

    @property
    def stats(self) -> InputStats:
        """The input statistics (see :class:`InputCounts`)."""
        return self.counts.stats()

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


def _stat_columns(kept: Any = None, late: Any = None) -> list[Any]:
    """Aggregates of the input statistics over decoded records (``kept`` ones, when given,
    and the ``late`` ones). A record that yields several changelog rows counts once."""
    from pyspark.sql import functions as F

    keep = F.col(RECORD_START) & (F.lit(True) if kept is None else kept)
    late_records = F.col(RECORD_START) & (F.lit(False) if late is None else late)
    return [
        F.count(F.when(keep, 1)).alias("records"),
        F.count(F.when(keep & F.col(ERROR).isNotNull(), 1)).alias("dirty"),
        F.count(F.when(keep & F.col(ERROR).isNotNull() & ~F.col(TOLERATED), 1)).alias("strict"),
        F.coalesce(F.sum(F.when(keep, F.col(VALUE_BYTES))), F.lit(0)).alias("bytes"),
        F.max(F.when(keep, F.unix_millis(F.col("__dkf_timestamp")))).alias("newest"),
        F.count(F.when(late_records, 1)).alias("late"),
    ]


def _input_stats(row: Any) -> InputStats:
    return InputStats(
        records=row["records"],
        bytes=row["bytes"],
        dirty=row["dirty"],
        strict=row["strict"],
        newest_timestamp_ms=row["newest"],
        late=row["late"],
    )


def input_stats(decoded: DataFrame, kept: Any = None, late: Any = None) -> InputStats:
    """Count records, value bytes and dirty records of ``decoded`` (those ``kept``, when given)
    and the ``late`` ones, in one Spark job."""
    return _input_stats(decoded.agg(*_stat_columns(kept, late)).collect()[0])


def decode_table(
    table: ResolvedTable, raw: DataFrame, window: TimeWindow | None = None
) -> DecodedTable:
    """Decode ``raw`` into ``table``'s columns, counting what it holds in the pass that reads
    it; with a ``window``, keep only the records whose timestamps lie in it.

    Example:
        >>> decoded = decode_table(table, read_table(spark, table, plan))  # doctest: +SKIP
        >>> decoded.stats.dirty  # doctest: +SKIP
        0
    """
    decoded = decode_records(table.spec, raw)
    kept, late = _bounds(table, window)
    observed, counts = InputCounts.observing(decoded, kept, late)
    clean = observed.filter(observed[ERROR].isNull())
    if kept is not None:
        clean = clean.filter(kept)
    return DecodedTable(
        frame=clean.drop(ERROR, TOLERATED, *PROVENANCE),
        decoded=decoded,
        counts=counts,
        kept=kept,
    )
