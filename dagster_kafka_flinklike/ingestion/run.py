"""One bounded run of a data-ingestion pipeline, over the materialization cycle.

:class:`IngestionRun` drives a :class:`~..run.StreamingRun` whose source is the pipeline's
source and whose sink table carries the sink's client and delivery guarantee: plan and read as
any run does (checkpoint first, then ``scan.startup.mode``; under exactly-once the previous run
is fenced first), decode table by table (:mod:`.decode`), apply the dirty-data policy, then
transform, route and encode (:mod:`.encode`) and write every topic with the sink's guarantee
(exactly-once: one transaction for every topic and the source offsets). The caller commits the
checkpoint (:meth:`~..run.StreamingRun.commit`) and closes both. Nothing here needs Dagster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import KafkaOptionsError
from ..run.decode import DecodedTable
from ..run.schema import InferredSchema
from ..run.tables import ResolvedTable
from ..sink.writer import WriteResult
from ..source.records import ERROR, PROVENANCE
from .decode import DecodedTables, decode_tables, sample_tables
from .encode import SinkTable, plan_outputs
from .tables import TableId

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..run import StreamingRun
    from ..source.admin import KafkaAdmin
    from ..source.enumerator import SourcePlan
    from .definition import DataIngestionPipeline

__all__ = ["IngestionResult", "IngestionRun"]

#: Dirty records the ``logger`` collector logs one by one in a run; the rest are counted.
LOGGED_DIRTY_RECORDS = 10_000


@dataclass
class IngestionResult:
    """What a pipeline run did: each source table's schema and records, the sink tables and
    their topics, and the write."""

    schemas: dict[TableId, InferredSchema] = field(default_factory=dict)
    records: dict[TableId, int] = field(default_factory=dict)
    sink_tables: list[SinkTable] = field(default_factory=list)
    write: WriteResult | None = None

    def routing(self) -> dict[str, dict[str, str]]:
        """``{source table: {sink table: topic}}``."""
        out: dict[str, dict[str, str]] = {}
        for sink in self.sink_tables:
            for source in sink.sources:
                out.setdefault(str(source), {})[str(sink.table)] = sink.topic
        return dict(sorted(out.items()))


class IngestionRun:
    """Run ``pipeline`` once over ``run`` (a :class:`~..run.StreamingRun` built with the
    pipeline's sink table as its ``sink``).

    Args:
        pipeline: the parsed pipeline.
        run: the run cycle (its checkpoint, connection defaults, Spark session, log).
        saved: the schemas the last run kept, by table id (``str(TableId)``).

    The frames it caches are released when ``run`` closes.

    Example:
        >>> result = IngestionRun(pipeline, run).execute()  # doctest: +SKIP
        >>> checkpoint = run.commit()  # doctest: +SKIP
    """

    def __init__(
        self,
        pipeline: DataIngestionPipeline,
        run: StreamingRun,
        saved: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        if run.sink is not pipeline.sink.spec:
            raise KafkaOptionsError("The run's sink must be the pipeline's sink table.")
        self.pipeline = pipeline
        self.run = run
        self.saved = dict(saved or {})
        self.tables = DecodedTables()
        run.on_close(self.close)

    def _decode(
        self, table: ResolvedTable, raw: DataFrame, admin: KafkaAdmin, plan: SourcePlan
    ) -> DecodedTable:
        source = self.pipeline.source

        def sample() -> Any:
            return sample_tables(table, admin, plan, source, self.run.spark)

        decoded, self.tables = decode_tables(source, table, raw, self.saved, sample)
        return decoded

    def execute(self) -> IngestionResult:
        """Read, decode, apply the dirty-data policy, transform, route, encode and write.

        Raises:
            DeserializationError: dirty records the source does not tolerate (or more than
                'ingestion.error-tolerance.max-count'), or a schema change it cannot take.
            KafkaOptionsError: a transform Spark cannot evaluate, or a table written into a
                topic the pipeline reads.
            DeliveryError, TransactionError: the write failed; nothing was committed.
        """
        source = self.pipeline.source
        self.run.read(source.name, source.spec, decode=self._decode)
        self._collect_dirty()
        outputs, sink_tables = plan_outputs(self.pipeline, self.tables.tables)
        read = self.run.sources[source.name]
        looping = sorted({t for t, _, _ in outputs} & {t for t, _ in read.plan.stops})
        if looping:
            raise KafkaOptionsError(
                f"The pipeline would write into topic(s) {', '.join(looping)}, which its source "
                f"reads: each run would read its own output again. Name other topics (sink "
                f"'topic', 'sink.tableId-to-topic.mapping' or a 'route').",
                keys=("sink.tableId-to-topic.mapping",),
            )
        write = self.run.write_topics(outputs)
        return IngestionResult(
            schemas=dict(self.tables.schemas),
            records={t: o.records for t, o in self.tables.observed.items()},
            sink_tables=sink_tables,
            write=write,
        )

    def _collect_dirty(self) -> None:
        """``pipeline.dirty-data.collector`` = ``logger``: log every skipped dirty record."""
        read = self.run.sources[self.pipeline.source.name]
        if self.pipeline.dirty_collector != "logger" or not read.dirty.dirty:
            return
        rows = read.decoded.dirty_rows.select(ERROR, *PROVENANCE[:3], PROVENANCE[4])
        for row in rows.limit(LOGGED_DIRTY_RECORDS).collect():
            value = (row[PROVENANCE[4]] or b"")[:200].decode("utf-8", "replace")
            self.run.log.warning(
                f"Dirty record {row[PROVENANCE[0]]}-{row[PROVENANCE[1]]}@{row[PROVENANCE[2]]}: "
                f"{row[ERROR]}; value: {value}"
            )
        if read.dirty.dirty > LOGGED_DIRTY_RECORDS:
            self.run.log.warning(
                f"... and {read.dirty.dirty - LOGGED_DIRTY_RECORDS} more dirty record(s)."
            )

    def close(self) -> None:
        """Release the run's cached frames (done when the :class:`StreamingRun` closes)."""
        self.tables.release()
