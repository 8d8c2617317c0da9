"""The keys of a data-ingestion pipeline YAML (``source``/``sink``/``route``/``transform``/
``pipeline``), declared once: what each means here, and whether the Kafka table options take it.

A key marked ``table`` is one of the connector options (:mod:`._table`, :mod:`._formats`) and is
validated by :class:`~._spec.KafkaTableSpec`; the others are the pipeline's own and are parsed
by the parser of :mod:`dagster_kafka_flinklike.ingestion`. Keys the vendor's document describes
that cannot take effect here are listed in :data:`REFUSED_INGESTION_KEYS` with the reason the
load error gives. The options reference page is generated from both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._table import parse_bool, parse_choice, parse_int, parse_string

#: The sections of a pipeline YAML, in the order the reference page lists them.
SECTIONS = ("source", "sink", "route", "transform", "pipeline")

#: The one connector a pipeline's source and sink may name.
KAFKA_TYPE = "kafka"

#: Why a pipeline that names another system is refused.
KAFKA_ONLY_REASON = "this product is Kafka ↔ Kafka on Spark"


@dataclass(frozen=True)
class IngestionKey:
    """One key of a data-ingestion pipeline section.

    ``table`` keys go to the Kafka table options (validated there); ``formats`` restricts a
    source key to those value formats; ``required`` keys must be present.

    Example:
        >>> INGESTION_KEYS["source"]["value.format"].default
        'debezium-json'
    """

    key: str
    type: str
    default: str | None
    description: str
    parse: Callable[[str, str], Any] = parse_string
    table: bool = False
    prefix: bool = False
    required: bool = False
    formats: tuple[str, ...] = ()


def _k(key: str, type_: str, default: str | None, description: str, **kw: Any) -> IngestionKey:
    return IngestionKey(key, type_, default, description, **kw)


_T = {"table": True}
_TOLERATE = (
    "Tolerate records that fail to parse (dirty data) instead of failing: a field that fails "
    "is null and the row stays; a record that is not JSON is skipped."
)
_JSON = {"formats": ("json",)}
_DBZ = {"formats": ("debezium-json",)}
_CANAL = {"formats": ("canal-json",)}
_NAME = _k("name", "String", None, "A name for the source or sink (the asset and consumer group "
           "are named after the pipeline, else after the source).")  # fmt: skip
_TYPE = _k("type", "String", None, "Must be 'kafka'.", required=True)
_SERVERS = _k(
    "properties.bootstrap.servers",
    "String",
    None,
    "host:port,... of the brokers; may come from the KafkaResource instead.",
    **_T,
)
_PROPERTIES = _k("properties.", "String", None,
                 "Kafka client settings, as for Kafka tables (docs: 'Kafka client properties').",
                 prefix=True, **_T)  # fmt: skip
#: The value formats a pipeline's source reads and its sink writes.
INGESTION_FORMATS = ("debezium-json", "canal-json", "json")
#: The key formats a pipeline's sink writes.
SINK_KEY_FORMATS = ("json", "csv")
#: ``partition.strategy`` values.
PARTITION_STRATEGIES = ("all-to-zero", "hash-by-key")
#: ``canal-json.infer-schema.strategy`` values.
CANAL_STRATEGIES = ("AUTO", "SQL_TYPE", "MYSQL_TYPE")

INGESTION_KEYS: dict[str, dict[str, IngestionKey]] = {
    section: {k.key: k for k in keys}
    for section, keys in {
        "source": (
            _TYPE, _NAME, _SERVERS, _PROPERTIES,
            _k("value.format", "String", "debezium-json",
               "Format of the values: debezium-json, canal-json or json.",
               parse=parse_choice(*INGESTION_FORMATS)),
            _k("key.format", "String", None,
               "json only, with a json value format: the key's fields become columns too "
               "(named with 'key.fields-prefix').", parse=parse_choice("json")),
            _k("topic", "String", None, "Topic(s) to read, separated by ';'.", **_T),
            _k("topic-pattern", "String", None, "Regular expression of the topics to read.", **_T),
            _k("properties.group.id", "String", None,
               "Consumer group; default 'KafkaSource-<name>'.", **_T),
            _k("scan.startup.mode", "Enum", "group-offsets",
               "Where the first run starts (later runs resume from the checkpoint).", **_T),
            _k("scan.startup.specific-offsets", "String", None,
               "'partition:0,offset:42;...' for 'specific-offsets'.", **_T),
            _k("scan.startup.timestamp-millis", "Long", None, "Start timestamp for 'timestamp'.",
               **_T),
            _k("scan.topic-partition-discovery.interval", "Duration", "5 min",
               "Interval of the discovery sensor (when the definitions include it).", **_T),
            _k("scan.check.duplicated.group.id", "Boolean", "false",
               "Refuse to run while the consumer group has active members.", **_T),
            _k("schema.inference.strategy", "Enum", "continuous",
               "continuous: every record read widens each table's schema, kept from run to run; "
               "static: a table's schema is fixed once (sampled, or its first record).",
               parse=parse_choice("continuous", "static")),
            _k("scan.max.pre.fetch.records", "Integer", "50",
               "static: the newest records per partition sampled by the first run.",
               parse=parse_int),
            _k("key.fields-prefix", "String", "",
               "Prefix of the columns read from the key (not a prefix of 'value.fields-prefix').",
               **_JSON),
            _k("value.fields-prefix", "String", "",
               "Prefix of the columns read from the rows (not a prefix of 'key.fields-prefix')."),
            _k("metadata.list", "String", None,
               "Record metadata appended to every row as columns, comma-separated: topic, "
               "partition, offset, timestamp, timestamp-type, headers, leader-epoch, "
               "__raw_key__, __raw_value__."),
            _k("scan.value.initial-schemas.ddls", "String", None,
               "Initial schemas: 'CREATE TABLE db.t (id BIGINT, ...); ...' (Flink SQL); "
               "inference widens them, and a PRIMARY KEY becomes the table's key."),
            _k("ingestion.ignore-errors", "Boolean", "false",
               "Skip records that fail to decode (counted, sampled) instead of failing.", **_T),
            _k("ingestion.error-tolerance.max-count", "Integer", "-1",
               "With ignore-errors: fail the run past this many dirty records (-1: no limit).",
               **_T),
            _k("ingestion.dead-letter.topic", "String", None,
               "Also write tolerated dirty records there (raw bytes, provenance in headers).",
               **_T),
            _k("debezium-json.distributed-tables", "Boolean", "false",
               "Accepted: every run reads all partitions together, so a table may always span "
               "partitions.", parse=parse_bool, **_DBZ),
            _k("debezium-json.schema-include", "Boolean", "false",
               "Records are Kafka Connect envelopes {schema, payload}.", **_DBZ, **_T),
            _k("debezium-json.ignore-parse-errors", "Boolean", "false", _TOLERATE, **_DBZ, **_T),
            _k("debezium-json.infer-schema.primitive-as-string", "Boolean", "false",
               "Infer every column as STRING.", parse=parse_bool, **_DBZ),
            _k("canal-json.distributed-tables", "Boolean", "false",
               "Accepted: every run reads all partitions together.", parse=parse_bool, **_CANAL),
            _k("canal-json.database.include", "String", None,
               "Only records whose 'database' matches this regular expression.", **_CANAL, **_T),
            _k("canal-json.table.include", "String", None,
               "Only records whose 'table' matches this regular expression.", **_CANAL, **_T),
            _k("canal-json.ignore-parse-errors", "Boolean", "false", _TOLERATE, **_CANAL, **_T),
            _k("canal-json.infer-schema.primitive-as-string", "Boolean", "false",
               "Infer every column as STRING.", parse=parse_bool, **_CANAL),
            _k("canal-json.infer-schema.strategy", "Enum", "AUTO",
               "AUTO: types from the values; SQL_TYPE: from 'sqlType' (JDBC codes); "
               "MYSQL_TYPE: from 'mysqlType'.", parse=parse_choice(*CANAL_STRATEGIES), **_CANAL),
            _k("canal-json.mysql.treat-mysql-timestamp-as-datetime-enabled", "Boolean", "true",
               "MYSQL_TYPE: MySQL TIMESTAMP is TIMESTAMP (else TIMESTAMP_LTZ).",
               parse=parse_bool, **_CANAL),
            _k("canal-json.mysql.treat-tinyint1-as-boolean.enabled", "Boolean", "true",
               "MYSQL_TYPE: tinyint(1) is BOOLEAN (else TINYINT).", parse=parse_bool, **_CANAL),
            _k("json.timestamp-format.standard", "Enum", "SQL",
               "Timestamp text of typed columns: SQL or ISO-8601.", **_JSON, **_T),
            _k("json.ignore-parse-errors", "Boolean", "false", _TOLERATE, **_JSON, **_T),
            _k("json.infer-schema.primitive-as-string", "Boolean", "false",
               "Infer every column as STRING.", **_JSON, **_T),
            _k("json.infer-schema.flatten-nested-columns.enable", "Boolean", "false",
               "Nested objects become columns 'parent.child' (else a STRING of their JSON).",
               **_JSON, **_T),
            _k("json.decode.parser-table-id.fields", "String", None,
               "Fields whose values, joined with '.', are a record's table id (default: the "
               "topic name).", **_JSON),
            _k("json.infer-schema.fixed-types", "String", None,
               "Fields whose type is given, e.g. 'id BIGINT, name VARCHAR(10)'.", **_JSON, **_T),
        ),
        "sink": (
            _TYPE, _NAME, _SERVERS, _PROPERTIES,
            _k("value.format", "String", "debezium-json",
               "debezium-json ({before, after, op, source}), canal-json ({old, data, type, "
               "database, table, pkNames}) or json (the row; insert-only sources).",
               parse=parse_choice(*INGESTION_FORMATS)),
            _k("key.format", "String", None,
               "json ({\"TableId\": ..., <primary key>}) or csv (the same fields); without it "
               "records have no key.", parse=parse_choice(*SINK_KEY_FORMATS)),
            _k("topic", "String", None, "Write every table to this one topic."),
            _k("partition.strategy", "Enum", "all-to-zero",
               "all-to-zero: partition 0; hash-by-key: murmur2 of the key (needs 'key.format').",
               parse=parse_choice(*PARTITION_STRATEGIES)),
            _k("sink.tableId-to-topic.mapping", "String", None,
               "'<tables>:<topic>;...': tables (comma-separated selectors, regular expressions "
               "per part) to a topic; others go to the topic named like their table id."),
            _k("debezium-json.include-schema.enabled", "Boolean", "false",
               "debezium-json: write {schema, payload} with the Kafka Connect schema of "
               "before/after.", parse=parse_bool),
            _k("sink.delivery-guarantee", "Enum", "at-least-once",
               "none, at-least-once or exactly-once (one transaction for every topic and the "
               "source offsets).", **_T),
            _k("sink.transactional-id-prefix", "String", None,
               "Prefix of the stable transactional id; required by exactly-once.", **_T),
        ),
        "route": (
            _k("source-table", "String", None,
               "Tables to route: comma-separated, '.' separates database and table, '\\.' is a "
               "regular-expression dot.", required=True),
            _k("sink-table", "String", None,
               "The table id they become (with $1... groups, or the replace-symbol).",
               required=True),
            _k("replace-symbol", "String", None,
               "A symbol in 'sink-table' replaced by each source table's name."),
            _k("description", "String", None, "Free text."),
        ),
        "transform": (
            _k("source-table", "String", None,
               "Tables to transform (selectors as in 'sink.tableId-to-topic.mapping'); the "
               "first rule that matches a table applies.", required=True),
            _k("projection", "String", None,
               "Columns: '*', names and Flink SQL expressions with AS; also __namespace_name__, "
               "__schema_name__, __table_name__, __data_event_type__."),
            _k("filter", "String", None,
               "Flink SQL condition on each row image; an update whose before image fails it "
               "becomes an insert, whose after image fails it a delete."),
            _k("primary-keys", "String", None,
               "Comma-separated primary key columns (the key and 'pkNames' written)."),
            _k("description", "String", None, "Free text."),
        ),
        "pipeline": (
            _k("name", "String", None, "The pipeline's name: the asset's name and group."),
            _k("parallelism", "Integer", None, "Read with at least this many Spark tasks.",
               parse=parse_int),
            _k("dirty-data.collector.type", "String", None,
               "logger: every skipped dirty record is logged (topic, partition, offset, error, "
               "value).", parse=parse_choice("logger")),
        ),
    }.items()
}  # fmt: skip

#: Keys of the vendor's pipelines that cannot take effect here, by section, with the reason.
REFUSED_INGESTION_KEYS: dict[str, dict[str, str]] = {
    "source": {
        "sink.tableId-to-topic.mapping": "it is a sink option: move it under 'sink'",
    },
    "sink": {
        "sink.add-tableId-to-header-enabled": "table-id headers are not written",
        "sink.custom-header": "custom headers are not written",
        "include.schema.changes": "schema change events are not written to Kafka",
        "exclude.schema.changes": "schema change events are not written to Kafka",
    },
    "transform": {
        "partition-keys": "partition keys configure lake sinks; a Kafka sink places records by "
        "'partition.strategy'",
        "table-options": "table options configure the sink's table creation; Kafka topics are "
        "not created by the pipeline",
        "table-options.delimiter": "table options configure the sink's table creation",
        "converter-after-transform": "post-transform converters (SOFT_DELETE) are not supported",
    },
    "pipeline": {
        "user-defined-function": "user-defined functions run inside Flink (Java/Python "
        "classes); use Spark SQL built-in functions in 'projection' and 'filter'",
        "model": "AI models are not supported",
        "schema.change.behavior": "a Kafka sink writes rows, no schema change events, so every "
        "behavior is the same here",
        "local-time-zone": "timestamps are written as the Spark session's time zone says "
        "(spark.sql.session.timeZone)",
        "execution.runtime-mode": "every run is a bounded batch run",
        "route.mode": "every route that matches a table applies, as Flink CDC's default",
    },
}


def known_keys(section: str) -> list[str]:
    """The keys of ``section`` that take effect, for messages (prefix families as ``x.*``).

    Example:
        >>> known_keys("route")
        ['source-table', 'sink-table', 'replace-symbol', 'description']
    """
    return [k.key + "*" if k.prefix else k.key for k in INGESTION_KEYS[section].values()]


def find_ingestion_key(section: str, key: str) -> IngestionKey | None:
    """The declaration of ``key`` in ``section`` (a ``properties.*`` key finds the family).

    Example:
        >>> find_ingestion_key("sink", "properties.acks").prefix
        True
    """
    keys = INGESTION_KEYS[section]
    if key in keys:
        return keys[key]
    family = next((k for k in keys.values() if k.prefix and key.startswith(k.key)), None)
    return family if family is not None and len(key) > len(family.key) else None


__all__ = [
    "CANAL_STRATEGIES",
    "INGESTION_FORMATS",
    "INGESTION_KEYS",
    "KAFKA_ONLY_REASON",
    "KAFKA_TYPE",
    "PARTITION_STRATEGIES",
    "REFUSED_INGESTION_KEYS",
    "SECTIONS",
    "SINK_KEY_FORMATS",
    "IngestionKey",
    "find_ingestion_key",
    "known_keys",
]
