"""``KafkaIOManager``: Kafka tables as Dagster asset inputs and outputs, as Spark DataFrames.

A Kafka table is attached to an asset through its definition metadata
(:func:`kafka_table_metadata`). Loading an input reads the table's planned offset range (its
``scan.startup.mode`` / ``scan.bounded.mode``, or the offsets of a time-window partition) into a
DataFrame of the declared columns; handling an output writes a DataFrame to the table's topic with
its ``sink.delivery-guarantee`` and records Flink-named metrics in the materialization.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagster import (
    ConfigurableIOManager,
    ConfigurableResource,
    InputContext,
    MetadataValue,
    OutputContext,
    TimeWindowPartitionsDefinition,
)
from pydantic import Field, PrivateAttr, field_validator

from .errors import KafkaConnectorError
from .options import ROW_KIND, KafkaTableSpec
from .partitions import time_windows
from .resources import KafkaResource
from .run import metrics as m
from .translator import table_spec_from_metadata

if TYPE_CHECKING:  # pragma: no cover
    from dagster import InitResourceContext
    from pyspark.sql import DataFrame, SparkSession

    from .run import StreamingRun
    from .sink.writer import WriteResult


def _is_spark_dataframe(obj: Any) -> bool:
    from pyspark.sql import DataFrame

    return isinstance(obj, DataFrame)


def _declared_columns(frame: DataFrame, spec: KafkaTableSpec) -> DataFrame:
    """Exactly the table's declared columns, in declaration order (as Flink's table schema),
    and ``_rowkind`` for a changelog table."""
    if not spec.columns:
        return frame
    kinds = [ROW_KIND] if spec.is_changelog and ROW_KIND in frame.columns else []
    names = [c.name for c in spec.columns] + kinds
    return frame.select(*("`" + n.replace("`", "``") + "`" for n in names))


class KafkaIOManager(ConfigurableIOManager):
    """Loads Kafka tables as Spark DataFrames and writes DataFrames to Kafka tables.

    Each asset handled by this IO manager declares its table in its metadata with
    :func:`kafka_table_metadata`. An input is the table's planned range: the table's
    ``scan.startup.mode`` to its ``scan.bounded.mode`` (stateless: no checkpoint, no offsets
    committed), or, for a time-window partition, the records whose timestamps fall in the
    window. An output is written with the table's ``sink.delivery-guarantee``; the run fails when
    an ``at-least-once`` record is not delivered.

    Example:
        >>> orders = AssetSpec("orders", metadata=kafka_table_metadata(orders_table)
        ...                   ).with_io_manager_key("kafka_io")  # doctest: +SKIP
        >>> @asset(io_manager_key="kafka_io", metadata=kafka_table_metadata(revenue_table))
        ... def revenue(orders):  # doctest: +SKIP
        ...     return orders.groupBy("order_channel").agg(F.sum("real_pay").alias("revenue"))
        >>> Definitions(assets=[orders, revenue], resources={"kafka_io": KafkaIOManager(
        ...     kafka=KafkaResource(bootstrap_servers="127.0.0.1:9092"),
        ...     pyspark=SparkResource(spark_config=local_spark_config()))})  # doctest: +SKIP
    """

    kafka: KafkaResource = Field(
        description="The Kafka connection: bootstrap servers and client properties of every "
        "table this IO manager reads or writes."
    )
    pyspark: ConfigurableResource = Field(
        description="The Spark session resource: SparkResource or dagster-pyspark's "
        "PySparkResource / LazyPySparkResource (anything with a 'spark_session')."
    )
    max_records_per_split: int = Field(
        default=2_000_000,
        gt=0,
        description="Offset ranges larger than this are read by several Spark tasks.",
    )
    _runs: list[StreamingRun] = PrivateAttr(default_factory=list)

    @field_validator("pyspark")
    @classmethod
    def _has_spark_session(cls, value: Any) -> Any:
        if not hasattr(type(value), "spark_session"):
            raise ValueError(
                f"'pyspark' must be a Spark session resource (SparkResource, PySparkResource, "
                f"LazyPySparkResource), got {type(value).__name__}."
            )
        return value

    def _spark_session(self) -> SparkSession:
        return self.pyspark.spark_session  # type: ignore[attr-defined,no-any-return]

    def _run(self, log: Any, **kwargs: Any) -> StreamingRun:
        from .materialization import table_run

        return table_run(
            self._spark_session(),
            self.kafka,
            log,
            max_records_per_split=self.max_records_per_split,
            **kwargs,
        )

    def load_input(self, context: InputContext) -> DataFrame:
        """Read the upstream asset's Kafka table (its planned range) as a DataFrame."""
        asset = context.asset_key.to_user_string()
        upstream = context.upstream_output
        metadata = upstream.definition_metadata if upstream is not None else None
        spec = table_spec_from_metadata(metadata, asset, role="source")
        window = ""
        time_window = None
        if context.has_asset_partitions:
            partitions_def = context.asset_partitions_def
            if not isinstance(partitions_def, TimeWindowPartitionsDefinition):
                raise KafkaConnectorError(
                    f"Asset {asset!r} is partitioned by {type(partitions_def).__name__}; "
                    f"KafkaIOManager maps only time-window partitions to offsets (through record "
                    f"timestamps). Use a TimeWindowPartitionsDefinition or no partitions."
                )
            tw = context.asset_partitions_time_window
            time_window = time_windows(partitions_def, context.asset_partition_keys)
            window = f" for time window [{tw.start.isoformat()}, {tw.end.isoformat()})"
        run = self._run(context.log, windows=time_window)
        self._runs.append(run)
        frame = _declared_columns(run.read(asset, spec), spec)
        # The input is handed on: the dirty-data policy applies before the downstream step runs.
        run.apply_dirty_data_policy()
        metrics = {
            k: (MetadataValue.json(v) if isinstance(v, dict | list) else v)
            for k, v in run.metadata().items()
        }
        plan = run.sources[asset].plan
        planned = {
            f"{topic}-{partition}": [start, plan.stops[(topic, partition)]]
            for (topic, partition), start in sorted(plan.starts.items())
        }
        context.log.info(
            f"Kafka table of asset {asset!r}{window}: planned [start, stop) offsets {planned}; "
            f"{metrics[m.NUM_RECORDS_IN.name]} record(s) read, "
            f"{metrics[m.DIRTY_RECORDS.name]} dirty."
        )
        if not context.has_asset_partitions or len(context.asset_partition_keys) == 1:
            # Dagster attaches input metadata to an observation of one partition at most.
            context.add_input_metadata(
                metrics,
                description=f"Kafka offsets read{window}",
            )
        return frame

    def handle_output(self, context: OutputContext, obj: DataFrame) -> None:
        """Write the asset's DataFrame to its Kafka sink table and record the write metrics."""
        asset = context.asset_key.to_user_string()
        spec = table_spec_from_metadata(context.definition_metadata, asset, role="sink")
        if not _is_spark_dataframe(obj):
            raise KafkaConnectorError(
                f"Asset {asset!r} returned {type(obj).__name__}; KafkaIOManager writes a Spark "
                f"DataFrame of the table's columns to topic {spec.topics[0]!r}."
            )
        run = self._run(context.log, sink=spec, asset_name=asset)
        try:
            result = self._write(run, spec, obj)
        finally:
            run.close()
        metrics = run.metadata()
        names = [metric.name for metric in m.OUTPUT_METRICS]
        out: dict[str, Any] = {key: metrics[key] for key in names if key in metrics}
        out["topic"] = spec.topics[0]
        out["sink.delivery-guarantee"] = spec.delivery_guarantee.value
        if result.first_error:
            out["firstError"] = result.first_error
            context.log.warning(
                f"{result.failed} record(s) of asset {asset!r} were not delivered to topic "
                f"{spec.topics[0]!r} ('sink.delivery-guarantee' = "
                f"'{spec.delivery_guarantee.value}'): {result.first_error}"
            )
        context.log.info(f"Wrote asset {asset!r} to Kafka: {out}")
        context.add_output_metadata(out)

    def _write(self, run: StreamingRun, spec: KafkaTableSpec, frame: DataFrame) -> WriteResult:
        """An output reaches Kafka here, with the table's ``sink.delivery-guarantee``.

        ``none`` and ``at-least-once`` go through the writer tasks. For ``exactly-once``,
        ``write`` first fences the asset's previous transactional producer, then produces and
        commits the output in one transaction (an output has no source offsets to commit).
        """
        return run.write(spec, frame)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        """Release the data cached for the inputs loaded during this execution."""
        while self._runs:
            self._runs.pop().close()
