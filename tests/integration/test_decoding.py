"""Decoding records read from the real broker: header filter, metadata columns, key/value layouts.

Records are produced with known keys, values, headers and timestamps, read back with
``read_splits`` over the topic's whole offset range and decoded with ``decode_records``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.options import client_config, parse_header_filter
from dagster_kafka_flinklike.source.enumerator import KafkaSplit
from dagster_kafka_flinklike.source.reader import read_splits
from dagster_kafka_flinklike.source.records import (
    DIRTY_COLUMNS,
    ERROR,
    PARTIAL,
    PROVENANCE,
    TOLERATED,
    decode_records,
    exact_columns,
    native_columns,
    record_fields,
)

UTC = dt.UTC


def send(bootstrap: str, topic: str, records: Sequence[dict[str, Any]]) -> None:
    """Produce records given as dicts of key, value, partition, headers, timestamp (ms)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[str] = []
    for record in records:
        producer.produce(
            topic,
            value=record.get("value"),
            key=record.get("key"),
            partition=record.get("partition", 0),
            headers=record.get("headers"),
            timestamp=record.get("timestamp", 0),
            on_delivery=lambda err, _msg: failures.append(str(err)) if err else None,
        )
    assert producer.flush(30) == 0
    assert not failures, failures


def table(
    topic: str, bootstrap: str, options: dict[str, str], columns: list[dict[str, Any]], **kw: Any
) -> KafkaTableSpec:
    """A source table over ``topic`` with the given extra options and columns."""
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "scan.startup.mode": "earliest-offset",
            **options,
        },
        columns=columns,
        role="source",
        **kw,
    )


def read_table(spark: Any, spec: KafkaTableSpec, native: bool = True) -> Any:
    """``decode_records`` over every record of the table's topics (splits built here), with the
    formats' native decoding and exactness passes in the reading tasks as a run has them
    (unless not ``native``: the passes only; no raw field shed)."""
    return decode_records(spec, raw_records(spark, spec, native))


def raw_records(spark: Any, spec: KafkaTableSpec, native: bool = True) -> Any:
    """The raw records :func:`read_table` decodes."""
    consumer = Consumer({"bootstrap.servers": spec.bootstrap_servers, "group.id": "decoding"})
    splits = []
    try:
        for topic in spec.topics:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            for p in sorted(partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                splits.append(KafkaSplit(topic, p, low, high))
    finally:
        consumer.close()
    natives = native_columns(spec) if native else ()
    return read_splits(
        spark,
        splits,
        client_config(spec.properties),
        record_fields(spec),
        derived=(*natives, *exact_columns(spec, {d.name for d in natives})),
    )


def rows(spark: Any, spec: KafkaTableSpec, native: bool = True) -> list[dict[str, Any]]:
    """Decoded rows as dicts, ordered by partition and offset."""
    decoded = read_table(spark, spec, native).orderBy("__dkf_partition", "__dkf_offset")
    return [r.asDict(recursive=True) for r in decoded.collect()]


def physical(row: dict[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(row[n] for n in names)


# --------------------------------------------------------------------------------------------
# Header filter


HEADERED: list[list[tuple[str, bytes | None]] | None] = [
    [("depart", b"toy")],  # 0 kept
    [("depart", b"book"), ("env", b"test")],  # 1 env=test
    [("depart", b"book")],  # 2 kept
    None,  # 3 no headers
    [("env", b"test")],  # 4
    [("depart", b"food"), ("depart", b"toy")],  # 5 kept: any header of the key may match
    [("depart", b"Toy")],  # 6 bytes differ
    [("depart", b"toy"), ("env", b"prod")],  # 7 kept
    [("depart", None)],  # 8 a header without value
    [("depart", b"toy"), ("env", b"prod"), ("env", b"test")],  # 9 one env=test excludes it
    [("depart", b"toy")],  # 10 kept, malformed value: dirty
    [("env", b"test")],  # 11 malformed value, filtered out before decoding
]


def test_header_filter_keeps_exactly_the_matching_records(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic = new_topic(partitions=1)
    records = [
        {"value": json.dumps({"n": i}).encode(), "headers": headers}
        for i, headers in enumerate(HEADERED)
    ]
    records[10]["value"] = records[11]["value"] = b"{not json"
    send(kafka_bootstrap, topic, records)
    columns = [{"name": "n", "type": "INT"}]

    spec = table(topic, kafka_bootstrap, {"format": "json", "scan.header-filter": SEED}, columns)
    assert "headers" in record_fields(spec)
    got = rows(spark, spec)
    assert [r["__dkf_offset"] for r in got] == [0, 2, 5, 7, 10]
    expected = [i for i, h in enumerate(HEADERED) if parse_header_filter(SEED).matches(h or [])]
    assert [r["__dkf_offset"] for r in got] == expected
    assert [r["n"] for r in got if r[ERROR] is None] == [0, 2, 5, 7]
    assert got[-1][ERROR].startswith("value (json): malformed JSON")

    negated = table(
        topic, kafka_bootstrap, {"format": "json", "scan.header-filter": "!env:test"}, columns
    )
    assert [r["__dkf_offset"] for r in rows(spark, negated)] == [0, 2, 3, 5, 6, 7, 8, 10]

    unfiltered = table(topic, kafka_bootstrap, {"format": "json"}, columns)
    assert "headers" not in record_fields(unfiltered)
    assert len(rows(spark, unfiltered)) == len(HEADERED)


SEED = "depart:toy|depart:book&!env:test"


# --------------------------------------------------------------------------------------------
# Metadata columns

METADATA_COLUMNS = [
    {"name": "id", "type": "INT"},
    {"name": "topic", "type": "STRING NOT NULL", "metadata_key": "topic", "virtual": True},
    {"name": "part", "type": "INT NOT NULL", "metadata_key": "partition", "virtual": True},
    {"name": "off", "type": "BIGINT NOT NULL", "metadata_key": "offset", "virtual": True},
    {"name": "ts", "type": "TIMESTAMP_LTZ(3) NOT NULL", "metadata_key": "timestamp"},
    {"name": "ts_type", "type": "STRING NOT NULL", "metadata_key": "timestamp-type"},
    {"name": "hdrs", "type": "MAP<STRING, BYTES> NOT NULL", "metadata_key": "headers"},
    {"name": "epoch", "type": "INT", "metadata_key": "leader-epoch", "virtual": True},
    {"name": "raw_key", "type": "BYTES", "metadata_key": "__raw_key__"},
    {"name": "raw_value", "type": "STRING NOT NULL", "metadata_key": "__raw_value__"},
    {"name": "day", "expression": "CAST(ts AS DATE)"},
]


def test_metadata_columns_with_create_time(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=2)
    base = 1_700_000_000_123
    records = [
        {
            "key": f"k{i}".encode(),
            "value": json.dumps({"id": i}).encode(),
            "partition": i % 2,
            "timestamp": base + i * 86_400_000,
            "headers": [
                ("h", f"first{i}".encode()),
                ("x", b"\x00\xff"),
                ("h", f"last{i}".encode()),
            ],
        }
        for i in range(4)
    ]
    records.append({"key": None, "value": b'{"id": 4}', "partition": 1, "timestamp": base})
    send(kafka_bootstrap, topic, records)
    spec = table(topic, kafka_bootstrap, {"format": "json"}, METADATA_COLUMNS)
    assert set(record_fields(spec)) == {
        "key", "value", "topic", "partition", "offset", "timestamp", "timestamp-type",
        "headers", "leader-epoch", "timestamp-error",
    }  # fmt: skip
    decoded = read_table(spark, spec)
    assert decoded.columns == [
        *(c["name"] for c in METADATA_COLUMNS),
        *DIRTY_COLUMNS,
        *PROVENANCE,
    ]
    assert dict(decoded.dtypes)["hdrs"] == "map<string,binary>"
    assert dict(decoded.dtypes)["ts"] == "timestamp"
    got = sorted(rows(spark, spec), key=lambda r: r["id"])
    offsets = {0: 0, 1: 0, 2: 1, 3: 1, 4: 2}
    for i, row in enumerate(got):
        stamp = base + i * 86_400_000 if i < 4 else base
        assert row["id"] == i
        assert row["topic"] == topic
        assert row["part"] == (i % 2 if i < 4 else 1)
        assert row["off"] == offsets[i] == row["__dkf_offset"]
        instant = dt.datetime.fromtimestamp(stamp / 1000, UTC)
        assert row["ts"] == instant.astimezone().replace(tzinfo=None)  # PySpark: local time
        assert row["__dkf_timestamp"] == row["ts"]
        assert row["day"] == instant.date()  # the session time zone is UTC
        assert row["ts_type"] == "CreateTime"
        assert row["epoch"] == 0
        assert row["raw_value"] == json.dumps({"id": i}) if i < 4 else '{"id": 4}'
        assert row["__dkf_value"] == row["raw_value"].encode()
        assert row[ERROR] is None and row[TOLERATED] is False
        if i < 4:
            assert row["hdrs"] == {"h": f"last{i}".encode(), "x": b"\x00\xff"}
            assert row["raw_key"] == row["__dkf_key"] == f"k{i}".encode()
        else:
            assert row["hdrs"] == {}
            assert row["raw_key"] is None and row["__dkf_key"] is None


def test_metadata_columns_with_log_append_time(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    before = dt.datetime.now(UTC).replace(tzinfo=None) - dt.timedelta(seconds=1)
    send(kafka_bootstrap, topic, [{"value": b"a", "timestamp": 1_000}, {"value": b"b"}])
    after = dt.datetime.now(UTC).replace(tzinfo=None) + dt.timedelta(seconds=1)
    columns = [
        {"name": "v", "type": "STRING"},
        {"name": "ts", "type": "TIMESTAMP(3)", "metadata_key": "timestamp"},
        {"name": "ts_type", "type": "STRING", "metadata_key": "timestamp-type", "virtual": True},
        {"name": "headers", "type": "MAP<STRING, STRING>", "metadata_key": "headers"},
        {"name": "raw", "type": "STRING", "metadata_key": "__raw_value__", "virtual": True},
    ]
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "raw"}, columns))
    assert [r["v"] for r in got] == ["a", "b"] == [r["raw"] for r in got]
    assert [r["ts_type"] for r in got] == ["LogAppendTime", "LogAppendTime"]
    for row in got:  # the broker's append time, not the 1970 time the producer set
        assert before <= row["ts"] <= after
        assert row["headers"] == {}


# --------------------------------------------------------------------------------------------
# Key and value layouts (the seeds' examples)


def test_value_only_json_with_metadata_timestamp(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {"value": b'{"user_id": 1, "item_id": 10, "behavior": "buy"}', "timestamp": 5_000},
            {"value": b'{"user_id": "x"}'},
        ],
    )
    spec = table(
        topic,
        kafka_bootstrap,
        {"format": "json", "json.ignore-parse-errors": "true"},
        [
            {"name": "ts", "type": "TIMESTAMP(3)", "metadata_key": "timestamp"},
            {"name": "user_id", "type": "BIGINT"},
            {"name": "item_id", "type": "BIGINT"},
            {"name": "behavior", "type": "STRING"},
        ],
    )
    got = rows(spark, spec)
    assert physical(got[0], ["ts", "user_id", "item_id", "behavior"]) == (
        dt.datetime(1970, 1, 1, 0, 0, 5),
        1,
        10,
        "buy",
    )
    assert got[1][ERROR] == "value (json): field 'user_id': 'x' is not a valid BIGINT"
    assert got[1][TOLERATED] is True
    # As Flink under 'json.ignore-parse-errors': the row stays, the field that failed null.
    assert got[1][PARTIAL] is True
    assert physical(got[1], ["user_id", "item_id", "behavior"]) == (None, None, None)


USER_COLUMNS = [
    {"name": "user_id", "type": "BIGINT"},
    {"name": "item_id", "type": "BIGINT"},
    {"name": "behavior", "type": "STRING"},
]


def test_json_key_and_value_with_all_fields_in_value(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {
                "key": b'{"user_id": 1, "item_id": 2}',
                "value": b'{"user_id": 1, "item_id": 2, "behavior": "buy"}',
            },
            # With ALL the value carries the key fields too, and its values are the row's.
            {
                "key": b'{"user_id": 99, "item_id": 98}',
                "value": b'{"user_id": 3, "item_id": 4, "behavior": "cart"}',
            },
            {"key": b"{oops", "value": b'{"user_id": 5, "item_id": 6, "behavior": "pv"}'},
        ],
    )
    options = {
        "key.format": "json",
        "key.json.ignore-parse-errors": "true",
        "key.fields": "user_id;item_id",
        "value.format": "json",
        "value.json.fail-on-missing-field": "false",
        "value.fields-include": "ALL",
    }
    got = rows(spark, table(topic, kafka_bootstrap, options, USER_COLUMNS))
    names = ["user_id", "item_id", "behavior"]
    assert [physical(r, names) for r in got[:2]] == [(1, 2, "buy"), (3, 4, "cart")]
    assert got[2][ERROR] == "key (json): malformed JSON: {oops"
    assert got[2][TOLERATED] is True  # tolerated by 'key.json.ignore-parse-errors'
    assert got[2][PARTIAL] is False  # malformed: as Flink, no key row, so no row at all
    # Both sides of the clean records decoded natively: their raw value is not carried on,
    # only its size. The dirty record (its key) keeps its value for samples and dead letters.
    assert [r["__dkf_value"] for r in got[:2]] == [None, None]
    assert got[2]["__dkf_value"] == b'{"user_id": 5, "item_id": 6, "behavior": "pv"}'
    assert [r["__dkf_value_bytes"] for r in got] == [47, 48, 46]
    strict = {**options, "key.json.ignore-parse-errors": "false"}
    assert rows(spark, table(topic, kafka_bootstrap, strict, USER_COLUMNS))[2][TOLERATED] is False


def test_key_fields_prefix_with_except_key(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {
                "key": b'{"version": 1, "user_id": 2, "item_id": 3}',
                "value": b'{"version": 7, "behavior": "buy"}',
            }
        ],
    )
    columns = [
        {"name": "k_version", "type": "INT"},
        {"name": "k_user_id", "type": "BIGINT"},
        {"name": "k_item_id", "type": "BIGINT"},
        {"name": "version", "type": "INT"},
        {"name": "behavior", "type": "STRING"},
    ]
    options = {
        "key.format": "json",
        "key.fields-prefix": "k_",
        "key.fields": "k_version;k_user_id;k_item_id",
        "value.format": "json",
        "value.fields-include": "EXCEPT_KEY",
        "value.json.fail-on-missing-field": "true",
    }
    (row,) = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert physical(row, [c["name"] for c in columns]) == (1, 2, 3, 7, "buy")
    assert row[ERROR] is None


def test_key_and_value_prefixes(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"key": b'{"id": 5}', "value": b'{"name": "flink"}'}])
    options = {
        "key.format": "json",
        "value.format": "json",
        "key.fields": "key_id",
        "key.fields-prefix": "key_",
        "value.fields-prefix": "val_",
        "value.fields-include": "EXCEPT_KEY",
    }
    columns = [
        {"name": "key_id", "type": "INT NOT NULL"},
        {"name": "val_name", "type": "VARCHAR(200)"},
    ]
    (row,) = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert (row["key_id"], row["val_name"]) == (5, "flink")


def test_raw_key_with_json_value(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {"key": b"webShop", "value": b'{"order_count": 3, "revenue": "100.00"}'},
            {"key": "appShop ü".encode(), "value": b'{"order_count": 1, "revenue": 5}'},
            {"key": None, "value": b'{"order_count": 2, "revenue": 1.5}'},
        ],
    )
    columns = [
        {"name": "order_channel", "type": "STRING"},
        {"name": "order_count", "type": "BIGINT"},
        {"name": "revenue", "type": "DOUBLE"},
    ]
    options = {
        "key.format": "raw",
        "key.fields": "order_channel",
        "value.format": "json",
        "value.fields-include": "EXCEPT_KEY",
    }
    got = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert [physical(r, ["order_channel", "order_count", "revenue"]) for r in got] == [
        ("webShop", 3, 100.0),
        ("appShop ü", 1, 5.0),
        (None, 2, 1.5),
    ]


def test_null_values_yield_no_row_except_in_upsert_tables(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {"key": b'{"id": 1}', "value": b'{"id": 1, "name": "a"}'},
            {"key": b'{"id": 1}', "value": None},
            {"key": b'{"id": 2}', "value": b"null"},
        ],
    )
    columns = [{"name": "id", "type": "INT NOT NULL"}, {"name": "name", "type": "STRING"}]
    plain = table(topic, kafka_bootstrap, {"format": "json"}, columns)
    assert [(r["__dkf_offset"], r["id"]) for r in rows(spark, plain)] == [(0, 1)]
    upsert = KafkaTableSpec.from_options(
        {
            "connector": "upsert-kafka",
            "topic": topic,
            "properties.bootstrap.servers": kafka_bootstrap,
            "key.format": "json",
            "value.format": "json",
        },
        columns=columns,
        primary_key=["id"],
        role="source",
    )
    got = rows(spark, upsert)
    # A null value is the deletion of its key: value columns null, key columns from the key.
    # A JSON 'null' value yields no row, as in Flink.
    assert [(r["__dkf_offset"], r["id"], r["name"]) for r in got] == [(0, 1, "a"), (1, 1, None)]
    assert got[1][ERROR] is None
    assert [r["_rowkind"] for r in got] == ["+I", "-D"]
    assert [r["__dkf_value_bytes"] for r in got] == [22, 0]
