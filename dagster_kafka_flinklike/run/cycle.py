"""The materialization cycle: plan → read → decode → (the user's query) → write → commit.

:class:`StreamingRun` strings the phases together for one bounded run over source tables and an
optional sink table; it is what the streaming asset and the IO manager drive, and it runs without
Dagster. A run either fully succeeds and returns the new checkpoint, or raises and leaves the
previous one in place.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import KafkaConnectorError, KafkaOptionsError
from ..options import KafkaTableSpec
from ..sink.partitioners import SinkPartitioner
from ..sink.split_transactions import SplitTransactions
from ..sink.transactional import TransactionalSink, TransactionResult
from ..sink.writer import WriteResult
from ..source.admin import KafkaAdmin
from ..source.enumerator import DEFAULT_MAX_RECORDS_PER_SPLIT, SourcePlan
from ..source.offsets import TopicPartition
from ..state.checkpoint import OffsetsCheckpoint
from . import metrics as m
from .batches import OffsetRanges, replay_plan
from .commit import commit_group_offsets, next_checkpoint
from .decode import DecodedTable, decode_table
from .dirty import NOTHING_WRITTEN, DirtyData, apply_dirty_policy
from .plan import pending_records, plan_table, read_min_splits
from .read import read_table
from .schema import InferredSchema, flattened, infer_schema, with_schema
from .tables import KafkaClients, ResolvedTable, resolve_table
from .windows import (
    TimeWindow,
    TimeWindows,
    WindowOffsets,
    check_retention,
    window_offsets,
    window_spec,
)
from .write import (
    check_split_sources,
    is_exactly_once,
    open_split_transactions,
    open_transaction,
    refuse_splits,
    write_dead_letters,
    write_splits,
    write_table,
    write_topics,
    writes_splits,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_log = logging.getLogger(__name__)

#: A decoder that replaces the table's own decoding in :meth:`StreamingRun.read`: given the
#: resolved table, its raw records, the admin client and the plan, it returns the decoded
#: records (with the error and provenance columns the dirty-data policy reads).
Decoder = Callable[[ResolvedTable, "DataFrame", KafkaAdmin, SourcePlan], DecodedTable]


@dataclass
class SourceRead:
    """What reading one source table produced in a run."""

    table: ResolvedTable
    admin: KafkaAdmin
    plan: SourcePlan
    decoded: DecodedTable
    dirty: DirtyData
    read_s: float
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    #: Why a start moved or a window may be incomplete (offset resets, retention).
    notes: dict[TopicPartition, str] = field(default_factory=dict)
    #: The columns inferred for a table that declares none (:mod:`.schema`).
    schema: InferredSchema | None = None
    #: Whether the dirty-data policy was applied (``dirty`` holds its outcome).
    policy_applied: bool = False
    #: A run over time windows: where its windows stop in the source's partitions.
    windows: WindowOffsets | None = None
    #: Per time window (by key), why it may be incomplete in a partition (retention).
    window_notes: dict[str, dict[TopicPartition, str]] = field(default_factory=dict)

    @property
    def frame(self) -> DataFrame:
        """The source's clean rows (its declared columns)."""
        return self.decoded.frame


@dataclass
class StreamingRun:
    """One bounded run over Kafka source tables, and optionally a Kafka sink table.

    Args:
        spark: the Spark session.
        defaults: connection defaults every table gets unless it sets them (``bootstrap.servers``
            and client properties, e.g. from ``KafkaResource.connection_defaults()``).
        checkpoint: the last successful run's checkpoint, or None for a first run.
        sink: the Kafka sink table, if the run writes to one.
        asset_name: names the stable transactional id of an exactly-once sink.
        max_records_per_split: ranges larger than this are split over several Spark tasks.
        min_splits: read each source with at least this many Spark tasks (large ranges are cut
            to get them); a source's ``scan.parallelism``, when larger, wins for that source.
        windows: read the sources' records of these time windows (a partition, or a backfill's
            range of them) instead of resuming from a checkpoint: each record by its own
            window's rule (:mod:`.windows`), each window's figures and offset ranges recorded
            on their own (:meth:`window_metadata`). Such a run records no checkpoint and commits
            no offsets to the consumer groups (also not in an exactly-once transaction).
        ranges: read exactly these offset ranges (an offset batch, :mod:`.batches`) instead of
            resuming from a checkpoint; like a window, such a run moves no checkpoint.
        schemas: the inferred schemas the last run saved, by source name (for sources that
            declare no columns, :mod:`.schema`).
        gate: decides whether the run may commit, once every source is read and counted, the
            output and the dead letters are delivered, and before anything commits (the
            exactly-once transaction, the checkpoint, the group offsets): the asset's blocking
            checks. It raises to fail the run, which then commits nothing.

    Example:
        >>> run = StreamingRun(spark, {"bootstrap.servers": "127.0.0.1:9092"}, sink=revenue,
        ...                    asset_name="channel_revenue")  # doctest: +SKIP
        >>> run.write(revenue, query(run.read("orders", orders)))  # doctest: +SKIP
        >>> checkpoint = run.commit()  # doctest: +SKIP
    """

    spark: SparkSession
    defaults: Mapping[str, str]
    checkpoint: OffsetsCheckpoint | None = None
    sink: KafkaTableSpec | None = None
    asset_name: str | None = None
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT
    min_splits: int | None = None
    log: logging.Logger | Any = _log
    windows: TimeWindows | None = None
    ranges: OffsetRanges | None = None
    schemas: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    clients: KafkaClients = field(default_factory=KafkaClients)
    gate: Callable[[StreamingRun], None] | None = None
    sources: dict[str, SourceRead] = field(default_factory=dict)
    write_result: WriteResult | None = None
    transaction: TransactionalSink | None = None
    #: The sink's writer with a transaction per source split (``sink.transaction-scope``).
    split_writer: SplitTransactions | None = None
    started: float = field(default_factory=time.monotonic)
    _sink_table: ResolvedTable | None = field(default=None, init=False, repr=False)
    _gated: bool = field(default=False, init=False, repr=False)
    _releases: list[Callable[[], None]] = field(default_factory=list, init=False, repr=False)

    @property
    def window(self) -> TimeWindow | None:
        """The span of the run's time windows (what it reads), if it runs over windows."""
        return self.windows.span if self.windows is not None else None

    @property
    def replaying(self) -> bool:
        """Whether the run reads a time window or an offset batch instead of resuming from
        the checkpoint (it then neither reads nor moves the checkpoint or the group offsets)."""
        return self.window is not None or self.ranges is not None

    def resolve(
        self, spec: KafkaTableSpec, name: str | None = None, *, writing: bool = False
    ) -> ResolvedTable:
        """``spec`` resolved against the run's connection defaults, checked for its use here
        (:meth:`~dagster_kafka_flinklike.options.KafkaTableSpec.for_role`): the run's sink and
        tables it writes as sinks, the others as sources."""
        is_sink = spec is self.sink
        if is_sink and self._sink_table is not None:
            return self._sink_table
        used = spec.for_role("sink" if is_sink or writing else "source")
        if self.window is not None and not is_sink:
            used = window_spec(used, self.window)
        table = resolve_table(used, self.defaults, name)
        if is_sink:
            self._sink_table = table
        return table

    def begin(self) -> None:
        """Prepare the sink before anything is read: under exactly-once, fence the previous run
        of the asset (``init_transactions``), so the offsets read next are final."""
        if self.sink is None or self.transaction is not None or self.split_writer is not None:
            return
        table = self.resolve(self.sink, self.asset_name)
        if writes_splits(table):
            self.split_writer = open_split_transactions(
                table, self.asset_name, self.clients, self.log
            )
        elif is_exactly_once(table):
            self.transaction = open_transaction(table, self.asset_name, self.clients, self.log)

    def read(self, name: str, spec: KafkaTableSpec, decode: Decoder | None = None) -> DataFrame:
        """Plan, read and decode source ``name``; apply the dirty-data policy.

        Returns the table's clean rows as a DataFrame (columns as declared), or, with
        ``decode``, the frame of what ``decode`` returns (which then decodes the raw records
        instead of the table's format and schema inference).
        """
        began = time.monotonic()
        self.begin()
        table = self.resolve(spec, name)
        admin = self.clients.admin(table)
        min_splits = read_min_splits(table.spec, self.min_splits)
        max_records_per_split = self.max_records_per_split
        if self.split_writer is not None:  # a split is a whole partition's range: never cut
            if min_splits is not None:
                self.log.warning(
                    f"Source {name}: read with one task per partition, not at least "
                    f"{min_splits} tasks: under 'sink.transaction-scope' = 'split' each "
                    f"partition's range is one split, never cut."
                )
            min_splits, max_records_per_split = None, sys.maxsize
        if self.ranges is not None:
            plan = replay_plan(
                table,
                admin,
                self.ranges.get(name, {}),
                max_records_per_split=self.max_records_per_split,
                min_splits=min_splits,
            )
        else:
            plan = plan_table(
                table,
                admin,
                None if self.replaying else self.checkpoint,
                transaction=None if self.replaying else (self.transaction or self.split_writer),
                sink=self._sink_table,
                max_records_per_split=max_records_per_split,
                min_splits=min_splits,
            )
        notes = dict(plan.resets)
        for reason in notes.values():
            self.log.warning(reason)
        offsets, window_notes = self._window_offsets(table, admin, plan)
        raw = read_table(self.spark, table, plan, keep=_kept_fields(offsets))
        schema = None
        if decode is not None:
            decoded = decode(table, raw, admin, plan)
            return self._decoded(name, table, admin, plan, notes, decoded, began=began)
        if table.spec.infers_schema:
            schema = infer_schema(table, raw, admin, plan, self.schemas.get(name))
            for change in schema.changes:
                self.log.info(f"Source {name}: inferred schema {change}.")
            for change in schema.refused:
                self.log.warning(
                    f"Source {name}: {change} refused as incompatible; records that do not fit "
                    f"{change.before} are dirty data."
                )
            table = with_schema(table, schema)
        decoded = decode_table(table, raw, self.windows, offsets)
        if schema is not None:
            decoded = replace(decoded, frame=flattened(decoded.frame, table, schema))
        frame = self._decoded(name, table, admin, plan, notes, decoded, schema, began=began)
        self.sources[name].windows, self.sources[name].window_notes = offsets, window_notes
        return frame

    def _window_offsets(
        self, table: ResolvedTable, admin: KafkaAdmin, plan: SourcePlan
    ) -> tuple[WindowOffsets | None, dict[str, dict[TopicPartition, str]]]:
        """A run over time windows: where they stop in the source's partitions, and why any may
        be incomplete (retention; logged).

        Raises:
            OffsetsError: retention deleted records of a window and no reset strategy is set.
        """
        if self.windows is None:
            return None, {}
        offsets = window_offsets(admin, self.windows, plan.stops)
        notes = check_retention(table, admin, offsets.ranges, self.windows.windows)
        for found in notes.values():
            for reason in found.values():
                self.log.warning(reason)
        return offsets, notes

    def _decoded(
        self,
        name: str,
        table: ResolvedTable,
        admin: KafkaAdmin,
        plan: SourcePlan,
        notes: dict[TopicPartition, str],
        decoded: DecodedTable,
        schema: InferredSchema | None = None,
        *,
        began: float,
    ) -> DataFrame:
        """Record what reading source ``name`` produced; apply the dirty-data policy now if its
        statistics are known, else once the pass that reads the records has counted them."""
        read = SourceRead(table, admin, plan, decoded, DirtyData(name, 0, 0), 0.0)
        read.notes, read.schema = notes, schema
        self.sources[name] = read
        if decoded.counts.counted:
            self._apply_dirty_data_policy()
        read.read_s = time.monotonic() - began
        return read.frame

    def apply_dirty_data_policy(self) -> list[DirtyData]:
        """Apply the dirty-data policy now to the sources read so far, for a run that hands its
        rows on instead of writing them (an IO manager's input): their statistics come from
        one job of their own when no write has counted them.

        Raises:
            DeserializationError: dirty records a source does not tolerate.
        """
        return self._apply_dirty_data_policy()

    def _apply_dirty_data_policy(self) -> list[DirtyData]:
        """Apply the dirty-data policy to the sources not policy_applied yet (their statistics come
        from the pass that read them, or a pass of their own if none did).

        Raises:
            DeserializationError: dirty records a source does not tolerate.
        """
        for read in self.sources.values():
            if not read.policy_applied:
                read.dirty = apply_dirty_policy(
                    read.table, read.decoded, self.log, self.failure_outcome
                )
                read.policy_applied = True
        return [read.dirty for read in self.sources.values()]

    @property
    def failure_outcome(self) -> str:
        """What the run leaves if it fails now, before its commit (for error messages)."""
        if self.transaction is not None:
            return (
                "Nothing was committed (the transaction is aborted) and the checkpoint did not "
                "advance."
            )
        if self.split_writer is not None:
            return (
                "Nothing was committed (every split's transaction is aborted) and the "
                "checkpoint did not advance."
            )
        if self.write_result is not None:
            return (
                f"The checkpoint did not advance; the clean records were written and stay "
                f"({self.write_result.records} record(s); at-least-once: the run's retry writes "
                f"them again), and the consumer groups' offsets did not move."
            )
        return NOTHING_WRITTEN

    def _decide(self) -> None:
        """Let the run's ``gate`` decide (once) whether it may commit: called with every source
        read and counted, the output and the dead letters delivered, and nothing committed.

        Raises:
            BlockingCheckError: a blocking check failed (raised by the gate).
        """
        if self.gate is not None and not self._gated:
            self._gated = True
            self.gate(self)

    def write(self, spec: KafkaTableSpec, frame: DataFrame) -> WriteResult:
        """Write ``frame`` to ``spec``'s topic with its delivery guarantee, then apply the
        dirty-data policy with the sources' statistics that writing counted.

        Exactly-once: output, dead letters and every source's stop offsets commit in one
        transaction, after the policy passed (a run it fails commits nothing). At-least-once: a
        run the policy fails has written the clean records it read, and does not advance; its
        retry writes them again (as Flink's at-least-once sinks replay since the last
        checkpoint).
        """
        if spec is self.sink:
            self.begin()
        table = self.resolve(spec, self.asset_name if spec is self.sink else None, writing=True)
        if spec is self.sink and self.split_writer is not None:
            self.write_result = self._write_splits(table, frame, self.split_writer)
            return self.write_result
        transaction = self.transaction if spec is self.sink else None
        self.write_result = write_table(
            table,
            frame,
            self.clients,
            self.log,
            transaction=transaction,
            source_offsets=self._source_offsets(),
            dirty=self._apply_dirty_data_policy,
            ready=self._decide,
        )
        self._apply_dirty_data_policy()
        if transaction is not None:
            self._forget_written_dead_letters()
        return self.write_result

    def _write_splits(
        self, table: ResolvedTable, frame: DataFrame, writer: SplitTransactions
    ) -> WriteResult:
        """Write the run's one source with a transaction per split; the dirty-data policy and
        the gate decide once every split is prepared (a refusal aborts them all)."""
        specs = {name: read.table.spec for name, read in self.sources.items()}
        check_split_sources(specs, table.spec, replays=self.replaying)
        (read,) = self.sources.values()

        def decide() -> None:
            self._apply_dirty_data_policy()
            self._decide()

        return write_splits(table, frame, writer, list(read.plan.splits), decide)

    def write_topics(
        self, outputs: Sequence[tuple[str, DataFrame, SinkPartitioner]]
    ) -> WriteResult:
        """Write encoded frames (``key``, ``value``) to several topics with the client settings
        and delivery guarantee of the run's ``sink`` (whose own topic is not written): a
        pipeline whose rows go to many topics. Exactly-once: every topic, the dead letters and
        the sources' stop offsets commit in one transaction.

        Raises:
            KafkaOptionsError: the run has no sink table.
        """
        if self.sink is None:
            raise KafkaOptionsError("write_topics needs the run's sink table (its client).")
        self.begin()
        if self.split_writer is not None:
            raise refuse_splits("it writes several topics, which commit together")
        table = self.resolve(self.sink, self.asset_name)
        self.write_result = write_topics(
            table,
            outputs,
            self.log,
            transaction=self.transaction,
            source_offsets=self._source_offsets(),
            dirty=self._apply_dirty_data_policy,
            ready=self._decide,
        )
        self._apply_dirty_data_policy()
        if self.transaction is not None:
            self._forget_written_dead_letters()
        return self.write_result

    def _source_offsets(self) -> dict[str, dict[TopicPartition, int]]:
        """Each source consumer group's stop offsets (what an exactly-once run commits)."""
        return {
            read.admin.group_id: dict(read.plan.stops)
            for read in self.sources.values()
            if read.admin.group_id and not self.replaying
        }

    def _forget_written_dead_letters(self) -> None:
        """Drop the dead letters just written from each source's dirty data, so that no later
        step writes them again."""
        for read in self.sources.values():
            read.dirty = _dead_letters_written(read.dirty)

    def commit(self) -> OffsetsCheckpoint | None:
        """The new checkpoint; also commits it to each source's consumer group (monitoring).

        Dead letters not written in a transaction are written first (at-least-once), so a run
        that fails to write them does not advance; then the run's ``gate`` decides. A run over
        a time window or an offset batch moves no checkpoint: it returns None and commits
        nothing to the groups.
        """
        tables = {name: read.table for name, read in self.sources.items()}
        write_dead_letters(tables, self._apply_dirty_data_policy())
        self._forget_written_dead_letters()
        self._decide()
        for read in self.sources.values():
            read.committed = commit_group_offsets(
                read.table.name,
                read.admin,
                read.plan.stops,
                commit=not self.replaying
                and (
                    self.split_writer is not None  # the progress group alone is not enough
                    or (self.transaction is None and read.table.commit_offsets)
                ),
                log=self.log,
            )
        if self.replaying:
            return None
        stops = {name: read.plan.stops for name, read in self.sources.items()}
        return next_checkpoint(self.checkpoint, stops)

    def on_close(self, release: Callable[[], None]) -> None:
        """Call ``release`` when the run closes: a decoder's cached frames, which the commit
        (dead letters, statistics) may still read."""
        self._releases.append(release)

    def close(self) -> None:
        """Release the transactional producer and what was registered with :meth:`on_close`
        (the run itself caches no data)."""
        try:
            while self._releases:
                self._releases.pop()()
        finally:
            if self.transaction is not None:
                self.transaction.close()
            if self.split_writer is not None:
                self.split_writer.close()

    def metadata(self) -> dict[str, Any]:
        """The run's metrics under their Flink names (:mod:`.metrics`), for metadata.

        A run over one time window records that window's figures (:meth:`window_metadata`); a
        run over several, its totals over their span and every window's offset ranges.
        """
        elapsed = max(time.monotonic() - self.started, 1e-9)
        reads = list(self.sources.values())
        records_in = sum(r.decoded.stats.records for r in reads)
        dirty = sum(r.decoded.stats.dirty for r in reads)
        out: dict[str, Any] = {
            m.NUM_RECORDS_IN.name: records_in,
            m.NUM_BYTES_IN.name: sum(r.decoded.stats.bytes for r in reads),
            m.NUM_RECORDS_IN_PER_SECOND.name: round(records_in / elapsed, 1),
            **_dirty_metrics(records_in, dirty),
            m.DURATION.name: round(elapsed, 3),
        }
        newest = [r.decoded.stats.newest_timestamp_ms for r in reads]
        stamps = [t for t in newest if t]
        if stamps:
            lag = max(int(time.time() * 1000) - max(stamps), 0)
            out[m.CURRENT_EMIT_EVENT_TIME_LAG.name] = lag
        ends = self._end_offsets()
        ranges = {
            name: {tp: (read.plan.starts[tp], stop) for tp, stop in read.plan.stops.items()}
            for name, read in self.sources.items()
        }
        out.update(self._offsets_metadata(ranges, ends, committed=True))
        if self.windows is not None:
            out.update(self._span_metadata())
            if len(self.windows.keys) == 1:
                out.update(self._window_figures(self.windows.keys[0], ends))
        if self.write_result is not None:
            out.update(write_metrics(self.write_result, elapsed))
        return out

    def window_metadata(self) -> dict[str, dict[str, Any]]:
        """Each time window's own figures, by key, as a run over that window alone records them:
        its records, dirty and late records, bounds and state, offset ranges (``windows``,
        ``offsets``) and notes ({} for a run over no window)."""
        if self.windows is None:
            return {}
        ends = self._end_offsets()
        return {key: self._window_figures(key, ends) for key in self.windows.keys}

    def _end_offsets(self) -> dict[str, dict[TopicPartition, int] | None]:
        """Each source's end offsets now (for its pending records); None for a source whose
        cluster does not answer.

        The figures are asked after the write (and the commit): a cluster that stops answering
        then must not fail a run whose output is written, so its pending records are left out
        of the metadata, with a warning, instead.
        """
        ends: dict[str, dict[TopicPartition, int] | None] = {}
        for name, read in self.sources.items():
            if not read.plan.stops:
                ends[name] = {}
                continue
            try:
                ends[name] = read.admin.end_offsets(list(read.plan.stops))
            except KafkaConnectorError as exc:
                self.log.warning(
                    f"Source {name}: its pending records are not recorded; the cluster did not "
                    f"list its end offsets after the write ({exc})."
                )
                ends[name] = None
        return ends

    def _offsets_metadata(
        self,
        ranges: Mapping[str, Mapping[TopicPartition, tuple[int, int]]],
        ends: Mapping[str, Mapping[TopicPartition, int] | None],
        *,
        committed: bool,
    ) -> dict[str, Any]:
        """Per source partition, the offset range ``[start, stop)`` read (``ranges``, by source)
        and what remains beyond it (None where the end offsets are unknown); with
        ``committed``, the consumer group's offset after the run."""
        offsets: dict[str, Any] = {}
        pending_total: int | None = 0
        for name, found in ranges.items():
            read = self.sources[name]
            stops = {tp: stop for tp, (_, stop) in found.items()}
            known = ends[name]
            pending: Mapping[TopicPartition, int | None] = (
                pending_records({tp: known.get(tp, s) for tp, s in stops.items()}, stops)
                if known is not None
                else dict.fromkeys(stops)
            )
            for tp, (start, stop) in sorted(found.items()):
                left = pending[tp]
                if pending_total is not None:
                    pending_total = None if left is None else pending_total + left
                offsets[f"{name}/{tp[0]}-{tp[1]}"] = {
                    m.START_OFFSET.name: start,
                    m.END_OFFSET.name: stop,
                    m.CURRENT_OFFSET.name: stop,
                    m.COMMITTED_OFFSET.name: read.committed.get(tp) if committed else None,
                    m.PARTITION_PENDING.name: left,
                }
        if pending_total is None:  # unknown: left out rather than a wrong 0
            return {m.OFFSETS: offsets}
        return {m.PENDING_RECORDS.name: pending_total, m.OFFSETS: offsets}

    def _span_metadata(self) -> dict[str, Any]:
        """A run over time windows: their span, its state, the late records, and each window's
        offset ranges."""
        assert self.windows is not None
        span = self.windows.span
        out: dict[str, Any] = {
            m.WINDOW_START.name: span.start_ms,
            m.WINDOW_END.name: span.end_ms,
            m.WINDOW_STATE.name: span.state(),
            m.LATE_RECORDS.name: sum(r.decoded.stats.late for r in self.sources.values()),
        }
        ranges: dict[str, dict[str, list[int]]] = {key: {} for key in self.windows.keys}
        for name, read in self.sources.items():
            for key, found in (read.windows.ranges if read.windows else {}).items():
                for (topic, p), (start, stop) in sorted(found.items()):
                    ranges[key][f"{name}/{topic}-{p}"] = [start, stop]
        out[m.WINDOWS] = ranges
        notes = [
            note
            for read in self.sources.values()
            for found in read.window_notes.values()
            for note in found.values()
        ]
        if notes:
            out[m.WINDOW_NOTES] = notes
        return out

    def _window_figures(
        self, key: str, ends: Mapping[str, Mapping[TopicPartition, int] | None]
    ) -> dict[str, Any]:
        """Time window ``key``'s own figures (see :meth:`window_metadata`)."""
        assert self.windows is not None
        window = self.windows.window(key)
        position = self.windows.keys.index(key)
        counts = [
            r.decoded.stats.windows[position]
            for r in self.sources.values()
            if r.decoded.stats.windows
        ]
        records = sum(c.records for c in counts)
        found = {n: r.windows.ranges[key] for n, r in self.sources.items() if r.windows}
        out: dict[str, Any] = {
            m.NUM_RECORDS_IN.name: records,
            **_dirty_metrics(records, sum(c.dirty for c in counts)),
            m.WINDOW_START.name: window.start_ms,
            m.WINDOW_END.name: window.end_ms,
            m.WINDOW_STATE.name: window.state(),
            m.LATE_RECORDS.name: sum(c.late for c in counts),
            **self._offsets_metadata(found, ends, committed=False),
            m.WINDOWS: {
                key: {
                    f"{name}/{tp[0]}-{tp[1]}": [start, stop]
                    for name, ranges in found.items()
                    for tp, (start, stop) in sorted(ranges.items())
                }
            },
        }
        notes = [
            note for r in self.sources.values() for note in r.window_notes.get(key, {}).values()
        ]
        if notes:
            out[m.WINDOW_NOTES] = notes
        return out


def _dirty_metrics(records: int, dirty: int) -> dict[str, Any]:
    """The dirty-data figures of ``records`` records of which ``dirty`` did not decode."""
    return {
        m.NUM_RECORDS_IN_ERRORS.name: dirty,
        m.DIRTY_RECORDS.name: dirty,
        m.DIRTY_RATIO.name: round(dirty / records, 6) if records else 0.0,
    }


def _kept_fields(offsets: WindowOffsets | None) -> tuple[str, ...]:
    """Raw fields every record keeps: a run over time windows of several topics tells a
    record's window stops by its topic."""
    if offsets is None or len({topic for topic, _ in offsets.stops}) < 2:
        return ()
    return ("topic",)


def write_metrics(result: WriteResult, elapsed_s: float) -> dict[str, Any]:
    """The metrics of one write (and of its transaction under exactly-once)."""
    out: dict[str, Any] = {
        m.NUM_RECORDS_OUT.name: result.records,
        m.NUM_BYTES_OUT.name: result.bytes,
        m.NUM_RECORDS_OUT_PER_SECOND.name: round(result.records / max(elapsed_s, 1e-9), 1),
        m.CURRENT_SEND_TIME.name: round(result.send_ms, 1),
        m.NUM_RECORDS_OUT_ERRORS.name: result.failed,
    }
    if isinstance(result, TransactionResult):
        out.update(
            {
                m.TRANSACTIONAL_ID.name: result.transactional_id,
                m.PRODUCER_ID.name: result.producer_id,
                m.PRODUCER_EPOCH.name: result.producer_epoch,
                m.TRANSACTION_DURATION.name: result.transaction_ms,
                m.TRANSACTION_TIMEOUT.name: result.timeout_ms,
                m.COMMIT_ATTEMPTS.name: result.commit_attempts,
            }
        )
    return out


def _dead_letters_written(dirty: DirtyData) -> DirtyData:
    """``dirty`` once its dead letters are written (they must not be written twice)."""
    return replace(dirty, dead_letters=None)
