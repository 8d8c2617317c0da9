"""End to end on real Kafka, Spark and Dagster: orders → per-channel revenue, checkpointed."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest
from confluent_kafka import Consumer, TopicPartition
from dagster import DagsterInstance, materialize
from pyspark.sql import functions as F

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS, encode_order, generate_orders
from dagster_kafka_flinklike.materialization import streaming_tables
from dagster_kafka_flinklike.spark import local_spark_config
from dagster_kafka_flinklike.state import CHECKPOINT_METADATA_KEY
from tests.conftest import produce


def read_all(bootstrap: str, topic: str, partitions: int) -> list[tuple[bytes, dict]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "verifier",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, eof = [], set()
    while len(eof) < partitions:
        for m in consumer.consume(500, timeout=0.1):  # returns at its timeout
            if m.error():
                eof.add(m.partition())
            else:
                out.append((m.key(), json.loads(m.value())))
    consumer.close()
    return out


def build_asset(orders_topic: str, out_topic: str, fail: dict, extra: dict | None = None):
    orders = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": orders_topic,
            "properties.group.id": f"revenue-{orders_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            **(extra or {}),
        },
        columns=ORDER_COLUMNS,
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": out_topic,
            "key.format": "raw",
            "key.fields": "order_channel",
            "value.format": "json",
        },
        columns=[
            {"name": "order_channel", "type": "STRING"},
            {"name": "order_count", "type": "BIGINT"},
            {"name": "revenue", "type": "DOUBLE"},
        ],
        role="sink",
    )

    @kafka_streaming_asset(sources={"orders": orders}, sink=sink, name="channel_revenue")
    def channel_revenue(context, orders):
        if fail.get("now"):
            raise RuntimeError("query failed on purpose")
        return orders.groupBy("order_channel").agg(
            F.count(F.lit(1)).alias("order_count"), F.sum("real_pay").alias("revenue")
        )

    return channel_revenue


@pytest.fixture
def resources(kafka_bootstrap, spark):
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def test_each_order_counted_once_across_runs_and_failures(
    kafka_bootstrap, new_topic, resources
) -> None:
    orders_topic, out_topic = new_topic(partitions=3), new_topic(partitions=3)
    fail: dict = {}
    asset = build_asset(orders_topic, out_topic, fail)
    instance = DagsterInstance.ephemeral()
    batches = [list(generate_orders(0, 200)), list(generate_orders(1, 150))]

    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in batches[0]])
    first = materialize([asset], resources=resources, instance=instance)
    meta = first.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 200
    assert meta["dirtyRecords"].value == 0
    checkpoint_1 = meta[CHECKPOINT_METADATA_KEY].value
    assert sum(checkpoint_1["sources"]["orders"][orders_topic].values()) == 200

    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in batches[1]])
    fail["now"] = True
    failed = materialize([asset], resources=resources, instance=instance, raise_on_error=False)
    assert not failed.success
    latest = instance.get_latest_materialization_event(asset.key).asset_materialization
    assert latest.metadata[CHECKPOINT_METADATA_KEY].value == checkpoint_1

    fail["now"] = False
    second = materialize([asset], resources=resources, instance=instance)
    meta = second.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 150
    assert meta["pendingRecords"].value == 0

    output = read_all(kafka_bootstrap, out_topic, 3)
    assert sum(v["order_count"] for _, v in output) == 350
    expected_counts: Counter = Counter()
    expected_revenue: dict = defaultdict(float)
    for order in batches[0] + batches[1]:
        expected_counts[order["order_channel"]] += 1
        expected_revenue[order["order_channel"]] += order["real_pay"]
    got_counts: Counter = Counter()
    got_revenue: dict = defaultdict(float)
    for key, value in output:
        assert key.decode() == value["order_channel"]
        got_counts[value["order_channel"]] += value["order_count"]
        got_revenue[value["order_channel"]] += value["revenue"]
    assert got_counts == expected_counts
    for channel, revenue in expected_revenue.items():
        assert got_revenue[channel] == pytest.approx(revenue)

    # The checkpoint was also committed to the consumer group, for monitoring.
    consumer = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": f"revenue-{orders_topic}"}
    )
    committed = consumer.committed([TopicPartition(orders_topic, p) for p in range(3)], timeout=10)
    consumer.close()
    assert sum(tp.offset for tp in committed) == 350


def test_dirty_record_fails_the_run_and_keeps_checkpoint(
    kafka_bootstrap, new_topic, resources
) -> None:
    orders_topic, out_topic = new_topic(partitions=1), new_topic(partitions=1)
    asset = build_asset(orders_topic, out_topic, {})
    instance = DagsterInstance.ephemeral()
    good = [encode_order(o) for o in generate_orders(5, 10)]
    produce(kafka_bootstrap, orders_topic, [*good[:5], (b"bad", b"{not json"), *good[5:]])
    result = materialize([asset], resources=resources, instance=instance, raise_on_error=False)
    assert not result.success
    error = result.failure_data_for_node("channel_revenue").error
    text = error.to_string()
    assert "DeserializationError" in text
    assert f"{orders_topic}-0@5" in text
    assert instance.get_latest_materialization_event(asset.key) is None
    # At-least-once: the clean orders' revenue was written before the policy failed the run
    # (its statistics come from that write); the checkpoint stayed, so the retry reads them again.
    assert sum(v["order_count"] for _, v in read_all(kafka_bootstrap, out_topic, 1)) == 10


def test_ignored_dirty_records_are_counted_and_skipped(
    kafka_bootstrap, new_topic, resources
) -> None:
    orders_topic, out_topic = new_topic(partitions=1), new_topic(partitions=1)
    asset = build_asset(orders_topic, out_topic, {}, {"ingestion.ignore-errors": "true"})
    good = [encode_order(o) for o in generate_orders(6, 10)]
    produce(kafka_bootstrap, orders_topic, [(b"bad", b"[1,"), *good, (b"bad2", b"oops")])
    result = materialize([asset], resources=resources, instance=DagsterInstance.ephemeral())
    meta = result.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 12
    assert meta["dirtyRecords"].value == 2
    assert [s["offset"] for s in meta["dirtySamples"].value] == [0, 11]
    output = read_all(kafka_bootstrap, out_topic, 1)
    assert sum(v["order_count"] for _, v in output) == 10


def test_without_offsets_commit_the_group_is_untouched_and_the_checkpoint_advances(
    kafka_bootstrap, new_topic, resources
) -> None:
    orders_topic, out_topic = new_topic(partitions=1), new_topic(partitions=1)
    asset = build_asset(
        orders_topic, out_topic, {}, {"properties.commit.offsets.on.checkpoint": "false"}
    )
    instance = DagsterInstance.ephemeral()
    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in generate_orders(7, 30)])
    first = materialize([asset], resources=resources, instance=instance)
    meta = first.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 30
    assert meta["offsets"].value[f"orders/{orders_topic}-0"]["committedOffset"] is None
    consumer = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": f"revenue-{orders_topic}"}
    )
    [committed] = consumer.committed([TopicPartition(orders_topic, 0)], timeout=10)
    consumer.close()
    assert committed.offset < 0  # nothing committed to the group

    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in generate_orders(8, 5)])
    second = materialize([asset], resources=resources, instance=instance)
    meta = second.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 5  # the checkpoint advanced all the same
    assert meta[CHECKPOINT_METADATA_KEY].value["sources"]["orders"][orders_topic] == {"0": 35}


def test_kafka_resource_run_in_a_multi_asset_of_your_own_checkpoints_like_a_streaming_asset(
    kafka_bootstrap, new_topic, resources
) -> None:
    from dagster import AssetSpec, multi_asset

    orders_topic, out_topic = new_topic(partitions=2), new_topic(partitions=2)
    streaming = build_asset(orders_topic, out_topic, {})
    tables = streaming_tables(streaming)
    orders, sink = tables.sources["orders"], tables.sink
    fail: dict = {}

    @multi_asset(specs=[AssetSpec("channel_revenue")])
    def channel_revenue(context, kafka: KafkaResource, pyspark: SparkResource):
        def body(run):
            frame = run.read("orders", orders)
            if fail.get("now"):
                raise RuntimeError("query failed on purpose")
            return run.write(
                sink,
                frame.groupBy("order_channel").agg(
                    F.count(F.lit(1)).alias("order_count"), F.sum("real_pay").alias("revenue")
                ),
            )

        yield from kafka.run(context, body, sources={"orders": orders}, sink=sink)

    instance = DagsterInstance.ephemeral()
    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in generate_orders(8, 40)])
    first = materialize([channel_revenue], resources=resources, instance=instance)
    meta = first.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 40
    checkpoint_1 = meta[CHECKPOINT_METADATA_KEY].value
    assert sum(checkpoint_1["sources"]["orders"][orders_topic].values()) == 40

    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in generate_orders(9, 25)])
    fail["now"] = True
    failed = materialize(
        [channel_revenue], resources=resources, instance=instance, raise_on_error=False
    )
    assert not failed.success
    latest = instance.get_latest_materialization_event(channel_revenue.key)
    assert latest.asset_materialization.metadata[CHECKPOINT_METADATA_KEY].value == checkpoint_1

    fail["now"] = False
    second = materialize([channel_revenue], resources=resources, instance=instance)
    meta = second.asset_materializations_for_node("channel_revenue")[0].metadata
    assert meta["numRecordsIn"].value == 25
    assert sum(v["order_count"] for _, v in read_all(kafka_bootstrap, out_topic, 2)) == 65
