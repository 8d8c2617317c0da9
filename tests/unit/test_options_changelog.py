"""Options of the changelog formats (``debezium-json``, ``canal-json``, ``maxwell-json``,
``ogg-json``): their own options, format metadata columns, and the rules Flink's factories
enforce for them."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.options import (
    CHANGELOG_FORMATS,
    FORMAT_METADATA,
    FORMAT_OPTIONS,
    ROW_KIND,
    Column,
    KafkaOptionsError,
    render_options_reference,
)

from .test_options_support import BASE, COLUMNS, DROP, UPSERT, build, expect_error

# BASE is a source's options map: used for a sink, its scan options warn (expected here).
pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)

DEBEZIUM = {"format": "debezium-json"}
CANAL = {"format": "canal-json"}


JSON_CHANGELOGS = [name for name in CHANGELOG_FORMATS if name.endswith("-json")]


@pytest.mark.parametrize("name", JSON_CHANGELOGS)
def test_every_changelog_format_is_accepted_with_flinks_defaults(name: str) -> None:
    spec = build({"format": name}, role="source")
    settings = spec.value_format.settings
    assert spec.is_changelog
    assert settings["ignore-parse-errors"] is False
    assert settings["timestamp-format.standard"] == "SQL"
    assert settings["map-null-key.mode"] == "FAIL"
    assert settings["map-null-key.literal"] == "null"


@pytest.mark.parametrize(
    ("changes", "setting", "expected"),
    [
        ({**DEBEZIUM}, "schema-include", False),
        ({**DEBEZIUM, "debezium-json.schema-include": "true"}, "schema-include", True),
        ({**DEBEZIUM, "debezium-json.ignore-parse-errors": "TRUE"}, "ignore-parse-errors", True),
        (
            {
                "format": DROP,
                "value.format": "debezium-json",
                "value.debezium-json.timestamp-format.standard": "iso-8601",
            },
            "timestamp-format.standard",
            "ISO-8601",
        ),
        (
            {**DEBEZIUM, "debezium-json.encode.decimal-as-plain-number": "true"},
            "encode.decimal-as-plain-number",
            True,
        ),
        ({**CANAL, "canal-json.database.include": "inv.*"}, "database.include", "inv.*"),
        ({**CANAL, "canal-json.table.include": "prod|ord"}, "table.include", "prod|ord"),
        ({**CANAL}, "table.include", None),
        (
            {"format": "maxwell-json", "maxwell-json.map-null-key.mode": "drop"},
            "map-null-key.mode",
            "DROP",
        ),
        (
            {"format": "ogg-json", "ogg-json.ignore-parse-errors": "True"},
            "ignore-parse-errors",
            True,
        ),
    ],
)
def test_changelog_settings(changes: dict[str, Any], setting: str, expected: Any) -> None:
    assert build(changes, role="source").value_format.settings.get(setting) == expected


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        (
            {**DEBEZIUM, "debezium-json.schema-include": "maybe"},
            ("debezium-json.schema-include",),
            "debezium-json.schema-include",
        ),
        (
            {**DEBEZIUM, "debezium-json.fail-on-missing-field": "true"},
            ("debezium-json.fail-on-missing-field",),
            "Unsupported option 'debezium-json.fail-on-missing-field' for format 'debezium-json'",
        ),
        (
            {**DEBEZIUM, "debezium-json.schema-includ": "true"},
            ("debezium-json.schema-includ",),
            "did you mean 'debezium-json.schema-include'",
        ),
        (
            {**CANAL, "canal-json.database.include": "(unclosed"},
            ("canal-json.database.include",),
            "not a valid regular expression",
        ),
        (
            {**CANAL, "canal-json.schema-include": "true"},
            ("canal-json.schema-include",),
            "Options of 'canal-json'",
        ),
        (
            {"format": "maxwell-json", "maxwell-json.timestamp-format.standard": "RFC"},
            ("maxwell-json.timestamp-format.standard",),
            "maxwell-json.timestamp-format.standard",
        ),
        (
            {"format": "ogg-json", "ogg-json.encode.decimal-as-plain-number": "true"},
            ("ogg-json.encode.decimal-as-plain-number",),
            "Unsupported option",
        ),
        (
            {**DEBEZIUM, "debezium-json.distributed-tables": "true"},
            ("debezium-json.distributed-tables",),
            "vendor's data ingestion",
        ),
        (
            {**DEBEZIUM, "debezium-json.include-schema.enabled": "true"},
            ("debezium-json.include-schema.enabled",),
            "never writes a schema",
        ),
        (
            {**CANAL, "canal-json.infer-schema.strategy": "SQL_TYPE"},
            ("canal-json.infer-schema.strategy",),
            "schema inference",
        ),
        (
            {**DEBEZIUM, "json.ignore-parse-errors": "true"},
            ("json.ignore-parse-errors", "value.format"),
            "but the value format is 'debezium-json'",
        ),
        (
            {"key.format": "debezium-json", "key.fields": "id"},
            ("key.format",),
            "'key.format' = 'debezium-json' is a changelog format",
        ),
        (
            {"key.format": "canal-json", "key.fields": "id", **DEBEZIUM},
            ("key.format",),
            "a key format must be insert-only",
        ),
    ],
)
def test_changelog_option_errors_name_the_option(
    changes: dict[str, Any], keys: tuple[str, ...], fragment: str
) -> None:
    expect_error(changes, keys, fragment, role="source")


def test_upsert_kafka_refuses_a_changelog_value_format() -> None:
    expect_error(
        {"value.format": "maxwell-json"},
        ("value.format",),
        "The 'upsert-kafka' connector doesn't support 'maxwell-json' as 'value.format'",
        base=UPSERT,
        columns=(Column("k", "STRING"), Column("v", "BIGINT")),
        primary_key=("k",),
    )


def test_schema_include_is_read_only() -> None:
    changes = {"format": DROP, "value.format": "debezium-json",
               "value.debezium-json.schema-include": "true"}  # fmt: skip
    source = build(changes, role="source")
    assert source.value_format.settings["schema-include"] is True
    expect_error(changes, ("value.debezium-json.schema-include",), "cannot be written", role="sink")
    with pytest.raises(KafkaOptionsError, match=r"'value\.debezium-json\.schema-include' = 'true'"):
        build(changes).for_role("sink")
    build(changes).for_role("source")  # a table without a role waits for its use


def test_a_changelog_table_may_declare_a_primary_key_as_flink_allows() -> None:
    assert build(DEBEZIUM, primary_key=("id",), role="source").primary_key == ("id",)
    expect_error({}, ("connector", "format"), "cannot declare a PRIMARY KEY", primary_key=("id",))


@pytest.mark.parametrize("base", [{**BASE, **DEBEZIUM}, UPSERT])
def test_the_row_kind_column_name_is_reserved_in_changelog_tables(base: dict[str, str]) -> None:
    columns = (Column("id", "BIGINT"), Column(ROW_KIND, "STRING"))
    key = "format" if "format" in base else "value.format"
    expect_error(
        {},
        (key,),
        f"Column '{ROW_KIND}' is reserved",
        base=base,
        columns=columns,
        primary_key=("id",) if base is UPSERT else None,
    )
    build({}, columns=columns)  # a plain json table may use the name


@pytest.mark.parametrize(
    ("name", "key", "declared"),
    [
        ("debezium-json", "value.ingestion-timestamp", "TIMESTAMP_LTZ(3)"),
        ("debezium-json", "value.source.timestamp", "TIMESTAMP(3)"),
        ("debezium-json", "value.source.database", "STRING"),
        ("debezium-json", "value.source.schema", "VARCHAR(20)"),
        ("debezium-json", "value.source.table", "STRING"),
        ("debezium-json", "value.source.properties", "MAP<STRING, STRING>"),
        ("debezium-json", "value.schema", "STRING"),
        ("canal-json", "value.database", "STRING"),
        ("canal-json", "value.table", "STRING"),
        ("canal-json", "value.sql-type", "MAP<STRING, INT>"),
        ("canal-json", "value.pk-names", "ARRAY<STRING>"),
        ("canal-json", "value.ingestion-timestamp", "TIMESTAMP_LTZ(3)"),
        ("canal-json", "value.event-timestamp", "STRING"),
        ("maxwell-json", "value.database", "STRING"),
        ("maxwell-json", "value.table", "STRING"),
        ("maxwell-json", "value.primary-key-columns", "ARRAY<STRING>"),
        ("maxwell-json", "value.ingestion-timestamp", "TIMESTAMP(3)"),
        ("ogg-json", "value.table", "STRING"),
        ("ogg-json", "value.op_ts", "TIMESTAMP_LTZ(6)"),
        ("ogg-json", "value.primary_keys", "ARRAY<STRING>"),
    ],
)
def test_format_metadata_columns(name: str, key: str, declared: str) -> None:
    column = Column("m", declared, metadata_key=key, virtual=True)
    spec = build({"format": name}, columns=(*COLUMNS, column), role="source")
    assert spec.metadata_columns[-1].metadata_key == key
    build({"format": name}, columns=(*COLUMNS, column), role="sink")  # VIRTUAL: fine in a sink


@pytest.mark.parametrize(
    ("name", "column", "fragment"),
    [
        (
            "debezium-json",
            Column("m", "STRING", metadata_key="value.database"),
            "Invalid metadata key 'value.database' in column 'm'. Kafka tables in format "
            "'debezium-json' support the metadata keys",
        ),
        (
            "json",
            Column("m", "STRING", metadata_key="value.source.table"),
            "Invalid metadata key 'value.source.table'",
        ),
        (
            "canal-json",
            Column("m", "INT", metadata_key="value.pk-names"),
            "cannot be declared as 'INT' because the type must be castable from the metadata type "
            "'ARRAY<STRING>'",
        ),
        (
            "canal-json",
            Column("m", "MAP<STRING, BOOLEAN>", metadata_key="value.sql-type"),
            "castable from the metadata type 'MAP<STRING, INT>'",
        ),
        (
            "maxwell-json",
            Column("m", "DATE", metadata_key="value.ingestion-timestamp"),
            "castable from the metadata type 'TIMESTAMP_LTZ(3)'",
        ),
    ],
)
def test_format_metadata_errors(name: str, column: Column, fragment: str) -> None:
    expect_error({"format": name}, (), fragment, columns=(*COLUMNS, column), role="source")


def test_format_metadata_is_read_only_in_a_sink() -> None:
    column = Column("db", "STRING", metadata_key="value.source.database")
    expect_error(
        DEBEZIUM,
        (),
        "is read-only, but the sink table would write it",
        columns=(*COLUMNS, column),
        role="sink",
    )


def test_reference_page_lists_the_changelog_formats_options_and_metadata() -> None:
    page = render_options_reference()
    for name in CHANGELOG_FORMATS:
        for option in FORMAT_OPTIONS[name]:
            assert f"`{name}.{option.key}`" in page
        for key in FORMAT_METADATA.get(name, {}):
            assert f"| `{name}` | `value.{key}` |" in page
    assert f"`{ROW_KIND}` STRING column" in page
