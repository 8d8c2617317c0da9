"""Avro as real producers write it, through the real Schema Registry: every logical type,
schema references, subjects of other naming strategies, and a schema the registry refuses.

Each record is decoded on both paths the ``avro-confluent`` format has — Spark's ``from_avro``
in the JVM (the session has Spark's Avro package and the writer is a version of the table's
subject) and fastavro in the Python workers (any other writer, or a session without the
package) — and both must give the same row.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import functions as F

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.errors import SchemaRegistryClientError, SchemaRegistryErrorKind
from dagster_kafka_flinklike.formats import avro_confluent
from dagster_kafka_flinklike.options import Column
from dagster_kafka_flinklike.sink.serializer import serialize
from dagster_kafka_flinklike.sink.writer import write
from dagster_kafka_flinklike.source.records import ERROR
from tests.integration.test_decoding import rows, send, table
from tests.integration.test_sink_partitioners import consume_all

UTC = dt.UTC
AT = dt.datetime(2024, 3, 1, 8, 30, 0, 123456, tzinfo=UTC)
AT_MS = AT.replace(microsecond=123000)


@pytest.fixture
def registry(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry_url})


def _subject() -> str:
    return f"producers-{uuid.uuid4().hex[:8]}-value"


def _framed(schema_id: int, schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def _both_paths(
    spark: Any, values: list[bytes], columns: list[Column], options: dict[str, str]
) -> tuple[list[Any], list[Any]]:
    """(rows from ``from_avro``, rows from the Python workers) of ``values``; the first must
    all have been read in the JVM, none may be dirty."""
    frame = spark.createDataFrame([(bytearray(v),) for v in values], "value binary")
    stages, (row, error, _) = avro_confluent.FORMAT.decode_stages(
        F.col("value"), columns, options, "p_"
    )
    jvm = frame
    for stage in stages:
        jvm = jvm.select("*", *[expr.alias(name) for name, expr in stage.items()])
    read_in_jvm = F.col("p_avro_jvm")["__dkf_read"]
    fast = jvm.select(read_in_jvm.alias("jvm"), row.alias("row"), error.alias("error")).collect()
    assert [(r["jvm"], r["error"]) for r in fast] == [(True, None)] * len(values)
    py_row, py_error, _ = avro_confluent.FORMAT.decode(F.col("value"), columns, options)
    slow = frame.select(py_row.alias("row"), py_error.alias("error")).collect()
    assert [r["error"] for r in slow] == [None] * len(values)
    return [tuple(r["row"]) for r in fast], [tuple(r["row"]) for r in slow]


def test_every_logical_type_decodes_the_same_on_both_paths(
    spark, schema_registry_url, registry
) -> None:
    """uuid, decimal (bytes and fixed), date, timestamp-millis/micros (as TIMESTAMP and
    TIMESTAMP_LTZ), local-timestamp-millis/micros and duration (a fixed of 12 bytes, read as
    BYTES) give equal rows through ``from_avro`` and fastavro."""

    def logical(kind: str, logical_type: str, **extra: Any) -> dict[str, Any]:
        return {"type": kind, "logicalType": logical_type, **extra}

    writer = {"type": "record", "name": "Reading", "namespace": "iot", "fields": [
        {"name": "u", "type": logical("string", "uuid")},
        {"name": "d", "type": ["null", logical("bytes", "decimal", precision=10, scale=2)]},
        {"name": "day", "type": logical("int", "date")},
        {"name": "ts3", "type": logical("long", "timestamp-millis")},
        {"name": "ts6", "type": ["null", logical("long", "timestamp-micros")]},
        {"name": "ltz3", "type": logical("long", "timestamp-millis")},
        {"name": "ltz6", "type": logical("long", "timestamp-micros")},
    ]}  # fmt: skip
    columns = [Column("u", "STRING"), Column("d", "DECIMAL(10, 2)"), Column("day", "DATE"),
               Column("ts3", "TIMESTAMP(3)"), Column("ts6", "TIMESTAMP(6)"),
               Column("ltz3", "TIMESTAMP_LTZ(3)"), Column("ltz6", "TIMESTAMP_LTZ(6)")]  # fmt: skip
    subject = _subject()
    schema_id = registry.register_schema(subject, Schema(json.dumps(writer), "AVRO"))
    key = uuid.UUID("12345678-1234-5678-1234-567812345678")
    records = [
        {"u": key, "d": Decimal("-12.34"), "day": dt.date(2024, 2, 29), "ts3": AT_MS, "ts6": AT,
         "ltz3": AT_MS, "ltz6": AT},
        {"u": uuid.UUID(int=0), "d": None, "day": dt.date(1969, 12, 31),
         "ts3": dt.datetime(1960, 1, 1, tzinfo=UTC), "ts6": None, "ltz3": AT_MS, "ltz6": AT},
    ]  # fmt: skip
    values = [_framed(schema_id, writer, r) for r in records]
    options = {"url": schema_registry_url, "subject": subject}
    jvm, python = _both_paths(spark, values, columns, options)
    assert jvm == python
    assert python[0][:5] == (
        "12345678-1234-5678-1234-567812345678", Decimal("-12.34"), dt.date(2024, 2, 29),
        AT_MS.replace(tzinfo=None), AT.replace(tzinfo=None),
    )  # fmt: skip
    assert python[1][:5] == (
        "00000000-0000-0000-0000-000000000000", None, dt.date(1969, 12, 31),
        dt.datetime(1960, 1, 1), None,
    )  # fmt: skip

    # Flink's non-legacy mapping: TIMESTAMP is Avro's local-timestamp-*.
    local = {"type": "record", "name": "Local", "fields": [
        {"name": "lt3", "type": logical("long", "local-timestamp-millis")},
        {"name": "lt6", "type": logical("long", "local-timestamp-micros")},
    ]}  # fmt: skip
    subject = _subject()
    local_id = registry.register_schema(subject, Schema(json.dumps(local), "AVRO"))
    wall = AT.replace(tzinfo=None)
    value = _framed(local_id, local, {"lt3": wall.replace(microsecond=123000), "lt6": wall})
    options = {"url": schema_registry_url, "subject": subject,
               "timestamp_mapping.legacy": "false"}  # fmt: skip
    columns = [Column("lt3", "TIMESTAMP(3)"), Column("lt6", "TIMESTAMP(6)")]
    jvm, python = _both_paths(spark, [value], columns, options)
    assert jvm == python == [(wall.replace(microsecond=123000), wall)]

    # Fixed-size types need a reader schema naming the same fixed ('avro-confluent.schema').
    money = {"type": "fixed", "name": "Money", "size": 8, "logicalType": "decimal",
             "precision": 12, "scale": 3}  # fmt: skip
    span = {"type": "fixed", "name": "Span", "size": 12, "logicalType": "duration"}
    fixed = {"type": "record", "name": "Fixed", "fields": [
        {"name": "amount", "type": money}, {"name": "wait", "type": span}]}  # fmt: skip
    subject = _subject()
    fixed_id = registry.register_schema(subject, Schema(json.dumps(fixed), "AVRO"))
    duration = (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + (3).to_bytes(4, "little")
    value = _framed(fixed_id, fixed, {"amount": Decimal("1234.567"), "wait": duration})
    options = {"url": schema_registry_url, "subject": subject, "schema": json.dumps(fixed)}
    columns = [Column("amount", "DECIMAL(12, 3)"), Column("wait", "BYTES")]
    jvm, python = _both_paths(spark, [value], columns, options)
    assert jvm == python == [(Decimal("1234.567"), bytearray(duration))]


def test_time_millis_reads_as_flink_time_in_python(spark, schema_registry_url, registry) -> None:
    """TIME has no ``from_avro`` counterpart: such tables always decode in Python, where
    time-millis is the TIME of day (time-micros does not resolve to Flink's TIME, as in Flink)."""
    writer = {"type": "record", "name": "T", "fields": [
        {"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "micros", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
    ]}  # fmt: skip
    subject = _subject()
    schema_id = registry.register_schema(subject, Schema(json.dumps(writer), "AVRO"))
    good = _framed(schema_id, writer, {"at": dt.time(10, 11, 12, 345000), "micros": dt.time(1)})
    options = {"url": schema_registry_url, "subject": subject}
    frame = spark.createDataFrame([(bytearray(good),)], "value binary")
    row, error, _ = avro_confluent.FORMAT.decode(F.col("value"), [Column("at", "TIME(3)")], options)
    assert [tuple(r) for r in frame.select(row, error).collect()] == [(("10:11:12.345",), None)]
    row, error, _ = avro_confluent.FORMAT.decode(
        F.col("value"), [Column("micros", "TIME(3)")], options
    )
    ((_, reason),) = frame.select(row, error).collect()
    assert "cannot be read as the table's schema" in reason


@pytest.mark.parametrize(
    "strategy", [record_subject_name_strategy, topic_record_subject_name_strategy]
)
def test_uuid_records_of_other_subject_strategies_are_clean(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry, strategy
) -> None:
    """A uuid field written by Confluent's serializer under RecordNameStrategy or
    TopicRecordNameStrategy (the table's '<topic>-value' subject has no version, so every record
    decodes in Python) reads as text, not a dirty record."""
    topic = new_topic(partitions=1)
    writer = {"type": "record", "name": "Device", "namespace": "iot", "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "seen", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    ]}  # fmt: skip
    serializer = AvroSerializer(
        registry, json.dumps(writer), conf={"subject.name.strategy": strategy}
    )
    ctx = SerializationContext(topic, MessageField.VALUE)
    ids = [uuid.uuid4() for _ in range(3)]
    send(kafka_bootstrap, topic, [{"value": serializer({"id": i, "seen": AT}, ctx)} for i in ids])
    columns = [{"name": "id", "type": "STRING"}, {"name": "seen", "type": "TIMESTAMP_LTZ(6)"}]
    options = {"format": "avro-confluent", "avro-confluent.url": schema_registry_url}
    got = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert [(r["id"], r[ERROR]) for r in got] == [(str(i), None) for i in ids]


GEO = {"type": "record", "name": "Geo", "namespace": "shop.geo",
       "fields": [{"name": "lat", "type": "double"},
                  {"name": "lon", "type": "double"}]}  # fmt: skip
ADDRESS = {"type": "record", "name": "Address", "namespace": "shop",
           "fields": [{"name": "city", "type": "string"},
                      {"name": "geo", "type": "shop.geo.Geo"}]}  # fmt: skip
ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "ship", "type": "Address"},
    {"name": "bill", "type": ["null", "shop.Address"], "default": None},
]}  # fmt: skip


def test_schema_references_resolve_on_both_paths(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    """Order references Address (its own subject), which references Geo, as confluent-kafka's
    ``Schema(..., references=[...])`` registers them; records decode with the referenced types,
    the second use of Address by name included."""
    topic = new_topic(partitions=1)
    tag = uuid.uuid4().hex[:6]
    geo_subject, address_subject = f"shop.geo.Geo-{tag}", f"shop.Address-{tag}"
    registry.register_schema(geo_subject, Schema(json.dumps(GEO), "AVRO"))
    address = Schema(json.dumps(ADDRESS), "AVRO",
                     [SchemaReference("shop.geo.Geo", geo_subject, 1)])  # fmt: skip
    registry.register_schema(address_subject, address)
    order = Schema(json.dumps(ORDER), "AVRO", [SchemaReference("shop.Address", address_subject, 1)])
    serializer = AvroSerializer(registry, order)
    ctx = SerializationContext(topic, MessageField.VALUE)
    berlin = {"city": "Berlin", "geo": {"lat": 52.5, "lon": 13.4}}
    oslo = {"city": "Oslo", "geo": {"lat": 59.9, "lon": 10.7}}
    records = [{"id": 1, "ship": berlin, "bill": None}, {"id": 2, "ship": berlin, "bill": oslo}]
    values = [serializer(r, ctx) for r in records]
    send(kafka_bootstrap, topic, [{"value": v} for v in values])
    place = "ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>"
    columns = [{"name": "id", "type": "BIGINT"}, {"name": "ship", "type": place},
               {"name": "bill", "type": place}]  # fmt: skip
    options = {"format": "avro-confluent", "avro-confluent.url": schema_registry_url}
    got = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert [(r["id"], r["ship"], r["bill"], r[ERROR]) for r in got] == [
        (1, berlin, None, None), (2, berlin, oslo, None),
    ]  # fmt: skip

    settings = {"url": schema_registry_url, "subject": f"{topic}-value"}
    jvm, python = _both_paths(spark, values, [Column(**c) for c in columns], settings)
    assert jvm == python


def test_a_schema_the_registry_refuses_fails_before_any_write(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    """BACKWARD and an incompatible change: the write fails on the driver with the subject, the
    level and the registry's reason, and writes nothing."""
    topic = new_topic(partitions=1)

    def sink(id_type: str) -> KafkaTableSpec:
        return KafkaTableSpec.from_options(
            {"connector": "kafka", "topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
             "format": "avro-confluent", "avro-confluent.url": schema_registry_url},
            columns=[{"name": "id", "type": f"{id_type} NOT NULL"}], role="sink",
        )  # fmt: skip

    def write_ids(spec: KafkaTableSpec, frame: Any) -> None:
        write(serialize(spec, frame), topic, {"bootstrap.servers": kafka_bootstrap})

    write_ids(sink("BIGINT"), spark.createDataFrame([(1,), (2,)], "id long"))
    registry.set_compatibility(f"{topic}-value", "BACKWARD")
    with pytest.raises(SchemaRegistryClientError) as info:
        write_ids(sink("BOOLEAN"), spark.createDataFrame([(True,)], "id boolean"))
    message = str(info.value)
    assert info.value.kind is SchemaRegistryErrorKind.INCOMPATIBLE
    assert f"subject '{topic}-value' refused the schema of format 'avro-confluent'" in message
    assert "its compatibility level is BACKWARD and the registry says: " in message
    assert "Nothing was written" in message
    assert len(consume_all(kafka_bootstrap, topic)) == 2
    assert registry.get_versions(f"{topic}-value") == [1]
