"""Stateful queries on Spark Structured Streaming: a materialization is one AvailableNow run.

Flink keeps state across a job's life: windows close when the watermark passes them, and a
record behind the watermark is dropped. Bounded batch runs cannot give that result, so a
stateful query runs as a Structured Streaming query over the table's streaming source
(:mod:`~..source.stream`, the same reader and decoding as a batch run) with
``Trigger.AvailableNow``: it reads everything up to the logs' ends at its start, advances the
watermark, emits what Flink would have emitted by then, records offsets and state in its
checkpoint, and stops. The next run goes on from there.

Each micro-batch is written by :class:`BatchWriter` with the sink's delivery guarantee; under
exactly-once a batch is one Kafka transaction that also commits the batch's id (as the offset
of a fence group), so a batch Spark replays after a crash is not written twice.

Event time is Flink's (:class:`~..options.EventTime`): windows close when Flink fires them.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._spark_session import session_settings
from ..errors import DeserializationError, KafkaConnectorError
from ..options import EventTime
from ..source.offsets import TopicPartition
from ..source.records import (
    DIRTY_COLUMNS,
    ERROR,
    PROVENANCE,
    RECORD_START,
    TOLERATED,
    VALUE_BYTES,
    decode_records,
    native_reading,
    record_fields,
    yields_row,
)
from ..source.stream import stream_frame
from .tables import KafkaClients, ResolvedTable
from .write import check_split_sources, is_exactly_once, open_transaction, write_table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from ..sink.transactional import TransactionalSink

__all__ = [
    "BatchQuery",
    "BatchWriter",
    "StatefulResult",
    "run_stateful_query",
    "stream_table",
]

_log = logging.getLogger(__name__)
#: The prefix of each source's observed metrics in the query's progress.
_INPUT = "dkf_input_"
_EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
#: RocksDB's state store, which ``transformWithState`` (sessions, Top-N) needs.
ROCKSDB_STATE_STORE = (
    "spark.sql.streaming.stateStore.providerClass",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
)
_PUSH_DOWN_FILTERS = ",".join(
    f"org.apache.spark.sql.catalyst.optimizer.{rule}"
    for rule in ("PushDownPredicates", "PushPredicateThroughNonJoin")
)
#: Marks the message of a record that failed a strict format, raised inside a task.
_DIRTY = "DKF_DIRTY_RECORD"


def stream_table(
    spark: SparkSession, table: ResolvedTable, event_time: EventTime | None = None
) -> DataFrame:
    """A streaming DataFrame of ``table``'s clean rows, with its watermark.

    Records its formats tolerate (``ignore-parse-errors``) are skipped and counted (the
    query's observed metrics); a record no format tolerates fails the micro-batch in the task
    that reads it, before anything of the batch is written, as it fails a Flink job.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    spec = table.spec
    derived, shedding = native_reading(spec)
    raw = stream_frame(
        spark,
        spec,
        table.properties,
        table.group_id,
        table.consumer,
        record_fields(spec),
        derived=derived,
        shedding=shedding,
    )
    decoded = decode_records(spec, raw)
    strict = F.col(ERROR).isNotNull() & ~F.col(TOLERATED)
    where = F.concat_ws(
        "",
        F.col(PROVENANCE[0]),
        F.lit("-"),
        F.col(PROVENANCE[1]).cast("string"),
        F.lit("@"),
        F.col(PROVENANCE[2]).cast("string"),
    )
    message = F.concat(
        F.lit(f"{_DIRTY}[{table.name}] "), where, F.lit(": "), F.col(ERROR), F.lit(f" {_DIRTY}")
    )
    checked = decoded.withColumn(
        ERROR, F.when(strict, F.raise_error(message)).otherwise(F.col(ERROR))
    )
    start = F.col(RECORD_START)
    observed = checked.observe(
        f"{_INPUT}{table.name}",
        F.count(F.when(start, 1)).alias("records"),
        F.count(F.when(start & F.col(ERROR).isNotNull(), 1)).alias("dirty"),
        F.coalesce(F.sum(F.when(start, F.col(VALUE_BYTES))), F.lit(0)).alias("bytes"),
    )
    clean = observed.filter(yields_row()).drop(*DIRTY_COLUMNS, *PROVENANCE)
    if event_time is not None:
        column = event_time.column
        if isinstance(clean.schema[column].dataType, T.TimestampNTZType):
            clean = clean.withColumn(column, _instant(column))
        clean = clean.withWatermark(column, event_time.spark_delay)
    return clean


def _instant(column: str) -> Any:
    """A ``TIMESTAMP`` (wall clock) column as the instant it reads as in UTC, exactly: Spark
    keeps a watermark on instants only. Windows over it are the wall clock's windows, and the
    results cast back to ``TIMESTAMP`` in the session's UTC give the wall clock again."""
    from pyspark.sql import functions as F

    c = f"`{column}`"
    micros = (
        f"CAST(unix_date(CAST({c} AS DATE)) AS BIGINT) * 86400000000 "
        f"+ CAST(hour({c}) AS BIGINT) * 3600000000 + CAST(minute({c}) AS BIGINT) * 60000000 "
        f"+ CAST(date_part('SECOND', {c}) * 1000000 AS BIGINT)"
    )
    return F.expr(f"timestamp_micros({micros})")


def _fence_group(transactional_id: str, query_id: str) -> str:
    return f"{transactional_id}-batches-{query_id}"


@dataclass(frozen=True)
class BatchQuery:
    """A stateful query with what it needs besides its streaming frame: ``stream``, whose
    micro-batches may each hold complete groups (e.g. the rows of closed sessions), and
    ``per_batch``, a batch query each micro-batch then goes through before it is written.

    ``settings`` are Spark settings the streaming query starts with (kept in its checkpoint).
    """

    stream: DataFrame
    per_batch: Callable[[DataFrame], DataFrame] | None = None
    settings: tuple[tuple[str, str], ...] = ()

    def result(self) -> DataFrame:
        """What a micro-batch becomes, over the whole stream (for analysis: its schema)."""
        return self.stream if self.per_batch is None else self.per_batch(self.stream)


@dataclass
class BatchWriter:
    """Writes each micro-batch of a stateful query to the sink (Spark's ``foreachBatch``).

    ``at-least-once`` and ``none`` produce the batch (a batch replayed after a crash is
    produced again: at least once). ``exactly-once`` produces each batch in one transaction
    that also commits ``batch id + 1`` as the offset of a fence group of the query (on the sink
    topic's partition 0): a replayed batch whose transaction committed is skipped.
    """

    sink: ResolvedTable
    asset_name: str
    clients: KafkaClients
    log: logging.Logger | Any = _log
    #: The batch query each micro-batch goes through first (:class:`BatchQuery`), if any.
    per_batch: Callable[[DataFrame], DataFrame] | None = None
    #: Records written per batch id.
    written: dict[int, int] = field(default_factory=dict)
    #: Batch ids skipped as already committed (exactly-once replays).
    replayed: list[int] = field(default_factory=list)
    _query_id: str | None = None
    _started: threading.Event = field(default_factory=threading.Event)
    _transaction: TransactionalSink | None = None
    _topic_seen: bool = False

    def started(self, query_id: str) -> None:
        """The query's id (stable across its runs from one checkpoint): batches may go on."""
        self._query_id = query_id
        self._started.set()

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        if not self._started.wait(timeout=60):
            raise KafkaConnectorError("The streaming query never reported its id.")
        if self.per_batch is not None:
            frame = self.per_batch(frame)
        if not is_exactly_once(self.sink):
            self.written[batch_id] = write_table(self.sink, frame, self.clients, self.log).records
            return
        if self._transaction is None:
            self._transaction = open_transaction(self.sink, self.asset_name, self.clients, self.log)
        assert self._query_id is not None
        group = _fence_group(self._transaction.transactional_id, self._query_id)
        fence: TopicPartition = (self.sink.topic, 0)
        if self._sink_exists():
            done = self._transaction.committed_offsets(group, [fence]).get(fence, 0)
        elif frame.persist().count() == 0:  # computed whole once: the write reads the cache
            # the fence lives on the sink topic: until a record creates it, an empty batch has
            # nothing to write and nothing to fence (its replay writes nothing either)
            frame.unpersist()
            self.written[batch_id] = 0
            return
        else:
            done = 0
        if done > batch_id:
            self.log.info(f"Batch {batch_id} was committed before; not written again.")
            self.replayed.append(batch_id)
            # every partition of a batch is consumed, or Spark's state stores do not commit it
            frame.write.format("noop").mode("overwrite").save()
            return
        result = write_table(
            self.sink,
            frame,
            self.clients,
            self.log,
            transaction=self._transaction,
            source_offsets={group: {fence: batch_id + 1}},
        )
        frame.unpersist()
        self.written[batch_id] = result.records

    def _sink_exists(self) -> bool:
        if not self._topic_seen:
            topic = self.sink.topic
            self._topic_seen = topic in self.clients.admin(self.sink).discover([topic])
        return self._topic_seen

    def close(self) -> None:
        """Close the transactional producer, if any."""
        if self._transaction is not None:
            self._transaction.close()
            self._transaction = None


@dataclass(frozen=True)
class StatefulResult:
    """What one AvailableNow run of a stateful query did."""

    #: The micro-batches run, in order.
    batches: tuple[int, ...]
    #: Per source: records read, tolerated dirty records skipped, value bytes.
    records_in: dict[str, int]
    dirty: dict[str, int]
    bytes_in: dict[str, int]
    records_out: int
    #: Rows the stateful operators dropped as late (behind the watermark).
    late_dropped: int
    #: The watermark (epoch ms, Spark's: Flink's plus one) after the run; None without one.
    watermark_ms: int | None
    #: Rows and bytes of state the operators hold after the run.
    state_rows: int
    state_bytes: int
    #: Batches an exactly-once sink had committed before (replays after a crash).
    replayed: tuple[int, ...]
    #: The offsets read up to, ``{"topic/partition": offset}`` of every source.
    end_offsets: dict[str, int]
    elapsed_s: float


def _epoch_ms(text: str | None) -> int | None:
    if not text:
        return None
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _result(progress: list[dict[str, Any]], writer: BatchWriter, elapsed: float) -> StatefulResult:
    records: dict[str, int] = {}
    dirty: dict[str, int] = {}
    size: dict[str, int] = {}
    late = 0
    watermark = None
    state_rows = state_bytes = 0
    ends: dict[str, int] = {}
    for p in progress:
        for name, row in (p.get("observedMetrics") or {}).items():
            if name.startswith(_INPUT):
                table = name[len(_INPUT) :]
                records[table] = records.get(table, 0) + int(row.get("records") or 0)
                dirty[table] = dirty.get(table, 0) + int(row.get("dirty") or 0)
                size[table] = size.get(table, 0) + int(row.get("bytes") or 0)
        operators = p.get("stateOperators") or []
        late += sum(int(op.get("numRowsDroppedByWatermark") or 0) for op in operators)
        if operators:
            state_rows = sum(int(op.get("numRowsTotal") or 0) for op in operators)
            state_bytes = sum(int(op.get("memoryUsedBytes") or 0) for op in operators)
        watermark = _epoch_ms((p.get("eventTime") or {}).get("watermark")) or watermark
        for source in p.get("sources") or []:
            end = source.get("endOffset")
            if isinstance(end, str):
                end = json.loads(end)
            if isinstance(end, dict):
                ends.update({k: int(v) for k, v in end.items()})
    return StatefulResult(
        batches=tuple(int(p["batchId"]) for p in progress),
        records_in=records,
        dirty=dirty,
        bytes_in=size,
        records_out=sum(writer.written.values()),
        late_dropped=late,
        watermark_ms=watermark,
        state_rows=state_rows,
        state_bytes=state_bytes,
        replayed=tuple(writer.replayed),
        end_offsets=ends,
        elapsed_s=elapsed,
    )


def _failure(exc: BaseException, asset_name: str) -> KafkaConnectorError:
    """The error a failed streaming query raises, as ours: a strict record's error whole."""
    text = str(exc)
    # the message a task raised names the record (the plan's text holds the expression only)
    found = re.search(rf"{_DIRTY}\[(.+?)\] (\S+-\d+@\d+): (.*?) {_DIRTY}", text, re.DOTALL)
    if found:
        name, where, error = found.groups()
        return DeserializationError(
            f"A record of source {name!r} at {where} could not be decoded ({error}) and its "
            f"format does not tolerate it (set the format's 'ignore-parse-errors' to skip "
            f"such records). The streaming query of {asset_name!r} stopped before writing "
            f"the micro-batch that holds it; its checkpoint keeps the batches completed before."
        )
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return KafkaConnectorError(
        f"The streaming query of {asset_name!r} failed: {first}. Its checkpoint keeps the "
        f"batches completed before; the next run goes on from there."
    )


def run_stateful_query(
    spark: SparkSession,
    sources: Mapping[str, tuple[ResolvedTable, EventTime | None]],
    query: Callable[[dict[str, DataFrame]], DataFrame | BatchQuery],
    sink: ResolvedTable,
    *,
    checkpoint: str,
    asset_name: str,
    output_mode: str = "append",
    clients: KafkaClients | None = None,
    log: logging.Logger | Any = _log,
) -> StatefulResult:
    """Run ``query`` over the sources' streaming frames once, with ``Trigger.AvailableNow``.

    Args:
        sources: each source's table and event time, by the name the query reads it by.
        query: builds the streaming result from the source frames (or a :class:`BatchQuery`,
            whose per-batch step each micro-batch goes through before it is written).
        sink: the table each micro-batch is written to (:class:`BatchWriter`).
        checkpoint: the query's checkpoint location (a path or any Hadoop-compatible URI); the
            same location continues the same query.
        asset_name: names the query and, under exactly-once, the transactional id.
        output_mode: Spark's output mode: ``append`` (windows once final) or ``update``.

    Raises:
        DeserializationError: a record no format tolerates (the run stops before writing its
            batch; completed batches stay committed).
        KafkaConnectorError: the query failed otherwise.
    """
    from pyspark.errors import StreamingQueryException

    check_split_sources({}, sink.spec, replays=False, stateful=True)
    clients = clients or KafkaClients()
    # Spark pushes a filter that does not read the event time below the watermark, which then
    # follows only the rows that pass it; Flink's follows every row of the source. Filters stay
    # above the watermark while the query runs (its micro-batches are planned meanwhile).
    rules = [r for r in (spark.conf.get(_EXCLUDED_RULES, None) or "").split(",") if r.strip()]
    pushed_down = [(_EXCLUDED_RULES, ",".join([*rules, _PUSH_DOWN_FILTERS]))]
    writer = BatchWriter(sink, asset_name, clients, log)
    with ExitStack() as settings:
        settings.enter_context(session_settings(spark, pushed_down))
        try:
            frames = {n: stream_table(spark, table, when) for n, (table, when) in sources.items()}
            result = query(frames)
            if isinstance(result, BatchQuery):
                writer.per_batch = result.per_batch
                settings.enter_context(session_settings(spark, result.settings))
                result = result.stream
            started = time.monotonic()
            stream = (
                result.writeStream.outputMode(output_mode)
                .foreachBatch(writer)
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .queryName(f"dkf_{asset_name}_{threading.get_ident()}")
            )
            handle = stream.start()
            writer.started(str(handle.id))
            handle.awaitTermination()
        except StreamingQueryException as exc:
            raise _failure(exc, asset_name) from None
        finally:
            writer.close()
    progress = [
        json.loads(p.json) if hasattr(p, "json") else dict(p) for p in handle.recentProgress
    ]
    return _result(progress, writer, time.monotonic() - started)
