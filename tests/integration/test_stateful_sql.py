"""Event-time window aggregations run on Spark Structured Streaming, incrementally, and write
what Apache Flink writes (the oracle runs the same script over the same topic)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import KafkaResource, SparkResource
from dagster_kafka_flinklike.components import build_flink_sql_definitions
from dagster_kafka_flinklike.spark import local_spark_config
from tests.integration.test_flink_oracle import for_flink
from tests.integration.test_flink_sql import create_topics, script, send, values

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def order(n: int, channel: str, amount: int, seconds: float) -> tuple[Any, None]:
    ts = (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return {"order_id": n, "channel": channel, "amount": amount, "ts": ts}, None


def stamp(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def key(row: dict) -> tuple:
    return row["window_start"], row["channel"]


def materialize_all(defs: Any, given: dict, instance: DagsterInstance) -> dict[str, dict]:
    """Materialize every insert once: each one's metadata, by asset name."""
    result = materialize(list(defs.assets), instance=instance, resources=given,
                         selection=[a.key for a in defs.assets if a.is_materializable])  # fmt: skip
    assert result.success
    return {
        e.asset_key.path[-1]: {
            k: getattr(v, "value", v)
            for k, v in e.step_materialization_data.materialization.metadata.items()
        }
        for e in result.get_asset_materialization_events()
    }


def test_tumbling_windows_on_a_payload_time_column_run_incrementally_as_flink(
    kafka_bootstrap: str,
    new_topic: Any,
    resources: dict,
    oracle: Any,
    tmp_path: Any,
) -> None:
    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("tumble_event_time.sql", source, ours))
    [insert_asset] = [a for a in defs.assets if a.is_materializable]
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    # run 1: out of order within the delay; the watermark ends at 16 - 5 = 11 s
    send(kafka_bootstrap, source, [
        order(1, "web", 10, 1), order(2, "app", 5, 3), order(3, "web", 7, 12),
        order(4, "web", 1, 9), (b"not json", None), order(5, "app", 2, 16),
    ])  # fmt: skip
    first = materialize_all(defs, resources, instance)["revenue"]
    assert sorted(map(key, values(kafka_bootstrap, ours))) == [
        ("2026-11-20 00:00:00", "app"),
        ("2026-11-20 00:00:00", "web"),
    ]
    assert (first["numRecordsIn"], first["dirtyRecords"], first["numRecordsOut"]) == (6, 1, 2)
    assert first["currentWatermark"] == int((T0 + timedelta(seconds=11)).timestamp() * 1000)
    # between the runs: a record for the window already emitted (late: dropped, as Flink
    # drops it), one within the delay, and the watermark to 34.999 - 5 s: [20 s, 30 s) closes
    # exactly at its last millisecond, as in Flink
    send(kafka_bootstrap, source, [
        order(6, "web", 100, 4), order(7, "app", 3, 14), order(8, "web", 4, 25),
        order(9, "web", 6, 34.999),
    ])  # fmt: skip
    flink = for_flink(script("tumble_event_time.sql", source, theirs))
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)  # all input is in the topic
    second = materialize_all(defs, resources, instance)["revenue"]
    assert second["numLateRecordsDropped"] == 1
    assert second["numRecordsIn"] == 4
    flink_done.result()
    watermark = T0 + timedelta(seconds=34.999 - 5)
    # Flink's bounded job closes every window at the end of its input; the ones its
    # watermark had passed are what a running job had written by then
    expected = [r for r in values(kafka_bootstrap, theirs)
                if stamp(r["window_end"]) - timedelta(milliseconds=1) <= watermark]  # fmt: skip
    assert len(expected) == 5
    assert sorted(values(kafka_bootstrap, ours), key=key) == sorted(expected, key=key)
    assert insert_asset.specs_by_key[insert_asset.key].metadata["flink_sql/run_mode"] == "stateful"


def click(user: str, url: str, seconds: float) -> tuple[Any, None]:
    ts = (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return {"user_name": user, "url": url, "ts": ts}, None


def closed(rows: list[dict], watermark: datetime, end: str = "window_end") -> list[dict]:
    """The rows of windows Flink's watermark had passed (its bounded job closes all at the end)."""
    return [r for r in rows if stamp(r[end]) - timedelta(milliseconds=1) <= watermark]


def test_hopping_and_group_windows_in_a_statement_set_write_what_flink_writes(
    kafka_bootstrap: str,
    new_topic: Any,
    admin: Any,
    resources: dict,
    oracle: Any,
    tmp_path: Any,
) -> None:
    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    create_topics(admin, *(f"{t}-{s}" for t in (ours, theirs) for s in ("legacy", "cumulate")))
    defs = build_flink_sql_definitions(script("hop_and_group_window_event_time.sql", source, ours))
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    send(kafka_bootstrap, source, [
        click("ann", "/a", 1), click("bob", "/b", 4), click("ann", "/c", 6.5),
        click("ann", "/d", 5), click("bob", "/e", 13),
    ])  # fmt: skip
    assert materialize_all(defs, resources, instance)
    # late for [0 s, 10 s) but in time for [5 s, 15 s): Flink keeps it for the open window
    send(kafka_bootstrap, source, [
        click("ann", "/late", 8), click("bob", "/f", 17), click("ann", "/g", 27),
        click("bob", "/h", 41.999),
    ])  # fmt: skip
    flink = for_flink(script("hop_and_group_window_event_time.sql", source, theirs))
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)
    assert materialize_all(defs, resources, instance)
    flink_done.result()
    watermark = T0 + timedelta(seconds=41.999 - 2)
    hop = closed(values(kafka_bootstrap, theirs), watermark)
    legacy = closed(values(kafka_bootstrap, f"{theirs}-legacy"), watermark, "w_end")
    assert len(hop) >= 6 and len(legacy) == 2
    hop_key = lambda r: (r["window_start"], r["user_name"])  # noqa: E731
    assert sorted(values(kafka_bootstrap, ours), key=hop_key) == sorted(hop, key=hop_key)
    legacy_key = lambda r: r["w_start"]  # noqa: E731
    assert sorted(values(kafka_bootstrap, f"{ours}-legacy"), key=legacy_key) == sorted(
        legacy, key=legacy_key
    )
    # cumulating windows: each step is emitted as the watermark passes its end; the late click
    # (8 s) misses the closed step [0 s, 10 s) and counts in [0 s, 15 s) and [0 s, 20 s)
    cumulate = closed(values(kafka_bootstrap, f"{theirs}-cumulate"), watermark)
    window = lambda r: (r["window_start"], r["window_end"])  # noqa: E731
    assert [window(r) for r in sorted(cumulate, key=window)] == [
        (f"2026-11-20 00:00:{a:02}", f"2026-11-20 00:00:{b:02}")
        for a, b in [(0, 5), (0, 10), (0, 15), (0, 20), (20, 30), (20, 35), (20, 40)]
    ]
    assert sorted(values(kafka_bootstrap, f"{ours}-cumulate"), key=window) == sorted(
        cumulate, key=window
    )


def folded(bootstrap: str, topic: str) -> dict[str, Any]:
    """An upsert topic folded by key: the latest value of each key, tombstones removing it."""
    import json

    from tests.conftest import consume_all

    latest: dict[str, Any] = {}
    for m in consume_all(bootstrap, topic, 1):
        k = json.loads(m.key())["account"]
        if m.value() is None:
            latest.pop(k, None)
        else:
            latest[k] = json.loads(m.value())
    return latest


def test_an_aggregate_with_having_deletes_groups_that_leave_it_as_flink(
    kafka_bootstrap: str, new_topic: Any, resources: dict, oracle: Any, tmp_path: Any
) -> None:
    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("having_upsert.sql", source, ours))
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    pay = lambda a, n: ({"account": a, "amount": n}, None)  # noqa: E731
    send(kafka_bootstrap, source, [pay("a", 7), pay("b", 12), pay("a", 5), pay("c", 3)])
    first = materialize_all(defs, resources, instance)["big_accounts"]
    assert set(folded(kafka_bootstrap, ours)) == {"a", "b"}
    assert first["numRecordsIn"] == 4
    # b falls below the threshold (deleted), c reaches it, a is unchanged (not written again)
    send(kafka_bootstrap, source, [pay("b", -5), pay("c", 9)])
    flink = for_flink(script("having_upsert.sql", source, theirs))
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)
    second = materialize_all(defs, resources, instance)["big_accounts"]
    assert (second["numRecordsIn"], second["numRecordsOut"]) == (2, 2)
    flink_done.result()
    expected = folded(kafka_bootstrap, theirs)
    assert set(expected) == {"a", "c"}
    assert folded(kafka_bootstrap, ours) == expected


def test_session_windows_merge_late_rows_into_open_sessions_as_flink(
    kafka_bootstrap: str, new_topic: Any, admin: Any, resources: dict, oracle: Any, tmp_path: Any
) -> None:
    import uuid

    source = new_topic(1)
    ours, theirs = (f"sessions-{uuid.uuid4().hex[:8]}" for _ in range(2))
    create_topics(admin, ours, f"{ours}-legacy", theirs, f"{theirs}-legacy")
    defs = build_flink_sql_definitions(script("session_event_time.sql", source, ours))
    insert_asset = next(a for a in defs.assets if a.key.path[-1] == "channel_sessions")
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    # run 1: sessions that touch merge ([0, 5) and [5, 10)); the watermark ends at 15 s
    send(kafka_bootstrap, source, [
        order(1, "web", 10, 0), order(2, "web", 5, 5), order(3, "app", 7, 20),
        order(4, "web", 1, 20),
    ])  # fmt: skip
    first = materialize_all(defs, resources, instance)["channel_sessions"]
    assert first["numRecordsIn"] == 4
    rows = values(kafka_bootstrap, ours)
    assert [(r["channel"], r["orders"], r["window_end"]) for r in rows] == [
        ("web", 2, "2026-11-20 00:00:10")
    ]
    # run 2: 12 s opens [12, 17); 9 s is behind the watermark on its own ([9, 14)) but joins
    # that open session, as Flink merges it; 8.5 s (app) joins no open session: dropped;
    # 25 s touches web's [20, 25); 40 s moves the watermark to 35 s
    send(kafka_bootstrap, source, [
        order(5, "web", 2, 12), order(6, "web", 3, 9), order(7, "app", 100, 8.5),
        order(8, "web", 4, 25), order(9, "web", 6, 40),
    ])  # fmt: skip
    flink = for_flink(script("session_event_time.sql", source, theirs))
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)
    materialize_all(defs, resources, instance)
    flink_done.result()
    expected = closed(values(kafka_bootstrap, theirs), T0 + timedelta(seconds=35))
    session = lambda r: (r["channel"], r["window_start"])  # noqa: E731
    assert sorted(map(session, expected)) == [
        ("app", "2026-11-20 00:00:20"),
        ("web", "2026-11-20 00:00:00"),
        ("web", "2026-11-20 00:00:09"),
        ("web", "2026-11-20 00:00:20"),
    ]
    assert sorted(values(kafka_bootstrap, ours), key=session) == sorted(expected, key=session)
    assert insert_asset.specs_by_key[insert_asset.key].metadata["flink_sql/run_mode"] == "stateful"
    # the legacy group window: the same sessions, in Flink and here
    legacy = closed(values(kafka_bootstrap, f"{theirs}-legacy"), T0 + timedelta(seconds=35))
    assert sorted(legacy, key=session) == sorted(expected, key=session)
    assert sorted(values(kafka_bootstrap, f"{ours}-legacy"), key=session) == sorted(
        legacy, key=session
    )


def test_a_top_n_deletes_the_rows_pushed_out_of_it_as_flink(
    kafka_bootstrap: str, new_topic: Any, admin: Any, resources: dict, oracle: Any, tmp_path: Any
) -> None:
    import json
    import uuid

    from tests.conftest import consume_all

    source = new_topic(1)
    ours, theirs = (f"top-{uuid.uuid4().hex[:8]}" for _ in range(2))
    create_topics(admin, ours, f"{ours}-smallest", theirs, f"{theirs}-smallest")
    defs = build_flink_sql_definitions(script("top_n_upsert.sql", source, ours))
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    pay = lambda i, a, n: ({"id": i, "account": a, "amount": n}, None)  # noqa: E731
    # ties (a: 5, 5) and NULL amounts (Flink ranks NULL lowest: last descending)
    send(kafka_bootstrap, source, [
        pay(1, "a", 5), pay(2, "a", None), pay(3, "a", 5), pay(4, "b", 1), pay(5, "b", 2),
    ])  # fmt: skip
    materialize_all(defs, resources, instance)
    # 6 pushes a 5 out of a's largest; 7 ties 6 (the earlier stays ahead); 8 is NULL again
    send(kafka_bootstrap, source, [
        pay(6, "a", 9), pay(7, "a", 9), pay(8, "b", None), pay(9, "b", 0),
    ])  # fmt: skip
    flink = for_flink(script("top_n_upsert.sql", source, theirs))
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)
    materialize_all(defs, resources, instance)
    flink_done.result()

    def folded(topic: str) -> dict[str, Any]:
        latest: dict[str, Any] = {}
        for m in consume_all(kafka_bootstrap, topic, 1):
            if m.value() is None:
                latest.pop(m.key().decode(), None)
            else:
                latest[m.key().decode()] = json.loads(m.value())
        return latest

    assert sorted(r["id"] for r in folded(theirs).values()) == [4, 5, 6, 7]
    assert folded(ours) == folded(theirs)
    assert folded(f"{ours}-smallest") == folded(f"{theirs}-smallest")


def test_a_python_stateful_asset_windows_a_streaming_query(
    kafka_bootstrap: str, new_topic: Any, resources: dict, tmp_path: Any
) -> None:
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike import EventTime, KafkaTableSpec, kafka_stateful_asset

    source, sink = new_topic(1), new_topic(1)
    orders = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": source, "format": "json",
         "scan.startup.mode": "earliest-offset"},
        columns=[{"name": "order_id", "type": "BIGINT"}, {"name": "channel", "type": "STRING"},
                 {"name": "amount", "type": "INT"}, {"name": "ts", "type": "TIMESTAMP(3)"}],
    )  # fmt: skip
    counts = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink, "format": "json"},
        columns=[{"name": "window_start", "type": "TIMESTAMP(3)"},
                 {"name": "channel", "type": "STRING"}, {"name": "orders", "type": "BIGINT"}],
    )  # fmt: skip

    @kafka_stateful_asset(
        sources={"orders": orders}, sink=counts, event_times={"orders": EventTime("ts", 5000)}
    )
    def channel_counts(context: Any, orders: Any) -> Any:
        window = F.window("ts", "10 seconds")
        return (
            orders.groupBy(window, "channel")
            .agg(F.count(F.lit(1)).alias("orders"))
            .select(F.col("window.start").alias("window_start"), "channel", "orders")
        )

    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    send(kafka_bootstrap, source, [order(1, "web", 1, 1), order(2, "web", 1, 3),
                                   order(3, "app", 1, 8), order(4, "web", 1, 16)])  # fmt: skip
    assert materialize([channel_counts], instance=instance, resources=resources).success
    assert sorted((r["window_start"], r["channel"], r["orders"])
                  for r in values(kafka_bootstrap, sink)) == [
        ("2026-11-20 00:00:00", "app", 1), ("2026-11-20 00:00:00", "web", 2)
    ]  # fmt: skip
    send(kafka_bootstrap, source, [order(5, "web", 1, 2), order(6, "web", 1, 31)])
    result = materialize([channel_counts], instance=instance, resources=resources)
    [event] = result.get_asset_materialization_events()
    meta = event.step_materialization_data.materialization.metadata
    assert meta["numLateRecordsDropped"].value == 1
    assert [(r["window_start"], r["orders"]) for r in values(kafka_bootstrap, sink)][2:] == [
        ("2026-11-20 00:00:10", 1)
    ]


def test_disorder_beyond_the_delay_within_one_run_is_counted_a_known_difference(
    kafka_bootstrap: str, new_topic: Any, resources: dict, tmp_path: Any
) -> None:
    """docs/flink-sql.md: the watermark moves per micro-batch. Within one run's input, a record
    more than the delay behind the newest one is still counted when its window was open at the
    run's start; Flink, whose watermark moves per record, drops it (16 s, then 4 s: its
    watermark is 11 s when 4 s arrives, and [0 s, 10 s) has fired)."""
    source, sink = new_topic(1), new_topic(1)
    defs = build_flink_sql_definitions(script("tumble_event_time.sql", source, sink))
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    send(kafka_bootstrap, source, [order(1, "web", 10, 1), order(2, "web", 5, 16),
                                   order(3, "web", 7, 4)])  # fmt: skip
    meta = materialize_all(defs, resources, instance)["revenue"]
    assert meta["numLateRecordsDropped"] == 0
    [window] = values(kafka_bootstrap, sink)
    assert (window["window_start"], window["orders"], window["amount"]) == (
        "2026-11-20 00:00:00",
        2,
        17,  # Flink: 1 order, 10
    )
