"""The changelog formats against the real broker: Debezium, Canal, Maxwell and GoldenGate events
(samples written in the shapes their public docs show) in, changelog rows with row kinds out;
frames with ``_rowkind`` written as Flink writes them and read back equal; ``upsert-kafka`` reads
with row kinds, and :func:`latest_per_key`."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest

from dagster_kafka_flinklike import ROW_KIND, KafkaTableSpec, latest_per_key
from dagster_kafka_flinklike.run.decode import input_stats
from dagster_kafka_flinklike.sink.serializer import serialize
from dagster_kafka_flinklike.sink.writer import write
from dagster_kafka_flinklike.source.records import ERROR, TOLERATED
from tests.integration.test_decoding import read_table, send, table
from tests.integration.test_sink_partitioners import consume_all

UTC = dt.UTC
PRODUCTS = [
    {"name": "id", "type": "BIGINT"},
    {"name": "name", "type": "STRING"},
    {"name": "weight", "type": "DECIMAL(10, 2)"},
]
NAMES = ["id", "name", "weight"]


def changelog_rows(spark: Any, spec: KafkaTableSpec) -> list[dict[str, Any]]:
    """Decoded rows in changelog order (partition, offset, then the record's own order)."""
    decoded = read_table(spark, spec)
    return [r.asDict(recursive=True) for r in decoded.collect()]


def kinds_and_rows(got: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r[ROW_KIND], *(r[n] for n in NAMES)) for r in got if r[ERROR] is None]


def dirty(got: list[dict[str, Any]]) -> list[tuple[int, str, bool]]:
    return [(r["__dkf_offset"], r[ERROR], r[TOLERATED]) for r in got if r[ERROR] is not None]


def local(value: dt.datetime) -> dt.datetime:
    """An instant as PySpark returns a TIMESTAMP_LTZ value: naive, in the local time zone."""
    return value.astimezone().replace(tzinfo=None)


def debezium(op: str, before: dict | None, after: dict | None, **extra: Any) -> bytes:
    """A Debezium change event (no schema) in the shape Debezium's docs show."""
    source = {"version": "2.5.0", "connector": "mysql", "name": "dbserver1", "ts_ms": 1700000000000,
              "db": "inventory", "table": "products", "server_id": 223344}  # fmt: skip
    event = {"before": before, "after": after, "source": source, "op": op,
             "ts_ms": 1700000000500, "transaction": None, **extra}  # fmt: skip
    return json.dumps(event).encode()


SCOOTER = {"id": 111, "name": "scooter", "description": "Big 2-wheel scooter", "weight": 5.18}
SCOOTER_2 = {**SCOOTER, "weight": 5.15}
JACKET = {"id": 112, "name": "jacket", "description": "water resistent", "weight": "0.2"}


#: The changelog rows of a snapshot read of SCOOTER, an insert of JACKET, an update of SCOOTER to
#: SCOOTER_2 and a delete of JACKET.
DEBEZIUM_ROWS = [
    ("+I", 111, "scooter", Decimal("5.18")),
    ("+I", 112, "jacket", Decimal("0.20")),
    ("-U", 111, "scooter", Decimal("5.18")),
    ("+U", 111, "scooter", Decimal("5.15")),
    ("-D", 112, "jacket", Decimal("0.20")),
]


def test_debezium_inserts_updates_deletes_and_tombstones(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {"key": b'{"id":111}', "value": debezium("r", None, SCOOTER)},  # snapshot read
            {"key": b'{"id":112}', "value": debezium("c", None, JACKET)},
            {"key": b'{"id":111}', "value": debezium("u", SCOOTER, SCOOTER_2)},
            {"key": b'{"id":112}', "value": debezium("d", JACKET, None)},
            {"key": b'{"id":112}', "value": None},  # the tombstone Debezium writes after a delete
            {"key": b'{"id":113}', "value": b""},
        ],
    )
    spec = table(topic, kafka_bootstrap, {"format": "debezium-json"}, PRODUCTS)
    got = changelog_rows(spark, spec)
    assert kinds_and_rows(got) == DEBEZIUM_ROWS
    assert dirty(got) == []
    assert [r["__dkf_offset"] for r in got] == [0, 1, 2, 2, 3]
    # A record counts once however many rows it yields; tombstones yield none.
    stats = input_stats(read_table(spark, spec))
    assert (stats.records, stats.dirty) == (4, 0)
    assert stats.bytes == sum(len(debezium(*a)) for a in [
        ("r", None, SCOOTER), ("c", None, JACKET), ("u", SCOOTER, SCOOTER_2), ("d", JACKET, None)
    ])  # fmt: skip


def test_debezium_dirty_events_say_why(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    bad = [
        debezium("u", None, SCOOTER_2),  # Postgres without REPLICA IDENTITY FULL
        debezium("d", None, None),
        debezium("t", None, None),  # truncate: not an operation Flink knows
        json.dumps({"before": None, "after": SCOOTER}).encode(),  # no op
        debezium("c", None, None),
        debezium("c", None, {**SCOOTER, "id": "one"}),
        b'{"before": null, "after": {"id": 1}, "op": "c"',
        b"null",
    ]
    send(kafka_bootstrap, topic, [{"value": v} for v in [*bad, debezium("c", None, JACKET)]])
    strict = table(topic, kafka_bootstrap, {"format": "debezium-json"}, PRODUCTS)
    got = changelog_rows(spark, strict)
    prefix = "value (debezium-json): "
    assert dirty(got) == [
        (0, prefix + 'the "before" field of an update is null (for Debezium\'s Postgres '
         "connector, set the table's REPLICA IDENTITY to FULL)", False),
        (1, prefix + 'the "before" field of a delete is null (for Debezium\'s Postgres connector, '
         "set the table's REPLICA IDENTITY to FULL)", False),
        (2, prefix + 'unknown "op" value "t"', False),
        (3, prefix + 'the "op" field is missing', False),
        (4, prefix + 'the "after" field of an insert is null', False),
        (5, prefix + "field 'after.id': 'one' is not a valid BIGINT", False),
        (6, prefix + 'malformed JSON: {"before": null, "after": {"id": 1}, "op": "c"', False),
        (7, prefix + "not a debezium-json record: null", False),
    ]  # fmt: skip
    assert kinds_and_rows(got) == [("+I", 112, "jacket", Decimal("0.20"))]
    tolerant = table(
        topic, kafka_bootstrap,
        {"format": "debezium-json", "debezium-json.ignore-parse-errors": "true"}, PRODUCTS,
    )  # fmt: skip
    got = changelog_rows(spark, tolerant)
    assert [t for _, _, t in dirty(got)] == [True] * len(bad)
    assert input_stats(read_table(spark, tolerant)).dirty == len(bad)


DEBEZIUM_METADATA = [
    *PRODUCTS,
    {"name": "origin_ts", "type": "TIMESTAMP_LTZ(3)",
     "metadata_key": "value.ingestion-timestamp", "virtual": True},
    {"name": "event_time", "type": "TIMESTAMP_LTZ(3)",
     "metadata_key": "value.source.timestamp", "virtual": True},
    {"name": "origin_database", "type": "STRING",
     "metadata_key": "value.source.database", "virtual": True},
    {"name": "origin_schema", "type": "STRING",
     "metadata_key": "value.source.schema", "virtual": True},
    {"name": "origin_table", "type": "STRING",
     "metadata_key": "value.source.table", "virtual": True},
    {"name": "origin_properties", "type": "MAP<STRING, STRING>",
     "metadata_key": "value.source.properties", "virtual": True},
    {"name": "schema", "type": "STRING", "metadata_key": "value.schema", "virtual": True},
    {"name": "kafka_offset", "type": "BIGINT", "metadata_key": "offset", "virtual": True},
]  # fmt: skip


@pytest.mark.parametrize("schema_include", [False, True])
def test_debezium_metadata_with_and_without_schema(
    kafka_bootstrap, new_topic, spark, schema_include
):
    topic = new_topic(partitions=1)
    schema = {"type": "struct", "name": "dbserver1.inventory.products.Envelope", "fields": []}
    events = [debezium("c", None, JACKET), debezium("u", SCOOTER, SCOOTER_2)]
    if schema_include:  # Kafka Connect with value.converter.schemas.enable
        events = [json.dumps({"schema": schema, "payload": json.loads(e)}).encode() for e in events]
    send(kafka_bootstrap, topic, [{"value": e} for e in events])
    options = {"format": "debezium-json",
               "debezium-json.schema-include": str(schema_include).lower()}  # fmt: skip
    got = changelog_rows(spark, table(topic, kafka_bootstrap, options, DEBEZIUM_METADATA))
    assert dirty(got) == []
    assert [r[ROW_KIND] for r in got] == ["+I", "-U", "+U"]
    first = got[0]
    assert first["origin_ts"] == local(dt.datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC))
    assert first["event_time"] == local(dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC))
    assert (first["origin_database"], first["origin_schema"], first["origin_table"]) == (
        "inventory", None, "products"
    )  # fmt: skip
    assert first["origin_properties"]["connector"] == "mysql"
    assert first["origin_properties"]["server_id"] == "223344"
    assert [r["kafka_offset"] for r in got] == [0, 1, 1]
    if schema_include:
        assert json.loads(first["schema"]) == schema
    else:
        assert first["schema"] is None


def test_debezium_schema_include_mismatch_is_dirty(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"value": debezium("c", None, JACKET)}])
    options = {"format": "debezium-json", "debezium-json.schema-include": "true"}
    got = changelog_rows(spark, table(topic, kafka_bootstrap, options, PRODUCTS))
    assert dirty(got) == [
        (0, "value (debezium-json): the \"payload\" field is missing (records without a schema "
         "need 'debezium-json.schema-include' = 'false')", False),
    ]  # fmt: skip


def canal(type_: str, data: list | None, old: list | None = None, **extra: Any) -> bytes:
    """A Canal flat message in the shape Canal's docs show (values as strings)."""
    message = {"data": data, "database": "inventory", "es": 1589373560000, "id": 9,
               "isDdl": False, "mysqlType": {"id": "INTEGER", "name": "VARCHAR(255)",
                                             "weight": "FLOAT"},
               "old": old, "pkNames": ["id"], "sql": "",
               "sqlType": {"id": 4, "name": 12, "weight": 7}, "table": "products",
               "ts": 1589373560798, "type": type_, **extra}  # fmt: skip
    return json.dumps(message).encode()


def test_canal_arrays_updates_with_partial_old_rows_and_include_filters(
    kafka_bootstrap, new_topic, spark
):
    topic = new_topic(partitions=1)
    rows = [{"id": "111", "name": "scooter", "weight": "5.18"},
            {"id": "112", "name": "car", "weight": "20"}]  # fmt: skip
    updated = [{"id": "111", "name": "scooter", "weight": "5.15"},
               {"id": "112", "name": None, "weight": "20"}]  # fmt: skip
    send(
        kafka_bootstrap,
        topic,
        [
            {"value": canal("INSERT", rows)},
            # 'old' holds the changed fields only; a field present as null was null before
            {"value": canal("UPDATE", updated, [{"weight": "5.18"}, {"name": "car"}])},
            {"value": canal("DELETE", [updated[1]])},
            # other tables and databases of the same topic: left out, not decoded
            {"value": canal("INSERT", [{"id": "x", "weight": "heavy"}], table="orders")},
            {"value": canal("INSERT", [{"id": "1"}], database="billing")},
            {"value": canal("CREATE", None, isDdl=True, sql="CREATE TABLE products (...)")},
            {"value": canal("ALTER", None, isDdl=True)},
            {"value": canal("UPDATE", updated)},
            {"value": canal("UPDATE", updated, [{"weight": "1"}])},
            {"value": canal("INSERT", None)},
            {"value": json.dumps({"data": [], "type": "INSERT", "table": "products"}).encode()},
        ],
    )
    columns = [
        *PRODUCTS,
        {"name": "db", "type": "STRING", "metadata_key": "value.database", "virtual": True},
        {"name": "tbl", "type": "STRING", "metadata_key": "value.table", "virtual": True},
        {"name": "types", "type": "MAP<STRING, INT>", "metadata_key": "value.sql-type",
         "virtual": True},
        {"name": "pks", "type": "ARRAY<STRING>", "metadata_key": "value.pk-names",
         "virtual": True},
        {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "value.ingestion-timestamp",
         "virtual": True},
        {"name": "es", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "value.event-timestamp",
         "virtual": True},
    ]  # fmt: skip
    options = {"format": "canal-json", "canal-json.database.include": "inv.*",
               "canal-json.table.include": "products|items"}  # fmt: skip
    got = changelog_rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert kinds_and_rows(got) == [
        ("+I", 111, "scooter", Decimal("5.18")),
        ("+I", 112, "car", Decimal("20.00")),
        ("-U", 111, "scooter", Decimal("5.18")),
        ("+U", 111, "scooter", Decimal("5.15")),
        ("-U", 112, "car", Decimal("20.00")),
        ("+U", 112, None, Decimal("20.00")),
        ("-D", 112, None, Decimal("20.00")),
    ]
    prefix = "value (canal-json): "
    assert dirty(got) == [
        (6, prefix + 'unknown "type" value "ALTER"', False),
        (7, prefix + 'the "old" field of an UPDATE is missing', False),
        (8, prefix + 'the "old" field of an UPDATE has fewer rows than "data"', False),
        (9, prefix + 'the "data" field of an INSERT is missing', False),
        (10, prefix + "the \"database\" field is missing ('canal-json.database.include' needs it)",
         False),
    ]  # fmt: skip
    first = got[0]
    assert (first["db"], first["tbl"], first["pks"]) == ("inventory", "products", ["id"])
    assert first["types"] == {"id": 4, "name": 12, "weight": 7}
    assert first["ts"] == local(dt.datetime(2020, 5, 13, 12, 39, 20, 798000, tzinfo=UTC))
    assert first["es"] == local(dt.datetime(2020, 5, 13, 12, 39, 20, tzinfo=UTC))
    stats = input_stats(read_table(spark, table(topic, kafka_bootstrap, options, columns)))
    assert (stats.records, stats.dirty) == (8, 5)  # filtered records and the DDL yield nothing


def maxwell(type_: str, data: dict | None, old: dict | None = None) -> bytes:
    """A Maxwell event in the shape Maxwell's docs show (``ts`` in seconds)."""
    event = {"database": "test", "table": "products", "type": type_, "ts": 1477053217,
             "xid": 23396, "commit": True, "position": "master.000006:800911",
             "server_id": 23042, "thread_id": 108, "primary_key": [111],
             "primary_key_columns": ["id"], "data": data}  # fmt: skip
    if old is not None:
        event["old"] = old
    return json.dumps(event).encode()


def test_maxwell_changes_metadata_and_dirty_events(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    send(
        kafka_bootstrap,
        topic,
        [
            {"value": maxwell("insert", SCOOTER)},
            {"value": maxwell("update", SCOOTER_2, {"weight": 5.18})},
            {"value": maxwell("update", {**SCOOTER_2, "name": None}, {"name": "scooter"})},
            {"value": maxwell("delete", {**SCOOTER_2, "name": None})},
            {"value": maxwell("update", SCOOTER_2)},
            {"value": maxwell("bootstrap-start", {})},
            {"value": None},
        ],
    )
    columns = [
        *PRODUCTS,
        {"name": "db", "type": "STRING", "metadata_key": "value.database", "virtual": True},
        {"name": "tbl", "type": "STRING", "metadata_key": "value.table", "virtual": True},
        {"name": "pks", "type": "ARRAY<STRING>", "metadata_key": "value.primary-key-columns",
         "virtual": True},
        {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "value.ingestion-timestamp",
         "virtual": True},
    ]  # fmt: skip
    got = changelog_rows(spark, table(topic, kafka_bootstrap, {"format": "maxwell-json"}, columns))
    assert kinds_and_rows(got) == [
        ("+I", 111, "scooter", Decimal("5.18")),
        ("-U", 111, "scooter", Decimal("5.18")),
        ("+U", 111, "scooter", Decimal("5.15")),
        ("-U", 111, "scooter", Decimal("5.15")),
        ("+U", 111, None, Decimal("5.15")),
        ("-D", 111, None, Decimal("5.15")),
    ]
    assert dirty(got) == [
        (4, 'value (maxwell-json): the "old" field of an update is missing', False),
        (5, 'value (maxwell-json): unknown "type" value "bootstrap-start"', False),
    ]
    first = got[0]
    assert (first["db"], first["tbl"], first["pks"]) == ("test", "products", ["id"])
    assert first["ts"] == local(dt.datetime(2016, 10, 21, 12, 33, 37, tzinfo=UTC))


def test_ogg_operations_and_metadata(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)

    def ogg(op: str, before: dict | None, after: dict | None) -> bytes:
        return json.dumps({"before": before, "after": after, "op_type": op,
                           "op_ts": "2020-05-13 15:40:06.000000",
                           "current_ts": "2020-05-13 15:40:07.000000",
                           "primary_keys": ["id"], "pos": "00000000000000000000143",
                           "table": "ORCL.PRODUCTS"}).encode()  # fmt: skip

    send(kafka_bootstrap, topic, [{"value": ogg("I", None, SCOOTER)},
                                  {"value": ogg("U", SCOOTER, SCOOTER_2)},
                                  {"value": ogg("D", SCOOTER_2, None)},
                                  {"value": ogg("T", None, None)}])  # fmt: skip
    columns = [
        *PRODUCTS,
        {"name": "tbl", "type": "STRING", "metadata_key": "value.table", "virtual": True},
        {"name": "op_ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "value.op_ts",
         "virtual": True},
        {"name": "pos", "type": "STRING", "metadata_key": "value.pos", "virtual": True},
    ]  # fmt: skip
    got = changelog_rows(spark, table(topic, kafka_bootstrap, {"format": "ogg-json"}, columns))
    assert kinds_and_rows(got) == [
        ("+I", 111, "scooter", Decimal("5.18")),
        ("-U", 111, "scooter", Decimal("5.18")),
        ("+U", 111, "scooter", Decimal("5.15")),
        ("-D", 111, "scooter", Decimal("5.15")),
    ]
    assert dirty(got) == [(3, 'value (ogg-json): unknown "op_type" value "T"', False)]
    assert (got[0]["tbl"], got[0]["pos"]) == ("ORCL.PRODUCTS", "00000000000000000000143")
    assert got[0]["op_ts"] == local(dt.datetime(2020, 5, 13, 15, 40, 6, tzinfo=UTC))


# --------------------------------------------------------------------------------------------
# Writing


CHANGES = [("+I", 1, "a", "1.50"), ("+I", 2, "b", "2.00"), ("-U", 1, "a", "1.50"),
           ("+U", 1, "a2", "1.25"), ("-D", 2, "b", "2.00")]  # fmt: skip
EXPECTED_VALUES = {
    "debezium-json": [
        {"before": None, "after": {"id": 1, "name": "a", "weight": 1.5}, "op": "c"},
        {"before": None, "after": {"id": 2, "name": "b", "weight": 2.0}, "op": "c"},
        {"before": {"id": 1, "name": "a", "weight": 1.5}, "after": None, "op": "d"},
        {"before": None, "after": {"id": 1, "name": "a2", "weight": 1.25}, "op": "c"},
        {"before": {"id": 2, "name": "b", "weight": 2.0}, "after": None, "op": "d"},
    ],
    "canal-json": [
        {"data": [{"id": 1, "name": "a", "weight": 1.5}], "type": "INSERT"},
        {"data": [{"id": 2, "name": "b", "weight": 2.0}], "type": "INSERT"},
        {"data": [{"id": 1, "name": "a", "weight": 1.5}], "type": "DELETE"},
        {"data": [{"id": 1, "name": "a2", "weight": 1.25}], "type": "INSERT"},
        {"data": [{"id": 2, "name": "b", "weight": 2.0}], "type": "DELETE"},
    ],
    "maxwell-json": [
        {"data": {"id": 1, "name": "a", "weight": 1.5}, "type": "insert"},
        {"data": {"id": 2, "name": "b", "weight": 2.0}, "type": "insert"},
        {"data": {"id": 1, "name": "a", "weight": 1.5}, "type": "delete"},
        {"data": {"id": 1, "name": "a2", "weight": 1.25}, "type": "insert"},
        {"data": {"id": 2, "name": "b", "weight": 2.0}, "type": "delete"},
    ],
    "ogg-json": [
        {"before": None, "after": {"id": 1, "name": "a", "weight": 1.5}, "op_type": "I"},
        {"before": None, "after": {"id": 2, "name": "b", "weight": 2.0}, "op_type": "I"},
        {"before": {"id": 1, "name": "a", "weight": 1.5}, "after": None, "op_type": "D"},
        {"before": None, "after": {"id": 1, "name": "a2", "weight": 1.25}, "op_type": "I"},
        {"before": {"id": 2, "name": "b", "weight": 2.0}, "after": None, "op_type": "D"},
    ],
}
#: What reading back what Flink wrote gives: an update-before is written as a delete, an
#: update-after as an insert (Flink's formats cannot combine them into one update event).
READ_BACK = {"+I": "+I", "-U": "-D", "+U": "+I", "-D": "-D"}


def write_changes(spark: Any, options: dict[str, str]) -> None:
    """Write :data:`CHANGES` (row kinds and rows of :data:`PRODUCTS`) through the sink table of
    the source ``options``."""
    sink_options = {k: v for k, v in options.items() if not k.startswith("scan.")}
    sink = KafkaTableSpec.from_options(sink_options, columns=PRODUCTS, role="sink")
    frame = spark.createDataFrame(
        spark.sparkContext.parallelize(CHANGES, 1),
        f"{ROW_KIND} string, id long, name string, w string",
    ).selectExpr("id", "name", "CAST(w AS DECIMAL(10, 2)) AS weight", ROW_KIND)
    bootstrap = options["properties.bootstrap.servers"]
    result = write(serialize(sink, frame), options["topic"], {"bootstrap.servers": bootstrap})
    assert result.failed == 0, result.first_error


@pytest.mark.parametrize("name", sorted(EXPECTED_VALUES))
def test_frames_with_row_kinds_are_written_as_flink_writes_them_and_read_back(
    kafka_bootstrap, new_topic, spark, name
):
    topic = new_topic(partitions=1)
    options = {"connector": "kafka", "topic": topic, "format": name, "key.format": "json",
               "key.fields": "id", "properties.bootstrap.servers": kafka_bootstrap,
               "scan.startup.mode": "earliest-offset"}  # fmt: skip
    write_changes(spark, options)
    records = consume_all(kafka_bootstrap, topic)
    assert [json.loads(r.value) for r in records] == EXPECTED_VALUES[name]
    assert [json.loads(r.key) for r in records] == [{"id": i} for _, i, _, _ in CHANGES]

    source = KafkaTableSpec.from_options(options, columns=PRODUCTS, role="source")
    got = changelog_rows(spark, source)
    assert kinds_and_rows(got) == [
        (READ_BACK[k], i, n, Decimal(w)) for k, i, n, w in CHANGES
    ]  # fmt: skip
    # Folded into a table, the read-back changelog is the table the written one describes.
    latest = latest_per_key(read_table(spark, source).filter(f"{ERROR} IS NULL"), ["id"])
    assert [tuple(r) for r in latest.select(*NAMES).collect()] == [(1, "a2", Decimal("1.25"))]


def test_a_frame_without_row_kinds_is_written_as_inserts(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "format": "debezium-json",
         "debezium-json.encode.decimal-as-plain-number": "true"},
        columns=[*PRODUCTS[:2], {"name": "weight", "type": "DECIMAL(20, 9)"}], role="sink",
    )  # fmt: skip
    frame = spark.createDataFrame(
        [(1, "a", Decimal("0.000000027"))], "id long, name string, weight decimal(20, 9)"
    )
    result = write(serialize(sink, frame), topic, {"bootstrap.servers": kafka_bootstrap})
    assert result.failed == 0, result.first_error
    (record,) = consume_all(kafka_bootstrap, topic)
    assert record.value == (
        b'{"before":null,"after":{"id":1,"name":"a","weight":0.000000027},"op":"c"}'
    )


def test_an_unknown_row_kind_fails_a_changelog_write(kafka_bootstrap, new_topic, spark):
    from dagster_kafka_flinklike import KafkaConnectorError

    topic = new_topic(partitions=1)
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, "format": "canal-json"}, columns=PRODUCTS[:1],
        role="sink",
    )  # fmt: skip
    frame = spark.createDataFrame([(1, "+I"), (2, "~U")], f"id long, {ROW_KIND} string")
    with pytest.raises(KafkaConnectorError, match=rf"'{ROW_KIND}' holds row kind '~U'"):
        result = write(serialize(sink, frame), topic, {"bootstrap.servers": kafka_bootstrap})
        assert result.failed == 0


# --------------------------------------------------------------------------------------------
# upsert-kafka reads and latest_per_key


def test_upsert_kafka_reads_carry_row_kinds_and_fold_into_the_latest_rows(
    kafka_bootstrap, new_topic, spark
):
    topic = new_topic(partitions=2)
    changes = [
        (1, {"id": 1, "name": "a"}, 0),
        (2, {"id": 2, "name": "b"}, 1),
        (1, {"id": 1, "name": "a2"}, 0),
        (2, None, 1),  # tombstone: key 2 deleted
        (3, {"id": 3, "name": "c"}, 0),
        (1, {"id": 1, "name": "a3"}, 0),
        (3, None, 0),
        (3, {"id": 3, "name": "c2"}, 0),  # re-inserted after its deletion
    ]
    send(kafka_bootstrap, topic, [
        {"key": json.dumps({"id": k}).encode(),
         "value": None if v is None else json.dumps(v).encode(), "partition": p}
        for k, v, p in changes
    ])  # fmt: skip
    spec = KafkaTableSpec.from_options(
        {"connector": "upsert-kafka", "topic": topic, "key.format": "json",
         "value.format": "json", "properties.bootstrap.servers": kafka_bootstrap},
        columns=[{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "name", "type": "STRING"}],
        primary_key=["id"], role="source",
    )  # fmt: skip
    decoded = read_table(spark, spec)
    assert decoded.columns[:3] == ["id", "name", ROW_KIND]
    got = sorted(
        (r["__dkf_partition"], r["__dkf_offset"], r[ROW_KIND], r["id"], r["name"])
        for r in decoded.collect()
    )
    assert got == [
        (0, 0, "+I", 1, "a"), (0, 1, "+I", 1, "a2"), (0, 2, "+I", 3, "c"), (0, 3, "+I", 1, "a3"),
        (0, 4, "-D", 3, None), (0, 5, "+I", 3, "c2"), (1, 0, "+I", 2, "b"), (1, 1, "-D", 2, None),
    ]  # fmt: skip
    frame = decoded.filter(f"{ERROR} IS NULL").select("id", "name", ROW_KIND)
    latest = latest_per_key(frame, "id")
    assert latest.columns == ["id", "name"]
    assert sorted(tuple(r) for r in latest.collect()) == [(1, "a3"), (3, "c2")]
    # With explicit changelog order columns (partition and offset metadata), the same table.
    ordered = (
        decoded.filter(f"{ERROR} IS NULL")
        .selectExpr("id", "name", ROW_KIND, "__dkf_partition AS p", "__dkf_offset AS o")
        .orderBy("o")
    )  # shuffled out of Kafka order: order_by restores it
    latest = latest_per_key(ordered, ["id"], order_by=["p", "o"]).drop("p", "o")
    assert sorted(tuple(r) for r in latest.collect()) == [(1, "a3"), (3, "c2")]


def test_latest_per_key_refuses_unknown_columns(spark):
    from dagster_kafka_flinklike import KafkaOptionsError

    frame = spark.createDataFrame([(1, "+I")], f"id long, {ROW_KIND} string")
    with pytest.raises(KafkaOptionsError, match="'nope' not in the frame's columns"):
        latest_per_key(frame, ["nope"])
    with pytest.raises(KafkaOptionsError, match="at least one key column"):
        latest_per_key(frame, [])


# --------------------------------------------------------------------------------------------
# Streaming assets


@pytest.fixture
def resources(kafka_bootstrap, spark):
    from dagster_kafka_flinklike import KafkaResource, SparkResource
    from dagster_kafka_flinklike.spark import local_spark_config

    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def test_a_streaming_asset_converts_a_debezium_changelog_and_materializes_it(
    kafka_bootstrap, new_topic, resources
):
    from dagster import DagsterInstance, materialize

    from dagster_kafka_flinklike import kafka_streaming_asset

    source_topic, canal_topic, table_topic = (new_topic(partitions=1) for _ in range(3))
    send(kafka_bootstrap, source_topic, [
        {"value": debezium("c", None, JACKET)},
        {"value": debezium("c", None, SCOOTER)},
        {"value": debezium("u", SCOOTER, SCOOTER_2)},
        {"value": debezium("d", JACKET, None)},
        {"value": None},
    ])  # fmt: skip
    source = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": source_topic, "format": "debezium-json",
         "scan.startup.mode": "earliest-offset", "properties.group.id": f"g-{source_topic}"},
        columns=PRODUCTS, role="source", name="products_cdc",
    )  # fmt: skip
    canal_sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": canal_topic, "format": "canal-json"},
        columns=PRODUCTS, role="sink",
    )  # fmt: skip
    table_sink = KafkaTableSpec.from_options(
        {"connector": "upsert-kafka", "topic": table_topic, "key.format": "json",
         "value.format": "json"},
        columns=[{"name": "id", "type": "BIGINT NOT NULL"}, *PRODUCTS[1:]], primary_key=["id"],
        role="sink",
    )  # fmt: skip

    @kafka_streaming_asset(sources={"products": source}, sink=canal_sink, name="as_canal")
    def as_canal(context, products):
        assert products.columns == [*NAMES, ROW_KIND]
        return products  # the row kinds go on to the sink

    @kafka_streaming_asset(sources={"products": source}, sink=table_sink, name="as_table")
    def as_table(context, products):
        return latest_per_key(products, ["id"])

    instance = DagsterInstance.ephemeral()
    result = materialize([as_canal, as_table], resources=resources, instance=instance)
    assert result.success
    meta = result.asset_materializations_for_node("as_canal")[0].metadata
    assert meta["numRecordsIn"].value == 4  # records, not the 5 rows they yield
    assert meta["numRecordsOut"].value == 5
    written = [json.loads(r.value) for r in consume_all(kafka_bootstrap, canal_topic)]
    assert [(w["type"], w["data"][0]["id"]) for w in written] == [
        ("INSERT", 112), ("INSERT", 111), ("DELETE", 111), ("INSERT", 111), ("DELETE", 112),
    ]  # fmt: skip
    (row,) = [json.loads(r.value) for r in consume_all(kafka_bootstrap, table_topic)]
    assert row == {"id": 111, "name": "scooter", "weight": 5.15}


# --------------------------------------------------------------------------------------------
# The format modules' contract, on Spark alone


def decode_module(spark, name: str, values: list[bytes | None], columns, options, staged: bool):
    """``decode_changelog_stages`` of format ``name`` over ``values``: (kinds+rows, errors)."""
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.formats import get_format
    from dagster_kafka_flinklike.options import Column

    cols = [Column(**c) for c in columns]
    frame = spark.createDataFrame([(v,) for v in values], "value binary")
    stages, (rows, meta, error, tolerated) = get_format(name).decode_changelog_stages(
        F.col("value"), cols, [], options, "__t_" if staged else None
    )
    assert meta is None
    for stage in stages:
        if stage:
            frame = frame.select("*", *[e.alias(n) for n, e in stage.items()])
    out = frame.select(rows.alias("rows"), error.alias("error"), tolerated.alias("ok")).collect()
    changes = [[(c["k"], *c["r"]) for c in r["rows"] or []] for r in out]
    return changes, [(r["error"], r["ok"]) for r in out]


@pytest.mark.parametrize("staged", [False, True])
def test_maxwell_module_decodes_envelopes_staged_or_not(spark, staged):
    columns = [{"name": "id", "type": "INT"}, {"name": "note", "type": "STRING"},
               {"name": "at", "type": "TIMESTAMP(3)"}]  # fmt: skip
    values = [
        json.dumps({"type": "insert",
                    "data": {"id": 1, "note": "x", "at": "2020-12-30T12:13:14.123"}}),
        # 'old' names a field as null: it was null before; 'at' is absent from 'old': unchanged
        json.dumps({"type": "update", "data": {"id": 1, "note": "y", "at": "2020-12-30T12:13:14"},
                    "old": {"note": None}}),
        json.dumps({"type": "update", "data": {"id": "x"}, "old": {}}),
        None,
        "",
        "  ",
    ]  # fmt: skip
    options = {"timestamp-format.standard": "ISO-8601", "ignore-parse-errors": "true"}
    changes, errors = decode_module(
        spark, "maxwell-json", [None if v is None else v.encode() for v in values], columns,
        options, staged,
    )  # fmt: skip
    at_1 = dt.datetime(2020, 12, 30, 12, 13, 14, 123000)
    at_2 = dt.datetime(2020, 12, 30, 12, 13, 14)
    assert changes == [
        [("+I", 1, "x", at_1)],
        [("-U", 1, None, at_2), ("+U", 1, "y", at_2)],
        # tolerated, and kept as Flink keeps it: the field that failed is null
        [("-U", None, None, None), ("+U", None, None, None)],
        [], [], [],
    ]  # fmt: skip
    assert errors == [
        (None, False),
        (None, False),
        ("field 'data.id': 'x' is not a valid INT", True),
        (None, False),  # tombstones: no row, not dirty
        (None, False),
        ("not a maxwell-json record:   ", True),
    ]
