"""Cross-option rules of a Kafka table, one function per rule family (as Flink's validators).

Every function raises :class:`KafkaOptionsError` naming the keys at fault and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import KafkaOptionsError
from ._header_filter import parse_header_filter
from ._partitioner import check_partitioner_option
from ._table import (
    KAFKA,
    OPTIONS,
    UPSERT_KAFKA,
    DeliveryGuarantee,
    ValueFieldsInclude,
    parse_value,
)
from ._types import Column

_GUARANTEE = next(o for o in OPTIONS if o.key == "sink.delivery-guarantee")
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_UPSERT_HINTS = {
    "key.fields": "its key columns are the PRIMARY KEY columns",
    "scan.startup.mode": "it always reads from the earliest offset",
    "scan.startup.specific-offsets": "it always reads from the earliest offset",
    "scan.startup.timestamp-millis": "it always reads from the earliest offset",
    "sink.partitioner": "records are partitioned by their key",
}


def check_connector_keys(opts: Mapping[str, str], connector: str) -> None:
    """Options declared for the other connector only are an error (Flink: unsupported option)."""
    for option in OPTIONS:
        keys = [k for k in (option.key, *option.deprecated_keys) if k in opts]
        if keys and connector not in option.connectors:
            hint = _UPSERT_HINTS.get(option.key, "it is an option of the other connector")
            raise KafkaOptionsError(
                f"Option '{keys[0]}' is not supported by the '{connector}' connector: {hint}.",
                keys=(keys[0], "connector"),
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
    topics = tuple(t.strip() for t in (topic or "").split(";") if t.strip())
    if topic is not None and not topics:
        raise KafkaOptionsError("Option 'topic' names no topic.", keys=("topic",))
    for name in topics:
        if not _TOPIC.fullmatch(name) or name in (".", ".."):
            raise KafkaOptionsError(
                f"Option 'topic' names an invalid Kafka topic {name[:60]!r}: topic names have "
                f"1 to 249 characters among letters, digits, '.', '_' and '-'.",
                keys=("topic",),
            )
    if len(set(topics)) != len(topics):
        raise KafkaOptionsError("Option 'topic' names a topic twice.", keys=("topic",))
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
    if role == "sink" and (pattern is not None or len(topics) != 1):
        key = "topic-pattern" if pattern is not None else "topic"
        raise KafkaOptionsError(
            "A sink table writes to exactly one topic: set 'topic' to a single topic name (a "
            "';' list or 'topic-pattern' are for sources only).",
            keys=(key,),
        )
    return topics, pattern


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
    if (
        key_prefix
        and value_prefix
        and (key_prefix.startswith(value_prefix) or value_prefix.startswith(key_prefix))
    ):
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


def companion(opts: Mapping[str, str], mode: Any, mode_key: str, enum: Any, topics: int) -> None:
    """timestamp / specific-offsets modes need their companion option, and only they allow it."""
    prefix, word = mode_key.rsplit(".", 1)[0], mode_key.split(".")[1]
    companions = {
        enum.TIMESTAMP: f"{prefix}.timestamp-millis",
        enum.SPECIFIC_OFFSETS: f"{prefix}.specific-offsets",
    }
    for needing_mode, key in companions.items():
        if mode == needing_mode and key not in opts:
            raise KafkaOptionsError(
                f"'{key}' is required in '{needing_mode.value}' {word} mode but missing.",
                keys=(key, mode_key),
            )
        if mode != needing_mode and key in opts:
            raise KafkaOptionsError(
                f"'{key}' is only valid when '{mode_key}' is '{needing_mode.value}', but "
                f"'{mode_key}' is '{mode.value}'.",
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


def sink_rules(
    parsed: Mapping[str, Any], opts: Mapping[str, str], key_fields: Sequence[str]
) -> Any:
    """Delivery guarantee (and legacy ``sink.semantic``), partitioner, parallelism, buffering."""
    guarantee = parsed["sink.delivery-guarantee"]
    if "sink.delivery-guarantee" in opts and "sink.semantic" in opts:
        legacy = parse_value(_GUARANTEE, _GUARANTEE.key, {"sink.semantic": opts["sink.semantic"]})
        if legacy != guarantee:
            raise KafkaOptionsError(
                "Options 'sink.delivery-guarantee' and 'sink.semantic' (its deprecated name) "
                "disagree; keep 'sink.delivery-guarantee'.",
                keys=("sink.delivery-guarantee", "sink.semantic"),
            )
    prefix = parsed["sink.transactional-id-prefix"]
    if guarantee == DeliveryGuarantee.EXACTLY_ONCE and not (prefix or "").strip():
        raise KafkaOptionsError(
            "sink.transactional-id-prefix must be specified when using "
            "'sink.delivery-guarantee' = 'exactly-once'.",
            keys=("sink.transactional-id-prefix", "sink.delivery-guarantee"),
        )
    partitioner = check_partitioner_option(parsed["sink.partitioner"])
    if partitioner == "round-robin" and key_fields and "key.fields" in opts:
        raise KafkaOptionsError(
            "Currently 'round-robin' partitioner only works when option 'key.fields' is not "
            "specified.",
            keys=("sink.partitioner", "key.fields"),
        )
    if parsed["sink.parallelism"] is not None and parsed["sink.parallelism"] < 1:
        raise KafkaOptionsError(
            f"Option 'sink.parallelism' must be >= 1, got {parsed['sink.parallelism']}.",
            keys=("sink.parallelism",),
        )
    rows, interval = parsed["sink.buffer-flush.max-rows"], parsed["sink.buffer-flush.interval"]
    if (rows > 0) != (interval > 0) or rows < 0 or interval < 0:
        raise KafkaOptionsError(
            "'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must be set to be "
            "greater than zero together to enable sink buffer flushing.",
            keys=("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
        )
    return guarantee


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


def raw_single_field(fmt: str, columns: Sequence[str], option_key: str) -> None:
    """The ``raw`` format carries exactly one physical column."""
    if fmt == "raw" and len(columns) != 1:
        raise KafkaOptionsError(
            f"The 'raw' format only supports a single physical column, but '{option_key}' = "
            f"'raw' would carry {len(columns)}: {', '.join(columns) or '(none)'}.",
            keys=(option_key,),
        )
