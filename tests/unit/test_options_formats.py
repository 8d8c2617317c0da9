"""Per-format options (``json.*``, ``key.json.*``, ``value.csv.*``, ``raw.*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dagster_kafka_flinklike.options import FORMAT_OPTIONS, Column, FormatSpec
from tests.protobuf_defs import write_descriptor_set

from .test_options_support import DROP, build, expect_error

# Shared option maps carry source options into sink tables too: those options are accepted with
# a KafkaOptionsWarning (as Flink ignores them), which these tests do not look at.
pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)

KEYED = {"key.format": "json", "key.fields": "id"}
ONE_COLUMN = (Column("line", "STRING"),)


@pytest.mark.parametrize(
    ("changes", "setting", "expected"),
    [
        ({}, "fail-on-missing-field", False),
        ({}, "ignore-parse-errors", False),
        ({}, "timestamp-format.standard", "SQL"),
        ({}, "map-null-key.mode", "FAIL"),
        ({}, "map-null-key.literal", "null"),
        ({}, "encode.decimal-as-plain-number", False),
        ({}, "encode.ignore-null-fields", False),
        ({"json.fail-on-missing-field": "true"}, "fail-on-missing-field", True),
        ({"json.ignore-parse-errors": "true"}, "ignore-parse-errors", True),
        ({"json.timestamp-format.standard": "ISO-8601"}, "timestamp-format.standard", "ISO-8601"),
        ({"json.timestamp-format.standard": "iso-8601"}, "timestamp-format.standard", "ISO-8601"),
        ({"json.map-null-key.mode": "drop"}, "map-null-key.mode", "DROP"),
        (
            {"json.map-null-key.mode": "LITERAL", "json.map-null-key.literal": "N/A"},
            "map-null-key.literal",
            "N/A",
        ),
        ({"json.encode.decimal-as-plain-number": "true"}, "encode.decimal-as-plain-number", True),
        ({"json.encode.ignore-null-fields": "true"}, "encode.ignore-null-fields", True),
        (
            {"format": DROP, "value.format": "json", "value.json.ignore-parse-errors": "true"},
            "ignore-parse-errors",
            True,
        ),
        (
            {"format": DROP, "value.format": "json", "json.ignore-parse-errors": "true"},
            "ignore-parse-errors",
            True,
        ),
        ({"format": "json", "value.json.ignore-parse-errors": "true"}, "ignore-parse-errors", True),
    ],
)
def test_json_settings(changes: dict[str, Any], setting: str, expected: Any) -> None:
    assert build(changes).value_format.settings[setting] == expected


def test_options_keep_what_was_written_and_settings_are_typed() -> None:
    fmt = build({"json.ignore-parse-errors": "TRUE"}).value_format
    assert fmt == FormatSpec("json", {"ignore-parse-errors": "TRUE"})
    assert fmt.settings["ignore-parse-errors"] is True
    assert fmt.ignore_parse_errors is True


@pytest.mark.parametrize(
    ("changes", "setting", "expected"),
    [
        ({}, "field-delimiter", ","),
        ({}, "quote-character", '"'),
        ({}, "array-element-delimiter", ";"),
        ({}, "write-bigdecimal-in-scientific-notation", True),
        ({"csv.field-delimiter": "|"}, "field-delimiter", "|"),
        ({"csv.field-delimiter": "\\t"}, "field-delimiter", "\t"),
        ({"csv.field-delimiter": "\\u0001"}, "field-delimiter", "\x01"),
        ({"csv.field-delimiter": "\x01"}, "field-delimiter", "\x01"),
        ({"csv.field-delimiter": "\\\\"}, "field-delimiter", "\\"),
        ({"csv.quote-character": "'"}, "quote-character", "'"),
        ({"csv.disable-quote-character": "true"}, "quote-character", None),
        ({"csv.allow-comments": "true"}, "allow-comments", True),
        ({"csv.ignore-parse-errors": "true"}, "ignore-parse-errors", True),
        ({"csv.array-element-delimiter": "||"}, "array-element-delimiter", "||"),
        ({"csv.escape-character": "\\"}, "escape-character", "\\"),
        ({"csv.null-literal": "NULL"}, "null-literal", "NULL"),
        ({"csv.null-literal": ""}, "null-literal", ""),
        (
            {"csv.write-bigdecimal-in-scientific-notation": "false"},
            "write-bigdecimal-in-scientific-notation",
            False,
        ),
        (
            {"format": DROP, "value.format": "csv", "value.csv.field-delimiter": ";"},
            "field-delimiter",
            ";",
        ),
    ],
)
def test_csv_settings(changes: dict[str, Any], setting: str, expected: Any) -> None:
    spec = build({"format": "csv", **changes})
    assert spec.value_format.settings[setting] == expected


@pytest.mark.parametrize(
    ("changes", "setting", "expected"),
    [
        ({}, "charset", "UTF-8"),
        ({}, "endianness", "big-endian"),
        ({"raw.charset": "ISO-8859-1"}, "charset", "ISO-8859-1"),
        ({"raw.charset": "US-ASCII"}, "charset", "US-ASCII"),
        ({"raw.charset": "UTF-16BE"}, "charset", "UTF-16BE"),
        ({"raw.endianness": "little-endian"}, "endianness", "little-endian"),
        ({"raw.endianness": "BIG-ENDIAN"}, "endianness", "big-endian"),
    ],
)
def test_raw_settings(changes: dict[str, Any], setting: str, expected: Any) -> None:
    spec = build({"format": "raw", **changes}, columns=ONE_COLUMN)
    assert spec.value_format.settings[setting] == expected


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        (
            {"json.ignore-parse-error": "true"},
            ("json.ignore-parse-error",),
            "did you mean 'json.ignore-parse-errors'?",
        ),
        (
            {"json.fail-on-missing-fields": "true"},
            ("json.fail-on-missing-fields",),
            "did you mean 'json.fail-on-missing-field'?",
        ),
        ({"json.nonsense": "1"}, ("json.nonsense",), "Options of 'json': fail-on-missing-field"),
        ({"json.ignore-parse-errors": "yes"}, ("json.ignore-parse-errors",), "'true' or 'false'"),
        (
            {"json.fail-on-missing-field": "true", "json.ignore-parse-errors": "true"},
            ("json.fail-on-missing-field", "json.ignore-parse-errors"),
            "shouldn't both be true",
        ),
        (
            {"json.timestamp-format.standard": "RFC3339"},
            ("json.timestamp-format.standard",),
            "'SQL', 'ISO-8601'",
        ),
        (
            {"json.map-null-key.mode": "IGNORE"},
            ("json.map-null-key.mode",),
            "'FAIL', 'DROP', 'LITERAL'",
        ),
        ({"json.encode.ignore-null-fields": "0"}, ("json.encode.ignore-null-fields",), "'true'"),
        (
            {"json.infer-schema.flatten-nested-columns.enable": "on"},
            ("json.infer-schema.flatten-nested-columns.enable",),
            "'true' or 'false'",
        ),
        (
            {"json.infer-schema.fixed-types": "id BIGINT, name"},
            ("json.infer-schema.fixed-types",),
            "entry 'name'",
        ),
        (
            {"json.infer-schema.fixed-types": "id LONG"},
            ("json.infer-schema.fixed-types",),
            "field 'id'",
        ),
        (
            {"json.decode.parser-table-id.fields": "a,b"},
            ("json.decode.parser-table-id.fields",),
            "multi-table data-ingestion",
        ),
        (
            {"csv.field-delimiter": ","},
            ("csv.field-delimiter", "value.format"),
            "configures format 'csv', but the value format is 'json'",
        ),
        ({"avro.codec": "snappy"}, ("avro.codec", "value.format"), "value format is 'json'"),
        (
            {"debezium-json.schema-include": "true"},
            ("debezium-json.schema-include", "value.format"),
            "value format is 'json'",
        ),
        (
            {"canal-json.database.include": "db"},
            ("canal-json.database.include", "value.format"),
            "value format is 'json'",
        ),
        (
            {"key.json.ignore-parse-errors": "true"},
            ("key.json.ignore-parse-errors", "key.format"),
            "'key.format' is not set",
        ),
        (
            {**KEYED, "key.csv.field-delimiter": ";"},
            ("key.csv.field-delimiter", "key.format"),
            "key format is 'json'",
        ),
        (
            {**KEYED, "key.json.ignore-parse-errorz": "true"},
            ("key.json.ignore-parse-errorz",),
            "did you mean 'key.json.ignore-parse-errors'?",
        ),
        (
            {"json.ignore-parse-errors": "true", "value.json.ignore-parse-errors": "false"},
            ("json.ignore-parse-errors", "value.json.ignore-parse-errors"),
            "set the same json option",
        ),
        (
            {"format": "csv", "csv.field-delimiter": ";;"},
            ("csv.field-delimiter",),
            "single character",
        ),
        (
            {"format": "csv", "csv.field-delimiter": ""},
            ("csv.field-delimiter",),
            "single character",
        ),
        (
            {"format": "csv", "csv.field-delimiter": "\\q"},
            ("csv.field-delimiter",),
            "invalid escape",
        ),
        (
            {"format": "csv", "csv.field-delimiter": "\\u00"},
            ("csv.field-delimiter",),
            "invalid escape",
        ),
        (
            {"format": "csv", "csv.quote-character": "\\u0027"},
            ("csv.quote-character",),
            "single character",
        ),
        (
            {"format": "csv", "csv.escape-character": "ab"},
            ("csv.escape-character",),
            "single character",
        ),
        (
            {"format": "csv", "csv.disable-quote-character": "true", "csv.quote-character": "'"},
            ("csv.disable-quote-character", "csv.quote-character"),
            "cannot define a quote character",
        ),
        ({"format": "csv", "csv.allow-comments": "sometimes"}, ("csv.allow-comments",), "'true'"),
        (
            {"format": "csv", "csv.fieldDelimiter": ";"},
            ("csv.fieldDelimiter",),
            "did you mean 'csv.field-delimiter'?",
        ),
        ({"format": "csv", "csv.charset": "UTF-8"}, ("csv.charset",), "Options of 'csv'"),
        (
            {"format": "csv", "json.ignore-parse-errors": "true"},
            ("json.ignore-parse-errors", "value.format"),
            "value format is 'csv'",
        ),
    ],
)
def test_format_option_errors(
    changes: dict[str, Any], keys: tuple[str, ...], fragment: str
) -> None:
    expect_error(changes, keys, fragment)


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        ({"raw.charset": "klingon-8"}, ("raw.charset",), "'klingon-8' is not supported"),
        # Python knows the codec, Spark's decode/encode do not: rejected at definition load.
        ({"raw.charset": "gbk"}, ("raw.charset",), "Spark reads and writes UTF-8, US-ASCII"),
        ({"key.format": "raw", "key.raw.charset": "cp1252"}, ("key.raw.charset",), "'cp1252'"),
        ({"raw.endianness": "middle-endian"}, ("raw.endianness",), "'big-endian'"),
        ({"raw.charsett": "UTF-8"}, ("raw.charsett",), "did you mean 'raw.charset'?"),
        ({"raw.field-delimiter": ","}, ("raw.field-delimiter",), "Options of 'raw'"),
    ],
)
def test_raw_option_errors(changes: dict[str, Any], keys: tuple[str, ...], fragment: str) -> None:
    expect_error({"format": "raw", **changes}, keys, fragment, columns=ONE_COLUMN)


def test_key_format_options_are_separate_from_the_value_ones() -> None:
    spec = build(
        {**KEYED, "key.json.ignore-parse-errors": "true", "json.fail-on-missing-field": "true"}
    )
    assert spec.key_format is not None
    assert spec.key_format.options == {"ignore-parse-errors": "true"}
    assert spec.key_format.settings["fail-on-missing-field"] is False
    assert spec.value_format.options == {"fail-on-missing-field": "true"}


@pytest.mark.parametrize("name", sorted(FORMAT_OPTIONS))
def test_every_declared_format_option_accepts_its_default(name: str, tmp_path: Path) -> None:
    changes: dict[str, Any] = {"format": name}
    for option in FORMAT_OPTIONS[name]:
        if option.default is not None and option.key != "quote-character":
            changes[f"{name}.{option.key}"] = option.default
    if name == "avro-confluent":  # the one required format option
        changes["avro-confluent.url"] = "http://registry:8081"
    columns = ONE_COLUMN if name == "raw" else None
    if name.endswith("-confluent"):  # the registry formats require the registry's URL
        changes[f"{name}.url"] = "http://registry:8081"
    if name.startswith("protobuf"):  # the message and its definitions, and columns of it
        changes[f"{name}.message-class-name"] = "shop.Order"
        changes[f"{name}.descriptor-file"] = write_descriptor_set(tmp_path)
        columns = (Column("id", "BIGINT"),)
    spec = build(changes, columns=columns) if columns else build(changes)
    assert spec.value_format.name == name


NESTED = (
    Column("id", "BIGINT"),
    Column("tags", "ARRAY<STRING>"),
    Column("attrs", "MAP<STRING, STRING>"),
    Column("deep", "ARRAY<ROW<a INT>>"),
)


@pytest.mark.parametrize(
    ("changes", "columns", "keys", "fragment"),
    [
        # Caught when the table is declared, not when the first record is decoded.
        ({"format": "csv"}, NESTED[:3], ("format",), "column 'attrs' of type MAP<STRING, STRING>"),
        ({"format": DROP, "value.format": "csv"}, NESTED[:2] + NESTED[3:], ("value.format",),
         "column 'deep' of type ARRAY<ROW<"),
        ({**KEYED, "key.format": "csv", "key.fields": "attrs"}, NESTED[:3], ("key.format",),
         "column 'attrs'"),
    ],
)  # fmt: skip
def test_csv_columns_it_cannot_hold_fail_at_declaration(
    changes: dict[str, Any], columns: Any, keys: tuple[str, ...], fragment: str
) -> None:
    expect_error(changes, keys, fragment, columns=columns)


def test_csv_holds_scalars_and_one_level_of_array_and_row() -> None:
    spec = build({"format": "csv"}, columns=(*NESTED[:2], Column("r", "ROW<a INT, b STRING>")))
    assert spec.value_format.name == "csv"
