"""Driver-side probes of a few records: the timestamp of the record at an offset, and the
values of a small sample.

Checks need a record's age without reading a range: the oldest record a source has not read yet,
or the first record of a transaction that is still open; schema inference samples each
partition's newest records. All partitions are assigned to one consumer at once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .offsets import TopicPartition

#: Give up on partitions that sent nothing after this long.
PROBE_TIMEOUT_S = 10.0


def record_timestamps(
    consumer_config: Mapping[str, Any],
    offsets: Mapping[TopicPartition, int],
    *,
    read_committed: bool = False,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> dict[TopicPartition, int]:
    """The timestamp (ms) of the first record at or after each offset of ``offsets``.

    Reads one record per partition with ``isolation.level`` read_uncommitted unless
    ``read_committed``; partitions whose record does not arrive within ``timeout_s`` (nothing
    there, or held back by an open transaction) are absent from the result.

    Example:
        >>> config = {"bootstrap.servers": "b:9092"}
        >>> record_timestamps(config, {("orders", 0): 42})  # doctest: +SKIP
        {('orders', 0): 1763900000000}
    """
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition

    if not offsets:
        return {}
    config = dict(consumer_config)
    config.update(
        {
            "group.id": config.get("group.id") or "dagster-kafka-flinklike-probe",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            "enable.partition.eof": False,
        }
    )
    consumer = Consumer(config)
    found: dict[TopicPartition, int] = {}
    try:
        consumer.assign([CTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])
        deadline = time.monotonic() + timeout_s
        while len(found) < len(offsets) and time.monotonic() < deadline:
            for message in consumer.consume(len(offsets), timeout=0.2):
                if message.error() is not None:
                    continue
                key = (str(message.topic()), int(message.partition() or 0))
                if key in offsets and key not in found:
                    found[key] = int(message.timestamp()[1])
                    consumer.pause([CTopicPartition(*key)])
    finally:
        consumer.close()
    return found


def sample_values(
    consumer_config: Mapping[str, Any],
    ranges: Mapping[TopicPartition, tuple[int, int]],
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> list[bytes | None]:
    """The values of the records in each offset range ``[start, stop)`` (schema inference's
    sample of a partition's newest records), in partition order; a partition whose records do
    not arrive within ``timeout_s`` gives what arrived.

    Example:
        >>> sample_values(config, {("orders", 0): (950, 1000)})  # doctest: +SKIP
        [b'{"order_id": 950, ...}', ...]
    """
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition

    wanted = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
    if not wanted:
        return []
    config = dict(consumer_config)
    config.update(
        {
            "group.id": config.get("group.id") or "dagster-kafka-flinklike-probe",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    consumer = Consumer(config)
    found: dict[TopicPartition, list[bytes | None]] = {tp: [] for tp in wanted}
    done: set[TopicPartition] = set()
    try:
        consumer.assign([CTopicPartition(t, p, r[0]) for (t, p), r in sorted(wanted.items())])
        deadline = time.monotonic() + timeout_s
        while len(done) < len(wanted) and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.2):
                if message.error() is not None:
                    continue
                key = (str(message.topic()), int(message.partition() or 0))
                offset = int(message.offset() or 0)
                if key in done or key not in wanted or offset >= wanted[key][1]:
                    continue
                found[key].append(message.value())
                if offset + 1 >= wanted[key][1]:
                    done.add(key)
                    consumer.pause([CTopicPartition(*key)])
    finally:
        consumer.close()
    return [value for tp in sorted(found) for value in found[tp]]
