"""``KafkaTableSpec``: one typed, validated view of a Kafka table's Flink options."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaOptionsError
from ._properties import redact
from ._table import (
    OPTIONS,
    SUPPORTED_FORMATS,
    BoundedMode,
    DeliveryGuarantee,
    StartupMode,
    ValueFieldsInclude,
    find_option,
    is_format_option,
    parse_value,
    unknown_key_error,
)
from ._types import Column

_ROLES = (None, "source", "sink")


@dataclass(frozen=True)
class FormatSpec:
    """A key or value format and its own options (prefix removed: ``ignore-parse-errors``)."""

    name: str
    options: Mapping[str, str] = field(default_factory=dict)


def parse_specific_offsets(key: str, text: str) -> dict[int, int]:
    """Parse ``partition:0,offset:42;partition:1,offset:300`` into ``{0: 42, 1: 300}``."""
    result: dict[int, int] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        m = re.fullmatch(r"\s*partition\s*:\s*(\d+)\s*,\s*offset\s*:\s*(\d+)\s*", part)
        if not m:
            raise KafkaOptionsError(
                f"Invalid value for option '{key}': {part.strip()!r} is not "
                f"'partition:<int>,offset:<int>' (expected e.g. "
                f"'partition:0,offset:42;partition:1,offset:300').",
                keys=(key,),
            )
        partition, offset = int(m.group(1)), int(m.group(2))
        if partition in result:
            raise KafkaOptionsError(
                f"Invalid value for option '{key}': partition {partition} is given twice.",
                keys=(key,),
            )
        result[partition] = offset
    if not result:
        raise KafkaOptionsError(f"Option '{key}' names no partition.", keys=(key,))
    return result


def _strs(options: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise KafkaOptionsError(f"Option keys must be strings, got {key!r}.")
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
    ignore_errors: bool
    error_tolerance_max_count: int
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

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
            columns: ``{"name", "type"}`` dicts or :class:`Column` objects.
            primary_key: primary key column names (required by ``upsert-kafka``).
            role: ``"source"``, ``"sink"`` or None (either); enables role-specific rules.
            name: the table's name, used in messages and the default group id.

        Raises:
            KafkaOptionsError: naming the offending option key(s) and what is allowed.
        """
        if role not in _ROLES:
            raise KafkaOptionsError(f"role must be None, 'source' or 'sink', got {role!r}.")
        opts = _strs(options)
        unknown = [k for k in opts if find_option(k) is None and not is_format_option(k)]
        if unknown:
            raise unknown_key_error(unknown)
        parsed = {o.key: parse_value(o, o.key, opts) for o in OPTIONS if not o.prefix}

        connector = parsed["connector"]
        if connector is None:
            raise KafkaOptionsError(
                "Option 'connector' is required ('kafka').", keys=("connector",)
            )
        if connector not in ("kafka", "upsert-kafka"):
            raise KafkaOptionsError(
                f"Unsupported value for option 'connector': {connector!r}. Allowed values are "
                f"'kafka', 'upsert-kafka'.",
                keys=("connector",),
            )

        topic, pattern = parsed["topic"], parsed["topic-pattern"]
        if topic is not None and pattern is not None:
            raise KafkaOptionsError(
                "Options 'topic' and 'topic-pattern' cannot both be set.",
                keys=("topic", "topic-pattern"),
            )
        topics = tuple(t.strip() for t in (topic or "").split(";") if t.strip())
        if topic is not None and not topics:
            raise KafkaOptionsError("Option 'topic' names no topic.", keys=("topic",))
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise KafkaOptionsError(
                    f"Option 'topic-pattern' is not a valid regular expression: {exc}.",
                    keys=("topic-pattern",),
                ) from None
        if not topics and pattern is None:
            raise KafkaOptionsError(
                "One of 'topic' or 'topic-pattern' is required.", keys=("topic", "topic-pattern")
            )
        if role == "sink" and (pattern is not None or len(topics) != 1):
            raise KafkaOptionsError(
                "A sink table needs exactly one 'topic' (no ';' list, no 'topic-pattern').",
                keys=("topic", "topic-pattern"),
            )

        value_format_name = parsed["value.format"] or parsed["format"]
        if value_format_name is None:
            raise KafkaOptionsError(
                "One of 'format' or 'value.format' is required.", keys=("format", "value.format")
            )
        value_format = _format(opts, value_format_name, "value.format")
        key_format = (
            _format(opts, parsed["key.format"], "key.format") if parsed["key.format"] else None
        )
        key_fields = tuple(f.strip() for f in parsed["key.fields"].split(";") if f.strip())
        if key_fields and key_format is None:
            raise KafkaOptionsError(
                "Option 'key.fields' requires 'key.format'.", keys=("key.fields", "key.format")
            )
        if key_format is not None and not key_fields and connector == "kafka":
            raise KafkaOptionsError(
                "Option 'key.format' requires 'key.fields' (the columns that form the key).",
                keys=("key.format", "key.fields"),
            )
        include = parsed["value.fields-include"]
        if parsed["key.fields-prefix"] and include != ValueFieldsInclude.EXCEPT_KEY:
            raise KafkaOptionsError(
                "Option 'key.fields-prefix' requires 'value.fields-include' = 'EXCEPT_KEY'.",
                keys=("key.fields-prefix", "value.fields-include"),
            )

        startup_mode = parsed["scan.startup.mode"]
        _companion(opts, startup_mode, "scan.startup.mode", StartupMode, "scan.startup")
        bounded_mode = parsed["scan.bounded.mode"]
        _companion(opts, bounded_mode, "scan.bounded.mode", BoundedMode, "scan.bounded")

        guarantee = parsed["sink.delivery-guarantee"]
        if (
            guarantee == DeliveryGuarantee.EXACTLY_ONCE
            and not parsed["sink.transactional-id-prefix"]
        ):
            raise KafkaOptionsError(
                "Option 'sink.transactional-id-prefix' is required when "
                "'sink.delivery-guarantee' is 'exactly-once'.",
                keys=("sink.transactional-id-prefix", "sink.delivery-guarantee"),
            )
        max_count = parsed["ingestion.error-tolerance.max-count"]
        if max_count < -1:
            raise KafkaOptionsError(
                f"Option 'ingestion.error-tolerance.max-count' must be -1 (no limit) or >= 0, "
                f"got {max_count}.",
                keys=("ingestion.error-tolerance.max-count",),
            )

        cols = tuple(Column.coerce(c) for c in (columns or ()))
        names = [c.name for c in cols]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise KafkaOptionsError(f"Column(s) declared twice: {', '.join(dupes)}.")
        if cols:
            physical = {c.name for c in cols if c.is_physical}
            missing = [f for f in key_fields if f not in physical]
            if missing:
                raise KafkaOptionsError(
                    f"Option 'key.fields' names column(s) that are not physical columns of the "
                    f"table: {', '.join(missing)}.",
                    keys=("key.fields",),
                )
        pk = tuple(primary_key or ())
        if connector == "upsert-kafka":
            if not pk:
                raise KafkaOptionsError(
                    "The 'upsert-kafka' connector requires a PRIMARY KEY.", keys=("connector",)
                )
            if key_format is None:
                raise KafkaOptionsError(
                    "The 'upsert-kafka' connector requires 'key.format'.", keys=("key.format",)
                )
            if not key_fields:
                key_fields = pk

        interval = parsed["scan.topic-partition-discovery.interval"]
        properties = {
            k[len("properties.") :]: v for k, v in opts.items() if k.startswith("properties.")
        }
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
            key_fields_prefix=parsed["key.fields-prefix"],
            value_fields_prefix=parsed["value.fields-prefix"],
            value_fields_include=include,
            startup_mode=startup_mode,
            startup_specific_offsets=_offsets(opts, "scan.startup.specific-offsets"),
            startup_timestamp_millis=parsed["scan.startup.timestamp-millis"],
            bounded_mode=bounded_mode,
            bounded_specific_offsets=_offsets(opts, "scan.bounded.specific-offsets"),
            bounded_timestamp_millis=parsed["scan.bounded.timestamp-millis"],
            partition_discovery_interval_ms=interval if interval and interval > 0 else None,
            header_filter=parsed["scan.header-filter"],
            check_duplicated_group_id=parsed["scan.check.duplicated.group.id"],
            sink_partitioner=parsed["sink.partitioner"],
            delivery_guarantee=guarantee,
            transactional_id_prefix=parsed["sink.transactional-id-prefix"],
            sink_parallelism=parsed["sink.parallelism"],
            ignore_errors=parsed["ingestion.ignore-errors"],
            error_tolerance_max_count=max_count,
            columns=cols,
            primary_key=pk,
        )

    @property
    def bootstrap_servers(self) -> str | None:
        """``properties.bootstrap.servers``, or None when a resource supplies it."""
        return self.properties.get("bootstrap.servers")

    @property
    def group_id(self) -> str | None:
        """``properties.group.id``."""
        return self.properties.get("group.id")

    @property
    def physical_columns(self) -> tuple[Column, ...]:
        """Columns carried in the record key or value, in declaration order."""
        return tuple(c for c in self.columns if c.is_physical)

    @property
    def metadata_columns(self) -> tuple[Column, ...]:
        """Columns read from or written to record metadata."""
        return tuple(c for c in self.columns if c.is_metadata)

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

    def describe(self) -> dict[str, str]:
        """The options with secrets redacted: safe to log or put in metadata."""
        props = redact({k[len("properties.") :]: v for k, v in self.options.items()
                        if k.startswith("properties.")})  # fmt: skip
        out = {k: v for k, v in self.options.items() if not k.startswith("properties.")}
        out.update({f"properties.{k}": v for k, v in props.items()})
        return dict(sorted(out.items()))

    def __repr__(self) -> str:
        return f"KafkaTableSpec(name={self.name!r}, options={self.describe()!r})"


def _format(opts: Mapping[str, str], name: str, key: str) -> FormatSpec:
    if name not in SUPPORTED_FORMATS:
        allowed = ", ".join(f"'{f}'" for f in SUPPORTED_FORMATS)
        raise KafkaOptionsError(
            f"Unsupported value for option '{key}': {name!r}. Supported formats are {allowed}.",
            keys=(key,),
        )
    side = key.split(".")[0]  # "key" / "value"
    own: dict[str, str] = {}
    prefixes = (f"{name}.", f"{side}.{name}.") if side == "value" else (f"{side}.{name}.",)
    for prefix in prefixes:
        for k, v in opts.items():
            if k.startswith(prefix):
                own[k[len(prefix) :]] = v
    return FormatSpec(name=name, options=own)


def _companion(opts: Mapping[str, str], mode: Any, mode_key: str, enum: Any, prefix: str) -> None:
    companions = {
        enum.TIMESTAMP: f"{prefix}.timestamp-millis",
        enum.SPECIFIC_OFFSETS: f"{prefix}.specific-offsets",
    }
    for needing_mode, companion in companions.items():
        if mode == needing_mode and companion not in opts:
            raise KafkaOptionsError(
                f"'{companion}' is required in '{needing_mode.value}' {mode_key} but missing.",
                keys=(companion, mode_key),
            )
        if mode != needing_mode and companion in opts:
            raise KafkaOptionsError(
                f"'{companion}' is only valid when '{mode_key}' is '{needing_mode.value}', but "
                f"'{mode_key}' is '{mode.value}'.",
                keys=(companion, mode_key),
            )


def _offsets(opts: Mapping[str, str], key: str) -> Mapping[int, int] | None:
    return parse_specific_offsets(key, opts[key]) if key in opts else None
