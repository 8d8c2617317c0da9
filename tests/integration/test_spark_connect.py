"""The connector over Spark Connect: the local server started by ``dkf local-spark``, reading,
both writers and whole run cycles on the real broker.

One server serves the whole test session (``spark_connect_url`` in conftest); the readers' and
writers' ``mapInArrow`` functions run in its Python workers.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    StreamingRun,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.options import client_config
from dagster_kafka_flinklike.run.windows import TimeWindows
from dagster_kafka_flinklike.sink.writer import num_partitions, write
from dagster_kafka_flinklike.source import KafkaSplit
from dagster_kafka_flinklike.source.reader import read_splits
from dagster_kafka_flinklike.spark import is_connect
from tests.conftest import IN_ORDER, consume_all, produce, run_dkf

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "payload", "type": "STRING"}]


def _events(first: int, count: int) -> list[tuple[bytes, bytes]]:
    return [
        (f"k{i}".encode(), json.dumps({"id": i, "payload": f"p{i}"}).encode())
        for i in range(first, first + count)
    ]


def _tables(source_topic: str, sink_topic: str, guarantee: str, **sink_extra: str) -> tuple:
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"connect-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
        },
        columns=COLUMNS,
        role="source",
    )
    sink_options = {"connector": "kafka", "topic": sink_topic, "format": "json"}
    sink_options["sink.delivery-guarantee"] = guarantee
    if guarantee == "exactly-once":
        sink_options["sink.transactional-id-prefix"] = f"connect-{sink_topic}"
    sink_options.update(sink_extra)
    sink = KafkaTableSpec.from_options(sink_options, columns=COLUMNS, role="sink")
    return source, sink


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    consumer.close()
    return [tp.offset for tp in found]


def _ids(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed") -> Counter:
    messages = consume_all(bootstrap, topic, partitions, isolation)
    return Counter(json.loads(m.value())["id"] for m in messages)


def test_the_cli_reports_the_running_server(spark_connect_home, spark_connect_url) -> None:
    if not (spark_connect_home / "spark-connect" / "state.json").exists():
        pytest.skip("SPARK_REMOTE names the session's server; no local one was started")
    status = run_dkf(spark_connect_home, "local-spark", "status")
    assert (status.returncode, status.stdout.strip()) == (0, spark_connect_url)
    # One named session that every client shares (its Python workers stay started).
    assert ";session_id=" in spark_connect_url
    again = run_dkf(spark_connect_home, "local-spark", "start")  # idempotent: nothing started
    assert (again.returncode, again.stdout.strip()) == (0, spark_connect_url)
    assert "already running" in again.stderr


def test_read_splits_over_connect(kafka_bootstrap, new_topic, connect_spark) -> None:
    assert is_connect(connect_spark)
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(k, v, i % 2) for i, (k, v) in enumerate(_events(0, 40))])
    splits = [KafkaSplit(topic, 0, 0, 20), KafkaSplit(topic, 1, 5, 20)]
    frame = read_splits(
        connect_spark,
        splits,
        client_config({"bootstrap.servers": kafka_bootstrap}),
        ("key", "value", "partition", "offset"),
    )
    rows = frame.orderBy("partition", "offset").collect()
    assert [(r["partition"], r["offset"]) for r in rows] == [(0, o) for o in range(20)] + [
        (1, o) for o in range(5, 20)
    ]
    ids = [json.loads(bytes(r["value"]))["id"] for r in rows]
    assert ids == list(range(0, 40, 2)) + list(range(11, 40, 2))
    assert bytes(rows[0]["key"]) == b"k0"


def test_at_least_once_write_over_connect(kafka_bootstrap, new_topic, connect_spark) -> None:
    topic = new_topic(partitions=2)
    frame = connect_spark.createDataFrame(
        [(f"k{i}".encode(), f"v{i}".encode()) for i in range(300)], "key binary, value binary"
    ).repartition(3)
    assert num_partitions(frame) == 3  # what a user partitioner's open() gets, without RDDs
    result = write(frame, topic, {"bootstrap.servers": kafka_bootstrap})
    assert (result.records, result.failed) == (300, 0)
    values = sorted(m.value() for m in consume_all(kafka_bootstrap, topic, 2, "read_uncommitted"))
    assert values == sorted(f"v{i}".encode() for i in range(300))


def test_streaming_run_exactly_once_over_connect(kafka_bootstrap, new_topic, connect_spark) -> None:
    source_topic, sink_topic = new_topic(partitions=2), new_topic(partitions=2)
    source, sink = _tables(source_topic, sink_topic, "exactly-once")
    produce(kafka_bootstrap, source_topic, _events(0, 200))
    group = f"connect-{source_topic}"

    run = StreamingRun(
        connect_spark, {"bootstrap.servers": kafka_bootstrap}, sink=sink, asset_name="copy"
    )
    try:
        events = run.read("events", source)
        result = run.write(sink, events.select("id", "payload"))
        # The write's pass counted the input (observed over Connect too): no job of its own.
        assert run.sources["events"].decoded.counts.counted
        assert run.sources["events"].decoded.stats.records == 200
        checkpoint = run.commit()
    finally:
        run.close()
    assert result.records == 200
    assert checkpoint is not None
    assert sum(checkpoint.sources["events"].values()) == 200
    # Output and offsets committed in one transaction: visible to read_committed consumers.
    assert _ids(kafka_bootstrap, sink_topic, 2) == Counter(range(200))
    assert sum(_committed(kafka_bootstrap, group, source_topic, 2)) == 200

    # A run that fails while its transaction is open leaves nothing: no output, no offsets.
    produce(kafka_bootstrap, source_topic, _events(200, 100))
    failing = StreamingRun(
        connect_spark, {"bootstrap.servers": kafka_bootstrap}, sink=sink, asset_name="copy"
    )
    from pyspark.sql import functions as F

    @F.udf("bigint")
    def fail_at_250(value: int) -> int:
        if value == 250:
            raise ValueError("query failed at id 250")
        return value

    try:
        events = failing.read("events", source)
        with pytest.raises(Exception, match="query failed at id 250"):
            failing.write(sink, events.select(fail_at_250("id").alias("id"), "payload"))
    finally:
        failing.close()
    assert _ids(kafka_bootstrap, sink_topic, 2) == Counter(range(200))
    assert sum(_committed(kafka_bootstrap, group, source_topic, 2)) == 200


def test_a_transaction_per_split_over_connect(kafka_bootstrap, new_topic, connect_spark) -> None:
    """The split scope's tasks run in the server's Python workers and hold their prepared
    transactions there; the verdict reaches them from this process."""
    source_topic, sink_topic = new_topic(partitions=2), new_topic(partitions=2)
    source, sink = _tables(
        source_topic, sink_topic, "exactly-once", **{"sink.transaction-scope": "split"}
    )
    group = f"connect-{source_topic}"
    for first in (0, 150):
        produce(kafka_bootstrap, source_topic, _events(first, 150))
        run = StreamingRun(
            connect_spark, {"bootstrap.servers": kafka_bootstrap}, sink=sink, asset_name="splits"
        )
        try:
            result = run.write(sink, run.read("events", source).select("id", "payload"))
            checkpoint = run.commit()
        finally:
            run.close()
        assert result.records == 150
        assert checkpoint is not None
        assert _ids(kafka_bootstrap, sink_topic, 2) == Counter(range(first + 150))
        assert sum(_committed(kafka_bootstrap, group, source_topic, 2)) == first + 150
    # A query that moves rows between partitions is refused before anything is written.
    produce(kafka_bootstrap, source_topic, _events(300, 10))
    refused = StreamingRun(
        connect_spark, {"bootstrap.servers": kafka_bootstrap}, sink=sink, asset_name="splits"
    )
    try:
        events = refused.read("events", source).repartition(3, "id")
        with pytest.raises(KafkaOptionsError, match="moves rows between partitions"):
            refused.write(sink, events.select("id", "payload"))
    finally:
        refused.close()
    assert _ids(kafka_bootstrap, sink_topic, 2, "read_uncommitted") == Counter(range(300))
    assert sum(_committed(kafka_bootstrap, group, source_topic, 2)) == 300


def test_a_run_over_time_windows_over_connect(kafka_bootstrap, new_topic, connect_spark) -> None:
    from confluent_kafka import Producer

    source_topic, sink_topic = new_topic(partitions=1), new_topic(partitions=1)
    source, sink = _tables(source_topic, sink_topic, "at-least-once")
    hour = 3_600_000
    start = (int(time.time() * 1000) // hour - 3) * hour
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "acks": "all", "linger.ms": 0, **IN_ORDER}
    )
    # id 2 (the first hour) arrives after id 1 (the second): late, in no window
    for i, minutes in enumerate([10, 80, 30, 100]):
        value = json.dumps({"id": i, "payload": f"p{i}"}).encode()
        producer.produce(source_topic, value, timestamp=start + minutes * 60_000)
        producer.flush(30)
    windows = TimeWindows(("h0", "h1"), tuple(start + h * hour for h in (-1, 0, 1, 2)))
    run = StreamingRun(
        connect_spark,
        {"bootstrap.servers": kafka_bootstrap},
        sink=sink,
        asset_name="windows",
        windows=windows,
    )
    try:
        run.write(sink, run.read("events", source).select("id", "payload"))
        assert run.sources["events"].decoded.counts.counted  # in the write's pass
        figures = run.window_metadata()
    finally:
        run.close()
    assert {k: (w["numRecordsIn"], w["lateRecords"]) for k, w in figures.items()} == {
        "h0": (1, 0),
        "h1": (2, 1),
    }
    assert _ids(kafka_bootstrap, sink_topic, 1) == Counter([0, 1, 3])


def test_materialize_at_least_once_with_a_remote_resource(
    kafka_bootstrap, new_topic, spark_connect_url, connect_spark
) -> None:
    source_topic, sink_topic = new_topic(partitions=2), new_topic(partitions=1)
    source, sink = _tables(source_topic, sink_topic, "at-least-once")

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name="copy")
    def copy(context, events):
        return events.where("id % 2 = 0").select("id", "payload")

    resources = {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(remote=spark_connect_url),
    }
    produce(kafka_bootstrap, source_topic, _events(0, 500))
    result = materialize([copy], resources=resources, instance=DagsterInstance.ephemeral())
    meta = result.asset_materializations_for_node("copy")[0].metadata
    assert (meta["numRecordsIn"].value, meta["numRecordsOut"].value) == (500, 250)
    assert _ids(kafka_bootstrap, sink_topic, 1, "read_uncommitted") == Counter(range(0, 500, 2))
    assert sum(_committed(kafka_bootstrap, f"connect-{source_topic}", source_topic, 2)) == 500


def test_a_remote_resource_connects_in_the_background_as_the_run_starts(
    spark_connect_url, connect_spark
) -> None:
    from dagster import asset

    seen: dict[str, object] = {}

    @asset
    def probe(pyspark: SparkResource) -> None:
        # Set up for a run that materializes: connecting started before the body ran.
        seen["started_early"] = pyspark._starting is not None
        spark = pyspark.spark_session
        seen["connect"] = is_connect(spark)
        seen["count"] = spark.range(7).count()
        seen["same"] = pyspark.spark_session is spark

    result = materialize(
        [probe],
        resources={"pyspark": SparkResource(remote=spark_connect_url)},
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    assert seen == {"started_early": True, "connect": True, "count": 7, "same": True}
