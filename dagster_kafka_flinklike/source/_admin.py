"""Driver-side broker access for planning: partitions, offsets, group commits (confluent-kafka).

:class:`KafkaAdmin` is the :class:`~dagster_kafka_flinklike.source.offsets.OffsetsRetriever` the
planner uses against a real cluster. Offsets are listed with the isolation level the source reads
with, committed offsets with require-stable semantics (KIP-447), and transient broker errors
(leader elections, coordinator loading, pending transactional offset commits) are retried.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from ..errors import OffsetsError
from ..options import client_config
from .offsets import TopicPartition, describe_partitions

_TIMEOUT_S = 30.0
_RETRY_PAUSE_S = 0.2
#: Kafka's own internal topics, which a topic pattern never subscribes to (as in Flink).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_RETRIABLE = frozenset(
    {
        KafkaError.UNSTABLE_OFFSET_COMMIT,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
    }
)
_T = TypeVar("_T")


def _retriable(error: KafkaError | None) -> bool:
    return error is not None and (error.retriable() or error.code() in _RETRIABLE)


def _kafka_error(exc: KafkaException) -> KafkaError | None:
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, KafkaError) else None


class KafkaAdmin:
    """Partitions and offsets of a cluster, with the isolation level the source reads with.

    Implements :class:`~dagster_kafka_flinklike.source.offsets.OffsetsRetriever`.

    Args:
        properties: client properties (``properties.*`` keys without the prefix).
        group_id: the source's consumer group; defaults to ``properties['group.id']``.

    Example:
        >>> admin = KafkaAdmin({"bootstrap.servers": "localhost:9092"}, group_id="g")
        >>> admin.partitions(["orders"])  # doctest: +SKIP
        [('orders', 0), ('orders', 1)]
    """

    def __init__(self, properties: Mapping[str, str], group_id: str | None = None) -> None:
        self._properties = dict(properties)
        self.group_id: str | None = group_id or self._properties.get("group.id") or None
        isolation = self._properties.get("isolation.level", "read_committed").strip().lower()
        self.read_committed = isolation != "read_uncommitted"
        admin_config: dict[str, Any] = dict(client_config(self._properties, role="admin"))
        self.client = AdminClient(admin_config)

    # -- subscription -------------------------------------------------------------------------
    def partitions(
        self,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        *,
        partitions: Iterable[TopicPartition] | None = None,
    ) -> list[TopicPartition]:
        """The subscribed topic-partitions, in topic and partition order.

        Exactly one subscription: ``topics`` (every partition of each), ``pattern`` (every
        partition of every topic whose whole name matches; Kafka's internal topics excluded), or
        ``partitions``, an explicit partition set as Flink's ``KafkaSource.setPartitions`` (no
        table option offers it).

        Raises:
            OffsetsError: a named topic or partition does not exist, or its metadata has an
                error; or not exactly one subscription is given.
        """
        given = sum(x is not None for x in (topics or None, pattern, partitions))
        if given != 1:
            raise OffsetsError(
                "Subscribe with exactly one of a topic list ('topic'), a topic pattern "
                "('topic-pattern') or an explicit partition set."
            )
        metadata = self.client.list_topics(timeout=_TIMEOUT_S)
        if pattern is not None:
            regex = re.compile(pattern)
            chosen = sorted(
                t for t in metadata.topics if t not in INTERNAL_TOPICS and regex.fullmatch(t)
            )
            return [tp for topic in chosen for tp in self._topic_partitions(metadata, topic)]
        if partitions is not None:
            wanted = sorted(set(partitions))
            for topic in dict.fromkeys(t for t, _ in wanted):
                self._check_topic(metadata, topic)
            absent = [tp for tp in wanted if tp[1] not in metadata.topics[tp[0]].partitions]
            if absent:
                raise OffsetsError(
                    f"Partition(s) {describe_partitions(absent)} do not exist on the cluster."
                )
            return wanted
        result: list[TopicPartition] = []
        for topic in dict.fromkeys(topics):
            self._check_topic(metadata, topic)
            result.extend(self._topic_partitions(metadata, topic))
        return result

    @staticmethod
    def _check_topic(metadata: Any, topic: str) -> None:
        meta = metadata.topics.get(topic)
        if meta is None or (
            meta.error is not None and meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        ):
            raise OffsetsError(f"Topic {topic!r} does not exist on the cluster ('topic').")
        if meta.error is not None:
            raise OffsetsError(f"Topic {topic!r} metadata error: {meta.error}.")

    def _topic_partitions(self, metadata: Any, topic: str) -> list[TopicPartition]:
        self._check_topic(metadata, topic)
        return [(topic, p) for p in sorted(metadata.topics[topic].partitions)]

    # -- OffsetsRetriever -------------------------------------------------------------------------
    def _list(
        self, partitions: Sequence[TopicPartition], spec: Callable[[], Any], committed: bool
    ) -> dict[TopicPartition, int]:
        """ListOffsets for ``partitions``, retrying transient per-partition errors."""
        isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        out: dict[TopicPartition, int] = {}
        pending = list(dict.fromkeys(partitions))
        deadline = time.monotonic() + _TIMEOUT_S
        while pending:
            futures = self.client.list_offsets(
                {CTopicPartition(t, p): spec() for t, p in pending},
                isolation_level=isolation,
                request_timeout=_TIMEOUT_S,
            )
            retry: list[TopicPartition] = []
            for tp, fut in futures.items():
                key = (tp.topic, tp.partition)
                try:
                    out[key] = fut.result().offset
                except KafkaException as exc:
                    if _retriable(_kafka_error(exc)) and time.monotonic() < deadline:
                        retry.append(key)
                        continue
                    raise OffsetsError(
                        f"Could not list offsets of {tp.topic}-{tp.partition}: {exc}"
                    ) from exc
            pending = retry
            if pending:
                time.sleep(_RETRY_PAUSE_S)
        return out

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets."""
        return self._list(partitions, OffsetSpec.earliest, self.read_committed)

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Last stable offsets (read_committed) or high watermarks (read_uncommitted)."""
        return self._list(partitions, OffsetSpec.latest, self.read_committed)

    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermarks (the end including open transactions), whatever the isolation."""
        return self._list(partitions, OffsetSpec.latest, committed=False)

    def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        """First offset with timestamp >= ``timestamp_ms``; the end offset where none is."""
        found = self._list(
            partitions, lambda: OffsetSpec.for_timestamp(timestamp_ms), self.read_committed
        )
        none = [tp for tp, off in found.items() if off < 0]
        if none:
            found.update(self.end_offsets(none))
        return found

    # -- consumer group -------------------------------------------------------------------------
    def _group_call(self, what: str, call: Callable[[], _T]) -> _T:
        """Run a group request, retrying while the coordinator loads or a commit is unstable."""
        deadline = time.monotonic() + _TIMEOUT_S
        while True:
            try:
                return call()
            except KafkaException as exc:
                if not _retriable(_kafka_error(exc)) or time.monotonic() >= deadline:
                    raise OffsetsError(
                        f"Could not {what} of consumer group {self.group_id!r}: {exc}"
                    ) from exc
            time.sleep(_RETRY_PAUSE_S)

    def _fetch_committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        def fetch() -> dict[TopicPartition, int]:
            request = ConsumerGroupTopicPartitions(
                group, [CTopicPartition(t, p) for t, p in dict.fromkeys(partitions)]
            )
            futures = self.client.list_consumer_group_offsets(
                [request], require_stable=True, request_timeout=_TIMEOUT_S
            )
            result = futures[group].result()
            found: dict[TopicPartition, int] = {}
            for tp in result.topic_partitions:
                if tp.error is not None:
                    raise KafkaException(tp.error)
                if tp.offset >= 0:
                    found[(tp.topic, tp.partition)] = tp.offset
            return found

        return self._group_call("read the committed offsets", fetch)

    def committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets (require-stable); partitions without one are absent.

        Raises:
            OffsetsError: no consumer group is set, or the broker keeps failing the request.
        """
        if not self.group_id:
            raise OffsetsError(
                "'properties.group.id' is required to read committed offsets "
                "('scan.startup.mode' = 'group-offsets' or 'specific-offsets', or "
                "'scan.bounded.mode' = 'group-offsets')."
            )
        return self._fetch_committed(self.group_id, partitions) if partitions else {}

    def group_offsets(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offset of each partition, None where it has none.

        For the ``committedOffset`` metric: a group that does not exist, has committed nothing,
        or is not set gives None for every partition instead of an error.

        Raises:
            OffsetsError: the broker keeps failing the request.
        """
        group = self.group_id
        committed = self._fetch_committed(group, partitions) if group and partitions else {}
        return {tp: committed.get(tp) for tp in partitions}

    def commit_group_offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` to the source's consumer group (for monitoring, as Flink does).

        Raises:
            OffsetsError: the broker refused the commit (e.g. the group has active members).
        """
        group = self.group_id
        if not group or not offsets:
            return
        request = ConsumerGroupTopicPartitions(
            group, [CTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        )

        def commit() -> None:
            futures = self.client.alter_consumer_group_offsets(
                [request], request_timeout=_TIMEOUT_S
            )
            result = futures[group].result()
            for tp in result.topic_partitions:
                if tp.error is not None:
                    raise KafkaException(tp.error)

        self._group_call("commit offsets", commit)

    def active_members(self) -> int:
        """How many members the source's consumer group has right now (0 when it has none)."""
        group = self.group_id
        if not group:
            return 0

        def describe() -> int:
            futures = self.client.describe_consumer_groups([group], request_timeout=_TIMEOUT_S)
            return len(futures[group].result().members or ())

        return self._group_call("describe the members", describe)
