"""The ``debezium-avro-confluent`` changelog format against the real broker and registry: change
events in the envelope Debezium's ``AvroConverter`` registers (before/after of one named row
type, source, op, ts_ms, transaction) in, changelog rows out — decoded in the JVM and in Python
alike —, and frames with row kinds written as Flink writes them, read by Confluent's own
deserializer and by the format."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, record_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import functions as F

from dagster_kafka_flinklike import ROW_KIND, KafkaTableSpec
from dagster_kafka_flinklike.formats import debezium_avro
from dagster_kafka_flinklike.options import Column
from tests.integration.test_changelog_formats import (
    CHANGES,
    DEBEZIUM_ROWS,
    EXPECTED_VALUES,
    PRODUCTS,
    READ_BACK,
    changelog_rows,
    dirty,
    kinds_and_rows,
    write_changes,
)
from tests.integration.test_decoding import send, table
from tests.integration.test_sink_partitioners import consume_all

WEIGHT = {"type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
          "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
          "connect.name": "org.apache.kafka.connect.data.Decimal",
          "logicalType": "decimal"}  # fmt: skip
#: The envelope Debezium's MySQL connector registers with the AvroConverter (abridged source).
ENVELOPE = {
    "type": "record", "name": "Envelope", "namespace": "dbserver1.inventory.products",
    "fields": [
        {"name": "before", "type": ["null", {
            "type": "record", "name": "Value", "fields": [
                {"name": "id", "type": "long"},
                {"name": "name", "type": "string"},
                {"name": "description", "type": ["null", "string"], "default": None},
                {"name": "weight", "type": ["null", WEIGHT], "default": None},
            ], "connect.name": "dbserver1.inventory.products.Value"}], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": {
            "type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql",
            "fields": [
                {"name": "version", "type": "string"},
                {"name": "connector", "type": "string"},
                {"name": "name", "type": "string"},
                {"name": "ts_ms", "type": "long"},
                {"name": "snapshot", "type": [{"type": "string", "connect.version": 1,
                                               "connect.parameters": {"allowed": "true,last,false"},
                                               "connect.default": "false",
                                               "connect.name": "io.debezium.data.Enum"}, "null"],
                 "default": "false"},
                {"name": "db", "type": "string"},
                {"name": "table", "type": ["null", "string"], "default": None},
            ], "connect.name": "io.debezium.connector.mysql.Source"}},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        {"name": "transaction", "type": ["null", {
            "type": "record", "name": "block", "namespace": "event", "fields": [
                {"name": "id", "type": "string"},
                {"name": "total_order", "type": "long"},
                {"name": "data_collection_order", "type": "long"}]}], "default": None},
    ],
    "connect.name": "dbserver1.inventory.products.Envelope",
}  # fmt: skip
SOURCE = {"version": "2.5.0", "connector": "mysql", "name": "dbserver1", "ts_ms": 1700000000000,
          "snapshot": "false", "db": "inventory", "table": "products"}  # fmt: skip
SCOOTER = {"id": 111, "name": "scooter", "description": "Big 2-wheel scooter",
           "weight": Decimal("5.18")}  # fmt: skip
SCOOTER_2 = {**SCOOTER, "weight": Decimal("5.15")}
JACKET = {"id": 112, "name": "jacket", "description": None, "weight": Decimal("0.20")}


def _event(op: str, before: dict | None, after: dict | None) -> dict[str, Any]:
    return {"before": before, "after": after, "source": SOURCE, "op": op,
            "ts_ms": 1700000000500, "transaction": None}  # fmt: skip


EVENTS = [
    _event("r", None, SCOOTER),  # snapshot read
    _event("c", None, JACKET),
    _event("u", SCOOTER, SCOOTER_2),
    _event("d", JACKET, None),
    None,  # the tombstone Debezium writes after a delete
    _event("u", None, SCOOTER_2),  # Postgres without REPLICA IDENTITY FULL: dirty
    _event("t", None, None),  # a truncate: Flink's format knows no such operation
]


@pytest.mark.parametrize("strategy", ["topic", "record"])
def test_debezium_avro_events_become_changelog_rows(
    kafka_bootstrap, new_topic, spark, schema_registry_url, strategy
) -> None:
    """With the envelope registered under '<topic>-value' the records are decoded by from_avro;
    under a RecordNameStrategy subject by the Python workers; the rows are the same."""
    topic = new_topic(partitions=1)
    registry = SchemaRegistryClient({"url": schema_registry_url})
    conf = {"subject.name.strategy": record_subject_name_strategy} if strategy == "record" else {}
    serializer = AvroSerializer(registry, json.dumps(ENVELOPE), conf=conf)
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [None if e is None else serializer(e, ctx) for e in EVENTS]
    send(kafka_bootstrap, topic, [{"value": v} for v in values])
    options = {"format": "debezium-avro-confluent",
               "debezium-avro-confluent.url": schema_registry_url}  # fmt: skip
    spec = table(topic, kafka_bootstrap, options, PRODUCTS)
    got = changelog_rows(spark, spec)
    assert kinds_and_rows(got) == DEBEZIUM_ROWS
    assert dirty(got) == [
        (5, 'value (debezium-avro-confluent): the "before" field of an update is null (for '
            "Debezium's Postgres connector, set the table's REPLICA IDENTITY to FULL)", False),
        (6, 'value (debezium-avro-confluent): unknown "op" value "t"', False),
    ]  # fmt: skip
    assert all(r[ROW_KIND] is not None for r in got if r["__dkf_error"] is None)
    stages, _ = debezium_avro.FORMAT.decode_changelog_stages(
        F.col("value"), [Column(**c) for c in PRODUCTS], [], spec.value_format, "p_"
    )
    if strategy == "record":  # no version of the table's subject: the Python workers alone
        assert [name for stage in stages for name in stage] == ["p_avro"]
        return
    frame = spark.createDataFrame([(bytearray(v),) for v in values if v], "value binary")
    for stage in stages:
        frame = frame.select("*", *[expr.alias(name) for name, expr in stage.items()])
    in_jvm = [r[0] for r in frame.select(F.col("p_avro_jvm")["__dkf_read"]).collect()]
    assert in_jvm == [True] * 6


def test_debezium_avro_writes_as_flink_writes_and_reads_back(
    kafka_bootstrap, new_topic, spark, schema_registry_url
) -> None:
    """+I/+U as {after, op: c}, -U/-D as {before, op: d}, Flink's envelope registered under the
    table's subject; Confluent's deserializer reads the records, and so does the format."""
    topic = new_topic(partitions=1)
    options = {"connector": "kafka", "topic": topic, "format": "debezium-avro-confluent",
               "debezium-avro-confluent.url": schema_registry_url, "key.format": "json",
               "key.fields": "id", "properties.bootstrap.servers": kafka_bootstrap,
               "scan.startup.mode": "earliest-offset"}  # fmt: skip
    write_changes(spark, options)

    registry = SchemaRegistryClient({"url": schema_registry_url})
    registered = json.loads(registry.get_latest_version(f"{topic}-value").schema.schema_str)
    assert [f["name"] for f in registered["fields"]] == ["before", "after", "op"]
    assert registered["fields"][0]["type"][1]["name"] == "record_before"
    read = AvroDeserializer(registry)
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [read(r.value, ctx) for r in consume_all(kafka_bootstrap, topic)]

    def plain(image: dict | None) -> dict | None:
        return None if image is None else {**image, "weight": float(image["weight"])}

    assert [{**v, "before": plain(v["before"]), "after": plain(v["after"])} for v in values] == (
        EXPECTED_VALUES["debezium-json"]
    )

    source = KafkaTableSpec.from_options(options, columns=PRODUCTS, role="source")
    assert kinds_and_rows(changelog_rows(spark, source)) == [
        (READ_BACK[k], i, n, Decimal(w)) for k, i, n, w in CHANGES
    ]
