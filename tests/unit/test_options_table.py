"""Connector options, Flink-factory-test style: one valid options map, change one key, assert."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.options import (
    OPTIONS,
    BoundedMode,
    DeliveryGuarantee,
    KafkaOptionsError,
    KafkaTableSpec,
    StartupMode,
    ValueFieldsInclude,
)

from .test_options_support import BASE, COLUMNS, DROP, build, changed, expect_error

# Shared option maps carry source options into sink tables too: those options are accepted with
# a KafkaOptionsWarning (as Flink ignores them), which these tests do not look at.
pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)


def test_basic_options_map_gives_flink_defaults() -> None:
    spec = build({})
    assert spec.connector == "kafka"
    assert spec.topics == ("orders",)
    assert spec.topic_pattern is None
    assert spec.bootstrap_servers == "localhost:9092"
    assert spec.group_id == "revenue"
    assert spec.value_format.name == "json"
    assert spec.key_format is None
    assert spec.key_fields == ()
    assert spec.value_fields_include is ValueFieldsInclude.ALL
    assert spec.startup_mode is StartupMode.EARLIEST_OFFSET
    assert spec.bounded_mode is BoundedMode.UNBOUNDED
    assert spec.partition_discovery_interval_ms == 300_000
    assert spec.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE
    assert spec.sink_partitioner == "default"
    assert spec.check_duplicated_group_id is False
    assert spec.ignore_errors is False
    assert spec.error_tolerance_max_count == -1
    assert [c.name for c in spec.physical_columns] == ["id", "name", "amount"]
    assert [c.name for c in spec.metadata_columns] == ["ts"]


def test_options_without_columns_and_as_native_python_values() -> None:
    spec = KafkaTableSpec.from_options(
        {**BASE, "scan.check.duplicated.group.id": True, "sink.parallelism": 3}
    )
    assert spec.check_duplicated_group_id is True
    assert spec.sink_parallelism == 3
    assert spec.columns == ()


@pytest.mark.parametrize(
    ("changes", "field", "expected"),
    [
        ({"properties.bootstrap.servers": DROP}, "bootstrap_servers", None),
        ({"properties.group.id": DROP}, "effective_group_id", "KafkaSource-t"),
        ({"topic": "a;b; c"}, "topics", ("a", "b", "c")),
        ({"topic": "a;"}, "topics", ("a",)),
        ({"topic": DROP, "topic-pattern": "orders-.*"}, "topic_pattern", "orders-.*"),
        ({"topic": DROP, "topic-pattern": "orders-.*"}, "topics", ()),
        ({"format": DROP, "value.format": "csv"}, "value_format.name", "csv"),
        (
            {
                "format": DROP,
                "value.format": "raw",
                "key.format": "json",
                "key.fields": "id;name",
                "value.fields-include": "EXCEPT_KEY",
            },
            "value_format.name",
            "raw",
        ),
        ({"scan.startup.mode": "latest-offset"}, "startup_mode", StartupMode.LATEST_OFFSET),
        ({"scan.startup.mode": "LATEST-OFFSET"}, "startup_mode", StartupMode.LATEST_OFFSET),
        ({"scan.startup.mode": "group-offsets"}, "startup_mode", StartupMode.GROUP_OFFSETS),
        ({"scan.startup.mode": DROP}, "startup_mode", StartupMode.GROUP_OFFSETS),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1655395200000"},
            "startup_timestamp_millis",
            1655395200000,
        ),
        (
            {
                "scan.startup.mode": "specific-offsets",
                "scan.startup.specific-offsets": "partition:0,offset:42;partition:1,offset:300",
            },
            "startup_specific_offsets",
            {0: 42, 1: 300},
        ),
        (
            {
                "scan.startup.mode": "specific-offsets",
                "scan.startup.specific-offsets": " partition : 2 , offset : 0 ; ",
            },
            "startup_specific_offsets",
            {2: 0},
        ),
        ({"scan.bounded.mode": "latest-offset"}, "bounded_mode", BoundedMode.LATEST_OFFSET),
        ({"scan.bounded.mode": "group-offsets"}, "bounded_mode", BoundedMode.GROUP_OFFSETS),
        (
            {"scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": "0"},
            "bounded_timestamp_millis",
            0,
        ),
        (
            {
                "scan.bounded.mode": "specific-offsets",
                "scan.bounded.specific-offsets": "partition:0,offset:10",
            },
            "bounded_specific_offsets",
            {0: 10},
        ),
        (
            {"scan.topic-partition-discovery.interval": "10 s"},
            "partition_discovery_interval_ms",
            10_000,
        ),
        (
            {"scan.topic-partition-discovery.interval": "0"},
            "partition_discovery_interval_ms",
            None,
        ),
        (
            {"scan.topic-partition-discovery.interval": "-1 min"},
            "partition_discovery_interval_ms",
            None,
        ),
        (
            {"scan.header-filter": "depart:toy|depart:book&!env:test"},
            "header_filter",
            "depart:toy|depart:book&!env:test",
        ),
        ({"scan.check.duplicated.group.id": "TRUE"}, "check_duplicated_group_id", True),
        ({"sink.partitioner": "fixed"}, "sink_partitioner", "fixed"),
        ({"sink.partitioner": "round-robin"}, "sink_partitioner", "round-robin"),
        (
            {"sink.partitioner": "tests.unit.test_partitioners.ByValueParity"},
            "sink_partitioner",
            "tests.unit.test_partitioners.ByValueParity",
        ),
        ({"sink.delivery-guarantee": "none"}, "delivery_guarantee", DeliveryGuarantee.NONE),
        (
            {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "tx"},
            "delivery_guarantee",
            DeliveryGuarantee.EXACTLY_ONCE,
        ),
        ({"sink.semantic": "at-least-once"}, "delivery_guarantee", DeliveryGuarantee.AT_LEAST_ONCE),
        ({"sink.semantic": "none"}, "delivery_guarantee", DeliveryGuarantee.NONE),
        (
            {"sink.semantic": "EXACTLY_ONCE", "sink.transactional-id-prefix": "tx"},
            "delivery_guarantee",
            DeliveryGuarantee.EXACTLY_ONCE,
        ),
        (
            {"sink.semantic": "exactly_once", "sink.transactional-id-prefix": "tx"},
            "delivery_guarantee",
            DeliveryGuarantee.EXACTLY_ONCE,
        ),
        ({"sink.semantic": "AT_LEAST_ONCE"}, "delivery_guarantee", DeliveryGuarantee.AT_LEAST_ONCE),
        (
            {"sink.semantic": "none", "sink.delivery-guarantee": "none"},
            "delivery_guarantee",
            DeliveryGuarantee.NONE,
        ),
        ({"sink.transactional-id-prefix": "tx"}, "transactional_id_prefix", "tx"),
        ({"sink.parallelism": "4"}, "sink_parallelism", 4),
        ({"sink.parallelism": " 4 "}, "sink_parallelism", 4),
        ({"ingestion.ignore-errors": "true"}, "ignore_errors", True),
        ({"ingestion.error-tolerance.max-count": "1000"}, "error_tolerance_max_count", 1000),
        ({"ingestion.error-tolerance.max-count": "0"}, "error_tolerance_max_count", 0),
        (
            {"value.fields-include": "except_key"},
            "value_fields_include",
            ValueFieldsInclude.EXCEPT_KEY,
        ),
        ({"key.format": "json", "key.fields": "id"}, "key_fields", ("id",)),
        ({"key.format": "json", "key.fields": "id;name"}, "key_fields", ("id", "name")),
        ({"key.format": "raw", "key.fields": "name"}, "key_format.name", "raw"),
        ({"properties.commit.offsets.on.checkpoint": "false"}, "commit_offsets", False),
        ({}, "commit_offsets", True),
        ({"properties.client.id.prefix": "job-"}, "client_id_prefix", "job-"),
    ],
)
def test_valid_changes(changes: dict[str, Any], field: str, expected: Any) -> None:
    value: Any = build(changes)
    for part in field.split("."):
        value = getattr(value, part)
    assert value == expected


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        ({"connector": DROP}, ("connector",), "'connector' must be 'kafka' or 'upsert-kafka'"),
        ({"connector": "filesystem"}, ("connector",), "got 'filesystem'"),
        ({"connector": "Kafka"}, ("connector",), "got 'Kafka'"),
        ({"topic": DROP}, ("topic", "topic-pattern"), "Either 'topic' or 'topic-pattern'"),
        ({"topic": " ; "}, ("topic",), "names no topic"),
        ({"topic": "has space"}, ("topic",), "invalid Kafka topic"),
        ({"topic": "a" * 250}, ("topic",), "1 to 249 characters"),
        ({"topic": ".."}, ("topic",), "invalid Kafka topic"),
        ({"topic-pattern": "o.*"}, ("topic", "topic-pattern"), "shouldn't be set together"),
        (
            {"topic": DROP, "topic-pattern": "(unclosed"},
            ("topic-pattern",),
            "not a valid regular expression",
        ),
        ({"format": DROP}, ("format", "value.format"), "One of 'format' or 'value.format'"),
        ({"format": "avro-confluent"}, ("avro-confluent.url",), "needs the Schema Registry's URL"),
        (
            {"format": "protobuf"},
            ("protobuf.message-class-name",),
            "Format 'protobuf' requires 'protobuf.message-class-name': the message to read and "
            "write (e.g. 'shop.Order').",
        ),
        ({"format": "xml"}, ("format",), "Unsupported value for option 'format': 'xml'"),
        (
            {"format": DROP, "value.format": "protobuf", "value.protobuf.message-class-name": "X"},
            ("protobuf.descriptor-file",),
            "Format 'protobuf' requires 'protobuf.descriptor-file'",
        ),
        (
            {"key.format": "debezium-json", "key.fields": "id"},
            ("key.format",),
            "a key format must be insert-only",
        ),
        ({"key.format": "xml", "key.fields": "id"}, ("key.format",), "Supported formats"),
        ({"key.fields": "id"}, ("key.fields", "key.format"), "can only be declared if a key"),
        ({"key.format": "json"}, ("key.format", "key.fields"), "requires the declaration"),
        ({"key.format": "json", "key.fields": " ; "}, ("key.format", "key.fields"), "key fields"),
        ({"key.format": "json", "key.fields": "nope"}, ("key.fields",), "Could not find"),
        ({"key.format": "json", "key.fields": "ts"}, ("key.fields",), "regular, physical"),
        ({"key.format": "json", "key.fields": "id;id"}, ("key.fields",), "names a column twice"),
        ({"key.format": "raw", "key.fields": "id;name"}, ("key.format",), "single physical"),
        ({"format": "raw"}, ("format",), "would carry 3: id, name, amount"),
        (
            {"key.fields-prefix": "k_"},
            ("key.fields-prefix", "value.fields-include"),
            "Set it to 'EXCEPT_KEY'",
        ),
        (
            {
                "key.format": "json",
                "key.fields": "id",
                "key.fields-prefix": "k_",
                "value.fields-include": "EXCEPT_KEY",
            },
            ("key.fields", "key.fields-prefix"),
            "must be prefixed with 'k_'",
        ),
        ({"value.fields-prefix": "v_"}, ("value.fields-prefix",), "must be prefixed with 'v_'"),
        ({"value.fields-include": "NONE"}, ("value.fields-include",), "'ALL', 'EXCEPT_KEY'"),
        ({"scan.startup.mode": "earliest"}, ("scan.startup.mode",), "'earliest-offset'"),
        (
            {"scan.startup.mode": "timestamp"},
            ("scan.startup.timestamp-millis", "scan.startup.mode"),
            "'scan.startup.timestamp-millis' is required in 'timestamp' startup mode but missing.",
        ),
        (
            {"scan.startup.mode": "specific-offsets"},
            ("scan.startup.specific-offsets", "scan.startup.mode"),
            "is required in 'specific-offsets' startup mode",
        ),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "soon"},
            ("scan.startup.timestamp-millis",),
            "expects an integer (Long)",
        ),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "-5"},
            ("scan.startup.timestamp-millis",),
            "must be >= 0",
        ),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1.5"},
            ("scan.startup.timestamp-millis",),
            "expects an integer",
        ),
        (
            {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "9" * 20},
            ("scan.startup.timestamp-millis",),
            "expects an integer",
        ),
        (
            {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "0:42"},
            ("scan.startup.specific-offsets",),
            "should follow the format",
        ),
        (
            {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": ";"},
            ("scan.startup.specific-offsets",),
            "names no partition",
        ),
        (
            {
                "scan.startup.mode": "specific-offsets",
                "scan.startup.specific-offsets": "partition:-1,offset:1",
            },
            ("scan.startup.specific-offsets",),
            "should follow the format",
        ),
        (
            {
                "scan.startup.mode": "specific-offsets",
                "scan.startup.specific-offsets": "partition:0,offset:1",
                "topic": "a;b",
            },
            ("scan.startup.mode", "topic"),
            "specific offset for single topic",
        ),
        ({"scan.bounded.mode": "forever"}, ("scan.bounded.mode",), "'unbounded'"),
        (
            {"scan.bounded.mode": "timestamp"},
            ("scan.bounded.timestamp-millis", "scan.bounded.mode"),
            "is required in 'timestamp' bounded mode but missing.",
        ),
        (
            {"scan.bounded.mode": "specific-offsets"},
            ("scan.bounded.specific-offsets", "scan.bounded.mode"),
            "bounded mode",
        ),
        (
            {
                "scan.bounded.mode": "specific-offsets",
                "topic": DROP,
                "topic-pattern": "x.*",
                "scan.bounded.specific-offsets": "partition:0,offset:5",
            },
            ("scan.bounded.mode", "topic"),
            "single topic",
        ),
        (
            {"scan.topic-partition-discovery.interval": "often"},
            ("scan.topic-partition-discovery.interval",),
            "expects a duration",
        ),
        (
            {"scan.topic-partition-discovery.interval": "5 fortnights"},
            ("scan.topic-partition-discovery.interval",),
            "'10 s', '5 min'",
        ),
        ({"scan.header-filter": "depart"}, ("scan.header-filter",), "'key:value' conditions"),
        (
            {"scan.header-filter": "(a:b|c:d)&e:f"},
            ("scan.header-filter",),
            "parentheses are not supported",
        ),
        ({"scan.header-filter": "a:b||c:d"}, ("scan.header-filter",), "'key:value' conditions"),
        ({"scan.header-filter": ""}, ("scan.header-filter",), "'key:value' conditions"),
        (
            {"scan.check.duplicated.group.id": "yes"},
            ("scan.check.duplicated.group.id",),
            "expects 'true' or 'false'",
        ),
        (
            {"scan.check.duplicated.group.id": "1"},
            ("scan.check.duplicated.group.id",),
            "expects 'true' or 'false'",
        ),
        ({"sink.partitioner": ""}, ("sink.partitioner",), "non-empty string"),
        ({"sink.partitioner": "murmur"}, ("sink.partitioner",), "dotted class path"),
        ({"sink.partitioner": "mypkg.parts.ByRegion"}, ("sink.partitioner",), "mypkg"),
        (
            {"sink.partitioner": "round-robin", "key.format": "json", "key.fields": "id"},
            ("sink.partitioner", "key.fields"),
            "'round-robin' partitioner only works",
        ),
        (
            {"sink.delivery-guarantee": "exactly-once"},
            ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
            "sink.transactional-id-prefix must be specified",
        ),
        (
            {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": " "},
            ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
            "must be specified",
        ),
        (
            {"sink.semantic": "exactly-once"},
            ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
            "must be specified",
        ),
        (
            {"sink.delivery-guarantee": "exactly_once"},
            ("sink.delivery-guarantee",),
            "'none', 'at-least-once', 'exactly-once'",
        ),
        ({"sink.delivery-guarantee": "once"}, ("sink.delivery-guarantee",), "Allowed values"),
        ({"sink.semantic": "twice"}, ("sink.semantic",), "Invalid value for option"),
        ({"sink.parallelism": "0"}, ("sink.parallelism",), "must be >= 1"),
        ({"sink.parallelism": "two"}, ("sink.parallelism",), "expects an integer (Integer)"),
        ({"sink.parallelism": str(2**31)}, ("sink.parallelism",), "expects an integer"),
        ({"ingestion.ignore-errors": "on"}, ("ingestion.ignore-errors",), "'true' or 'false'"),
        (
            {"ingestion.error-tolerance.max-count": "-2"},
            ("ingestion.error-tolerance.max-count",),
            "-1 (no limit) or >= 0",
        ),
        (
            {"ingestion.error-tolerance.max-count": "lots"},
            ("ingestion.error-tolerance.max-count",),
            "expects an integer",
        ),
        (
            {"sink.buffer-flush.max-rows": "10"},
            ("sink.buffer-flush.max-rows", "connector"),
            "not supported by the 'kafka' connector",
        ),
        (
            {"sink.buffer-flush.interval": "1 s"},
            ("sink.buffer-flush.interval", "connector"),
            "not supported by the 'kafka' connector",
        ),
    ],
)
def test_invalid_changes(changes: dict[str, Any], keys: tuple[str, ...], fragment: str) -> None:
    expect_error(changes, keys, fragment)


def test_exact_message_for_missing_timestamp() -> None:
    err = expect_error(
        {"scan.startup.mode": "timestamp"},
        ("scan.startup.timestamp-millis", "scan.startup.mode"),
        "",
    )
    assert str(err) == (
        "'scan.startup.timestamp-millis' is required in 'timestamp' startup mode but missing."
    )


def test_exact_message_for_unknown_key() -> None:
    err = expect_error({"scan.startup.mod": "latest-offset"}, ("scan.startup.mod",), "")
    assert str(err) == (
        "Unsupported option(s): 'scan.startup.mod' (did you mean 'scan.startup.mode'?). See "
        "docs/options.md for the supported options; Kafka client settings go under "
        "'properties.*'."
    )


def _typos() -> list[tuple[str, str]]:
    cases = []
    for option in OPTIONS:
        if option.prefix or option.key.startswith("properties."):
            continue
        key = option.key
        cases.append((key[:-1], key))  # dropped last character
        cases.append((key.replace("-", "_", 1) if "-" in key else key + "s", key))
        cases.append((key.upper(), key) if key != key.upper() else (key + "x", key))
    return cases


@pytest.mark.parametrize(("typo", "meant"), _typos())
def test_unknown_key_suggests_the_declared_one(typo: str, meant: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        build({typo: "x"})
    assert info.value.keys == (typo,)
    assert f"'{typo}'" in str(info.value)
    if typo.lower() != typo or len(meant) > 6:
        assert "did you mean" in str(info.value)


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("scan.value.initial-schemas.ddls", "multi-table data-ingestion"),
        ("metadata.list", "METADATA FROM"),
        ("partition.strategy", "sink.partitioner"),
        ("sink.tableId-to-topic.mapping", "one table per topic"),
        ("type", "use 'connector'"),
    ],
)
def test_documented_but_unsupported_options_say_why(key: str, reason: str) -> None:
    expect_error({key: "1"}, (key,), reason)


def test_several_unknown_keys_are_reported_together() -> None:
    expect_error({"a": "1", "b": "2"}, ("a", "b"), "'a', 'b'")


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ([("connector", "kafka")], "must be a mapping"),
        ({1: "x"}, "keys must be strings"),
        ({**BASE, "topic": ["a"]}, "must be a string, number or boolean"),
        ({**BASE, "topic": None}, "must be a string, number or boolean"),
    ],
)
def test_malformed_options_container(options: Any, fragment: str) -> None:
    with pytest.raises(KafkaOptionsError, match=fragment):
        KafkaTableSpec.from_options(options)


def test_role_must_be_known() -> None:
    with pytest.raises(KafkaOptionsError, match="role must be"):
        KafkaTableSpec.from_options(BASE, role="both")


@pytest.mark.parametrize(
    ("changes", "keys"),
    [
        ({"topic": "a;b"}, ("topic",)),
        ({"topic": DROP, "topic-pattern": "a.*"}, ("topic-pattern",)),
    ],
)
def test_sink_needs_exactly_one_topic(changes: dict[str, Any], keys: tuple[str, ...]) -> None:
    build(changes, role="source")
    build(changes)
    expect_error(changes, keys, "exactly one topic", role="sink")


def test_sink_role_is_recorded() -> None:
    assert build({}, role="sink").role == "sink"
    assert build({}).role is None


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("0", 0),
        ("100", 100),
        ("100ms", 100),
        ("100 ms", 100),
        ("1 s", 1000),
        ("1s", 1000),
        ("2 sec", 2000),
        ("3 secs", 3000),
        ("1 second", 1000),
        ("5 seconds", 5000),
        ("1 min", 60_000),
        ("2 mins", 120_000),
        ("1 m", 60_000),
        ("1 minute", 60_000),
        ("1 h", 3_600_000),
        ("2 hours", 7_200_000),
        ("1 d", 86_400_000),
        ("2 days", 172_800_000),
        ("1500 us", 1),
        ("1500 µs", 1),
        ("2000000 ns", 2),
        ("1 milli", 1),
        ("7 millis", 7),
        ("10 S", 10_000),
        ("10 MIN", 600_000),
        (" 10 s ", 10_000),
        ("+5 s", 5000),
        ("-1", -1),
        ("-1 s", -1000),
    ],
)
def test_durations(text: str, millis: int) -> None:
    spec = build({"scan.topic-partition-discovery.interval": text})
    assert spec.partition_discovery_interval_ms == (millis if millis > 0 else None)


@pytest.mark.parametrize(
    "text", ["", "s", "1.5 s", "1 fortnight", "ten s", "1 s 2", "PT5M", "1e3", "9" * 25]
)
def test_bad_durations(text: str) -> None:
    expect_error(
        {"scan.topic-partition-discovery.interval": text},
        ("scan.topic-partition-discovery.interval",),
        "duration",
    )


@pytest.mark.parametrize("text", ["true", "false", "TRUE", "False", " true "])
def test_booleans(text: str) -> None:
    assert build({"ingestion.ignore-errors": text}).ignore_errors is (
        text.strip().lower() == "true"
    )


@pytest.mark.parametrize("text", ["1", "0", "yes", "no", "t", "", "truthy", "on"])
def test_bad_booleans(text: str) -> None:
    expect_error({"ingestion.ignore-errors": text}, ("ingestion.ignore-errors",), "'true'")


def test_spec_is_frozen_picklable_and_comparable() -> None:
    import pickle

    spec = build({"key.format": "json", "key.fields": "id"})
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert isinstance(spec.options, dict) and isinstance(spec.properties, dict)
    with pytest.raises(AttributeError):
        spec.topics = ("x",)  # type: ignore[misc]
    assert build({}) == KafkaTableSpec.from_options(changed(BASE, {}), columns=COLUMNS, name="t")


def _exactly_once_sink(**extra: str) -> dict[str, str]:
    return {
        "connector": "kafka",
        "topic": "out",
        "format": "json",
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": "p",
        **extra,
    }


def test_sink_transaction_scope_is_run_unless_split_is_asked() -> None:
    from dagster_kafka_flinklike.options import KafkaTableSpec, TransactionScope

    plain = KafkaTableSpec.from_options(_exactly_once_sink(), columns=COLUMNS, role="sink")
    assert plain.transaction_scope is TransactionScope.RUN
    split = KafkaTableSpec.from_options(
        _exactly_once_sink(**{"sink.transaction-scope": "SPLIT"}), columns=COLUMNS, role="sink"
    )
    assert split.transaction_scope is TransactionScope.SPLIT


def test_sink_transaction_scope_refuses_other_values_and_warns_without_exactly_once() -> None:
    from dagster_kafka_flinklike.errors import KafkaOptionsError, KafkaOptionsWarning
    from dagster_kafka_flinklike.options import KafkaTableSpec

    with pytest.raises(KafkaOptionsError) as raised:
        KafkaTableSpec.from_options(
            _exactly_once_sink(**{"sink.transaction-scope": "task"}), columns=COLUMNS, role="sink"
        )
    assert raised.value.keys == ("sink.transaction-scope",)
    options = {**_exactly_once_sink(**{"sink.transaction-scope": "split"})}
    options["sink.delivery-guarantee"] = "at-least-once"
    del options["sink.transactional-id-prefix"]
    with pytest.warns(KafkaOptionsWarning, match="has no effect") as caught:
        KafkaTableSpec.from_options(options, columns=COLUMNS, role="sink")
    assert [w.message.keys for w in caught] == [("sink.transaction-scope",)]
