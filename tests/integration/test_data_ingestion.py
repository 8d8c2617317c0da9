"""Data-ingestion pipeline YAML on a real broker and Spark, materialized with Dagster.

Debezium JSON, Canal JSON and JSON records (written in the shapes their public docs show) go in;
the tests read the sink topics back and check records, values, change kinds, the table → topic
routing, dirty-record counting and thresholds, the checkpoint, and exactly-once.
"""

from __future__ import annotations

import json
import uuid
import warnings
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from dagster import AssetKey, DagsterInstance, materialize
from dagster.components.testing import create_defs_folder_sandbox

from dagster_kafka_flinklike import (
    DirtyDataCheck,
    KafkaResource,
    SparkResource,
    build_data_ingestion_definitions,
)
from dagster_kafka_flinklike.sink.partitioners import java_default_partition
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import consume_all, produce, wait_for_topic
from tests.ingestion_seed import as_written, seed_pipelines

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def unique(stem: str) -> str:
    return f"{stem}_{uuid.uuid4().hex[:8]}"


def topics(admin: AdminClient, *names: str, partitions: int = 1) -> None:
    """Create sink topics (the seed: topics must exist before the pipeline writes them)."""
    futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names])
    for future in futures.values():
        future.result(timeout=60)
    for name in names:
        wait_for_topic(admin, name, partitions)


def read(bootstrap: str, topic: str, partitions: int = 1) -> list[tuple[Any, Any, int]]:
    """(key, value as JSON, partition) of every record of ``topic``, in offset order."""
    out = []
    for m in consume_all(bootstrap, topic, partitions):
        key = m.key()
        try:
            key = json.loads(key) if key is not None else None
        except ValueError:
            key = key.decode()
        out.append((key, json.loads(m.value()), m.partition()))
    return out


def run(defs: Any, name: str, resources: dict, instance: DagsterInstance, ok: bool = True) -> Any:
    asset = defs.get_assets_def(AssetKey(name))
    result = materialize([asset], resources=resources, instance=instance, raise_on_error=False)
    assert result.success is ok, failure(result)
    return result


def failure(result: Any) -> str:
    return "\n".join(
        e.step_failure_data.error.to_string() for e in result.get_step_failure_events()
    )


def meta(result: Any, name: str) -> dict[str, Any]:
    [mat] = result.asset_materializations_for_node(name)
    return {k: getattr(v, "value", getattr(v, "data", v)) for k, v in mat.metadata.items()}


def debezium(op: str, before: Any, after: Any, db: str, table: str) -> bytes:
    """A Debezium change event without schema, as Debezium's docs show it."""
    source = {"version": "2.5.0", "connector": "mysql", "name": "dbserver1", "ts_ms": 1,
              "db": db, "table": table, "server_id": 223344}  # fmt: skip
    return json.dumps({"before": before, "after": after, "source": source, "op": op,
                       "ts_ms": 2}).encode()  # fmt: skip


def canal(kind: str, data: Any, db: str, table: str, old: Any = None, **extra: Any) -> bytes:
    """A Canal row event, as Canal's docs show it (values as text, sqlType codes)."""
    event = {"data": data, "database": db, "table": table, "type": kind, "old": old,
             "pkNames": ["id"], "isDdl": False, "es": 1, "ts": 2, **extra}  # fmt: skip
    return json.dumps(event).encode()


def commit_group(bootstrap: str, group: str, topic: str, partitions: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(
        offsets=[TopicPartition(topic, p, 0) for p in range(partitions)], asynchronous=False
    )
    consumer.close()


# -- the seed's Kafka -> Kafka example as written ----------------------------------------------


def test_seed_syntax_example_writes_each_debezium_table_to_its_topic(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    [example] = [e for e in seed_pipelines() if e.line == 1387]
    source = new_topic(partitions=2)
    db = unique("inventory")
    topics(admin, f"{db}.products", f"{db}.customers")
    scooter = {"id": 101, "name": "scooter", "weight": 5}
    scooter2 = {**scooter, "name": "scooter II", "weight": 5.25}
    jacket = {"id": 102, "name": "jacket", "weight": 0.2}
    produce(kafka_bootstrap, source, [
        (b'{"id":101}', debezium("r", None, scooter, db, "products"), 0),
        (b'{"id":102}', debezium("c", None, jacket, db, "products"), 0),
        (b'{"id":101}', debezium("u", scooter, scooter2, db, "products"), 0),
        (b'{"id":102}', debezium("d", jacket, None, db, "products"), 0),
        (b'{"id":102}', None, 0),  # the tombstone Debezium writes after a delete
        (b'{"id":1}', debezium("c", None, {"id": 1, "email": "a@b.c"}, db, "customers"), 1),
    ])  # fmt: skip
    text = as_written(example, kafka_bootstrap, source)
    defs = build_data_ingestion_definitions(text, variables={"kafka.topic": source}, name="seed")
    instance = DagsterInstance.ephemeral()

    # As written the source starts at its consumer group's offsets; a new group has none.
    first = run(defs, "seed", resources, instance, ok=False)
    assert "properties.auto.offset.reset" in failure(first)
    commit_group(kafka_bootstrap, "KafkaSource-Kafka_source", source, 2)

    result = run(defs, "seed", resources, instance)
    got = meta(result, "seed")
    assert (got["numRecordsIn"], got["dirtyRecords"], got["numRecordsOut"]) == (5, 0, 5)
    assert got["kafka/ingestion/topics"] == {f"{db}.customers": 1, f"{db}.products": 4}
    assert got["kafka/ingestion/routing"] == {
        f"{db}.customers": {f"{db}.customers": f"{db}.customers"},
        f"{db}.products": {f"{db}.products": f"{db}.products"},
    }
    schema = got[f"kafka/schema/{db}.products"]
    assert [(c.name, c.type) for c in schema.columns] == [
        ("id", "BIGINT"), ("name", "STRING"), ("weight", "DOUBLE")
    ]  # fmt: skip
    products = read(kafka_bootstrap, f"{db}.products")
    source_field = {"db": db, "table": "products"}
    scooter_d = {**scooter, "weight": 5.0}  # the column is DOUBLE: 5 is written 5.0
    assert [(k, v, p) for k, v, p in products] == [
        (None, {"before": None, "after": scooter_d, "op": "c", "source": source_field}, 0),
        (None, {"before": None, "after": jacket, "op": "c", "source": source_field}, 0),
        (None, {"before": scooter_d, "after": scooter2, "op": "u", "source": source_field}, 0),
        (None, {"before": jacket, "after": None, "op": "d", "source": source_field}, 0),
    ]
    [(_, customer, _)] = read(kafka_bootstrap, f"{db}.customers")
    assert customer["after"] == {"id": 1, "email": "a@b.c"} and customer["op"] == "c"

    # The next run reads from the checkpoint; a new column widens the table's schema.
    produce(kafka_bootstrap, source, [
        (b'{"id":103}', debezium("c", None, {"id": 103, "name": "cap", "weight": 1, "color": "red"},
                                 db, "products"), 1),
    ])  # fmt: skip
    again = meta(run(defs, "seed", resources, instance), "seed")
    assert (again["numRecordsIn"], again["numRecordsOut"]) == (1, 1)
    assert again[f"kafka/schema_changes/{db}.products"] == ["added column `color` STRING"]
    assert f"kafka/schema/{db}.customers" in again  # kept for tables this run did not see
    last = read(kafka_bootstrap, f"{db}.products")[-1][1]
    assert last["after"] == {"id": 103, "name": "cap", "weight": 1.0, "color": "red"}
    nothing = meta(run(defs, "seed", resources, instance), "seed")
    assert (nothing["numRecordsIn"], nothing["numRecordsOut"]) == (0, 0)


# -- Canal JSON: routes, SQL types, keys and hash-by-key ---------------------------------------


def test_canal_routes_merge_shards_rename_tables_and_hash_keys(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    source = new_topic(partitions=1)
    db, ods = unique("shop"), unique("ods")
    topics(admin, f"{db}.orders", partitions=3)
    topics(admin, f"{ods}.ods_users")
    types = {"id": 4, "amount": 8, "note": 12}
    produce(kafka_bootstrap, source, [
        (None, canal("INSERT", [{"id": "1", "amount": "10.5"}, {"id": "2", "amount": "20"}], db,
                     "orders_01", sqlType={"id": 4, "amount": 8})),
        (None, canal("INSERT", [{"id": "3", "amount": "7.25", "note": "gift"}], db, "orders_02",
                     sqlType=types)),
        (None, canal("UPDATE", [{"id": "1", "amount": "11"}], db, "orders_01",
                     old=[{"amount": "10.5"}], sqlType={"id": 4, "amount": 8})),
        (None, canal("DELETE", [{"id": "2", "amount": "20"}], db, "orders_01",
                     sqlType={"id": 4, "amount": 8})),
        (None, json.dumps({"data": None, "database": db, "table": "orders_01", "type": "ALTER",
                           "isDdl": True, "sql": "ALTER TABLE orders_01 ADD note TEXT"}).encode()),
        (None, canal("INSERT", [{"id": "9", "name": "ann"}], db, "users", sqlType={"id": 4})),
    ])  # fmt: skip
    pipeline = f"""
source:
  type: kafka
  properties.bootstrap.servers: {kafka_bootstrap}
  topic: {source}
  value.format: canal-json
  scan.startup.mode: earliest-offset
  canal-json.infer-schema.strategy: SQL_TYPE
sink:
  type: kafka
  value.format: canal-json
  key.format: json
  partition.strategy: hash-by-key
route:
  - source-table: {db}.orders_\\.*
    sink-table: {db}.orders
    description: merge the shards
  - source-table: {db}.users
    sink-table: {ods}.ods_<>
    replace-symbol: <>
pipeline:
  name: canal shop
"""
    defs = build_data_ingestion_definitions(pipeline)
    got = meta(run(defs, "canal_shop", resources, DagsterInstance.ephemeral()), "canal_shop")
    assert (got["numRecordsIn"], got["numRecordsOut"]) == (5, 6)  # the DDL record yields nothing
    assert got["kafka/ingestion/routing"] == {
        f"{db}.orders_01": {f"{db}.orders": f"{db}.orders"},
        f"{db}.orders_02": {f"{db}.orders": f"{db}.orders"},
        f"{db}.users": {f"{ods}.ods_users": f"{ods}.ods_users"},
    }
    orders = read(kafka_bootstrap, f"{db}.orders", 3)
    by_id: dict[int, list[dict]] = {}
    for key, value, partition in orders:
        assert key == {"TableId": f"{db}.orders", "id": value["data"][0]["id"]}
        raw_key = json.dumps(key, separators=(",", ":")).encode()
        assert partition == java_default_partition(raw_key, 3)
        assert (value["database"], value["table"], value["pkNames"]) == (db, "orders", ["id"])
        by_id.setdefault(value["data"][0]["id"], []).append(value)
    row = {"id": 1, "amount": 10.5, "note": None}  # merged schema: orders_01 has no note
    assert [(v["type"], v["old"], v["data"]) for v in by_id[1]] == [
        ("INSERT", None, [row]),
        ("UPDATE", [row], [{**row, "amount": 11.0}]),
    ]
    assert [v["type"] for v in by_id[2]] == ["INSERT", "DELETE"]
    assert by_id[3][0]["data"] == [{"id": 3, "amount": 7.25, "note": "gift"}]
    [(key, user, _)] = read(kafka_bootstrap, f"{ods}.ods_users")
    assert key == {"TableId": f"{ods}.ods_users", "id": 9}
    assert (user["database"], user["table"], user["data"]) == (
        ods,
        "ods_users",
        [{"id": 9, "name": "ann"}],
    )


# -- mapping, schemas in Debezium output, the component ----------------------------------------


def test_component_pipeline_file_maps_tables_to_one_topic_keeping_their_ids(
    kafka_bootstrap, new_topic, admin
) -> None:
    source, out = new_topic(partitions=1), unique("mytable")
    db = unique("mydb")
    topics(admin, out)
    produce(kafka_bootstrap, source, [
        (None, debezium("c", None, {"id": 1, "v": "a"}, db, "mytable1")),
        (None, debezium("c", None, {"id": 2, "w": True}, db, "mytable2")),
        (None, debezium("u", {"id": 1, "v": "a"}, {"id": 1, "v": "b"}, db, "mytable1")),
    ])  # fmt: skip
    pipeline = """\
source:
  type: kafka
  name: Kafka Source
  properties.bootstrap.servers: ${kafka.bootstraps.server}
  topic: ${kafka.topic}
  scan.startup.mode: earliest-offset
sink:
  type: kafka
  name: Kafka Sink
  properties.bootstrap.servers: ${kafka.bootstraps.server}
  sink.tableId-to-topic.mapping: ${db}.mytable1,${db}.mytable2:${out}
  debezium-json.include-schema.enabled: true
"""
    defs_yaml = f"""\
type: dagster_kafka_flinklike.KafkaPipelineComponent
attributes:
  data_ingestion:
    - pipeline_file: mapped.yaml
      name: mapped
      variables:
        kafka.topic: {source}
        kafka.bootstraps.server: {kafka_bootstrap}
        db: {db}
        out: {out}
  kafka: {{bootstrap_servers: {kafka_bootstrap}}}
  spark:
    spark_config: {{spark.master: "local[2]", spark.sql.shuffle.partitions: "2",
                   spark.sql.session.timeZone: UTC, spark.ui.enabled: "false"}}
"""
    with warnings.catch_warnings(), create_defs_folder_sandbox() as sandbox:
        warnings.simplefilter("ignore")
        folder = sandbox.defs_folder_path / "ingestion"
        folder.mkdir()
        (folder / "defs.yaml").write_text(defs_yaml)
        (folder / "mapped.yaml").write_text(pipeline)
        with sandbox.load_component_and_build_defs(defs_path=folder) as (_, defs):
            assert {k.to_user_string() for k in defs.resolve_all_asset_keys()} == {
                "mapped",
                "Kafka_Source",
            }
            result = materialize(
                [defs.get_assets_def(AssetKey("mapped"))],
                resources=defs.resources,
                instance=DagsterInstance.ephemeral(),
            )
    assert result.success
    assert meta(result, "mapped")["kafka/ingestion/topics"] == {out: 3}
    records = [value for _, value, _ in read(kafka_bootstrap, out)]
    payloads = [r["payload"] for r in records]
    assert [(p["source"]["table"], p["op"]) for p in payloads] == [
        ("mytable1", "c"), ("mytable2", "c"), ("mytable1", "u")
    ]  # fmt: skip
    assert payloads[2]["before"] == {"id": 1, "v": "a"} and payloads[2]["after"] == {
        "id": 1,
        "v": "b",
    }
    before, after = records[1]["schema"]["fields"]
    assert (before["field"], after["field"]) == ("before", "after")
    assert [(f["field"], f["type"]) for f in after["fields"]] == [("id", "int64"), ("w", "boolean")]


# -- JSON: table ids from fields, transforms, CSV keys ------------------------------------------


def test_json_table_ids_from_fields_with_projection_filter_and_keys(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    [example] = [e for e in seed_pipelines() if e.line == 2311]  # parser-table-id fields
    source, out = new_topic(partitions=1), unique("orders_out")
    db = unique("sales")
    topics(admin, out)
    rows = [
        {"col1": db, "col2": "orders", "id": 1, "name": "ann", "amount": 5},
        {"col1": db, "col2": "orders", "id": 2, "name": "bob", "amount": 50},
        {"col1": db, "col2": "orders", "id": 3, "name": "cy", "amount": 12.5},
        {"col1": db, "col2": "refunds", "id": 7, "amount": 99},
        {"col2": "orders", "id": 4},  # names no database: dirty
    ]
    produce(kafka_bootstrap, source, [(None, json.dumps(r).encode()) for r in rows])
    sink = f"""\
  ingestion.ignore-errors: true
sink:
  type: kafka
  value.format: json
  key.format: csv
  sink.tableId-to-topic.mapping: {db}.orders:{out}
transform:
  - source-table: {db}.orders
    projection: id, UPPER(name) AS name_upper, amount, __table_name__ AS tbl
    filter: amount > 10
    primary-keys: id
route:
  - source-table: {db}.refunds
    sink-table: {db}.orders
"""
    text = as_written(example, kafka_bootstrap, source).rstrip("\n") + "\n" + sink
    defs = build_data_ingestion_definitions(text, name="json_orders")
    got = meta(run(defs, "json_orders", resources, DagsterInstance.ephemeral()), "json_orders")
    assert (got["numRecordsIn"], got["dirtyRecords"], got["numRecordsOut"]) == (5, 1, 3)
    assert "names no table" in got["dirtySamples"][0]["error"]
    written = sorted(read(kafka_bootstrap, out), key=lambda r: r[1]["id"])  # order is per key
    # the refunds table is routed in untransformed: the columns merge, missing ones are null
    orders = {"tbl": "orders", "col1": None, "col2": None}
    refunds = {"name_upper": None, "tbl": None, "col1": db, "col2": "refunds"}
    assert [(k, v) for k, v, _ in written] == [
        (f"{db}.orders,2", {"id": 2, "name_upper": "BOB", "amount": 50.0, **orders}),
        (f"{db}.orders,3", {"id": 3, "name_upper": "CY", "amount": 12.5, **orders}),
        (f"{db}.orders,7", {"id": 7, "amount": 99.0, **refunds}),
    ]


def test_filter_turns_updates_into_inserts_or_deletes(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    source, out = new_topic(partitions=1), unique("big")
    db = unique("app")
    topics(admin, out)
    produce(kafka_bootstrap, source, [
        (None, debezium("u", {"id": 1, "qty": 1}, {"id": 1, "qty": 20}, db, "items")),   # N -> Y
        (None, debezium("u", {"id": 2, "qty": 30}, {"id": 2, "qty": 3}, db, "items")),   # Y -> N
        (None, debezium("u", {"id": 3, "qty": 40}, {"id": 3, "qty": 41}, db, "items")),  # Y -> Y
        (None, debezium("u", {"id": 4, "qty": 1}, {"id": 4, "qty": 2}, db, "items")),    # N -> N
        (None, debezium("d", {"id": 5, "qty": 2}, None, db, "items")),
    ])  # fmt: skip
    text = f"""
source: {{type: kafka, topic: {source}, scan.startup.mode: earliest-offset,
          properties.bootstrap.servers: "{kafka_bootstrap}"}}
sink: {{type: kafka, topic: {out}}}
transform:
  - source-table: {db}.\\.*
    projection: "*, __data_event_type__ AS kind"
    filter: qty >= 10
"""
    defs = build_data_ingestion_definitions(text, name="big_items")
    got = meta(run(defs, "big_items", resources, DagsterInstance.ephemeral()), "big_items")
    assert (got["numRecordsIn"], got["numRecordsOut"]) == (5, 3)
    assert [(v["op"], v["before"], v["after"]) for _, v, _ in read(kafka_bootstrap, out)] == [
        ("c", None, {"id": 1, "qty": 20, "kind": "+U"}),
        ("d", {"id": 2, "qty": 30, "kind": "-U"}, None),
        ("u", {"id": 3, "qty": 40, "kind": "-U"}, {"id": 3, "qty": 41, "kind": "+U"}),
    ]


# -- dirty data ---------------------------------------------------------------------------------


def test_seed_dirty_data_collector_logs_every_skipped_record(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    [example] = [e for e in seed_pipelines() if e.line == 2526]  # ignore-errors, logger
    source, out = new_topic(partitions=1), unique("clean")
    topics(admin, out)
    good = [json.dumps({"id": i, "v": f"x{i}"}).encode() for i in range(4)]
    values = [good[0], b"{broken", good[1], b"[1, 2]", good[2], good[3]]
    produce(kafka_bootstrap, source, [(None, v) for v in values])
    text = (
        as_written(example, kafka_bootstrap, source)
        + f"sink:\n  type: kafka\n  topic: {out}\n  value.format: json\n"
    )
    defs = build_data_ingestion_definitions(text, name="tolerant")
    instance = DagsterInstance.ephemeral()
    result = run(defs, "tolerant", resources, instance)
    got = meta(result, "tolerant")
    assert (got["numRecordsIn"], got["dirtyRecords"], got["numRecordsOut"]) == (6, 2, 4)
    logged = [e.user_message for e in instance.all_logs(result.run_id)
              if (e.user_message or "").startswith("Dirty record")]  # fmt: skip
    assert [m.split(":")[0] for m in logged] == [
        f"Dirty record {source}-0@1",
        f"Dirty record {source}-0@3",
    ]
    [check] = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == ("kafka_dirty_data", True)
    assert [v for _, v, _ in read(kafka_bootstrap, out)] == [json.loads(g) for g in good]


def test_dirty_records_past_the_max_count_fail_the_run_and_write_nothing(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    source, out = new_topic(partitions=1), unique("strict")
    topics(admin, out)
    produce(kafka_bootstrap, source, [(None, b'{"id": 1}'), (None, b"{x"), (None, b"{y")])
    text = f"""
source:
  type: kafka
  properties.bootstrap.servers: {kafka_bootstrap}
  topic: {source}
  value.format: json
  scan.startup.mode: earliest-offset
  ingestion.ignore-errors: true
  ingestion.error-tolerance.max-count: 1
sink: {{type: kafka, topic: {out}, value.format: json}}
"""
    defs = build_data_ingestion_definitions(text, name="strict")
    instance = DagsterInstance.ephemeral()
    failed = run(defs, "strict", resources, instance, ok=False)
    assert "2 dirty record(s) of source 'strict_source' exceed " in failure(failed)
    assert "'ingestion.error-tolerance.max-count' = 1" in failure(failed)
    assert read(kafka_bootstrap, out) == []
    assert instance.get_latest_materialization_event(AssetKey("strict")) is None


def test_a_failing_blocking_dirty_data_check_aborts_the_pipelines_transaction(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    source, out = new_topic(partitions=1), unique("gated")
    topics(admin, out)
    produce(kafka_bootstrap, source, [(None, b'{"id": 1}'), (None, b'{"id": 2}'), (None, b"{x")])
    text = f"""
source:
  type: kafka
  properties.bootstrap.servers: {kafka_bootstrap}
  topic: {source}
  properties.group.id: {out}-group
  value.format: json
  scan.startup.mode: earliest-offset
  ingestion.ignore-errors: true
sink:
  type: kafka
  topic: {out}
  value.format: json
  sink.delivery-guarantee: exactly-once
  sink.transactional-id-prefix: {out}
"""
    gated = [DirtyDataCheck(max_ratio=0.2, blocking=True)]
    defs = build_data_ingestion_definitions(text, name="gated", checks=gated)
    instance = DagsterInstance.ephemeral()
    failed = run(defs, "gated", resources, instance, ok=False)
    assert "BlockingCheckError" in failure(failed) and "dirty ratio 0.3333" in failure(failed)
    [check] = failed.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == ("kafka_dirty_data", False)
    assert "the transaction is aborted" in check.description
    assert read(kafka_bootstrap, out) == []  # read_committed: nothing
    assert len(consume_all(kafka_bootstrap, out, 1, "read_uncommitted")) == 2  # aborted
    assert instance.get_latest_materialization_event(AssetKey("gated")) is None
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"{out}-group"})
    [committed] = consumer.committed([TopicPartition(source, 0)], timeout=30)
    consumer.close()
    assert committed.offset < 0  # the group's offsets did not move


# -- exactly-once, static schemas, initial schemas, metadata columns ----------------------------


def test_exactly_once_commits_every_topic_and_the_offsets_in_one_transaction(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    source = new_topic(partitions=2)
    db = unique("eo")
    topics(admin, f"{db}.a", f"{db}.b")
    produce(kafka_bootstrap, source, [
        (None, debezium("c", None, {"id": 1}, db, "a"), 0),
        (None, debezium("c", None, {"id": 2}, db, "b"), 1),
        (None, debezium("c", None, {"id": 3}, db, "a"), 1),
    ])  # fmt: skip
    text = f"""
source:
  type: kafka
  properties.bootstrap.servers: {kafka_bootstrap}
  topic: {source}
  properties.group.id: {db}-group
  scan.startup.mode: earliest-offset
sink:
  type: kafka
  sink.delivery-guarantee: exactly-once
  sink.transactional-id-prefix: {db}
"""
    defs = build_data_ingestion_definitions(text, name="eo")
    instance = DagsterInstance.ephemeral()
    got = meta(run(defs, "eo", resources, instance), "eo")
    assert got["transactionalId"] == f"{db}-eo-0"
    assert got["kafka/ingestion/topics"] == {f"{db}.a": 2, f"{db}.b": 1}
    assert sorted(v["after"]["id"] for _, v, _ in read(kafka_bootstrap, f"{db}.a")) == [1, 3]
    assert [v["after"]["id"] for _, v, _ in read(kafka_bootstrap, f"{db}.b")] == [2]
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"{db}-group"})
    committed = consumer.committed([TopicPartition(source, p) for p in range(2)], timeout=30)
    consumer.close()
    assert sorted(tp.offset for tp in committed) == [1, 2]
    produce(kafka_bootstrap, source, [(None, debezium("c", None, {"id": 4}, db, "b"), 0)])
    again = meta(run(defs, "eo", resources, instance), "eo")
    assert (again["numRecordsIn"], again["kafka/ingestion/topics"]) == (1, {f"{db}.b": 1})


def test_static_initial_schema_primary_key_and_metadata_columns(
    kafka_bootstrap, new_topic, admin, resources
) -> None:
    source = new_topic(partitions=1)
    db = unique("cat")
    topics(admin, f"{db}.items")
    produce(kafka_bootstrap, source, [
        (None, debezium("c", None, {"id": 1, "price": 9.5, "extra": "x"}, db, "items")),
    ])  # fmt: skip
    text = f"""
source:
  type: kafka
  properties.bootstrap.servers: {kafka_bootstrap}
  topic: {source}
  scan.startup.mode: earliest-offset
  schema.inference.strategy: static
  metadata.list: topic,offset
  scan.value.initial-schemas.ddls: >-
    CREATE TABLE {db}.items (id BIGINT, price STRING, PRIMARY KEY (id) NOT ENFORCED);
sink:
  type: kafka
  key.format: json
"""
    defs = build_data_ingestion_definitions(text, name="static_items")
    instance = DagsterInstance.ephemeral()
    got = meta(run(defs, "static_items", resources, instance), "static_items")
    columns = [(c.name, c.type) for c in got[f"kafka/schema/{db}.items"].columns]
    assert columns == [("id", "BIGINT"), ("price", "STRING")]
    [(key, value, _)] = read(kafka_bootstrap, f"{db}.items")
    assert key == {"TableId": f"{db}.items", "id": 1}
    assert value["after"] == {"id": 1, "price": "9.5", "topic": source, "offset": 0}
    produce(kafka_bootstrap, source, [
        (None, debezium("c", None, {"id": 2, "price": 3, "color": "red"}, db, "items")),
    ])  # fmt: skip
    run(defs, "static_items", resources, instance)
    second = read(kafka_bootstrap, f"{db}.items")[-1][1]
    assert second["after"] == {"id": 2, "price": "3", "topic": source, "offset": 1}
