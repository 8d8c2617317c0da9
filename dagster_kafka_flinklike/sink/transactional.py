"""Exactly-once sink: the run's output and its source offsets commit in one Kafka transaction.

One transactional producer on the driver produces the result as Spark's tasks stream it to the
driver (:mod:`.driver_stream`: Arrow batches, all partitions at once, bounded memory; an upsert
changelog partitioned by key, so each key's changes keep their order) inside a transaction that
also carries the source offsets (``send_offsets_to_transaction``), so Kafka holds the
authoritative checkpoint and a crash at any point yields neither loss nor duplicates.

The order matters:

1. ``init_transactions`` with the stable ``transactional.id``: fences a previous run of the
   asset and completes or aborts its lingering transaction;
2. the source groups' committed offsets are read with require-stable semantics;
3. the run plans and reads from them, produces, sends the offsets, commits. A commit that times
   out is retried, never aborted, until the transaction timeout; a commit whose answer never
   came is settled by step 1 again: the source offsets then committed say whether it did.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import (
    DeliveryError,
    KafkaConnectorError,
    KafkaErrorKind,
    KafkaOptionsError,
    TransactionError,
    classify_kafka_error,
    kafka_error_of,
)
from ..options import DeliveryGuarantee, role_config
from ..source.admin import KafkaAdmin
from ..source.offsets import TopicPartition
from .partitioners import SinkPartitioner
from .writer import (
    DeliveryReport,
    WriteResult,
    producer_config,
    reporting_producer,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: Frames a transaction produces besides its outputs, as (topic, frame) pairs; or a function,
#: called before the commit, that returns them (see :meth:`TransactionalSink.write_outputs`).
Extra = Sequence[tuple[str, "DataFrame"]] | Callable[[], Sequence[tuple[str, "DataFrame"]]]

_log = logging.getLogger(__name__)

#: Used when neither the table nor the broker says otherwise: the broker's default maximum.
DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000
#: Never ask for more than this, whatever the broker allows (Flink's default).
MAX_DEFAULT_TRANSACTION_TIMEOUT_MS = 3_600_000
#: Fail the run (and abort) when this share of the transaction timeout has passed unfinished.
TIMEOUT_SAFETY = 0.9
_REQUEST_TIMEOUT_S = 30.0
#: One ``commit_transaction`` attempt; a commit still pending then is retried.
COMMIT_ATTEMPT_TIMEOUT_S = 30.0
#: How long settling a commit whose answer never came may wait for the cluster.
SETTLE_TIMEOUT_S = 60.0
_STATS_INTERVAL_MS = 500


def transactional_id(prefix: str, asset: str, index: int = 0) -> str:
    """The stable ``transactional.id`` of producer ``index`` of an asset's sink.

    Stable across runs, so ids do not multiply and each run fences the one before.

    Example:
        >>> transactional_id("orders-sink", "channel_revenue")
        'orders-sink-channel_revenue-0'
    """
    return f"{prefix}-{asset}-{index}"


#: How long to wait before asking again for brokers' settings the cluster did not give.
_SETTINGS_PAUSE_S = 0.5


def broker_max_transaction_timeout_ms(admin: KafkaAdmin) -> int | None:
    """The smallest ``transaction.max.timeout.ms`` of the cluster's brokers (None if unknown).

    Raises:
        KafkaClientError: the brokers did not answer.
    """
    # A cluster that was just down or paused may answer without any broker's settings for a
    # moment: asked again then, as the default the producer would fall back on may exceed them.
    deadline = time.monotonic() + admin.timeout_s
    while True:
        values = [int(v) for v in admin.broker_config("transaction.max.timeout.ms")]
        if values or time.monotonic() >= deadline:
            return min(values) if values else None
        time.sleep(_SETTINGS_PAUSE_S)


def transaction_timeout_ms(properties: Mapping[str, Any], broker_max_ms: int | None) -> int:
    """The producer's ``transaction.timeout.ms``, checked against the broker's maximum.

    ``properties`` are the sink's client settings (the key is the same in Java and librdkafka).

    Unset, it is the broker's maximum (at most one hour), so a run gets the longest window the
    cluster allows.

    Raises:
        KafkaOptionsError: the table asks for more than the broker allows (both values named).
    """
    text = properties.get("transaction.timeout.ms")
    if text is None:
        limit = broker_max_ms or DEFAULT_TRANSACTION_TIMEOUT_MS
        return min(limit, MAX_DEFAULT_TRANSACTION_TIMEOUT_MS)
    wanted = int(text)
    if broker_max_ms is not None and wanted > broker_max_ms:
        raise KafkaOptionsError(
            f"'properties.transaction.timeout.ms' = {wanted} exceeds the broker's "
            f"'transaction.max.timeout.ms' = {broker_max_ms}: the broker would refuse every "
            f"transaction. Lower the table's timeout to at most {broker_max_ms} or raise the "
            f"broker setting. Nothing was written.",
            keys=("properties.transaction.timeout.ms",),
        )
    return wanted


@dataclass(frozen=True)
class TransactionResult(WriteResult):
    """A committed transaction: what it wrote, plus its identity and timing."""

    transactional_id: str = ""
    producer_id: int | None = None
    producer_epoch: int | None = None
    transaction_ms: float = 0.0
    commit_attempts: int = 0
    #: The producer's ``transaction.timeout.ms`` the transaction ran under.
    timeout_ms: int = 0


class TransactionalSink:
    """The exactly-once writer of one asset's sink table (one transactional producer).

    Args:
        topic: the sink topic.
        client: the sink table's librdkafka producer settings (a run's resolved table, or
            ``client_config(properties, role="producer")``).
        transactional_id: the stable id (:func:`transactional_id`).
        partitioner: the sink table's ``sink.partitioner`` (resolved, or its option value).
        consumer: librdkafka consumer settings of the cluster, for the consumer whose group
            metadata goes with the offsets (default: from ``client``).
        admin: the run's admin client of the cluster, asked for the brokers'
            ``transaction.max.timeout.ms`` (default: one built from ``client``).
        progress_group: the asset's progress group of split transactions (see
            :mod:`.split_transactions`), whose offsets planning also reads.
    """

    def __init__(
        self,
        topic: str,
        client: Mapping[str, Any],
        transactional_id: str,
        *,
        partitioner: str | SinkPartitioner = "default",
        consumer: Mapping[str, Any] | None = None,
        admin: KafkaAdmin | None = None,
        log: logging.Logger | Any = _log,
        progress_group: str | None = None,
    ) -> None:
        from .writer import plan_partitioner

        self.topic = topic
        self.client = dict(client)
        self.transactional_id = transactional_id
        self._consumer_config = dict(
            consumer if consumer is not None else role_config(client, "consumer")
        )
        self._admin = admin
        self.partitioner = (
            partitioner
            if isinstance(partitioner, SinkPartitioner)
            else plan_partitioner(partitioner, topic, self.admin.client)
        )
        self.log = log
        #: The group a sink with a transaction per split records its progress in (read when
        #: planning, see :meth:`resume_offsets`).
        self.progress_group = progress_group
        self.timeout_ms = 0
        self._producer: Any = None
        self._report = DeliveryReport()
        self._consumers: dict[str, Any] = {}
        self._stats: dict[str, Any] = {}
        #: (producer id, epoch) as first reported after ``init_transactions``.
        self._identity: tuple[int, int] | None = None

    # -- 1. fence ---------------------------------------------------------------------------
    def begin(self, *, init_timeout_s: float | None = None) -> None:
        """Check the timeout against the broker, then ``init_transactions`` (fences, recovers).

        ``init_timeout_s`` bounds ``init_transactions`` (default: the transaction timeout, at
        least 30 s: it may wait for a transaction a killed run left to end).

        Raises:
            KafkaOptionsError: the transaction timeout exceeds the broker's maximum.
            TransactionError: the transactional producer could not be initialised.
        """
        from confluent_kafka import KafkaException

        self.timeout_ms = transaction_timeout_ms(
            self.client, broker_max_transaction_timeout_ms(self.admin)
        )
        config = producer_config(self.client, DeliveryGuarantee.EXACTLY_ONCE)
        config.update(
            {
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": self.timeout_ms,
                "statistics.interval.ms": _STATS_INTERVAL_MS,
                "stats_cb": self._on_stats,
            }
        )
        self._producer, self._report = reporting_producer(config)
        self._identity = None
        try:
            # The cluster's metadata first (one request, no topic created): a coordinator query
            # sent while librdkafka replaces its bootstrap connection by the broker's own fails,
            # and librdkafka asks again only 500 ms later (one run in four here).
            self._producer.list_topics(timeout=_REQUEST_TIMEOUT_S)
            self._producer.init_transactions(
                init_timeout_s or max(_REQUEST_TIMEOUT_S, self.timeout_ms / 1000)
            )
        except KafkaException as exc:
            raise TransactionError(
                f"Could not initialise transactional id {self.transactional_id!r}: {exc}. "
                f"Nothing was written."
            ) from exc
        self.log.info(
            f"Transaction {self.transactional_id!r}: initialised, timeout {self.timeout_ms} ms."
        )

    @property
    def admin(self) -> KafkaAdmin:
        """The admin client of the sink's cluster (the run's, or one built from ``client``)."""
        if self._admin is None:
            self._admin = KafkaAdmin({}, client=_admin_client(self.client))
        return self._admin

    def _on_stats(self, text: str) -> None:
        with contextlib.suppress(ValueError):
            self._stats = json.loads(text).get("eos", {}) or self._stats
        epoch = self._stats.get("producer_epoch", -1)
        if self._identity is None and isinstance(epoch, int) and epoch >= 0:
            self._identity = (int(self._stats.get("producer_id", -1)), epoch)

    def describe_identity(self) -> str | None:
        """What ``init_transactions`` did, from the producer id and epoch the broker gave (None
        before the statistics report them).

        Epoch 0 is a new producer id: the transactional id was never used (or the brokers
        expired it after ``transactional.id.expiration.ms``), so there was nothing to fence.
        A higher epoch means the id was used before: its earlier producers are fenced, and a
        transaction one of them left open was aborted (or completed) before this one began.
        """
        if self._identity is None:
            return None
        producer_id, epoch = self._identity
        head = f"Transaction {self.transactional_id!r}: producer id {producer_id}, epoch {epoch}"
        if epoch == 0:
            return (
                f"{head}: first use of this transactional id (or the brokers expired it after "
                f"'transactional.id.expiration.ms'); no earlier producer to fence."
            )
        return (
            f"{head}: the id was used before; init_transactions fenced its earlier producers "
            f"and ended any transaction they left open before this one began."
        )

    # -- 2. authoritative offsets -----------------------------------------------------------
    def _consumer(self, group_id: str, *, stable: bool = True) -> Any:
        """A consumer of ``group_id`` (never subscribed): read_committed when ``stable``, so
        its ``committed()`` waits out pending transactional offset commits."""
        from confluent_kafka import Consumer

        key = group_id if stable else f"{group_id} (as committed)"
        if key not in self._consumers:
            config = dict(self._consumer_config)
            isolation = "read_committed" if stable else "read_uncommitted"
            config.update({"group.id": group_id, "isolation.level": isolation})
            config["enable.auto.commit"] = "false"
            self._consumers[key] = Consumer(config)
        return self._consumers[key]

    def committed_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets, waiting for any pending transactional commit.

        A read_committed consumer's ``committed()`` asks with require-stable semantics
        (KIP-447), so offsets a still-committing transaction is about to replace are never
        returned. Partitions without a committed offset are absent.
        """
        if not partitions:
            return {}
        wait_s = max(_REQUEST_TIMEOUT_S, self.timeout_ms / 1000)
        return fetch_committed(self._consumer(group_id), group_id, partitions, wait_s)

    def resume_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Where each source partition resumes: the group's committed offsets, or the
        ``progress_group``'s where they are further (a run with a transaction per split whose
        splits committed before its source group did, and the asset switched back since).

        The progress group is read without require-stable semantics: only what committed
        counts, and a split transaction still open (a killed run's) never commits.
        """
        committed = self.committed_offsets(group_id, partitions)
        if self.progress_group is None or not partitions:
            return committed
        consumer = self._consumer(self.progress_group, stable=False)
        progress = fetch_committed(consumer, self.progress_group, partitions, _REQUEST_TIMEOUT_S)
        resumed = furthest(committed, progress)
        ahead = sorted(tp for tp in resumed if resumed[tp] != committed.get(tp))
        if ahead:
            self.log.warning(
                f"Transaction {self.transactional_id!r}: the progress group "
                f"{self.progress_group!r} is ahead of group {group_id!r} at {ahead}; "
                f"resuming there (a run with 'sink.transaction-scope' = 'split' committed "
                f"those splits and ended before its source group)."
            )
        return resumed

    # -- 3. produce and commit --------------------------------------------------------------
    def write(
        self,
        encoded: DataFrame,
        offsets: Mapping[str, Mapping[TopicPartition, int]],
        *,
        extra: Extra = (),
        ready: Callable[[], None] | None = None,
    ) -> TransactionResult:
        """Produce ``encoded`` (and ``extra`` (topic, frame) pairs) and commit with ``offsets``.

        ``offsets`` maps each source consumer group to the offsets to commit (the run's stops).

        Raises:
            DeliveryError: a record was not delivered (the transaction is aborted).
            TransactionError: the transaction was fenced, timed out or failed to commit;
                nothing of it is visible to read_committed consumers.
        """
        from .writer import distribute

        return self.write_outputs(
            [(self.topic, distribute(encoded), self.partitioner)], offsets, extra=extra, ready=ready
        )

    def write_outputs(
        self,
        outputs: Sequence[tuple[str, DataFrame, str | SinkPartitioner]],
        offsets: Mapping[str, Mapping[TopicPartition, int]],
        *,
        extra: Extra = (),
        ready: Callable[[], None] | None = None,
    ) -> TransactionResult:
        """Produce every (topic, frame, partitioner) of ``outputs`` (frames as the writing tasks
        get them: :func:`~.writer.distribute`) and the ``extra`` (topic, frame) pairs (dead
        letters, not counted as output), and commit them with ``offsets`` in one transaction.

        ``extra`` may be a function, called once the outputs are produced and before anything
        commits: it may raise to abort the transaction (a run's dirty-data policy, whose
        statistics come from producing the outputs) or return the pairs to produce. ``ready``
        is called once everything is produced and delivered, before the offsets are sent and the
        transaction commits: it may raise to abort it (the run's blocking checks).

        Raises:
            DeliveryError: a record was not delivered (the transaction is aborted).
            TransactionError: the transaction was fenced, timed out or failed to commit;
                nothing of it is visible to read_committed consumers.
        """
        from confluent_kafka import KafkaException

        from .driver_stream import driver_batches
        from .writer import produce_arrow_batches

        producer = self._require()
        producer.begin_transaction()
        self.log.info(f"Transaction {self.transactional_id!r}: producing.")
        started = time.monotonic()
        deadline = started + self.timeout_ms / 1000 * TIMEOUT_SAFETY
        state: dict[str, Any] = {"bytes": 0}
        report = self._report
        report.reset()
        by_topic: dict[str, int] = {}
        topics = ", ".join(sorted({t for t, _, _ in outputs})) or "(none)"

        def in_time() -> None:
            if time.monotonic() > deadline:
                raise TransactionError(self._timeout_message(started))

        def produce(
            produced_outputs: Sequence[tuple[str, DataFrame, str | SinkPartitioner]],
            counting: bool,
        ) -> None:
            for topic, frame, partitioner in produced_outputs:
                for task, batch in driver_batches(frame, in_time):
                    in_time()
                    produced = produce_arrow_batches(
                        producer, [batch], topic, state, partitioner=partitioner, task=task
                    )
                    if counting:
                        by_topic[topic] = by_topic.get(topic, 0) + produced

        try:
            produce(outputs, True)
            letters = extra() if callable(extra) else extra
            produce([(topic, frame, "default") for topic, frame in letters], False)
            remaining = producer.flush(max(0.0, deadline - time.monotonic()))
            if remaining:
                raise TransactionError(self._timeout_message(started))
            fenced = classify_kafka_error(report.first_kafka_error) == KafkaErrorKind.FENCED
            if report.failed and fenced:
                raise TransactionError(self._failure_message(report.first_kafka_error, started))
            if report.failed:
                raise DeliveryError(
                    f"{report.failed} record(s) to topic(s) {topics} were not delivered: "
                    f"{report.first_error}. The transaction is aborted; nothing was committed."
                )
            if ready is not None:
                ready()
            for group_id, group_offsets in offsets.items():
                self._send_offsets(group_id, group_offsets)
        except (KafkaException, SystemError) as exc:
            self._abort()
            # A fatal producer error can surface as a SystemError from the next delivery
            # callback that confluent-kafka runs with the error still set.
            cause = kafka_error_of(exc)
            if cause is None:
                raise
            raise TransactionError(self._failure_message(cause, started)) from exc
        except BaseException:
            self._abort()
            raise
        self.log.info(f"Transaction {self.transactional_id!r}: committing.")
        attempts = self._commit(started, offsets)
        self.log.info(f"Transaction {self.transactional_id!r}: committed.")
        self._await_identity()
        described = self.describe_identity()
        if described is not None:
            self.log.info(described)
        return TransactionResult(
            records=sum(by_topic.values()),
            bytes=state["bytes"] - report.failed_bytes,
            failed=0,
            first_error=None,
            send_ms=(time.monotonic() - started) * 1000,
            by_topic=by_topic,
            transactional_id=self.transactional_id,
            producer_id=self._stats.get("producer_id"),
            producer_epoch=self._stats.get("producer_epoch"),
            transaction_ms=round((time.monotonic() - started) * 1000, 1),
            commit_attempts=attempts,
            timeout_ms=self.timeout_ms,
        )

    def _await_identity(self) -> None:
        """Serve statistics until they show the producer id and epoch (for the metadata).

        The statistics arrive every :data:`_STATS_INTERVAL_MS`: a short transaction can commit
        before any of them was taken after ``init_transactions`` gave the producer its epoch.
        """
        deadline = time.monotonic() + 4 * _STATS_INTERVAL_MS / 1000
        producer = self._require()
        producer.poll(0)
        while self._identity is None and time.monotonic() < deadline:
            producer.poll(0.05)

    def _send_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        from confluent_kafka import TopicPartition as CTopicPartition

        if not offsets:
            return
        metadata = self._consumer(group_id).consumer_group_metadata()
        self._require().send_offsets_to_transaction(
            [CTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
            metadata,
            _REQUEST_TIMEOUT_S,
        )

    def _commit(self, started: float, offsets: Mapping[str, Mapping[TopicPartition, int]]) -> int:
        """Commit, retrying a commit that timed out (never aborting it) until the transaction
        timeout has passed since ``started``. Returns the attempts.

        Once ``commit_transaction`` was sent, a failure does not say that nothing committed:
        the coordinator may have the commit and the answer be lost. Then the outcome is
        settled (:meth:`_settle`) before the run succeeds or fails.
        """
        from confluent_kafka import KafkaException

        producer = self._require()
        bound = started + self.timeout_ms / 1000
        attempts = 0
        while True:
            attempts += 1
            attempt_s = max(1.0, min(COMMIT_ATTEMPT_TIMEOUT_S, bound - time.monotonic()))
            try:
                producer.commit_transaction(attempt_s)
                return attempts
            except KafkaException as exc:
                kind = classify_kafka_error(exc)
                if kind == KafkaErrorKind.ABORTABLE:  # refused before committing anything
                    self._abort()
                    raise TransactionError(self._failure_message(exc, started)) from exc
                if kind == KafkaErrorKind.FENCED:  # a newer producer settles it, not this one
                    message = self._failure_message(exc, started, commit_sent=attempts > 1)
                    raise TransactionError(message) from exc
                if kind == KafkaErrorKind.RETRIABLE and time.monotonic() < bound:
                    self.log.warning(
                        f"Commit of transaction {self.transactional_id!r} did not complete "
                        f"({exc}); retrying (attempt {attempts})."
                    )
                    continue
                self._settle(exc, started, offsets)
                return attempts

    def _settle(
        self,
        exc: Exception,
        started: float,
        offsets: Mapping[str, Mapping[TopicPartition, int]],
    ) -> None:
        """Find out whether a commit whose answer never came committed; raise unless it did.

        A new producer with the same transactional id fences this one: its
        ``init_transactions`` completes a commit the coordinator has and aborts a transaction it
        does not. The source offsets commit with the records or not at all, so the group's
        committed offsets then tell which happened (as Flink's committer recovers a commit).

        Raises:
            TransactionError: the transaction did not commit (it is aborted now), or the
                cluster could not be asked and the outcome is not known.
        """
        elapsed = time.monotonic() - started
        head = (
            f"The commit of transaction {self.transactional_id!r} was sent but not confirmed "
            f"after {elapsed:.1f}s ({exc})"
        )
        old, self._producer = self._producer, None
        with contextlib.suppress(Exception):
            old.flush(0)
        try:
            self.begin(init_timeout_s=SETTLE_TIMEOUT_S)
            committed = {
                group: self.committed_offsets(group, list(group_offsets)) == dict(group_offsets)
                for group, group_offsets in offsets.items()
                if group_offsets
            }
        except KafkaConnectorError as settle_exc:  # the cluster did not answer
            raise TransactionError(
                f"{head}, and the cluster at {self.client.get('bootstrap.servers')!r} could not "
                f"be asked whether it committed ({settle_exc}). Whether it committed is not "
                f"known. Its records and its source offsets commit together or not at all, so "
                f"the next run settles it: it fences this transaction, which completes or "
                f"aborts, and reads on from the offsets committed; nothing is lost or written "
                f"twice."
            ) from exc
        if not committed:
            raise TransactionError(
                f"{head}. It carried no source offsets, so whether it committed is not known "
                f"here: its records are in topic(s) of the sink for read_committed consumers "
                f"if it did. The transactional id is fenced now; nothing of it is pending."
            ) from exc
        if all(committed.values()):
            self.log.warning(
                f"{head}; the cluster confirms that it committed (its source offsets are "
                f"committed), so the run succeeds."
            )
            return
        raise TransactionError(
            f"{head}. The cluster aborted it (the source offsets sent with it are not "
            f"committed): nothing was committed; the next run re-reads the same offsets."
        ) from exc

    def _abort(self) -> None:
        producer = self._producer
        if producer is None:
            return
        try:
            producer.abort_transaction(_REQUEST_TIMEOUT_S)
        except Exception as exc:  # fenced or fatal: the next init_transactions aborts it
            self.log.warning(f"Could not abort transaction {self.transactional_id!r}: {exc}")

    def _timeout_message(self, started: float) -> str:
        return (
            f"The transaction of {self.transactional_id!r} ran {time.monotonic() - started:.1f}s "
            f"and would outlive 'properties.transaction.timeout.ms' = {self.timeout_ms}; it was "
            f"aborted and nothing was committed. Raise the timeout (up to the broker's "
            f"'transaction.max.timeout.ms') or read less per run."
        )

    def _failure_message(self, exc: object, started: float, *, commit_sent: bool = False) -> str:
        elapsed = time.monotonic() - started
        text = str(exc)
        fenced = classify_kafka_error(exc) == KafkaErrorKind.FENCED
        outcome = (
            "If an earlier attempt of its commit reached the cluster, it committed; otherwise "
            "nothing was. Its records and source offsets go together either way, so the next "
            "run reads on from the offsets committed."
            if commit_sent
            else "Nothing was committed; the next run re-reads the same offsets."
        )
        if elapsed * 1000 >= self.timeout_ms or fenced:
            return (
                f"The transaction of {self.transactional_id!r} was fenced after {elapsed:.1f}s: "
                f"another run of the asset started with the same transactional id, or the broker "
                f"aborted it after 'transaction.timeout.ms' = {self.timeout_ms}. {outcome} "
                f"({text})"
            )
        return (
            f"The transaction of {self.transactional_id!r} failed to commit: {text}. Nothing was "
            f"committed; the next run re-reads the same offsets."
        )

    def _require(self) -> Any:
        if self._producer is None:
            raise TransactionError("TransactionalSink.begin() must run before writing.")
        return self._producer

    def close(self) -> None:
        """Release the producer and the group consumers. Never raises: a client left in a
        fatal state by a broker fault has nothing to release, and the run's outcome (its
        commit, or the error that failed it) is already decided."""
        from confluent_kafka import KafkaException

        clients: list[Callable[[], Any]] = [c.close for c in self._consumers.values()]
        if self._producer is not None:
            clients.append(functools.partial(self._producer.flush, 0))
        self._consumers.clear()
        self._producer = None
        for release in clients:
            try:
                release()
            except (KafkaException, SystemError) as exc:
                self.log.debug(f"Transaction {self.transactional_id!r}: released with {exc}")


def furthest(
    source: Mapping[TopicPartition, int], progress: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Per partition, the further of the source group's and the progress group's offsets.

    Example:
        >>> furthest({("t", 0): 5, ("t", 1): 9}, {("t", 0): 7, ("t", 2): 1})
        {('t', 0): 7, ('t', 1): 9, ('t', 2): 1}
    """
    merged = dict(source)
    for tp, offset in progress.items():
        merged[tp] = max(offset, merged.get(tp, offset))
    return merged


def fetch_committed(
    consumer: Any, group_id: str, partitions: Sequence[TopicPartition], wait_s: float
) -> dict[TopicPartition, int]:
    """``group_id``'s committed offsets through a ``consumer`` of that group. A read_committed
    consumer asks with require-stable semantics (KIP-447): an offset a still-committing
    transaction is about to replace is waited out (up to ``wait_s``), never returned.
    Partitions without one are absent.

    Raises:
        TransactionError: the cluster did not answer within ``wait_s``.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as CTopicPartition

    deadline = time.monotonic() + wait_s
    while True:
        try:
            found = consumer.committed(
                [CTopicPartition(t, p) for t, p in partitions], timeout=_REQUEST_TIMEOUT_S
            )
            break
        except KafkaException as exc:
            retriable = classify_kafka_error(exc) == KafkaErrorKind.RETRIABLE
            if not retriable or time.monotonic() > deadline:
                raise TransactionError(
                    f"Could not read the committed offsets of group {group_id!r}: {exc}"
                ) from exc
            time.sleep(0.2)
    return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}


def _admin_client(client: Mapping[str, Any]) -> Any:
    from ..source.admin import admin_client

    return admin_client(role_config(client, "admin"))
