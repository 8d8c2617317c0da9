"""A data-ingestion pipeline YAML (``source``, ``sink``, ``route``, ``transform``,
``pipeline``), parsed and validated into a :class:`DataIngestionPipeline`.

Every key either takes effect or is refused here, when the definitions load, with a message
that names the section and the key (:mod:`..options.ingestion_keys` declares them). A source or sink
of another system is refused: this product is Kafka ↔ Kafka on Spark. ``${name}`` placeholders
(the vendor's variables) are replaced by ``variables``; one without a value is an error.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import KafkaOptionsError, KafkaOptionsWarning, KafkaYamlError
from ..options import (
    METADATA,
    Column,
    FlinkType,
    KafkaTableSpec,
    did_you_mean,
    prefixes_overlap,
)
from ..options.ingestion_keys import (
    INGESTION_KEYS,
    KAFKA_ONLY_REASON,
    KAFKA_TYPE,
    REFUSED_INGESTION_KEYS,
    find_ingestion_key,
    known_keys,
)
from ._yaml import MAX_DEPTH, KeyPath, YamlDocument, load_yaml, path_text
from .tables import Route, TableId, TopicMapping, route_table
from .transform import TransformRule

__all__ = [
    "DataIngestionPipeline",
    "IngestionSink",
    "IngestionSource",
    "InitialSchema",
    "parse_data_ingestion",
]

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_TOP = ("source", "sink", "route", "transform", "pipeline")


@dataclass(frozen=True)
class InitialSchema:
    """A table's schema given by ``scan.value.initial-schemas.ddls``."""

    fields: Mapping[str, FlinkType]
    primary_key: tuple[str, ...] = ()


@dataclass(frozen=True)
class IngestionSource:
    """The Kafka source: the table it reads and how its records become tables' rows."""

    #: The source's ``name`` (else the pipeline's) as an identifier: it names the source
    #: topic's asset and the default consumer group ``KafkaSource-<name>``.
    name: str
    #: The records' table: topics, client, startup, dirty-data and format options.
    spec: KafkaTableSpec
    options: Mapping[str, str]
    key_format: str | None = None
    key_prefix: str = ""
    value_prefix: str = ""
    #: ``json.decode.parser-table-id.fields`` (empty: a JSON record's table is its topic).
    table_id_fields: tuple[str, ...] = ()
    primitive_as_string: bool = False
    canal_strategy: str = "AUTO"
    tinyint1_as_boolean: bool = True
    timestamp_as_datetime: bool = True
    initial_schemas: Mapping[TableId, InitialSchema] = field(default_factory=dict)
    #: ``metadata.list``: record metadata appended to every row.
    metadata: tuple[str, ...] = ()

    @property
    def value_format(self) -> str:
        """``debezium-json``, ``canal-json`` or ``json``."""
        return self.spec.value_format.name


@dataclass(frozen=True)
class IngestionSink:
    """The Kafka sink: formats, topics, placement and delivery of what the pipeline writes."""

    name: str | None
    #: Client and delivery options (its topic is not written: topics come from the tables).
    spec: KafkaTableSpec
    options: Mapping[str, str]
    value_format: str = "debezium-json"
    key_format: str | None = None
    topic: str | None = None
    partition_strategy: str = "all-to-zero"
    mapping: TopicMapping = field(default_factory=TopicMapping)
    include_schema: bool = False

    def topic_of(self, table: TableId) -> str:
        """``topic``, else the mapping's topic, else the table id."""
        return self.topic or self.mapping.topic_of(table) or str(table)


@dataclass(frozen=True)
class DataIngestionPipeline:
    """A parsed data-ingestion pipeline.

    Example:
        >>> pipeline = parse_data_ingestion('''
        ... source: {type: kafka, topic: cdc, properties.bootstrap.servers: "b:9092"}
        ... sink: {type: kafka, sink.tableId-to-topic.mapping: "app.orders:orders"}
        ... ''')
        >>> pipeline.sink.topic_of(TableId.parse("app.orders"))
        'orders'
    """

    source: IngestionSource
    sink: IngestionSink
    routes: tuple[Route, ...] = ()
    transforms: tuple[TransformRule, ...] = ()
    name: str | None = None
    parallelism: int | None = None
    #: ``pipeline.dirty-data.collector.type`` (``logger``), or None.
    dirty_collector: str | None = None

    def sink_tables(self, table: TableId) -> list[TableId]:
        """The tables ``table``'s rows are written as (routes applied)."""
        return route_table(table, self.routes)

    def transform_of(self, table: TableId) -> TransformRule | None:
        """The first transform rule that selects ``table``."""
        return next((t for t in self.transforms if t.source_table.matches(table)), None)


def _substitute(
    value: Any, variables: Mapping[str, str], doc: YamlDocument, at: KeyPath = ()
) -> Any:
    """``value`` with its ``${name}`` placeholders replaced."""
    if len(at) > MAX_DEPTH:  # (a mapping given in Python may even contain itself)
        raise doc.error(f"'{path_text(at[:3])}' nests more than {MAX_DEPTH} levels deep.", at[:3])
    if isinstance(value, dict):
        return {k: _substitute(v, variables, doc, (*at, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables, doc, (*at, i)) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def replace(found: re.Match[str]) -> str:
        name = found.group(1).strip()
        if name not in variables:
            raise doc.error(
                f"'{path_text(at)}' uses '${{{name}}}', which has no value: pass it in "
                f"'variables'.",
                at,
                keys=(name,),
            )
        return str(variables[name])

    return _VARIABLE.sub(replace, value)


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _kind(value: Any) -> str:
    """What a YAML value is, for messages (its text may be a secret)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "a value" if isinstance(value, str | int | float | bool) else f"a {type(value).__name__}"


def _flat(
    where: str, node: Any, nested: bool = False, prefix: str = "", section: str = ""
) -> dict[str, str]:
    """A section's ``key: scalar`` entries as strings (nested mappings joined with '.')."""
    if not isinstance(node, dict):
        raise KafkaOptionsError(f"{where}: expected a mapping of options, got {_kind(node)}.")
    out: dict[str, str] = {}
    for key, value in node.items():
        name = f"{prefix}{key}"
        reason = REFUSED_INGESTION_KEYS.get(section or where, {}).get(name)
        if reason is not None:
            raise KafkaOptionsError(f"{where}: '{name}' is not supported: {reason}.", keys=(name,))
        if isinstance(value, dict) and nested:
            out.update(_flat(where, value, nested, f"{name}.", section))
        elif value is None or isinstance(value, dict | list):
            raise KafkaOptionsError(
                f"{where}: '{name}' must be a value (text, number or true/false), got "
                f"{_kind(value)}.",
                keys=(name,),
            )
        else:
            out[name] = _text(value)
    return out


def _check_keys(section: str, where: str, options: Mapping[str, str], fmt: str = "") -> None:
    """Every key known to ``section`` (and of the value format ``fmt``), required keys given."""
    for key in options:
        reason = REFUSED_INGESTION_KEYS.get(section, {}).get(key)
        if reason is not None:
            raise KafkaOptionsError(f"{where}: '{key}' is not supported: {reason}.", keys=(key,))
        found = find_ingestion_key(section, key)
        if found is None:
            hint = did_you_mean(key, [k.key for k in INGESTION_KEYS[section].values()])
            raise KafkaOptionsError(
                f"{where}: unknown key '{key}'{hint}. A {section} takes: "
                f"{', '.join(known_keys(section))}.",
                keys=(key,),
            )
        if found.formats and fmt not in found.formats:
            raise KafkaOptionsError(
                f"{where}: '{key}' applies to 'value.format' {found.formats[0]!r}, but the "
                f"value format is {fmt!r}.",
                keys=(key, "value.format"),
            )
        if not found.table and not found.prefix:
            try:
                found.parse(key, options[key])
            except KafkaOptionsError as exc:
                raise KafkaOptionsError(f"{where}: {exc}", keys=exc.keys) from None
    for found in INGESTION_KEYS[section].values():
        if found.required and found.key not in options:
            raise KafkaOptionsError(f"{where}: '{found.key}' is required.", keys=(found.key,))


def _kafka_type(where: str, options: Mapping[str, str]) -> None:
    kind = options.get("type", "")
    if kind.strip().lower() != KAFKA_TYPE:
        raise KafkaOptionsError(
            f"{where}: 'type' = {kind!r} is not supported: {KAFKA_ONLY_REASON}; the {where} "
            f"must be 'type: kafka'.",
            keys=("type",),
        )


def _spec(where: str, options: Mapping[str, Any], **kw: Any) -> KafkaTableSpec:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", KafkaOptionsWarning)
            return KafkaTableSpec.from_options(options, **kw)
    except KafkaOptionsWarning as exc:
        raise KafkaOptionsError(f"{where}: {exc}", keys=exc.keys) from None
    except KafkaOptionsError as exc:
        raise KafkaOptionsError(f"{where}: {exc}", keys=exc.keys) from None


def _initial_schemas(text: str | None) -> dict[TableId, InitialSchema]:
    from ..sql import CreateTable, parse_flink_sql

    key = "scan.value.initial-schemas.ddls"
    if not text:
        return {}
    try:
        statements = parse_flink_sql(text, strict=False)
    except KafkaOptionsError as exc:
        raise KafkaOptionsError(f"source: '{key}': {exc}", keys=(key,)) from None
    out: dict[TableId, InitialSchema] = {}
    for st in statements:
        if not isinstance(st, CreateTable) or st.options:
            raise KafkaOptionsError(
                f"source: '{key}' holds {type(st).__name__}; write only "
                f"'CREATE TABLE db.t (col TYPE, ...)' statements, without WITH.",
                keys=(key,),
            )
        fields = {c.name: c.flink_type for c in st.columns if c.is_physical}
        table = TableId(tuple(st.qualified_name[-3:]))
        out[table] = InitialSchema(fields, tuple(st.primary_key))
    return out


def _metadata(text: str | None) -> tuple[str, ...]:
    keys = tuple(k.strip() for k in (text or "").split(",") if k.strip())
    for k in keys:
        if k not in METADATA:
            raise KafkaOptionsError(
                f"source: 'metadata.list' names {k!r}; available: {', '.join(METADATA)}.",
                keys=("metadata.list",),
            )
    return keys


def _source(options: Mapping[str, str], default_name: str) -> IngestionSource:
    _kafka_type("source", options)
    fmt = options.get("value.format", "debezium-json").strip().lower()
    _check_keys("source", "source", options, fmt)
    if options.get("key.format") and fmt != "json":
        raise KafkaOptionsError(
            f"source: 'key.format' reads the key's fields as columns of a 'json' value format; "
            f"{fmt} records carry their rows in the value.",
            keys=("key.format", "value.format"),
        )
    key_prefix = options.get("key.fields-prefix", "")
    value_prefix = options.get("value.fields-prefix", "")
    if prefixes_overlap(key_prefix, value_prefix):
        raise KafkaOptionsError(
            f"source: 'key.fields-prefix' = {key_prefix!r} and 'value.fields-prefix' = "
            f"{value_prefix!r}: neither may be a prefix of the other.",
            keys=("key.fields-prefix", "value.fields-prefix"),
        )
    if options.get("key.fields-prefix") and not options.get("key.format"):
        raise KafkaOptionsError(
            "source: 'key.fields-prefix' names the key's columns, but 'key.format' is not set.",
            keys=("key.fields-prefix", "key.format"),
        )
    # The table's name keys its asset and default consumer group: ASCII letters, digits and '_'
    # (Dagster's names; Python's \w also takes other letters).
    given = options.get("name") or default_name
    name = re.sub(r"[^A-Za-z0-9_]+", "_", given).strip("_") or "data_ingestion"
    metadata = _metadata(options.get("metadata.list"))
    declared = INGESTION_KEYS["source"]
    table = {k: v for k, v in options.items() if (f := find_ingestion_key("source", k)) and f.table}
    table.update({"connector": "kafka", "value.format": fmt})
    columns = [Column(k, METADATA[k].type, metadata_key=k, virtual=True) for k in metadata]
    spec = _spec("source", table, columns=columns, role="source", name=name)
    strategy_key, prefetch_key = "schema.inference.strategy", "scan.max.pre.fetch.records"
    spec = replace(  # every format infers each table's schema here, not only a JSON table's
        spec,
        inference_strategy=declared[strategy_key].parse(
            strategy_key, options.get(strategy_key, "continuous")
        ),
        prefetch_records=declared[prefetch_key].parse(
            prefetch_key, options.get(prefetch_key, "50")
        ),
    )
    if spec.prefetch_records < 0:
        raise KafkaOptionsError(
            f"source: '{prefetch_key}' must be 0 or more, got {spec.prefetch_records}.",
            keys=(prefetch_key,),
        )
    strategy = options.get("canal-json.infer-schema.strategy", "AUTO").upper()
    mysql = [k for k in options if k.startswith("canal-json.mysql.")]
    if mysql and strategy != "MYSQL_TYPE":
        warnings.warn(
            KafkaOptionsWarning(
                f"source: {', '.join(repr(k) for k in mysql)} take effect only with "
                f"'canal-json.infer-schema.strategy' = 'MYSQL_TYPE'.",
                keys=tuple(mysql),
            ),
            stacklevel=3,
        )

    def flag(key: str) -> bool:
        return bool(declared[key].parse(key, options.get(key, declared[key].default or "")))

    fields = options.get("json.decode.parser-table-id.fields") or ""
    return IngestionSource(
        name=name,
        spec=spec,
        options=dict(options),
        key_format=options.get("key.format"),
        key_prefix=key_prefix,
        value_prefix=value_prefix,
        table_id_fields=tuple(f.strip() for f in fields.split(",") if f.strip()),
        primitive_as_string=fmt != "json" and flag(f"{fmt}.infer-schema.primitive-as-string"),
        canal_strategy=strategy,
        tinyint1_as_boolean=flag("canal-json.mysql.treat-tinyint1-as-boolean.enabled"),
        timestamp_as_datetime=flag("canal-json.mysql.treat-mysql-timestamp-as-datetime-enabled"),
        initial_schemas=_initial_schemas(options.get("scan.value.initial-schemas.ddls")),
        metadata=metadata,
    )


def _sink(options: Mapping[str, str], source: IngestionSource) -> IngestionSink:
    _kafka_type("sink", options)
    _check_keys("sink", "sink", options)
    fmt = options.get("value.format", "debezium-json").strip().lower()
    key_format = options.get("key.format", "").strip().lower() or None
    strategy = options.get("partition.strategy", "all-to-zero").strip().lower()
    if strategy == "hash-by-key" and key_format is None:
        raise KafkaOptionsError(
            "sink: 'partition.strategy' = 'hash-by-key' places records by the hash of their key: "
            "set 'key.format' (json or csv) so that records carry their primary key.",
            keys=("partition.strategy", "key.format"),
        )
    include = options.get("debezium-json.include-schema.enabled", "false").lower() == "true"
    if include and fmt != "debezium-json":
        raise KafkaOptionsError(
            f"sink: 'debezium-json.include-schema.enabled' applies to 'value.format' "
            f"'debezium-json', but the value format is {fmt!r}.",
            keys=("debezium-json.include-schema.enabled", "value.format"),
        )
    if fmt == "json" and source.value_format != "json":
        raise KafkaOptionsError(
            f"sink: 'value.format' = 'json' writes rows without their change kind, but the "
            f"source's {source.value_format} records carry updates and deletes: write "
            f"'debezium-json' or 'canal-json'.",
            keys=("value.format",),
        )
    topic = options.get("topic") or None
    mapping = TopicMapping.parse(options.get("sink.tableId-to-topic.mapping"))
    _sink_not_read(source, options, [(topic, "topic")] if topic else [], mapping)
    table = {k: v for k, v in options.items() if (f := find_ingestion_key("sink", k)) and f.table}
    table.update({"connector": "kafka", "topic": topic or "data-ingestion", "value.format": "raw"})
    spec = _spec(
        "sink", table, columns=[{"name": "value", "type": "BYTES"}], role="sink",
        name=options.get("name") or f"{source.name} sink",
    )  # fmt: skip
    return IngestionSink(
        name=options.get("name"),
        spec=spec,
        options=dict(options),
        value_format=fmt,
        key_format=key_format,
        topic=topic,
        partition_strategy=strategy,
        mapping=mapping,
        include_schema=include,
    )


def _sink_not_read(
    source: IngestionSource,
    options: Mapping[str, str],
    topics: list[tuple[str, str]],
    mapping: TopicMapping,
) -> None:
    """Refuse a sink topic (its ``topic`` or a mapping's target) that the source reads on the
    same cluster: each run would read its own output again."""
    servers = (source.spec.bootstrap_servers, options.get("properties.bootstrap.servers"))
    if None not in servers and servers[0] != servers[1]:
        return
    key = "sink.tableId-to-topic.mapping"
    for written, option in [*topics, *((t, key) for _, t in mapping.rules)]:
        if source.spec.subscribes_to(written):
            how = "'topic'" if written in source.spec.topics else "'topic-pattern'"
            raise KafkaOptionsError(
                f"sink: {option!r} writes topic {written!r}, which source {source.name!r} reads "
                f"(its {how}): each run would read its own output again.",
                keys=(option,),
            )


def _entries(doc: YamlDocument, section: str, node: Any) -> list[dict[str, str]]:
    if node is None:
        return []
    if not isinstance(node, list):
        raise doc.error(
            f"'{section}' must be a list of entries, got {_kind(node)}.", (section,), (section,)
        )
    out = []
    for i, entry in enumerate(node):
        where = f"{section}[{i}]"
        with doc.blame((section, i)):
            options = _flat(where, entry, section=section)
            _check_keys(section, where, options)
        out.append(options)
    return out


def _decode(pipeline: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise KafkaYamlError(
            "not valid YAML: the file is not UTF-8 text.",
            file=str(pipeline),
            line=line,
            column=column,
        ) from None


def _load(pipeline: str | Path | Mapping[str, Any]) -> tuple[YamlDocument, str | None]:
    if isinstance(pipeline, Mapping):
        return YamlDocument(pipeline), None
    if isinstance(pipeline, Path):
        try:
            data = pipeline.read_bytes()
        except OSError as exc:
            raise KafkaOptionsError(
                f"Cannot read the pipeline YAML {str(pipeline)!r}: {exc.strerror or exc}."
            ) from None
        doc = load_yaml(_decode(pipeline, data), str(pipeline))
        stem: str | None = pipeline.stem
    elif isinstance(pipeline, str):
        doc, stem = load_yaml(pipeline), None
    else:
        raise KafkaOptionsError(
            f"A data-ingestion pipeline is YAML text, a Path to a YAML file or a mapping, not "
            f"{type(pipeline).__name__}."
        )
    if not isinstance(doc.data, dict):
        raise doc.error(
            f"A data-ingestion pipeline is a YAML mapping with 'source' and 'sink', not "
            f"{_kind(doc.data)}.",
            (),
        )
    return doc, stem


def parse_data_ingestion(
    pipeline: str | Path | Mapping[str, Any],
    *,
    variables: Mapping[str, str] | None = None,
    name: str | None = None,
) -> DataIngestionPipeline:
    """Parse a data-ingestion pipeline (YAML text, a ``Path`` to a file, or the parsed mapping).

    ``name`` stands for the pipeline's name where the YAML gives none (``pipeline.name``, else
    the file's stem): the source is named after it (``<name> source``) unless it has a
    ``name``, and so is its default consumer group (``KafkaSource-<source name>``).

    Example:
        >>> parse_data_ingestion(
        ...     "{source: {type: kafka, topic: cdc}, sink: {type: kafka}}", name="orders"
        ... ).source.spec.effective_group_id
        'KafkaSource-orders_source'

    Raises:
        KafkaOptionsError: a key that is unknown, refused or malformed, a source or sink that
            is not Kafka, or a placeholder without a value; the message names the section and
            the key. From YAML text or a file it is a :class:`~..errors.KafkaYamlError` that
            starts with the line and column (and the file): so is text that is not valid YAML,
            an anchor that references itself, or values nested too deep. No message quotes a
            value that may be a secret.
    """
    doc, stem = _load(pipeline)
    loaded = doc.data
    for section in ("source", "sink"):  # another system is refused before anything else
        node = loaded.get(section)
        kind = node.get("type") if isinstance(node, dict) else None
        if isinstance(kind, str) and "${" not in kind:
            with doc.blame((section,)):
                _kafka_type(section, {"type": kind})
    document = _substitute(dict(loaded), dict(variables or {}), doc)
    unknown = [k for k in document if k not in _TOP]
    if unknown:
        raise doc.error(
            f"Unknown top-level key(s) {', '.join(repr(str(k)) for k in unknown)}: a "
            f"data-ingestion pipeline has {', '.join(_TOP)}.",
            (),
            keys=tuple(map(str, unknown)),
        )
    for required in ("source", "sink"):
        if required not in document:
            raise doc.error(
                f"The pipeline has no '{required}': a data-ingestion pipeline reads a Kafka "
                f"'source' and writes a Kafka 'sink' (both 'type: kafka').",
                (),
                keys=(required,),
            )
    with doc.blame(("pipeline",)):
        settings = _flat("pipeline", document.get("pipeline") or {}, nested=True)
        _check_keys("pipeline", "pipeline", settings)
        parallelism = int(settings["parallelism"]) if "parallelism" in settings else None
        if parallelism is not None and parallelism < 1:
            raise KafkaOptionsError(
                "pipeline: 'parallelism' must be at least 1.", keys=("parallelism",)
            )
    pipeline_name = settings.get("name") or None
    default = pipeline_name or name or stem or "data_ingestion"
    with doc.blame(("source",)):
        source = _source(_flat("source", document["source"]), f"{default} source")
    with doc.blame(("sink",)):
        sink = _sink(_flat("sink", document["sink"]), source)
    routes = []
    for i, e in enumerate(_entries(doc, "route", document.get("route"))):
        with doc.blame(("route", i)):
            routes.append(
                Route.parse(
                    e["source-table"],
                    e["sink-table"],
                    replace_symbol=e.get("replace-symbol"),
                    description=e.get("description"),
                )
            )
    transforms = []
    for i, e in enumerate(_entries(doc, "transform", document.get("transform"))):
        with doc.blame(("transform", i)):
            transforms.append(TransformRule.parse(i, e))
    with doc.blame(("sink",)):
        _check_loop(source, sink, tuple(routes))
    return DataIngestionPipeline(
        source=source,
        sink=sink,
        routes=tuple(routes),
        transforms=tuple(transforms),
        name=pipeline_name,
        parallelism=parallelism,
        dirty_collector=settings.get("dirty-data.collector.type"),
    )


def _check_loop(source: IngestionSource, sink: IngestionSink, routes: tuple[Route, ...]) -> None:
    """A JSON record's table is its topic: without a sink topic, mapping or route, each table
    would be written back into the topic it was read from."""
    by_topic = source.value_format == "json" and not source.table_id_fields
    if by_topic and sink.topic is None and not sink.mapping.rules and not routes:
        raise KafkaOptionsError(
            "sink: a 'json' source names each record's table after its topic, so without a sink "
            "'topic', 'sink.tableId-to-topic.mapping' or a 'route' the pipeline would write every "
            "record back into the topic it read it from. Name the output topic(s), or set "
            "'json.decode.parser-table-id.fields' on the source.",
            keys=("topic", "sink.tableId-to-topic.mapping"),
        )
