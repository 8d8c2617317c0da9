"""One bounded run over Kafka tables: plan → read → decode → (query) → write → checkpoint.

Independent of Dagster: the asset decorator and the IO manager drive it. A run either fully
succeeds and returns the new checkpoint, or raises and leaves the previous one in place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import DeserializationError, KafkaOptionsError
from .options import DeliveryGuarantee, KafkaTableSpec, client_config
from .sink.serializer import serialize
from .sink.transactional import TransactionalSink, TransactionResult, transactional_id
from .sink.writer import WriteResult, write
from .source._admin import KafkaAdmin
from .source.enumerator import SourcePlan, plan_source
from .source.offsets import TopicPartition
from .source.reader import read_splits
from .source.records import ERROR, PROVENANCE, TOLERATED, decode_records, record_fields
from .state.checkpoint import OffsetsCheckpoint

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_log = logging.getLogger(__name__)
DIRTY_SAMPLES = 5
#: Headers of a dead-letter record: where it came from and why it was skipped.
DEAD_LETTER_HEADERS = ("source.topic", "source.partition", "source.offset", "error")


@dataclass
class SourceRead:
    """What reading one source table produced."""

    name: str
    spec: KafkaTableSpec
    admin: KafkaAdmin
    plan: SourcePlan
    frame: DataFrame
    cached: DataFrame
    records_in: int
    bytes_in: int
    dirty: int
    dirty_samples: list[dict[str, Any]]
    read_s: float
    newest_timestamp_ms: int | None = None
    committed: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass
class KafkaRun:
    """A bounded run over Kafka source tables (and optionally a Kafka sink table).

    Args:
        spark: the Spark session.
        properties_for: the effective client properties of a table (resource defaults merged).
        checkpoint: the last successful run's checkpoint, or None for a first run.
        max_records_per_split: ranges larger than this are split over several Spark tasks.
        min_splits: read with at least this many Spark tasks (large ranges are cut to get them).
        sink: the Kafka sink table, if the run writes to one.
        asset_name: names the stable transactional id of an exactly-once sink.
    """

    spark: SparkSession
    properties_for: Callable[[KafkaTableSpec], dict[str, str]]
    checkpoint: OffsetsCheckpoint | None = None
    max_records_per_split: int = 2_000_000
    min_splits: int | None = None
    sink: KafkaTableSpec | None = None
    asset_name: str | None = None
    log: logging.Logger | Any = _log
    sources: dict[str, SourceRead] = field(default_factory=dict)
    write_result: WriteResult | None = None
    started: float = field(default_factory=time.monotonic)
    transaction: TransactionalSink | None = None
    dead_letters: list[tuple[KafkaTableSpec, DataFrame]] = field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        """True when the sink commits output and source offsets in one Kafka transaction."""
        return self.sink is not None and (
            self.sink.delivery_guarantee == DeliveryGuarantee.EXACTLY_ONCE
        )

    def begin(self) -> None:
        """Prepare the sink before anything is read.

        For exactly-once this fences the previous run of the asset (``init_transactions``
        aborts or completes its transaction), so the offsets read next are final.
        """
        if not self.exactly_once or self.transaction is not None:
            return
        assert self.sink is not None
        if not self.asset_name:
            raise KafkaOptionsError("An exactly-once sink needs the asset's name.")
        prefix = self.sink.transactional_id_prefix or ""
        self.transaction = TransactionalSink(
            self.sink.topics[0],
            self.properties_for(self.sink),
            transactional_id(prefix, self.asset_name),
            partitioner=self.sink.sink_partitioner,
            log=self.log,
        )
        self.transaction.begin()

    def _previous_offsets(
        self, name: str, spec: KafkaTableSpec, admin: KafkaAdmin, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int] | None:
        """Where the run starts: Kafka's committed group offsets under exactly-once (they are
        the authoritative checkpoint), else the last materialization's checkpoint."""
        if self.transaction is None:
            previous = self.checkpoint.offsets(name) if self.checkpoint else None
            return dict(previous) if previous else None
        if not admin.group_id:
            raise KafkaOptionsError(
                f"Exactly-once commits the offsets of source {name!r} to its consumer group: "
                f"set 'properties.group.id' on the table (or give the table a name).",
                keys=("properties.group.id",),
            )
        source_servers = self.properties_for(spec).get("bootstrap.servers")
        if source_servers != self.transaction.properties.get("bootstrap.servers"):
            raise KafkaOptionsError(
                f"Exactly-once commits the offsets of source {name!r} in the sink's transaction, "
                f"so source and sink must be on one Kafka cluster; their "
                f"'properties.bootstrap.servers' differ.",
                keys=("properties.bootstrap.servers", "sink.delivery-guarantee"),
            )
        committed = self.transaction.committed_offsets(admin.group_id, partitions)
        return committed or None

    def read(self, name: str, spec: KafkaTableSpec) -> DataFrame:
        """Plan and read source ``name``; fail on dirty records unless the table ignores them.

        Returns the table's clean rows as a DataFrame (columns as declared).
        """
        began = time.monotonic()
        self.begin()
        properties = self.properties_for(spec)
        admin = KafkaAdmin(properties, group_id=spec.effective_group_id)
        if spec.check_duplicated_group_id and admin.active_members():
            raise KafkaOptionsError(
                f"Consumer group {admin.group_id!r} has active members and "
                f"'scan.check.duplicated.group.id' is true: another job uses the group.",
                keys=("scan.check.duplicated.group.id", "properties.group.id"),
            )
        partitions = admin.partitions(spec.topics, spec.topic_pattern)
        previous = self._previous_offsets(name, spec, admin, partitions)
        plan = plan_source(
            spec,
            partitions,
            admin,
            previous,
            max_records_per_split=self.max_records_per_split,
            min_splits=self.min_splits,
        )
        for reason in plan.resets.values():
            self.log.warning(reason)
        consumer = client_config(properties, role="consumer")
        raw = read_splits(self.spark, plan.splits, consumer, record_fields(spec))
        decoded = decode_records(spec, raw).persist()
        stats = self._stats(decoded)
        read = SourceRead(
            name=name,
            spec=spec,
            admin=admin,
            plan=plan,
            frame=decoded.filter(decoded[ERROR].isNull()).drop(ERROR, TOLERATED, *PROVENANCE),
            cached=decoded,
            records_in=stats["records"],
            bytes_in=stats["bytes"],
            dirty=stats["dirty"],
            dirty_samples=[],
            read_s=time.monotonic() - began,
            newest_timestamp_ms=stats["newest"],
        )
        self.sources[name] = read
        if read.dirty:
            self._handle_dirty(read, decoded, stats["strict"])
        return read.frame

    def _stats(self, decoded: DataFrame) -> dict[str, Any]:
        from pyspark.sql import functions as F

        row = decoded.agg(
            F.count(F.lit(1)).alias("records"),
            F.count(F.col(ERROR)).alias("dirty"),
            F.count(F.when(F.col(ERROR).isNotNull() & ~F.col(TOLERATED), 1)).alias("strict"),
            F.coalesce(F.sum(F.coalesce(F.length("__dkf_value"), F.lit(0))), F.lit(0)).alias(
                "bytes"
            ),
            F.max(F.unix_millis(F.col("__dkf_timestamp"))).alias("newest"),
        ).collect()[0]
        return row.asDict()

    def _handle_dirty(self, read: SourceRead, decoded: DataFrame, strict: int) -> None:
        """Fail on dirty records the table does not tolerate; else skip, count and collect.

        Records a format tolerates (its ``ignore-parse-errors``) never fail the run;
        ``ingestion.error-tolerance.max-count`` bounds every skipped record.
        """
        rows = decoded.filter(decoded[ERROR].isNotNull())
        samples = [
            {
                "topic": r["__dkf_topic"],
                "partition": r["__dkf_partition"],
                "offset": r["__dkf_offset"],
                "error": r[ERROR],
                "value": (r["__dkf_value"] or b"")[:200].decode("utf-8", "replace"),
            }
            for r in rows.select(ERROR, *PROVENANCE).limit(DIRTY_SAMPLES).collect()
        ]
        read.dirty_samples = samples
        first = samples[0]
        where = f"{first['topic']}-{first['partition']}@{first['offset']}"
        spec = read.spec
        limit = spec.error_tolerance_max_count
        reason = None
        if strict and not spec.ignore_errors:
            reason = (
                f"could not be decoded (first at {where}: {first['error']}); set "
                f"'ingestion.ignore-errors' = 'true' to skip and collect them"
            )
        elif limit >= 0 and read.dirty > limit:
            reason = f"exceed 'ingestion.error-tolerance.max-count' = {limit} (first at {where})"
        if reason is not None:
            raise DeserializationError(
                f"{read.dirty} dirty record(s) of source {read.name!r} {reason}. Nothing was "
                f"written and the checkpoint did not advance.",
                topic=first["topic"],
                partition=first["partition"],
                offset=first["offset"],
            )
        self.log.warning(
            f"Skipped {read.dirty} dirty record(s) of source {read.name!r}; samples: {samples}"
        )
        if spec.dead_letter_topic:
            self.dead_letters.append((spec, dead_letter_records(rows)))

    def write(self, spec: KafkaTableSpec, frame: DataFrame) -> WriteResult:
        """Serialize ``frame`` and produce it to the sink table's topic.

        Exactly-once: output, dead letters and every source's stop offsets commit in one
        transaction. Otherwise the table's delivery guarantee applies.
        """
        if spec is self.sink:
            self.begin()
        encoded = serialize(spec, frame)
        if self.transaction is not None and spec is self.sink:
            offsets = {
                read.admin.group_id: dict(read.plan.stops)
                for read in self.sources.values()
                if read.admin.group_id
            }
            dead = [(s.dead_letter_topic or "", records) for s, records in self.dead_letters]
            self.write_result = self.transaction.write(encoded, offsets, extra=dead)
            self.dead_letters = []
            return self.write_result
        self.write_result = write(
            encoded,
            spec.topics[0],
            self.properties_for(spec),
            spec.delivery_guarantee,
            parallelism=spec.sink_parallelism,
            partitioner=spec.sink_partitioner,
        )
        self.log.info(
            f"Wrote {self.write_result.records} record(s) to {spec.topics[0]!r} "
            f"({spec.delivery_guarantee.value}); recording the checkpoint next."
        )
        return self.write_result

    def commit(self) -> OffsetsCheckpoint:
        """The new checkpoint; also commits it to each source's consumer group (monitoring).

        Dead letters not written in a transaction are written first (at-least-once), so a run
        that fails to write them does not advance.
        """
        for source_spec, records in self.dead_letters:
            write(records, source_spec.dead_letter_topic or "", self.properties_for(source_spec))
        self.dead_letters = []
        merged: dict[str, Mapping[TopicPartition, int]] = {}
        if self.checkpoint is not None:
            merged.update(self.checkpoint.sources)
        for name, read in self.sources.items():
            merged[name] = dict(read.plan.stops)
            try:
                if self.transaction is None:
                    read.admin.commit_group_offsets(read.plan.stops)
                groups = read.admin.group_offsets(list(read.plan.stops))
                read.committed = {tp: o for tp, o in groups.items() if o is not None}
            except Exception as exc:  # monitoring only: the checkpoint is authoritative
                self.log.warning(f"Could not commit offsets of {name!r} to its group: {exc}")
        return OffsetsCheckpoint(merged)

    def close(self) -> None:
        """Release cached data and the transactional producer."""
        for read in self.sources.values():
            read.cached.unpersist()
        if self.transaction is not None:
            self.transaction.close()

    def metadata(self) -> dict[str, Any]:
        """Flink-named metrics of the run, for materialization metadata."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        records_in = sum(r.records_in for r in self.sources.values())
        out: dict[str, Any] = {
            "numRecordsIn": records_in,
            "numBytesIn": sum(r.bytes_in for r in self.sources.values()),
            "numRecordsInPerSecond": round(records_in / elapsed, 1),
            "numRecordsInErrors": sum(r.dirty for r in self.sources.values()),
            "dirtyRecords": sum(r.dirty for r in self.sources.values()),
            "duration_s": round(elapsed, 3),
        }
        newest = [r.newest_timestamp_ms for r in self.sources.values() if r.newest_timestamp_ms]
        if newest:
            out["currentEmitEventTimeLag"] = max(int(time.time() * 1000) - max(newest), 0)
        offsets: dict[str, Any] = {}
        pending = 0
        for name, read in self.sources.items():
            ends = read.admin.end_offsets(list(read.plan.stops)) if read.plan.stops else {}
            for tp, stop in sorted(read.plan.stops.items()):
                lag = max(ends.get(tp, stop) - stop, 0)
                pending += lag
                offsets[f"{name}/{tp[0]}-{tp[1]}"] = {
                    "start": read.plan.starts[tp],
                    "end": stop,
                    "currentOffset": stop,
                    "committedOffset": read.committed.get(tp),
                    "pendingRecords": lag,
                }
        out["pendingRecords"] = pending
        out["offsets"] = offsets
        if self.write_result is not None:
            w = self.write_result
            out.update(
                {
                    "numRecordsOut": w.records,
                    "numBytesOut": w.bytes,
                    "numRecordsOutPerSecond": round(w.records / elapsed, 1),
                    "currentSendTime": round(w.send_ms, 1),
                    "numRecordsOutErrors": w.failed,
                }
            )
            if isinstance(w, TransactionResult):
                out.update(
                    {
                        "transactionalId": w.transactional_id,
                        "producerId": w.producer_id,
                        "producerEpoch": w.producer_epoch,
                        "transactionDurationMs": w.transaction_ms,
                        "commitAttempts": w.commit_attempts,
                    }
                )
        return out


def dead_letter_records(dirty: DataFrame) -> DataFrame:
    """Dirty rows as Kafka records: raw key and value, provenance and error in headers."""
    from pyspark.sql import functions as F

    def header(name: str, value: Any) -> Any:
        return F.struct(
            F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value")
        )

    sources = ("__dkf_topic", "__dkf_partition", "__dkf_offset", ERROR)
    return dirty.select(
        F.col("__dkf_key").alias("key"),
        F.col("__dkf_value").alias("value"),
        F.array(
            *[header(h, F.col(c)) for h, c in zip(DEAD_LETTER_HEADERS, sources, strict=True)]
        ).alias("headers"),
    )
