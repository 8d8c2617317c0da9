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
from .options import KafkaTableSpec, client_config
from .sink.serializer import serialize
from .sink.writer import WriteResult, write
from .source._admin import KafkaAdmin
from .source.enumerator import SourcePlan, plan_source
from .source.offsets import TopicPartition
from .source.reader import read_splits
from .source.records import ERROR, PROVENANCE, decode_records, record_fields
from .state.checkpoint import OffsetsCheckpoint

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_log = logging.getLogger(__name__)
DIRTY_SAMPLES = 5


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


@dataclass
class KafkaRun:
    """A bounded run over Kafka source tables (and optionally a Kafka sink table).

    Args:
        spark: the Spark session.
        properties_for: the effective client properties of a table (resource defaults merged).
        checkpoint: the last successful run's checkpoint, or None for a first run.
        max_records_per_split: ranges larger than this are split over several Spark tasks.
    """

    spark: SparkSession
    properties_for: Callable[[KafkaTableSpec], dict[str, str]]
    checkpoint: OffsetsCheckpoint | None = None
    max_records_per_split: int = 2_000_000
    log: logging.Logger | Any = _log
    sources: dict[str, SourceRead] = field(default_factory=dict)
    write_result: WriteResult | None = None
    started: float = field(default_factory=time.monotonic)

    def read(self, name: str, spec: KafkaTableSpec) -> DataFrame:
        """Plan and read source ``name``; fail on dirty records unless the table ignores them.

        Returns the table's clean rows as a DataFrame (columns as declared).
        """
        began = time.monotonic()
        properties = self.properties_for(spec)
        admin = KafkaAdmin(properties, group_id=spec.effective_group_id)
        if spec.check_duplicated_group_id and admin.active_members():
            raise KafkaOptionsError(
                f"Consumer group {admin.group_id!r} has active members and "
                f"'scan.check.duplicated.group.id' is true: another job uses the group.",
                keys=("scan.check.duplicated.group.id", "properties.group.id"),
            )
        partitions = admin.partitions(spec.topics, spec.topic_pattern)
        previous = self.checkpoint.offsets(name) if self.checkpoint else None
        plan = plan_source(
            spec, partitions, admin, previous, max_records_per_split=self.max_records_per_split
        )
        consumer = client_config(properties, role="consumer")
        raw = read_splits(self.spark, plan.splits, consumer, record_fields(spec))
        decoded = decode_records(spec, raw).persist()
        stats = self._stats(decoded)
        read = SourceRead(
            name=name,
            spec=spec,
            admin=admin,
            plan=plan,
            frame=decoded.filter(decoded[ERROR].isNull()).drop(ERROR, *PROVENANCE),
            cached=decoded,
            records_in=stats["records"],
            bytes_in=stats["bytes"],
            dirty=stats["dirty"],
            dirty_samples=[],
            read_s=time.monotonic() - began,
        )
        self.sources[name] = read
        if read.dirty:
            self._handle_dirty(read, decoded)
        return read.frame

    def _stats(self, decoded: DataFrame) -> dict[str, int]:
        from pyspark.sql import functions as F

        row = decoded.agg(
            F.count(F.lit(1)).alias("records"),
            F.count(F.col(ERROR)).alias("dirty"),
            F.coalesce(F.sum(F.length("__dkf_value")), F.lit(0)).alias("bytes"),
        ).collect()[0]
        return {"records": row["records"], "dirty": row["dirty"], "bytes": row["bytes"]}

    def _handle_dirty(self, read: SourceRead, decoded: DataFrame) -> None:
        rows = decoded.filter(decoded[ERROR].isNotNull()).select(ERROR, *PROVENANCE)
        samples = [
            {
                "topic": r["__dkf_topic"],
                "partition": r["__dkf_partition"],
                "offset": r["__dkf_offset"],
                "error": r[ERROR],
                "value": (r["__dkf_value"] or b"")[:200].decode("utf-8", "replace"),
            }
            for r in rows.limit(DIRTY_SAMPLES).collect()
        ]
        read.dirty_samples = samples
        first = samples[0]
        where = f"{first['topic']}-{first['partition']}@{first['offset']}"
        spec = read.spec
        limit = spec.error_tolerance_max_count
        reason = None
        if not spec.ignore_errors:
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

    def write(self, spec: KafkaTableSpec, frame: DataFrame) -> WriteResult:
        """Serialize ``frame`` and produce it to the sink table's topic."""
        properties = self.properties_for(spec)
        encoded = serialize(spec, frame)
        self.write_result = write(
            encoded,
            spec.topics[0],
            properties,
            spec.delivery_guarantee,
            parallelism=spec.sink_parallelism,
        )
        return self.write_result

    def commit(self) -> OffsetsCheckpoint:
        """The new checkpoint; also commits it to each source's consumer group (monitoring)."""
        merged: dict[str, Mapping[TopicPartition, int]] = {}
        if self.checkpoint is not None:
            merged.update(self.checkpoint.sources)
        for name, read in self.sources.items():
            merged[name] = dict(read.plan.stops)
            try:
                read.admin.commit_group_offsets(read.plan.stops)
            except Exception as exc:  # monitoring only: the checkpoint is authoritative
                self.log.warning(f"Could not commit offsets of {name!r} to its group: {exc}")
        return OffsetsCheckpoint(merged)

    def close(self) -> None:
        """Release cached data."""
        for read in self.sources.values():
            read.cached.unpersist()

    def metadata(self) -> dict[str, Any]:
        """Flink-named metrics of the run, for materialization metadata."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        records_in = sum(r.records_in for r in self.sources.values())
        out: dict[str, Any] = {
            "numRecordsIn": records_in,
            "numBytesIn": sum(r.bytes_in for r in self.sources.values()),
            "numRecordsInPerSecond": round(records_in / elapsed, 1),
            "dirtyRecords": sum(r.dirty for r in self.sources.values()),
            "duration_s": round(elapsed, 3),
        }
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
        return out
