"""``KafkaIOManager``: Kafka tables as Dagster asset inputs and outputs, as Spark DataFrames.

A Kafka table is attached to an asset through its definition metadata
(:func:`kafka_table_metadata`). Loading an input reads the table's planned offset range (its
``scan.startup.mode`` / ``scan.bounded.mode``, or the offsets of a time-window partition) into a
DataFrame of the declared columns; handling an output writes a DataFrame to the table's topic with
its ``sink.delivery-guarantee`` and records Flink-named metrics in the materialization.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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

from .errors import KafkaConnectorError, KafkaOptionsError
from .options import ROW_KIND, KafkaTableSpec, is_secret
from .partitions import time_windows
from .resources import KafkaResource
from .run import metrics as m

if TYPE_CHECKING:  # pragma: no cover
    from dagster import InitResourceContext
    from pyspark.sql import DataFrame, SparkSession

    from .run import StreamingRun
    from .sink.writer import WriteResult

#: The definition-metadata key that holds an asset's Kafka table declaration.
TABLE_METADATA_KEY = "kafka/table"
#: Version of the declaration's JSON layout.
TABLE_METADATA_VERSION = 1
_DECLARATION_KEYS = frozenset({"version", "name", "options", "columns", "primary_key"})


def _column_json(column: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": column.name, "type": column.type}
    if column.metadata_key is not None:
        out["metadata_key"] = column.metadata_key
    if column.virtual:
        out["virtual"] = True
    if column.expression is not None:
        out["expression"] = column.expression
    if column.comment is not None:
        out["comment"] = column.comment
    return out


def kafka_table_metadata(spec: KafkaTableSpec) -> dict[str, Any]:
    """Asset metadata that attaches the Kafka table ``spec`` to an asset for ``KafkaIOManager``.

    Use it on ``@asset(metadata=...)`` (the asset's output is written to the table) or on an
    ``AssetSpec`` of an external topic (downstream assets load the table). The declaration holds
    the options, columns and primary key as JSON and is shown in the Dagster UI, so secret
    options are refused: set them on ``KafkaResource.properties`` (e.g. from ``EnvVar``).

    Example:
        >>> orders = KafkaTableSpec.from_options(
        ...     {"connector": "kafka", "topic": "orders", "format": "json",
        ...      "scan.startup.mode": "earliest-offset"},
        ...     columns=[{"name": "order_id", "type": "BIGINT"}],
        ... )
        >>> spec = AssetSpec("orders", metadata=kafka_table_metadata(orders))  # doctest: +SKIP

    Raises:
        KafkaOptionsError: the table sets a secret option (password, JAAS configuration, ...).
    """
    secrets = sorted(k for k in spec.options if is_secret(k))
    if secrets:
        raise KafkaOptionsError(
            f"Table {spec.name or spec.topics or spec.topic_pattern!r} sets secret option(s) "
            f"{', '.join(repr(k) for k in secrets)}, which asset metadata would show in the "
            f"Dagster UI; set them on KafkaResource.properties (without the 'properties.' "
            f"prefix, e.g. from EnvVar) instead.",
            keys=tuple(secrets),
        )
    declaration: dict[str, Any] = {
        "version": TABLE_METADATA_VERSION,
        "options": dict(sorted(spec.options.items())),
        "columns": [_column_json(c) for c in spec.columns],
        "primary_key": list(spec.primary_key),
    }
    if spec.name is not None:
        declaration["name"] = spec.name
    return {TABLE_METADATA_KEY: MetadataValue.json(declaration)}


def table_spec_from_metadata(
    metadata: Mapping[str, Any] | None, asset: str, *, role: str | None = None
) -> KafkaTableSpec:
    """Rebuild the Kafka table declared in an asset's metadata by :func:`kafka_table_metadata`.

    Args:
        metadata: the asset's definition metadata.
        asset: the asset's name, for messages (and the table name when the declaration has none).
        role: ``"source"`` or ``"sink"``: the direction the table is used in.

    Raises:
        KafkaOptionsError: naming the asset, when the declaration is missing or invalid.
    """
    value = (metadata or {}).get(TABLE_METADATA_KEY)
    if value is None:
        raise KafkaOptionsError(
            f"Asset {asset!r} has no Kafka table declaration: KafkaIOManager needs its metadata "
            f"to hold {TABLE_METADATA_KEY!r}; add metadata=kafka_table_metadata(table) to the "
            f"asset (or to its AssetSpec)."
        )
    data = getattr(value, "data", value)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise KafkaOptionsError(
                f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} is not valid JSON ({exc})."
            ) from None
    if not isinstance(data, Mapping) or not isinstance(data.get("options"), Mapping):
        raise KafkaOptionsError(
            f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} must be a mapping with an "
            f"'options' mapping, as kafka_table_metadata(table) builds it."
        )
    version = data.get("version", TABLE_METADATA_VERSION)
    if version != TABLE_METADATA_VERSION:
        raise KafkaOptionsError(
            f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} has version {version!r}; this "
            f"library reads version {TABLE_METADATA_VERSION}. Rebuild it with "
            f"kafka_table_metadata(table)."
        )
    unknown = sorted(str(k) for k in data if k not in _DECLARATION_KEYS)
    if unknown:
        raise KafkaOptionsError(
            f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} has unknown field(s) "
            f"{', '.join(unknown)}; allowed: {', '.join(sorted(_DECLARATION_KEYS))}."
        )
    columns = data.get("columns") or []
    primary_key = data.get("primary_key") or []
    if not isinstance(columns, list) or not isinstance(primary_key, list):
        raise KafkaOptionsError(
            f"Asset {asset!r}: 'columns' and 'primary_key' of metadata {TABLE_METADATA_KEY!r} "
            f"must be lists."
        )
    try:
        return KafkaTableSpec.from_options(
            data["options"],
            columns=columns,
            primary_key=[str(k) for k in primary_key],
            role=role,
            name=str(data.get("name") or asset),
        )
    except KafkaOptionsError as exc:
        raise KafkaOptionsError(
            f"Asset {asset!r}: invalid Kafka table declaration: {exc}", keys=exc.keys
        ) from None


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
        from .run import StreamingRun

        return StreamingRun(
            spark=self._spark_session(),
            defaults=self.kafka.connection_defaults(),
            checkpoint=None,
            max_records_per_split=self.max_records_per_split,
            log=log,
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
        run.police()  # the input is handed on: its dirty records are policed before
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
        """The one place output reaches Kafka, with the table's ``sink.delivery-guarantee``.

        ``none`` and ``at-least-once`` go through the writer tasks. For ``exactly-once``,
        ``write`` first fences the asset's previous transactional producer, then produces and
        commits the output in one transaction (an output has no source offsets to commit).
        """
        return run.write(spec, frame)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        """Release the data cached for the inputs loaded during this execution."""
        while self._runs:
            self._runs.pop().close()
