"""Parity with Flink's Kafka table factories: what Flink accepts is accepted, what it refuses is
refused, and what it accepts but ignores is accepted with a ``KafkaOptionsWarning``.

The cases follow the shape of Flink's own factory tests (one basic valid options map per use,
change one key, check the outcome); the maps and the expectations are this project's.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from dagster_kafka_flinklike import kafka_streaming_asset
from dagster_kafka_flinklike.errors import KafkaOptionsWarning
from dagster_kafka_flinklike.options import (
    BoundedMode,
    Column,
    DeliveryGuarantee,
    KafkaOptionsError,
    KafkaTableSpec,
    StartupMode,
    TransactionNamingStrategy,
)
from dagster_kafka_flinklike.options._departures import (
    DEPARTURES,
    INCREMENTING_REASON,
    SINK_TOPIC_REASON,
)
from dagster_kafka_flinklike.run.plan import read_min_splits
from dagster_kafka_flinklike.sql import parse_flink_sql

from .test_options_support import DROP, changed

COLUMNS = (
    Column("name", "STRING NOT NULL"),
    Column("count", "DECIMAL(38, 18)"),
    Column("time", "TIMESTAMP(3)"),
)
SOURCE: dict[str, str] = {
    "connector": "kafka",
    "topic": "my-topic",
    "properties.group.id": "dummy",
    "properties.bootstrap.servers": "dummy:9092",
    "scan.startup.mode": "specific-offsets",
    "scan.startup.specific-offsets": "partition:0,offset:100;partition:1,offset:123",
    "scan.topic-partition-discovery.interval": "1000 ms",
    "format": "csv",
    "csv.field-delimiter": ",",
}
SINK: dict[str, str] = {
    "connector": "kafka",
    "topic": "my-topic",
    "properties.bootstrap.servers": "dummy:9092",
    "sink.partitioner": "fixed",
    "sink.delivery-guarantee": "exactly-once",
    "sink.transactional-id-prefix": "kafka-sink",
    "format": "csv",
    "csv.field-delimiter": ",",
}
KEY_VALUE: dict[str, str] = {
    "connector": "kafka",
    "topic": "my-topic",
    "properties.group.id": "dummy",
    "properties.bootstrap.servers": "dummy:9092",
    "scan.topic-partition-discovery.interval": "1000 ms",
    "sink.partitioner": "fixed",
    "sink.delivery-guarantee": "exactly-once",
    "sink.transactional-id-prefix": "kafka-sink",
    "key.format": "csv",
    "key.csv.field-delimiter": "#",
    "key.fields": "name",
    "value.format": "csv",
    "value.csv.field-delimiter": "|",
    "value.fields-include": "EXCEPT_KEY",
}
UPSERT_COLUMNS = (
    Column("window_start", "STRING NOT NULL"),
    Column("region", "STRING NOT NULL"),
    Column("view_count", "BIGINT"),
)
UPSERT_KEY = ("window_start", "region")
UPSERT_SOURCE: dict[str, str] = {
    "connector": "upsert-kafka",
    "topic": "source-topic",
    "properties.bootstrap.servers": "dummy:9092",
    "scan.topic-partition-discovery.interval": "1000 ms",
    "key.format": "json",
    "value.format": "json",
}
UPSERT_SINK: dict[str, str] = {
    "connector": "upsert-kafka",
    "topic": "sink-topic",
    "properties.bootstrap.servers": "dummy:9092",
    "key.format": "json",
    "value.format": "json",
}


def _defaults(base: dict[str, str], kw: dict[str, Any]) -> dict[str, Any]:
    upsert = base["connector"] == "upsert-kafka"
    return {
        "columns": UPSERT_COLUMNS if upsert else COLUMNS,
        "primary_key": UPSERT_KEY if upsert else None,
        "name": "t1",
        **kw,
    }


def spec(base: dict[str, str], changes: dict[str, Any] | None = None, **kw: Any) -> KafkaTableSpec:
    """The table of ``base`` with ``changes``; fails on any warning (use :func:`warned`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkaOptionsWarning)
        return KafkaTableSpec.from_options(changed(base, changes or {}), **_defaults(base, kw))


def warned(
    base: dict[str, str], changes: dict[str, Any], keys: tuple[str, ...], fragment: str, **kw: Any
) -> KafkaTableSpec:
    """The table builds, with a warning naming exactly ``keys`` and saying ``fragment``."""
    with pytest.warns(KafkaOptionsWarning) as caught:
        table = KafkaTableSpec.from_options(changed(base, changes), **_defaults(base, kw))
    matching = [w.message for w in caught if getattr(w.message, "keys", None) == keys]
    assert matching, [str(w.message) for w in caught]
    assert fragment in str(matching[0]), str(matching[0])
    return table


def refused(
    base: dict[str, str], changes: dict[str, Any], keys: tuple[str, ...], fragment: str, **kw: Any
) -> KafkaOptionsError:
    """Building fails naming exactly ``keys``, with ``fragment`` in the message."""
    with warnings.catch_warnings(), pytest.raises(KafkaOptionsError) as info:
        warnings.simplefilter("ignore", KafkaOptionsWarning)
        KafkaTableSpec.from_options(changed(base, changes), **_defaults(base, kw))
    assert info.value.keys == keys, str(info.value)
    assert fragment in str(info.value), str(info.value)
    return info.value


# --- kafka source ---------------------------------------------------------------------------


def test_source_table() -> None:
    table = spec(SOURCE, role="source")
    assert table.topics == ("my-topic",)
    assert table.startup_mode is StartupMode.SPECIFIC_OFFSETS
    assert table.startup_specific_offsets == {0: 100, 1: 123}
    assert table.partition_discovery_interval_ms == 1000
    assert table.scan_parallelism is None


def test_source_with_parallelism_sets_the_minimum_read_tasks() -> None:
    table = spec(SOURCE, {"scan.parallelism": "100"}, role="source")
    assert table.scan_parallelism == 100
    assert read_min_splits(table, None) == 100
    assert read_min_splits(table, 200) == 200  # the asset's min_splits, when larger, wins
    assert read_min_splits(spec(SOURCE), 3) == 3
    assert read_min_splits(spec(SOURCE), None) is None


@pytest.mark.parametrize(
    ("value", "fragment"), [("0", "must be >= 1"), ("many", "expects an integer (Integer)")]
)
def test_source_parallelism_must_count_tasks(value: str, fragment: str) -> None:
    refused(SOURCE, {"scan.parallelism": value}, ("scan.parallelism",), fragment)


@pytest.mark.parametrize(("value", "expected"), [("100 ms", 100), ("0", None), ("2 min", 120_000)])
def test_source_with_custom_partition_discovery_interval(value: str, expected: Any) -> None:
    table = spec(SOURCE, {"scan.topic-partition-discovery.interval": value})
    assert table.partition_discovery_interval_ms == expected


def test_source_partition_discovery_by_default() -> None:
    table = spec(SOURCE, {"scan.topic-partition-discovery.interval": DROP})
    assert table.partition_discovery_interval_ms == 300_000


def test_source_with_pattern() -> None:
    table = spec(
        SOURCE,
        {
            "topic": DROP,
            "topic-pattern": r"my-topic-\d+",
            "scan.startup.mode": "earliest-offset",
            "scan.startup.specific-offsets": DROP,
        },
        role="source",
    )
    assert table.topics == ()
    assert table.topic_pattern == r"my-topic-\d+"


def test_source_with_key_and_value() -> None:
    table = spec(KEY_VALUE)
    assert table.key_fields == ("name",)
    assert [c.name for c in table.value_columns] == ["count", "time"]
    assert table.key_format is not None and table.key_format.settings["field-delimiter"] == "#"
    assert table.value_format.settings["field-delimiter"] == "|"


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        (
            {"topic": "a;b;c", "topic-pattern": "a.*"},
            ("topic", "topic-pattern"),
            "Option 'topic' and 'topic-pattern' shouldn't be set together.",
        ),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.specific-offsets": DROP},
            ("scan.startup.timestamp-millis", "scan.startup.mode"),
            "'scan.startup.timestamp-millis' is required in 'timestamp' startup mode but missing.",
        ),
        (
            {"scan.startup.specific-offsets": DROP},
            ("scan.startup.specific-offsets", "scan.startup.mode"),
            "'scan.startup.specific-offsets' is required in 'specific-offsets' startup mode but "
            "missing.",
        ),
        (
            {"topic": "a;b"},
            ("scan.startup.mode", "topic"),
            "only supports specific offset for single topic",
        ),
        (
            {"topic": DROP, "topic-pattern": "a.*"},
            ("scan.startup.mode", "topic"),
            "only supports specific offset for single topic",
        ),
        (
            {"scan.bounded.mode": "specific-offsets"},
            ("scan.bounded.specific-offsets", "scan.bounded.mode"),
            "'scan.bounded.specific-offsets' is required in 'specific-offsets' bounded mode but "
            "missing.",
        ),
        (
            {"scan.bounded.mode": "timestamp"},
            ("scan.bounded.timestamp-millis", "scan.bounded.mode"),
            "'scan.bounded.timestamp-millis' is required in 'timestamp' bounded mode but missing.",
        ),
        (
            {"scan.startup.specific-offsets": "0:100"},
            ("scan.startup.specific-offsets",),
            "should follow the format 'partition:0,offset:42;partition:1,offset:300'",
        ),
    ],
)
def test_source_refusals(changes: dict[str, Any], keys: tuple[str, ...], fragment: str) -> None:
    refused(SOURCE, changes, keys, fragment, role="source")


@pytest.mark.parametrize(
    ("mode", "changes", "expected"),
    [
        ("specific-offsets", {"scan.bounded.specific-offsets": "partition:0,offset:2"}, {0: 2}),
        ("latest-offset", {}, None),
        ("group-offsets", {}, None),
        ("timestamp", {"scan.bounded.timestamp-millis": "1"}, None),
    ],
)
def test_bounded_modes(mode: str, changes: dict[str, Any], expected: Any) -> None:
    table = spec(SOURCE, {"scan.bounded.mode": mode, **changes}, role="source")
    assert table.bounded_mode is BoundedMode(mode)
    assert table.bounded_specific_offsets == expected
    if mode == "timestamp":
        assert table.bounded_timestamp_millis == 1


def test_specific_offsets_naming_a_partition_twice_keep_the_last() -> None:
    table = warned(
        SOURCE,
        {"scan.startup.specific-offsets": "partition:0,offset:1;partition:0,offset:7"},
        ("scan.startup.specific-offsets",),
        "partition 0 twice",
    )
    assert table.startup_specific_offsets == {0: 7}


# --- kafka sink ------------------------------------------------------------------------------


def test_sink_table() -> None:
    table = spec(SINK, role="sink")
    assert table.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert table.transactional_id_prefix == "kafka-sink"
    assert table.sink_partitioner == "fixed"
    assert table.transaction_naming_strategy is TransactionNamingStrategy.POOLING


@pytest.mark.parametrize(
    ("semantic", "expected"),
    [
        ("exactly-once", DeliveryGuarantee.EXACTLY_ONCE),
        ("at-least-once", DeliveryGuarantee.AT_LEAST_ONCE),
        ("none", DeliveryGuarantee.NONE),
        ("EXACTLY_ONCE", DeliveryGuarantee.EXACTLY_ONCE),
        ("At_Least-Once", DeliveryGuarantee.AT_LEAST_ONCE),
        ("NONE", DeliveryGuarantee.NONE),
    ],
)
def test_sink_semantic_translation(semantic: str, expected: DeliveryGuarantee) -> None:
    table = warned(
        SINK,
        {"sink.delivery-guarantee": DROP, "sink.semantic": semantic},
        ("sink.semantic",),
        "deprecated; use 'sink.delivery-guarantee'",
        role="sink",
    )
    assert table.delivery_guarantee is expected


def test_sink_semantic_wins_over_the_delivery_guarantee() -> None:
    table = warned(
        SINK,
        {"sink.semantic": "at-least-once"},
        ("sink.delivery-guarantee", "sink.semantic"),
        "'sink.semantic' ('at-least-once') is also set and wins",
        role="sink",
    )
    assert table.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE


def test_sink_semantic_exactly_once_needs_a_prefix() -> None:
    refused(
        SINK,
        {
            "sink.delivery-guarantee": DROP,
            "sink.semantic": "exactly_once",
            "sink.transactional-id-prefix": DROP,
        },
        ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
        "must be specified",
    )


@pytest.mark.parametrize("value", ["twice", "exactly once"])
def test_sink_semantic_values(value: str) -> None:
    refused(SINK, {"sink.semantic": value}, ("sink.semantic",), "Invalid value for option")


@pytest.mark.parametrize("value", ["POOLING", "pooling", "Pooling"])
def test_sink_transaction_naming_strategy_pooling(value: str) -> None:
    table = spec(SINK, {"sink.transaction-naming-strategy": value}, role="sink")
    assert table.transaction_naming_strategy is TransactionNamingStrategy.POOLING


def test_sink_transaction_naming_strategy_incrementing_is_refused_with_the_reason() -> None:
    err = refused(
        SINK,
        {"sink.transaction-naming-strategy": "incrementing"},
        ("sink.transaction-naming-strategy",),
        "'INCREMENTING' is not supported",
    )
    assert INCREMENTING_REASON in str(err)
    assert any(INCREMENTING_REASON in d for d in DEPARTURES)


def test_sink_transaction_naming_strategy_default_is_not_a_value() -> None:
    # Flink's DEFAULT is a Java alias of INCREMENTING, not a value the option parses.
    refused(
        SINK,
        {"sink.transaction-naming-strategy": "DEFAULT"},
        ("sink.transaction-naming-strategy",),
        "Allowed values are 'INCREMENTING', 'POOLING'",
    )


@pytest.mark.parametrize(
    "key", ["sink.transaction-naming-strategy", "sink.transactional-id-prefix"]
)
def test_transaction_options_without_exactly_once_have_no_effect(key: str) -> None:
    changes = {"sink.delivery-guarantee": "at-least-once", key: "POOLING"}
    warned(SINK, changes, (key,), "only an exactly-once sink opens transactions", role="sink")


def test_sink_with_parallelism() -> None:
    assert spec(SINK, {"sink.parallelism": "100"}, role="sink").sink_parallelism == 100


@pytest.mark.parametrize(
    ("changes", "key", "what"),
    [
        ({"topic": "a;b;c"}, "topic", "3 topics"),
        ({"topic": DROP, "topic-pattern": r"my-topic-\d+"}, "topic-pattern", "a pattern"),
    ],
)
def test_sink_topic_list_or_pattern_is_a_departure(
    changes: dict[str, Any], key: str, what: str
) -> None:
    err = refused(
        SINK, changes, (key,), f"exactly one topic, but option '{key}' names {what}", role="sink"
    )
    assert SINK_TOPIC_REASON in str(err)
    assert any(SINK_TOPIC_REASON in d for d in DEPARTURES)
    assert spec(
        SOURCE,
        {**changes, "scan.startup.mode": "earliest-offset", "scan.startup.specific-offsets": DROP},
    )


@pytest.mark.parametrize(
    ("base", "changes", "keys", "fragment"),
    [
        (
            SINK,
            {"topic": "a;b", "topic-pattern": "a.*"},
            ("topic", "topic-pattern"),
            "shouldn't be set together",
        ),
        (SINK, {"sink.partitioner": "abc"}, ("sink.partitioner",), "dotted class path"),
        (SINK, {"sink.partitioner": ""}, ("sink.partitioner",), "non-empty string"),
        (
            KEY_VALUE,
            {"sink.partitioner": "round-robin"},
            ("sink.partitioner", "key.fields"),
            "Currently 'round-robin' partitioner only works when option 'key.fields' is not "
            "specified.",
        ),
        (
            KEY_VALUE,
            {"sink.transactional-id-prefix": DROP},
            ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
            "sink.transactional-id-prefix must be specified",
        ),
    ],
)
def test_sink_refusals(
    base: dict[str, str], changes: dict[str, Any], keys: tuple[str, ...], fragment: str
) -> None:
    refused(base, changes, keys, fragment, role="sink")


# --- PRIMARY KEY on a plain kafka table ------------------------------------------------------


@pytest.mark.parametrize(("base", "role"), [(SINK, "sink"), (KEY_VALUE, "sink"), (SOURCE, None)])
def test_primary_key_on_a_kafka_table_is_refused(base: dict[str, str], role: str | None) -> None:
    value_key = "value.format" if "value.format" in base else "format"
    refused(
        base,
        {},
        ("connector", value_key),
        "A 'kafka' table cannot declare a PRIMARY KEY (name): its 'csv' format",
        primary_key=("name",),
        role=role,
    )


# --- formats and key / value fields ----------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        (
            {"key.format": DROP, "key.csv.field-delimiter": DROP},
            ("key.fields", "key.format"),
            "The option 'key.fields' can only be declared if a key format is defined using "
            "'key.format'.",
        ),
        (
            {"key.fields": DROP},
            ("key.format", "key.fields"),
            "A key format 'key.format' requires the declaration of one or more of key fields "
            "using 'key.fields'.",
        ),
        (
            {"value.fields-include": "ALL", "key.fields-prefix": "k_"},
            ("key.fields-prefix", "value.fields-include"),
            "A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'.",
        ),
        (
            {"key.fields-prefix": "k_"},
            ("key.fields", "key.fields-prefix"),
            "All fields in 'key.fields' must be prefixed with 'k_' when option "
            "'key.fields-prefix' is set but field 'name' is not prefixed.",
        ),
        (
            {"key.fields": "nope"},
            ("key.fields",),
            "Could not find the field(s) 'nope' in the table schema for usage in the key format.",
        ),
        ({"value.csv.bogus": "x"}, ("value.csv.bogus",), "Unsupported option"),
        (
            {"json.ignore-parse-errors": "true"},
            ("json.ignore-parse-errors", "value.format"),
            "but the value format is 'csv'",
        ),
        (
            {"value.format": "avro-confluent", "value.csv.field-delimiter": DROP},
            ("avro-confluent.url",),
            "'avro-confluent.url'",
        ),
    ],
)
def test_key_and_value_format_refusals(
    changes: dict[str, Any], keys: tuple[str, ...], fragment: str
) -> None:
    refused(KEY_VALUE, changes, keys, fragment)


def test_format_wins_over_value_format() -> None:
    table = warned(
        SOURCE,
        {"value.format": "json"},
        ("value.format", "format"),
        "'format' ('csv') is also set and wins",
    )
    assert table.value_format.name == "csv"
    assert spec(SOURCE, {"value.format": "csv"}).value_format.name == "csv"  # same: no warning


# --- enum values: case-insensitive on their string form --------------------------------------


@pytest.mark.parametrize(
    ("changes", "field", "expected"),
    [
        ({"scan.startup.mode": "EARLIEST-OFFSET"}, "startup_mode", StartupMode.EARLIEST_OFFSET),
        ({"scan.startup.mode": "Latest-Offset"}, "startup_mode", StartupMode.LATEST_OFFSET),
        ({"scan.bounded.mode": "LATEST-OFFSET"}, "bounded_mode", BoundedMode.LATEST_OFFSET),
        ({"sink.delivery-guarantee": "AT-LEAST-ONCE"}, "delivery_guarantee", "at-least-once"),
        ({"value.fields-include": "except_key"}, "value_fields_include", "EXCEPT_KEY"),
    ],
)
def test_enum_values_ignore_case(changes: dict[str, Any], field: str, expected: Any) -> None:
    base = changed(
        SOURCE, {"scan.startup.mode": "earliest-offset", "scan.startup.specific-offsets": DROP}
    )
    assert getattr(spec(base, changes), field) == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("scan.startup.mode", "earliest_offset"),
        ("scan.bounded.mode", "LATEST_OFFSET"),
        ("sink.delivery-guarantee", "exactly_once"),
        ("value.fields-include", "except-key"),
    ],
)
def test_enum_values_are_their_string_form(key: str, value: str) -> None:
    refused(SINK, {key: value}, (key,), "Allowed values are")


# --- upsert-kafka ----------------------------------------------------------------------------


def test_upsert_source_table() -> None:
    table = spec(UPSERT_SOURCE, {"scan.parallelism": "100"}, role="source")
    assert table.key_fields == UPSERT_KEY
    assert table.startup_mode is StartupMode.EARLIEST_OFFSET
    assert table.scan_parallelism == 100
    assert table.partition_discovery_interval_ms == 1000


def test_upsert_topic_list_naming_one_topic_twice_reads_it_once() -> None:
    table = warned(
        UPSERT_SOURCE,
        {"topic": "source-topic;source-topic"},
        ("topic",),
        "names 'source-topic' more than once",
    )
    assert table.topics == ("source-topic",)


def test_upsert_sink_table() -> None:
    table = spec(
        UPSERT_SINK,
        {
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": "kafka-sink",
            "sink.parallelism": "100",
            "sink.buffer-flush.max-rows": "100",
            "sink.buffer-flush.interval": "1s",
            "sink.transaction-naming-strategy": "POOLING",
        },
        role="sink",
    )
    assert table.sink_buffer_flush_max_rows == 100
    assert table.sink_buffer_flush_interval_ms == 1000
    assert table.sink_parallelism == 100


def test_upsert_sink_topic_list_of_one_topic() -> None:
    table = warned(UPSERT_SINK, {"topic": "sink-topic;sink-topic"}, ("topic",), "read once")
    assert table.for_role("sink").topics == ("sink-topic",)


@pytest.mark.parametrize(
    ("base", "changes", "keys", "fragment", "kw"),
    [
        (
            UPSERT_SOURCE,
            {},
            ("connector",),
            "'upsert-kafka' tables require to define a PRIMARY KEY constraint.",
            {"primary_key": ()},
        ),
        (
            UPSERT_SINK,
            {},
            ("connector",),
            "'upsert-kafka' tables require to define a PRIMARY KEY constraint.",
            {"primary_key": (), "role": "sink"},
        ),
        (
            UPSERT_SINK,
            {"sink.buffer-flush.max-rows": "0", "sink.buffer-flush.interval": "1s"},
            ("sink.buffer-flush.max-rows", "sink.buffer-flush.interval"),
            "'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must be set to be "
            "greater than zero together to enable sink buffer flushing.",
            {"role": "sink"},
        ),
        (
            UPSERT_SINK,
            {"sink.delivery-guarantee": "exactly-once"},
            ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
            "sink.transactional-id-prefix must be specified",
            {"role": "sink"},
        ),
        (
            UPSERT_SOURCE,
            {"scan.bounded.mode": "specific-offsets"},
            ("scan.bounded.specific-offsets", "scan.bounded.mode"),
            "is required in 'specific-offsets' bounded mode but missing.",
            {},
        ),
        (UPSERT_SINK, {"key.format": DROP}, ("key.format",), "requires 'key.format'", {}),
        (UPSERT_SINK, {"value.format": DROP}, ("value.format",), "requires 'value.format'", {}),
        (
            UPSERT_SINK,
            {"value.format": DROP, "format": "json"},
            ("format", "connector"),
            "not supported by the 'upsert-kafka' connector",
            {},
        ),
        (
            UPSERT_SINK,
            {"sink.semantic": "exactly-once", "sink.transactional-id-prefix": "p"},
            ("sink.semantic", "connector"),
            "not supported by the 'upsert-kafka' connector",
            {},
        ),
        (
            UPSERT_SOURCE,
            {"scan.startup.mode": "earliest-offset"},
            ("scan.startup.mode", "connector"),
            "always reads from the earliest offset",
            {},
        ),
        (
            UPSERT_SINK,
            {"key.fields": "region"},
            ("key.fields", "connector"),
            "its key columns are the PRIMARY KEY columns",
            {},
        ),
    ],
)
def test_upsert_refusals(
    base: dict[str, str],
    changes: dict[str, Any],
    keys: tuple[str, ...],
    fragment: str,
    kw: dict[str, Any],
) -> None:
    refused(base, changes, keys, fragment, **kw)


@pytest.mark.parametrize(
    ("mode", "changes"),
    [
        ("specific-offsets", {"scan.bounded.specific-offsets": "partition:0,offset:2"}),
        ("latest-offset", {}),
        ("group-offsets", {"properties.group.id": "dummy"}),
        ("timestamp", {"scan.bounded.timestamp-millis": "1"}),
    ],
)
def test_upsert_bounded_modes(mode: str, changes: dict[str, Any]) -> None:
    table = spec(UPSERT_SOURCE, {"scan.bounded.mode": mode, **changes}, role="source")
    assert table.bounded_mode is BoundedMode(mode)


# --- options Flink ignores where a table is used: accepted with a warning ---------------------


@pytest.mark.parametrize(
    ("base", "changes", "role", "key"),
    [
        # sink options of a table that is only read: Flink never checks them
        (
            SOURCE,
            {"sink.delivery-guarantee": "exactly-once"},
            "source",
            "sink.delivery-guarantee",
        ),
        (KEY_VALUE, {"sink.partitioner": "round-robin"}, "source", "sink.partitioner"),
        (SOURCE, {"sink.partitioner": "no.such.Partitioner"}, "source", "sink.partitioner"),
        (
            SOURCE,
            {"sink.transaction-naming-strategy": "INCREMENTING"},
            "source",
            "sink.transaction-naming-strategy",
        ),
        # scan options of a table that is only written
        (SINK, {"scan.startup.mode": "timestamp"}, "sink", "scan.startup.mode"),
        (SINK, {"scan.bounded.mode": "specific-offsets"}, "sink", "scan.bounded.mode"),
        (SINK, {"scan.parallelism": "4"}, "sink", "scan.parallelism"),
        (SINK, {"properties.group.id": "dummy"}, "sink", "properties.group.id"),
        # upsert: bounded options of the sink, buffer flush of the source
        (UPSERT_SINK, {"scan.bounded.mode": "timestamp"}, "sink", "scan.bounded.mode"),
        (
            UPSERT_SOURCE,
            {"sink.buffer-flush.max-rows": "10"},
            "source",
            "sink.buffer-flush.max-rows",
        ),
    ],
)
def test_options_of_the_other_use_are_accepted_with_a_warning(
    base: dict[str, str], changes: dict[str, Any], role: str, key: str
) -> None:
    other = "sink" if role == "source" else "source"
    word = {"source": "read as a source", "sink": "written as a sink"}
    fragment = f"the table is {word[role]}, and the option applies when a table is {word[other]}"
    warned(base, changes, (key,), fragment, role=role)


@pytest.mark.parametrize(
    ("changes", "keys"),
    [
        (
            {
                "scan.startup.mode": "earliest-offset",
                "scan.startup.specific-offsets": "partition:0,offset:1",
            },
            ("scan.startup.specific-offsets", "scan.startup.mode"),
        ),
        (
            {
                "scan.startup.mode": "group-offsets",
                "scan.startup.timestamp-millis": "1",
                "scan.startup.specific-offsets": DROP,
            },
            ("scan.startup.timestamp-millis", "scan.startup.mode"),
        ),
        (
            {"scan.bounded.timestamp-millis": "5"},
            ("scan.bounded.timestamp-millis", "scan.bounded.mode"),
        ),
        (
            {
                "scan.bounded.mode": "latest-offset",
                "scan.bounded.specific-offsets": "partition:0,offset:5",
            },
            ("scan.bounded.specific-offsets", "scan.bounded.mode"),
        ),
        (  # a string option Flink never parses unless its mode is selected
            {"scan.bounded.specific-offsets": "not offsets"},
            ("scan.bounded.specific-offsets", "scan.bounded.mode"),
        ),
    ],
)
def test_companions_of_a_mode_not_selected_are_accepted_with_a_warning(
    changes: dict[str, Any], keys: tuple[str, ...]
) -> None:
    warned(SOURCE, changes, keys, "has no effect: it is read only when")


def test_sink_semantic_of_a_source_only_says_it_has_no_effect() -> None:
    with pytest.warns(KafkaOptionsWarning) as caught:
        KafkaTableSpec.from_options(changed(SOURCE, {"sink.semantic": "none"}), role="source")
    assert [w.message.keys for w in caught] == [("sink.semantic",)]


def test_a_table_without_a_role_must_be_valid_for_both_uses() -> None:
    # Flink would accept this table as a source; declared without a role it may be written too.
    refused(
        SOURCE,
        {"sink.delivery-guarantee": "exactly-once"},
        ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
        "must be specified",
    )
    refused(
        SINK,
        {"scan.startup.mode": "timestamp"},
        ("scan.startup.timestamp-millis", "scan.startup.mode"),
        "is required in 'timestamp' startup mode",
    )


def test_for_role_checks_the_use_and_warns_about_the_other() -> None:
    table = spec(SOURCE, {"sink.delivery-guarantee": "none"})
    assert table.role is None
    with pytest.warns(KafkaOptionsWarning, match="'sink.delivery-guarantee' of table 't1'"):
        source = table.for_role("source")
    assert source.role == "source" and source.for_role("source") is source
    with pytest.raises(KafkaOptionsError, match="exactly one topic"):
        spec(
            SOURCE,
            {
                "topic": "a;b",
                "scan.startup.mode": "earliest-offset",
                "scan.startup.specific-offsets": DROP,
            },
        ).for_role("sink")
    # a table declared as a source is checked in full when it is written
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KafkaOptionsWarning)
        read_only = KafkaTableSpec.from_options(
            changed(SOURCE, {"sink.delivery-guarantee": "exactly-once"}), role="source"
        )
        with pytest.raises(KafkaOptionsError, match="must be specified"):
            read_only.for_role("sink")


def test_streaming_asset_checks_its_tables_for_their_use() -> None:
    orders = spec(SOURCE, {"sink.delivery-guarantee": "none"}, name="orders")
    out = spec(SINK, {"scan.startup.mode": "earliest-offset", "topic": "out-topic"}, name="out")
    with pytest.warns(KafkaOptionsWarning) as caught:

        @kafka_streaming_asset(sources={"orders": orders}, sink=out, checks=[])
        def revenue(context: Any, orders: Any) -> Any:
            return orders

    keys = {w.message.keys for w in caught if isinstance(w.message, KafkaOptionsWarning)}
    assert ("sink.delivery-guarantee",) in keys and ("scan.startup.mode",) in keys


# --- Flink SQL: an INSERT target is a sink, a table the queries read is a source -------------


def test_flink_sql_tables_are_checked_for_their_use() -> None:
    script = """
        CREATE TABLE src (name STRING) WITH ('connector' = 'kafka', 'topic' = 'a',
            'format' = 'json', 'scan.startup.mode' = 'earliest-offset',
            'sink.delivery-guarantee' = 'none');
        CREATE TABLE mid (name STRING) WITH ('connector' = 'kafka', 'topic' = 'b',
            'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
        CREATE TABLE dst (name STRING) WITH ('connector' = 'kafka', 'topic' = 'c',
            'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
        INSERT INTO mid SELECT name FROM src;
        INSERT INTO dst SELECT name FROM mid;
    """
    with pytest.warns(KafkaOptionsWarning) as caught:
        src, mid, dst, *_ = parse_flink_sql(script)
    assert [t.spec.role for t in (src, mid, dst)] == ["source", "sink", "sink"]
    said = [str(w.message) for w in caught]
    assert any("'sink.delivery-guarantee' of table 'src'" in m for m in said), said
    assert any("'scan.startup.mode' of table 'dst'" in m for m in said), said
    assert not any("of table 'mid'" in m for m in said), said  # read and written
