"""A Dagster materialization of Kafka tables: the one driver every front end goes through.

A streaming asset (``@kafka_streaming_asset``, and through it Flink SQL scripts, the
``KafkaPipelineComponent`` and ``dkf sql run``), a data-ingestion pipeline and
``KafkaResource.run`` in a ``@multi_asset`` of your own all materialize through
:class:`KafkaMaterialization`: it reads the asset's past from the instance (the last
checkpoint, the inferred schemas), builds the :class:`~.run.StreamingRun` (time windows, offset
batches, the blocking checks that gate the commit), runs the front end's body over it, commits,
and yields the ``MaterializeResult`` (or ``Output``), then the checks' results. The IO manager's
inputs and outputs run through :func:`table_run`. Nothing else builds a ``StreamingRun``.

The asset's Kafka tables (:class:`StreamingTables`) are recorded on the asset, so sensors,
standalone checks and source assets built from the asset find them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    DynamicPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    Output,
    TableColumn,
    TableSchema,
    TimeWindowPartitionsDefinition,
    multi_asset,
)

from .checks import (
    CHECK_TIMEOUT_S,
    CheckScope,
    CommitGate,
    KafkaAssetCheck,
    evaluate_checks,
    selected_checks,
)
from .errors import BlockingCheckError, KafkaConnectorError, SchemaRegistryClientError
from .history import latest_checkpoint, saved_schemas
from .options import KafkaTableSpec
from .partitions import time_windows
from .run import metrics as m
from .run.batches import parse_batch_key
from .run.schema import CHANGES_METADATA_PREFIX, SCHEMA_METADATA_PREFIX
from .run.windows import TimeWindow, TimeWindows
from .source.enumerator import DEFAULT_MAX_RECORDS_PER_SPLIT
from .state.checkpoint import CHECKPOINT_METADATA_KEY, OffsetsCheckpoint
from .translator import ROW_COUNT

if TYPE_CHECKING:  # pragma: no cover
    from dagster import DagsterInstance
    from pyspark.sql import SparkSession

    from .run import StreamingRun

__all__ = [
    "KafkaMaterialization",
    "RunOutput",
    "StreamingTables",
    "attach_streaming_tables",
    "checks_alone",
    "materialization_metadata",
    "streaming_multi_asset",
    "streaming_tables",
    "table_run",
]

_TABLES_ATTRIBUTE = "__dagster_kafka_flinklike_tables__"


@dataclass(frozen=True)
class StreamingTables:
    """The Kafka tables of a streaming asset, for sensors and checks built from the asset."""

    sources: Mapping[str, KafkaTableSpec]
    sink: KafkaTableSpec | None
    kafka_resource_key: str
    checks: tuple[KafkaAssetCheck, ...] = ()
    #: The asset's time-window partitions (runs read windows of record timestamps), if any.
    partitions_def: TimeWindowPartitionsDefinition | None = None
    #: How late a record may arrive and still be read with its window.
    lateness_ms: int = 0
    #: How long before its window a partition run reads too (hopping windows).
    lookback_ms: int = 0
    #: The asset's offset batches (dynamic partitions naming exact offset ranges), if any.
    offset_batches: DynamicPartitionsDefinition | None = None
    #: False: every run reads from the startup position, not from the last checkpoint.
    from_checkpoint: bool = True

    def window(self, key: str) -> TimeWindow:
        """The time window of partition ``key`` (with the allowed lateness and lookback)."""
        return self.run_windows([key]).window(key)

    def run_windows(self, keys: Sequence[str]) -> TimeWindows:
        """The time windows a run over partitions ``keys`` (consecutive) reads."""
        assert self.partitions_def is not None
        return time_windows(self.partitions_def, keys, self.lateness_ms, self.lookback_ms)


def attach_streaming_tables(asset: AssetsDefinition, tables: StreamingTables) -> None:
    """Record ``tables`` on an asset that runs over Kafka tables without
    ``@kafka_streaming_asset``, so sensors, checks and source assets find them."""
    compute: Any = asset.op.compute_fn
    setattr(compute.decorated_fn, _TABLES_ATTRIBUTE, tables)


def streaming_tables(asset: AssetsDefinition) -> StreamingTables:
    """The Kafka tables of an asset built by :func:`kafka_streaming_asset`.

    Raises:
        KafkaConnectorError: the asset was not built by ``@kafka_streaming_asset``.
    """
    compute = getattr(getattr(asset, "node_def", None), "compute_fn", None)
    found = getattr(getattr(compute, "decorated_fn", None), _TABLES_ATTRIBUTE, None)
    if not isinstance(found, StreamingTables):
        raise KafkaConnectorError(
            f"Asset {asset.key.to_user_string()!r} was not built by @kafka_streaming_asset; "
            f"give its Kafka tables explicitly."
        )
    return found


def _schema_metadata(run: StreamingRun) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, read in run.sources.items():
        if read.schema is None:
            continue
        columns = [TableColumn(n, t) for n, t in read.schema.to_json().items()]
        out[SCHEMA_METADATA_PREFIX + name] = MetadataValue.table_schema(TableSchema(columns))
        changes = [str(c) for c in read.schema.changes]
        changes += [f"refused (incompatible): {c}" for c in read.schema.refused]
        if changes:
            out[CHANGES_METADATA_PREFIX + name] = MetadataValue.json(changes)
    return out


def materialization_metadata(
    run: StreamingRun, checkpoint: OffsetsCheckpoint | None
) -> dict[str, Any]:
    """A finished run's metadata: its metrics, the new checkpoint, dirty-record samples and
    inferred schemas."""
    out = _metadata_values(run.metadata())
    if checkpoint is not None:
        out[CHECKPOINT_METADATA_KEY] = MetadataValue.json(checkpoint.to_json())
    samples = [s for r in run.sources.values() for s in r.dirty.samples]
    if samples:
        out[m.DIRTY_SAMPLES] = MetadataValue.json(samples)
    out.update(_schema_metadata(run))
    return out


def _metadata_values(figures: Mapping[str, Any]) -> dict[str, Any]:
    """Figures as Dagster metadata: mappings and lists as JSON."""
    return {
        k: (MetadataValue.json(v) if isinstance(v, dict | list) else v) for k, v in figures.items()
    }


#: What a run over several time windows records once for all of them (under :data:`m.RUN`).
_RUN_FIGURES = frozenset([*(x.name for x in m.METRICS), m.OFFSETS, ROW_COUNT])
#: What each window of such a run records of its own only (not repeated on every window).
_WINDOW_ONLY = frozenset([m.WINDOWS, m.WINDOW_NOTES])


def record_windows_apart(
    context: Any, key: AssetKey, run: StreamingRun, metadata: dict[str, Any]
) -> dict[str, Any]:
    """A run over several time windows (a single-run backfill) records each window's own figures
    on its partition's materialization (``add_asset_metadata`` per partition key), as a run over
    it alone would, and its own figures (totals, output, transaction, duration) once under
    :data:`m.RUN` on each, so that no window shows another's or the run's. Returns the metadata
    every window gets; a run over one window or none keeps ``metadata`` as it is.
    """
    by_window = run.window_metadata()
    if len(by_window) < 2:
        return metadata
    figures = {k: getattr(v, "value", v) for k, v in metadata.items() if k in _RUN_FIGURES}
    out = {k: v for k, v in metadata.items() if k not in _RUN_FIGURES | _WINDOW_ONLY}
    keys = list(by_window)
    out[m.RUN] = MetadataValue.json(
        {"partitionRange": [keys[0], keys[-1]], "partitionCount": len(keys), **figures}
    )
    for partition, own in by_window.items():
        context.add_asset_metadata(_metadata_values(own), asset_key=key, partition_key=partition)
    return out


def checks_alone(
    kafka: Any,
    key: AssetKey,
    tables: StreamingTables,
    selected: Sequence[KafkaAssetCheck],
    instance: DagsterInstance,
) -> Iterator[Any]:
    """The ``selected`` checks of asset ``key`` evaluated without a run (only checks were
    selected), over its tables and its last materialization."""
    from .run import KafkaClients

    def scope() -> CheckScope:
        return CheckScope(
            asset_key=key,
            sources={n: kafka.resolve(s, n) for n, s in tables.sources.items()},
            sink=kafka.resolve(tables.sink, key.to_user_string()) if tables.sink else None,
            clients=KafkaClients(timeout_s=CHECK_TIMEOUT_S),
            checkpoint=None,
            tables=tables,
            instance=instance,
        )

    yield from evaluate_checks(selected, key, scope, instance)


@dataclass
class RunOutput:
    """What a front end's body gives back to :meth:`KafkaMaterialization.events`."""

    #: The asset's output value (an asset without a Kafka sink hands its DataFrame to its IO
    #: manager).
    value: Any = None
    #: Metadata of the front end's own, added to the run's.
    metadata: Mapping[str, Any] = field(default_factory=dict)


#: A front end's part of a run: reads its sources, runs its query and writes (``run.read``,
#: ``run.write``); the driver commits. A value that is not a :class:`RunOutput` (e.g. the
#: ``WriteResult`` of ``run.write``) is not the asset's output: it is already in the metrics.
RunBody = Callable[["StreamingRun"], Any]


class KafkaMaterialization:
    """One Dagster materialization of an asset over Kafka tables, as Dagster events.

    ``events(body)`` builds the run from the asset's tables and the execution context (the
    last checkpoint, or a time window, or an offset batch), calls ``body`` with it, commits,
    and yields the ``MaterializeResult`` (or, with ``output_name``, an ``Output`` of the
    body's value), the checks decided before the commit and those evaluated after it. A run
    that selects only the asset's checks evaluates them alone, without reading data. A run
    that fails records nothing (its checkpoint stays); a blocking check that fails before the
    commit fails it with its result recorded. ``writes_with`` is the table whose client and
    delivery guarantee the run writes with when the asset has no sink table of its own (a
    data-ingestion pipeline writes many topics). ``kafka`` is the :class:`~.KafkaResource`
    (by default the context's resource named by ``tables.kafka_resource_key``).

    Example:
        >>> materialization = KafkaMaterialization(context, key, tables, checks)  # doctest: +SKIP
        >>> yield from materialization.events(lambda run: run.write(sink, query(run.read(
        ...     "orders", orders))))  # doctest: +SKIP
    """

    def __init__(
        self,
        context: Any,
        key: AssetKey,
        tables: StreamingTables,
        checks: Sequence[KafkaAssetCheck] = (),
        *,
        spark_resource_key: str = "pyspark",
        output_name: str | None = None,
        max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
        min_splits: int | None = None,
        writes_with: KafkaTableSpec | None = None,
        kafka: Any = None,
    ) -> None:
        self.context = context
        self.key = key
        self.tables = tables
        self.checks = list(checks)
        self.spark_resource_key = spark_resource_key
        self.output_name = output_name
        self.max_records_per_split = max_records_per_split
        self.min_splits = min_splits
        self.writes_with = writes_with if writes_with is not None else tables.sink
        self.kafka = (
            kafka if kafka is not None else getattr(context.resources, tables.kafka_resource_key)
        )
        self._name = key.to_user_string()

    def events(self, body: RunBody) -> Iterator[Any]:
        """Run ``body`` over the asset's tables and yield the materialization's events.

        Raises:
            BlockingCheckError: a blocking check failed before the commit.
            SchemaRegistryClientError: a Spark task met a Schema Registry that failed.
            KafkaConnectorError: the run failed (nothing was recorded).
        """
        if self.key not in self.context.selected_asset_keys:  # only checks: no data is read
            yield from checks_alone(
                self.kafka, self.key, self.tables, self.checks, self.context.instance
            )
            return
        gate = CommitGate(self.checks, self.key, lambda run: self._scope(run, None))
        run = self._run(gate)
        try:
            returned = body(run)
            outcome = returned if isinstance(returned, RunOutput) else RunOutput()
            checkpoint = run.commit()
            metadata = {**materialization_metadata(run, checkpoint), **outcome.metadata}
            self.context.log.info(f"Kafka run {{'sources': {sorted(run.sources)}}}: {metadata}")
            if self.output_name is None:
                metadata[ROW_COUNT] = metadata[m.NUM_RECORDS_OUT.name]
            metadata = record_windows_apart(self.context, self.key, run, metadata)
            if self.output_name is None:
                yield MaterializeResult(asset_key=self.key, metadata=metadata)
            else:
                yield Output(outcome.value, output_name=self.output_name, metadata=metadata)
            yield from gate.results
            yield from evaluate_checks(
                gate.after_commit, self.key, lambda: self._scope(run, checkpoint)
            )
        except BlockingCheckError:
            yield from gate.results  # the failed check, recorded as the run fails
            raise
        except Exception as exc:  # a Spark task's registry failure, as our error
            registry = SchemaRegistryClientError.raised_in_task(exc)
            if registry is None:
                raise
            raise registry from exc
        finally:
            run.close()

    def _run(self, gate: CommitGate) -> StreamingRun:
        """The run this materialization reads: its time windows (a partition range), its
        offset batch, or from the last checkpoint."""
        from .run import StreamingRun

        tables, context = self.tables, self.context
        name = self.key.to_user_string()
        windows, checkpoint, ranges = None, None, None
        if tables.offset_batches is not None:
            batch = context.partition_key
            ranges = parse_batch_key(batch)
            name = f"{name}-batch-{hashlib.sha1(batch.encode()).hexdigest()[:12]}"
        elif tables.partitions_def is not None:
            keys = list(context.partition_keys)
            windows = tables.run_windows(keys)
            name = f"{name}-{keys[0]}" + (f"..{keys[-1]}" if len(keys) > 1 else "")
            if windows.span.state() == "future":
                context.log.warning(
                    f"Window {keys[0]}.. starts in the future: nothing to read yet."
                )
        elif tables.from_checkpoint:
            checkpoint = latest_checkpoint(context.instance, self.key)
        infers = any(s.infers_schema for s in tables.sources.values())
        self._name = name
        spark = getattr(context.resources, self.spark_resource_key, None)
        if spark is None:
            raise KafkaConnectorError(
                f"Asset {self.key.to_user_string()!r} has no Spark resource "
                f"{self.spark_resource_key!r}: declare it (a parameter "
                f"'{self.spark_resource_key}: SparkResource', or required_resource_keys)."
            )
        return StreamingRun(
            spark=spark.spark_session,
            defaults=self.kafka.connection_defaults(),
            checkpoint=checkpoint,
            min_splits=self.min_splits,
            sink=self.writes_with,
            asset_name=name,
            log=context.log,
            windows=windows,
            ranges=ranges,
            schemas=saved_schemas(context.instance, self.key) if infers else {},
            gate=gate,
            max_records_per_split=self.max_records_per_split,
        )

    def _scope(self, run: StreamingRun, checkpoint: OffsetsCheckpoint | None) -> CheckScope:
        sink = self.tables.sink
        return CheckScope(
            asset_key=self.key,
            sources={n: r.table for n, r in run.sources.items()},
            sink=run.resolve(sink, self._name) if sink is not None else None,
            clients=run.clients,
            checkpoint=checkpoint,
            run=run,
            tables=self.tables,
            instance=self.context.instance,
        )


def streaming_multi_asset(
    key: AssetKey,
    tables: StreamingTables,
    body: Callable[[Any], RunBody],
    *,
    spark_resource_key: str,
    output_name: str | None = None,
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
    min_splits: int | None = None,
    writes_with: KafkaTableSpec | None = None,
    **multi_asset_args: Any,
) -> AssetsDefinition:
    """The ``multi_asset`` of asset ``key`` whose runs materialize ``tables`` through
    :class:`KafkaMaterialization`, with ``body(context)`` as the run's body.

    It declares the tables' checks (each selectable alone), needs the Kafka and Spark
    resources, and records ``tables`` on the asset for sensors, checks and source assets.
    ``multi_asset_args`` (``specs``, or ``outs`` and ``deps``; partitions, tags) go to
    ``multi_asset``; the other arguments to :class:`KafkaMaterialization`.

    Example:
        >>> asset = streaming_multi_asset(  # doctest: +SKIP
        ...     key, tables, lambda context: body, spark_resource_key="pyspark",
        ...     specs=[AssetSpec(key)])
    """
    checks = tables.checks

    @multi_asset(
        name=key.to_python_identifier(),
        check_specs=[c.spec(key) for c in checks],
        can_subset=bool(checks),
        required_resource_keys={tables.kafka_resource_key, spark_resource_key},
        **multi_asset_args,
    )
    def _materialize(context):  # type: ignore[no-untyped-def]
        # (unannotated: Dagster checks the annotation's object, and annotations are strings)
        materialization = KafkaMaterialization(
            context,
            key,
            tables,
            selected_checks(context, key, checks),
            spark_resource_key=spark_resource_key,
            output_name=output_name,
            max_records_per_split=max_records_per_split,
            min_splits=min_splits,
            writes_with=writes_with,
        )
        yield from materialization.events(body(context))

    attach_streaming_tables(_materialize, tables)
    return _materialize


def table_run(
    spark: SparkSession,
    kafka: Any,
    log: Any,
    *,
    max_records_per_split: int,
    windows: TimeWindows | None = None,
    sink: KafkaTableSpec | None = None,
    asset_name: str | None = None,
) -> StreamingRun:
    """A run over Kafka tables outside a streaming asset's materialization (an IO manager's
    input or output): it resumes from no checkpoint and records none.

    Example:
        >>> run = table_run(spark, kafka, log, max_records_per_split=2_000_000)  # doctest: +SKIP
    """
    from .run import StreamingRun

    return StreamingRun(
        spark=spark,
        defaults=kafka.connection_defaults(),
        checkpoint=None,
        max_records_per_split=max_records_per_split,
        log=log,
        windows=windows,
        sink=sink,
        asset_name=asset_name,
    )


#: Where stateful queries keep their checkpoints under the Dagster instance's storage.
STATEFUL_CHECKPOINTS = "kafka_stateful"


def stateful_checkpoint(instance: DagsterInstance, key: AssetKey, location: str | None) -> str:
    """The checkpoint location of asset ``key``'s stateful query: ``location`` (a path or any
    Hadoop-compatible URI, for clusters) joined with the asset's key, else a folder under the
    instance's storage."""
    if location:
        return f"{location.rstrip('/')}/{'/'.join(key.path)}"
    from pathlib import Path

    return str(Path(instance.storage_directory(), STATEFUL_CHECKPOINTS, *key.path))


def stateful_metadata(result: Any) -> dict[str, Any]:
    """A stateful run's figures (:class:`~.run.stateful.StatefulResult`) under the metric
    names, as materialization metadata."""
    records = sum(result.records_in.values())
    dirty = sum(result.dirty.values())
    figures: dict[str, Any] = {
        m.NUM_RECORDS_IN.name: records,
        m.NUM_BYTES_IN.name: sum(result.bytes_in.values()),
        m.DIRTY_RECORDS.name: dirty,
        m.DIRTY_RATIO.name: dirty / records if records else 0.0,
        m.NUM_RECORDS_OUT.name: result.records_out,
        m.NUM_LATE_RECORDS_DROPPED.name: result.late_dropped,
        m.STATE_ROWS.name: result.state_rows,
        m.STATE_BYTES.name: result.state_bytes,
        m.MICRO_BATCHES.name: len(result.batches),
        m.DURATION.name: round(result.elapsed_s, 3),
        ROW_COUNT: result.records_out,
    }
    if result.watermark_ms is not None:
        figures[m.CURRENT_WATERMARK.name] = result.watermark_ms - 1  # Flink's (Spark's - 1 ms)
    metadata = _metadata_values(figures)
    metadata["batches"] = MetadataValue.json(
        {"run": list(result.batches), "replayed": list(result.replayed)}
    )
    metadata["offsets"] = MetadataValue.json(result.end_offsets)
    return metadata


def stateful_multi_asset(
    key: AssetKey,
    tables: StreamingTables,
    query: Callable[[Any, dict[str, Any]], Any],
    *,
    event_times: Mapping[str, Any],
    spark_resource_key: str,
    output_mode: str = "append",
    checkpoint_location: str | None = None,
    **multi_asset_args: Any,
) -> AssetsDefinition:
    """The ``multi_asset`` of asset ``key`` whose runs are stateful: each materialization is
    one ``Trigger.AvailableNow`` run of the Structured Streaming query that ``query(context,
    frames)`` builds over the sources' streaming frames (with their ``event_times``), written
    to ``tables.sink`` (:func:`~.run.stateful.run_stateful_query`). The query's checkpoint (its
    offsets, watermark and state) lives at :func:`stateful_checkpoint`; a failed run keeps the
    batches it completed, as a Flink checkpoint does.

    Example:
        >>> asset = stateful_multi_asset(  # doctest: +SKIP
        ...     key, tables, lambda context, frames: windowed(frames["orders"]),
        ...     event_times={"orders": EventTime("ts", 5000)}, spark_resource_key="pyspark",
        ...     specs=[AssetSpec(key)])
    """
    from .run.stateful import run_stateful_query
    from .run.tables import resolve_table

    sink = tables.sink
    if sink is None:
        raise KafkaConnectorError(f"Stateful asset {key.to_user_string()!r} needs a sink table.")

    @multi_asset(
        name=key.to_python_identifier(),
        required_resource_keys={tables.kafka_resource_key, spark_resource_key},
        **multi_asset_args,
    )
    def _materialize(context):  # type: ignore[no-untyped-def]
        kafka = getattr(context.resources, tables.kafka_resource_key)
        spark = getattr(context.resources, spark_resource_key).spark_session
        defaults = kafka.connection_defaults()
        name = key.to_user_string()
        sources = {
            n: (resolve_table(spec, defaults, n), event_times.get(n))
            for n, spec in tables.sources.items()
        }
        location = stateful_checkpoint(context.instance, key, checkpoint_location)
        try:
            result = run_stateful_query(
                spark,
                sources,
                lambda frames: query(context, frames),
                resolve_table(sink, defaults, name),
                checkpoint=location,
                asset_name=name,
                output_mode=output_mode,
                log=context.log,
            )
        except Exception as exc:  # a Spark task's registry failure, as our error
            registry = SchemaRegistryClientError.raised_in_task(exc)
            if registry is None:
                raise
            raise registry from exc
        metadata = stateful_metadata(result)
        context.log.info(f"Stateful run of {name} ({location}): {metadata}")
        yield MaterializeResult(asset_key=key, metadata=metadata)

    attach_streaming_tables(_materialize, tables)
    return _materialize
