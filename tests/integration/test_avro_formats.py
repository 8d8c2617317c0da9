"""The avro and avro-confluent formats through the real broker and the real Schema Registry:
round trips Spark → Kafka → Spark, records written by confluent-kafka's own serializers, schema
evolution over three batches, and every kind of bad record as dirty data with its reason."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from dagster import DagsterInstance, materialize
from pyspark.sql import functions as F

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.options import Column, avro_schema
from dagster_kafka_flinklike.source.records import ERROR, TOLERATED
from dagster_kafka_flinklike.spark import local_spark_config
from tests.integration.test_decoding import rows, send, table
from tests.integration.test_sink_serialization import write_and_read

ALL_TYPES = [
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "name", "type": "STRING"},
    {"name": "small", "type": "SMALLINT"},
    {"name": "ratio", "type": "FLOAT"},
    {"name": "amount", "type": "DECIMAL(10, 2)"},
    {"name": "flag", "type": "BOOLEAN"},
    {"name": "day", "type": "DATE"},
    {"name": "at", "type": "TIME"},
    {"name": "ts", "type": "TIMESTAMP(3)"},
    {"name": "bin", "type": "BYTES"},
    {"name": "tags", "type": "ARRAY<STRING>"},
    {"name": "attrs", "type": "MAP<STRING, BIGINT>"},
    {"name": "address", "type": "ROW<city STRING, zip INT>"},
]
ALL_TYPES_SQL = (
    "id long, name string, small short, ratio float, amount decimal(10,2), flag boolean, "
    "day date, at string, ts timestamp_ntz, bin binary, tags array<string>, "
    "attrs map<string,bigint>, address struct<city:string,zip:int>"
)
ALL_TYPES_ROWS = [
    (1, "alice", 7, 0.5, Decimal("12.34"), True, dt.date(2024, 2, 29), "10:11:12.345",
     dt.datetime(2024, 3, 1, 8, 30, 0, 123000), b"\x00\x01", ["a", "b"], {"k": 5},
     ("Berlin", 10115)),
    (2, None, None, None, None, None, None, None, None, None, None, None, None),
]  # fmt: skip
NAMES = [c["name"] for c in ALL_TYPES]


def _row(record: dict[str, Any]) -> tuple[Any, ...]:
    out = []
    for name in NAMES:
        value = record[name]
        if isinstance(value, dict) and name == "address":
            value = (value["city"], value["zip"])
        if isinstance(value, bytearray):
            value = bytes(value)
        out.append(value)
    return tuple(out)


def _round_trip(spark, kafka_bootstrap, topic, fmt_options) -> list[dict[str, Any]]:
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
         **fmt_options},
        columns=ALL_TYPES,
        role="sink",
    )  # fmt: skip
    frame = spark.createDataFrame(ALL_TYPES_ROWS, ALL_TYPES_SQL)
    records = write_and_read(sink, frame, kafka_bootstrap)
    assert len(records) == 2
    return rows(spark, table(topic, kafka_bootstrap, fmt_options, ALL_TYPES))


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_avro_round_trip_of_every_type(kafka_bootstrap, new_topic, spark, encoding) -> None:
    topic = new_topic(partitions=1)
    got = _round_trip(spark, kafka_bootstrap, topic, {"format": "avro", "avro.encoding": encoding})
    assert [r[ERROR] for r in got] == [None, None]
    assert sorted(_row(r) for r in got) == sorted(ALL_TYPES_ROWS)


def test_avro_bytes_are_what_flink_writes(kafka_bootstrap, new_topic, spark) -> None:
    """Records written here decode with fastavro and the schema Flink derives."""
    from tests.integration.test_sink_partitioners import consume_all

    topic = new_topic(partitions=1)
    columns = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "ts", "type": "TIMESTAMP(3)"}]
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
         "format": "avro"}, columns=columns, role="sink",
    )  # fmt: skip
    frame = spark.createDataFrame(
        [(5, dt.datetime(2024, 1, 1, 0, 0, 1))], "id long, ts timestamp_ntz"
    )
    write_and_read(sink, frame, kafka_bootstrap)
    schema = json.loads(avro_schema([Column(**c) for c in columns]))
    assert schema["name"] == "record" and schema["namespace"] == "org.apache.flink.avro.generated"
    assert schema["fields"][1] == {
        "name": "ts",
        "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}],
        "default": None,
    }
    (record,) = consume_all(kafka_bootstrap, topic)
    decoded = fastavro.schemaless_reader(io.BytesIO(record.value), fastavro.parse_schema(schema))
    assert decoded == {"id": 5, "ts": dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=dt.UTC)}


def test_avro_corrupt_records_are_dirty(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1)
    columns = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "name", "type": "STRING"}]
    schema = fastavro.parse_schema(json.loads(avro_schema([Column(**c) for c in columns])))
    good = io.BytesIO()
    fastavro.schemaless_writer(good, schema, {"id": 3, "name": "ok"})
    send(kafka_bootstrap, topic, [{"value": good.getvalue()}, {"value": b"\x02\x09"},
                                  {"value": None}])  # fmt: skip
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "avro"}, columns))
    assert len(got) == 2  # a null value yields no row
    assert (got[0]["id"], got[0]["name"], got[0][ERROR]) == (3, "ok", None)
    assert got[1]["id"] is None
    assert got[1][ERROR].startswith("value (avro): ValueError: not an Avro datum of the schema")
    assert got[1][TOLERATED] is False


# ------------------------------------------------------------------------------ avro-confluent


@pytest.fixture
def registry(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry_url})


def _confluent(url: str, **extra: str) -> dict[str, str]:
    return {"format": "avro-confluent", "avro-confluent.url": url, **extra}


def test_avro_confluent_round_trip_registers_the_derived_schema(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    topic = new_topic(partitions=2)
    got = _round_trip(spark, kafka_bootstrap, topic, _confluent(schema_registry_url))
    assert [r[ERROR] for r in got] == [None, None]
    assert sorted(_row(r) for r in got) == sorted(ALL_TYPES_ROWS)
    latest = registry.get_latest_version(f"{topic}-value")
    registered = json.loads(latest.schema.schema_str)
    assert registered["name"] == "record"
    assert [f["name"] for f in registered["fields"]] == NAMES


def test_avro_confluent_reads_confluent_serializer_records_with_evolving_schemas(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    """Three batches, three writer schemas (v2 adds a field, v3 drops one and widens a type):
    each record is resolved into the table's schema."""
    topic = new_topic(partitions=1)
    subject = f"{topic}-value"
    v1 = {"type": "record", "name": "Order", "namespace": "shop",
          "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "int"},
                     {"name": "note", "type": ["null", "string"], "default": None}]}  # fmt: skip
    v2 = {**v1, "fields": [*v1["fields"], {"name": "channel", "type": "string", "default": "web"}]}
    v3 = {**v1, "fields": [v1["fields"][0], v2["fields"][3], {"name": "amount", "type": "int"}]}
    batches = [
        (v1, [{"id": 1, "amount": 10, "note": "first"}]),
        (v2, [{"id": 2, "amount": 20, "note": None, "channel": "app"}]),
        (v3, [{"id": 3, "channel": "shop", "amount": 30}]),
    ]
    for schema, records in batches:
        serializer = AvroSerializer(registry, json.dumps(schema))
        ctx = SerializationContext(topic, MessageField.VALUE)
        send(kafka_bootstrap, topic, [{"value": serializer(r, ctx)} for r in records])
    assert len(registry.get_versions(subject)) == 3
    columns = [
        {"name": "id", "type": "BIGINT"},
        {"name": "amount", "type": "DOUBLE"},  # int widens to double
        {"name": "note", "type": "STRING"},
        {"name": "channel", "type": "STRING"},
    ]
    got = rows(spark, table(topic, kafka_bootstrap, _confluent(schema_registry_url), columns))
    assert [r[ERROR] for r in got] == [None, None, None]
    assert [(r["id"], r["amount"], r["note"], r["channel"]) for r in got] == [
        (1, 10.0, "first", None),  # the writer has no channel: the reader's default (null)
        (2, 20.0, None, "app"),
        (3, 30.0, None, "shop"),
    ]


def test_avro_confluent_bad_records_are_dirty_with_the_reason(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    topic = new_topic(partitions=1)
    good_schema = {"type": "record", "name": "R",
                   "fields": [{"name": "id", "type": "long"}]}  # fmt: skip
    other = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "string"}]}
    good_id = registry.register_schema(f"{topic}-value", Schema(json.dumps(good_schema), "AVRO"))
    other_id = registry.register_schema(f"other-{uuid.uuid4().hex[:6]}", _schema(other))
    payload = io.BytesIO()
    fastavro.schemaless_writer(payload, fastavro.parse_schema(good_schema), {"id": 9})
    text = io.BytesIO()
    fastavro.schemaless_writer(text, fastavro.parse_schema(other), {"id": "x"})
    send(kafka_bootstrap, topic, [
        {"value": b"\x00" + good_id.to_bytes(4, "big") + payload.getvalue()},
        {"value": b"\x07" + good_id.to_bytes(4, "big") + payload.getvalue()},  # magic byte
        {"value": b"\x00" + (10**6).to_bytes(4, "big") + payload.getvalue()},  # unknown id
        {"value": b"\x00" + other_id.to_bytes(4, "big") + text.getvalue()},  # incompatible
        {"value": b"\x00\x00"},  # too short
        {"value": b"\x00" + good_id.to_bytes(4, "big") + b"\x80"},  # corrupt payload
    ])  # fmt: skip
    columns = [{"name": "id", "type": "BIGINT"}]
    got = rows(spark, table(topic, kafka_bootstrap, _confluent(schema_registry_url), columns))
    errors = [r[ERROR] for r in got]
    assert got[0]["id"] == 9 and errors[0] is None
    assert "unknown magic byte 7" in errors[1]
    assert f"writer schema {10**6} could not be fetched from the Schema Registry" in errors[2]
    assert f"writer schema {other_id} cannot be read as the table's schema" in errors[3]
    assert "too short for its schema id" in errors[4]
    assert errors[5] is not None
    assert all(r["id"] is None for r in got[1:])


def _committed_values(bootstrap: str, topic: str) -> list[bytes]:
    """The committed values of partition 0 of ``topic`` (read_committed, up to its end)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"v-{topic}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[bytes] = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of partition seen"
            if message.error():
                return out
            out.append(message.value())
    finally:
        consumer.close()


def _schema(record: dict[str, Any]) -> Schema:
    return Schema(json.dumps(record), "AVRO")


def test_avro_confluent_registry_down_fails_the_read(kafka_bootstrap, new_topic, spark) -> None:
    """An unreachable registry is no dirty data: decoding fails, naming the registry."""
    from dagster_kafka_flinklike.errors import SchemaRegistryClientError
    from dagster_kafka_flinklike.local._service import free_port

    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"value": b"\x00\x00\x00\x00\x01\x02"}])
    url = f"http://127.0.0.1:{free_port()}"
    options = _confluent(url, **{"avro-confluent.properties.max.retries": "0"})
    with pytest.raises(SchemaRegistryClientError, match="Connection refused") as info:
        rows(spark, table(topic, kafka_bootstrap, options, [{"name": "id", "type": "BIGINT"}]))
    assert str(info.value).startswith(f"Schema Registry {url} (unavailable): ")


def test_confluent_deserializer_reads_what_the_sink_wrote(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    """Records written by the avro-confluent sink are what Confluent's clients expect."""
    from tests.integration.test_sink_partitioners import consume_all

    topic = new_topic(partitions=1)
    columns = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "name", "type": "STRING"}]
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
         "key.format": "avro-confluent", "key.avro-confluent.url": schema_registry_url,
         "key.fields": "id", **_confluent(schema_registry_url)},
        columns=columns, role="sink",
    )  # fmt: skip
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string")
    write_and_read(sink, frame, kafka_bootstrap)
    value = AvroDeserializer(registry)
    key = AvroDeserializer(registry)
    got = sorted(
        ((key(r.key, SerializationContext(topic, MessageField.KEY)),
          value(r.value, SerializationContext(topic, MessageField.VALUE)))
         for r in consume_all(kafka_bootstrap, topic)),
        key=lambda pair: pair[0]["id"],
    )  # fmt: skip
    assert got == [({"id": 1}, {"id": 1, "name": "a"}), ({"id": 2}, {"id": 2, "name": "b"})]
    assert registry.get_latest_version(f"{topic}-key").schema.schema_str


def test_streaming_asset_avro_confluent_to_avro_confluent(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    """A Dagster materialization reads registry Avro, aggregates and writes registry Avro,
    exactly once; a second run with no new records writes nothing."""
    source_topic, sink_topic = new_topic(partitions=2), new_topic(partitions=1)
    writer = {"type": "record", "name": "Order", "namespace": "shop",
              "fields": [{"name": "channel", "type": "string"},
                         {"name": "pay", "type": "double"}]}  # fmt: skip
    serializer = AvroSerializer(registry, json.dumps(writer))
    ctx = SerializationContext(source_topic, MessageField.VALUE)
    orders = [{"channel": c, "pay": p} for c, p in [("web", 1.0), ("app", 2.0), ("web", 3.0)]]
    send(kafka_bootstrap, source_topic, [{"value": serializer(o, ctx)} for o in orders])

    source = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": source_topic, "scan.startup.mode": "earliest-offset",
         "properties.group.id": f"g-{source_topic}", **_confluent(schema_registry_url)},
        columns=[{"name": "channel", "type": "STRING"}, {"name": "pay", "type": "DOUBLE"}],
        role="source",
    )  # fmt: skip
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "sink.delivery-guarantee": "exactly-once",
         "sink.transactional-id-prefix": f"t-{sink_topic}", **_confluent(schema_registry_url)},
        columns=[{"name": "channel", "type": "STRING"}, {"name": "revenue", "type": "DOUBLE"}],
        role="sink",
    )  # fmt: skip

    @kafka_streaming_asset(sources={"orders": source}, sink=sink, name="revenue_avro")
    def revenue_avro(context, orders):
        return orders.groupBy("channel").agg(F.sum("pay").alias("revenue"))

    resources = {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }
    instance = DagsterInstance.ephemeral()
    assert materialize([revenue_avro], resources=resources, instance=instance).success
    assert materialize([revenue_avro], resources=resources, instance=instance).success
    value = AvroDeserializer(registry)
    out = [
        value(raw, SerializationContext(sink_topic, MessageField.VALUE))
        for raw in _committed_values(kafka_bootstrap, sink_topic)
    ]
    assert sorted((o["channel"], o["revenue"]) for o in out) == [("app", 2.0), ("web", 4.0)]


def test_avro_confluent_schema_id_in_a_header(
    kafka_bootstrap, new_topic, spark, schema_registry_url, registry
) -> None:
    """Newer Confluent serializers put the schema id in a header and leave the value bare."""
    topic = new_topic(partitions=1)
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}
    schema_id = registry.register_schema(f"{topic}-value", _schema(schema))
    payload = io.BytesIO()
    fastavro.schemaless_writer(payload, fastavro.parse_schema(schema), {"id": 42})
    header = ("__value_schema_id", b"\x00" + schema_id.to_bytes(4, "big"))
    send(kafka_bootstrap, topic, [{"value": payload.getvalue(), "headers": [header]}])
    columns = [{"name": "id", "type": "BIGINT"}]
    got = rows(spark, table(topic, kafka_bootstrap, _confluent(schema_registry_url), columns))
    assert [(r["id"], r[ERROR]) for r in got] == [(42, None)]


def _stage_values(spark, raw_values, stages_and_result) -> list[tuple[Any, Any, Any]]:
    """(JVM stage, row, error) per raw value, through the stages ``decode_stages`` returned."""
    stages, (row, error, _) = stages_and_result
    frame = spark.createDataFrame([(bytearray(v),) for v in raw_values], "value binary")
    for stage in stages:
        frame = frame.select("*", *[expr.alias(name) for name, expr in stage.items()])
    jvm = F.col("p_avro_jvm")["__dkf_read"]  # set for every datum from_avro read
    return [(r[0], r[1], r[2]) for r in frame.select(jvm, row, error).collect()]


def test_spark_avro_decodes_clean_records_in_the_jvm_and_python_explains_the_rest(
    spark, schema_registry_url, registry
) -> None:
    """The session has Spark's Avro package: clean datums come out of from_avro, including
    a writer schema older than the table's; bad ones fall back to Python and its reason."""
    from dagster_kafka_flinklike.formats import avro as avro_format
    from dagster_kafka_flinklike.formats import avro_confluent, format_settings

    columns = [
        Column("id", "BIGINT"),
        Column("ts", "TIMESTAMP(3)"),
        Column("tags", "ARRAY<STRING>"),
    ]
    schema = fastavro.parse_schema(json.loads(avro_schema(columns)))
    good = io.BytesIO()
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000)
    fastavro.schemaless_writer(good, schema, {"id": 1, "ts": at, "tags": ["a"]})
    got = _stage_values(
        spark, [good.getvalue(), b"\x02\x09"],
        avro_format.FORMAT.decode_stages(F.col("value"), columns, {}, "p_"),
    )  # fmt: skip
    assert got[0][0] is True and got[0][1] == (1, at, ["a"]) and got[0][2] is None
    assert got[1][0] is None and got[1][1] is None and "not an Avro datum" in got[1][2]

    subject = f"fast-{uuid.uuid4().hex[:8]}-value"
    old = {"type": "record", "name": "Old", "fields": [{"name": "id", "type": "long"}]}
    old_id = registry.register_schema(subject, _schema(old))
    payload = io.BytesIO()
    fastavro.schemaless_writer(payload, fastavro.parse_schema(old), {"id": 7})
    framed = b"\x00" + old_id.to_bytes(4, "big") + payload.getvalue()
    unknown = b"\x00" + (10**6).to_bytes(4, "big") + payload.getvalue()
    options = {"url": schema_registry_url, "subject": subject}
    assert format_settings("avro-confluent", options)["subject"] == subject
    got = _stage_values(
        spark, [framed, unknown],
        avro_confluent.FORMAT.decode_stages(F.col("value"), columns, options, "p_"),
    )  # fmt: skip
    assert got[0][0] is True and got[0][1] == (7, None, None) and got[0][2] is None
    assert got[1][0] is None and "could not be fetched" in got[1][2]
