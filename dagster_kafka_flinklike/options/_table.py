"""The declarative table of Kafka connector options: every key declared once.

Validation, the typed spec and the options reference page are all derived from ``OPTIONS``.
Keys and enum values are Flink's, verbatim.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from ..errors import KafkaOptionsError


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
    """``sink.delivery-guarantee``."""

    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"


class ValueFieldsInclude(StrEnum):
    """``value.fields-include``: whether key fields are also written into the value."""

    ALL = "ALL"
    EXCEPT_KEY = "EXCEPT_KEY"


def parse_bool(key: str, text: str) -> bool:
    """Strictly parse ``true``/``false`` (any case)."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise KafkaOptionsError(
        f"Option '{key}' expects 'true' or 'false' but got {text!r}.", keys=(key,)
    )


def parse_int(key: str, text: str) -> int:
    """Strictly parse a base-10 integer."""
    if re.fullmatch(r"\s*[+-]?\d+\s*", text):
        return int(text)
    raise KafkaOptionsError(f"Option '{key}' expects an integer but got {text!r}.", keys=(key,))


_DURATION_UNITS = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3,
    "microseconds": 1e-3,
    "": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip


def parse_duration_ms(key: str, text: str) -> int:
    """Parse a Flink duration (``10 s``, ``5 min``, ``100ms``, ``-1``) to milliseconds."""
    m = re.fullmatch(r"\s*([+-]?\d+)\s*([A-Za-zµ]*)\s*", text)
    if not m or m.group(2).lower() not in _DURATION_UNITS:
        raise KafkaOptionsError(
            f"Option '{key}' expects a duration such as '10 s', '5 min' or '100 ms' but got "
            f"{text!r}.",
            keys=(key,),
        )
    return int(int(m.group(1)) * _DURATION_UNITS[m.group(2).lower()])


def parse_enum(enum: type[Enum]) -> Callable[[str, str], Any]:
    """A parser accepting exactly the enum's values (Flink's spelling, case-insensitive)."""

    def parse(key: str, text: str) -> Any:
        for member in enum:
            if member.value.lower() == text.strip().lower():
                return member
        allowed = ", ".join(f"'{m.value}'" for m in enum)
        raise KafkaOptionsError(
            f"Invalid value for option '{key}': {text!r}. Allowed values are {allowed}.",
            keys=(key,),
        )

    return parse


def parse_string(key: str, text: str) -> str:
    """Accept any string."""
    return text


@dataclass(frozen=True)
class ConfigOption:
    """One connector option: its Flink key, type, default and what it means.

    ``prefix=True`` declares a family of keys (``properties.*``, ``json.*``).
    """

    key: str
    type: str
    default: str | None
    description: str
    parse: Callable[[str, str], Any] = parse_string
    prefix: bool = False
    deprecated_keys: tuple[str, ...] = ()
    roles: tuple[str, ...] = ("source", "sink")


def _opt(key: str, type_: str, default: str | None, description: str, **kw: Any) -> ConfigOption:
    return ConfigOption(key, type_, default, description, **kw)


OPTIONS: tuple[ConfigOption, ...] = (
    _opt("connector", "String", None, "Connector to use: 'kafka' or 'upsert-kafka'."),
    _opt("topic", "String", None,
         "Topic name(s) to read from, separated by ';'; the single topic a sink writes to."),
    _opt("topic-pattern", "String", None,
         "Regular expression of topic names to read from; exclusive with 'topic'.",
         roles=("source",)),
    _opt("properties.bootstrap.servers", "String", None,
         "Comma-separated host:port list of Kafka brokers; may come from the KafkaResource."),
    _opt("properties.group.id", "String", None,
         "Consumer group of the source; offsets are committed there after every run."),
    _opt("properties.", "String", None,
         "Any Kafka client setting, prefix removed and passed to librdkafka (Java names "
         "translated).", prefix=True),
    _opt("format", "String", None, "Format of the record value (json, csv, raw, ...)."),
    _opt("value.format", "String", None, "Format of the record value; wins over 'format'."),
    _opt("key.format", "String", None, "Format of the record key."),
    _opt("key.fields", "String", "", "Physical columns, separated by ';', that form the key."),
    _opt("key.fields-prefix", "String", "",
         "Prefix of key columns' names, removed when the key is encoded or decoded."),
    _opt("value.fields-prefix", "String", "",
         "Prefix of value columns' names, removed when the value is encoded or decoded."),
    _opt("value.fields-include", "Enum", "ALL",
         "Whether the value holds every physical column (ALL) or all but the key's (EXCEPT_KEY).",
         parse=parse_enum(ValueFieldsInclude)),
    _opt("scan.startup.mode", "Enum", "group-offsets",
         "Where to start when no checkpoint exists.", parse=parse_enum(StartupMode),
         roles=("source",)),
    _opt("scan.startup.specific-offsets", "String", None,
         "Start offsets for 'specific-offsets' mode: 'partition:0,offset:42;partition:1,...'.",
         roles=("source",)),
    _opt("scan.startup.timestamp-millis", "Long", None,
         "Start timestamp (epoch ms) for 'timestamp' mode.", parse=parse_int, roles=("source",)),
    _opt("scan.bounded.mode", "Enum", "unbounded",
         "Where a run stops; 'unbounded' means the end of the log at planning time.",
         parse=parse_enum(BoundedMode), roles=("source",)),
    _opt("scan.bounded.specific-offsets", "String", None,
         "Stop offsets for bounded 'specific-offsets' mode.", roles=("source",)),
    _opt("scan.bounded.timestamp-millis", "Long", None,
         "Stop timestamp (epoch ms) for bounded 'timestamp' mode.", parse=parse_int,
         roles=("source",)),
    _opt("scan.topic-partition-discovery.interval", "Duration", "5 min",
         "How often the discovery sensor looks for new topics/partitions; <= 0 disables.",
         parse=parse_duration_ms, roles=("source",)),
    _opt("scan.header-filter", "String", None,
         "Keep records by header, e.g. 'depart:toy|depart:book&!env:test' (left to right).",
         roles=("source",)),
    _opt("scan.check.duplicated.group.id", "Boolean", "false",
         "Refuse to run when the consumer group has active members.", parse=parse_bool,
         roles=("source",)),
    _opt("sink.partitioner", "String", "default",
         "default (murmur2 of the key, as Java), fixed, round-robin, or a Python class path.",
         roles=("sink",)),
    _opt("sink.delivery-guarantee", "Enum", "at-least-once",
         "none, at-least-once or exactly-once (Kafka transactions).",
         parse=parse_enum(DeliveryGuarantee), deprecated_keys=("sink.semantic",),
         roles=("sink",)),
    _opt("sink.transactional-id-prefix", "String", None,
         "Prefix of the stable transactional ids used by exactly-once.", roles=("sink",)),
    _opt("sink.parallelism", "Integer", None, "Number of Spark tasks that write.",
         parse=parse_int, roles=("sink",)),
    _opt("ingestion.ignore-errors", "Boolean", "false",
         "Skip and collect records that fail to decode instead of failing the run.",
         parse=parse_bool, roles=("source",)),
    _opt("ingestion.error-tolerance.max-count", "Integer", "-1",
         "Fail the run when more dirty records than this are skipped; -1 means no limit.",
         parse=parse_int, roles=("source",)),
)  # fmt: skip

_FORMAT_PREFIXES = ("key.", "value.", "")
FORMATS = ("json", "csv", "raw", "avro", "avro-confluent", "debezium-json", "canal-json",
           "maxwell-json")  # fmt: skip
SUPPORTED_FORMATS = ("json", "csv", "raw")

_BY_KEY: dict[str, ConfigOption] = {}
for _o in OPTIONS:
    _BY_KEY[_o.key] = _o
    for _d in _o.deprecated_keys:
        _BY_KEY[_d] = _o


def find_option(key: str) -> ConfigOption | None:
    """The declared option for a key (exact, deprecated or prefix family), or None."""
    if key in _BY_KEY:
        return _BY_KEY[key]
    if key.startswith("properties.") and len(key) > len("properties."):
        return _BY_KEY["properties."]
    return None


def is_format_option(key: str) -> bool:
    """True for per-format options such as ``json.ignore-parse-errors``, ``key.csv.x``."""
    for prefix in _FORMAT_PREFIXES:
        rest = key[len(prefix) :] if key.startswith(prefix) else None
        if rest is None:
            continue
        head, _, tail = rest.partition(".")
        if head in FORMATS and tail:
            return True
    return False


def unknown_key_error(keys: list[str]) -> KafkaOptionsError:
    """An error naming unknown keys, each with a 'did you mean' hint where one is close."""
    known = [o.key for o in OPTIONS if not o.prefix]
    parts = []
    for key in keys:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        parts.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
    return KafkaOptionsError(
        f"Unsupported option(s): {', '.join(parts)}. See docs/options.md for the supported "
        f"options; Kafka client settings go under 'properties.*'.",
        keys=tuple(keys),
    )


def parse_value(option: ConfigOption, key: str, options: Mapping[str, str]) -> Any:
    """The parsed value of ``key`` in ``options``, or of the option's default when absent."""
    text = options.get(key)
    if text is None:
        for old in option.deprecated_keys:
            if old in options:
                text = options[old]
                key = old
                break
    if text is None:
        text = option.default
    if text is None:
        return None
    return option.parse(key, text)
