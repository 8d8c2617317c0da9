"""Flink SQL scripts as Dagster definitions: one streaming asset per ``INSERT INTO``.

Each insert of a planned script (:func:`~..sql.pipeline.plan_flink_sql`) becomes a
``@kafka_streaming_asset`` whose body runs the translated query over its source tables, keyed by
the translator (the sink table's asset), depending on its source topics, with the Kafka checks
the Python API attaches. A statement set becomes a job that materializes its inserts together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from dagster import (
    AssetsDefinition,
    AssetSelection,
    BackfillPolicy,
    Definitions,
    PartitionsDefinition,
    TimeWindowPartitionsDefinition,
    define_asset_job,
)

from ..asset_decorator import kafka_stateful_asset, kafka_streaming_asset
from ..checks import KafkaAssetCheck
from ..errors import KafkaOptionsError
from ..options import KafkaTableSpec
from ..source_assets import build_kafka_source_assets
from ..sql.pipeline import FlinkSqlPipeline, RunMode, SqlInsert, plan_flink_sql
from ..translator import KafkaTranslator, streaming_asset_attributes

__all__ = [
    "MAX_END_OFFSET",
    "build_flink_sql_definitions",
    "check_end_offset",
    "identifier",
    "partition_period",
]

#: The most windows time-window partitions may reach past (or hold back from) the last complete
#: window: Dagster steps through each of them whenever it looks for the first or last partition.
MAX_END_OFFSET = 1000


def identifier(text: str, default: str) -> str:
    """``text`` as a Dagster name (jobs, sensors, assets: ASCII letters, digits and '_'), else
    ``default``."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or default


def check_end_offset(end_offset: int, key: str = "end_offset") -> None:
    """Refuse an ``end_offset`` beyond :data:`MAX_END_OFFSET` windows, naming ``key``.

    Raises:
        KafkaOptionsError: the offset is out of bounds; the message says what to use instead.
    """
    if -MAX_END_OFFSET <= end_offset <= MAX_END_OFFSET:
        return
    instead = (
        "Use 1 to make the current window a partition: windows further ahead hold no records yet"
        if end_offset > 0
        else "To wait for late records use 'allowed_lateness'; for a fixed last window, 'end'"
    )
    raise KafkaOptionsError(
        f"'{key}' = {end_offset} is out of bounds: at most {MAX_END_OFFSET} windows past the last "
        f"complete one, or held back from it (Dagster steps through each of them whenever it "
        f"looks for a partition). {instead}.",
        keys=(key,),
    )


def partition_period(partitions_def: PartitionsDefinition | None) -> tuple[int, int] | None:
    """``(period_ms, first_start_ms)`` of fixed-length time-window partitions, else None.

    Raises:
        KafkaOptionsError: time windows of varying length (monthly, or across a daylight saving
            change), which no aggregation window divides, or an ``end_offset`` out of bounds
            (:func:`check_end_offset`).
    """
    if partitions_def is None:
        return None
    if not isinstance(partitions_def, TimeWindowPartitionsDefinition):
        raise KafkaOptionsError(
            f"partitions_def is a {type(partitions_def).__name__}: Flink SQL pipelines are "
            f"partitioned by time windows (e.g. HourlyPartitionsDefinition), or not at all.",
            keys=("partitions_def",),
        )
    check_end_offset(partitions_def.end_offset, "partitions_def.end_offset")
    first = partitions_def.get_first_partition_window()
    if first is None:
        raise KafkaOptionsError("partitions_def has no partition yet.", keys=("partitions_def",))
    window, lengths = first, set()
    for _ in range(48):
        lengths.add(window.end - window.start)
        following = partitions_def.get_next_partition_window(window.end, respect_bounds=False)
        if following is None:
            break
        window = following
    if len(lengths) != 1:
        raise KafkaOptionsError(
            "partitions_def has windows of different lengths; a window aggregation needs "
            "partitions of one fixed length (e.g. hourly, or daily in UTC).",
            keys=("partitions_def",),
        )
    period_ms = int(lengths.pop().total_seconds() * 1000)
    return period_ms, int(first.start.timestamp() * 1000)


def _insert_asset(
    insert: SqlInsert,
    pipeline: FlinkSqlPipeline,
    translator: KafkaTranslator,
    options: Mapping[str, Any],
) -> AssetsDefinition:
    parallelism = pipeline.settings.get("parallelism.default")
    # Key, group, owners, tags and metadata as the translator gives the sink's topic asset;
    # the explicit options win.
    attributes = streaming_asset_attributes(translator.get_asset_spec(insert.sink))
    attributes["metadata"] = {
        **(attributes["metadata"] or {}),
        "flink_sql/run_mode": insert.mode.value,
        "flink_sql/line": insert.line,
    }
    attributes["tags"] = {**(attributes["tags"] or {}), **(options.get("tags") or {})} or None
    # the group: given > the translator's > the script's SET 'pipeline.name'
    attributes["group_name"] = attributes.get("group_name") or pipeline.name
    given = {
        k: v
        for k, v in options.items()
        # (lateness widens time windows: it goes with a partitions_def only)
        if v is not None and k != "tags" and (options["partitions_def"] or k != "allowed_lateness")
    }
    if insert.lookback_ms:
        given["lookback"] = timedelta(milliseconds=insert.lookback_ms)
    if insert.watermark_lateness_ms:  # the WATERMARK's delay, on top of any allowed lateness
        given["allowed_lateness"] = given.get("allowed_lateness", timedelta(0)) + timedelta(
            milliseconds=insert.watermark_lateness_ms
        )
    location = given.pop("checkpoint_location", None)
    description = (
        f"Flink SQL: INSERT INTO {insert.name} (line {insert.line}), "
        f"{insert.mode.value} runs.\n\n{insert.query.text}"
    )
    if insert.mode == RunMode.STATEFUL:
        given = {**given, "checkpoint_location": location}
        return _stateful_asset(insert, translator, attributes, given, description)

    @kafka_streaming_asset(
        sources=insert.sources,
        sink=insert.sink,
        description=description,
        translator=translator,
        min_splits=int(parallelism) if parallelism else None,
        from_checkpoint=insert.mode == RunMode.INCREMENTAL,
        **{**attributes, **given},
    )
    def _sql_asset(context: Any, **frames: Any) -> Any:
        spark = next(iter(frames.values())).sparkSession
        window = None
        if insert.mode == RunMode.WINDOWS:
            tw = context.partition_time_window
            window = (int(tw.start.timestamp() * 1000), int(tw.end.timestamp() * 1000))
        return insert.run_query(spark, frames, window)

    return _sql_asset


def _stateful_asset(
    insert: SqlInsert,
    translator: KafkaTranslator,
    attributes: Mapping[str, Any],
    given: Mapping[str, Any],
    description: str,
) -> AssetsDefinition:
    """A ``STATEFUL`` insert as a stateful asset: its query on Structured Streaming."""
    if given.get("checks"):
        raise KafkaOptionsError(
            f"INSERT INTO {insert.name} (line {insert.line}) runs as a stateful streaming query, "
            f"whose micro-batches commit as they go: the Kafka checks, which gate or follow one "
            f"run's commit, do not apply to it. Pass checks=[] or none.",
            keys=("checks",),
        )
    passed = ("kafka_resource_key", "spark_resource_key", "checkpoint_location")

    @kafka_stateful_asset(
        sources=insert.sources,
        sink=insert.sink,
        event_times=insert.event_times,
        output_mode=insert.output_mode,
        description=description,
        translator=translator,
        **{k: v for k, v in {**attributes, **given}.items() if k in _ATTRIBUTES or k in passed},
    )
    def _sql_asset(context: Any, **frames: Any) -> Any:
        spark = next(iter(frames.values())).sparkSession
        return insert.run_query(spark, frames)

    return _sql_asset


#: The asset attributes (from the translator, or given) a stateful asset takes.
_ATTRIBUTES = ("name", "key_prefix", "group_name", "owners", "tags", "metadata")


def build_flink_sql_definitions(
    script: str | Path,
    *,
    tables: Mapping[str, KafkaTableSpec] | None = None,
    translator: KafkaTranslator | None = None,
    group_name: str | None = None,
    partitions_def: PartitionsDefinition | None = None,
    allowed_lateness: timedelta = timedelta(0),
    kafka_resource_key: str = "kafka",
    spark_resource_key: str = "pyspark",
    tags: Mapping[str, str] | None = None,
    include_source_assets: bool = True,
    backfill_policy: BackfillPolicy | None = None,
    checks: Sequence[KafkaAssetCheck] | None = None,
    checkpoint_location: str | None = None,
) -> Definitions:
    """Dagster definitions for a Flink SQL script (its text, or the path of a ``.sql`` file).

    One streaming asset per ``INSERT INTO``, named by ``translator`` after its sink table, in
    ``group_name`` (else the translator's group, else the script's ``SET 'pipeline.name'``); its
    source topics as external observable assets (``include_source_assets``); a job per
    statement set. With a time-window ``partitions_def`` every asset is partitioned by it (window
    aggregations must fit inside its windows); backfills are single runs, as for Python streaming
    assets, unless ``backfill_policy`` says otherwise. The translator's spec of each sink table
    also gives its asset's owners, tags and metadata. ``checks`` are attached to every insert's
    asset (None: the defaults of the Python API). A ``stateful`` insert (an event-time window
    aggregation) runs on Structured Streaming with its checkpoint under
    ``checkpoint_location`` (by default the Dagster instance's storage; see
    :func:`~..asset_decorator.kafka_stateful_asset`).

    Raises:
        FlinkSqlError: the script does not plan (see :func:`~..sql.pipeline.plan_flink_sql`),
            with the line and column.
        KafkaOptionsError: a partitions definition that is not fixed time windows.

    Example:
        >>> defs = build_flink_sql_definitions(Path("orders.sql"))  # doctest: +SKIP
    """
    pipeline = plan_flink_sql(script, tables=tables, windows=partition_period(partitions_def))
    translator = translator or KafkaTranslator()
    options: dict[str, Any] = {
        "group_name": group_name,
        "partitions_def": partitions_def,
        "allowed_lateness": allowed_lateness,
        "kafka_resource_key": kafka_resource_key,
        "spark_resource_key": spark_resource_key,
        "tags": tags,
        "backfill_policy": backfill_policy,
        "checks": checks,
        "checkpoint_location": checkpoint_location,
    }
    assets = [_insert_asset(i, pipeline, translator, options) for i in pipeline.inserts]
    jobs: list[Any] = []
    for number in sorted({i.statement_set for i in pipeline.inserts if i.statement_set}):
        members = [
            a for a, i in zip(assets, pipeline.inserts, strict=True) if i.statement_set == number
        ]
        prefix = identifier(pipeline.name or "", "flink_sql")
        jobs.append(
            define_asset_job(
                f"{prefix}_statement_set_{number}",
                selection=AssetSelection.assets(*members),
                partitions_def=partitions_def,
                description="The INSERT INTO statements of one Flink SQL statement set, run "
                "together.",
            )
        )
    extra: Sequence[AssetsDefinition] = (
        build_kafka_source_assets(
            assets,
            translator=translator,
            kafka_resource_key=kafka_resource_key,
            name=f"{identifier(pipeline.name or '', 'flink_sql')}_source_topics",
            group_name=group_name or pipeline.name,
        )
        if include_source_assets
        else []
    )
    return Definitions(assets=[*assets, *extra], jobs=jobs)
