"""Driver-side broker access for planning: partitions, offsets, group commits (confluent-kafka).

:class:`KafkaAdmin` is the :class:`~dagster_kafka_flinklike.source.offsets.OffsetsRetriever` the
planner uses against a real cluster. Offsets are listed with the isolation level the source reads
with, committed offsets with require-stable semantics (KIP-447), and transient broker errors
(leader elections, coordinator loading, pending transactional offset commits) are retried, as is
a partition whose leader did not answer (librdkafka gives it offset -1001 and no error).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    IsolationLevel,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from ..errors import (
    KafkaAuthenticationError,
    KafkaClientError,
    KafkaErrorKind,
    OffsetsError,
    classify_kafka_error,
)
from ..options import client_config
from .offsets import TopicPartition, describe_partitions

#: How long a broker request waits for its answer by default, in seconds.
DEFAULT_TIMEOUT_S = 30.0
_RETRY_PAUSE_S = 0.2
#: The offset librdkafka gives, without an error, for a partition whose ListOffsets its leader
#: did not answer (killed, paused, being replaced): ``OFFSET_INVALID``, never an offset (a
#: timestamp with no record after it is -1).
NO_ANSWER = -1001
#: Kafka's own internal topics, which a topic pattern never subscribes to (as in Flink).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_T = TypeVar("_T")


def _retriable(exc: BaseException) -> bool:
    return classify_kafka_error(exc) == KafkaErrorKind.RETRIABLE


#: Until a client has connected once, it waits for an answer this long at a time and looks
#: between waits for a refused login or certificate, which no retry can cure.
_FIRST_CONNECTION_SLICE_S = 1.0
#: TLS alerts a broker sends when it refuses the client's certificate.
_CERTIFICATE_ALERTS = re.compile(
    r"alert (bad certificate|certificate unknown|unknown ca|certificate required|"
    r"unsupported certificate|certificate expired)|SSL alert number (42|46|48|116)\b",
    re.I,
)


class ConnectionRefusals:
    """A client's ``error_cb``: keeps the first error that says the cluster refused its SASL
    login or certificate, or that its broker's certificate is not trusted (served by
    ``poll``)."""

    def __init__(self) -> None:
        self.first: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if self.first is None and refusal_options(error):
            self.first = error


def refusal_options(error: KafkaError) -> tuple[str, ...]:
    """The options to fix when ``error`` is a refused login or certificate, else ``()``."""
    text = error.str()
    if error.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        return ("properties.sasl.jaas.config", "properties.sasl.mechanism")
    if error.code() == KafkaError._SSL and "verify failed" in text:
        return ("properties.ssl.truststore.location", "properties.ssl.truststore.certificates")
    if error.code() in (KafkaError._SSL, KafkaError._TRANSPORT) and _CERTIFICATE_ALERTS.search(
        text
    ):
        return ("properties.ssl.keystore.location", "properties.ssl.keystore.type")
    return ()


def refusal_error(error: KafkaError, bootstrap: str) -> KafkaAuthenticationError:
    """The connector's error for a refused login or certificate, naming what to fix."""
    keys = refusal_options(error)
    detail = error.str()[:300]
    if keys[0] == "properties.sasl.jaas.config":
        what = (
            f"refused the SASL login: the user name or password in '{keys[0]}' is wrong, or "
            f"the user has no credential for the mechanism in '{keys[1]}'"
        )
    elif keys[0] == "properties.ssl.truststore.location":
        what = (
            f"sent a certificate this client does not trust: '{keys[0]}' (or '{keys[1]}') "
            "must hold the certificate authority that signed it (a host name that does not "
            "match is also reported so; 'properties.ssl.endpoint.identification.algorithm' = "
            "'' turns that check off)"
        )
    else:
        what = (
            f"refused this client's certificate: '{keys[0]}' must hold a certificate and key "
            "signed by an authority the broker trusts (its listener requires client "
            "certificates)"
        )
    return KafkaAuthenticationError(
        f"The Kafka cluster at {bootstrap} {what}. A retry cannot help. (librdkafka: {detail})",
        error,
        keys=keys,
    )


class _AdminClient(AdminClient):  # type: ignore[misc]
    """An ``AdminClient`` that keeps what a refused login or certificate reports."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.refusals = ConnectionRefusals()
        self.bootstrap = str(config.get("bootstrap.servers", "?"))
        self.connected = False
        settings: dict[str, Any] = dict(config)
        settings["error_cb"] = self.refusals
        super().__init__(settings)


def admin_client(config: Mapping[str, Any]) -> AdminClient:
    """A confluent-kafka ``AdminClient`` for librdkafka admin settings (``client_config``),
    which keeps what a refused login or certificate reports (:class:`ConnectionRefusals`)."""
    return _AdminClient(config)


def first_connection(client: Any, timeout_s: float, call: Callable[[float], _T]) -> _T:
    """``call(timeout)`` on a client that may not have connected yet: waits in short slices
    and fails at once, with :class:`KafkaAuthenticationError`, when the cluster refused its
    login or certificate (instead of at the timeout). A client without
    :class:`ConnectionRefusals` (or connected before) just calls once."""
    refusals = getattr(client, "refusals", None)
    if refusals is None or getattr(client, "connected", False):
        return call(timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        try:
            result = call(max(0.001, min(_FIRST_CONNECTION_SLICE_S, remaining)))
        except KafkaException:
            client.poll(0)  # serves the error callback
            if refusals.first is not None:
                raise refusal_error(refusals.first, client.bootstrap) from None
            if time.monotonic() >= deadline:
                raise
            continue
        client.connected = True
        return result


class KafkaAdmin:
    """Partitions and offsets of a cluster, with the isolation level the source reads with.

    Implements :class:`~dagster_kafka_flinklike.source.offsets.OffsetsRetriever`.

    Args:
        properties: client properties (``properties.*`` keys without the prefix).
        group_id: the source's consumer group; defaults to ``properties['group.id']``.
        client: an ``AdminClient`` to share (one per cluster and run); built from
            ``properties`` when not given.
        timeout_s: how long a request, with its retries, may take (a sensor tick wants less
            than a run).
        consumer: librdkafka settings of a consumer of the cluster (for the group's committed
            offsets); built from ``properties`` when not given.

    Example:
        >>> admin = KafkaAdmin({"bootstrap.servers": "localhost:9092"}, group_id="g")
        >>> admin.partitions(["orders"])  # doctest: +SKIP
        [('orders', 0), ('orders', 1)]
    """

    def __init__(
        self,
        properties: Mapping[str, str],
        group_id: str | None = None,
        *,
        client: AdminClient | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        consumer: Mapping[str, Any] | None = None,
    ) -> None:
        self._properties = dict(properties)
        self._consumer = dict(consumer) if consumer is not None else None
        self.group_id: str | None = group_id or self._properties.get("group.id") or None
        isolation = self._properties.get("isolation.level", "read_committed").strip().lower()
        self.read_committed = isolation != "read_uncommitted"
        self.timeout_s = timeout_s
        if client is None:
            client = admin_client(client_config(self._properties, role="admin"))
        self.client = client
        #: The cluster's bootstrap servers, as errors name them.
        self.bootstrap = str(
            self._properties.get("bootstrap.servers")
            or getattr(client, "bootstrap", "(unknown bootstrap servers)")
        )

    # -- cluster metadata -----------------------------------------------------------------------
    def metadata(self, topic: str | None = None) -> Any:
        """The cluster's metadata (all topics, or one): one request, no retries.

        Raises:
            KafkaAuthenticationError: the cluster refused the login or certificate (at once).
            KafkaClientError: the cluster did not answer within the timeout.
        """
        try:
            return first_connection(
                self.client,
                self.timeout_s,
                lambda t: self.client.list_topics(topic=topic, timeout=t),
            )
        except KafkaException as exc:
            raise KafkaClientError(
                f"Could not read the metadata of the Kafka cluster at {self.bootstrap} within "
                f"{self.timeout_s:g} s: {exc}",
                exc,
            ) from exc

    def discover(self, topics: Sequence[str] = (), pattern: str | None = None) -> dict[str, int]:
        """The topics a subscription matches right now and their partition counts.

        Unlike :meth:`partitions`, a named topic that does not exist (yet) is left out instead
        of failing: partition discovery reports it when it appears.
        """
        metadata = self.metadata()
        if pattern is not None:
            regex = re.compile(pattern)
            names = [t for t in metadata.topics if t not in INTERNAL_TOPICS and regex.fullmatch(t)]
        else:
            names = [t for t in dict.fromkeys(topics) if t in metadata.topics]
        found: dict[str, int] = {}
        for name in sorted(names):
            info = metadata.topics[name]
            if info.error is None and info.partitions:
                found[name] = len(info.partitions)
        return found

    def broker_config(self, name: str) -> list[str]:
        """The value of broker setting ``name`` on every broker of the cluster.

        One request a broker, all sent at once: a broker's configuration is asked of that
        broker, and librdkafka allows one broker resource per call.

        Raises:
            KafkaClientError: the brokers did not answer.
        """
        brokers = self.metadata().brokers
        values: list[str] = []
        try:
            futures = [
                future
                for broker in sorted(brokers)
                for future in self.client.describe_configs(
                    [ConfigResource(ResourceType.BROKER, str(broker))],
                    request_timeout=self.timeout_s,
                ).values()
            ]
            for future in futures:
                entry = future.result().get(name)
                if entry is not None and entry.value is not None:
                    values.append(str(entry.value))
        except KafkaException as exc:
            raise KafkaClientError(
                f"Could not describe the setting {name!r} of the brokers at {self.bootstrap}: "
                f"{exc}",
                exc,
            ) from exc
        return values

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
        metadata = self.metadata()
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
        deadline = time.monotonic() + self.timeout_s
        while pending:
            futures = self.client.list_offsets(
                {CTopicPartition(t, p): spec() for t, p in pending},
                isolation_level=isolation,
                request_timeout=self.timeout_s,
            )
            retry: list[TopicPartition] = []
            for tp, fut in futures.items():
                key = (tp.topic, tp.partition)
                try:
                    offset = fut.result().offset
                except KafkaException as exc:
                    if _retriable(exc) and time.monotonic() < deadline:
                        retry.append(key)
                        continue
                    raise OffsetsError(
                        f"Could not list offsets of {tp.topic}-{tp.partition} on the Kafka "
                        f"cluster at {self.bootstrap}: {exc}"
                    ) from exc
                if offset == NO_ANSWER:  # asked again, as for a retriable error
                    if time.monotonic() < deadline:
                        retry.append(key)
                        continue
                    raise OffsetsError(
                        f"Could not list offsets of {tp.topic}-{tp.partition} on the Kafka "
                        f"cluster at {self.bootstrap}: its leader did not answer (it is down, "
                        f"paused or being replaced)."
                    )
                out[key] = offset
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

    def last_stable_offsets(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Last stable offsets (the end a read_committed consumer sees), whatever the isolation."""
        return self._list(partitions, OffsetSpec.latest, committed=True)

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

    def offsets_for_many_times(
        self, partitions: Sequence[TopicPartition], timestamps: Sequence[int]
    ) -> dict[int, dict[TopicPartition, int]]:
        """:meth:`offsets_for_times` for each of ``timestamps``, the requests in flight together
        (a run over many time windows asks one per window boundary)."""
        isolation = (
            IsolationLevel.READ_COMMITTED
            if self.read_committed
            else IsolationLevel.READ_UNCOMMITTED
        )
        keys = list(dict.fromkeys(partitions))
        asked = {
            ms: self.client.list_offsets(
                {CTopicPartition(t, p): OffsetSpec.for_timestamp(ms) for t, p in keys},
                isolation_level=isolation,
                request_timeout=self.timeout_s,
            )
            for ms in dict.fromkeys(timestamps)
        }
        out: dict[int, dict[TopicPartition, int]] = {}
        ends: dict[TopicPartition, int] = {}
        for ms, futures in asked.items():
            try:
                found = {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            except KafkaException:  # asked again alone, with its retries and its error
                out[ms] = self.offsets_for_times(keys, ms)
                continue
            if NO_ANSWER in found.values():  # a leader did not answer: the same
                out[ms] = self.offsets_for_times(keys, ms)
                continue
            none = [tp for tp, off in found.items() if off < 0]
            if any(tp not in ends for tp in none):
                ends.update(self.end_offsets(keys))
            out[ms] = {tp: ends[tp] if off < 0 else off for tp, off in found.items()}
        return out

    # -- consumer group -------------------------------------------------------------------------
    def _group_call(self, what: str, call: Callable[[], _T]) -> _T:
        """Run a group request, retrying while the coordinator loads or a commit is unstable."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return call()
            except KafkaException as exc:
                if not _retriable(exc) or time.monotonic() >= deadline:
                    raise OffsetsError(
                        f"Could not {what} of consumer group {self.group_id!r} on the Kafka "
                        f"cluster at {self.bootstrap}: {exc}"
                    ) from exc
            time.sleep(_RETRY_PAUSE_S)

    def _group_consumer(self, group: str) -> Any:
        """A consumer of ``group`` that never joins it, to read and commit the group's offsets.

        Not the admin client's group requests: librdkafka crashes the process when an admin
        client's OffsetFetch is answered NOT_COORDINATOR (librdkafka issue 5040), and aborts it
        when any of its coordinator requests (offsets, commits, describe) meets a coordinator
        that went away (issue 4605); a consumer looks the coordinator up again.
        """
        if self._consumer is None:
            self._consumer = client_config(self._properties, role="consumer")
        config = dict(self._consumer)
        # A commit waits for the coordinator as long as a session lasts: no longer than a
        # request may.
        session_ms = max(1000, int(self.timeout_s * 1000))
        config.update(
            {
                "group.id": group,
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                # librdkafka asks for stable offsets (KIP-447) under read_committed.
                "isolation.level": "read_committed",
                "session.timeout.ms": session_ms,
                "heartbeat.interval.ms": max(1, session_ms // 3),
            }
        )
        return Consumer(config)

    def _fetch_committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        wanted = [CTopicPartition(t, p) for t, p in dict.fromkeys(partitions)]
        consumer = self._group_consumer(group)
        try:
            answer = self._group_call(
                "read the committed offsets",
                lambda: consumer.committed(wanted, timeout=self.timeout_s),
            )
        finally:
            consumer.close()
        found: dict[TopicPartition, int] = {}
        for tp in answer:
            if tp.error is not None:
                raise OffsetsError(
                    f"Could not read the committed offset of {tp.topic}-{tp.partition} of "
                    f"consumer group {group!r} on the Kafka cluster at {self.bootstrap}: "
                    f"{tp.error}"
                )
            if tp.offset >= 0:
                found[(tp.topic, tp.partition)] = tp.offset
        return found

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
        """Commit ``offsets`` to the source's consumer group (for monitoring, as Flink does),
        through a consumer of the group that never joins it (see :meth:`_group_consumer`).

        Raises:
            OffsetsError: the broker refused the commit (e.g. the group has active members), or
                the group's coordinator did not answer in time.
        """
        group = self.group_id
        if not group or not offsets:
            return
        wanted = [CTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        consumer = self._group_consumer(group)

        def commit() -> None:
            for tp in consumer.commit(offsets=wanted, asynchronous=False) or ():
                if tp.error is not None:
                    raise KafkaException(tp.error)

        try:
            self._group_call("commit offsets", commit)
        finally:
            consumer.close()

    def group_in_use(self) -> bool:
        """Whether the source's consumer group has members right now (one that is rebalancing
        counts; so does one in a state this client does not know).

        Asked of every broker (ListGroups), not of the group's coordinator: librdkafka aborts
        the process when an admin client's coordinator request meets a coordinator that went
        away (librdkafka issue 4605).
        """
        group = self.group_id
        if not group:
            return False

        def ask() -> bool:
            answer = self.client.list_consumer_groups(request_timeout=self.timeout_s).result()
            for listing in answer.valid or ():
                if listing.group_id == group:
                    return listing.state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD)
            for error in answer.errors or ():  # a broker that did not answer may hold it
                # (librdkafka's per-broker errors come as KafkaError, not as exceptions)
                raise error if isinstance(error, BaseException) else KafkaException(error)
            return False

        return self._group_call("list the groups", ask)


__all__ = ["DEFAULT_TIMEOUT_S", "INTERNAL_TOPICS", "KafkaAdmin", "admin_client"]
