"""``@kafka_streaming_asset``: a Dagster asset whose body is a Spark query over Kafka tables.

The framework plans the sources' offset ranges (checkpoint first, then ``scan.startup.mode``),
reads and decodes them, calls the body with one DataFrame per source, writes the result to the
sink table with its delivery guarantee, and records the new offsets checkpoint and Flink-named
metrics in the materialization. A run that raises records nothing: the checkpoint stays put.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)

from .errors import KafkaOptionsError
from .options import KafkaTableSpec
from .state.checkpoint import CHECKPOINT_METADATA_KEY, OffsetsCheckpoint

StreamingBody = Callable[..., Any]


def latest_checkpoint(context: AssetExecutionContext) -> OffsetsCheckpoint | None:
    """The offsets checkpoint of the asset's last successful materialization, if any."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    if event is None or event.asset_materialization is None:
        return None
    value = event.asset_materialization.metadata.get(CHECKPOINT_METADATA_KEY)
    if value is None:
        return None
    return OffsetsCheckpoint.from_json(getattr(value, "data", value))


def _metadata(run: Any, checkpoint: OffsetsCheckpoint) -> dict[str, Any]:
    metrics = run.metadata()
    offsets = metrics.pop("offsets")
    out: dict[str, Any] = {k: v for k, v in metrics.items()}
    out["offsets"] = MetadataValue.json(offsets)
    out[CHECKPOINT_METADATA_KEY] = MetadataValue.json(checkpoint.to_json())
    samples = [s for r in run.sources.values() for s in r.dirty_samples]
    if samples:
        out["dirtySamples"] = MetadataValue.json(samples)
    return out


def kafka_streaming_asset(
    *,
    sources: Mapping[str, KafkaTableSpec],
    sink: KafkaTableSpec | None = None,
    name: str | None = None,
    key_prefix: str | Sequence[str] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    kafka_resource_key: str = "kafka",
    spark_resource_key: str = "pyspark",
    max_records_per_split: int = 2_000_000,
    min_splits: int | None = None,
    **asset_kwargs: Any,
) -> Callable[[StreamingBody], AssetsDefinition]:
    """Declare an asset whose body is a Spark query over Kafka source tables.

    The body receives ``context`` and one DataFrame per source (by the ``sources`` names) and
    returns a DataFrame. With ``sink`` the result is written to that Kafka table and the asset
    materializes with metrics; without, the DataFrame goes to the asset's IO manager.
    Ranges larger than ``max_records_per_split`` are read by several Spark tasks, and at least
    ``min_splits`` tasks read when given (Spark's ``minPartitions``). With an exactly-once sink
    the transactional id is ``<sink.transactional-id-prefix>-<asset key>-0``.

    Example:
        >>> @kafka_streaming_asset(sources={"orders": orders}, sink=channel_revenue_table)
        ... def channel_revenue(context, orders):
        ...     return orders.groupBy("order_channel").count()
    """
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

    def decorator(fn: StreamingBody) -> AssetsDefinition:
        source_keys = {"sources": sorted(sources)}

        @asset(
            name=name or fn.__name__,
            key_prefix=key_prefix,
            group_name=group_name,
            description=description or fn.__doc__,
            required_resource_keys={kafka_resource_key, spark_resource_key},
            kinds={"kafka", "spark"},
            metadata={
                "kafka/sources": MetadataValue.json({n: s.describe() for n, s in sources.items()}),
                **({"kafka/sink": MetadataValue.json(sink.describe())} if sink else {}),
            },
            **asset_kwargs,
        )
        def _streaming_asset(context) -> Any:  # type: ignore[no-untyped-def]
            from ._runner import KafkaRun

            kafka = getattr(context.resources, kafka_resource_key)
            spark = getattr(context.resources, spark_resource_key).spark_session
            run = KafkaRun(
                spark=spark,
                properties_for=kafka.client_properties,
                checkpoint=latest_checkpoint(context),
                max_records_per_split=max_records_per_split,
                min_splits=min_splits,
                sink=sink,
                asset_name=context.asset_key.to_user_string(),
                log=context.log,
            )
            try:
                frames = {n: run.read(n, spec) for n, spec in sources.items()}
                result = fn(context, **frames)
                if sink is not None:
                    run.write(sink, result)
                checkpoint = run.commit()
                metadata = _metadata(run, checkpoint)
                context.log.info(f"Kafka run {source_keys}: {metadata}")
                if sink is not None:
                    return MaterializeResult(metadata=metadata)
                return Output(result, metadata=metadata)
            finally:
                if sink is not None:
                    run.close()

        return _streaming_asset

    return decorator
