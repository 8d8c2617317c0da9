"""The at-least-once writer against the real broker: delivered records, and failed deliveries."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import DeliveryError, DeliveryGuarantee
from dagster_kafka_flinklike.sink.writer import write


def test_at_least_once_writes_every_record(kafka_bootstrap, new_topic, spark, admin) -> None:
    topic = new_topic(partitions=2)
    frame = spark.createDataFrame(
        [(f"k{i}".encode(), f"v{i}".encode()) for i in range(500)], "key binary, value binary"
    ).repartition(3)
    result = write(frame, topic, {"bootstrap.servers": kafka_bootstrap})
    assert (result.records, result.failed) == (500, 0)
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "sink-check"})
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in range(2)]
    consumer.close()
    assert sum(ends) == 500


def test_a_failed_delivery_fails_the_write(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1, config={"max.message.bytes": "1024"})
    frame = spark.createDataFrame(
        [(None, b"small"), (None, b"x" * 5000), (None, b"small")], "key binary, value binary"
    )
    with pytest.raises(Exception, match="not delivered") as exc:
        write(frame, topic, {"bootstrap.servers": kafka_bootstrap})
    # Spark surfaces the task's DeliveryError wrapped in its own exception type.
    assert isinstance(exc.value, DeliveryError) or "DeliveryError" in str(exc.value)


def test_none_guarantee_counts_failures_without_failing(kafka_bootstrap, new_topic, spark) -> None:
    topic = new_topic(partitions=1, config={"max.message.bytes": "1024"})
    frame = spark.createDataFrame(
        [(None, b"small"), (None, b"x" * 5000), (None, b"small")], "key binary, value binary"
    ).coalesce(1)
    result = write(frame, topic, {"bootstrap.servers": kafka_bootstrap}, DeliveryGuarantee.NONE)
    # The broker rejects the whole batch that holds the oversized record.
    assert result.failed >= 1
    assert result.records + result.failed == 3
    assert "too large" in (result.first_error or "").lower()
