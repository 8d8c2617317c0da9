"""The declarative table of Kafka connector options: every key declared once.

Validation, the typed spec and the options reference page are all derived from ``OPTIONS``.
Keys and enum values are Flink's, verbatim.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from ..errors import KafkaOptionsError

KAFKA = "kafka"
UPSERT_KAFKA = "upsert-kafka"
CONNECTORS = (KAFKA, UPSERT_KAFKA)


class StartupMode(StrEnum):
    """``scan.startup.mode``: where a table starts reading when no checkpoint exists."""

    EARLIEST_OFFSET = "earliest-offset"
    LATEST_OFFSET = "latest-offset"
    GROUP_OFFSETS = "group-offsets"
    TIMESTAMP = "timestamp"
    SPECIFIC_OFFSETS = "specific-offsets"


class BoundedMode(StrEnum):
    """``scan.bounded.mode``: where a run stops reading.

    Every materialization is bounded; ``unbounded`` (Flink's default) means "the end of the log
    at planning time".
    """

    UNBOUNDED = "unbounded"
    LATEST_OFFSET = "latest-offset"
    GROUP_OFFSETS = "group-offsets"
    TIMESTAMP = "timestamp"
    SPECIFIC_OFFSETS = "specific-offsets"


class DeliveryGuarantee(StrEnum):
    """``sink.delivery-guarantee``: none, at-least-once or exactly-once (Kafka transactions)."""

    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"


class TransactionNamingStrategy(StrEnum):
    """``sink.transaction-naming-strategy``: how an exactly-once sink names its transactions.

    ``POOLING`` reuses a small set of transactional ids (here: one stable id per asset);
    ``INCREMENTING`` (Flink's default) opens a new id per checkpoint and is refused here.
    """

    INCREMENTING = "INCREMENTING"
    POOLING = "POOLING"


class TransactionScope(StrEnum):
    """``sink.transaction-scope``: what one exactly-once transaction holds.

    ``run``: the whole run's output, produced by one producer in the driver (all or nothing).
    ``split``: one source partition's output, produced by the task that reads it, so writers
    run in parallel; the driver still decides for all of them at once, and a broker fault during
    the commits may leave some splits committed before the run writes the rest again.
    """

    RUN = "run"
    SPLIT = "split"


class ValueFieldsInclude(StrEnum):
    """``value.fields-include``: whether key fields are also written into the value."""

    ALL = "ALL"
    EXCEPT_KEY = "EXCEPT_KEY"


_INT_RANGES = {"Integer": (-(2**31), 2**31 - 1), "Long": (-(2**63), 2**63 - 1)}


def parse_bool(key: str, text: str) -> bool:
    """Strictly parse ``true``/``false`` (any case), as Flink's Boolean options do."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise KafkaOptionsError(
        f"Option '{key}' expects 'true' or 'false' but got {text!r}.", keys=(key,)
    )


def _parse_integral(key: str, text: str, kind: str) -> int:
    low, high = _INT_RANGES[kind]
    match = re.fullmatch(r"\s*([+-]?[0-9]{1,20})\s*", text)
    value = int(match.group(1)) if match else None
    if value is None or not low <= value <= high:
        raise KafkaOptionsError(
            f"Option '{key}' expects an integer ({kind}) but got {text[:40]!r}.", keys=(key,)
        )
    return value


def parse_int(key: str, text: str) -> int:
    """Strictly parse a base-10 integer in Java's ``int`` range (Flink's Integer options)."""
    return _parse_integral(key, text, "Integer")


def parse_long(key: str, text: str) -> int:
    """Strictly parse a base-10 integer in Java's ``long`` range (Flink's Long options)."""
    return _parse_integral(key, text, "Long")


_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 10**9, "min": 60 * 10**9,
       "h": 3600 * 10**9, "d": 86400 * 10**9}  # fmt: skip
_DURATION_UNITS = {
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), _NS["ns"]),
    **dict.fromkeys(("us", "µs", "micro", "micros", "microsecond", "microseconds"), _NS["us"]),
    **dict.fromkeys(("", "ms", "milli", "millis", "millisecond", "milliseconds"), _NS["ms"]),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), _NS["s"]),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), _NS["min"]),
    **dict.fromkeys(("h", "hour", "hours"), _NS["h"]),
    **dict.fromkeys(("d", "day", "days"), _NS["d"]),
}


def parse_duration_ms(key: str, text: str) -> int:
    """Parse a Flink duration (``10 s``, ``5 min``, ``100ms``, ``-1``) to milliseconds.

    A bare number is milliseconds, as in Flink. Sub-millisecond results round down.

    Example:
        >>> parse_duration_ms("scan.topic-partition-discovery.interval", "5 min")
        300000
    """
    m = re.fullmatch(r"\s*([+-]?[0-9]{1,19})\s*([A-Za-zµ]*)\s*", text)
    unit = _DURATION_UNITS.get(m.group(2).lower()) if m else None
    if m is None or unit is None:
        raise KafkaOptionsError(
            f"Option '{key}' expects a duration such as '10 s', '5 min' or '100 ms' but got "
            f"{text[:40]!r}.",
            keys=(key,),
        )
    millis = int(m.group(1)) * unit // _NS["ms"]
    if abs(millis) >= 2**63:
        raise KafkaOptionsError(f"Option '{key}' is out of range: {text[:40]!r}.", keys=(key,))
    return millis


def parse_choice(*choices: str) -> Callable[[str, str], str]:
    """A parser accepting one of ``choices`` (case-insensitive), returning its canonical form."""

    def parse(key: str, text: str) -> str:
        for choice in choices:
            if choice.lower() == text.strip().lower():
                return choice
        allowed = ", ".join(f"'{c}'" for c in choices)
        raise KafkaOptionsError(
            f"Invalid value for option '{key}': {text[:60]!r}. Allowed values are {allowed}.",
            keys=(key,),
        )

    return parse


def parse_enum(enum: type[Enum]) -> Callable[[str, str], Any]:
    """A parser accepting exactly the enum's values (Flink's spelling, case-insensitive)."""
    choose = parse_choice(*(member.value for member in enum))

    def parse(key: str, text: str) -> Any:
        return enum(choose(key, text))

    return parse


def parse_semantic(key: str, text: str) -> DeliveryGuarantee:
    """The legacy ``sink.semantic``: a delivery guarantee in any case, '-' or '_' alike.

    Flink reads it as ``DeliveryGuarantee.valueOf(text.upper().replace('-', '_'))``.

    Example:
        >>> parse_semantic("sink.semantic", "EXACTLY_ONCE").value
        'exactly-once'
    """
    wanted = text.strip().upper().replace("-", "_")
    for member in DeliveryGuarantee:
        if member.name == wanted:
            return member
    allowed = ", ".join(f"'{m.value}'" for m in DeliveryGuarantee)
    raise KafkaOptionsError(
        f"Invalid value for option '{key}': {text[:60]!r}. Allowed values are {allowed} (or "
        f"their Java names, e.g. 'EXACTLY_ONCE').",
        keys=(key,),
    )


def parse_string(key: str, text: str) -> str:
    """Accept any string."""
    return text


@dataclass(frozen=True)
class ConfigOption:
    """One connector option: its Flink key, type, default and what it means.

    ``prefix=True`` declares a family of keys (``properties.*``). ``connectors`` lists the
    connectors that accept the option; ``roles`` the uses of a table it acts in (an option of
    the other use is accepted with a warning, as Flink ignores it); ``section`` groups it on the
    reference page.

    Example:
        >>> ConfigOption("topic", "String", None, "Topic to read.").key
        'topic'
    """

    key: str
    type: str
    default: str | None
    description: str
    parse: Callable[[str, str], Any] = parse_string
    prefix: bool = False
    roles: tuple[str, ...] = ("source", "sink")
    connectors: tuple[str, ...] = CONNECTORS
    section: str = "General"


def _opt(key: str, type_: str, default: str | None, description: str, **kw: Any) -> ConfigOption:
    return ConfigOption(key, type_, default, description, **kw)


_SRC = {"roles": ("source",), "section": "Source"}
_KSRC = {**_SRC, "connectors": (KAFKA,)}
_SNK = {"roles": ("sink",), "section": "Sink"}

OPTIONS: tuple[ConfigOption, ...] = (
    _opt("connector", "String", None, "Connector to use: 'kafka' or 'upsert-kafka'. Required."),
    _opt("topic", "String", None,
         "Topic name(s) to read from, separated by ';'; the single topic a sink writes to."),
    _opt("topic-pattern", "String", None,
         "Regular expression of topic names to read from; exclusive with 'topic'.", **_SRC),
    _opt("properties.bootstrap.servers", "String", None,
         "Comma-separated host:port list of Kafka brokers; may come from the KafkaResource."),
    _opt("properties.group.id", "String", None,
         "Consumer group of the source; offsets are committed there after every run. Defaults "
         "to 'KafkaSource-<table name>'.", **_SRC),
    _opt("properties.", "String", None,
         "Any Kafka client setting, prefix removed and passed to librdkafka (Java client names "
         "translated; see 'Kafka client properties').", prefix=True),
    _opt("format", "String", None,
         "Format of the record value: json, csv or raw. 'format' or 'value.format' is required; "
         "'format' wins when both are set, as in Flink.", connectors=(KAFKA,)),
    _opt("value.format", "String", None,
         "Format of the record value (required by 'upsert-kafka', which has no 'format')."),
    _opt("key.format", "String", None,
         "Format of the record key: json, csv or raw. Required by 'upsert-kafka'."),
    _opt("key.fields", "List<String>", "",
         "Physical columns, separated by ';', that form the key (names include "
         "'key.fields-prefix'). Not for 'upsert-kafka', whose key is the PRIMARY KEY.",
         connectors=(KAFKA,)),
    _opt("key.fields-prefix", "String", "",
         "Prefix of key columns' names, removed when the key is encoded or decoded; requires "
         "'value.fields-include' = 'EXCEPT_KEY'."),
    _opt("value.fields-prefix", "String", "",
         "Prefix of value columns' names, removed when the value is encoded or decoded; every "
         "value column must carry it."),
    _opt("value.fields-include", "Enum", "ALL",
         "Whether the value holds every physical column (ALL) or all but the key's (EXCEPT_KEY).",
         parse=parse_enum(ValueFieldsInclude)),
    _opt("scan.startup.mode", "Enum", "group-offsets",
         "Where to start when no checkpoint exists: earliest-offset, latest-offset, "
         "group-offsets, timestamp or specific-offsets.", parse=parse_enum(StartupMode), **_KSRC),
    _opt("scan.startup.specific-offsets", "String", None,
         "Start offsets for 'specific-offsets' mode: 'partition:0,offset:42;partition:1,...'.",
         **_KSRC),
    _opt("scan.startup.timestamp-millis", "Long", None,
         "Start timestamp (epoch ms) for 'timestamp' mode.", parse=parse_long, **_KSRC),
    _opt("scan.bounded.mode", "Enum", "unbounded",
         "Where a run stops: unbounded (the end of the log at planning time), latest-offset, "
         "group-offsets, timestamp or specific-offsets.", parse=parse_enum(BoundedMode), **_SRC),
    _opt("scan.bounded.specific-offsets", "String", None,
         "Stop offsets for bounded 'specific-offsets' mode.", **_SRC),
    _opt("scan.bounded.timestamp-millis", "Long", None,
         "Stop timestamp (epoch ms) for bounded 'timestamp' mode.", parse=parse_long, **_SRC),
    _opt("scan.topic-partition-discovery.interval", "Duration", "5 min",
         "How often the discovery sensor looks for new topics/partitions; <= 0 disables.",
         parse=parse_duration_ms, **_SRC),
    _opt("scan.parallelism", "Integer", None,
         "Read with at least this many Spark tasks (large offset ranges are cut to get them); "
         "with the streaming asset's 'min_splits' the larger of the two applies.",
         parse=parse_int, **_SRC),
    _opt("scan.header-filter", "String", None,
         "Keep records by header, e.g. 'depart:toy|depart:book&!env:test' (left to right, no "
         "parentheses).", **_KSRC),
    _opt("scan.check.duplicated.group.id", "Boolean", "false",
         "Refuse to run when the consumer group has active members.", parse=parse_bool, **_KSRC),
    _opt("sink.partitioner", "String", "default",
         "default (murmur2 of the key, as Java), fixed, round-robin, or a Python class path.",
         roles=("sink",), section="Sink", connectors=(KAFKA,)),
    _opt("sink.delivery-guarantee", "Enum", "at-least-once",
         "none, at-least-once or exactly-once (Kafka transactions).",
         parse=parse_enum(DeliveryGuarantee), **_SNK),
    _opt("sink.semantic", "String", None,
         "Deprecated form of 'sink.delivery-guarantee' (also EXACTLY_ONCE-style spellings); when "
         "set it wins over 'sink.delivery-guarantee', as in Flink.", parse=parse_semantic,
         roles=("sink",), section="Sink", connectors=(KAFKA,)),
    _opt("sink.transactional-id-prefix", "String", None,
         "Prefix of the stable transactional ids; required by exactly-once.", **_SNK),
    _opt("sink.transaction-naming-strategy", "Enum", "POOLING",
         "How exactly-once names its transactions: POOLING reuses one stable id per asset, so "
         "ids do not grow with the runs. INCREMENTING is refused (see Departures).",
         parse=parse_enum(TransactionNamingStrategy), **_SNK),
    _opt("sink.transaction-scope", "Enum", "run",
         "Exactly-once: 'run' commits the whole run in one transaction from the driver; 'split' "
         "gives each source partition's writing task its own transaction (parallel writers, "
         "decided together by the driver; a broker fault between commits can leave part "
         "committed until the run writes the rest).",
         parse=parse_enum(TransactionScope), **_SNK),
    _opt("sink.parallelism", "Integer", None, "Number of Spark tasks that write.",
         parse=parse_int, **_SNK),
    _opt("sink.buffer-flush.max-rows", "Integer", "0",
         "upsert-kafka: rows buffered per key before a flush; set with "
         "'sink.buffer-flush.interval', both > 0, to keep only the last row per key.",
         parse=parse_int, connectors=(UPSERT_KAFKA,), **_SNK),
    _opt("sink.buffer-flush.interval", "Duration", "0 s",
         "upsert-kafka: flush interval of the buffer; see 'sink.buffer-flush.max-rows'.",
         parse=parse_duration_ms, connectors=(UPSERT_KAFKA,), **_SNK),
    _opt("scan.max.pre.fetch.records", "Integer", "50",
         "Schema inference (a JSON table that declares no physical columns): how many of the "
         "newest records of each partition the first run samples under the 'static' strategy; "
         "0 infers nothing (only 'json.infer-schema.fixed-types').",
         parse=parse_int, roles=("source",), section="Schema inference"),
    _opt("schema.inference.strategy", "Enum", "continuous",
         "Schema inference: 'continuous' infers from every record each run reads and widens the "
         "schema kept from earlier runs; 'static' infers once (first run) and keeps it.",
         parse=parse_choice("continuous", "static"), roles=("source",),
         section="Schema inference"),
    _opt("ingestion.ignore-errors", "Boolean", "false",
         "Skip and collect records that fail to decode instead of failing the run.",
         parse=parse_bool, roles=("source",), section="Dirty data"),
    _opt("ingestion.error-tolerance.max-count", "Integer", "-1",
         "With 'ingestion.ignore-errors', fail the run when more dirty records than this are "
         "skipped; -1 means no limit.", parse=parse_int, roles=("source",), section="Dirty data"),
    _opt("ingestion.dead-letter.topic", "String", None,
         "Also write every skipped dirty record to this topic: raw key and value, with the source "
         "topic, partition, offset and the error in headers.", roles=("source",),
         section="Dirty data"),
)  # fmt: skip

# Keys (or key prefixes ending in '.') the seeds document that this project does not support,
# with the reason shown to the user instead of a plain "unknown option".
_PIPELINE = "; a data-ingestion pipeline YAML takes it (see 'Data-ingestion YAML')"
UNSUPPORTED_OPTIONS: dict[str, str] = {
    "scan.value.initial-schemas.ddls": "initial schemas of a multi-table data-ingestion source; "
    "a table declares its columns (or some, with 'json.infer-schema.fixed-types')" + _PIPELINE,
    "metadata.list": "declare metadata columns ('METADATA FROM ...') instead" + _PIPELINE,
    "partition.strategy": "use 'sink.partitioner'" + _PIPELINE,
    "sink.tableId-to-topic.mapping": "a table writes one topic: use one table per topic"
    + _PIPELINE,
    "type": "use 'connector' (a data-ingestion pipeline's source and sink take 'type: kafka')",
}


_BY_KEY = {option.key: option for option in OPTIONS}


def find_option(key: str) -> ConfigOption | None:
    """The declared option for a key (exact or prefix family), or None."""
    if key in _BY_KEY:
        return _BY_KEY[key]
    if key.startswith("properties.") and len(key) > len("properties."):
        return _BY_KEY["properties."]
    return None


def unsupported_reason(key: str) -> str | None:
    """Why a key the seeds document is not supported here, or None if it is not one of them."""
    if key in UNSUPPORTED_OPTIONS:
        return UNSUPPORTED_OPTIONS[key]
    for prefix, reason in UNSUPPORTED_OPTIONS.items():
        if prefix.endswith(".") and key.startswith(prefix):
            return reason
    return None


def closest(key: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``key`` when one is close enough to be a typo, else None."""
    by_lower = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def did_you_mean(key: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    close = closest(key, candidates)
    return f" (did you mean '{close}'?)" if close else ""


def unknown_key_error(keys: list[str]) -> KafkaOptionsError:
    """An error naming unknown keys, each with a 'did you mean' hint where one is close."""
    known = [o.key for o in OPTIONS if not o.prefix]
    parts = []
    for key in keys:
        reason = unsupported_reason(key)
        if reason is not None:
            parts.append(f"'{key}' (not supported: {reason})")
        else:
            parts.append(f"'{key}'" + did_you_mean(key, known))
    return KafkaOptionsError(
        f"Unsupported option(s): {', '.join(parts)}. See docs/options.md for the supported "
        f"options; Kafka client settings go under 'properties.*'.",
        keys=tuple(keys),
    )


def parse_value(option: ConfigOption, options: Mapping[str, str]) -> Any:
    """The parsed value of ``option`` in ``options``, or of its default when absent."""
    text = options.get(option.key, option.default)
    return None if text is None else option.parse(option.key, text)
