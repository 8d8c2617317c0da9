"""Cross-option rules of a Kafka table, one function per rule family (as Flink's validators).

Every function raises :class:`KafkaOptionsError` naming the keys at fault and what is allowed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import KafkaOptionsError, KafkaOptionsWarning
from ._avro import avro_schema
from ._departures import INCREMENTING_REASON, SINK_TOPIC_REASON
from ._formats import PROTOBUF_FORMATS, FormatSpec
from ._header_filter import parse_header_filter
from ._partitioner import check_partitioner_option
from ._table import (
    KAFKA,
    OPTIONS,
    UPSERT_KAFKA,
    DeliveryGuarantee,
    TransactionNamingStrategy,
    ValueFieldsInclude,
    find_option,
)
from ._types import Column
from .protobuf_descriptors import check_columns as check_protobuf_columns

_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_ROLE_WORDS = {"source": "read as a source", "sink": "written as a sink"}
_UPSERT_HINTS = {
    "format": "its value format is set with 'value.format' (and its key format with 'key.format')",
    "key.fields": "its key columns are the PRIMARY KEY columns",
    "scan.startup.mode": "it always reads from the earliest offset",
    "scan.startup.specific-offsets": "it always reads from the earliest offset",
    "scan.startup.timestamp-millis": "it always reads from the earliest offset",
    "sink.partitioner": "records are partitioned by their key",
}


def warn(message: str, *keys: str) -> None:
    """Warn that an accepted option has no effect (:class:`KafkaOptionsWarning`)."""
    warnings.warn(KafkaOptionsWarning(message, keys=keys), stacklevel=4)


def check_connector_keys(opts: Mapping[str, str], connector: str) -> None:
    """Options declared for the other connector only are an error (Flink: unsupported option)."""
    for option in OPTIONS:
        if option.key in opts and connector not in option.connectors:
            hint = _UPSERT_HINTS.get(option.key, "it is an option of the other connector")
            raise KafkaOptionsError(
                f"Option '{option.key}' is not supported by the '{connector}' connector: {hint}.",
                keys=(option.key, "connector"),
            )


def other_role_options(opts: Mapping[str, str], role: str | None, table: str) -> None:
    """Warn about options of the other use of a table whose role is known (Flink ignores a sink
    option of a table it reads, and a scan option of a table it writes)."""
    if role is None:
        return
    for key in opts:
        option = find_option(key)
        if option is None or option.prefix or role in option.roles:
            continue
        other = "sink" if role == "source" else "source"
        warn(
            f"Option '{key}' of table {table!r} has no effect: the table is {_ROLE_WORDS[role]}, "
            f"and the option applies when a table is {_ROLE_WORDS[other]}.",
            key,
        )


def subscription(
    topic: str | None, pattern: str | None, role: str | None
) -> tuple[tuple[str, ...], str | None]:
    """``topic`` (';'-separated list) xor ``topic-pattern``; a sink needs exactly one topic."""
    if topic is not None and pattern is not None:
        raise KafkaOptionsError(
            "Option 'topic' and 'topic-pattern' shouldn't be set together.",
            keys=("topic", "topic-pattern"),
        )
    named = [t.strip() for t in (topic or "").split(";") if t.strip()]
    topics = tuple(dict.fromkeys(named))
    if topic is not None and not topics:
        raise KafkaOptionsError("Option 'topic' names no topic.", keys=("topic",))
    for name in topics:
        if not _TOPIC.fullmatch(name) or name in (".", ".."):
            raise KafkaOptionsError(
                f"Option 'topic' names an invalid Kafka topic {name[:60]!r}: topic names have "
                f"1 to 249 characters among letters, digits, '.', '_' and '-'.",
                keys=("topic",),
            )
    if len(named) != len(topics):
        twice = sorted({t for t in named if named.count(t) > 1})
        warn(
            f"Option 'topic' names {', '.join(map(repr, twice))} more than once; read once.",
            "topic",
        )
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError, ValueError) as exc:
            raise KafkaOptionsError(
                f"Option 'topic-pattern' is not a valid regular expression: {exc}.",
                keys=("topic-pattern",),
            ) from None
    if not topics and pattern is None:
        raise KafkaOptionsError(
            "Either 'topic' or 'topic-pattern' must be set.", keys=("topic", "topic-pattern")
        )
    if role == "sink":
        sink_topic(topics, pattern)
    return topics, pattern


def sink_topic(topics: Sequence[str], pattern: str | None) -> None:
    """A sink writes to exactly one topic (see :data:`SINK_TOPIC_REASON`)."""
    if pattern is not None or len(topics) != 1:
        key = "topic-pattern" if pattern is not None else "topic"
        what = "a pattern" if pattern is not None else f"{len(topics)} topics"
        raise KafkaOptionsError(
            f"A sink table writes to exactly one topic, but option '{key}' names {what}: "
            f"{SINK_TOPIC_REASON}. Set 'topic' to one topic name.",
            keys=(key,),
        )


def prefixes_overlap(key_prefix: str, value_prefix: str) -> bool:
    """Whether ``key.fields-prefix`` and ``value.fields-prefix`` are both set and one is a
    prefix of the other (a column name could then belong to either side).

    Example:
        >>> prefixes_overlap("k_", "k_v_"), prefixes_overlap("k_", "v_"), prefixes_overlap("", "v_")
        (True, False, False)
    """
    return bool(key_prefix and value_prefix) and (
        key_prefix.startswith(value_prefix) or value_prefix.startswith(key_prefix)
    )


def key_prefix_rules(
    key_fields: Sequence[str],
    key_prefix: str,
    value_prefix: str,
    include: ValueFieldsInclude,
    *,
    upsert: bool = False,
) -> None:
    """``key.fields-prefix`` needs EXCEPT_KEY; the two prefixes must not overlap."""
    if key_prefix and include != ValueFieldsInclude.EXCEPT_KEY:
        raise KafkaOptionsError(
            "A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'. "
            "Set it to 'EXCEPT_KEY' instead to avoid field overlaps.",
            keys=("key.fields-prefix", "value.fields-include"),
        )
    if prefixes_overlap(key_prefix, value_prefix):
        raise KafkaOptionsError(
            f"Options 'key.fields-prefix' ('{key_prefix}') and 'value.fields-prefix' "
            f"('{value_prefix}') must not be prefixes of each other.",
            keys=("key.fields-prefix", "value.fields-prefix"),
        )
    if len(set(key_fields)) != len(key_fields):
        raise KafkaOptionsError("Option 'key.fields' names a column twice.", keys=("key.fields",))
    for name in key_fields:
        if key_prefix and not name.startswith(key_prefix) and upsert:
            raise KafkaOptionsError(
                f"The PRIMARY KEY columns of an 'upsert-kafka' table form its key, so they must "
                f"be prefixed with '{key_prefix}' when option 'key.fields-prefix' is set, but "
                f"'{name}' is not.",
                keys=("key.fields-prefix",),
            )
        if key_prefix and not name.startswith(key_prefix):
            raise KafkaOptionsError(
                f"All fields in 'key.fields' must be prefixed with '{key_prefix}' when option "
                f"'key.fields-prefix' is set but field '{name}' is not prefixed.",
                keys=("key.fields", "key.fields-prefix"),
            )


def _companions(mode_key: str, enum: Any) -> dict[Any, str]:
    prefix = mode_key.rsplit(".", 1)[0]
    return {
        enum.TIMESTAMP: f"{prefix}.timestamp-millis",
        enum.SPECIFIC_OFFSETS: f"{prefix}.specific-offsets",
    }


def unused_companions(opts: Mapping[str, str], mode: Any, mode_key: str, enum: Any) -> None:
    """Warn about the companion option of a mode that is not selected (Flink ignores it)."""
    for needing_mode, key in _companions(mode_key, enum).items():
        if mode != needing_mode and key in opts:
            warn(
                f"Option '{key}' has no effect: it is read only when '{mode_key}' is "
                f"'{needing_mode.value}', but '{mode_key}' is '{mode.value}'.",
                key,
                mode_key,
            )


def companion(opts: Mapping[str, str], mode: Any, mode_key: str, enum: Any, topics: int) -> None:
    """timestamp / specific-offsets modes need their companion option (and one topic)."""
    word = mode_key.split(".")[1]
    for needing_mode, key in _companions(mode_key, enum).items():
        if mode == needing_mode and key not in opts:
            raise KafkaOptionsError(
                f"'{key}' is required in '{needing_mode.value}' {word} mode but missing.",
                keys=(key, mode_key),
            )
    if mode == enum.SPECIFIC_OFFSETS and topics != 1:
        raise KafkaOptionsError(
            f"Currently Kafka source only supports specific offset for single topic ("
            f"'{mode_key}' = 'specific-offsets' needs a single 'topic').",
            keys=(mode_key, "topic"),
        )


def non_negative(value: int | None, key: str) -> None:
    """Timestamps are epoch milliseconds, never negative."""
    if value is not None and value < 0:
        raise KafkaOptionsError(f"Option '{key}' must be >= 0, got {value}.", keys=(key,))


def delivery_guarantee(parsed: Mapping[str, Any]) -> Any:
    """``sink.delivery-guarantee``, or the deprecated ``sink.semantic``, which wins when set (as
    in Flink)."""
    legacy = parsed["sink.semantic"]
    return parsed["sink.delivery-guarantee"] if legacy is None else legacy


def sink_rules(
    parsed: Mapping[str, Any], opts: Mapping[str, str], key_fields: Sequence[str]
) -> None:
    """Delivery guarantee, exactly-once and its transactions, partitioner, parallelism and
    buffering of a sink."""
    guarantee, legacy = delivery_guarantee(parsed), parsed["sink.semantic"]
    if legacy is not None:
        warn(
            "Option 'sink.semantic' is deprecated; use 'sink.delivery-guarantee'.", "sink.semantic"
        )
    if legacy is not None and "sink.delivery-guarantee" in opts:
        overridden = parsed["sink.delivery-guarantee"]
        if overridden != legacy:
            warn(
                f"Option 'sink.delivery-guarantee' ('{overridden.value}') has no effect: "
                f"'sink.semantic' ('{legacy.value}') is also set and wins, as in Flink.",
                "sink.delivery-guarantee",
                "sink.semantic",
            )
    prefix = parsed["sink.transactional-id-prefix"]
    exactly_once = guarantee == DeliveryGuarantee.EXACTLY_ONCE
    if exactly_once and not (prefix or "").strip():
        raise KafkaOptionsError(
            "sink.transactional-id-prefix must be specified when using "
            "'sink.delivery-guarantee' = 'exactly-once'.",
            keys=("sink.transactional-id-prefix", "sink.delivery-guarantee"),
        )
    if parsed["sink.transaction-naming-strategy"] == TransactionNamingStrategy.INCREMENTING:
        raise KafkaOptionsError(
            f"Option 'sink.transaction-naming-strategy' = 'INCREMENTING' is not supported: "
            f"{INCREMENTING_REASON}. Remove the option or set it to 'POOLING'.",
            keys=("sink.transaction-naming-strategy",),
        )
    keys = ("sink.transactional-id-prefix", "sink.transaction-naming-strategy")
    for key in (*keys, "sink.transaction-scope"):
        if key in opts and not exactly_once:
            warn(
                f"Option '{key}' has no effect: only an exactly-once sink opens transactions, "
                f"and the delivery guarantee is '{guarantee.value}'.",
                key,
            )
    partitioner = check_partitioner_option(parsed["sink.partitioner"])
    if partitioner == "round-robin" and key_fields and "key.fields" in opts:
        raise KafkaOptionsError(
            "Currently 'round-robin' partitioner only works when option 'key.fields' is not "
            "specified.",
            keys=("sink.partitioner", "key.fields"),
        )
    at_least_one(parsed["sink.parallelism"], "sink.parallelism")
    rows, interval = parsed["sink.buffer-flush.max-rows"], parsed["sink.buffer-flush.interval"]
    if (rows > 0) != (interval > 0):
        raise KafkaOptionsError(
            "'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must be set to be "
            "greater than zero together to enable sink buffer flushing.",
            keys=("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
        )


def at_least_one(value: int | None, key: str) -> None:
    """Parallelism options count tasks: at least one."""
    if value is not None and value < 1:
        raise KafkaOptionsError(f"Option '{key}' must be >= 1, got {value}.", keys=(key,))


def primary_key_rule(connector: str, primary_key: Sequence[str], value_key: str, fmt: str) -> None:
    """A ``kafka`` table with an insert-only value format cannot declare a PRIMARY KEY."""
    if connector == KAFKA and primary_key:
        raise KafkaOptionsError(
            f"A 'kafka' table cannot declare a PRIMARY KEY ({', '.join(primary_key)}): its "
            f"'{fmt}' format ('{value_key}') appends every record as a new row, so nothing keeps "
            f"one row per key. Use the 'upsert-kafka' connector for a table keyed by its primary "
            f"key, or drop the PRIMARY KEY.",
            keys=("connector", value_key),
        )


def header_filter(text: str | None) -> None:
    """``key:value`` terms joined by ``&``/``|``, each optionally negated with ``!``."""
    if text is None:
        return
    parse_header_filter(text)


def column_rules(
    cols: Sequence[Column],
    *,
    connector: str,
    key_fields: Sequence[str],
    primary_key: Sequence[str],
    value_prefix: str,
    include: ValueFieldsInclude,
) -> None:
    """Columns: unique names, key fields physical, value prefix carried, primary key known."""
    names = [c.name for c in cols]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise KafkaOptionsError(f"Column(s) declared twice: {', '.join(dupes)}.")
    physical = [c.name for c in cols if c.is_physical]
    missing = [f for f in key_fields if f not in physical]
    if missing and connector == KAFKA:
        raise KafkaOptionsError(
            f"Could not find the field(s) {', '.join(repr(m) for m in missing)} in the table "
            f"schema for usage in the key format. A key field must be a regular, physical "
            f"column. The following columns can be selected in the 'key.fields' option: "
            f"{', '.join(physical) or '(none)'}.",
            keys=("key.fields",),
        )
    if len(set(primary_key)) != len(primary_key):
        raise KafkaOptionsError("The PRIMARY KEY names a column twice.")
    unknown = [p for p in primary_key if p not in names]
    if unknown:
        raise KafkaOptionsError(f"PRIMARY KEY column(s) not declared: {', '.join(unknown)}.")
    if connector == UPSERT_KAFKA:
        not_physical = [p for p in primary_key if p not in physical]
        if not_physical:
            raise KafkaOptionsError(
                f"The PRIMARY KEY of an 'upsert-kafka' table forms the record key, so it must "
                f"name physical columns; not physical: {', '.join(not_physical)}."
            )
    if value_prefix:
        in_value = [n for n in physical if include == ValueFieldsInclude.ALL or n not in key_fields]
        bad = [n for n in in_value if not n.startswith(value_prefix)]
        if bad:
            raise KafkaOptionsError(
                f"All value columns must be prefixed with '{value_prefix}' when option "
                f"'value.fields-prefix' is set, but {', '.join(bad)} is not.",
                keys=("value.fields-prefix",),
            )


#: Column types the ``csv`` format nests (one level deep, elements and fields scalar) ...
CSV_NESTED = frozenset({"ARRAY", "ROW"})
#: ... and the ones it cannot hold at all.
CSV_UNSUPPORTED = frozenset({"MAP", "MULTISET"})


def csv_column_types(fmt: str, columns: Sequence[Column], option_key: str) -> None:
    """The ``csv`` format holds scalars, and ARRAY and ROW of scalars."""
    if fmt != "csv":
        return
    for column in columns:
        t = column.flink_type
        if t.name in CSV_UNSUPPORTED or (
            t.name in CSV_NESTED and any(c.name in CSV_NESTED | CSV_UNSUPPORTED for c in t.children)
        ):
            raise KafkaOptionsError(
                f"The 'csv' format ('{option_key}') cannot hold column '{column.name}' of type "
                f"{t}: it supports scalars, and ARRAY and ROW of scalars (elements separated by "
                f"'csv.array-element-delimiter'); use the 'json' format for nested data.",
                keys=(option_key,),
            )


def avro_columns(fmt: FormatSpec, columns: Sequence[Column], option_key: str) -> None:
    """The Avro formats derive their schema from the columns (unless given one): every column
    must have an Avro name and type, checked when the table is declared."""
    if fmt.name not in ("avro", "avro-confluent") or fmt.settings.get("schema"):
        return
    try:
        avro_schema(columns, legacy=fmt.settings["timestamp_mapping.legacy"], fmt=fmt.name)
    except KafkaOptionsError as exc:
        raise KafkaOptionsError(f"{exc} ('{option_key}')", keys=(option_key,)) from None


def protobuf_columns(
    fmt: FormatSpec, columns: Sequence[Column], option_key: str, prefix: str
) -> None:
    """A protobuf format's columns are fields of its message, of types that hold them."""
    if fmt.name in PROTOBUF_FORMATS:
        check_protobuf_columns(fmt.settings, columns, option_key, prefix, fmt.name)


def raw_single_field(fmt: str, columns: Sequence[str], option_key: str) -> None:
    """The ``raw`` format carries exactly one physical column."""
    if fmt == "raw" and len(columns) != 1:
        raise KafkaOptionsError(
            f"The 'raw' format only supports a single physical column, but '{option_key}' = "
            f"'raw' would carry {len(columns)}: {', '.join(columns) or '(none)'}.",
            keys=(option_key,),
        )


#: Options that act only when a table's columns are inferred.
INFERENCE_OPTIONS = (
    "scan.max.pre.fetch.records",
    "schema.inference.strategy",
    "json.infer-schema.primitive-as-string",
    "json.infer-schema.flatten-nested-columns.enable",
    "json.infer-schema.fixed-types",
)


def schema_inference(
    opts: Mapping[str, str], value_format: str, columns: tuple[Column, ...], prefetch: int
) -> None:
    """Inference options act on JSON tables that declare no physical column; elsewhere they
    are accepted with a warning, as options that do not apply."""
    if prefetch < 0:
        raise KafkaOptionsError(
            f"Option 'scan.max.pre.fetch.records' must be >= 0, got {prefetch}.",
            keys=("scan.max.pre.fetch.records",),
        )
    given = [k for k in opts if k.removeprefix("value.") in INFERENCE_OPTIONS]
    declared = any(c.is_physical for c in columns)
    if given and (declared or value_format != "json"):
        why = "declares its columns" if declared else f"has value format '{value_format}'"
        warn(
            f"Option(s) {', '.join(given)} infer the columns of a JSON table that declares no "
            f"physical column; this table {why}, so they have no effect.",
            *given,
        )
