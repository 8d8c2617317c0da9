"""A Flink SQL script as runnable pipelines: one :class:`SqlInsert` per ``INSERT INTO``.

:func:`plan_flink_sql` parses a script, resolves every ``INSERT INTO`` to its Kafka sink, the
Kafka tables it reads (through views) and its Spark SQL translation, and decides how bounded
runs give Flink's result (:class:`RunMode`):

- ``INCREMENTAL``: a stateless query (projections, filters, functions, ``UNION ALL``, window
  assignment without aggregation) maps every record on its own, so each run reads only the
  records after the checkpoint, as a Flink job would process them.
- ``WINDOWS``: a window aggregation (``TUMBLE``, ``HOP``, ``CUMULATE``) on an asset partitioned
  by time windows whose bounds are window bounds: each partition run reads its records (by the
  Kafka record timestamp, which must be the window's time column) and emits the final results
  of the windows that end in it, as Flink does when the watermark passes. Hopping windows
  begin up to ``size - slide`` before the partition that holds their end, so a run reads that
  much earlier too (:attr:`SqlInsert.lookback_ms`).
- ``STATEFUL``: an event-time window aggregation (``TUMBLE``, ``HOP``, ``CUMULATE``,
  ``SESSION`` as table functions, ``TUMBLE``, ``HOP`` as group windows) on a source's
  ``WATERMARK`` column, without
  time partitions: each run is one
  ``Trigger.AvailableNow`` run of a Spark Structured Streaming query (:mod:`..run.stateful`)
  that keeps the windows' state and the watermark in its checkpoint and emits each window once
  the watermark passes it, as Flink does; records behind the watermark are dropped as late.
  An unbounded ``GROUP BY`` aggregate (with or without ``HAVING``) into an ``upsert-kafka`` sink
  is ``STATEFUL`` too, in update mode: each run writes the groups whose aggregates changed, and
  a group that leaves a ``HAVING`` result is deleted (a tombstone), as Flink retracts it.
  A regular inner join of insert-only sources (a stream-stream join) and a first-row
  deduplication on processing time (``dropDuplicates``) are ``STATEFUL`` too, in append mode:
  their outputs are insert-only, in Flink as here. A Top-N into an ``upsert-kafka`` sink is
  ``STATEFUL`` (append) too: the rows that enter a key's top are inserted, those pushed out
  deleted. Sessions and Top-N keep their state in Flink's way through processors of their own
  (:mod:`..run.processors`). Interval joins are refused (Flink drops their late rows by the
  watermark).
- ``RECOMPUTE``: any other stateful query (aggregations, joins, ``DISTINCT``, ``OVER``)
  into an ``upsert-kafka`` sink: each run reads every source from its startup position and
  writes the results again; the upsert topic's latest value per key is then Flink's result.

Everything else is refused when the script is planned, naming the line, the column and why.

A statement set (``EXECUTE STATEMENT SET BEGIN ... END``) is planned as one insert per target:
each writes its own sink with its own checkpoint and delivery guarantee, and a Dagster job
named after the set runs them together (see :mod:`..components`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import FlinkSqlError, KafkaConnectorError, KafkaOptionsError
from ..options import EventTime, KafkaTableSpec, StartupMode
from .parser import parse_flink_sql
from .statements import CreateTable, CreateView, InsertInto, SetOption, Watermark
from .translate import (
    WINDOW_BOUNDS,
    SparkQuery,
    TopN,
    WindowCall,
    having_as_row_kind,
    legacy_session_as_tvf,
    translate_query,
    watermark_delay_ms,
    with_row_kind,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

    from ..run.stateful import BatchQuery

__all__ = ["FlinkSqlPipeline", "RunMode", "SqlInsert", "plan_flink_sql"]

logger = logging.getLogger(__name__)


class RunMode(StrEnum):
    """How each bounded run of an insert reads its sources (see the module docs)."""

    INCREMENTAL = "incremental"
    WINDOWS = "windows"
    STATEFUL = "stateful"
    RECOMPUTE = "recompute"


#: ``SET`` keys that take effect here, and what they do.
SETTINGS = {
    "table.local-time-zone": "the Spark session time zone of the queries",
    "pipeline.name": "the Dagster group of the pipeline's assets",
    "parallelism.default": "the minimum number of Spark read tasks per source",
    "execution.runtime-mode": "'batch' or 'streaming': every run here is a bounded batch",
    "table.exec.sink.not-null-enforcer": "'ERROR' (the default) fails a run that writes a NULL "
    "into a NOT NULL or PRIMARY KEY sink column; 'DROP' drops such rows",
}


@dataclass(frozen=True)
class SqlInsert:
    """One ``INSERT INTO``, ready to run: its sink, sources, views and Spark SQL.

    Attributes:
        name: the asset name (the target table's name).
        sink: the target Kafka table.
        sources: the Kafka tables the query reads, directly or through views, by name.
        views: ``(name, Spark SQL)`` of the views it needs, in dependency order.
        query: the translated query.
        columns: the sink columns the query's columns fill, in order (Flink maps by position);
            empty for ``CREATE TABLE ... AS SELECT``, whose columns are the query's.
        mode: how runs read the sources.
        statement_set: the statement set it belongs to, if any.
        line: the line of the ``INSERT`` in the script.
        lookback_ms: how long before its time partition a ``WINDOWS`` run reads (the longest
            ``size - slide`` of its hopping windows).
    """

    name: str
    sink: KafkaTableSpec
    sources: dict[str, KafkaTableSpec]
    views: tuple[tuple[str, str], ...]
    query: SparkQuery
    columns: tuple[str, ...]
    mode: RunMode
    statement_set: int | None = None
    line: int = 1
    #: Spark session settings from the script's ``SET`` statements.
    spark_settings: tuple[tuple[str, str], ...] = ()
    lookback_ms: int = 0
    #: ``STATEFUL``: each source's event time (its ``WATERMARK``), by source name.
    event_times: Mapping[str, EventTime] = field(default_factory=dict)
    #: ``STATEFUL``: Spark's output mode, ``append`` (final windows) or ``update`` (changed
    #: groups of an unbounded aggregate, into an upsert sink).
    output_mode: str = "append"
    #: ``SET 'table.exec.sink.not-null-enforcer'``: ``ERROR`` or ``DROP`` (upper case).
    not_null_enforcer: str = "ERROR"
    #: ``WINDOWS``: how long after a partition's end its run still reads records, for the
    #: ``WATERMARK`` delay ``d`` of the windows' time column: ``d - 1`` ms (Flink fires a window
    #: once its watermark reaches ``end - 1``, at the first record at or after ``end + d - 1``).
    watermark_lateness_ms: int = 0

    def run_query(
        self,
        spark: SparkSession,
        frames: Mapping[str, DataFrame],
        window: tuple[int, int] | None = None,
    ) -> DataFrame | BatchQuery:
        """Run the query over the source DataFrames; columns named and typed as the sink's.

        ``window`` (epoch milliseconds ``[start, end)`` of the run's time partitions) keeps the
        hopping windows that end in it; without, every window is kept.

        The tables and views are registered as temporary views of ``spark`` (the frames'
        session); the script's settings (``SET 'table.local-time-zone'``) apply while the query
        is analysed (Spark fixes time zones then) and are restored afterwards. A query over a
        ``SESSION`` window table function (streaming frames) is a
        :class:`~..run.stateful.BatchQuery`: the rows of closed sessions as they close
        (:func:`~..run.processors.flink_sessions`), and the query over each micro-batch of them.

        Raises:
            KafkaConnectorError: the query returns a different number of columns than the
                sink takes.
        """
        with self._settings(spark):
            for name, frame in frames.items():
                frame.createOrReplaceTempView(name)
            bounds = dict(zip(WINDOW_BOUNDS, window or (None, None), strict=True))
            for name, text in self.views:
                spark.sql(text, args=bounds).createOrReplaceTempView(name)
            for name, text, keys in self.query.deduplicated:
                spark.sql(text).dropDuplicates(list(keys)).createOrReplaceTempView(name)
            for top in self.query.top_n:
                self._top_n(spark, top).createOrReplaceTempView(top.view)
            if self.query.sessions:
                return self._sessions(spark)
            result = spark.sql(self.query.text, args=bounds)
        if self.query.top_n:  # transformWithState's state lives in RocksDB
            from ..run.stateful import ROCKSDB_STATE_STORE, BatchQuery

            return BatchQuery(self._sink_columns(result), settings=(ROCKSDB_STATE_STORE,))
        return self._sink_columns(result)

    def _settings(self, spark: SparkSession) -> AbstractContextManager[None]:
        """The script's ``SET`` statements on ``spark`` while a block analyses a query."""
        from .._spark_session import session_settings

        return session_settings(spark, self.spark_settings)

    def _sessions(self, spark: SparkSession) -> BatchQuery:
        from ..run.processors import flink_sessions
        from ..run.stateful import ROCKSDB_STATE_STORE, BatchQuery

        [session] = self.query.sessions
        rows = flink_sessions(
            spark.sql(f"SELECT * FROM {session.data}"),
            _bare(session.time_column),
            session.gap_ms,
            session.keys,
        )
        return BatchQuery(
            rows, functools.partial(self._per_batch, session.view), (ROCKSDB_STATE_STORE,)
        )

    def _top_n(self, spark: SparkSession, top: TopN) -> DataFrame:
        from ..options import ROW_KIND
        from ..run.processors import flink_top_n

        return flink_top_n(spark.sql(top.text), top.keys, top.orders, top.limit, ROW_KIND)

    def _per_batch(self, view: str, batch: DataFrame) -> DataFrame:
        """The query over one micro-batch of closed sessions' rows (read as ``view``)."""
        with self._settings(batch.sparkSession):
            batch.createOrReplaceTempView(view)
            result = batch.sparkSession.sql(self.query.text)
        return self._sink_columns(result)

    def _sink_columns(self, result: DataFrame) -> DataFrame:
        """The query's columns as the sink's, by position, typed as the sink's; NOT NULL
        enforced as Flink enforces it."""
        from pyspark.sql import functions as F

        from ..options import ROW_KIND, spark_type

        if not self.columns:  # CREATE TABLE ... AS SELECT: the query's columns, by name
            return result
        # A changelog source's row kinds (SELECT * over it) go on to the sink.
        columns, kinds = list(result.columns), []
        if columns[-1:] == [ROW_KIND] and len(columns) == len(self.columns) + 1:
            columns, kinds = columns[:-1], [F.col(ROW_KIND)]
        if len(columns) != len(self.columns):
            raise KafkaConnectorError(
                f"INSERT INTO {self.name} (line {self.line}): the query returns "
                f"{len(columns)} column(s) ({', '.join(columns)}) but the sink "
                f"takes {len(self.columns)} ({', '.join(self.columns)}); Flink maps them by "
                f"position."
            )
        # By position: two query columns may share a name (`s, CAST(s AS INT)`).
        positions = [f"__dkf_column_{n}" for n in range(len(columns))]
        result = result.toDF(*positions, *([ROW_KIND] if kinds else []))
        types = {c.name: c.flink_type for c in self.sink.columns}
        required = [
            name
            for name in self.columns
            if name in self.sink.primary_key or not types[name].nullable
        ]
        if self.not_null_enforcer == "DROP":
            for position, name in zip(positions, self.columns, strict=True):
                if name in required:
                    result = result.where(F.col(position).isNotNull())
            required = []
        return result.select(
            *[
                self._not_null(F.col(position).cast(spark_type(types[new])), new, required)
                for position, new in zip(positions, self.columns, strict=True)
            ],
            *kinds,
        )

    def _not_null(self, value: Column, name: str, required: list[str]) -> Column:
        """``value`` as sink column ``name``; where the column is NOT NULL (declared so, or in
        the PRIMARY KEY, which Flink makes NOT NULL), a NULL fails the run's task before
        anything is committed, as Flink's default ``table.exec.sink.not-null-enforcer``
        (``ERROR``) fails the job."""
        from pyspark.sql import functions as F

        if name not in required:
            return value.alias(name)
        message = (
            f"Column '{name}' of sink table {self.name} is NOT NULL (a PRIMARY KEY column is), "
            f"however, a null value is being written into it (INSERT INTO at line {self.line}); "
            f"as in Flink (table.exec.sink.not-null-enforcer = ERROR), the run fails. Filter "
            f"or COALESCE the NULLs in the query."
        )
        return F.when(value.isNull(), F.raise_error(F.lit(message))).otherwise(value).alias(name)


@dataclass(frozen=True)
class FlinkSqlPipeline:
    """A planned Flink SQL script: its Kafka tables, inserts and settings.

    Example:
        >>> p = plan_flink_sql('''
        ...   CREATE TABLE o (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'o',
        ...     'format' = 'json', 'properties.bootstrap.servers' = 'b:9092');
        ...   CREATE TABLE s (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 's',
        ...     'format' = 'json', 'properties.bootstrap.servers' = 'b:9092');
        ...   INSERT INTO s SELECT id FROM o WHERE id > 0;''')
        >>> [(i.name, i.mode.value, sorted(i.sources)) for i in p.inserts]
        [('s', 'incremental', ['o'])]
    """

    tables: dict[str, KafkaTableSpec]
    inserts: tuple[SqlInsert, ...]
    settings: dict[str, str]
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str | None:
        """The script's ``SET 'pipeline.name'``, if any."""
        return self.settings.get("pipeline.name")


def _window_fits(window: WindowCall, period_ms: int, start_ms: int) -> bool:
    """True when partition bounds are window bounds: every window ends in exactly one
    partition, and (but for hopping windows, which a run reads back for) lies inside it."""
    if window.kind == "HOP" and window.step_ms != window.size_ms and not window.bounded:
        return False
    unit = window.step_ms if window.bounded else window.size_ms
    return period_ms % unit == 0 and (start_ms - window.offset_ms) % unit == 0


def _timestamp_columns(tables: Mapping[str, KafkaTableSpec]) -> set[str]:
    """The column names that hold the Kafka record timestamp in every one of ``tables``."""
    common: set[str] | None = None
    for spec in tables.values():
        names = {c.name for c in spec.columns if c.metadata_key == "timestamp"}
        common = names if common is None else common & names
    return common or set()


def _bare(column: str) -> str:
    return column.split(".")[-1].strip("`").lower()


#: Stateful operations a window aggregation on event time cannot be combined with here yet.
_NOT_WITH_WINDOWS = ("JOIN", "OVER", "DISTINCT", "UNION", "LIMIT", "ORDER BY", "INTERSECT")


def _event_times(
    insert: InsertInto,
    query: SparkQuery,
    sources: Mapping[str, KafkaTableSpec],
    watermarks: Mapping[str, Watermark],
) -> dict[str, EventTime] | None:
    """Each source's event time when the query aggregates windows on a ``WATERMARK`` column
    (a ``STATEFUL`` insert), None when no window is on one.

    Raises:
        FlinkSqlError: such a query that Structured Streaming cannot run as Flink does.
    """
    declared = {name: w for name, w in watermarks.items() if name in sources}
    rowtimes = {_bare(w.column) for w in declared.values()}
    on_rowtime = [w for w in query.windows if _bare(w.time_column) in rowtimes]
    if not on_rowtime or not any(s[0] == "GROUP BY" for s in query.stateful):
        return None  # (window assignment alone maps each record on its own)
    first = on_rowtime[0]

    def refuse(reason: str, line: int = first.line, column: int = first.column) -> FlinkSqlError:
        return FlinkSqlError(f"INSERT INTO {insert.target}: {reason}", line=line, column=column)

    others = [s for s in query.stateful if s[0] in _NOT_WITH_WINDOWS]
    if others:
        what, line, column = others[0]
        raise refuse(
            f"{what} with an event-time window aggregation does not run incrementally here "
            f"(only window aggregations do); Flink's result needs state this pipeline does not "
            f"keep for it.",
            line,
            column,
        )
    for w in query.windows:
        if _bare(w.time_column) not in rowtimes:
            raise refuse(
                f"{w.kind}'s time column {w.time_column} is not a time attribute: declare a "
                f"WATERMARK for it, as Flink requires.",
                w.line,
                w.column,
            )
    distinct = _distinct_aggregate(query.text)
    if distinct:
        raise refuse(
            f"{distinct}(DISTINCT ...) in an event-time window: Spark Structured Streaming has "
            f"no distinct aggregation (COUNT(DISTINCT ...) runs, as the size of a set)."
        )
    times: dict[str, EventTime] = {}
    for name, spec in sources.items():
        if spec.is_changelog:
            raise refuse(
                f"source {name} is a changelog ({spec.connector}, {spec.value_format.name}); "
                f"window aggregations on event time run over insert-only sources here."
            )
        if spec.dead_letter_topic or spec.ignore_errors:
            raise refuse(
                f"source {name} sets 'ingestion.*' dirty-data options, which event-time window "
                f"runs do not apply; a format's 'ignore-parse-errors' skips bad records there."
            )
        mark = declared.get(name)
        if mark is None:
            raise refuse(
                f"source {name} declares no WATERMARK; every source of an event-time window "
                f"aggregation needs one (Flink's windows need a time attribute on every input)."
            )
        delay = watermark_delay_ms(mark.column, mark.expression)
        if delay is None:
            raise refuse(
                f"the WATERMARK of {name} is `{mark.expression}`; event-time runs take "
                f"`{mark.column}` or `{mark.column} - INTERVAL 'n' UNIT`."
            )
        try:
            times[name] = EventTime(_bare(mark.column), delay)
        except KafkaOptionsError as exc:
            raise refuse(f"source {name}: {exc}") from None
    return times


def _watermark_lateness(
    insert: InsertInto,
    query: SparkQuery,
    sources: Mapping[str, KafkaTableSpec],
    watermarks: Mapping[str, Watermark],
) -> int:
    """For a time-partitioned run, the lateness that stops reading where Flink's watermark
    closes the windows: ``delay - 1`` ms for the ``WATERMARK`` declared on the windows' time
    column (0 without one).

    Raises:
        FlinkSqlError: a watermark that is not ``column - INTERVAL`` or has no delay.
    """
    times = {_bare(w.time_column) for w in query.windows}
    lateness = 0
    for name, mark in watermarks.items():
        if name not in sources or _bare(mark.column) not in times:
            continue
        delay = watermark_delay_ms(mark.column, mark.expression)
        if not delay:
            raise FlinkSqlError(
                f"INSERT INTO {insert.target}: the WATERMARK of {name} is `{mark.expression}`; a "
                f"run per time partition follows `{mark.column} - INTERVAL 'n' UNIT` with n > 0 "
                f"(it stops reading at the first record at or after the partition's end plus "
                f"the delay, where Flink's watermark closes its windows).",
                line=insert.line,
                column=1,
            )
        lateness = max(lateness, delay - 1)
    return lateness


def _plain_inserts(sources: Mapping[str, KafkaTableSpec]) -> bool:
    """Whether every source is insert-only and without ``ingestion.*`` dirty-data options (which
    stateful runs do not apply), as Structured Streaming's stateful runs need them."""
    return not any(
        s.is_changelog or s.dead_letter_topic or s.ignore_errors for s in sources.values()
    )


def _distinct_aggregate(text: str) -> str | None:
    """The first aggregate over ``DISTINCT`` values but ``COUNT``, which Structured Streaming
    runs (see :func:`.translate.translate_query`), or None."""
    for match in re.finditer(r"\b(\w+)\s*\(\s*DISTINCT\b", text, re.IGNORECASE):
        if match.group(1).upper() != "COUNT":
            return match.group(1).upper()
    return None


def _updates(
    query: SparkQuery, sink: KafkaTableSpec, sources: Mapping[str, KafkaTableSpec]
) -> bool:
    """Whether the insert is one unbounded ``GROUP BY`` aggregate of insert-only sources into
    an upsert sink, which Structured Streaming's update mode runs as Flink does."""
    groups = [s for s in query.stateful if s[0] == "GROUP BY"]
    others = [s for s in query.stateful if s[0] in _NOT_WITH_WINDOWS]
    return (
        sink.is_upsert
        and len(groups) == 1
        and not others
        and not query.windows
        and not _distinct_aggregate(query.text)
        and _plain_inserts(sources)
    )


def _stream_join(query: SparkQuery, sources: Mapping[str, KafkaTableSpec]) -> bool:
    """Whether the insert is inner joins (and stateless operations) of insert-only sources,
    which Structured Streaming runs as Flink runs a regular join: every matching pair once, as
    soon as both sides have arrived, both sides kept in state (as Flink keeps them without a
    state TTL). The caller rules out interval joins (:func:`_time_attributes_read`)."""
    return (
        bool(query.joins)
        and all(kind == "INNER" for kind in query.joins)
        and all(what == "JOIN" for what, _, _ in query.stateful)
        and not query.windows
        and _plain_inserts(sources)
    )


def _stream_first_rows(
    query: SparkQuery, sources: Mapping[str, KafkaTableSpec], flink_text: str, script: str
) -> bool:
    """Whether the insert is Flink's first-row deduplication on processing time (``ROW_NUMBER()
    OVER (PARTITION BY k ORDER BY proctime [ASC])``, kept where it is 1) over insert-only
    sources, with stateless operations around it: Structured Streaming's ``dropDuplicates``
    keeps the first row of each key to arrive, as Flink does, and its output is insert-only."""
    if not query.first_rows or query.windows or query.joins:
        return False
    ranked = len(query.first_rows)
    counts = {w: sum(1 for s in query.stateful if s[0] == w) for w in ("OVER", "ORDER BY")}
    if len(query.stateful) != 2 * ranked or counts != {"OVER": ranked, "ORDER BY": ranked}:
        return False
    if not _plain_inserts(sources):
        return False
    computed = {c.name.lower() for spec in sources.values() for c in spec.columns if c.expression}
    for first in query.first_rows:
        alias, order = re.escape(first.alias), re.escape(first.order)
        kept = rf"\b{alias}\s*(=\s*1|<=\s*1|<\s*2)(?![0-9])"
        declared = rf"`?\b{order}\b`?\s+AS\s+PROCTIME\s*\(\s*\)"  # in a source's DDL
        if first.order.lower() not in computed or not re.search(declared, script, re.I):
            return False
        if not re.search(kept, flink_text, re.I):
            return False
    return True


def _stream_top_n(
    query: SparkQuery,
    sink: KafkaTableSpec,
    sources: Mapping[str, KafkaTableSpec],
    text: str,
    span: tuple[int, int],
) -> SparkQuery | None:
    """The query translated for Structured Streaming with its Top-N (``ROW_NUMBER() OVER
    (PARTITION BY k ORDER BY c [DESC], ...)`` kept ``<= n`` or ``< n``, its rank not written)
    as Flink's append-only Top-N of insert-only sources into an upsert sink, or None for any
    other query. Each run writes the rows that entered a key's top and deletes those pushed out
    of it, as Flink does."""
    flink = text[span[0] : span[1]]
    if not (sink.is_upsert and _plain_inserts(sources)) or query.windows or query.joins:
        return None
    if not (_rows_that_leave(flink) or "").startswith("a Top-N (ROW_NUMBER"):
        return None
    if sorted(s[0] for s in query.stateful) != ["ORDER BY", "OVER"]:
        return None
    streamed = translate_query(with_row_kind(text, *span), streaming=True, top_n=True)
    if len(streamed.top_n) != 1:
        return None
    top = streamed.top_n[0]
    alias = re.escape(top.alias)
    kept = re.findall(rf"\b{alias}\s*(<=|<)\s*([0-9]+)\b", flink, re.I)
    select_list = re.split(r"\bFROM\b", flink, maxsplit=1, flags=re.I)[0]
    written = re.search(rf"\b{alias}\b|(?<!\()\*", select_list, re.I)
    if len(kept) != 1 or len(re.findall(rf"\b{alias}\b", flink, re.I)) != 2 or written:
        return None  # the rank itself written, or another filter on it: Flink updates ranks
    op, number = kept[0]
    limit = int(number) - (1 if op == "<" else 0)
    if limit < 1:
        return None
    return replace(streamed, top_n=(replace(top, limit=limit),))


def _time_attributes_read(
    text: str, sources: Mapping[str, KafkaTableSpec], watermarks: Mapping[str, Watermark]
) -> list[str]:
    """The ``WATERMARK`` columns of ``sources`` that ``text`` names after its first ``FROM``
    (where a join condition would bound them in time)."""
    after = re.split(r"\bFROM\b", text, maxsplit=1, flags=re.IGNORECASE)[-1]
    return [
        f"{name}.{_bare(mark.column)}"
        for name, mark in watermarks.items()
        if name in sources and re.search(rf"\b{re.escape(_bare(mark.column))}\b", after, re.I)
    ]


def _rows_that_leave(text: str) -> str | None:
    """What makes rows leave a recomputed result (``HAVING``, a Top-N), or None."""
    if re.search(r"\bHAVING\b", text, re.IGNORECASE):
        return "HAVING over this query"
    ranked = re.search(r"\b(ROW_NUMBER|RANK|DENSE_RANK)\s*\(", text, re.IGNORECASE)
    if ranked and not re.search(r"(?<![<>!])=\s*1\b", text):
        return f"a Top-N ({ranked.group(1).upper()} beyond the first row)"
    return None


def _mode(
    insert: InsertInto,
    query: SparkQuery,
    sink: KafkaTableSpec,
    sources: Mapping[str, KafkaTableSpec],
    windows: tuple[int, int] | None,
) -> RunMode:
    stateful = query.stateful
    if not stateful:
        return RunMode.INCREMENTAL
    what, line, column = stateful[0]
    if windows is not None:
        period, start = windows
        joins = [s for s in stateful if s[0] in ("JOIN", "OVER", "DISTINCT", "UNION", "LIMIT")]
        if not query.windows or joins:
            what, line, column = (joins or stateful)[0]
            raise FlinkSqlError(
                f"INSERT INTO {insert.target}: {what} keeps state across all records, so a run "
                f"per time partition would give per-partition results, not Flink's. On a "
                f"time-partitioned pipeline only window aggregations (TUMBLE, CUMULATE) run; "
                f"drop the partitions to recompute into an upsert-kafka sink.",
                line=line,
                column=column,
            )
        time_columns = _timestamp_columns(sources)
        for w in query.windows:
            if not _window_fits(w, period, start):
                legacy = " (use TABLE(HOP(...)); the group window HOP runs only with slide = size)"
                raise FlinkSqlError(
                    f"{w.kind} window of {w.size_ms} ms (step {w.step_ms} ms) does not fit the "
                    f"{period} ms time partitions: partition bounds must be window bounds (the "
                    f"partition length a multiple of the window size, or of the slide for HOP, "
                    f"aligned to it){legacy if w.kind == 'HOP' and not w.bounded else ''}.",
                    line=w.line,
                    column=w.column,
                )
            if w.time_column.strip("`") not in time_columns:
                raise FlinkSqlError(
                    f"{w.kind}'s time column {w.time_column} must be the Kafka record timestamp "
                    f"(a column `METADATA FROM 'timestamp'` in every source) on a "
                    f"time-partitioned pipeline: partitions select records by that timestamp.",
                    line=w.line,
                    column=w.column,
                )
        return RunMode.WINDOWS
    if sink.connector == "upsert-kafka":
        moving = sorted(
            n
            for n, spec in sources.items()
            if spec.startup_mode in (StartupMode.GROUP_OFFSETS, StartupMode.LATEST_OFFSET)
        )
        if moving:
            raise FlinkSqlError(
                f"INSERT INTO {insert.target}: the query keeps state ({what}), so each run "
                f"recomputes it from the sources' start; source(s) {', '.join(moving)} start at "
                f"'group-offsets' or 'latest-offset', which move between runs. Set "
                f"'scan.startup.mode' to 'earliest-offset', 'timestamp' or 'specific-offsets'.",
                line=line,
                column=column,
            )
        leaving = _rows_that_leave(query.text)
        if leaving:
            raise FlinkSqlError(
                f"INSERT INTO {insert.target}: {leaving}: a row can leave the result, and each "
                f"run here rewrites the result without deleting the rows that left it, which "
                f"would keep their old values in the upsert topic where Flink deletes them.",
                line=line,
                column=column,
            )
        return RunMode.RECOMPUTE
    raise FlinkSqlError(
        f"INSERT INTO {insert.target}: the query keeps state ({what}); bounded runs give Flink's "
        f"result only by recomputing all records into an 'upsert-kafka' sink (the latest "
        f"value per key is the result), or, for window aggregations, by running per time "
        f"partition. Declare '{insert.target}' with 'connector' = 'upsert-kafka' and a PRIMARY "
        f"KEY, or give the pipeline time-window partitions.",
        line=line,
        column=column,
    )


_CTE = r"\b{}\s+AS\s*\("


def _ctas_inserts(statements: list[Any]) -> list[Any]:
    """``CREATE TABLE t WITH (...) AS SELECT ...`` as the table plus an ``INSERT INTO t``.

    The table declares no columns: its columns are the query's, by name (as Flink derives
    them), and its format encodes whatever the query returns.
    """
    out: list[Any] = []
    for st in statements:
        out.append(st)
        if isinstance(st, CreateTable) and st.as_query is not None:
            if st.columns:
                raise FlinkSqlError(
                    f"CREATE TABLE {st.name} ... AS SELECT takes its columns from the query; "
                    f"declare none (or use CREATE TABLE and INSERT INTO).",
                    line=st.line,
                    column=1,
                )
            out.append(
                InsertInto(
                    st.name,
                    st.qualified_name,
                    st.as_query,
                    sources=st.sources,
                    table=st,
                    line=st.line,
                    query_span=st.query_span,
                )
            )
    return out


def _read_script(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaOptionsError(
            f"Cannot read the Flink SQL file {str(path)!r}: {exc.strerror or exc}."
        ) from None
    except UnicodeDecodeError as exc:
        raise KafkaOptionsError(
            f"The Flink SQL file {str(path)!r} is not UTF-8 text (byte {exc.start})."
        ) from None


def plan_flink_sql(
    script: str | Path,
    *,
    tables: Mapping[str, KafkaTableSpec] | None = None,
    windows: tuple[int, int] | None = None,
) -> FlinkSqlPipeline:
    """Plan a Flink SQL script (text, or the path of a ``.sql`` file).

    Args:
        script: the script, or a path to it.
        tables: Kafka tables declared elsewhere (YAML, Python) that the queries may read or
            write, by name; the script's own ``CREATE TABLE`` statements add to them.
        windows: ``(period_ms, first_start_ms)`` of the time-window partitions the pipeline's
            assets run under, or None when unpartitioned.

    Raises:
        FlinkSqlError: a syntax error, an invalid table, an unknown table, a construct with no
            faithful translation, or a stateful query that bounded runs cannot run as Flink
            would; each with its line and column.
        KafkaOptionsError: a file that cannot be read, or is not UTF-8 text.
    """
    text = _read_script(script) if isinstance(script, Path) else script
    statements = _ctas_inserts(parse_flink_sql(text))
    known: dict[str, KafkaTableSpec] = dict(tables or {})
    declared_at: dict[str, int] = {}
    views: dict[str, tuple[str, tuple[str, ...]]] = {}
    watermarks: dict[str, Watermark] = {}
    settings: dict[str, str] = {}
    warnings: list[str] = []
    for st in statements:
        if isinstance(st, CreateTable):
            if st.spec is None:
                logger.warning(
                    "Table '%s' (line %d) uses connector %r, which this project does not run; "
                    "an INSERT or query that uses it is refused.",
                    st.name,
                    st.line,
                    st.connector,
                )
                continue
            known[st.name] = st.spec
            declared_at[st.name] = st.line
            if st.watermark is not None:
                watermarks[st.name] = st.watermark
        elif isinstance(st, CreateView):
            spark = translate_query(text, *st.query_span)
            if spark.stateful:
                what, line, column = spark.stateful[0]
                raise FlinkSqlError(
                    f"view {st.name}: {what} in a view; write the stateful part in the INSERT "
                    f"INTO query so its run mode is decided there.",
                    line=line,
                    column=column,
                )
            views[st.name] = (spark.text, st.sources)
        elif isinstance(st, SetOption):
            _apply_setting(st, settings, warnings)
    zone = settings.get("table.local-time-zone")
    spark_settings = (("spark.sql.session.timeZone", zone),) if zone else ()
    inserts: list[SqlInsert] = []
    for st in statements:
        if not isinstance(st, InsertInto):
            continue
        sink = known.get(st.target.split(".")[-1])
        if sink is None:
            raise FlinkSqlError(
                f"INSERT INTO {st.target}: no Kafka table of that name is declared (CREATE TABLE "
                f"... WITH ('connector' = 'kafka' | 'upsert-kafka', ...)).",
                line=st.line,
                column=1,
            )
        sources, needed = _resolve_sources(st, text, known, views)
        script, span, flink = text, st.query_span, st.query
        legacy = legacy_session_as_tvf(text, *span)
        if legacy is not None:  # GROUP BY SESSION(...): as the SESSION table function
            script = f"{text[: span[0]]}{legacy}{text[span[1] :]}"
            span, flink = (span[0], span[0] + len(legacy)), legacy
        query = translate_query(script, *span)
        if not sources:
            raise FlinkSqlError(
                f"INSERT INTO {st.target}: the query reads no declared Kafka table.",
                line=st.line,
                column=1,
            )
        event_times = _event_times(st, query, sources, watermarks) if windows is None else None
        session = next((w for w in query.windows if w.kind == "SESSION"), None)
        if session is not None and event_times is None:
            raise FlinkSqlError(
                f"INSERT INTO {st.target}: a SESSION window runs only as an event-time window "
                f"aggregation on a source's WATERMARK column (GROUP BY window_start, window_end"
                f"), on Structured Streaming"
                + (", in a pipeline without time partitions" if windows is not None else "")
                + "; its sessions close on gaps in event time, which bounded runs cannot see.",
                line=session.line,
                column=session.column,
            )
        # an interval join reads the sources' time attributes (Flink drops its late rows)
        timed = _time_attributes_read(flink, sources, watermarks) if query.joins else []
        output_mode = "append"
        if event_times is not None:
            if zone and zone.strip().upper() not in ("UTC", "GMT", "Z", "+00:00", "ETC/UTC"):
                raise FlinkSqlError(
                    f"INSERT INTO {st.target}: SET 'table.local-time-zone' = {zone!r} with an "
                    f"event-time window aggregation: its windows run in UTC here (Flink aligns "
                    f"TIMESTAMP_LTZ windows to the local time zone). Leave the zone at UTC.",
                    line=st.line,
                    column=1,
                )
            mode = RunMode.STATEFUL
            query = translate_query(script, *span, streaming=True)
        elif windows is None and _updates(query, sink, sources):
            mode, output_mode = RunMode.STATEFUL, "update"
            query = translate_query(having_as_row_kind(script, *span), streaming=True)
        elif windows is None and query.joins and not timed and _stream_join(query, sources):
            mode = RunMode.STATEFUL
        elif windows is None and (top_n := _stream_top_n(query, sink, sources, script, span)):
            mode, query = RunMode.STATEFUL, top_n
        elif windows is None and _stream_first_rows(query, sources, flink, script):
            mode = RunMode.STATEFUL
            query = translate_query(script, *span, streaming=True)
        elif windows is None and query.joins and timed:
            _, line, column = next(s for s in query.stateful if s[0] == "JOIN")
            raise FlinkSqlError(
                f"INSERT INTO {st.target}: a join whose query reads the time attribute(s) "
                f"{', '.join(timed)} (an interval join): Flink drops the rows its watermark has "
                f"passed, and no run mode here follows that watermark for joins yet. Join on "
                f"other columns (a regular join, which runs as a stream join) or declare no "
                f"WATERMARK on the sources.",
                line=line,
                column=column,
            )
        else:
            mode = _mode(st, query, sink, sources, windows)
        persisted = tuple(c.name for c in sink.columns if c.expression is None and not c.virtual)
        # Flink maps an INSERT's columns by position; a CTAS table's columns are the query's
        columns = () if st.table is not None and st.table.as_query else st.column_names or persisted
        unknown = [c for c in columns if c not in persisted]
        if unknown:
            raise FlinkSqlError(
                f"INSERT INTO {st.target}: column(s) {', '.join(unknown)} are not writable "
                f"columns of the table ({', '.join(persisted)}).",
                line=st.line,
                column=1,
            )
        inserts.append(
            SqlInsert(
                st.target.split(".")[-1],
                sink,
                sources,
                tuple((v, views[v][0]) for v in needed),
                query,
                columns,
                mode,
                st.statement_set,
                st.line,
                spark_settings,
                max((w.size_ms - w.step_ms for w in query.windows if w.bounded), default=0)
                if mode == RunMode.WINDOWS
                else 0,
                event_times or {},
                output_mode,
                settings.get("table.exec.sink.not-null-enforcer", "ERROR").upper(),
                _watermark_lateness(st, query, sources, watermarks)
                if mode == RunMode.WINDOWS
                else 0,
            )
        )
    targets = [i.name for i in inserts]
    twice = sorted({t for t in targets if targets.count(t) > 1})
    if twice:
        raise KafkaOptionsError(
            f"Table(s) {', '.join(twice)} are the target of more than one INSERT INTO; one asset "
            f"writes each sink: combine the queries with UNION ALL."
        )
    return FlinkSqlPipeline(known, tuple(inserts), settings, tuple(warnings))


def _apply_setting(st: SetOption, settings: dict[str, str], warnings: list[str]) -> None:
    key = st.key
    if key not in SETTINGS:
        message = f"SET '{key}' (line {st.line}) has no effect here; it is ignored."
        logger.warning(message)
        warnings.append(message)
        return
    if key == "execution.runtime-mode" and st.value.lower() not in ("batch", "streaming"):
        raise FlinkSqlError(
            f"SET 'execution.runtime-mode' takes 'batch' or 'streaming', got {st.value!r}",
            line=st.line,
            column=1,
        )
    if key == "table.exec.sink.not-null-enforcer" and st.value.upper() not in ("ERROR", "DROP"):
        raise FlinkSqlError(
            f"SET 'table.exec.sink.not-null-enforcer' takes 'ERROR' or 'DROP', got {st.value!r}",
            line=st.line,
            column=1,
        )
    if key == "parallelism.default" and not re.fullmatch(r"[1-9]\d*", st.value.strip()):
        raise FlinkSqlError(
            f"SET 'parallelism.default' takes a positive integer, got {st.value!r}",
            line=st.line,
            column=1,
        )
    settings[key] = st.value


def _resolve_sources(
    st: InsertInto,
    text: str,
    known: Mapping[str, KafkaTableSpec],
    views: Mapping[str, tuple[str, tuple[str, ...]]],
) -> tuple[dict[str, KafkaTableSpec], list[str]]:
    """The Kafka tables an insert reads (through views) and the views it needs, in order."""
    sources: dict[str, KafkaTableSpec] = {}
    needed: list[str] = []

    def visit(names: tuple[str, ...], query: str, seen: tuple[str, ...]) -> None:
        for qualified in names:
            name = qualified.split(".")[-1]
            if name in views:
                if name in seen:
                    raise FlinkSqlError(f"view {name} refers to itself", line=st.line, column=1)
                visit(views[name][1], views[name][0], (*seen, name))
                if name not in needed:
                    needed.append(name)
            elif name in known:
                sources[name] = known[name]
            elif not re.search(_CTE.format(re.escape(name)), query, re.IGNORECASE):
                raise FlinkSqlError(
                    f"INSERT INTO {st.target}: table '{qualified}' is not declared (CREATE TABLE "
                    f"with connector 'kafka' or 'upsert-kafka', or a view).",
                    line=st.line,
                    column=1,
                )

    visit(st.sources, st.query, ())
    return sources, needed
