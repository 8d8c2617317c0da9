"""Flink's stateful operators that Spark SQL has no counterpart for, as Structured Streaming
processors (``transformWithState``): session windows and Top-N.

Rows cross into Python with their timestamps as epoch microseconds (or text, without a zone),
exact in any time zone, and back.

Session windows (:func:`flink_sessions`). Spark's own ``session_window`` drops every row
whose own session ``[t, t + gap)`` is behind the watermark. Flink drops such a row only if
the session it joins is closed: a late row that touches a session still open merges into it
and counts. So sessions here are assigned by a processor that follows Flink's rule, per key:

- a row's window is ``[t, t + gap)``; it merges with every open session it intersects, ends
  included (sessions that touch merge, as in Flink);
- the row is dropped if the merged session has ended by the watermark (Flink: its last
  millisecond is at or before the watermark), else kept in state;
- when the watermark passes a session's end, its rows leave state, each with the session's
  ``window_start`` and ``window_end``, all in the same micro-batch.

A session's rows arrive whole in one micro-batch, so the query's aggregate runs over each
batch as a plain batch query (:class:`~.stateful.BatchQuery`) and gives each session's result
once, when Flink emits it. Within a micro-batch the watermark is the batch's (Spark's), where
Flink's advances with every record; a key's rows are taken in the order they were read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["flink_sessions", "flink_top_n"]

#: Columns the processor adds: the row's event time (epoch ms) and its key.
_TIME, _KEY = "__dkf_session_t", "__dkf_session_key"
_START, _END = "__dkf_session_start", "__dkf_session_end"


def _crossing(frame: DataFrame, into_python: bool) -> list[Any]:
    """``frame``'s columns as they cross into Python (``into_python``), or back as its types:
    timestamps as epoch microseconds (which also drops the watermark a time column carries,
    and with it the late rows Spark would drop before the processor has seen them),
    timestamps without a zone as text."""
    from pyspark.sql import functions as F

    columns = []
    for field in frame.schema.fields:
        kind, column = field.dataType.typeName(), F.col(field.name)
        if kind == "timestamp":
            column = F.unix_micros(column) if into_python else F.timestamp_micros(column)
        elif kind == "timestamp_ntz":
            column = column.cast("string" if into_python else field.dataType)
        columns.append(column.alias(field.name))
    return columns


def _merged(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sessions of ``[start, end)`` intervals: those that intersect or touch merge."""
    sessions: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if sessions and start <= sessions[-1][1]:
            sessions[-1] = (sessions[-1][0], max(sessions[-1][1], end))
        else:
            sessions.append((start, end))
    return sessions


def _session_processor(gap_ms: int, state_schema: Any, time_at: int, names: Sequence[str]) -> Any:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class FlinkSessions(StatefulProcessor):  # type: ignore[misc]
        """The rows of each key's open sessions, emitted with their session when it closes."""

        emitted = Row(*names)

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.rows = handle.getListState("rows", state_schema)

        def _kept(self) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in self.rows.get()] if self.rows.exists() else []

        def _store(self, rows: list[tuple[Any, ...]]) -> None:
            self.rows.clear()
            if rows:
                self.rows.put(rows)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Any:
            # Spark's watermark is Flink's plus one (see EventTime.spark_delay): a session
            # whose end is at or before it has fired in Flink
            watermark = timerValues.getCurrentWatermarkInMs()
            kept = self._kept()
            sessions = _merged([(r[time_at], r[time_at] + gap_ms) for r in kept])
            for row in rows:  # in the order read (Spark's shuffle and sort keep it per key)
                t = row[time_at]
                if t is None:
                    continue  # no event time: in no window (Spark's windows drop it too)
                start, end = t, t + gap_ms
                for s, e in sessions:
                    if s <= end and e >= start:
                        start, end = min(start, s), max(end, e)
                if end <= watermark:
                    continue  # its session has closed: late, as Flink drops it
                kept.append(tuple(row))
                sessions = _merged([*sessions, (start, end)])
                self.handle.registerTimer(end - 1)
            self._store(kept)
            return iter(())

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            watermark = timerValues.getCurrentWatermarkInMs()
            kept = self._kept()
            sessions = _merged([(r[time_at], r[time_at] + gap_ms) for r in kept])
            closed = [(s, e) for s, e in sessions if e <= watermark]
            out, rest = [], []
            for row in kept:
                t = row[time_at]
                found = next(((s, e) for s, e in closed if s <= t < e), None)
                if found is None:
                    rest.append(row)
                else:
                    out.append(self.emitted(*row, *found))
            for _, e in sessions:
                if e > watermark:  # still open: fire once the watermark reaches its end
                    self.handle.registerTimer(max(e - 1, watermark + 1))
            self._store(rest)
            return iter(out)

        def close(self) -> None:
            pass

    return FlinkSessions()


def flink_sessions(
    frame: DataFrame, time_column: str, gap_ms: int, keys: Sequence[str] = ()
) -> DataFrame:
    """The rows of ``frame`` (a streaming frame with a watermark) in Flink's session windows of
    ``gap_ms`` on ``time_column``, per ``keys`` (Flink's ``PARTITION BY``): each row once its
    session has closed, with ``window_start``, ``window_end`` and ``window_time``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    columns = list(frame.columns)
    encoded = _crossing(frame, into_python=True)
    time = F.unix_millis(F.col(time_column).cast("timestamp"))
    key_columns = [F.col(k) for k in keys] or [F.lit(0)]  # one key: sessions over all rows
    source = frame.select(
        *encoded,
        time.alias(_TIME),
        *[c.alias(f"{_KEY}_{n}") for n, c in enumerate(key_columns)],
    )
    state = source.schema  # the rows whole, keys too (Spark passes them in)
    out = StructType(
        [*state.fields, StructField(_START, LongType()), StructField(_END, LongType())]
    )
    processor = _session_processor(gap_ms, state, len(columns), out.fieldNames())
    grouped = source.groupBy(*[f"{_KEY}_{n}" for n in range(len(key_columns))])
    sessions = grouped.transformWithState(processor, out, "Append", "EventTime")
    decoded = _crossing(frame, into_python=False)
    return sessions.select(
        *decoded,
        F.timestamp_millis(F.col(_START)).alias("window_start"),
        F.timestamp_millis(F.col(_END)).alias("window_end"),
        F.timestamp_millis(F.col(_END) - 1).alias("window_time"),
    )


def _rank_order(orders: Sequence[tuple[int, bool]]) -> Any:
    """A sort key of rows by ``orders`` (``(position, descending)``), NULL lowest (first
    ascending, last descending), as Flink sorts."""
    import functools

    def compare(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
        for at, descending in orders:
            x, y = a[at], b[at]
            if x == y:
                continue
            order = -1 if x is None or (y is not None and x < y) else 1
            return -order if descending else order
        return 0

    return functools.cmp_to_key(compare)


def _top_n_processor(
    limit: int, state_schema: Any, orders: Sequence[tuple[int, bool]], names: Sequence[str]
) -> Any:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class FlinkTopN(StatefulProcessor):  # type: ignore[misc]
        """Each key's top rows, in rank order; a row that enters them is inserted, one pushed
        out deleted (before the insert), as Flink's append-only Top-N writes them."""

        emitted = Row(*names)

        def init(self, handle: Any) -> None:
            self.rows = handle.getListState("top", state_schema)
            self.rank = _rank_order(orders)  # (built where it runs: it does not pickle)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Any:
            top = [tuple(r) for r in self.rows.get()] if self.rows.exists() else []
            out = []
            for row in rows:  # in the order read: a tie ranks the earlier row first
                row = tuple(row)
                rank = self.rank(row)
                at = sum(1 for t in top if self.rank(t) <= rank)
                if at >= limit:
                    continue
                top.insert(at, row)
                if len(top) > limit:
                    out.append(self.emitted(*top.pop(), "-D"))
                out.append(self.emitted(*row, "+I"))
            self.rows.clear()
            if top:
                self.rows.put(top)
            return iter(out)

        def close(self) -> None:
            pass

    return FlinkTopN()


def flink_top_n(
    frame: DataFrame,
    keys: Sequence[str],
    orders: Sequence[tuple[str, bool]],
    limit: int,
    row_kind: str,
) -> DataFrame:
    """The changes of the top ``limit`` rows of ``frame`` (insert-only, streaming) per ``keys``,
    ranked by ``orders`` (``(column, descending)``), with their Flink row kind in column
    ``row_kind``: ``+I`` for a row that enters the top, ``-D`` for one pushed out of it. Only
    the top rows are kept in state, as Flink's append-only Top-N keeps them."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    columns = list(frame.columns)
    lower = [c.lower() for c in columns]
    source = frame.select(
        *_crossing(frame, into_python=True),
        *[F.col(k).alias(f"{_KEY}_{n}") for n, k in enumerate(keys)],
    )
    state = source.schema
    out = StructType([*state.fields, StructField(row_kind, StringType())])
    at = [(lower.index(c.lower()), descending) for c, descending in orders]
    processor = _top_n_processor(limit, state, at, out.fieldNames())
    grouped = source.groupBy(*[f"{_KEY}_{n}" for n in range(len(keys))])
    changes = grouped.transformWithState(processor, out, "Append", "None")
    return changes.select(*_crossing(frame, into_python=False), F.col(row_kind))
