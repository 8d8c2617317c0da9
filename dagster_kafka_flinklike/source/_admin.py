"""Driver-side broker access for planning: partitions, offsets, group commits (confluent-kafka)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaException,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from ..errors import OffsetsError
from ..options import client_config
from .offsets import TopicPartition

_TIMEOUT_S = 30.0


class KafkaAdmin:
    """Partitions and offsets of a cluster, with the isolation level the source reads with.

    Implements :class:`~dagster_kafka_flinklike.source.offsets.OffsetsRetriever`.
    """

    def __init__(self, properties: Mapping[str, str], group_id: str | None = None) -> None:
        self._properties = dict(properties)
        self.group_id = group_id or self._properties.get("group.id")
        self.read_committed = (
            self._properties.get("isolation.level", "read_committed") == "read_committed"
        )
        admin_config: dict[str, Any] = dict(client_config(self._properties, role="admin"))
        self.client = AdminClient(admin_config)

    # -- subscription -------------------------------------------------------------------------
    def partitions(
        self, topics: Sequence[str] = (), pattern: str | None = None
    ) -> list[TopicPartition]:
        """Topic-partitions of the named topics, or of every topic matching ``pattern``.

        Raises:
            OffsetsError: a named topic does not exist.
        """
        metadata = self.client.list_topics(timeout=_TIMEOUT_S)
        if pattern is not None:
            regex = re.compile(pattern)
            chosen = sorted(t for t in metadata.topics if regex.fullmatch(t))
        else:
            missing = [t for t in topics if t not in metadata.topics]
            if missing:
                raise OffsetsError(f"Topic(s) {', '.join(missing)} do not exist on the cluster.")
            chosen = list(topics)
        result: list[TopicPartition] = []
        for topic in chosen:
            meta = metadata.topics[topic]
            if meta.error is not None:
                raise OffsetsError(f"Topic {topic!r} metadata error: {meta.error}.")
            result.extend((topic, p) for p in sorted(meta.partitions))
        return result

    # -- OffsetsRetriever -------------------------------------------------------------------------
    def _list(self, specs: dict[CTopicPartition, Any]) -> dict[TopicPartition, int]:
        isolation = (
            IsolationLevel.READ_COMMITTED
            if self.read_committed
            else IsolationLevel.READ_UNCOMMITTED
        )
        futures = self.client.list_offsets(
            specs, isolation_level=isolation, request_timeout=_TIMEOUT_S
        )
        out: dict[TopicPartition, int] = {}
        for tp, fut in futures.items():
            try:
                out[(tp.topic, tp.partition)] = fut.result().offset
            except KafkaException as exc:
                raise OffsetsError(
                    f"Could not list offsets of {tp.topic}-{tp.partition}: {exc}"
                ) from exc
        return out

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets."""
        return self._list({CTopicPartition(t, p): OffsetSpec.earliest() for t, p in partitions})

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Last stable offsets (read_committed) or high watermarks (read_uncommitted)."""
        return self._list({CTopicPartition(t, p): OffsetSpec.latest() for t, p in partitions})

    def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        """First offset with timestamp >= ``timestamp_ms``; the end offset where none is."""
        found = self._list(
            {CTopicPartition(t, p): OffsetSpec.for_timestamp(timestamp_ms) for t, p in partitions}
        )
        none = [tp for tp, off in found.items() if off < 0]
        if none:
            found.update(self.end_offsets(none))
        return found

    def committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets (require-stable); partitions without one are absent."""
        if not self.group_id:
            raise OffsetsError(
                "'properties.group.id' is required to read committed offsets "
                "('scan.startup.mode' = 'group-offsets')."
            )
        request = ConsumerGroupTopicPartitions(
            self.group_id, [CTopicPartition(t, p) for t, p in partitions]
        )
        futures = self.client.list_consumer_group_offsets(
            [request], require_stable=True, request_timeout=_TIMEOUT_S
        )
        result = futures[self.group_id].result()
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions
            if tp.offset >= 0 and tp.error is None
        }

    def commit_group_offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` to the source's consumer group (for monitoring, as Flink does)."""
        if not self.group_id or not offsets:
            return
        from confluent_kafka import Consumer

        consumer = Consumer(client_config(self._properties, role="consumer"))
        try:
            consumer.commit(
                offsets=[CTopicPartition(t, p, o) for (t, p), o in offsets.items()],
                asynchronous=False,
            )
        finally:
            consumer.close()

    def active_members(self) -> int:
        """How many members the source's consumer group has right now."""
        if not self.group_id:
            return 0
        futures = self.client.describe_consumer_groups([self.group_id], request_timeout=_TIMEOUT_S)
        return len(futures[self.group_id].result().members)
