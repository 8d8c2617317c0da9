"""KafkaIOManager on real Kafka, Spark and Dagster: Kafka tables as asset inputs and outputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from dagster import (
    AssetIn,
    AssetKey,
    AssetSpec,
    DagsterEventType,
    DagsterInstance,
    DailyPartitionsDefinition,
    asset,
    materialize,
)

from dagster_kafka_flinklike import KafkaOptionsError, KafkaResource, KafkaTableSpec, SparkResource
from dagster_kafka_flinklike.io_manager import KafkaIOManager
from dagster_kafka_flinklike.spark import local_spark_config
from dagster_kafka_flinklike.translator import TABLE_METADATA_KEY, kafka_table_metadata
from tests.conftest import consume_all, produce

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "STRING"}]


def table_spec(topic: str, options: dict[str, str]) -> KafkaTableSpec:
    """A Kafka table over ``topic`` with ``options`` and the ``id``/``name`` columns."""
    return KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": topic, **options}, columns=COLUMNS
    )


def table(topic: str, **extra: str) -> KafkaTableSpec:
    """A JSON table over ``topic`` read from the earliest offset."""
    return table_spec(topic, {"format": "json", "scan.startup.mode": "earliest-offset", **extra})


def keyed_table(topic: str, **extra: str) -> KafkaTableSpec:
    """A table over ``topic`` with ``name`` as the raw key and JSON values."""
    return table_spec(
        topic, {"key.format": "raw", "key.fields": "name", "value.format": "json", **extra}
    )


def record(i: int) -> bytes:
    return json.dumps({"id": i, "name": f"n{i}"}).encode()


def read_topic(bootstrap: str, topic: str, partitions: int) -> list[tuple[bytes | None, bytes]]:
    """Every record of ``topic`` as (key, value)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "io-check", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[tuple[bytes | None, bytes]] = []
    eof: set[int] = set()
    while len(eof) < partitions:
        for m in consumer.consume(500, timeout=0.1):  # returns at its timeout
            if m.error():
                eof.add(m.partition())
            else:
                out.append((m.key(), m.value()))
    consumer.close()
    return out


def failure_text(result: Any) -> str:
    """The step failure messages of a run, with their causes."""
    return "\n".join(
        event.step_failure_data.error.to_string() for event in result.get_step_failure_events()
    )


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    # SparkResource's getOrCreate returns the session fixture's SparkSession.
    kafka = KafkaResource(bootstrap_servers=kafka_bootstrap)
    pyspark = SparkResource(spark_config=local_spark_config("tests"))
    return {"kafka_io": KafkaIOManager(kafka=kafka, pyspark=pyspark)}


def test_upstream_topic_is_loaded_as_a_dataframe(kafka_bootstrap, new_topic, resources) -> None:
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, record(i), i % 2) for i in range(10)])
    orders = AssetSpec("orders", metadata=kafka_table_metadata(table(topic))).with_io_manager_key(
        "kafka_io"
    )
    seen: dict[str, Any] = {}

    @asset
    def order_names(orders) -> None:
        seen["columns"] = orders.columns
        seen["rows"] = sorted((r["id"], r["name"]) for r in orders.collect())

    result = materialize(
        [orders, order_names], resources=resources, instance=DagsterInstance.ephemeral()
    )
    assert result.success
    assert seen["columns"] == ["id", "name"]
    assert seen["rows"] == [(i, f"n{i}") for i in range(10)]
    observations = [
        e
        for e in result.all_events
        if e.event_type == DagsterEventType.ASSET_OBSERVATION
        and e.asset_observation_data.asset_observation.asset_key == AssetKey("orders")
    ]
    meta = observations[0].asset_observation_data.asset_observation.metadata
    assert meta["numRecordsIn"].value == 10
    offsets = meta["offsets"].value
    assert {k: (v["start"], v["end"]) for k, v in offsets.items()} == {
        f"orders/{topic}-0": (0, 5),
        f"orders/{topic}-1": (0, 5),
    }


def test_output_is_written_to_the_sink_table_and_read_back(
    kafka_bootstrap, new_topic, resources, spark
) -> None:
    topic = new_topic(partitions=3)
    sink = keyed_table(topic, **{"scan.startup.mode": "earliest-offset"})
    seen: dict[str, Any] = {}

    @asset(io_manager_key="kafka_io", metadata=kafka_table_metadata(sink))
    def people():
        return spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id bigint, name string")

    @asset
    def people_count(people) -> None:
        seen["rows"] = sorted((r["id"], r["name"]) for r in people.collect())

    result = materialize(
        [people, people_count], resources=resources, instance=DagsterInstance.ephemeral()
    )
    assert result.success
    written = read_topic(kafka_bootstrap, topic, 3)
    values = [json.loads(value) for _, value in written]
    assert sorted(values, key=lambda v: v["id"]) == [{"id": i, "name": f"n{i}"} for i in range(20)]
    assert all(key == f"n{v['id']}".encode() for (key, _), v in zip(written, values, strict=True))
    meta = result.asset_materializations_for_node("people")[0].metadata
    assert meta["numRecordsOut"].value == 20
    assert meta["numBytesOut"].value == sum(len(k or b"") + len(v) for k, v in written)
    assert meta["numRecordsOutErrors"].value == 0
    assert meta["numRecordsOutPerSecond"].value > 0
    assert meta["currentSendTime"].value >= 0
    assert meta["topic"].value == topic
    assert seen["rows"] == [(i, f"n{i}") for i in range(20)]


def test_a_daily_partition_reads_exactly_that_days_records(
    kafka_bootstrap, new_topic, resources
) -> None:
    # No retention: the records carry timestamps from the past.
    topic = new_topic(partitions=2, config={"retention.ms": "-1"})
    day1 = datetime(2024, 3, 1, tzinfo=UTC)
    day2 = datetime(2024, 3, 2, tzinfo=UTC)
    stamps = {  # id -> timestamp; per partition in timestamp order
        1: day1.timestamp(),
        2: day1.timestamp() + 3600,
        3: day2.timestamp() - 0.001,  # last millisecond of day 1
        4: day2.timestamp(),  # first instant of day 2
        5: day2.timestamp() + 7200,
        6: day2.timestamp() + 86399,
    }
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})
    for i, ts in stamps.items():
        producer.produce(topic, record(i), partition=i % 2, timestamp=round(ts * 1000))
    assert producer.flush(30) == 0

    daily = DailyPartitionsDefinition(start_date="2024-03-01", end_date="2024-03-03")
    events = AssetSpec(
        "events", metadata=kafka_table_metadata(table(topic)), partitions_def=daily
    ).with_io_manager_key("kafka_io")
    seen: dict[str, list[int]] = {}

    @asset(partitions_def=daily, ins={"events": AssetIn()})
    def daily_ids(context, events) -> None:
        seen[context.partition_key] = sorted(r["id"] for r in events.collect())

    instance = DagsterInstance.ephemeral()
    for key in ("2024-03-01", "2024-03-02"):
        result = materialize(
            [events, daily_ids], resources=resources, instance=instance, partition_key=key
        )
        assert result.success
    assert seen == {"2024-03-01": [1, 2, 3], "2024-03-02": [4, 5, 6]}
    observation = instance.fetch_observations(AssetKey("events"), limit=10).records
    partitions = {
        r.asset_observation.partition: r.asset_observation.metadata["numRecordsIn"].value
        for r in observation
    }
    assert partitions == {"2024-03-01": 3, "2024-03-02": 3}


def test_a_missing_declaration_fails_naming_the_asset(resources) -> None:
    undeclared = AssetSpec("undeclared_topic").with_io_manager_key("kafka_io")

    @asset
    def consumer_of_undeclared(undeclared_topic) -> None:
        raise AssertionError("must not run without a Kafka table declaration")

    result = materialize(
        [undeclared, consumer_of_undeclared],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    text = failure_text(result)
    assert "KafkaOptionsError" in text
    assert "Asset 'undeclared_topic' has no Kafka table declaration" in text

    @asset(io_manager_key="kafka_io")
    def undeclared_output():
        return None

    result = materialize(
        [undeclared_output],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert "Asset 'undeclared_output' has no Kafka table declaration" in failure_text(result)


def test_an_invalid_declaration_fails_naming_the_asset_and_option(resources) -> None:
    bad = AssetSpec(
        "bad_table",
        metadata={TABLE_METADATA_KEY: {"options": {"connector": "kafka", "topic": "t"}}},
    ).with_io_manager_key("kafka_io")

    @asset
    def reads_bad(bad_table) -> None:
        raise AssertionError("must not run with an invalid declaration")

    result = materialize(
        [bad, reads_bad],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    text = failure_text(result)
    assert "Asset 'bad_table': invalid Kafka table declaration" in text
    assert "'format' or 'value.format' is required" in text


def test_secret_options_are_refused_in_metadata() -> None:
    spec = table("t", **{"properties.sasl.password": "s3cret"})
    with pytest.raises(KafkaOptionsError, match=r"KafkaResource\.properties") as exc:
        kafka_table_metadata(spec)
    assert exc.value.keys == ("properties.sasl.password",)
    assert "s3cret" not in str(exc.value)


def test_dirty_records_are_skipped_when_the_table_ignores_errors(
    kafka_bootstrap, new_topic, resources
) -> None:
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [(None, record(1)), (None, b"{not json"), (None, record(2))])
    tolerant = AssetSpec(
        "tolerant",
        metadata=kafka_table_metadata(table(topic, **{"ingestion.ignore-errors": "true"})),
    ).with_io_manager_key("kafka_io")
    strict = AssetSpec("strict", metadata=kafka_table_metadata(table(topic))).with_io_manager_key(
        "kafka_io"
    )
    seen: dict[str, list[int]] = {}

    @asset
    def from_tolerant(tolerant) -> None:
        seen["tolerant"] = sorted(r["id"] for r in tolerant.collect())

    @asset
    def from_strict(strict) -> None:
        seen["strict"] = sorted(r["id"] for r in strict.collect())

    instance = DagsterInstance.ephemeral()
    assert materialize([tolerant, from_tolerant], resources=resources, instance=instance).success
    assert seen == {"tolerant": [1, 2]}
    result = materialize(
        [strict, from_strict], resources=resources, instance=instance, raise_on_error=False
    )
    assert not result.success
    assert "1 dirty record(s)" in failure_text(result)
    assert "strict" not in seen


def test_a_failed_at_least_once_delivery_fails_the_run(
    kafka_bootstrap, new_topic, resources, spark
) -> None:
    topic = new_topic(partitions=1, config={"max.message.bytes": "1024"})
    sink = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "format": "json",
            "sink.delivery-guarantee": "at-least-once",
        },
        columns=COLUMNS,
    )

    @asset(io_manager_key="kafka_io", metadata=kafka_table_metadata(sink))
    def oversized():
        return spark.createDataFrame([(1, "small"), (2, "x" * 5000)], "id bigint, name string")

    instance = DagsterInstance.ephemeral()
    result = materialize([oversized], resources=resources, instance=instance, raise_on_error=False)
    assert not result.success
    text = failure_text(result)
    assert "not delivered" in text
    assert "too large" in text.lower()
    assert instance.get_latest_materialization_event(AssetKey("oversized")) is None


def test_an_exactly_once_output_commits_in_one_transaction_per_materialization(
    kafka_bootstrap, new_topic, resources, spark
) -> None:
    topic = new_topic(partitions=3)
    sink = keyed_table(
        topic,
        **{
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": f"io-{topic}",
        },
    )

    @asset(io_manager_key="kafka_io", metadata=kafka_table_metadata(sink))
    def ledger():
        return spark.createDataFrame(
            [(i, f"n{i}") for i in range(500)], "id bigint, name string"
        ).repartition(4)

    instance = DagsterInstance.ephemeral()
    epochs = []
    for _ in range(2):
        result = materialize([ledger], resources=resources, instance=instance)
        assert result.success
        meta = result.asset_materializations_for_node("ledger")[0].metadata
        assert meta["numRecordsOut"].value == 500
        assert meta["transactionalId"].value == f"io-{topic}-ledger-0"
        assert meta["commitAttempts"].value == 1
        assert meta["transactionDurationMs"].value > 0
        epochs.append(meta["producerEpoch"].value)
    # One stable id: the second materialization fenced the first (same id, a later epoch).
    assert epochs[1] > epochs[0]
    committed = consume_all(kafka_bootstrap, topic, 3, "read_committed")
    ids = sorted(json.loads(m.value())["id"] for m in committed)
    assert ids == sorted(list(range(500)) * 2)
    assert all(m.key() == f"n{json.loads(m.value())['id']}".encode() for m in committed)
