"""The ``protobuf`` format against the real broker: messages produced with the protobuf package
read through the reading path and the run cycle, corrupt records as dirty data (failing the run
unless tolerated), and rows written to a topic parsed back by the protobuf package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.source.records import ERROR, TOLERATED
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import consume_all
from tests.integration.test_decoding import rows, send, table
from tests.protobuf_defs import message_class, write_descriptor_set

CORRUPT = b"\x0a\xff"
REASON = (
    "value (protobuf): ValueError: not a serialized shop.Order message: Error parsing message "
    "with type 'shop.Order'"
)
COLUMNS = [
    {"name": "sensor", "type": "STRING"},
    {"name": "id", "type": "BIGINT"},
    {"name": "customer", "type": "STRING"},
    {"name": "status", "type": "STRING"},
    {"name": "items", "type": "ARRAY<ROW<sku STRING, quantity INT>>"},
    {"name": "counters", "type": "MAP<STRING, BIGINT>"},
    {"name": "address", "type": "ROW<city STRING>"},
    {"name": "offset", "type": "BIGINT", "metadata_key": "offset", "virtual": True},
]


@pytest.fixture(scope="module")
def desc(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_descriptor_set(Path(tmp_path_factory.mktemp("protobuf")))


@pytest.fixture(scope="module")
def Order(desc: str) -> Any:
    return message_class(desc, "shop.Order")


@pytest.fixture(scope="module")
def Reading(desc: str) -> Any:
    return message_class(desc, "legacy.Reading")


def formats(desc: str, **more: str) -> dict[str, str]:
    """Value shop.Order (by its Java class name), key legacy.Reading (its field 'sensor')."""
    return {
        "key.format": "protobuf",
        "key.fields": "sensor",
        "key.protobuf.message-class-name": "org.legacy.Reading",
        "key.protobuf.descriptor-file": desc,
        "value.format": "protobuf",
        "value.fields-include": "EXCEPT_KEY",
        "value.protobuf.message-class-name": "com.example.shop.OrderProtos$Order",
        "value.protobuf.descriptor-file": desc,
        **more,
    }


def orders(Order: Any, Reading: Any) -> list[dict[str, Any]]:
    first = Order(id=1, customer="Ann", status=1)
    first.items.add(sku="a", quantity=2)
    first.counters["x"] = 3
    first.address.city = "Oslo"
    return [
        {"key": Reading(sensor="s1").SerializeToString(), "value": first.SerializeToString()},
        {"key": Reading(sensor="s2").SerializeToString(), "value": CORRUPT},
        {"key": Reading(sensor="s3").SerializeToString(), "value": None},  # no row
        {
            "key": Reading(sensor="s4").SerializeToString(),
            "value": Order(id=4, status=2).SerializeToString(),
        },
    ]


def test_keys_and_values_read_through_the_reading_path(
    kafka_bootstrap, new_topic, spark, desc, Order, Reading
) -> None:
    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, orders(Order, Reading))
    got = rows(spark, table(topic, kafka_bootstrap, formats(desc), COLUMNS))
    names = [c["name"] for c in COLUMNS]
    assert [tuple(r[n] for n in names) for r in got] == [
        ("s1", 1, "Ann", "PAID", [{"sku": "a", "quantity": 2}], {"x": 3}, {"city": "Oslo"}, 0),
        ("s2", None, None, None, None, None, None, 1),  # the key decoded, the value is dirty
        ("s4", 4, "", "SHIPPED", None, None, None, 3),
    ]
    assert [r[ERROR] for r in got] == [None, REASON, None]
    assert [r[TOLERATED] for r in got] == [False, False, False]
    tolerant = formats(desc, **{"value.protobuf.ignore-parse-errors": "true"})
    got = rows(spark, table(topic, kafka_bootstrap, tolerant, COLUMNS))
    assert [(r[ERROR], r[TOLERATED]) for r in got] == [(None, False), (REASON, True), (None, False)]


def _copy_asset(source_topic: str, sink_topic: str, desc: str, **options: str) -> Any:
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"protobuf-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            **formats(desc, **options),
        },
        columns=COLUMNS[:-1],
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, **formats(desc)},
        columns=COLUMNS[:-1],
        role="sink",
    )

    @kafka_streaming_asset(sources={"orders": source}, sink=sink, name="copy_orders")
    def copy_orders(context, orders):
        return orders.withColumn("customer", orders["customer"].substr(1, 1))

    return copy_orders


def _run(asset: Any, kafka_bootstrap: str) -> Any:
    return materialize(
        [asset],
        resources={
            "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
            "pyspark": SparkResource(spark_config=local_spark_config("tests")),
        },
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def test_a_corrupt_record_fails_the_run_unless_the_format_tolerates_it(
    kafka_bootstrap, new_topic, spark, desc, Order, Reading
) -> None:
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    send(kafka_bootstrap, source, orders(Order, Reading))

    failed = _run(_copy_asset(source, sink, desc), kafka_bootstrap)
    assert not failed.success
    text = failed.failure_data_for_node("copy_orders").error.to_string()
    assert (
        f"1 dirty record(s) of source 'orders' could not be decoded (first at {source}-0@1:" in text
    )
    assert "not a serialized shop.Order message" in text
    assert "The checkpoint did not advance; the clean records were written" in text
    assert len(consume_all(kafka_bootstrap, sink, 1)) == 2  # the two clean orders

    tolerant = _copy_asset(source, sink, desc, **{"value.protobuf.ignore-parse-errors": "true"})
    result = _run(tolerant, kafka_bootstrap)
    assert result.success
    meta = result.asset_materializations_for_node("copy_orders")[0].metadata
    assert (meta["numRecordsIn"].value, meta["dirtyRecords"].value) == (3, 1)
    assert meta["numRecordsOut"].value == 2
    [sample] = meta["dirtySamples"].value
    assert sample["offset"] == 1 and "not a serialized shop.Order message" in sample["error"]

    written = consume_all(kafka_bootstrap, sink, 1)[2:]  # after the failed run's (at-least-once)
    keys = [None if m.key() is None else Reading.FromString(m.key()) for m in written]
    assert keys == [Reading(sensor="s1"), Reading(sensor="s4")]
    first, second = (Order.FromString(m.value()) for m in written)
    expected = Order(id=1, customer="A", status=1)
    expected.items.add(sku="a", quantity=2)
    expected.counters["x"] = 3
    expected.address.city = "Oslo"
    assert first == expected
    # Unset fields read as NULL and NULL columns are left unset: the message is the same.
    assert second == Order(id=4, status=2)
    assert not second.HasField("address")


def test_a_sink_column_the_message_cannot_hold_fails_at_declaration(desc: str) -> None:
    from dagster_kafka_flinklike.errors import KafkaOptionsError

    with pytest.raises(KafkaOptionsError) as info:
        KafkaTableSpec.from_options(
            {"connector": "kafka", "topic": "out", **formats(desc)},
            columns=[{"name": "sensor", "type": "STRING"}, {"name": "id", "type": "STRING"}],
            role="sink",
        )
    assert str(info.value) == (
        "Format 'protobuf' ('value.format'): column 'id' (STRING) cannot hold protobuf field "
        "'shop.Order.id' (int64): an int64 field maps to BIGINT."
    )


def test_protobuf_confluent_sink_registers_the_file_and_frames_every_record(
    kafka_bootstrap, schema_registry_url, new_topic, spark, desc, Order, Reading
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    records = orders(Order, Reading)
    send(kafka_bootstrap, source, [records[0], records[3]])
    registry = {
        "format": "protobuf-confluent",
        "protobuf-confluent.url": schema_registry_url,
        "protobuf-confluent.message-class-name": "shop.Order",
        "protobuf-confluent.descriptor-file": desc,
    }
    value_columns = COLUMNS[1:-1]
    source_spec = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": source, "properties.group.id": f"pc-{source}",
         "scan.startup.mode": "earliest-offset", **formats(desc)},
        columns=COLUMNS[:-1], role="source",
    )  # fmt: skip
    sink_spec = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink, **registry}, columns=value_columns, role="sink"
    )

    @kafka_streaming_asset(sources={"orders": source_spec}, sink=sink_spec, name="to_registry")
    def to_registry(context, orders):
        return orders.drop("sensor")

    assert _run(to_registry, kafka_bootstrap).success

    latest = SchemaRegistryClient({"url": schema_registry_url}).get_latest_version(f"{sink}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert [r.name for r in latest.schema.references] == ["google/protobuf/timestamp.proto"]
    written = consume_all(kafka_bootstrap, sink, 1)
    frame = b"\x00" + latest.schema_id.to_bytes(4, "big") + b"\x02\x02"  # shop.Order: index [1]
    assert [m.value()[: len(frame)] for m in written] == [frame, frame]
    first = Order.FromString(orders(Order, Reading)[0]["value"])
    assert [Order.FromString(m.value()[len(frame) :]) for m in written] == [
        first,
        Order(id=4, status=2),
    ]

    got = rows(spark, table(sink, kafka_bootstrap, registry, value_columns))
    assert [tuple(r[c["name"]] for c in value_columns) for r in got] == [
        (1, "Ann", "PAID", [{"sku": "a", "quantity": 2}], {"x": 3}, {"city": "Oslo"}),
        (4, "", "SHIPPED", None, None, None),
    ]
    assert [r[ERROR] for r in got] == [None, None]
