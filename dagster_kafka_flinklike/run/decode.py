"""Decode: raw records into the table's columns, with the run's input statistics.

The statistics (records, bytes, dirty records, the newest timestamp, late records) come from the
pass that reads the data: they are observed (Spark's ``DataFrame.observe``) on the decoded
records, so the action that consumes the clean rows (the sink's write) also counts them; nothing
is persisted and nothing is read twice. A run that never consumes its rows gets them from one
pass of its own when they are first asked for. A run over time windows keeps the records that
:func:`~.windows.with_record_windows` assigns to them, and counts each window's records, dirty
and late records in the same pass (:class:`WindowCounts`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._sessions import per_session
from ..source.records import (
    DIRTY_COLUMNS,
    ERROR,
    OBSERVED_COLUMNS,
    PROVENANCE,
    RECORD_START,
    TOLERATED,
    VALUE_BYTES,
    Observe,
    decode_records,
    yields_row,
)
from .tables import ResolvedTable
from .windows import KEPT, LATE_IN, POSITION, TimeWindows, WindowOffsets, with_record_windows

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


#: Column of what a decoded record of a run over time windows counts as, in which of the run's
#: windows (:func:`_window_code`).
WINDOW_CODE = "__dkf_window_code"
#: Codes per window: a clean record of it, a dirty one, a record that arrived late in it.
_CODES = 3


@dataclass(frozen=True)
class WindowCounts:
    """What one time window of a run got: its records (those of its timestamps that arrived in
    time), the dirty ones among them, and the records that arrived late while it was read.

    Example:
        >>> WindowCounts(records=4, dirty=1, late=1).dirty_ratio
        0.25
    """

    records: int = 0
    dirty: int = 0
    late: int = 0

    @property
    def dirty_ratio(self) -> float:
        """Dirty records as a share of the window's records (0.0 when it has none)."""
        return self.dirty / self.records if self.records else 0.0


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
    #: Records that arrived late in the run's time windows (after their own window's stop
    #: offset), left out.
    late: int = 0
    #: Per time window of the run, in order: its own figures.
    windows: tuple[WindowCounts, ...] = ()

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
        decoded: Callable[[], DataFrame] | None,
        observation: Any = None,
        known: InputStats | None = None,
        windows: int = 0,
    ):
        self._decoded = decoded
        self._observation = observation
        self._stats = known
        self._windows = windows

    @classmethod
    def known(cls, stats: InputStats) -> InputCounts:
        """Statistics counted already."""
        return cls(None, known=stats)

    @classmethod
    def observing(cls, decoded: DataFrame, windows: int = 0) -> tuple[DataFrame, InputCounts]:
        """``decoded`` with its statistics observed (the frame to read the records from), and
        the counts that the first action over it fills; over time ``windows`` (so many), of the
        records the run keeps and per window (``decoded``'s :data:`~.windows.KEPT` and
        :data:`WINDOW_CODE` columns)."""
        observe, counts = cls.observer(lambda: decoded, windows)
        return observe(decoded), counts

    @classmethod
    def observer(
        cls,
        decoded: Callable[[], DataFrame],
        windows: int = 0,
        names: Mapping[str, str] | None = None,
    ) -> tuple[Observe, InputCounts]:
        """What observes the statistics of the records ``decoded`` gives (built only if no
        action fills them, see :meth:`observing`) in a frame that holds their columns under
        other ``names`` (their column → the frame's, e.g. where
        :func:`~..source.records.decode_records` observes), and the counts it fills."""
        from pyspark.sql import Observation

        observation = Observation()
        named = tuple(sorted((names or {}).items()))

        def observe(frame: DataFrame) -> DataFrame:
            columns = per_session(
                frame.sparkSession,
                ("input_stats", windows, named),
                lambda: _stat_columns(windows, dict(named)),
            )
            return frame.observe(observation, *columns)

        return observe, cls(decoded, observation, windows=windows)

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
                self._stats = input_stats(self._decoded(), self._windows)
            else:
                self._stats = _input_stats(row, self._windows)
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
    #: Builds :attr:`decoded` (planning a table's decoding costs the driver a few tenths of a
    #: second: a run whose records are all clean never asks for it).
    records: Callable[[], DataFrame]
    counts: InputCounts
    #: The records of the run: all, or those its time windows keep.
    kept: Any = None

    @functools.cached_property
    def decoded(self) -> DataFrame:
        """Every decoded record with its error and provenance columns (not persisted: reading
        it reads the records again, which only the dirty records' samples and dead letters
        do)."""
        return self.records()

    @property
    def stats(self) -> InputStats:
        """The input statistics (see :class:`InputCounts`)."""
        return self.counts.stats()

    @property
    def dirty_rows(self) -> DataFrame:
        """The records that failed to decode, with error and provenance columns."""
        rows = self.decoded.filter(self.decoded[ERROR].isNotNull())
        return rows if self.kept is None else rows.filter(self.kept)


def _stat_columns(windows: int = 0, names: Mapping[str, str] | None = None) -> list[Any]:
    """Aggregates of the input statistics over decoded records (their columns under ``names``
    where given); over time ``windows``, over those the run keeps, and per window (its
    :data:`WINDOW_CODE` column). A record that yields several changelog rows counts once.

    The windows' counts are one ``histogram_numeric`` over the codes: it keeps exact counts per
    distinct value while there are no more values than bins (bins merge only beyond that, and
    equal values merge first), so with a bin per code it counts every window in the same pass,
    in one aggregate whatever the number of windows.
    """
    from pyspark.sql import functions as F

    def col(name: str) -> Any:
        return F.col((names or {}).get(name, name))

    keep = col(RECORD_START) & (col(KEPT) if windows else F.lit(True))
    error = col(ERROR).isNotNull()
    columns = [
        F.count(F.when(keep, 1)).alias("records"),
        F.count(F.when(keep & error, 1)).alias("dirty"),
        F.count(F.when(keep & error & ~col(TOLERATED), 1)).alias("strict"),
        F.coalesce(F.sum(F.when(keep, col(VALUE_BYTES))), F.lit(0)).alias("bytes"),
        F.max(F.when(keep, F.unix_millis(col(PROVENANCE[5])))).alias("newest"),
    ]
    if windows:
        code = col(WINDOW_CODE).cast("double")  # merged bins average x: round it back
        columns.append(F.histogram_numeric(code, F.lit(_CODES * windows + 1)).alias("windows"))
    return columns


def _input_stats(row: Any, windows: int = 0) -> InputStats:
    counts = [[0] * _CODES for _ in range(windows)]
    for found in (row["windows"] if windows else None) or ():
        code = round(found["x"])
        counts[code // _CODES][code % _CODES] += round(found["y"])
    per_window = tuple(WindowCounts(*c) for c in counts)
    return InputStats(
        records=row["records"],
        bytes=row["bytes"],
        dirty=row["dirty"],
        strict=row["strict"],
        newest_timestamp_ms=row["newest"],
        late=sum(w.late for w in per_window),
        windows=per_window,
    )


def input_stats(decoded: DataFrame, windows: int = 0) -> InputStats:
    """Count records, value bytes and dirty records of ``decoded`` (over time ``windows``: of
    those the run keeps, and each window's figures), in one Spark job."""
    return _input_stats(decoded.agg(*_stat_columns(windows)).collect()[0], windows)


def _window_code() -> Any:
    """What a decoded record counts as, as :data:`WINDOW_CODE`: a kept record of the run's
    window at its position (clean, or dirty), or a record that arrived late in one; null for
    the other rows of a changelog record and for records the run's windows do not count."""
    from pyspark.sql import functions as F

    dirty = F.when(F.col(ERROR).isNotNull(), 1).otherwise(0)
    return (
        F.when(~F.col(RECORD_START), None)
        .when(F.col(KEPT), F.col(POSITION) * _CODES + dirty)
        .otherwise(F.col(LATE_IN) * _CODES + 2)
    )


def decode_table(
    table: ResolvedTable,
    raw: DataFrame,
    windows: TimeWindows | None = None,
    offsets: WindowOffsets | None = None,
) -> DecodedTable:
    """Decode ``raw`` into ``table``'s columns, counting what it holds in the pass that reads
    it; over time ``windows`` (with the source's window ``offsets``), keep only the records that
    belong to them (:func:`~.windows.with_record_windows`) and count each window's own.

    Example:
        >>> decoded = decode_table(table, read_table(spark, table, plan))  # doctest: +SKIP
        >>> decoded.stats.dirty  # doctest: +SKIP
        0
    """
    from pyspark.sql import functions as F

    kept = None
    if windows is not None and offsets is not None:
        changelog = table.spec.is_upsert
        decoded = with_record_windows(
            decode_records(table.spec, raw), windows, offsets, changelog=changelog
        )
        decoded = decoded.withColumn(WINDOW_CODE, _window_code()).drop(POSITION, LATE_IN)
        kept = F.col(KEPT)
        observed, counts = InputCounts.observing(decoded, len(windows.keys))
        records: Callable[[], DataFrame] = lambda: decoded  # noqa: E731
    else:  # observed where the decoding holds the records as rows already
        records = functools.partial(decode_records, table.spec, raw)
        observe, counts = InputCounts.observer(records, names=OBSERVED_COLUMNS)
        observed = decode_records(table.spec, raw, observe)
    clean = observed.filter(yields_row())
    if kept is not None:
        clean = clean.filter(kept)
    return DecodedTable(
        frame=clean.drop(*DIRTY_COLUMNS, *PROVENANCE, KEPT, WINDOW_CODE),
        records=records,
        counts=counts,
        kept=kept,
    )
