"""Planning and reading against the real broker: exact records, offsets, keys, transactions."""

from __future__ import annotations

from confluent_kafka import Producer

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.options import client_config
from dagster_kafka_flinklike.source import plan_source
from dagster_kafka_flinklike.source.admin import KafkaAdmin
from dagster_kafka_flinklike.source.reader import read_splits
from tests.conftest import produce


def _spec(topic: str, bootstrap: str, mode: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "properties.group.id": f"g-{topic}",
            "scan.startup.mode": mode,
            "format": "raw",
        },
        columns=[{"name": "v", "type": "STRING"}],
    )


def test_planner_startup_modes_and_checkpoint(kafka_bootstrap, new_topic) -> None:
    topic = new_topic(partitions=3)
    produce(kafka_bootstrap, topic, [(b"k", f"v{i}".encode(), i % 3) for i in range(30)])
    for mode, expected_start in (("earliest-offset", 0), ("latest-offset", 10)):
        spec = _spec(topic, kafka_bootstrap, mode)
        admin = KafkaAdmin(spec.properties)
        partitions = admin.partitions(spec.topics)
        assert partitions == [(topic, 0), (topic, 1), (topic, 2)]
        plan = plan_source(spec, partitions, admin)
        assert plan.starts == dict.fromkeys(partitions, expected_start)
        assert plan.stops == dict.fromkeys(partitions, 10)
        checkpoint = {(topic, 0): 4, (topic, 1): 10, (topic, 2): 0}
        plan = plan_source(spec, partitions, admin, checkpoint)
        assert plan.starts == checkpoint
        assert [(s.partition, s.start, s.stop) for s in plan.splits] == [(0, 4, 10), (2, 0, 10)]


def test_reader_returns_exact_records_offsets_and_keys(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=3)
    sent = [(f"k{i}".encode(), f"value-{i}".encode(), i % 3) for i in range(300)]
    produce(kafka_bootstrap, topic, sent)
    spec = _spec(topic, kafka_bootstrap, "earliest-offset")
    admin = KafkaAdmin(spec.properties)
    plan = plan_source(spec, admin.partitions(spec.topics), admin, max_records_per_split=30)
    assert len(plan.splits) == 12  # 100 per partition, cut into 4 splits of 25
    rows = read_splits(
        spark, plan.splits, client_config(spec.properties), ("key", "value", "partition", "offset")
    ).collect()
    got = sorted((r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"])) for r in rows)
    expected = sorted((p, i // 3, k, v) for i, (k, v, p) in enumerate(sent))
    assert got == expected


def test_range_ending_in_transaction_marker_is_read_exactly(
    kafka_bootstrap, new_topic, spark
) -> None:
    topic = new_topic(partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"committed-{i}".encode())
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"aborted-{i}".encode())
    producer.flush(30)  # the aborted records reach the log before the abort marker
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"committed-last")
    producer.commit_transaction(30)

    spec = _spec(topic, kafka_bootstrap, "earliest-offset")
    admin = KafkaAdmin(spec.properties)
    plan = plan_source(spec, admin.partitions(spec.topics), admin)
    # 5 records + marker, 3 aborted + marker, 1 record + marker: the end is 12.
    assert plan.stops == {(topic, 0): 12}
    rows = read_splits(spark, plan.splits, client_config(spec.properties), ("value", "offset"))
    values = [bytes(r["value"]).decode() for r in rows.orderBy("offset").collect()]
    assert values == [f"committed-{i}" for i in range(5)] + ["committed-last"]
