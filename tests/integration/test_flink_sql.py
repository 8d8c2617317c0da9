"""Flink SQL scripts (tests/sql/*.sql) run end to end on the real broker, record by record."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from dagster import AssetKey, DagsterInstance, Definitions, HourlyPartitionsDefinition, materialize

from dagster_kafka_flinklike import KafkaResource, SparkResource
from dagster_kafka_flinklike.components import build_flink_sql_definitions
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import IN_ORDER, consume_all, wait_for_topic

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

CORPUS = Path(__file__).parent.parent / "sql"
T0 = datetime(2026, 11, 20, tzinfo=UTC)


def at(minutes: float) -> int:
    return int((T0 + timedelta(minutes=minutes)).timestamp() * 1000)


def script(name: str, source: str, sink: str) -> str:
    return (CORPUS / name).read_text().replace("{source}", source).replace("{sink}", sink)


def send(bootstrap: str, topic: str, values: list[tuple[Any, int | None]]) -> None:
    """Produce ``(value, timestamp)`` records to partition 0 in this order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **IN_ORDER})
    for value, stamp in values:
        raw = value if isinstance(value, bytes) else json.dumps(value).encode()
        producer.produce(topic, raw, partition=0, **({"timestamp": stamp} if stamp else {}))
    assert producer.flush(30) == 0


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def create_topics(admin: Any, *names: str) -> None:
    """One-partition topics with exactly these names (scripts derive them from a stem)."""
    from confluent_kafka.admin import NewTopic

    for name, future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).items():
        future.result(30)
        wait_for_topic(admin, name, 1)


def run(defs: Any, resources: dict, instance: DagsterInstance, **kwargs: Any) -> Any:
    assets = [a for a in defs.assets if "spark" in a.specs_by_key[next(iter(a.keys))].kinds]
    result = materialize(assets, instance=instance, resources=resources, **kwargs)
    assert result.success
    return result


def values(bootstrap: str, topic: str, partitions: int = 1) -> list[Any]:
    return [json.loads(m.value()) for m in consume_all(bootstrap, topic, partitions)]


def test_stateless_enrichment_reads_each_record_once(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("enrich_json.sql", source, sink))
    assert {k.to_user_string() for a in defs.assets for k in a.keys} == {"enriched", "orders"}
    send(
        kafka_bootstrap,
        source,
        [
            (
                {
                    "order_id": 1,
                    "channel": "web",
                    "price": 2.5,
                    "payload": '{"coupon": "X1", "tags": "a,b"}',
                },
                at(61),
            ),
            ({"order_id": 2, "channel": "app", "price": 0, "payload": "{}"}, at(62)),
            (b"not json", at(63)),
            ({"order_id": 3, "channel": "shop", "price": 10.01, "payload": "bad"}, at(185)),
        ],
    )
    instance = DagsterInstance.ephemeral()
    result = run(defs, resources, instance)
    assert values(kafka_bootstrap, sink) == [
        {
            "order_id": 1,
            "channel_upper": "WEB",
            "price_cents": 250,
            "coupon": "X1",
            "first_tag": "a",
            "hour_of_day": "01",
        },
        {
            "order_id": 3,
            "channel_upper": "SHOP",
            "price_cents": 1001,
            "coupon": None,
            "first_tag": None,
            "hour_of_day": "03",
        },
    ]
    metadata = result.asset_materializations_for_node("enriched")[0].metadata
    assert metadata["numRecordsIn"].value == 4
    assert metadata["dagster/row_count"].value == 2

    # the next run reads only what arrived after the checkpoint
    send(kafka_bootstrap, source, [({"order_id": 4, "channel": "web", "price": 1}, at(200))])
    run(defs, resources, instance)
    out = values(kafka_bootstrap, sink)
    assert [r["order_id"] for r in out] == [1, 3, 4]


def test_tumbling_windows_per_hourly_partition(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    hourly = HourlyPartitionsDefinition(start_date="2026-11-20-00:00")
    defs = build_flink_sql_definitions(
        script("tumble_counts.sql", source, sink), partitions_def=hourly
    )
    rows = [
        ("web,1", 3),
        ("app,5", 7),
        ("web,2", 12),
        ("web,8", 59.99),
        ("app,1", 9.5),  # out of order, before the hour is over
        ("web,6", 60 + 3 / 60),  # 01:00:03: the watermark (5 s delay) is at 00:59:58
        ("app,2", 59 + 59 / 60),  # 00:59:59, 4 s out of order: Flink counts it
        ("web,4", 65),  # the next hour: Flink's watermark passes 01:00 here
        ("app,9", 9.8),  # late: Flink drops it, and the 00:00 partition does not read it
    ]
    send(kafka_bootstrap, source, [(r.encode(), at(m)) for r, m in rows])
    instance = DagsterInstance.ephemeral()
    run(defs, resources, instance, partition_key="2026-11-20-00:00")
    got = {
        (r["window_start"], r["channel"]): (r["clicks"], r["amount"])
        for r in values(kafka_bootstrap, sink)
    }
    assert got == {
        ("2026-11-20 00:00:00", "web"): (1, 1),
        ("2026-11-20 00:00:00", "app"): (2, 6),
        ("2026-11-20 00:10:00", "web"): (1, 2),
        ("2026-11-20 00:50:00", "web"): (1, 8),
        ("2026-11-20 00:50:00", "app"): (1, 2),  # within the WATERMARK's delay
    }
    run(defs, resources, instance, partition_key="2026-11-20-01:00")
    out = values(kafka_bootstrap, sink)
    assert len(out) == 6  # the late app,9 is in no window
    assert (out[-1]["window_start"], out[-1]["window_end"], out[-1]["clicks"]) == (
        "2026-11-20 01:00:00",
        "2026-11-20 01:10:00",
        2,
    )


def test_an_upsert_aggregate_writes_the_changed_totals_each_run(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("upsert_totals.sql", source, sink))
    send(
        kafka_bootstrap,
        source,
        [
            ({"user": "ann", "amount": 5}, None),
            ({"user": "bob", "amount": 7}, None),
            ({"user": "ann", "amount": 1}, None),
        ],
    )
    instance = DagsterInstance.ephemeral()
    run(defs, resources, instance)
    send(kafka_bootstrap, source, [({"user": "bob", "amount": 3}, None)])
    run(defs, resources, instance)
    # the second run read the new record only and wrote the one total it changed
    assert [json.loads(m.key())["user"] for m in consume_all(kafka_bootstrap, sink, 1)][-1:] == [
        "bob"
    ]
    assert len(consume_all(kafka_bootstrap, sink, 1)) == 3
    latest: dict[str, Any] = {}
    for m in consume_all(kafka_bootstrap, sink, 1):
        latest[json.loads(m.key())["user"]] = json.loads(m.value())
    assert latest == {
        "ann": {"user": "ann", "total": 6, "payments": 2},
        "bob": {"user": "bob", "total": 10, "payments": 2},
    }


def test_statement_set_is_one_job_writing_both_sinks(
    kafka_bootstrap: str, new_topic: Any, admin: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    create_topics(admin, f"{sink}-errors", f"{sink}-infos")
    defs = build_flink_sql_definitions(script("statement_set.sql", source, sink))
    send(
        kafka_bootstrap,
        source,
        [
            (b"INFO started", None),
            (b"ERROR disk full", None),
            (b"DEBUG noise", None),
            (b"INFO done", None),
        ],
    )
    defs = Definitions(assets=defs.assets, jobs=defs.jobs, resources=resources)
    job = defs.resolve_job_def("flink_sql_statement_set_1")
    assert {n.name for n in job.nodes} == {"errors", "infos"}
    result = job.execute_in_process(instance=DagsterInstance.ephemeral())
    assert result.success
    raw = lambda t: [m.value() for m in consume_all(kafka_bootstrap, t, 1)]  # noqa: E731
    assert raw(f"{sink}-errors") == [b"disk full"]
    assert raw(f"{sink}-infos") == [b"started", b"done"]
    assert {AssetKey("errors"), AssetKey("infos")} <= {k for a in defs.assets for k in a.keys}
    assert Counter(e.event_type_value for e in result.all_events)["ASSET_MATERIALIZATION"] == 2


def test_keyed_topic_list_with_header_filter_into_exactly_once(
    kafka_bootstrap: str, new_topic: Any, admin: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    create_topics(admin, f"{source}-b")
    defs = build_flink_sql_definitions(script("keyed_topics_exactly_once.sql", source, sink))
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})
    for topic, sensor, celsius, env in [
        (source, "s1", 40, "prod"),  # 104 °F: kept
        (source, "s2", 20, "prod"),  # 68 °F: filtered by the query
        (source, "s3", 50, "test"),  # filtered by the header filter
        (f"{source}-b", "s4", 45, "prod"),  # 113 °F: kept, from the second topic
    ]:
        producer.produce(
            topic,
            json.dumps({"celsius": celsius, "site": "x"}).encode(),
            json.dumps({"sensor": sensor}).encode(),
            headers=[("env", env.encode())],
        )
    assert producer.flush(30) == 0
    run(defs, resources, DagsterInstance.ephemeral())
    got = sorted(values(kafka_bootstrap, sink), key=lambda r: r["sensor"])
    assert got == [
        {"sensor": "s1", "fahrenheit": 104.0, "src": source},
        {"sensor": "s4", "fahrenheit": 113.0, "src": f"{source}-b"},
    ]


def test_hopping_windows_over_a_topic_pattern_recompute(
    kafka_bootstrap: str, new_topic: Any, admin: Any, resources: dict
) -> None:
    stem, sink = new_topic(1), new_topic(1)
    topics = [f"{stem}-visits-{n}" for n in ("a", "b")]
    create_topics(admin, *topics)
    defs = build_flink_sql_definitions(script("hop_upsert.sql", stem, sink))
    send(kafka_bootstrap, topics[0], [({"page": "/"}, at(1)), ({"page": "/a"}, at(7))])
    send(kafka_bootstrap, topics[1], [({"page": "/"}, at(8))])
    instance = DagsterInstance.ephemeral()
    run(defs, resources, instance)
    send(kafka_bootstrap, topics[1], [({"page": "/b"}, at(12))])
    run(defs, resources, instance)
    latest: dict[tuple[str, str], Any] = {}
    for m in consume_all(kafka_bootstrap, sink, 1):
        key = json.loads(m.key())
        latest[(key["window_start"], key["window_end"])] = json.loads(m.value())
    counts = {k: (v["visits"], v["pages"]) for k, v in latest.items()}
    assert counts == {
        ("2026-11-19 23:55:00", "2026-11-20 00:05:00"): (1, 1),
        ("2026-11-20 00:00:00", "2026-11-20 00:10:00"): (3, 2),
        ("2026-11-20 00:05:00", "2026-11-20 00:15:00"): (3, 3),
        ("2026-11-20 00:10:00", "2026-11-20 00:20:00"): (1, 1),
    }


def test_dirty_data_over_tolerance_fails_and_keeps_the_checkpoint(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("dirty_tolerance.sql", source, sink))
    send(kafka_bootstrap, source, [({"id": 1, "name": "ann"}, None), (b"{oops", None)])
    instance = DagsterInstance.ephemeral()
    run(defs, resources, instance)  # one dirty record: within the tolerance
    assert [m.value() for m in consume_all(kafka_bootstrap, sink, 1)] == [b"1,ANN"]
    send(kafka_bootstrap, source, [(b"{bad", None), (b"[worse", None), ({"id": 2}, None)])
    assets = [a for a in defs.assets if a.key == AssetKey("names")]
    failed = materialize(assets, instance=instance, resources=resources, raise_on_error=False)
    assert not failed.success
    assert "dirty" in str(failed.get_step_failure_events()[0].step_failure_data.error).lower()
    # At-least-once: the failed run wrote its clean record; its retry writes it again.
    assert [m.value() for m in consume_all(kafka_bootstrap, sink, 1)] == [b"1,ANN", b"2,"]
    event = instance.get_latest_materialization_event(AssetKey("names"))
    assert event is not None and event.run_id != failed.run_id  # the checkpoint stayed put


def test_create_table_as_select_writes_the_querys_columns(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("ctas_csv_to_json.sql", source, sink))
    send(
        kafka_bootstrap,
        source,
        [(b"Paris,12.0,30", None), (b"Oslo,5,0", None), (b"Rome,30,20", None)],
    )
    run(defs, resources, DagsterInstance.ephemeral())
    assert values(kafka_bootstrap, sink) == [
        {"city": "paris", "kmh": 24.0},
        {"city": "rome", "kmh": 90.0},
    ]


def test_cumulating_windows_per_hourly_partition(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    hourly = HourlyPartitionsDefinition(start_date="2026-11-20-00:00")
    defs = build_flink_sql_definitions(
        script("cumulate_hourly.sql", source, sink), partitions_def=hourly
    )
    rows = [("1", 5), ("2", 20), ("4", 14.9), ("8", 50), ("16", 61)]  # 61: the next hour
    send(kafka_bootstrap, source, [(r.encode(), at(m)) for r, m in rows])
    run(defs, resources, DagsterInstance.ephemeral(), partition_key="2026-11-20-00:00")
    totals = {
        json.loads(m.key())["window_end"]: json.loads(m.value())["total"]
        for m in consume_all(kafka_bootstrap, sink, 1)
    }
    assert totals == {
        "2026-11-20 00:15:00": 5,
        "2026-11-20 00:30:00": 7,
        "2026-11-20 00:45:00": 7,
        "2026-11-20 01:00:00": 15,
    }


def test_hopping_windows_per_hourly_partition_read_back_a_slide(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    hourly = HourlyPartitionsDefinition(start_date="2026-11-20-00:00")
    defs = build_flink_sql_definitions(
        script("hop_hourly.sql", source, sink), partitions_def=hourly
    )
    minutes = [5, 25, 55, 65, 75, 125]  # 125: windows ending in the third hour, not run
    send(kafka_bootstrap, source, [({"amount": m}, at(m)) for m in minutes])
    instance = DagsterInstance.ephemeral()
    run(defs, resources, instance, partition_key="2026-11-20-01:00")
    run(defs, resources, instance, partition_key="2026-11-20-00:00")
    rows = sorted(
        (v["window_start"][11:16], v["window_end"][11:16], v["payments"], v["total"])
        for v in values(kafka_bootstrap, sink)
    )
    assert rows == [
        ("00:00", "00:20", 1, 5),
        ("00:10", "00:30", 1, 25),
        ("00:20", "00:40", 1, 25),
        ("00:40", "01:00", 1, 55),
        ("00:50", "01:10", 2, 120),
        ("01:00", "01:20", 2, 140),
        ("01:10", "01:30", 1, 75),
        ("23:50", "00:10", 1, 5),
    ]


def test_a_table_without_columns_reads_its_inferred_columns(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("inferred_json.sql", source, sink))
    send(
        kafka_bootstrap,
        source,
        [
            ({"id": 1, "name": "low", "score": 0.5}, None),
            ({"id": 2, "name": "high", "score": 2}, None),
            ({"id": 3, "name": None, "score": 7.25}, None),
        ],
    )
    instance = DagsterInstance.ephemeral()
    run(defs, resources, instance)
    assert values(kafka_bootstrap, sink) == [{"id": 2, "label": "HIGH"}, {"id": 3, "label": None}]
    event = instance.get_latest_materialization_event(AssetKey("high_readings"))
    assert event is not None and event.asset_materialization is not None
    schema = event.asset_materialization.metadata["kafka/schema/readings"]
    assert [(c.name, c.type) for c in schema.schema.columns] == [  # type: ignore[attr-defined]
        ("id", "BIGINT"),
        ("name", "STRING"),
        ("score", "DOUBLE"),
    ]


def test_select_star_over_a_changelog_passes_row_kinds_to_a_changelog_sink(
    kafka_bootstrap: str, new_topic: Any, resources: dict
) -> None:
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("cdc_debezium_to_maxwell.sql", source, sink))
    row = {"id": 1, "name": "scooter", "weight": 5.18}
    event = {"source": {"db": "inventory", "table": "products"}, "ts_ms": 1}
    send(
        kafka_bootstrap,
        source,
        [
            ({"before": None, "after": row, "op": "c", **event}, None),
            ({"before": row, "after": {**row, "weight": 5.15}, "op": "u", **event}, None),
            ({"before": {**row, "weight": 5.15}, "after": None, "op": "d", **event}, None),
        ],
    )
    run(defs, resources, DagsterInstance.ephemeral())
    assert [(v["type"], v["data"]["weight"]) for v in values(kafka_bootstrap, sink)] == [
        ("insert", 5.18),
        ("delete", 5.18),
        ("insert", 5.15),
        ("delete", 5.15),
    ]
    assert {v["data"]["origin_table"] for v in values(kafka_bootstrap, sink)} == {"products"}


NOT_NULL = """
CREATE TABLE t (k STRING, v INT) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json',
  'properties.bootstrap.servers' = 'b:9092');
CREATE TABLE s (k STRING, v INT NOT NULL, PRIMARY KEY (k) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 's', 'key.format' = 'json', 'value.format' = 'json',
  'properties.bootstrap.servers' = 'b:9092');
INSERT INTO s SELECT k, v FROM t;
"""


def test_a_null_into_a_not_null_or_key_column_fails_the_run_as_in_flink(spark: Any) -> None:
    from dagster_kafka_flinklike.sql.pipeline import plan_flink_sql

    rows = spark.createDataFrame([("a", 1), (None, 2), ("c", None)], "k string, v int")
    [insert] = plan_flink_sql(NOT_NULL).inserts
    with pytest.raises(Exception, match="Column 'k' of sink table s is NOT NULL"):
        insert.run_query(spark, {"t": rows}).collect()
    keyed = spark.createDataFrame([("a", 1), ("c", None)], "k string, v int")
    with pytest.raises(Exception, match="Column 'v' of sink table s is NOT NULL"):
        insert.run_query(spark, {"t": keyed}).collect()
    [dropping] = plan_flink_sql(
        "SET 'table.exec.sink.not-null-enforcer' = 'drop';" + NOT_NULL
    ).inserts
    assert [tuple(r) for r in dropping.run_query(spark, {"t": rows}).collect()] == [("a", 1)]
