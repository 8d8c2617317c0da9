"""The ``upsert-kafka`` connector: primary key, key and value formats, forbidden options."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.options import Column, DeliveryGuarantee, StartupMode

from .test_options_support import DROP, UPSERT, build, expect_error

COLUMNS = (
    Column("region", "STRING NOT NULL"),
    Column("total", "DECIMAL(12, 2)"),
    Column("ts", "TIMESTAMP_LTZ(3)", metadata_key="timestamp"),
)


def upsert(changes: dict[str, Any], **kwargs: Any) -> Any:
    kwargs.setdefault("columns", COLUMNS)
    kwargs.setdefault("primary_key", ("region",))
    return build(changes, base=UPSERT, **kwargs)


def test_basic_upsert_table() -> None:
    spec = upsert({})
    assert spec.is_upsert
    assert spec.key_fields == ("region",)
    assert [c.name for c in spec.key_columns] == ["region"]
    assert [c.name for c in spec.value_columns] == ["region", "total"]
    assert spec.startup_mode is StartupMode.EARLIEST_OFFSET
    assert spec.sink_buffer_flush_max_rows == 0
    assert spec.sink_buffer_flush_interval_ms == 0


@pytest.mark.parametrize(
    ("changes", "field", "expected"),
    [
        ({"value.fields-include": "EXCEPT_KEY"}, "value_field_names", ("total",)),
        (
            {"sink.buffer-flush.max-rows": "1000", "sink.buffer-flush.interval": "1 s"},
            "sink_buffer_flush_interval_ms",
            1000,
        ),
        (
            {"sink.buffer-flush.max-rows": "1000", "sink.buffer-flush.interval": "1 s"},
            "sink_buffer_flush_max_rows",
            1000,
        ),
        (
            {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "t"},
            "delivery_guarantee",
            DeliveryGuarantee.EXACTLY_ONCE,
        ),
        (
            {"scan.topic-partition-discovery.interval": "1 min"},
            "partition_discovery_interval_ms",
            60_000,
        ),
        ({"topic": DROP, "topic-pattern": "totals-.*"}, "topic_pattern", "totals-.*"),
        ({"scan.bounded.mode": "latest-offset"}, "bounded_mode.value", "latest-offset"),
        ({"properties.group.id": "g"}, "group_id", "g"),
        ({"sink.parallelism": "2"}, "sink_parallelism", 2),
    ],
)
def test_valid_upsert_changes(changes: dict[str, Any], field: str, expected: Any) -> None:
    value: Any = upsert(changes)
    for part in field.split("."):
        value = getattr(value, part)
    assert value == expected


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        ({"key.format": DROP}, ("key.format",), "requires 'key.format'"),
        ({"value.format": DROP}, ("value.format",), "requires 'value.format'"),
        (
            {"value.format": DROP, "format": "json"},
            ("format", "connector"),
            "its value format is set with 'value.format'",
        ),
        (
            {"key.fields": "region"},
            ("key.fields", "connector"),
            "not supported by the 'upsert-kafka' connector: its key columns are the PRIMARY KEY",
        ),
        (
            {"scan.startup.mode": "latest-offset"},
            ("scan.startup.mode", "connector"),
            "always reads from the earliest offset",
        ),
        (
            {"scan.startup.timestamp-millis": "1"},
            ("scan.startup.timestamp-millis", "connector"),
            "always reads from the earliest offset",
        ),
        (
            {"scan.startup.specific-offsets": "partition:0,offset:1"},
            ("scan.startup.specific-offsets", "connector"),
            "earliest offset",
        ),
        ({"sink.partitioner": "fixed"}, ("sink.partitioner", "connector"), "by their key"),
        ({"scan.header-filter": "a:b"}, ("scan.header-filter", "connector"), "other connector"),
        (
            {"sink.buffer-flush.max-rows": "10"},
            ("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
            "greater than zero together",
        ),
        (
            {"sink.buffer-flush.interval": "1 s"},
            ("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
            "together",
        ),
        (
            {"sink.buffer-flush.max-rows": "-1", "sink.buffer-flush.interval": "1 s"},
            ("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
            "together",
        ),
        (
            {"sink.buffer-flush.max-rows": "0", "sink.buffer-flush.interval": "1 s"},
            ("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
            "together",
        ),
        (
            {"key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"},
            ("key.fields-prefix",),
            "PRIMARY KEY columns of an 'upsert-kafka' table form its key",
        ),
        ({"key.format": "raw", "key.raw.charset": "UTF-8"}, (), ""),
    ],
)
def test_invalid_upsert_changes(
    changes: dict[str, Any], keys: tuple[str, ...], fragment: str
) -> None:
    if not keys:
        assert upsert(changes).key_format.name == "raw"
        return
    expect_error(changes, keys, fragment, base=UPSERT, columns=COLUMNS, primary_key=("region",))


def test_upsert_requires_a_primary_key_of_physical_columns() -> None:
    expect_error(
        {},
        ("connector",),
        "require to define a PRIMARY KEY",
        base=UPSERT,
        columns=COLUMNS,
        primary_key=None,
    )
    expect_error({}, ("connector",), "PRIMARY KEY", base=UPSERT, columns=None, primary_key=())
    with pytest.raises(ValueError, match="must name physical columns; not physical: ts"):
        upsert({}, primary_key=("ts",))


def test_upsert_raw_key_needs_a_single_key_column() -> None:
    columns = (*COLUMNS, Column("day", "DATE"))
    expect_error(
        {"key.format": "raw"},
        ("key.format",),
        "single physical column",
        base=UPSERT,
        columns=columns,
        primary_key=("region", "day"),
    )
