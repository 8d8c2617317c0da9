"""``KafkaTableSpec``: one typed, validated view of a Kafka table's Flink options."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaOptionsError
from . import _rules as rules
from ._changelog import changelog_rules
from ._formats import (
    CHANGELOG_FORMATS,
    FormatSpec,
    check_format_keys,
    format_key_parts,
    resolve_format,
    with_default_subject,
)
from ._metadata import check_metadata_columns
from ._partitioner import BUILT_IN as BUILT_IN_PARTITIONERS
from ._partitioner import load_partitioner
from ._properties import redact, translate_properties
from ._table import (
    CONNECTORS,
    OPTIONS,
    UPSERT_KAFKA,
    BoundedMode,
    DeliveryGuarantee,
    StartupMode,
    TransactionNamingStrategy,
    TransactionScope,
    ValueFieldsInclude,
    find_option,
    parse_bool,
    parse_value,
    unknown_key_error,
)
from ._types import Column

_ROLES = (None, "source", "sink")
_OFFSETS_PART = re.compile(r"\s*partition\s*:\s*([0-9]{1,10})\s*,\s*offset\s*:\s*([0-9]{1,19})\s*")


def parse_specific_offsets(key: str, text: str) -> dict[int, int]:
    """Parse ``partition:0,offset:42;partition:1,offset:300`` into ``{0: 42, 1: 300}``.

    Example:
        >>> parse_specific_offsets("scan.startup.specific-offsets", "partition:0,offset:42")
        {0: 42}

    A partition named twice takes its last offset, as in Flink (with a
    :class:`~dagster_kafka_flinklike.errors.KafkaOptionsWarning`).

    Raises:
        KafkaOptionsError: a part is malformed, or no partition is named.
    """
    result: dict[int, int] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        m = _OFFSETS_PART.fullmatch(part)
        if not m:
            raise KafkaOptionsError(
                f"Invalid properties '{key}' should follow the format "
                f"'partition:0,offset:42;partition:1,offset:300', but is {text[:80]!r}.",
                keys=(key,),
            )
        partition, offset = int(m.group(1)), int(m.group(2))
        if partition in result:
            rules.warn(
                f"Option '{key}' gives partition {partition} twice; its last offset "
                f"({offset}) applies, as in Flink.",
                key,
            )
        result[partition] = offset
    if not result:
        raise KafkaOptionsError(f"Option '{key}' names no partition.", keys=(key,))
    return result


def _strs(options: Mapping[str, Any]) -> dict[str, str]:
    if not isinstance(options, Mapping):
        raise KafkaOptionsError(f"Options must be a mapping, got {type(options).__name__}.")
    out: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise KafkaOptionsError(f"Option keys must be strings, got {type(key).__name__}.")
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, int | float | str):
            out[key] = str(value)
        else:
            raise KafkaOptionsError(
                f"Option '{key}' must be a string, number or boolean, got {type(value).__name__}.",
                keys=(key,),
            )
    return out


@dataclass(frozen=True)
class KafkaTableSpec:
    """A Kafka table declared with Flink's connector options, validated once at load.

    Build it with :meth:`from_options`; the source, sink, formats and Dagster layers all read
    this spec and nothing else parses options.

    Example:
        >>> orders = KafkaTableSpec.from_options(
        ...     {"connector": "kafka", "topic": "orders", "format": "json",
        ...      "properties.group.id": "revenue", "scan.startup.mode": "earliest-offset"},
        ...     columns=[{"name": "order_id", "type": "BIGINT"}],
        ... )
        >>> orders.topics
        ('orders',)
    """

    options: Mapping[str, str]
    name: str | None
    connector: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    properties: Mapping[str, str]
    value_format: FormatSpec
    key_format: FormatSpec | None
    key_fields: tuple[str, ...]
    key_fields_prefix: str
    value_fields_prefix: str
    value_fields_include: ValueFieldsInclude
    startup_mode: StartupMode
    startup_specific_offsets: Mapping[int, int] | None
    startup_timestamp_millis: int | None
    bounded_mode: BoundedMode
    bounded_specific_offsets: Mapping[int, int] | None
    bounded_timestamp_millis: int | None
    partition_discovery_interval_ms: int | None
    header_filter: str | None
    check_duplicated_group_id: bool
    sink_partitioner: str
    delivery_guarantee: DeliveryGuarantee
    transactional_id_prefix: str | None
    sink_parallelism: int | None
    transaction_naming_strategy: TransactionNamingStrategy
    transaction_scope: TransactionScope
    scan_parallelism: int | None
    ignore_errors: bool
    error_tolerance_max_count: int
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    role: str | None = None
    sink_buffer_flush_max_rows: int = 0
    sink_buffer_flush_interval_ms: int = 0
    dead_letter_topic: str | None = None
    #: Schema inference: records sampled per partition (``scan.max.pre.fetch.records``) and
    #: the strategy (``schema.inference.strategy``: continuous or static).
    prefetch_records: int = 50
    inference_strategy: str = "continuous"
    #: The user class that ``sink.partitioner`` names, imported once when the table is declared
    #: (None for the built-in partitioners).
    partitioner_class: type | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        *,
        columns: Iterable[Column | dict[str, Any]] | None = None,
        primary_key: Iterable[str] | None = None,
        role: str | None = None,
        name: str | None = None,
    ) -> KafkaTableSpec:
        """Validate Flink WITH options (and the table's columns) into a spec.

        Args:
            options: the WITH map; values are strings as in Flink (numbers/booleans accepted).
            columns: ``{"name", "type", ...}`` dicts or :class:`Column` objects.
            primary_key: primary key column names (required by ``upsert-kafka``).
            role: ``"source"``, ``"sink"`` or None (either). A table with a role is checked
                by that use's rules only, and options of the other use are accepted with a
                :class:`~dagster_kafka_flinklike.errors.KafkaOptionsWarning` (Flink ignores
                them); without a role the table must be valid for both uses.
            name: the table's name, used in messages and the default group id.

        Raises:
            KafkaOptionsError: naming the offending option key(s) and what is allowed.
        """
        if role not in _ROLES:
            raise KafkaOptionsError(f"role must be None, 'source' or 'sink', got {role!r}.")
        opts = _strs(options)
        unknown = [k for k in opts if find_option(k) is None and format_key_parts(k) is None]
        if unknown:
            raise unknown_key_error(unknown)
        connector = (opts.get("connector") or "").strip()
        if connector not in CONNECTORS:
            raise KafkaOptionsError(
                f"Option 'connector' must be 'kafka' or 'upsert-kafka', got "
                f"{opts.get('connector', '(missing)')[:40]!r}.",
                keys=("connector",),
            )
        rules.check_connector_keys(opts, connector)
        parsed = {o.key: parse_value(o, opts) for o in OPTIONS if not o.prefix}
        topics, pattern = rules.subscription(parsed["topic"], parsed["topic-pattern"], role)
        uses = ("source", "sink") if role is None else (role,)
        rules.other_role_options(opts, role, _label(name, topics or (str(pattern),)))

        value_name, value_key = _value_format(parsed, connector)
        key_name = parsed["key.format"]
        check_format_keys(opts, value_name, key_name)
        value_format = with_default_subject(
            resolve_format(opts, value_name, value_key), topics, "value"
        )
        key_format = (
            with_default_subject(resolve_format(opts, key_name, "key.format"), topics, "key")
            if key_name
            else None
        )

        pk = tuple(primary_key or ())
        upsert = connector == UPSERT_KAFKA
        key_fields = tuple(f.strip() for f in parsed["key.fields"].split(";") if f.strip())
        if upsert:
            if key_format is None:
                raise KafkaOptionsError(
                    "The 'upsert-kafka' connector requires 'key.format'.", keys=("key.format",)
                )
            key_fields = pk
        elif key_fields and key_format is None:
            raise KafkaOptionsError(
                "The option 'key.fields' can only be declared if a key format is defined using "
                "'key.format'.",
                keys=("key.fields", "key.format"),
            )
        elif key_format is not None and not key_fields:
            raise KafkaOptionsError(
                "A key format 'key.format' requires the declaration of one or more of key "
                "fields using 'key.fields'.",
                keys=("key.format", "key.fields"),
            )
        include = parsed["value.fields-include"]
        key_prefix, value_prefix = parsed["key.fields-prefix"], parsed["value.fields-prefix"]
        rules.key_prefix_rules(key_fields, key_prefix, value_prefix, include, upsert=upsert)

        startup_mode = StartupMode.EARLIEST_OFFSET if upsert else parsed["scan.startup.mode"]
        bounded_mode = parsed["scan.bounded.mode"]
        modes = (
            (startup_mode, "scan.startup.mode", StartupMode),
            (bounded_mode, "scan.bounded.mode", BoundedMode),
        )
        if "source" in uses:
            for mode, mode_key, enum in modes:
                rules.companion(opts, mode, mode_key, enum, len(topics))
                rules.unused_companions(opts, mode, mode_key, enum)
            for key in ("scan.startup.timestamp-millis", "scan.bounded.timestamp-millis"):
                rules.non_negative(parsed[key], key)
            rules.at_least_one(parsed["scan.parallelism"], "scan.parallelism")
        guarantee = rules.delivery_guarantee(parsed)
        if "sink" in uses:
            rules.sink_rules(parsed, opts, key_fields)
        rules.header_filter(parsed["scan.header-filter"])
        max_count = parsed["ingestion.error-tolerance.max-count"]
        if max_count < -1:
            raise KafkaOptionsError(
                f"Option 'ingestion.error-tolerance.max-count' must be -1 (no limit) or >= 0, "
                f"got {max_count}.",
                keys=("ingestion.error-tolerance.max-count",),
            )
        properties = {
            k[len("properties.") :]: v for k, v in opts.items() if k.startswith("properties.")
        }
        translate_properties(properties)  # fails early on settings librdkafka cannot honour
        if "commit.offsets.on.checkpoint" in properties:
            parse_bool(
                "properties.commit.offsets.on.checkpoint",
                properties["commit.offsets.on.checkpoint"],
            )

        cols = tuple(Column.coerce(c) for c in (columns or ()))
        changelog_rules(
            upsert=upsert,
            value_format=value_format,
            value_key=value_key,
            key_format=key_format,
            columns=cols,
            sink="sink" in uses and role == "sink",
            opts=opts,
        )
        if value_format.name not in CHANGELOG_FORMATS:  # Flink: a changelog may declare one
            rules.primary_key_rule(connector, pk, value_key, value_format.name)
        if upsert and not pk:
            raise KafkaOptionsError(
                "'upsert-kafka' tables require to define a PRIMARY KEY constraint. The PRIMARY "
                "KEY specifies which columns should be read from or write to the Kafka message "
                "key.",
                keys=("connector",),
            )
        if cols:
            rules.column_rules(
                cols,
                connector=connector,
                key_fields=key_fields,
                primary_key=pk,
                value_prefix=value_prefix,
                include=include,
            )
            check_metadata_columns(cols, role=role, value_format=value_format.name)
            physical = [c.name for c in cols if c.is_physical]
            value_cols = [
                n for n in physical if include == ValueFieldsInclude.ALL or n not in key_fields
            ]
            rules.raw_single_field(value_format.name, value_cols, value_key)
            by_name = {c.name: c for c in cols}
            rules.csv_column_types(value_format.name, [by_name[n] for n in value_cols], value_key)
            rules.avro_columns(value_format, [by_name[n] for n in value_cols], value_key)
            rules.protobuf_columns(
                value_format, [by_name[n] for n in value_cols], value_key, value_prefix
            )
            if key_format is not None:
                key_cols = [by_name[n] for n in key_fields if n in by_name]
                rules.avro_columns(key_format, key_cols, "key.format")
                rules.raw_single_field(key_format.name, list(key_fields), "key.format")
                rules.csv_column_types(key_format.name, key_cols, "key.format")
                rules.protobuf_columns(key_format, key_cols, "key.format", key_prefix)

        rules.schema_inference(opts, value_format.name, cols, parsed["scan.max.pre.fetch.records"])
        interval = _discovery_interval(opts, parsed["scan.topic-partition-discovery.interval"])
        return cls(
            options=dict(opts),
            name=name,
            connector=connector,
            topics=topics,
            topic_pattern=pattern,
            properties=properties,
            value_format=value_format,
            key_format=key_format,
            key_fields=key_fields,
            key_fields_prefix=key_prefix,
            value_fields_prefix=value_prefix,
            value_fields_include=include,
            startup_mode=startup_mode,
            startup_specific_offsets=_offsets(opts, uses, startup_mode, StartupMode),
            startup_timestamp_millis=parsed["scan.startup.timestamp-millis"],
            bounded_mode=bounded_mode,
            bounded_specific_offsets=_offsets(opts, uses, bounded_mode, BoundedMode),
            bounded_timestamp_millis=parsed["scan.bounded.timestamp-millis"],
            partition_discovery_interval_ms=interval if interval and interval > 0 else None,
            header_filter=parsed["scan.header-filter"],
            check_duplicated_group_id=parsed["scan.check.duplicated.group.id"],
            sink_partitioner=parsed["sink.partitioner"].strip(),
            delivery_guarantee=guarantee,
            transactional_id_prefix=parsed["sink.transactional-id-prefix"],
            sink_parallelism=parsed["sink.parallelism"],
            transaction_naming_strategy=parsed["sink.transaction-naming-strategy"],
            transaction_scope=parsed["sink.transaction-scope"],
            scan_parallelism=parsed["scan.parallelism"],
            ignore_errors=parsed["ingestion.ignore-errors"],
            error_tolerance_max_count=max_count,
            columns=cols,
            primary_key=pk,
            role=role,
            sink_buffer_flush_max_rows=parsed["sink.buffer-flush.max-rows"],
            sink_buffer_flush_interval_ms=parsed["sink.buffer-flush.interval"],
            dead_letter_topic=parsed["ingestion.dead-letter.topic"],
            prefetch_records=parsed["scan.max.pre.fetch.records"],
            inference_strategy=parsed["schema.inference.strategy"],
            partitioner_class=(
                _partitioner_class(parsed["sink.partitioner"]) if "sink" in uses else None
            ),
        )

    def for_role(self, role: str) -> KafkaTableSpec:
        """This table checked for one use, ``"source"`` or ``"sink"``, once that use is known.

        A table declared without a role passed the rules of both uses, so this adds what only
        that use requires (a sink's single topic, its writable metadata) and warns about the
        options of the other use, which have no effect there. A table declared for the other
        use is checked again in full for this one.

        Example:
            >>> orders.for_role("source").role  # doctest: +SKIP
            'source'

        Raises:
            KafkaOptionsError: the table breaks a rule of that use.
        """
        if role == self.role:
            return self
        if self.role is None and role in ("source", "sink"):
            if role == "sink":
                rules.sink_topic(self.topics, self.topic_pattern)
                changelog_rules(
                    upsert=self.is_upsert,
                    value_format=self.value_format,
                    value_key="format" if "format" in self.options else "value.format",
                    key_format=self.key_format,
                    columns=self.columns,
                    sink=True,
                    opts=self.options,
                )
            check_metadata_columns(self.columns, role=role, value_format=self.value_format.name)
            rules.other_role_options(self.options, role, _label(self.name, self.topics))
            return dataclasses.replace(self, role=role)
        return KafkaTableSpec.from_options(
            self.options,
            columns=self.columns,
            primary_key=self.primary_key,
            role=role,
            name=self.name,
        )

    @property
    def is_upsert(self) -> bool:
        """True for an ``upsert-kafka`` table (changelog keyed by the primary key)."""
        return self.connector == UPSERT_KAFKA

    @property
    def is_changelog(self) -> bool:
        """True when the table's rows carry a row kind (column ``_rowkind``): its value format
        is a changelog format (``debezium-json``, ...) or it is an ``upsert-kafka`` table."""
        return self.is_upsert or self.value_format.name in CHANGELOG_FORMATS

    @property
    def bootstrap_servers(self) -> str | None:
        """``properties.bootstrap.servers``, or None when a resource supplies it."""
        return self.properties.get("bootstrap.servers")

    def subscribes_to(self, topic: str) -> bool:
        """Whether reading this table reads ``topic``: one of its ``topic`` list, or a name its
        ``topic-pattern`` matches whole (as Flink matches the pattern)."""
        if topic in self.topics:
            return True
        pattern = self.topic_pattern
        return pattern is not None and re.fullmatch(pattern, topic) is not None

    @property
    def group_id(self) -> str | None:
        """``properties.group.id`` as written (None when not set)."""
        return self.properties.get("group.id")

    @property
    def effective_group_id(self) -> str | None:
        """The consumer group a source uses: ``properties.group.id`` or Flink's default
        ``KafkaSource-<table name>`` (None when neither is known)."""
        return self.group_id or (f"KafkaSource-{self.name}" if self.name else None)

    @property
    def commit_offsets(self) -> bool:
        """Whether a source commits its offsets to the consumer group after a run
        (``properties.commit.offsets.on.checkpoint``, default true, as in Flink)."""
        return self.properties.get("commit.offsets.on.checkpoint", "true").lower() == "true"

    @property
    def client_id_prefix(self) -> str | None:
        """``properties.client.id.prefix``: prefix of the client ids of the connector's clients."""
        return self.properties.get("client.id.prefix")

    @property
    def infers_schema(self) -> bool:
        """True when reading infers the value columns: a JSON table declaring no physical
        column (see :mod:`~dagster_kafka_flinklike.source.inference`)."""
        return self.value_format.name == "json" and not self.physical_columns

    @property
    def physical_columns(self) -> tuple[Column, ...]:
        """Columns carried in the record key or value, in declaration order."""
        return tuple(c for c in self.columns if c.is_physical)

    @property
    def metadata_columns(self) -> tuple[Column, ...]:
        """Columns read from or written to record metadata."""
        return tuple(c for c in self.columns if c.is_metadata)

    @property
    def computed_columns(self) -> tuple[Column, ...]:
        """Computed columns (``name AS expression``), evaluated after decoding."""
        return tuple(c for c in self.columns if c.is_computed)

    @property
    def value_columns(self) -> tuple[Column, ...]:
        """Physical columns encoded in the value (all, or all but the key's with EXCEPT_KEY)."""
        if self.value_fields_include == ValueFieldsInclude.EXCEPT_KEY:
            return tuple(c for c in self.physical_columns if c.name not in self.key_fields)
        return self.physical_columns

    @property
    def key_columns(self) -> tuple[Column, ...]:
        """Physical columns encoded in the key, in ``key.fields`` order."""
        by_name = {c.name: c for c in self.physical_columns}
        return tuple(by_name[f] for f in self.key_fields if f in by_name)

    @property
    def key_field_names(self) -> tuple[str, ...]:
        """Field names inside the encoded key: ``key.fields`` without ``key.fields-prefix``."""
        return tuple(_strip(f, self.key_fields_prefix) for f in self.key_fields)

    @property
    def value_field_names(self) -> tuple[str, ...]:
        """Field names inside the encoded value: value columns without ``value.fields-prefix``."""
        return tuple(_strip(c.name, self.value_fields_prefix) for c in self.value_columns)

    def describe(self) -> dict[str, str]:
        """The options with secrets redacted: safe to log or put in metadata."""
        return dict(sorted(redact(self.options).items()))

    def __repr__(self) -> str:
        return f"KafkaTableSpec(name={self.name!r}, options={self.describe()!r})"


#: Flink's ``KafkaSource`` / legacy consumer spellings of the discovery interval (milliseconds).
_DISCOVERY_PROPERTIES = (
    "properties.partition.discovery.interval.ms",
    "properties.flink.partition-discovery.interval-millis",
)


def _discovery_interval(opts: Mapping[str, str], interval: int | None) -> int | None:
    """``scan.topic-partition-discovery.interval``, or the same interval written as a
    DataStream property (``properties.partition.discovery.interval.ms``), in milliseconds."""
    key = "scan.topic-partition-discovery.interval"
    for prop in _DISCOVERY_PROPERTIES:
        if prop not in opts:
            continue
        text = opts[prop].strip()
        if not re.fullmatch(r"-?[0-9]{1,18}", text):
            raise KafkaOptionsError(
                f"Option '{prop}' expects milliseconds as a whole number, got {text[:40]!r}.",
                keys=(prop,),
            )
        if key in opts and int(text) != interval:
            raise KafkaOptionsError(
                f"Options '{key}' and '{prop}' both set the partition discovery interval, "
                f"differently; keep one.",
                keys=(key, prop),
            )
        interval = int(text)
    return interval


def _label(name: str | None, topics: tuple[str, ...]) -> str:
    return name or ",".join(topics)


def _value_format(parsed: Mapping[str, Any], connector: str) -> tuple[str, str]:
    """The value format's name and the key that declared it: 'format' wins over 'value.format'
    when both are set (Flink reads 'format' first); 'upsert-kafka' has only 'value.format'."""
    fmt, value = parsed["format"], parsed["value.format"]
    if fmt is not None and value is not None and fmt != value:
        rules.warn(
            f"Option 'value.format' ('{value}') has no effect: 'format' ('{fmt}') is also set "
            f"and wins, as in Flink.",
            "value.format",
            "format",
        )
    if fmt is not None:
        return fmt, "format"
    if value is not None:
        return value, "value.format"
    if connector == UPSERT_KAFKA:
        raise KafkaOptionsError(
            "The 'upsert-kafka' connector requires 'value.format'.", keys=("value.format",)
        )
    raise KafkaOptionsError(
        "One of 'format' or 'value.format' is required.", keys=("format", "value.format")
    )


def _partitioner_class(option: str) -> type | None:
    """The user partitioner class ``sink.partitioner`` names (imported and checked), if any."""
    name = option.strip()
    return None if name in BUILT_IN_PARTITIONERS else load_partitioner(name)


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


def _offsets(
    opts: Mapping[str, str], uses: tuple[str, ...], mode: Any, enum: Any
) -> dict[int, int] | None:
    """The offsets of a ``specific-offsets`` mode; read only when that mode is selected (as in
    Flink, an unselected mode's offsets are ignored: they were warned about)."""
    key = f"scan.{'startup' if enum is StartupMode else 'bounded'}.specific-offsets"
    if "source" not in uses or mode != enum.SPECIFIC_OFFSETS:
        return None
    return parse_specific_offsets(key, opts[key])


def check_sink_not_read(
    sources: Mapping[str, KafkaTableSpec], sink: KafkaTableSpec, sink_name: str = "the sink"
) -> None:
    """Refuse a sink whose topic one of ``sources`` reads on the same cluster: every run would
    read its own output again (and, under exactly-once, commit offsets past it).

    Tables whose ``properties.bootstrap.servers`` name different clusters do not meet.

    Raises:
        KafkaOptionsError: naming the source, the sink, the topic and the option that matches.
    """
    for name, source in sources.items():
        for topic in sink.topics:
            if not source.subscribes_to(topic):
                continue
            servers = (source.bootstrap_servers, sink.bootstrap_servers)
            if None not in servers and servers[0] != servers[1]:
                continue
            how = (
                f"its 'topic' lists {topic!r}"
                if topic in source.topics
                else f"its 'topic-pattern' {source.topic_pattern!r} matches {topic!r}"
            )
            raise KafkaOptionsError(
                f"Sink table {sink.name or sink_name!r} writes topic {topic!r}, which source "
                f"table {source.name or name!r} reads ({how}): every run would read its own "
                f"output again. Write to another topic, or leave {topic!r} out of the source's "
                f"'topic' / 'topic-pattern'.",
                keys=("topic", "topic-pattern"),
            )
