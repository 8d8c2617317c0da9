"""``@kafka_streaming_asset``: a Dagster asset whose body is a Spark query over Kafka tables.

The framework plans the sources' offset ranges (checkpoint first, then ``scan.startup.mode``),
reads and decodes them, calls the body with one DataFrame per source, writes the result to the
sink table with its delivery guarantee, and records the new offsets checkpoint and Flink-named
metrics in the materialization. A run that raises records nothing: the checkpoint stays put.

The asset carries its Kafka asset checks (:mod:`.checks`): the run emits their results with the
materialization, and each can run alone (select only the check) without reading data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetCheckKey,
    AssetExecutionContext,
    AssetKey,
    AssetOut,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    DynamicPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    Output,
    PartitionsDefinition,
    TableColumn,
    TableSchema,
    TimeWindowPartitionsDefinition,
    multi_asset,
)

from .checks import (
    CHECK_TIMEOUT_S,
    CheckScope,
    CommitGate,
    ConsumerLagCheck,
    KafkaAssetCheck,
    check_names_are_unique,
    checkpoint_of,
    default_checks,
    evaluate_checks,
)
from .errors import (
    BlockingCheckError,
    KafkaConnectorError,
    KafkaOptionsError,
    SchemaRegistryClientError,
)
from .options import DeliveryGuarantee, KafkaTableSpec, check_sink_not_read
from .partitions import time_windows
from .run import metrics as m
from .run.batches import SOURCE_NAME, parse_batch_key
from .run.schema import CHANGES_METADATA_PREFIX, SCHEMA_METADATA_PREFIX
from .run.windows import TimeWindow, TimeWindows
from .state.checkpoint import CHECKPOINT_METADATA_KEY, OffsetsCheckpoint
from .translator import ROW_COUNT, KafkaTranslator, table_metadata

if TYPE_CHECKING:  # pragma: no cover
    from dagster import DagsterInstance

    from .run import StreamingRun

StreamingBody = Callable[..., Any]
#: The output name of a streaming asset without a sink (its DataFrame goes to the IO manager).
RESULT_OUTPUT = "result"
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


def _check_partitioning(
    partitions_def: PartitionsDefinition | None,
    durations: Mapping[str, timedelta],
    checks: Sequence[KafkaAssetCheck],
) -> None:
    """Only time windows map to offset ranges; lateness and lookback need them; lag needs a
    checkpoint."""
    if partitions_def is not None and not isinstance(
        partitions_def, TimeWindowPartitionsDefinition
    ):
        raise KafkaOptionsError(
            f"partitions_def is a {type(partitions_def).__name__}: a streaming asset is "
            f"partitioned by time windows of record timestamps (a TimeWindowPartitionsDefinition "
            f"such as HourlyPartitionsDefinition), or not at all.",
            keys=("partitions_def",),
        )
    for name, duration in durations.items():
        if not isinstance(duration, timedelta) or duration < timedelta(0):
            raise KafkaOptionsError(
                f"{name} must be a timedelta >= 0, got {duration!r}.", keys=(name,)
            )
        if duration and partitions_def is None:
            raise KafkaOptionsError(
                f"{name} applies to time windows: give the asset a time-window "
                f"partitions_def, or drop {name}.",
                keys=(name, "partitions_def"),
            )
    if partitions_def is not None:
        lag = [c.name for c in checks if isinstance(c, ConsumerLagCheck)]
        if lag:
            raise KafkaOptionsError(
                f"Check(s) {', '.join(lag)}: a time-partitioned streaming asset reads windows, "
                f"not from a checkpoint, so it has no consumer lag; use LateDataCheck to find "
                f"windows to re-run.",
                keys=("checks",),
            )


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


def latest_checkpoint(instance: DagsterInstance, key: AssetKey) -> OffsetsCheckpoint | None:
    """The offsets checkpoint of the asset's last successful materialization, if any."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None
    return checkpoint_of(event.asset_materialization.metadata)


def saved_schemas(instance: DagsterInstance, key: AssetKey) -> dict[str, dict[str, str]]:
    """The inferred source schemas of the asset's last materialization, by source name."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return {}
    return {
        name[len(SCHEMA_METADATA_PREFIX) :]: {c.name: c.type for c in value.schema.columns}
        for name, value in event.asset_materialization.metadata.items()
        if name.startswith(SCHEMA_METADATA_PREFIX) and hasattr(value, "schema")
    }


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
    context: AssetExecutionContext, key: AssetKey, run: StreamingRun, metadata: dict[str, Any]
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


def _check_offsets_commit(
    sources: Mapping[str, KafkaTableSpec], sink: KafkaTableSpec | None
) -> None:
    """``properties.commit.offsets.on.checkpoint`` = false cannot apply under exactly-once."""
    if sink is None or sink.delivery_guarantee != DeliveryGuarantee.EXACTLY_ONCE:
        return
    skipping = sorted(name for name, spec in sources.items() if not spec.commit_offsets)
    if skipping:
        raise KafkaOptionsError(
            f"Source(s) {', '.join(repr(n) for n in skipping)} set "
            f"'properties.commit.offsets.on.checkpoint' = 'false', but the sink is "
            f"'exactly-once': its transaction commits the source offsets to the consumer group, "
            f"and those committed offsets are the checkpoint. Remove the option (or use "
            f"'at-least-once').",
            keys=("properties.commit.offsets.on.checkpoint", "sink.delivery-guarantee"),
        )


def _check_offset_batches(
    offset_batches: bool,
    partitions_def: PartitionsDefinition | None,
    sources: Mapping[str, KafkaTableSpec],
    checks: Sequence[KafkaAssetCheck],
) -> None:
    if not offset_batches:
        return
    if partitions_def is not None:
        raise KafkaOptionsError(
            "offset_batches=True partitions the asset by the batches its runs read; it cannot "
            "also take a partitions_def.",
            keys=("offset_batches", "partitions_def"),
        )
    bad = sorted(n for n in sources if not SOURCE_NAME.fullmatch(n))
    if bad:
        raise KafkaOptionsError(
            f"Offset batch keys name their sources: source name(s) {', '.join(map(repr, bad))} "
            f"must use only letters, digits, '_', '.' and '-'.",
            keys=("sources",),
        )
    lag = [c.name for c in checks if isinstance(c, ConsumerLagCheck)]
    if lag:
        raise KafkaOptionsError(
            f"Check(s) {', '.join(lag)}: an asset partitioned by offset batches has no "
            f"checkpoint to measure lag from; its new-data sensor records the pending records.",
            keys=("checks",),
        )


def _check_tables(sources: Mapping[str, KafkaTableSpec], sink: KafkaTableSpec | None) -> None:
    if not sources:
        raise KafkaOptionsError("A streaming asset needs at least one source table.")
    for table_name, spec in sources.items():
        if spec.topics == () and spec.topic_pattern is None:
            raise KafkaOptionsError(f"Source {table_name!r} has no 'topic' or 'topic-pattern'.")
    if sink is not None and (len(sink.topics) != 1 or sink.topic_pattern is not None):
        raise KafkaOptionsError(
            "The sink table needs exactly one 'topic' (no ';' list, no 'topic-pattern').",
            keys=("topic", "topic-pattern"),
        )
    if sink is not None:
        check_sink_not_read(sources, sink)
    _check_offsets_commit(sources, sink)


def kafka_streaming_asset(
    *,
    sources: Mapping[str, KafkaTableSpec],
    sink: KafkaTableSpec | None = None,
    name: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    checks: Sequence[KafkaAssetCheck] | None = None,
    kafka_resource_key: str = "kafka",
    spark_resource_key: str = "pyspark",
    max_records_per_split: int = 2_000_000,
    min_splits: int | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    owners: Sequence[str] | None = None,
    io_manager_key: str | None = None,
    op_tags: Mapping[str, Any] | None = None,
    translator: KafkaTranslator | None = None,
    partitions_def: PartitionsDefinition | None = None,
    backfill_policy: BackfillPolicy | None = None,
    allowed_lateness: timedelta = timedelta(0),
    lookback: timedelta = timedelta(0),
    offset_batches: bool = False,
    from_checkpoint: bool = True,
) -> Callable[[StreamingBody], AssetsDefinition]:
    """Declare an asset whose body is a Spark query over Kafka source tables.

    The body receives ``context`` and one DataFrame per source (by the ``sources`` names) and
    returns a DataFrame. With ``sink`` the result is written to that Kafka table and the asset
    materializes with metrics; without, the DataFrame goes to the asset's IO manager
    (``io_manager_key``). Ranges larger than ``max_records_per_split`` are read by several Spark
    tasks, and at least ``min_splits`` tasks read each source when given (Spark's
    ``minPartitions``; a source's ``scan.parallelism``, when larger, wins for it). With
    an exactly-once sink the transactional id is ``<sink.transactional-id-prefix>-<asset
    key>-0``.

    The asset depends on its source topics' assets (``translator``'s
    :meth:`~.translator.KafkaTranslator.get_asset_spec`; declare them with
    :func:`~.translator.build_kafka_source_assets`) and stands for its sink topic: it carries the
    sink's column schema and table name, and each materialization its ``dagster/row_count``.

    With a time-window ``partitions_def`` (e.g. ``HourlyPartitionsDefinition``), a run reads,
    in every source partition, the records whose timestamps lie in its window: from the first
    offset at or after the window's start to the first at or after its end plus
    ``allowed_lateness`` (offsets-for-times, end exclusive), keeping those inside the window;
    ``lookback`` reads and keeps that much before the window too, for aggregations whose windows
    begin in the previous partition (hopping windows that end in this one). A
    backfill over many windows is one run and one Spark job by default
    (``BackfillPolicy.single_run()``); it keeps each record by its own window's rule and
    records each window's own figures on its partition, so every window gets what a run over it
    alone gives it (:mod:`.run.windows`). Window runs neither use nor move the streaming
    checkpoint and commit no offsets to the consumer groups; under exactly-once the
    transactional id includes the partition keys, so windows do not fence each other.

    With ``offset_batches=True`` the asset is partitioned by the batches its runs read: dynamic
    partitions (``<asset>_offset_batches``) whose keys name the exact offset ranges, e.g.
    ``orders/orders:0=0-160,1=0-160``. ``build_kafka_new_data_sensor`` plans each next batch
    (from where the last one stopped to the end of the log), adds its key and requests its run;
    re-running a key reads exactly the same records. One run per batch.

    With ``from_checkpoint=False`` every run reads each source from its startup position
    (``scan.startup.mode``) to its bounded end, ignoring the last checkpoint: for queries that
    aggregate over all records into an ``upsert-kafka`` sink, whose latest value per key is then
    the result over everything read.

    ``checks`` are the asset's Kafka checks (:class:`~.checks.DirtyDataCheck`,
    :class:`~.checks.TransactionTimeoutCheck`, :class:`~.checks.HangingTransactionsCheck`,
    :class:`~.checks.ConsumerLagCheck`), emitted with each materialization and runnable alone.
    When not given, the asset gets a dirty-data check if a source tolerates dirty records, and
    transaction-timeout and hanging-transaction checks if the sink is exactly-once; ``[]``
    attaches none.

    Example:
        >>> @kafka_streaming_asset(sources={"orders": orders}, sink=channel_revenue_table,
        ...                        checks=[DirtyDataCheck(max_ratio=0.01, blocking=True)])
        ... def channel_revenue(context, orders):
        ...     return orders.groupBy("order_channel").count()

    Raises:
        KafkaOptionsError: no source, a sink without exactly one topic, two checks of one
            name, or a source that skips the group commit under an exactly-once sink.
    """
    _check_tables(sources, sink)
    sources = {name: spec.for_role("source") for name, spec in sources.items()}
    sink = sink.for_role("sink") if sink is not None else None
    _check_partitioning(
        partitions_def, {"allowed_lateness": allowed_lateness, "lookback": lookback}, checks or ()
    )
    _check_offset_batches(offset_batches, partitions_def, sources, checks or ())
    if partitions_def is not None and backfill_policy is None:
        backfill_policy = BackfillPolicy.single_run()
    prefix = [key_prefix] if isinstance(key_prefix, str) else list(key_prefix or [])
    translator = translator or KafkaTranslator()
    upstream = list(dict.fromkeys(translator.get_asset_spec(s).key for s in sources.values()))

    def decorator(fn: StreamingBody) -> AssetsDefinition:
        key = AssetKey([*prefix, name or fn.__name__])
        batches = (
            DynamicPartitionsDefinition(name=f"{key.to_python_identifier()}_offset_batches")
            if offset_batches
            else None
        )
        attached = tuple(checks) if checks is not None else tuple(default_checks(sources, sink))
        check_names_are_unique(attached, key.to_user_string())
        by_key = {AssetCheckKey(key, c.name): c for c in attached}
        tables = StreamingTables(
            dict(sources),
            sink,
            kafka_resource_key,
            attached,
            partitions_def,  # type: ignore[arg-type]
            int(allowed_lateness.total_seconds() * 1000),
            int(lookback.total_seconds() * 1000),
            batches,
            from_checkpoint,
        )
        asset_metadata = {
            "kafka/sources": MetadataValue.json({n: s.describe() for n, s in sources.items()}),
            **({"kafka/sink": MetadataValue.json(sink.describe())} if sink else {}),
            **(table_metadata(sink) if sink else {}),
            **(metadata or {}),
        }
        deps = [k for k in upstream if k != key]
        shape: dict[str, Any] = {}
        common: dict[str, Any] = {
            "group_name": group_name,
            "description": description or fn.__doc__,
            "kinds": {"kafka", "spark"},
            "metadata": asset_metadata,
            "tags": tags,
            "owners": owners,
        }
        if sink is not None:
            shape["specs"] = [AssetSpec(key, skippable=True, deps=deps, **common)]
        else:
            out = AssetOut(key=key, is_required=False, io_manager_key=io_manager_key, **common)
            shape["outs"] = {RESULT_OUTPUT: out}
            shape["deps"] = deps

        @multi_asset(
            name=key.to_python_identifier(),
            check_specs=[c.spec(key) for c in attached],
            can_subset=bool(attached),
            required_resource_keys={kafka_resource_key, spark_resource_key},
            op_tags=op_tags,
            partitions_def=batches or partitions_def,
            backfill_policy=BackfillPolicy.multi_run() if batches else backfill_policy,
            **shape,
        )
        def _streaming_asset(context):  # type: ignore[no-untyped-def]
            # (unannotated: Dagster checks the annotation's object, and annotations are strings)
            selected = [by_key[k] for k in sorted(context.selected_asset_check_keys, key=str)]
            kafka = getattr(context.resources, kafka_resource_key)
            if key not in context.selected_asset_keys:  # only checks: no data is read
                yield from checks_alone(kafka, key, tables, selected, context.instance)
                return
            yield from _materialize(
                context,
                fn,
                key,
                tables,
                selected,
                spark=getattr(context.resources, spark_resource_key).spark_session,
                split=(max_records_per_split, min_splits),
            )

        attach_streaming_tables(_streaming_asset, tables)
        return _streaming_asset

    return decorator


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


def _materialize(
    context: AssetExecutionContext,
    fn: StreamingBody,
    key: AssetKey,
    tables: StreamingTables,
    selected: Sequence[KafkaAssetCheck],
    *,
    spark: Any,
    split: tuple[int, int | None],
) -> Iterator[Any]:
    from .run import StreamingRun

    kafka = getattr(context.resources, tables.kafka_resource_key)
    name = key.to_user_string()
    windows, checkpoint_before, ranges = None, None, None
    if tables.offset_batches is not None:
        batch = context.partition_key
        ranges = parse_batch_key(batch)
        name = f"{name}-batch-{hashlib.sha1(batch.encode()).hexdigest()[:12]}"
    elif tables.partitions_def is not None:
        keys = list(context.partition_keys)
        windows = tables.run_windows(keys)
        name = f"{name}-{keys[0]}" + (f"..{keys[-1]}" if len(keys) > 1 else "")
        if windows.span.state() == "future":
            context.log.warning(f"Window {keys[0]}.. starts in the future: nothing to read yet.")
    elif tables.from_checkpoint:
        checkpoint_before = latest_checkpoint(context.instance, key)

    def scope(run: StreamingRun, checkpoint: OffsetsCheckpoint | None) -> CheckScope:
        return CheckScope(
            asset_key=key,
            sources={n: r.table for n, r in run.sources.items()},
            sink=run.resolve(tables.sink, name) if tables.sink else None,
            clients=run.clients,
            checkpoint=checkpoint,
            run=run,
            tables=tables,
            instance=context.instance,
        )

    gate = CommitGate(selected, key, lambda run: scope(run, None))
    run = StreamingRun(
        spark=spark,
        defaults=kafka.connection_defaults(),
        checkpoint=checkpoint_before,
        max_records_per_split=split[0],
        min_splits=split[1],
        sink=tables.sink,
        asset_name=name,
        log=context.log,
        windows=windows,
        ranges=ranges,
        schemas=(
            saved_schemas(context.instance, key)
            if any(s.infers_schema for s in tables.sources.values())
            else {}
        ),
        gate=gate,
    )
    try:
        frames = {n: run.read(n, spec) for n, spec in tables.sources.items()}
        result = fn(context, **frames)
        if tables.sink is not None:
            run.write(tables.sink, result)
        checkpoint = run.commit()
        metadata = materialization_metadata(run, checkpoint)
        context.log.info(f"Kafka run {{'sources': {sorted(tables.sources)}}}: {metadata}")
        if tables.sink is not None:
            metadata[ROW_COUNT] = metadata[m.NUM_RECORDS_OUT.name]
        metadata = record_windows_apart(context, key, run, metadata)
        if tables.sink is not None:
            yield MaterializeResult(asset_key=key, metadata=metadata)
        else:
            yield Output(result, output_name=RESULT_OUTPUT, metadata=metadata)
        yield from gate.results
        yield from evaluate_checks(gate.after_commit, key, lambda: scope(run, checkpoint))
    except BlockingCheckError:
        yield from gate.results  # the failed check, recorded as the run fails
        raise
    except Exception as exc:  # a Spark task's registry failure, as our error
        registry = SchemaRegistryClientError.raised_in_task(exc)
        if registry is None:
            raise
        raise registry from exc
    finally:
        if tables.sink is not None:
            run.close()
