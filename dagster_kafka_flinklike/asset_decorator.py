"""``@kafka_streaming_asset``: a Dagster asset whose body is a Spark query over Kafka tables.

The framework plans the sources' offset ranges (checkpoint first, then ``scan.startup.mode``),
reads and decodes them, calls the body with one DataFrame per source, writes the result to the
sink table with its delivery guarantee, and records the new offsets checkpoint and Flink-named
metrics in the materialization. A run that raises records nothing: the checkpoint stays put.

The asset carries its Kafka asset checks (:mod:`.checks`): the run emits their results with the
materialization, and each can run alone (select only the check) without reading data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetKey,
    AssetOut,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    DynamicPartitionsDefinition,
    MetadataValue,
    PartitionsDefinition,
    TimeWindowPartitionsDefinition,
)

from .checks import ConsumerLagCheck, KafkaAssetCheck, check_names_are_unique, default_checks
from .errors import KafkaOptionsError
from .materialization import (
    RunOutput,
    StreamingTables,
    stateful_multi_asset,
    streaming_multi_asset,
)
from .options import DeliveryGuarantee, EventTime, KafkaTableSpec, check_sink_not_read
from .run.batches import SOURCE_NAME
from .run.write import check_split_sources
from .translator import KafkaTranslator, table_metadata

if TYPE_CHECKING:  # pragma: no cover
    from .run import StreamingRun

StreamingBody = Callable[..., Any]
#: The output name of a streaming asset without a sink (its DataFrame goes to the IO manager).
RESULT_OUTPUT = "result"


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
    check_split_sources(sources, sink, replays=partitions_def is not None or offset_batches)
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

        def body(context: Any) -> Callable[[StreamingRun], RunOutput]:
            def run_body(run: StreamingRun) -> RunOutput:
                frames = {n: run.read(n, spec) for n, spec in tables.sources.items()}
                result = fn(context, **frames)
                if sink is not None:
                    run.write(sink, result)
                return RunOutput(value=result)

            return run_body

        return streaming_multi_asset(
            key,
            tables,
            body,
            spark_resource_key=spark_resource_key,
            output_name=None if sink is not None else RESULT_OUTPUT,
            max_records_per_split=max_records_per_split,
            min_splits=min_splits,
            op_tags=op_tags,
            partitions_def=batches or partitions_def,
            backfill_policy=BackfillPolicy.multi_run() if batches else backfill_policy,
            **shape,
        )

    return decorator


StatefulBody = Callable[..., Any]


def kafka_stateful_asset(
    *,
    sources: Mapping[str, KafkaTableSpec],
    sink: KafkaTableSpec,
    event_times: Mapping[str, EventTime] | None = None,
    output_mode: str = "append",
    checkpoint_location: str | None = None,
    name: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    kafka_resource_key: str = "kafka",
    spark_resource_key: str = "pyspark",
    metadata: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    owners: Sequence[str] | None = None,
    translator: KafkaTranslator | None = None,
) -> Callable[[StatefulBody], AssetsDefinition]:
    """Declare an asset whose body is a Spark Structured Streaming query over Kafka tables:
    event-time windows, deduplication, stream-stream joins, state kept across runs.

    The body receives ``context`` and one streaming DataFrame per source (each with its
    watermark from ``event_times``: Flink's ``WATERMARK FOR column AS column - delay``) and
    returns a streaming DataFrame. Each materialization is one ``Trigger.AvailableNow`` run:
    it reads what arrived since the last run, advances the watermark, writes what the query
    emits by then (``output_mode`` ``append``: windows once the watermark passes them;
    ``update``: changed rows, into an ``upsert-kafka`` sink) to ``sink`` with its delivery
    guarantee, and keeps offsets and state in its checkpoint (``checkpoint_location`` joined
    with the asset key, a path or any Hadoop-compatible URI; by default under the Dagster
    instance's storage). Under exactly-once each micro-batch is one transaction, and a batch
    replayed after a crash is not written twice.

    Example:
        >>> @kafka_stateful_asset(sources={"orders": orders}, sink=revenue_per_minute,
        ...                       event_times={"orders": EventTime("ts", 5000)})
        ... def revenue(context, orders):
        ...     w = F.window("ts", "1 minute")
        ...     return orders.groupBy(w).agg(F.sum("amount")).select(
        ...         w.start, w.end, "sum(amount)")

    Raises:
        KafkaOptionsError: no source, a sink without exactly one topic or read by a source, an
            event time for an unknown source, or an output mode other than append and update.
    """
    _check_tables(sources, sink)
    check_split_sources(sources, sink, replays=False, stateful=True)
    event_times = dict(event_times or {})
    unknown = sorted(set(event_times) - set(sources))
    if unknown:
        raise KafkaOptionsError(
            f"event_times name source(s) {', '.join(unknown)} that the asset does not read.",
            keys=("event_times",),
        )
    if output_mode not in ("append", "update"):
        raise KafkaOptionsError(
            f"output_mode {output_mode!r}: a stateful asset writes 'append' (final rows) or "
            f"'update' (changed rows, into an upsert-kafka sink).",
            keys=("output_mode",),
        )
    if output_mode == "update" and not sink.is_upsert:
        raise KafkaOptionsError(
            "output_mode 'update' writes a row again whenever it changes: the sink must be an "
            "'upsert-kafka' table, whose latest value per key is the result.",
            keys=("output_mode",),
        )
    sources = {n: spec.for_role("source") for n, spec in sources.items()}
    sink = sink.for_role("sink")
    prefix = [key_prefix] if isinstance(key_prefix, str) else list(key_prefix or [])
    translator = translator or KafkaTranslator()
    upstream = list(dict.fromkeys(translator.get_asset_spec(s).key for s in sources.values()))

    def decorator(fn: StatefulBody) -> AssetsDefinition:
        key = AssetKey([*prefix, name or fn.__name__])
        tables = StreamingTables(dict(sources), sink, kafka_resource_key, ())
        spec = AssetSpec(
            key,
            deps=[k for k in upstream if k != key],
            group_name=group_name,
            description=description or fn.__doc__,
            kinds={"kafka", "spark"},
            metadata={
                "kafka/sources": MetadataValue.json({n: s.describe() for n, s in sources.items()}),
                "kafka/sink": MetadataValue.json(sink.describe()),
                "kafka/event_times": MetadataValue.json(
                    {n: [t.column, t.delay_ms] for n, t in event_times.items()}
                ),
                **table_metadata(sink),
                **(metadata or {}),
            },
            tags=tags,
            owners=owners,
        )
        return stateful_multi_asset(
            key,
            tables,
            lambda context, frames: fn(context, **frames),
            event_times=event_times,
            spark_resource_key=spark_resource_key,
            output_mode=output_mode,
            checkpoint_location=checkpoint_location,
            specs=[spec],
        )

    return decorator
