"""Columns of a Kafka table: metadata keys and their read/write rules, key and value fields."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.options import METADATA, Column, KafkaOptionsError

from .test_options_support import UPSERT, build, expect_error

# Shared option maps carry source options into sink tables too: those options are accepted with
# a KafkaOptionsWarning (as Flink ignores them), which these tests do not look at.
pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)

PHYSICAL = (Column("id", "BIGINT"), Column("name", "STRING"))


def _meta(key: str, type_: str | None = None, *, virtual: bool = False) -> tuple[Column, ...]:
    return (*PHYSICAL, Column("m", type_ or METADATA[key].type, metadata_key=key, virtual=virtual))


@pytest.mark.parametrize("key", sorted(METADATA))
@pytest.mark.parametrize("virtual", [True, False])
def test_every_metadata_key_is_readable(key: str, virtual: bool) -> None:
    spec = build({}, columns=_meta(key, virtual=virtual), role="source")
    assert [c.metadata_key for c in spec.metadata_columns] == [key]
    assert [c.name for c in spec.physical_columns] == ["id", "name"]


@pytest.mark.parametrize("key", sorted(METADATA))
def test_metadata_in_a_sink_must_be_virtual_unless_writable(key: str) -> None:
    build({}, columns=_meta(key, virtual=True), role="sink")
    if METADATA[key].writable:
        build({}, columns=_meta(key), role="sink")
    else:
        with pytest.raises(KafkaOptionsError) as info:
            build({}, columns=_meta(key), role="sink")
        message = str(info.value)
        assert f"Metadata column 'm' (key '{key}') is read-only" in message
        assert "Declare it VIRTUAL" in message


def test_writable_keys_follow_the_reference_documents() -> None:
    writable = {k for k, m in METADATA.items() if m.writable}
    assert writable == {"headers", "timestamp", "__raw_key__", "__raw_value__"}
    assert METADATA["timestamp"].type == "TIMESTAMP_LTZ(3) NOT NULL"
    assert METADATA["headers"].type == "MAP<STRING, BYTES> NOT NULL"
    assert str(METADATA["offset"].flink_type) == "BIGINT NOT NULL"


@pytest.mark.parametrize(
    ("key", "type_"),
    [
        ("offset", "INT NOT NULL"),
        ("offset", "STRING"),
        ("offset", "DECIMAL(20, 0)"),
        ("partition", "BIGINT"),
        ("leader-epoch", "INT NOT NULL"),
        ("timestamp", "TIMESTAMP(3)"),
        ("timestamp", "TIMESTAMP_LTZ"),
        ("timestamp", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
        ("timestamp", "STRING"),
        ("topic", "VARCHAR(100)"),
        ("topic", "STRING NOT NULL"),
        ("headers", "MAP<STRING, BYTES>"),
        ("headers", "MAP<STRING, STRING>"),
        ("headers", "MAP<VARCHAR, VARBINARY> NOT NULL"),
        ("timestamp-type", "STRING"),
        ("__raw_key__", "BYTES"),
        ("__raw_value__", "STRING"),
    ],
)
def test_castable_metadata_types(key: str, type_: str) -> None:
    build({}, columns=_meta(key, type_, virtual=True))


@pytest.mark.parametrize(
    ("key", "type_"),
    [
        ("offset", "BOOLEAN"),
        ("offset", "TIMESTAMP(3)"),
        ("partition", "DATE"),
        ("timestamp", "BIGINT"),
        ("timestamp", "DATE"),
        ("topic", "INT"),
        ("topic", "BYTES"),
        ("headers", "STRING"),
        ("headers", "MAP<INT, BYTES>"),
        ("headers", "ARRAY<BYTES>"),
        ("headers", "MAP<STRING, INT>"),
        ("timestamp-type", "INT"),
        ("__raw_value__", "INT"),
    ],
)
def test_incompatible_metadata_types(key: str, type_: str) -> None:
    with pytest.raises(KafkaOptionsError, match="must be castable from the metadata type"):
        build({}, columns=_meta(key, type_, virtual=True))


@pytest.mark.parametrize("key", ["key", "value", "Timestamp", "raw_key", "offsets", ""])
def test_unknown_metadata_key(key: str) -> None:
    with pytest.raises(KafkaOptionsError, match="Invalid metadata key"):
        build({}, columns=(*PHYSICAL, Column("m", "STRING", metadata_key=key)))


def test_two_persisted_columns_for_one_key_are_ambiguous_in_a_sink() -> None:
    columns = (
        *PHYSICAL,
        Column("a", "TIMESTAMP_LTZ(3)", metadata_key="timestamp"),
        Column("b", "TIMESTAMP_LTZ(3)", metadata_key="timestamp"),
    )
    build({}, columns=columns, role="source")
    with pytest.raises(KafkaOptionsError, match="both persist metadata key 'timestamp'"):
        build({}, columns=columns, role="sink")


@pytest.mark.parametrize(
    ("column", "fragment"),
    [
        (dict(name="v", type="INT", virtual=True), "only METADATA columns can be VIRTUAL"),
        (dict(name="c", metadata_key="offset", expression="1"), "both computed and a metadata"),
        (dict(name="", type="INT"), "non-empty string"),
        (dict(name="x", type="INTEGR"), "Column 'x': Invalid Flink SQL type"),
        (dict(name="x", type="INT", color="red"), "Unknown column field(s) color"),
    ],
)
def test_invalid_columns(column: dict[str, Any], fragment: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        Column.coerce(column)
    assert fragment in str(info.value)


def test_columns_as_dicts_and_duplicates() -> None:
    spec = build(
        {},
        columns=[
            {"name": "id", "type": "BIGINT"},
            {
                "name": "ts",
                "type": "TIMESTAMP_LTZ(3)",
                "metadata_key": "timestamp",
                "virtual": True,
            },
            {"name": "day", "expression": "CAST(ts AS DATE)"},
        ],
    )
    assert [c.name for c in spec.computed_columns] == ["day"]
    assert spec.columns[1].virtual is True
    with pytest.raises(KafkaOptionsError, match="declared twice: id"):
        build({}, columns=[{"name": "id"}, {"name": "id"}])
    with pytest.raises(KafkaOptionsError, match="A column must be"):
        build({}, columns=["id"])


KEY_VALUE = (
    Column("k_id", "BIGINT"),
    Column("k_region", "STRING"),
    Column("v_name", "STRING"),
    Column("v_amount", "DOUBLE"),
)


def test_key_fields_with_prefix_include_the_prefix_in_the_columns() -> None:
    spec = build(
        {
            "key.format": "json",
            "key.fields": "k_id;k_region",
            "key.fields-prefix": "k_",
            "value.fields-include": "EXCEPT_KEY",
            "value.fields-prefix": "v_",
        },
        columns=KEY_VALUE,
    )
    assert spec.key_fields == ("k_id", "k_region")
    assert [c.name for c in spec.key_columns] == ["k_id", "k_region"]
    assert spec.key_field_names == ("id", "region")
    assert [c.name for c in spec.value_columns] == ["v_name", "v_amount"]
    assert spec.value_field_names == ("name", "amount")


def test_key_columns_follow_key_fields_order_and_all_includes_them_in_the_value() -> None:
    spec = build({"key.format": "json", "key.fields": "name;id"}, columns=PHYSICAL)
    assert [c.name for c in spec.key_columns] == ["name", "id"]
    assert [c.name for c in spec.value_columns] == ["id", "name"]
    assert spec.value_field_names == ("id", "name")


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        (
            {"key.fields-prefix": "k_", "value.fields-prefix": "k_v"},
            ("key.fields-prefix", "value.fields-prefix"),
            "must not be prefixes of each other",
        ),
        (
            {"key.fields-prefix": "k", "value.fields-prefix": "k_"},
            ("key.fields-prefix", "value.fields-prefix"),
            "must not be prefixes of each other",
        ),
        (
            {"key.fields-prefix": "x_", "value.fields-prefix": "x_"},
            ("key.fields-prefix", "value.fields-prefix"),
            "must not be prefixes of each other",
        ),
        ({"value.fields-prefix": "val_"}, ("value.fields-prefix",), "v_name, v_amount is not"),
        (
            {"key.fields": "k_id;v_name"},
            ("key.fields", "key.fields-prefix"),
            "field 'v_name' is not prefixed",
        ),
    ],
)
def test_prefix_rules(changes: dict[str, Any], keys: tuple[str, ...], fragment: str) -> None:
    base = {
        "key.format": "json",
        "key.fields": "k_id",
        "key.fields-prefix": "k_",
        "value.fields-include": "EXCEPT_KEY",
        "value.fields-prefix": "v_",
    }
    expect_error({**base, **changes}, keys, fragment, columns=KEY_VALUE)


def test_value_prefix_with_all_applies_to_key_columns_too() -> None:
    columns = (Column("v_id", "BIGINT"), Column("v_name", "STRING"))
    spec = build(
        {"key.format": "json", "key.fields": "v_id", "value.fields-prefix": "v_"}, columns=columns
    )
    assert spec.value_field_names == ("id", "name")


def test_primary_key_columns_are_checked() -> None:
    columns = (*PHYSICAL, Column("part", "BIGINT NOT NULL", metadata_key="partition"))
    with pytest.raises(KafkaOptionsError, match="PRIMARY KEY column\\(s\\) not declared: x"):
        build({}, base=UPSERT, columns=columns, primary_key=("x",))
    with pytest.raises(KafkaOptionsError, match="names a column twice"):
        build({}, base=UPSERT, columns=columns, primary_key=("id", "id"))
