"""Data-ingestion pipeline YAML as Dagster definitions: one asset that runs the pipeline.

The asset reads the pipeline's Kafka source and writes every table it finds to its topic
(:mod:`..ingestion`); each materialization is one bounded run with an offsets checkpoint, as a
streaming asset's, and records what it read, where each table went, how many records each
topic got and each table's schema (kept for the next run). It depends on the source topic's
asset and carries the Kafka checks that apply without a sink table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Definitions,
    MetadataValue,
    TableColumn,
    TableSchema,
)

from ..checks import (
    ConsumerLagCheck,
    DirtyDataCheck,
    KafkaAssetCheck,
    check_names_are_unique,
    default_checks,
)
from ..errors import KafkaOptionsError
from ..history import saved_schemas
from ..ingestion import DataIngestionPipeline, IngestionResult, IngestionRun, parse_data_ingestion
from ..materialization import RunOutput, StreamingTables, streaming_multi_asset
from ..options import redact
from ..run.schema import CHANGES_METADATA_PREFIX, SCHEMA_METADATA_PREFIX
from ..sensors import build_kafka_discovery_sensors
from ..source_assets import build_kafka_source_assets
from ..translator import KafkaTranslator
from .flink_sql import identifier

if TYPE_CHECKING:  # pragma: no cover
    from ..run import StreamingRun

__all__ = ["build_data_ingestion_definitions"]

#: Metadata keys of a pipeline run: where each source table went, what each topic got, and
#: how many records each table had.
ROUTING_METADATA = "kafka/ingestion/routing"
TOPICS_METADATA = "kafka/ingestion/topics"
TABLES_METADATA = "kafka/ingestion/tables"
#: The checks that apply to a pipeline (its sink writes many topics, so it has no sink table).
_CHECKS = (DirtyDataCheck, ConsumerLagCheck)


def _asset_name(pipeline: DataIngestionPipeline, given: str | None, source: Any) -> str:
    stem = Path(source).stem if isinstance(source, Path) else None
    return identifier(given or pipeline.name or stem or "", "data_ingestion")


def _result_metadata(
    result: IngestionResult, saved: Mapping[str, Mapping[str, str]]
) -> dict[str, Any]:
    """The run's routing, topics, tables and schemas (the schemas of tables this run did not
    see are carried over, so the next run still finds them)."""
    by_topic = dict(sorted(result.write.by_topic.items())) if result.write else {}
    out: dict[str, Any] = {
        ROUTING_METADATA: MetadataValue.json(result.routing()),
        TOPICS_METADATA: MetadataValue.json(by_topic),
        TABLES_METADATA: MetadataValue.json({str(t): n for t, n in sorted(result.records.items())}),
    }
    schemas = {**saved, **{str(t): s.to_json() for t, s in result.schemas.items()}}
    for table, fields in sorted(schemas.items()):
        columns = [TableColumn(n, t) for n, t in fields.items()]
        out[SCHEMA_METADATA_PREFIX + table] = MetadataValue.table_schema(TableSchema(columns))
    for source_table, schema in sorted(result.schemas.items()):
        changes = [str(c) for c in schema.changes]
        changes += [f"refused (incompatible): {c}" for c in schema.refused]
        if changes:
            out[CHANGES_METADATA_PREFIX + str(source_table)] = MetadataValue.json(changes)
    return out


def _checks(
    checks: Sequence[KafkaAssetCheck] | None, pipeline: DataIngestionPipeline, asset: str
) -> tuple[KafkaAssetCheck, ...]:
    source = {pipeline.source.name: pipeline.source.spec}
    attached = tuple(checks) if checks is not None else tuple(default_checks(source, None))
    other = [c.name for c in attached if not isinstance(c, _CHECKS)]
    if other:
        raise KafkaOptionsError(
            f"Check(s) {', '.join(other)}: a data-ingestion pipeline writes many topics and has "
            f"no sink table; it takes DirtyDataCheck and ConsumerLagCheck.",
            keys=("checks",),
        )
    check_names_are_unique(attached, asset)
    return attached


def _body(
    context: Any, pipeline: DataIngestionPipeline, key: AssetKey
) -> Callable[[StreamingRun], RunOutput]:
    """The pipeline's part of a run: read, decode, transform, route and write every table;
    its routing, topics, tables and schemas as metadata."""

    def body(run: StreamingRun) -> RunOutput:
        saved = saved_schemas(context.instance, key)
        result = IngestionRun(pipeline, run, saved).execute()
        context.log.info(f"Data ingestion {key.to_user_string()!r}: {result.routing()}")
        return RunOutput(metadata=_result_metadata(result, saved))

    return body


def _description(pipeline: DataIngestionPipeline) -> str:
    source, sink = pipeline.source, pipeline.sink
    topics = ";".join(source.spec.topics) or f"/{source.spec.topic_pattern}/"
    where = sink.topic or ("mapped topics" if sink.mapping.rules else "one topic per table id")
    return (
        f"Data ingestion: {source.value_format} records of Kafka {topics} → {sink.value_format} "
        f"in {where} ({len(pipeline.routes)} route(s), {len(pipeline.transforms)} transform(s))."
    )


def build_data_ingestion_definitions(
    pipeline: str | Path | Mapping[str, Any] | DataIngestionPipeline,
    *,
    variables: Mapping[str, str] | None = None,
    name: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    group_name: str | None = None,
    translator: KafkaTranslator | None = None,
    checks: Sequence[KafkaAssetCheck] | None = None,
    kafka_resource_key: str = "kafka",
    spark_resource_key: str = "pyspark",
    include_source_assets: bool = True,
    discovery_sensor: bool = False,
    tags: Mapping[str, str] | None = None,
) -> Definitions:
    """Dagster definitions for a data-ingestion pipeline YAML (Kafka → Kafka on Spark).

    ``pipeline`` is the YAML text, a ``Path`` to the file, its parsed mapping or a parsed
    :class:`~..ingestion.DataIngestionPipeline`; ``variables`` replace its ``${name}``
    placeholders. The definitions hold one asset (named ``name``, else ``pipeline.name``, else
    the file's stem) whose materialization runs the pipeline once: it reads the source's new
    records (from the last run's checkpoint, else ``scan.startup.mode``), groups them by table,
    applies ``transform`` and ``route`` and writes each table to its topic with the sink's
    delivery guarantee. The source topic is an observable asset (``include_source_assets``);
    with ``discovery_sensor`` a sensor watches it for new partitions at
    ``scan.topic-partition-discovery.interval``. ``checks`` are DirtyDataCheck and
    ConsumerLagCheck (None: a dirty-data check when the source tolerates dirty records).
    Resources are the code location's (``kafka``, ``pyspark``).

    Raises:
        KafkaOptionsError: a key of the YAML that is unknown, refused or malformed (naming the
            section and the key), a source or sink that is not Kafka, or a check that does not
            apply.

    Example:
        >>> defs = build_data_ingestion_definitions(  # doctest: +SKIP
        ...     Path("mysql_cdc_to_topics.yaml"), variables={"kafka.topic": "cdc"})
        >>> materialize(defs.assets, resources=resources)  # doctest: +SKIP
    """
    parsed = (
        pipeline
        if isinstance(pipeline, DataIngestionPipeline)
        else parse_data_ingestion(pipeline, variables=variables, name=name)
    )
    translator = translator or KafkaTranslator()
    prefix = [key_prefix] if isinstance(key_prefix, str) else list(key_prefix or [])
    key = AssetKey([*prefix, _asset_name(parsed, name, pipeline)])
    attached = _checks(checks, parsed, key.to_user_string())
    source = parsed.source
    group = group_name or (identifier(parsed.name, "data_ingestion") if parsed.name else None)
    tables = StreamingTables({source.name: source.spec}, None, kafka_resource_key, attached)
    upstream = translator.get_asset_spec(source.spec).key
    spec = AssetSpec(
        key,
        deps=[upstream],
        description=_description(parsed),
        group_name=group,
        kinds={"kafka", "spark"},
        tags=dict(tags or {}) or None,
        metadata={
            "kafka/sources": MetadataValue.json({source.name: source.spec.describe()}),
            "kafka/sink": MetadataValue.json(dict(sorted(redact(parsed.sink.options).items()))),
        },
    )

    ingest = streaming_multi_asset(
        key,
        tables,
        lambda context: _body(context, parsed, key),
        spark_resource_key=spark_resource_key,
        min_splits=parsed.parallelism,
        writes_with=parsed.sink.spec,
        specs=[spec],
    )
    extra: list[AssetsDefinition] = (
        build_kafka_source_assets(
            [ingest],
            translator=translator,
            kafka_resource_key=kafka_resource_key,
            name=f"{key.to_python_identifier()}_source_topics",
            group_name=group,
        )
        if include_source_assets
        else []
    )
    sensors = build_kafka_discovery_sensors([ingest]) if discovery_sensor else []
    return Definitions(assets=[ingest, *extra], sensors=sensors)
