"""``KafkaPipelineComponent``: Kafka tables and streaming assets declared in a ``defs.yaml``.

The YAML front end over the Python API: tables as Flink options (or Flink SQL DDL) become
``KafkaTableSpec`` objects when the component loads, each ``assets`` entry becomes
``@kafka_streaming_asset`` assets (a Spark SQL query, or Flink SQL ``INSERT INTO`` statements
through :func:`~..flink_sql.build_flink_sql_definitions`), with their checks, partitions,
sensors, source topics and the ``kafka`` / ``pyspark`` resources.

An invalid declaration fails the load with a :class:`~...errors.KafkaComponentError` that names
the file and line, the table or asset and the option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from dagster import (
    AssetsDefinition,
    AssetSpec,
    Definitions,
    JobDefinition,
    SensorDefinition,
)
from dagster.components import (
    Component,
    ComponentLoadContext,
    Model,
    ResolutionContext,
    Resolvable,
    Resolver,
    scaffold_with,
)
from dagster.components.resolved.core_models import AssetAttributesModel
from dagster.components.resolved.errors import ResolutionException
from dagster.components.utils.translation import TranslationFn, TranslatorResolvingInfo
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from ...asset_decorator import kafka_streaming_asset
from ...errors import FlinkSqlError, KafkaComponentError, KafkaOptionsError
from ...options import REDACTED, KafkaTableSpec
from ...resources import KafkaResource
from ...sensors import build_kafka_discovery_sensors, build_kafka_new_data_sensor
from ...source_assets import build_kafka_source_assets
from ...spark import SparkResource, local_spark_config
from ...sql import CreateTable, parse_flink_sql
from ...translator import KafkaTranslator, streaming_asset_attributes
from ..data_ingestion import build_data_ingestion_definitions
from ..flink_sql import build_flink_sql_definitions, identifier
from .scaffolder import KafkaPipelineScaffolder
from .schema import AssetModel, DataIngestionModel, SensorsModel, TableModel, duration

if TYPE_CHECKING:  # pragma: no cover
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )
    from dagster_shared.yaml_utils.source_position import SourcePositionTree
    from pyspark.sql import DataFrame

__all__ = ["KafkaPipelineComponent"]

_Path = Sequence[str | int]


class _ComponentLoadError(KafkaComponentError, ResolutionException):
    """A :class:`KafkaComponentError` that Dagster passes on as it is while it resolves the
    YAML (another error it wraps with the lines around the field: values, passwords included)."""


def _validation_text(exc: ValidationError) -> str:
    """A pydantic error's locations and reasons, without the values (a value may be a secret)."""
    found = exc.errors(include_input=False, include_url=False, include_context=False)
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in found)


def _checks(entry: AssetModel | DataIngestionModel, yaml: _Yaml, path: _Path) -> list[Any] | None:
    """The entry's checks as listed (None: the defaults), each blamed on its YAML line."""
    if entry.checks is None:
        return None
    checks = []
    for kind, model in entry.checks.listed():
        with yaml.blame([*path, "checks", kind], f"{entry.label}, check '{kind}'"):
            checks.append(model.build())
    return checks


class _Yaml:
    """Where the parts of a component's YAML are, for messages: ``file:line``."""

    def __init__(self, tree: SourcePositionTree | None) -> None:
        self.tree = tree

    def where(self, path: _Path, keys: Sequence[str] = ()) -> str:
        """``file:line`` of the deepest of ``path + [key]`` / ``path + ['options', key]`` found."""
        if self.tree is None:
            return "KafkaPipelineComponent attributes"
        for candidate in [*[[*path, "options", k] for k in keys], *[[*path, k] for k in keys]]:
            found = self.tree.lookup(candidate)
            if found is not None:
                return f"{found.filename}:{found.start.line}"
        position, _ = self.tree.lookup_closest_and_path(path, None)
        return f"{position.filename}:{position.start.line}"

    def where_in_text(self, path: _Path, line: int) -> str | None:
        """``file:line`` of line ``line`` of the text (Flink SQL) at ``path``, when known."""
        position = self.tree.lookup(path) if self.tree is not None else None
        if position is None:
            return None
        try:
            first = Path(position.filename).read_text().splitlines()[position.start.line - 1]
        except (OSError, IndexError):
            return None
        # A block scalar ('ddl: |') starts on the line after its key; a quoted one on it.
        block = re.search(r"[|>][-+0-9]*\s*(#.*)?$", first) is not None
        return f"{position.filename}:{position.start.line + line - (0 if block else 1)}"

    @contextmanager
    def blame(self, path: _Path, what: str, sql: _Path | None = None) -> Iterator[None]:
        """Re-raise an option error inside as a :class:`KafkaComponentError` located at
        ``path`` (or the option it names below it; or, for a Flink SQL error in the text at
        ``sql``, its line)."""
        try:
            yield
        except KafkaComponentError:
            raise
        except ValidationError as exc:
            raise _ComponentLoadError(
                f"{what}: {_validation_text(exc)}", location=self.where(path)
            ) from None
        except KafkaOptionsError as exc:
            keys = tuple(exc.keys)
            location = None
            if isinstance(exc, FlinkSqlError) and sql is not None:
                location = self.where_in_text(sql, exc.line)
            quoted = ", ".join(repr(k) for k in keys)
            named = f", option{'s' if len(keys) > 1 else ''} {quoted}" if keys else ""
            raise _ComponentLoadError(
                f"{what}{named}: {exc}", location=location or self.where(path, keys), keys=keys
            ) from exc


def _component_folder(context: ResolutionContext) -> Path:
    """The folder of the ``defs.yaml`` being resolved (files are relative to it)."""
    from dagster.components.core.context import RESOLUTION_CONTEXT_STASH_KEY

    load_context = context.stash.get(RESOLUTION_CONTEXT_STASH_KEY)
    path = getattr(load_context, "path", None)
    return Path(path) if path is not None else Path.cwd()


def _ddl_table(name: str, text: str) -> KafkaTableSpec:
    tables = [s for s in parse_flink_sql(text) if isinstance(s, CreateTable)]
    found = [t for t in tables if t.name == name]
    if not found:
        declared = ", ".join(repr(t.name) for t in tables) or "none"
        raise KafkaOptionsError(
            f"the Flink SQL declares no CREATE TABLE {name} (tables declared: {declared}); name "
            f"the entry like its table."
        )
    if found[0].spec is None:
        raise KafkaOptionsError(
            f"CREATE TABLE {name} uses connector {found[0].connector!r}; a Kafka pipeline reads "
            f"and writes 'kafka' and 'upsert-kafka' tables.",
            keys=("connector",),
        )
    return found[0].spec


def table_spec(name: str, table: TableModel, folder: Path) -> KafkaTableSpec:
    """The validated spec of one ``tables`` entry (``sql_file`` relative to ``folder``).

    Raises:
        KafkaOptionsError: an invalid option, column or DDL (FlinkSqlError, with its line).
    """
    if table.options is not None:
        return KafkaTableSpec.from_options(
            table.options,
            columns=[c.model_dump(exclude_unset=True) for c in table.columns],
            primary_key=table.primary_key,
            name=name,
        )
    if table.ddl is not None:
        return _ddl_table(name, table.ddl)
    path = folder / str(table.sql_file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaOptionsError(
            f"cannot read sql_file {str(path)!r}: {exc.strerror or exc}.", keys=("sql_file",)
        ) from None
    except UnicodeDecodeError as exc:
        raise KafkaOptionsError(
            f"sql_file {str(path)!r} is not UTF-8 text (byte {exc.start}).", keys=("sql_file",)
        ) from None
    try:
        return _ddl_table(name, text)
    except FlinkSqlError as exc:
        raise KafkaOptionsError(f"{path}: {exc}", keys=exc.keys) from exc


def _given(context: ResolutionContext, value: Any, key: str, expected: str) -> Mapping[str, Any]:
    """A field's mapping (a model's fields, or what its template renders), else our error."""
    if isinstance(value, str):
        value = context.resolve_value(value)
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_unset=True)
    if not isinstance(value, Mapping):
        raise _ComponentLoadError(
            f"{key}: expected {expected}, got {_kind(value)}.",
            location=_Yaml(context.source_position_tree).where(context.path),
            keys=(key,),
        )
    return value


def _kind(value: Any) -> str:
    """What a YAML value is, for messages (its text may be a secret)."""
    if value is None:
        return "nothing"
    if isinstance(value, list | tuple):
        return "a list"
    return "text" if isinstance(value, str) else f"a {type(value).__name__}"


def _resolve_tables(context: ResolutionContext, tables: Any) -> dict[str, KafkaTableSpec]:
    yaml = _Yaml(context.source_position_tree)
    folder = _component_folder(context)
    specs: dict[str, KafkaTableSpec] = {}
    given = _given(context, tables, "tables", "a mapping of table names to tables")
    for name, table in given.items():
        path = [*context.path, name]
        with yaml.blame(path, f"table '{name}'", sql=[*path, "ddl"]):
            raw = table.model_dump() if isinstance(table, BaseModel) else table
            resolved = TableModel.model_validate(context.at_path(name).resolve_value(raw))
            specs[str(name)] = table_spec(str(name), resolved, folder)
    return specs


#: Resources built from YAML settings, by settings: components that configure a resource the
#: same way share one object, so their definitions merge into one code location.
_SHARED: dict[tuple[type, str], Any] = {}


def _shared_resource(cls: type, settings: Mapping[str, Any]) -> Any:
    key = (cls, json.dumps(settings, sort_keys=True, default=str))
    if key not in _SHARED:
        _SHARED[key] = cls(**settings)
    return _SHARED[key]


def _default_kafka() -> KafkaResource:
    resource: KafkaResource = _shared_resource(KafkaResource, {})
    return resource


def _default_spark() -> SparkResource:
    resource: SparkResource = _shared_resource(
        SparkResource, {"spark_config": local_spark_config("dagster-kafka-flinklike")}
    )
    return resource


def _resource(context: ResolutionContext, value: Any, cls: type, key: str) -> Any:
    """The shared resource of ``cls`` that a ``kafka`` / ``spark`` mapping configures."""
    yaml = _Yaml(context.source_position_tree)
    fields = list(cls.model_fields)  # type: ignore[attr-defined]
    settings = dict(
        context.resolve_value(_given(context, value, key, f"a mapping of {', '.join(fields)}"))
    )
    unknown = [str(k) for k in settings if k not in fields]
    if unknown:
        raise _ComponentLoadError(
            f"{key}: unknown setting(s) {', '.join(map(repr, unknown))}; it takes "
            f"{', '.join(fields)}.",
            location=yaml.where(context.path, unknown),
            keys=tuple(unknown),
        )
    properties = settings.get("properties")
    if isinstance(properties, Mapping):  # a template may render a number
        wrong = [str(k) for k, v in properties.items() if not isinstance(v, str | int | float)]
        if wrong:
            raise _ComponentLoadError(
                f"{key}: properties {', '.join(map(repr, wrong))} must be text or numbers.",
                location=yaml.where([*context.path, "properties"], wrong),
                keys=tuple(wrong),
            )
        settings["properties"] = {str(k): str(v) for k, v in properties.items()}
    if cls is SparkResource:
        if not settings:
            return _default_spark()
        settings.setdefault("spark_config", local_spark_config("dagster-kafka-flinklike"))
    with yaml.blame(context.path, key):
        return _shared_resource(cls, settings)


def _resolve_kafka(context: ResolutionContext, kafka: Any) -> KafkaResource:
    resource: KafkaResource = _resource(context, kafka, KafkaResource, "kafka")
    return resource


def _resolve_spark(context: ResolutionContext, spark: Any) -> SparkResource:
    resource: SparkResource = _resource(context, spark, SparkResource, "spark")
    return resource


def _resolve_translation(
    context: ResolutionContext, model: Any
) -> TranslationFn[KafkaTableSpec] | None:
    """``translation`` as Dagster resolves it, with what cannot give asset attributes refused
    at load (text that is no template) or named when a table is translated (a template that
    gives something else)."""
    if model is None:
        return None
    where = _Yaml(context.source_position_tree).where(context.path)
    if isinstance(model, str) and "{{" not in model:
        raise _ComponentLoadError(
            "translation: expected asset attributes (key, key_prefix, group_name, tags, owners, "
            "description, metadata) as a mapping, or a '{{ ... }}' template that gives them; "
            "got text.",
            location=where,
            keys=("translation",),
        )
    info = TranslatorResolvingInfo(
        asset_attributes=model, resolution_context=context, model_key="translation"
    )

    def translate(spec: AssetSpec, table: KafkaTableSpec) -> AssetSpec:
        scope = {"table": table, "spec": spec}
        try:
            if isinstance(model, str):  # what the template gives, checked before Dagster does
                given = context.at_path("translation").with_scope(**scope).resolve_value(model)
                if not isinstance(given, dict | AssetSpec | BaseModel):
                    raise TypeError(
                        f"its template gives {type(given).__name__}, not a mapping of asset "
                        f"attributes"
                    )
            return info.get_asset_spec(spec, scope)
        except TypeError as exc:
            reason = str(exc)
        except ValidationError as exc:
            reason = _validation_text(exc)
        except ResolutionException as exc:  # (its text quotes the YAML's lines: not those)
            reason = str(exc).strip().splitlines()[-1][:300]
        except Exception as exc:  # Dagster's check of what the template gave
            reason = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
        raise KafkaComponentError(
            f"translation of table '{table.name}' does not give asset attributes: {reason}",
            location=where,
            keys=("translation",),
        )

    return translate


class _ComponentTranslator(KafkaTranslator):
    """The component's :meth:`~KafkaPipelineComponent.get_asset_spec`, once per table."""

    def __init__(self, component: KafkaPipelineComponent) -> None:
        self.component = component
        self._specs: dict[int, tuple[KafkaTableSpec, AssetSpec]] = {}

    def get_asset_spec(self, table: KafkaTableSpec) -> AssetSpec:
        if id(table) not in self._specs:
            self._specs[id(table)] = (table, self.component.get_asset_spec(table))
        return self._specs[id(table)][1]


#: Dagster's derived models of the YAML, and the same with values hidden in their errors.
_HIDDEN: dict[type[BaseModel], type[BaseModel]] = {}


def _hide_inputs(cls: type[BaseModel], data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
    """Validate ``data``; a validation error's values become ``******``. (Dagster rebuilds the
    error with the values shown to add each one's line, whatever the model's configuration.)"""
    try:
        return handler(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        known = [
            InitErrorDetails(type=e["type"], loc=e["loc"], input=REDACTED, ctx=e.get("ctx", {}))
            for e in errors
        ]
        try:
            error = ValidationError.from_exception_data(exc.title, known)
        except (TypeError, KeyError, ValueError):  # an error type pydantic cannot rebuild
            plain = [
                InitErrorDetails(
                    type=PydanticCustomError("invalid", e["msg"].replace("{", "{{")),
                    loc=e["loc"],
                    input=REDACTED,
                )
                for e in errors
            ]
            error = ValidationError.from_exception_data(exc.title, plain)
        raise error from None


def _about(description: str, resolver: Resolver | None = None) -> Resolver:
    """``resolver`` (default resolution if None) with the field's description for the schema."""
    resolver = resolver or Resolver.default()
    resolver.description = description
    return resolver


@scaffold_with(KafkaPipelineScaffolder)
class KafkaPipelineComponent(Component, Resolvable, Model):
    """Kafka tables (Flink options or Flink SQL DDL) and streaming assets over them, from YAML.

    Each ``assets`` entry is a Spark SQL ``query`` over named ``sources`` written to a ``sink``
    table, or Flink SQL (``sql`` / ``sql_file``) whose ``INSERT INTO`` statements each become an
    asset. The component's definitions hold the assets with their Kafka checks, the source
    topics as observable assets, the sensors asked for and, unless ``provide_resources`` is
    false, the ``kafka`` and ``pyspark`` resources (components configured alike share them).
    Override :meth:`get_asset_spec` to change every Kafka asset's key, group or tags, or
    :meth:`run_query` to change how a query runs.

    Scaffold one with ``dg scaffold defs dagster_kafka_flinklike.KafkaPipelineComponent
    <path>``.

    Example:
        .. code-block:: yaml

            type: dagster_kafka_flinklike.KafkaPipelineComponent
            attributes:
              tables:
                orders:
                  options: {connector: kafka, topic: orders, format: json,
                            scan.startup.mode: earliest-offset}
                  columns: [{name: order_id, type: STRING}, {name: real_pay, type: DOUBLE}]
                large_orders:
                  options: {connector: kafka, topic: large_orders, format: json}
                  columns: [{name: order_id, type: STRING}, {name: real_pay, type: DOUBLE}]
              assets:
                - query: SELECT order_id, real_pay FROM orders WHERE real_pay >= 100
                  sources: [orders]
                  sink: large_orders
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    tables: Annotated[
        dict[str, KafkaTableSpec],
        Resolver(
            _resolve_tables,
            inject_before_resolve=False,
            model_field_type=dict[str, TableModel],
            description="Kafka tables by name: Flink 'options' with 'columns' (and "
            "'primary_key'), or Flink SQL ('ddl' text, or a 'sql_file' next to this defs.yaml).",
        ),
    ] = Field(default_factory=dict)
    assets: Annotated[
        list[AssetModel],
        _about("Streaming assets: Spark SQL queries over the tables, or Flink SQL inserts."),
    ] = Field(default_factory=list)
    data_ingestion: Annotated[
        list[DataIngestionModel],
        _about(
            "Data-ingestion pipelines (the vendor's YAML: source, sink, route, transform, "
            "pipeline; Kafka to Kafka), each run as one asset: a 'pipeline_file' next to this "
            "defs.yaml or the 'pipeline' inline, with 'variables' for its ${name} placeholders."
        ),
    ] = Field(default_factory=list)
    translation: Annotated[
        TranslationFn[KafkaTableSpec] | None,
        _about(
            "Asset attributes of every Kafka table's asset (key, key_prefix, group_name, tags, "
            "owners, description, metadata), with the table as '{{ table }}'. A streaming asset "
            "takes its sink's key, group, owners and tags.",
            Resolver(
                _resolve_translation,
                model_field_type=str | AssetAttributesModel,  # type: ignore[arg-type]
                inject_before_resolve=False,
            ),
        ),
    ] = None
    sensors: Annotated[
        SensorsModel, _about("Partition discovery, and the status the sensors start in.")
    ] = Field(default_factory=SensorsModel)
    kafka: Annotated[
        KafkaResource,
        _about(
            "The Kafka connection (bootstrap_servers, properties), e.g. bootstrap_servers: "
            "'{{ env.KAFKA_BOOTSTRAP_SERVERS }}'. Without servers, a run reads "
            "$KAFKA_BOOTSTRAP_SERVERS when it starts.",
            Resolver(_resolve_kafka, model_field_type=dict[str, Any], inject_before_resolve=False),
        ),
    ] = Field(default_factory=_default_kafka)
    spark: Annotated[
        SparkResource,
        _about(
            "The Spark session (spark_config; remote: a Spark Connect URL); default: local[2].",
            Resolver(_resolve_spark, model_field_type=dict[str, Any], inject_before_resolve=False),
        ),
    ] = Field(default_factory=_default_spark)
    provide_resources: Annotated[
        bool,
        _about(
            "Whether the component's definitions hold the Kafka and Spark resources; false when "
            "the code location provides them."
        ),
    ] = True
    kafka_resource_key: Annotated[str, _about("Key of the Kafka resource.")] = "kafka"
    spark_resource_key: Annotated[str, _about("Key of the Spark resource.")] = "pyspark"
    include_source_assets: Annotated[
        bool,
        _about(
            "The source topics as observable assets (false when another part of the code "
            "location declares them)."
        ),
    ] = True

    @classmethod
    def model(cls) -> type[BaseModel]:
        """Dagster's model of the YAML, whose validation errors show no value (an option, a
        misplaced key or an entry's SQL may hold a password)."""
        derived = super().model()
        if derived not in _HIDDEN:
            _HIDDEN[derived] = create_model(
                derived.__name__,
                __base__=derived,
                __validators__={"_hide_inputs": model_validator(mode="wrap")(_hide_inputs)},  # type: ignore[dict-item]
            )
        return _HIDDEN[derived]

    def get_asset_spec(self, table: KafkaTableSpec) -> AssetSpec:
        """The asset of ``table``'s topic: :class:`~...translator.KafkaTranslator`'s spec with
        ``translation`` applied. Override to change keys, groups or tags in Python."""
        spec = KafkaTranslator().get_asset_spec(table)
        return self.translation(spec, table) if self.translation is not None else spec

    def run_query(self, context: Any, query: str, frames: Mapping[str, DataFrame]) -> DataFrame:
        """Run a query asset's Spark SQL over its sources (temporary views named like them)."""
        spark = next(iter(frames.values())).sparkSession
        for name, frame in frames.items():
            frame.createOrReplaceTempView(name)
        return spark.sql(query)

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from dagster_shared.yaml_utils.source_position import SourcePositionTree

        decl = getattr(context, "component_decl", None)
        source = getattr(getattr(decl, "source_tree", None), "source_position_tree", None)
        # (a component built in Python has no YAML: its context's declaration is a stand-in)
        yaml = _Yaml(source if isinstance(source, SourcePositionTree) else None)
        translator = _ComponentTranslator(self)
        assets: list[AssetsDefinition] = []
        jobs: list[JobDefinition | UnresolvedAssetJobDefinition] = []
        sensors: list[SensorDefinition] = []
        for number, entry in enumerate(self.assets):
            path: list[str | int] = ["attributes", "assets", number]
            built, entry_jobs = self._entry_defs(entry, translator, yaml, path, Path(context.path))
            if entry.new_data_sensor is not None:
                with yaml.blame([*path, "new_data_sensor"], entry.label):
                    sensors += self._new_data_sensors(entry, built)
            assets += built
            jobs += entry_jobs
        for number, ingestion in enumerate(self.data_ingestion):
            path = ["attributes", "data_ingestion", number]
            built = self._ingestion_defs(ingestion, translator, yaml, path, Path(context.path))
            if ingestion.new_data_sensor is not None:
                with yaml.blame([*path, "new_data_sensor"], ingestion.label):
                    sensors += self._new_data_sensors(ingestion, built)
            assets += built
        if self.sensors.discovery:
            sensors += build_kafka_discovery_sensors(assets, default_status=self.sensors.status)
        if self.include_source_assets and assets:
            assets += build_kafka_source_assets(
                assets,
                translator=translator,
                kafka_resource_key=self.kafka_resource_key,
                name=f"{identifier(Path(context.path).name, 'kafka_pipeline')}_source_topics",
            )
        resources = (
            {self.kafka_resource_key: self.kafka, self.spark_resource_key: self.spark}
            if self.provide_resources
            else {}
        )
        return Definitions(assets=assets, jobs=jobs, sensors=sensors, resources=resources)

    def _entry_defs(
        self, entry: AssetModel, translator: KafkaTranslator, yaml: _Yaml, path: _Path, folder: Path
    ) -> tuple[list[AssetsDefinition], list[JobDefinition | UnresolvedAssetJobDefinition]]:
        """The assets (and statement-set jobs) of one ``assets`` entry."""
        with yaml.blame(path, entry.label):
            options = self._partitioning(entry, yaml, path)
            if entry.query is not None:
                return [self._query_asset(entry, translator, yaml, path, options)], []
        text = [*path, "sql"] if entry.sql is not None else None
        checks = _checks(entry, yaml, path)
        with yaml.blame([*path, "sql" if entry.sql is not None else "sql_file"], entry.label, text):
            defs = self._flink_sql_defs(entry, translator, folder, {**options, "checks": checks})
        assets = [a for a in defs.assets or () if isinstance(a, AssetsDefinition)]
        return assets, list(defs.jobs or ())

    def _ingestion_defs(
        self,
        entry: DataIngestionModel,
        translator: KafkaTranslator,
        yaml: _Yaml,
        path: _Path,
        folder: Path,
    ) -> list[AssetsDefinition]:
        """The asset of one ``data_ingestion`` entry."""
        checks = _checks(entry, yaml, path)
        key = "pipeline" if entry.pipeline is not None else "pipeline_file"
        with yaml.blame([*path, key], entry.label):
            pipeline: Any = entry.pipeline
            if entry.pipeline_file is not None:
                pipeline = folder / entry.pipeline_file
            defs = build_data_ingestion_definitions(
                pipeline,
                variables=entry.variables,
                name=entry.name,
                translator=translator,
                checks=checks,
                kafka_resource_key=self.kafka_resource_key,
                spark_resource_key=self.spark_resource_key,
                include_source_assets=False,
            )
        return [a for a in defs.assets or () if isinstance(a, AssetsDefinition)]

    def _table(self, name: str, yaml: _Yaml, path: _Path) -> KafkaTableSpec:
        if name not in self.tables:
            known = ", ".join(repr(t) for t in self.tables) or "none"
            raise KafkaComponentError(
                f"table {name!r} is not declared in 'tables' (declared: {known}).",
                location=yaml.where(path),
            )
        return self.tables[name]

    def _partitioning(self, entry: AssetModel, yaml: _Yaml, path: _Path) -> dict[str, Any]:
        with yaml.blame([*path, "partitions"], entry.label):
            partitions = entry.partitions.build() if entry.partitions else None
        return {
            "partitions_def": partitions,
            "backfill_policy": entry.backfill_policy.build() if entry.backfill_policy else None,
            "allowed_lateness": duration("allowed_lateness", entry.allowed_lateness)
            or timedelta(0),
            "kafka_resource_key": self.kafka_resource_key,
            "spark_resource_key": self.spark_resource_key,
        }

    def _query_asset(
        self,
        entry: AssetModel,
        translator: KafkaTranslator,
        yaml: _Yaml,
        path: _Path,
        options: Mapping[str, Any],
    ) -> AssetsDefinition:
        sources = {
            n: self._table(n, yaml, [*path, "sources", i]) for i, n in enumerate(entry.sources)
        }
        sink_name = str(entry.sink)
        declared = self._table(sink_name, yaml, [*path, "sink"])
        with yaml.blame(["attributes", "tables", sink_name], f"table '{sink_name}' (a sink)"):
            sink = KafkaTableSpec.from_options(
                declared.options,
                columns=declared.columns,
                primary_key=declared.primary_key,
                role="sink",
                name=declared.name,
            )
        checks = _checks(entry, yaml, path)
        attributes = streaming_asset_attributes(translator.get_asset_spec(declared))
        if entry.name is not None:
            attributes["name"] = entry.name
        query = str(entry.query)

        @kafka_streaming_asset(
            sources=sources,
            sink=sink,
            description=entry.description or f"Spark SQL into {sink_name}:\n\n{query}",
            checks=checks,
            translator=translator,
            from_checkpoint=entry.from_checkpoint,
            **attributes,
            **options,
        )
        def _query(context: Any, **frames: DataFrame) -> DataFrame:
            return self.run_query(context, query, frames)

        return _query

    def _flink_sql_defs(
        self,
        entry: AssetModel,
        translator: KafkaTranslator,
        folder: Path,
        options: Mapping[str, Any],
    ) -> Definitions:
        script: str | Path = (
            entry.sql if entry.sql is not None else Path(folder) / str(entry.sql_file)
        )
        try:
            return build_flink_sql_definitions(
                script,
                tables=self.tables,
                translator=translator,
                include_source_assets=False,
                **options,
            )
        except FlinkSqlError as exc:
            if isinstance(script, str):
                raise
            raise KafkaOptionsError(f"{script}: {exc}", keys=exc.keys) from exc

    def _new_data_sensors(
        self, entry: AssetModel | DataIngestionModel, assets: Sequence[AssetsDefinition]
    ) -> list[SensorDefinition]:
        model = entry.new_data_sensor
        assert model is not None
        backoff = duration("retry_backoff", model.retry_backoff)
        assert backoff is not None  # the field has a default
        return [
            build_kafka_new_data_sensor(
                asset,
                min_pending_records=model.min_pending_records,
                max_pending_age=duration("max_pending_age", model.max_pending_age),
                max_retries=model.max_retries,
                retry_backoff=backoff,
                name=model.name if model.name and len(assets) == 1 else None,
                minimum_interval_seconds=model.minimum_interval_seconds,
                default_status=self.sensors.status,
            )
            for asset in assets
        ]
