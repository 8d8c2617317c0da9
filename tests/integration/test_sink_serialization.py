"""Sink serialization against the real broker: formats, key fields, writable metadata, and
``upsert-kafka`` changelogs (tombstones, dropped update-before rows, per-key order, buffering)."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import pytest

from dagster_kafka_flinklike import KafkaConnectorError, KafkaTableSpec
from dagster_kafka_flinklike.sink.partitioners import java_default_partition
from dagster_kafka_flinklike.sink.serializer import ROW_KIND, serialize
from dagster_kafka_flinklike.sink.writer import write
from tests.integration.test_sink_partitioners import Record, consume_all


def table(topic: str, bootstrap: str, columns: list[dict[str, Any]], **options: str) -> Any:
    """A sink table over ``topic`` with the given columns and extra options."""
    primary_key = options.pop("primary_key", None)
    return KafkaTableSpec.from_options(
        {"topic": topic, "properties.bootstrap.servers": bootstrap, **options},
        columns=columns,
        primary_key=primary_key.split(",") if primary_key else None,
        role="sink",
    )


def write_and_read(spec: KafkaTableSpec, frame: Any, bootstrap: str) -> list[Record]:
    """Write ``frame`` through the sink ``spec``; every record of its topic."""
    result = write(
        serialize(spec, frame),
        spec.topics[0],
        {"bootstrap.servers": bootstrap},
        spec.delivery_guarantee,
        parallelism=spec.sink_parallelism,
        partitioner=spec.sink_partitioner,
    )
    assert result.failed == 0, result.first_error
    records = consume_all(bootstrap, spec.topics[0])
    assert len(records) == result.records
    return records


def test_json_key_and_value_with_all_fields(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    columns = [{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "STRING"}]
    spec = table(
        topic,
        kafka_bootstrap,
        columns,
        connector="kafka",
        format="json",
        **{"key.format": "json", "key.fields": "id"},
    )
    frame = spark.createDataFrame([(1, "alice"), (2, "bob")], "id long, name string")
    records = write_and_read(spec, frame, kafka_bootstrap)
    assert sorted((r.key, r.value) for r in records) == [
        (b'{"id":1}', b'{"id":1,"name":"alice"}'),
        (b'{"id":2}', b'{"id":2,"name":"bob"}'),
    ]
    assert all(r.partition == java_default_partition(r.key or b"", 3) for r in records)


def test_except_key_with_prefix_follows_key_fields_order(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=1)
    columns = [
        {"name": "k_id", "type": "INT"},
        {"name": "k_region", "type": "STRING"},
        {"name": "amount", "type": "DOUBLE"},
    ]
    spec = table(
        topic,
        kafka_bootstrap,
        columns,
        connector="kafka",
        **{
            "key.format": "json",
            "key.fields": "k_region;k_id",
            "key.fields-prefix": "k_",
            "value.format": "json",
            "value.fields-include": "EXCEPT_KEY",
        },
    )
    frame = spark.createDataFrame([(7, "eu", 2.5)], "k_id int, k_region string, amount double")
    [record] = write_and_read(spec, frame, kafka_bootstrap)
    assert record.key == b'{"region":"eu","id":7}'
    assert record.value == b'{"amount":2.5}'


def test_raw_value_without_key_format_writes_null_keys(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=1)
    spec = table(
        topic,
        kafka_bootstrap,
        [{"name": "msg", "type": "STRING"}],
        connector="kafka",
        format="raw",
    )
    frame = spark.createDataFrame([("héllo",), (None,), ("",)], "msg string").coalesce(1)
    records = write_and_read(spec, frame, kafka_bootstrap)
    assert [(r.key, r.value) for r in records] == [
        (None, "héllo".encode()),
        (None, None),
        (None, b""),
    ]


def test_raw_bytes_key_and_value(kafka_bootstrap: str, new_topic: Any, spark: Any) -> None:
    topic = new_topic(partitions=5)
    spec = table(
        topic,
        kafka_bootstrap,
        [{"name": "k", "type": "BYTES"}, {"name": "payload", "type": "BYTES"}],
        connector="kafka",
        **{
            "key.format": "raw",
            "key.fields": "k",
            "value.format": "raw",
            "value.fields-include": "EXCEPT_KEY",
        },
    )
    rows = [(bytes([i, 0xFF, 0x00]), bytes([0x80, i])) for i in range(20)]
    records = write_and_read(
        spec, spark.createDataFrame(rows, "k binary, payload binary"), kafka_bootstrap
    )
    assert sorted((r.key, r.value) for r in records) == sorted(rows)
    assert all(r.partition == java_default_partition(r.key or b"", 5) for r in records)


def test_csv_value(kafka_bootstrap: str, new_topic: Any, spark: Any) -> None:
    topic = new_topic(partitions=1)
    spec = table(
        topic,
        kafka_bootstrap,
        [{"name": "id", "type": "INT"}, {"name": "name", "type": "STRING"}],
        connector="kafka",
        format="csv",
    )
    frame = spark.createDataFrame([(1, "alice"), (2, "a,b")], "id int, name string").coalesce(1)
    records = write_and_read(spec, frame, kafka_bootstrap)
    assert [r.value for r in records] == [b"1,alice", b'2,"a,b"']
    assert all(r.key is None for r in records)


def test_timestamp_and_headers_metadata_become_the_records(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=1)
    columns: list[dict[str, Any]] = [
        {"name": "id", "type": "INT"},
        {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "timestamp"},
        {"name": "hdrs", "type": "MAP<STRING, BYTES>", "metadata_key": "headers"},
        {"name": "part", "type": "INT", "metadata_key": "partition", "virtual": True},
    ]
    spec = table(topic, kafka_bootstrap, columns, connector="kafka", format="json")
    stamp = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    frame = spark.createDataFrame(
        [(1, stamp, {"trace": b"abc", "bin": b"\x00\x01"}), (2, None, None)],
        "id int, ts timestamp, hdrs map<string, binary>",
    ).coalesce(1)
    before = int(time.time() * 1000)
    first, second = write_and_read(spec, frame, kafka_bootstrap)
    after = int(time.time() * 1000)
    assert first.value == b'{"id":1}'  # metadata columns are not in the value
    assert first.timestamp == 1704164645678
    assert sorted(first.headers or []) == [("bin", b"\x00\x01"), ("trace", b"abc")]
    assert second.value == b'{"id":2}'
    assert before <= second.timestamp <= after  # a null timestamp: the producer stamps it
    assert not second.headers


def test_a_kafka_sink_refuses_delete_rows(kafka_bootstrap: str, new_topic: Any, spark: Any) -> None:
    topic = new_topic(partitions=1)
    spec = table(
        topic, kafka_bootstrap, [{"name": "id", "type": "INT"}], connector="kafka", format="json"
    )
    frame = spark.createDataFrame([(1, "+I"), (2, "-D")], f"id int, {ROW_KIND} string")
    with pytest.raises(KafkaConnectorError, match=r"append-only.*upsert-kafka"):
        write_and_read(spec, frame, kafka_bootstrap)


UPSERT_COLUMNS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "name", "type": "STRING"}]

CHANGES = [
    ("+I", 1, "a"),
    ("+I", 2, "b"),
    ("-U", 1, "a"),
    ("+U", 1, "a2"),
    ("+I", 3, "c"),
    ("-D", 2, "b"),
    ("-U", 3, "c"),
    ("+U", 3, "c2"),
    ("-D", 3, "c2"),
    ("+I", 2, "b2"),
    ("+I", 4, "d"),
]


def upsert_table(topic: str, bootstrap: str, **options: str) -> KafkaTableSpec:
    """An ``upsert-kafka`` table keyed by ``id``, JSON key and value."""
    return table(
        topic,
        bootstrap,
        UPSERT_COLUMNS,
        connector="upsert-kafka",
        primary_key="id",
        **{"key.format": "json", "value.format": "json", **options},
    )


def changelog(spark: Any, rows: list[tuple[str, int, str]], slices: int = 4) -> Any:
    """A DataFrame of ``rows`` in that order, spread over ``slices`` Spark partitions."""
    data = spark.sparkContext.parallelize([(i, n, k) for k, i, n in rows], slices)
    return spark.createDataFrame(data, f"id long, name string, {ROW_KIND} string")


def per_key(records: list[Record]) -> dict[int, list[str | None]]:
    """Key id → its values' ``name`` (None for a tombstone) in offset order; one partition each."""
    values: dict[int, list[str | None]] = defaultdict(list)
    for r in records:  # consume_all sorts by partition then offset
        key = json.loads(r.key or b"null")["id"]
        assert r.partition == java_default_partition(r.key or b"", 3)
        values[key].append(None if r.value is None else json.loads(r.value)["name"])
    return dict(values)


def test_upsert_writes_upserts_and_tombstones_in_changelog_order(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = upsert_table(topic, kafka_bootstrap, **{"sink.parallelism": "2"})
    records = write_and_read(spec, changelog(spark, CHANGES), kafka_bootstrap)
    assert per_key(records) == {
        1: ["a", "a2"],  # the update-before row is not written
        2: ["b", None, "b2"],
        3: ["c", "c2", None],
        4: ["d"],
    }
    tombstone = next(r for r in records if r.value is None)
    assert json.loads(tombstone.key or b"null") in ({"id": 2}, {"id": 3})
    latest = {k: v[-1] for k, v in per_key(records).items()}
    assert latest == {1: "a2", 2: "b2", 3: None, 4: "d"}


def test_upsert_buffer_flush_keeps_the_last_row_per_key(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = upsert_table(
        topic,
        kafka_bootstrap,
        **{"sink.buffer-flush.max-rows": "100", "sink.buffer-flush.interval": "1 s"},
    )
    records = write_and_read(spec, changelog(spark, CHANGES), kafka_bootstrap)
    assert per_key(records) == {1: ["a2"], 2: ["b2"], 3: [None], 4: ["d"]}


def test_upsert_without_a_row_kind_column_is_all_upserts(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = upsert_table(topic, kafka_bootstrap)
    data = spark.sparkContext.parallelize([(1, "x"), (2, "y"), (1, "z"), (1, "w")], 3)
    frame = spark.createDataFrame(data, "id long, name string")
    records = write_and_read(spec, frame, kafka_bootstrap)
    assert per_key(records) == {1: ["x", "z", "w"], 2: ["y"]}


def test_an_unknown_row_kind_fails_the_write(
    kafka_bootstrap: str, new_topic: Any, spark: Any
) -> None:
    topic = new_topic(partitions=3)
    spec = upsert_table(topic, kafka_bootstrap)
    with pytest.raises(KafkaConnectorError, match=rf"'{ROW_KIND}' holds row kind 'X'"):
        write_and_read(spec, changelog(spark, [("+I", 1, "a"), ("X", 2, "b")], 1), kafka_bootstrap)
