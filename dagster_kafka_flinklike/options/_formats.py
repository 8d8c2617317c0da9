"""Key and value formats and their own options (``json.*``, ``key.json.*``, ``value.csv.*``).

Each supported format declares its options once, like the connector options; every
format-shaped key of a table must belong to a declared format, be a known option of it and
parse, or the table is rejected naming the key.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaOptionsError
from ._lists import split_top_level
from ._table import ConfigOption, closest, parse_bool, parse_choice, parse_string
from ._types import FlinkType, parse_flink_type
from .protobuf_descriptors import descriptor_file, load_message

FORMATS = ("json", "csv", "raw", "avro", "avro-confluent", "debezium-json",
           "debezium-avro-confluent", "canal-json", "maxwell-json", "protobuf",
           "protobuf-confluent", "ogg-json")  # fmt: skip
SUPPORTED_FORMATS = ("json", "csv", "raw", "avro", "avro-confluent", "protobuf",
                     "protobuf-confluent", "debezium-json", "debezium-avro-confluent",
                     "canal-json", "maxwell-json", "ogg-json")  # fmt: skip
#: Formats that keep schemas in a Confluent Schema Registry (``<format>.url``, ...).
REGISTRY_FORMATS = ("avro-confluent", "protobuf-confluent", "debezium-avro-confluent")
#: Formats whose records are protobuf messages (``<format>.message-class-name``, ...).
PROTOBUF_FORMATS = ("protobuf", "protobuf-confluent")
#: Formats whose records are changelogs: each record becomes rows with a Flink row kind
#: (``+I``, ``-U``, ``+U``, ``-D``). Value format only, as in Flink.
CHANGELOG_FORMATS = ("debezium-json", "debezium-avro-confluent", "canal-json", "maxwell-json",
                     "ogg-json")  # fmt: skip


@dataclass(frozen=True)
class FormatSpec:
    """A key or value format and its own options.

    ``options`` holds the options as written, prefix removed (``ignore-parse-errors``);
    ``settings`` holds every option of the format parsed, defaults applied (booleans as bool,
    CSV characters unescaped).

    Example:
        >>> FormatSpec("json", {"ignore-parse-errors": "true"}).name
        'json'
    """

    name: str
    options: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ignore_parse_errors(self) -> bool:
        """True when the format skips records it cannot decode (``ignore-parse-errors``)."""
        return bool(self.settings.get("ignore-parse-errors", False))


_JAVA_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|([tnrbf0\\'\"]))")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "0": "\0",
                   "\\": "\\", "'": "'", '"': '"'}  # fmt: skip


def _unescape_java(key: str, text: str) -> str:
    """Java-style escapes (``\\t``, ``\\u0001``) as Flink's CSV format applies to delimiters."""
    out, pos = [], 0
    while (slash := text.find("\\", pos)) >= 0:
        m = _JAVA_ESCAPE.match(text, slash)
        if m is None:
            raise KafkaOptionsError(f"Option '{key}' has an invalid escape sequence.", keys=(key,))
        out.append(text[pos:slash])
        out.append(chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE_ESCAPES[m.group(2)])
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _char(unescape: bool) -> Any:
    def parse(key: str, text: str) -> str:
        value = _unescape_java(key, text) if unescape else text
        if len(value) != 1:
            raise KafkaOptionsError(
                f"Option '{key}' must be a single character (e.g. ',' or '\\t'), but has "
                f"{len(value)}.",
                keys=(key,),
            )
        return value

    return parse


#: The charsets ``raw.charset`` may name: Python codec name → the name Spark's ``decode`` and
#: ``encode`` accept.
SPARK_CHARSETS = {
    "utf-8": "UTF-8",
    "ascii": "US-ASCII",
    "iso8859-1": "ISO-8859-1",
    "utf-16": "UTF-16",
    "utf-16-be": "UTF-16BE",
    "utf-16-le": "UTF-16LE",
    "utf-32": "UTF-32",
}


def spark_charset(name: str, key: str = "raw.charset") -> str:
    """The Spark name of charset ``name`` (any spelling Python knows, e.g. ``latin-1``).

    Example:
        >>> spark_charset("latin-1")
        'ISO-8859-1'

    Raises:
        KafkaOptionsError: naming ``key``, when Spark cannot decode and encode the charset.
    """
    try:
        canonical = codecs.lookup(name.strip()).name
    except (LookupError, ValueError):  # (ValueError: a NUL or a lone surrogate in the name)
        canonical = ""
    if canonical not in SPARK_CHARSETS:
        raise KafkaOptionsError(
            f"Option '{key}' = {name[:40]!r} is not supported: Spark reads and writes "
            f"{', '.join(SPARK_CHARSETS.values())}.",
            keys=(key,),
        )
    return SPARK_CHARSETS[canonical]


def _charset(key: str, text: str) -> str:
    spark_charset(text, key)
    return text.strip()


def parse_fixed_types(key: str, text: str) -> dict[str, FlinkType]:
    """``json.infer-schema.fixed-types`` (``id BIGINT, name VARCHAR(10)``) as field types.

    Example:
        >>> {k: str(t) for k, t in parse_fixed_types("k", "id BIGINT, `n` DECIMAL(10, 2)").items()}
        {'id': 'BIGINT', 'n': 'DECIMAL(10, 2)'}

    Raises:
        KafkaOptionsError: an entry is not ``<field> <Flink type>``, naming the option.
    """
    out: dict[str, FlinkType] = {}
    for entry in split_top_level(text, opening="(<", closing=")>", quotes=""):
        name, _, type_text = entry.partition(" ")
        name = name.strip("`")
        if not name or not type_text.strip():
            raise KafkaOptionsError(
                f"Option '{key}' has entry {entry!r}; write '<field> <type>' pairs separated by "
                f"commas, e.g. 'id BIGINT, name VARCHAR(10)'.",
                keys=(key,),
            )
        try:
            out[name] = parse_flink_type(type_text.strip())
        except KafkaOptionsError as exc:
            raise KafkaOptionsError(f"Option '{key}', field '{name}': {exc}", keys=(key,)) from None
    return out


def _fo(key: str, type_: str, default: str | None, description: str, parse: Any) -> ConfigOption:
    return ConfigOption(key, type_, default, description, parse=parse, section="Format")


def _regex(key: str, text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise KafkaOptionsError(
            f"Option '{key}' is not a valid regular expression: {exc}.", keys=(key,)
        ) from None
    return text


def _changelog_json_options(*, encode: bool = True) -> tuple[ConfigOption, ...]:
    """The JSON options a changelog format shares with ``json`` (Flink's own set for them)."""
    options = (
        _fo("ignore-parse-errors", "Boolean", "false",
            "Tolerate records that fail to parse (collected as dirty data) instead of "
            "failing: a field of an image that fails is null and the rows stay; a record that "
            "is not an envelope or carries an unknown operation is skipped.", parse_bool),
        _fo("timestamp-format.standard", "Enum", "SQL",
            "Timestamp text of the rows: 'SQL' (2020-12-30 12:13:14.123) or 'ISO-8601' "
            "(2020-12-30T12:13:14.123).", parse_choice("SQL", "ISO-8601")),
        _fo("map-null-key.mode", "Enum", "FAIL",
            "Encoding a MAP with a null key: FAIL, DROP the entry, or LITERAL.",
            parse_choice("FAIL", "DROP", "LITERAL")),
        _fo("map-null-key.literal", "String", "null",
            "The key text written for null map keys in LITERAL mode.", parse_string),
    )  # fmt: skip
    if not encode:
        return options
    return (
        *options,
        _fo("encode.decimal-as-plain-number", "Boolean", "false",
            "Write DECIMAL as plain digits at the column's scale (1.50, 100); by default it is "
            "Java's BigDecimal.stripTrailingZeros() text, as Flink writes it (1.5, 1E+2).",
            parse_bool),
    )  # fmt: skip


def _avro_schema_text(key: str, text: str) -> str:
    """An Avro schema in JSON: parsed here so a typo fails at definition load."""
    import json

    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise KafkaOptionsError(
            f"Option '{key}' is not an Avro schema in JSON: {exc}.", keys=(key,)
        ) from None
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise KafkaOptionsError(
            f'Option \'{key}\' must be an Avro record schema ({{"type": "record", ...}}).',
            keys=(key,),
        )
    return text


def _pem_file(key: str, text: str) -> str:
    path = text.strip()
    if not path.lower().endswith((".pem", ".crt", ".cer")):
        raise KafkaOptionsError(
            f"Option '{key}' = {path[:80]!r} is not supported: the Python Schema Registry client "
            "reads PEM files (.pem, .crt, .cer), not Java keystores; convert it with "
            "`keytool -exportcert -rfc`.",
            keys=(key,),
        )
    return path


_AVRO_TIMESTAMP_MAPPING = _fo(
    "timestamp_mapping.legacy", "Boolean", "true",
    "Flink's legacy mapping: TIMESTAMP and TIMESTAMP_LTZ are both Avro timestamp-millis/micros; "
    "with false, TIMESTAMP is local-timestamp-millis/micros.", parse_bool,
)  # fmt: skip


def _registry_head() -> tuple[ConfigOption, ...]:
    """The Schema Registry's address and subject (options of both registry formats)."""
    return (
        _fo("url", "String", None,
            "URL of the Confluent Schema Registry (required).", parse_string),
        _fo("subject", "String", None,
            "Subject the written schema is registered under; by default '<topic>-value' or "
            "'<topic>-key' for a table of one topic.", parse_string),
    )  # fmt: skip


def _registry_tail(fmt: str) -> tuple[ConfigOption, ...]:
    """The Schema Registry client's credentials, TLS and settings."""
    return (
        _fo("basic-auth.credentials-source", "String", None,
            "Where basic-auth credentials come from: USER_INFO (basic-auth.user-info) or URL "
            "(user:password@ in the URL); SASL_INHERIT is refused (see Departures).",
            parse_choice("USER_INFO", "URL", "SASL_INHERIT")),
        _fo("basic-auth.user-info", "String", None,
            "Basic-auth credentials 'user:password' (secret).", parse_string),
        _fo("bearer-auth.credentials-source", "String", None,
            "Where the bearer token comes from: STATIC_TOKEN or OAUTHBEARER.",
            parse_choice("STATIC_TOKEN", "OAUTHBEARER")),
        _fo("bearer-auth.token", "String", None, "Bearer token (secret).", parse_string),
        _fo("ssl.truststore.location", "String", None,
            "CA certificates (PEM file) the registry's certificate is checked against.",
            _pem_file),
        _fo("properties", "Map", None,
            f"More Schema Registry client settings, '{fmt}.properties.<key>' (the "
            "Python client's keys, e.g. timeout, ssl.certificate.location).", parse_string),
    )  # fmt: skip


#: The options of ``protobuf``, which ``protobuf-confluent`` shares.
_PROTOBUF_OPTIONS = (
    _fo("message-class-name", "String", None,
        "The message each record holds (required): its full name in the descriptor file "
        "('shop.Order'), its generated Java class ('com.shop.OrderProtos$Order'), or a name "
        "whose last segment is the simple name of exactly one message of the file.",
        parse_string),
    _fo("descriptor-file", "String", None,
        "FileDescriptorSet defining the message (required): the output of `protoc "
        "--include_imports --descriptor_set_out=<file>.desc <file>.proto`, read when the "
        "table is declared.", descriptor_file),
    _fo("ignore-parse-errors", "Boolean", "false",
        "Skip records that fail to parse (collected as dirty data) instead of failing.",
        parse_bool),
    _fo("read-default-values", "Boolean", "false",
        "Read unset fields as their default values. With false, an unset field that tracks "
        "presence (proto2 fields, proto3 'optional', oneof members, messages) and an empty "
        "repeated or map field read as NULL; proto3 scalars without presence always read "
        "their value.", parse_bool),
    _fo("write-null-string-literal", "String", "",
        "The string written for a null element of an ARRAY or MAP of strings (protobuf has "
        "no null); other null elements become their type's default value.", parse_string),
)  # fmt: skip

#: Deprecated spellings of format options, as Flink still accepts them.
FORMAT_ALIASES: dict[str, dict[str, str]] = {
    name: {"schema-registry.url": "url", "schema-registry.subject": "subject"}
    for name in ("avro-confluent", "debezium-avro-confluent")
}

FORMAT_OPTIONS: dict[str, tuple[ConfigOption, ...]] = {
    "json": (
        _fo("fail-on-missing-field", "Boolean", "false",
            "Fail on a record that lacks a declared field (else the field is null).", parse_bool),
        _fo("ignore-parse-errors", "Boolean", "false",
            "Tolerate records that fail to parse (collected as dirty data) instead of "
            "failing: a field that fails is null and the row stays; a record that is not a "
            "JSON object is skipped.", parse_bool),
        _fo("timestamp-format.standard", "Enum", "SQL",
            "Timestamp text: 'SQL' (2020-12-30 12:13:14.123) or 'ISO-8601' "
            "(2020-12-30T12:13:14.123).", parse_choice("SQL", "ISO-8601")),
        _fo("map-null-key.mode", "Enum", "FAIL",
            "Encoding a MAP with a null key: FAIL, DROP the entry, or LITERAL (see "
            "map-null-key.literal).", parse_choice("FAIL", "DROP", "LITERAL")),
        _fo("map-null-key.literal", "String", "null",
            "The key text written for null map keys in LITERAL mode.", parse_string),
        _fo("encode.decimal-as-plain-number", "Boolean", "false",
            "Write DECIMAL as plain digits at the column's scale (1.50, 100); by default it is "
            "Java's BigDecimal.stripTrailingZeros() text, as Flink writes it (1.5, 1E+2).",
            parse_bool),
        _fo("encode.ignore-null-fields", "Boolean", "false",
            "Leave out fields whose value is null when encoding.", parse_bool),
        _fo("infer-schema.primitive-as-string", "Boolean", "false",
            "Schema inference (a table without columns): every inferred type is STRING.",
            parse_bool),
        _fo("infer-schema.flatten-nested-columns.enable", "Boolean", "false",
            "Schema inference: an object's fields become columns named 'parent.child' "
            "(recursively) instead of one STRING column holding its JSON text.", parse_bool),
        _fo("infer-schema.fixed-types", "String", None,
            "Schema inference: fields whose type is given, not inferred, e.g. 'id BIGINT, name "
            "VARCHAR(10)'.", parse_fixed_types),
    ),
    "csv": (
        _fo("field-delimiter", "String", ",",
            "Field separator, one character; Java escapes such as '\\t' or '\\u0001' allowed.",
            _char(unescape=True)),
        _fo("disable-quote-character", "Boolean", "false",
            "Do not quote fields; exclusive with 'quote-character'.", parse_bool),
        _fo("quote-character", "String", '"', "Character that encloses fields.", _char(False)),
        _fo("allow-comments", "Boolean", "false", "Skip lines starting with '#'.", parse_bool),
        _fo("ignore-parse-errors", "Boolean", "false",
            "Tolerate records that fail to parse (collected as dirty data) instead of failing: "
            "a record whose fields fail or are missing stays a row with those fields null; one "
            "with broken quoting or too many fields is skipped.", parse_bool),
        _fo("array-element-delimiter", "String", ";", "Separator of ARRAY elements.",
            parse_string),
        _fo("escape-character", "String", None, "Escape character (none by default).",
            _char(False)),
        _fo("null-literal", "String", None, "Text read and written as SQL NULL.", parse_string),
        _fo("write-bigdecimal-in-scientific-notation", "Boolean", "true",
            "Write DECIMAL in scientific notation when shorter.", parse_bool),
    ),
    "raw": (
        _fo("charset", "String", "UTF-8", "Charset of text values (one Spark knows: see "
            "Departures).", _charset),
        _fo("endianness", "Enum", "big-endian", "Byte order of numbers: big-endian or "
            "little-endian.", parse_choice("big-endian", "little-endian")),
    ),
    "debezium-json": (
        _fo("schema-include", "Boolean", "false",
            "Records carry Kafka Connect's schema ({\"schema\": ..., \"payload\": ...}, "
            "'value.converter.schemas.enable'); read only: a sink cannot write it.", parse_bool),
        *_changelog_json_options(),
    ),
    "canal-json": (
        *_changelog_json_options(),
        _fo("database.include", "String", None,
            "Regular expression (Java syntax) the record's 'database' must match in full; other "
            "records yield no rows.", _regex),
        _fo("table.include", "String", None,
            "Regular expression (Java syntax) the record's 'table' must match in full; other "
            "records yield no rows.", _regex),
    ),
    "maxwell-json": _changelog_json_options(),
    "ogg-json": _changelog_json_options(encode=False),
    "avro": (
        _fo("encoding", "Enum", "binary",
            "Avro encoding of each record: 'binary' or 'json'.", parse_choice("binary", "json")),
        _AVRO_TIMESTAMP_MAPPING,
    ),
    "avro-confluent": (
        *_registry_head(),
        _fo("schema", "String", None,
            "Avro schema (JSON) to read into and to register on write, instead of the one "
            "derived from the columns.", _avro_schema_text),
        *_registry_tail("avro-confluent"),
        _AVRO_TIMESTAMP_MAPPING,
    ),
    "debezium-avro-confluent": (
        *_registry_head(),
        _fo("schema", "String", None,
            "Avro schema (JSON) of the whole envelope to read into and to register on write: a "
            "record of the nullable records 'before' and 'after' (the table's columns) and a "
            "nullable string 'op'; by default the one derived from the columns.",
            _avro_schema_text),
        *_registry_tail("debezium-avro-confluent"),
    ),
    "protobuf": _PROTOBUF_OPTIONS,
    "protobuf-confluent": (
        *_registry_head(),
        *_PROTOBUF_OPTIONS,
        *_registry_tail("protobuf-confluent"),
    ),
}  # fmt: skip

#: Options whose keys continue with a name (``<format>.properties.<key>``): a map.
MAP_OPTIONS = ("properties",)


def _registry_unsupported(fmt: str) -> dict[str, str]:
    """Java-only Schema Registry client settings, refused with the way to give them."""
    keystore = (
        "the Python Schema Registry client reads PEM files, not Java keystores; give the client "
        f"certificate and key as '{fmt}.properties.ssl.certificate.location' and "
        f"'{fmt}.properties.ssl.key.location' (PEM)"
    )
    return {
        "ssl.keystore.location": keystore,
        "ssl.keystore.password": keystore,
        "ssl.truststore.password": "PEM truststores have no password",
    }


_IN_PIPELINE = "; a data-ingestion pipeline YAML takes it (see 'Data-ingestion YAML')"
_INFERENCE = (
    "it configures schema inference of a data-ingestion changelog source; declare the table's "
    "columns instead" + _IN_PIPELINE
)
_ROUTING = (
    "it routes records to tables of a multi-table data-ingestion source; read one table per "
    "topic instead" + _IN_PIPELINE
)
_VENDOR = "it is an option of the vendor's data ingestion, not of Flink's format"
_VENDOR_ONLY = _VENDOR + _IN_PIPELINE

# Vendor (data-ingestion) format options the seeds document, refused with the reason.
UNSUPPORTED_FORMAT_OPTIONS: dict[str, dict[str, str]] = {
    "json": {"decode.parser-table-id.fields": _ROUTING},
    "debezium-json": {
        "infer-schema.": _INFERENCE,
        "distributed-tables": _VENDOR_ONLY,
        "include-schema.enabled": _VENDOR
        + " (Flink's debezium-json never writes a schema)"
        + _IN_PIPELINE,
    },
    "canal-json": {
        "infer-schema.": _INFERENCE,
        "mysql.": _INFERENCE,
        "distributed-tables": _VENDOR_ONLY,
    },
    "avro": {
        "codec": "it compresses Avro container files (the filesystem connector); a Kafka record "
        "holds one Avro datum, which has no codec",
    },
    "avro-confluent": _registry_unsupported("avro-confluent"),
    "debezium-avro-confluent": _registry_unsupported("debezium-avro-confluent"),
    "protobuf-confluent": _registry_unsupported("protobuf-confluent"),
}


def format_key_parts(key: str) -> tuple[str, str, str] | None:
    """Split ``[key.|value.]<format>.<option>`` into (side prefix, format, option), else None."""
    for side in ("key.", "value.", ""):
        if side and not key.startswith(side):
            continue
        head, dot, tail = key[len(side) :].partition(".")
        if dot and head in FORMATS and tail:
            return side, head, tail
    return None


def resolve_format(opts: Mapping[str, str], name: str, option_key: str) -> FormatSpec:
    """Validate the format named by ``option_key`` and collect its own options.

    The value format's options are written ``<format>.x`` or ``value.<format>.x``; the key
    format's ``key.<format>.x``.
    """
    if name not in SUPPORTED_FORMATS:
        allowed = ", ".join(f"'{f}'" for f in SUPPORTED_FORMATS)
        known = " (a Flink format this project does not support yet)" if name in FORMATS else ""
        raise KafkaOptionsError(
            f"Unsupported value for option '{option_key}': {name[:40]!r}{known}. Supported "
            f"formats are {allowed}.",
            keys=(option_key,),
        )
    side = "key." if option_key == "key.format" else "value."
    prefixes = (side,) if side == "key." else ("", "value.")
    declared = {o.key: o for o in FORMAT_OPTIONS[name]}
    raw: dict[str, str] = {}
    written: dict[str, str] = {}
    maps: dict[str, dict[str, str]] = {}
    aliases = FORMAT_ALIASES.get(name, {})
    for key, text in opts.items():
        parts = format_key_parts(key)
        if parts is None or parts[0] not in prefixes or parts[1] != name:
            continue
        option = aliases.get(parts[2], parts[2])
        head, dot, rest = option.partition(".")
        if dot and head in MAP_OPTIONS and head in declared:
            maps.setdefault(head, {})[rest] = text
            continue
        if option in MAP_OPTIONS and option in declared:
            raise KafkaOptionsError(
                f"Option '{key}' is a map: give each of its entries as '{key}.<key>'.",
                keys=(key,),
            )
        if option not in declared:
            raise _unknown_format_option(key, name, option, declared)
        if option in raw:
            raise KafkaOptionsError(
                f"Options '{written[option]}' and '{key}' set the same {name} option.",
                keys=(written[option], key),
            )
        raw[option], written[option] = text, key
    settings: dict[str, Any] = {
        o.key: o.parse(written.get(o.key, o.key), value)
        for o in FORMAT_OPTIONS[name]
        if (value := raw.get(o.key, o.default)) is not None
    }
    for head, entries in maps.items():
        settings[head] = entries
        raw.update({f"{head}.{k}": v for k, v in entries.items()})
    _check_rules(name, settings, raw, written, side if side == "key." else "")
    return FormatSpec(name=name, options=raw, settings=settings)


def with_default_subject(fmt: FormatSpec, topics: Sequence[str], side: str) -> FormatSpec:
    """A registry format of a one-topic table registers under ``<topic>-<side>`` by default,
    as Flink's Kafka table factory completes ``<format>.subject``."""
    if fmt.name not in REGISTRY_FORMATS or "subject" in fmt.settings:
        return fmt
    from ._registry import default_subject

    subject = default_subject(topics, side)
    if subject is None:
        return fmt
    return FormatSpec(fmt.name, fmt.options, {**fmt.settings, "subject": subject})


def _unknown_format_option(
    key: str, name: str, option: str, declared: Mapping[str, ConfigOption]
) -> KafkaOptionsError:
    for unsupported, reason in UNSUPPORTED_FORMAT_OPTIONS.get(name, {}).items():
        if option == unsupported or (unsupported.endswith(".") and option.startswith(unsupported)):
            return KafkaOptionsError(f"Option '{key}' is not supported: {reason}.", keys=(key,))
    close = closest(option, declared)
    hint = f" (did you mean '{key[: len(key) - len(option)]}{close}'?)" if close else ""
    allowed = ", ".join(declared)
    return KafkaOptionsError(
        f"Unsupported option '{key}' for format '{name}'{hint}. Options of '{name}': {allowed}.",
        keys=(key,),
    )


def _check_rules(
    name: str,
    settings: dict[str, Any],
    raw: Mapping[str, str],
    written: Mapping[str, str],
    side: str,
) -> None:
    if name in REGISTRY_FORMATS and "url" not in settings:
        raise KafkaOptionsError(
            f"Format '{name}' needs the Schema Registry's URL: set '{name}.url' (or "
            f"'value.{name}.url' / 'key.{name}.url').",
            keys=(f"{name}.url",),
        )
    if name in REGISTRY_FORMATS:
        from ._registry import client_config

        settings["registry"] = client_config(name, settings)
    if name in PROTOBUF_FORMATS:
        load_message(name, settings, written, side)
    if name == "json" and settings["fail-on-missing-field"] and settings["ignore-parse-errors"]:
        keys = (written["fail-on-missing-field"], written["ignore-parse-errors"])
        raise KafkaOptionsError(
            f"Options '{keys[0]}' and '{keys[1]}' shouldn't both be true.", keys=keys
        )
    if name == "csv":
        if settings["disable-quote-character"] and "quote-character" in raw:
            keys = (written["disable-quote-character"], written["quote-character"])
            raise KafkaOptionsError(
                f"Format cannot define a quote character ('{keys[1]}') and disable the quote "
                f"character ('{keys[0]}') at the same time.",
                keys=keys,
            )
        if settings["disable-quote-character"]:
            settings["quote-character"] = None


def check_format_keys(opts: Mapping[str, str], value_format: str, key_format: str | None) -> None:
    """Every format-shaped key must belong to the table's value or key format."""
    for key in opts:
        parts = format_key_parts(key)
        if parts is None:
            continue
        side, name, _ = parts
        if side == "key.":
            if key_format is None:
                raise KafkaOptionsError(
                    f"Option '{key}' configures the key format, but 'key.format' is not set.",
                    keys=(key, "key.format"),
                )
            if name != key_format:
                raise KafkaOptionsError(
                    f"Option '{key}' configures format '{name}', but the key format is "
                    f"'{key_format}'.",
                    keys=(key, "key.format"),
                )
        elif name != value_format:
            raise KafkaOptionsError(
                f"Option '{key}' configures format '{name}', but the value format is "
                f"'{value_format}'.",
                keys=(key, "value.format"),
            )
