"""Exactly-once with a transaction per source split (``sink.transaction-scope`` = ``split``).

The run path (:mod:`.transactional`) streams the whole result to one producer in the driver.
Here every writing task produces its own split's output, in parallel:

1. **Fence (driver, before planning).** ``init_transactions`` of every split id the source's
   partitions may have used (``<prefix>-<asset>-<topic>-<partition>``) aborts what a killed run
   left open, so the offsets read next are final: the source group's, and the asset's
   **progress group** (``<prefix>-<asset>-splits``), which holds per source partition the stop
   of the last split whose output committed. Each partition resumes at the larger of the two.
2. **Prepare (tasks).** A task reads one whole source partition's range (its split). It fences
   the previous attempt of its id, reads the progress group again (a split committed already is
   skipped; one another run moved fails the run), begins a transaction, produces, flushes, and
   sends the split's stop for the progress group into the same transaction. It does not commit:
   it registers with the driver's :class:`VerdictServer` and hands the open producer to a
   *holder* thread of its Python worker, then ends; the job ends with it, and the sources'
   statistics reach the driver.
3. **Decide (driver).** The driver decides as the run path does (dirty data, blocking checks),
   checks every holder is alive, and tells all of them to commit, or to abort. A holder that
   loses the driver, or gets no verdict in time, aborts.
4. **Finish.** A split whose commit failed (a broker fault after the verdict) is written again
   in the same run: the same job runs again, and tasks skip the splits the progress group shows
   committed. Then the driver commits the source group.

See ``docs/exactly-once-scale-out.md`` for what a failure at each point leaves.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._worker import settle_worker_heap
from ..errors import DeliveryError, KafkaConnectorError, TransactionError, kafka_error_of
from ..options import DeliveryGuarantee, role_config
from ..source.admin import KafkaAdmin
from ..source.enumerator import KafkaSplit
from ..source.offsets import TopicPartition
from .driver_stream import accept_connections, driver_address
from .partitioners import SinkPartitioner
from .transactional import (
    COMMIT_ATTEMPT_TIMEOUT_S,
    TIMEOUT_SAFETY,
    TransactionResult,
    broker_max_transaction_timeout_ms,
    fetch_committed,
    furthest,
    transaction_timeout_ms,
)
from .writer import (
    DeliveryReport,
    connector_error,
    produce_batches,
    producer_config,
    reporting_producer,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

_log = logging.getLogger(__name__)

_TOKEN_BYTES = 16
#: A prepared split's registration: split index, task attempt, records, bytes.
_HELLO = struct.Struct(">iiqq")
_LENGTH = struct.Struct(">i")
_REGISTERED, _PING, _PONG, _COMMIT, _ABORT = b"k", b"P", b"p", b"C", b"A"
_COMMITTED, _FAILED = b"1", b"0"
_REQUEST_TIMEOUT_S = 30.0
_CONNECT_TIMEOUT_S = 60.0
_POLL_S = 0.2
#: How many times a run writes again the splits whose commit failed after the verdict.
REWRITES = 2
_RESULT_SCHEMA = "split int, records long, bytes long, state string"
#: At most this many producers fence split ids at once.
_FENCING_THREADS = 16


def split_transactional_id(prefix: str, asset: str, topic: str, partition: int) -> str:
    """The stable ``transactional.id`` of the split of source partition ``topic``-``partition``.

    Example:
        >>> split_transactional_id("orders-sink", "revenue", "orders", 3)
        'orders-sink-revenue-orders-3'
    """
    return f"{prefix}-{asset}-{topic}-{partition}"


def progress_group(prefix: str, asset: str) -> str:
    """The consumer group in which split transactions record what they committed.

    Example:
        >>> progress_group("orders-sink", "revenue")
        'orders-sink-revenue-splits'
    """
    return f"{prefix}-{asset}-splits"


@dataclass(frozen=True)
class _Prepared:
    """A holder the driver can reach: its connection and what its split produced."""

    conn: socket.socket
    attempt: int
    records: int
    bytes: int


class VerdictServer:
    """The driver's end of the vote: prepared splits register, then get one verdict each.

    Holders connect from the executors' Python workers to ``address`` (the driver's host, a port
    chosen per write) with the write's random token, and keep the connection open until the
    verdict. A split registered twice (a retried or speculative task) keeps the last one; the
    earlier holder loses its connection and aborts (its id was fenced by the later one anyway).
    """

    def __init__(self, host: str, bind: str | None = None) -> None:
        self.token = secrets.token_bytes(_TOKEN_BYTES)
        self._server = socket.create_server((bind or host, 0))
        self._server.settimeout(_POLL_S)
        self.address = (host, self._server.getsockname()[1])
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._prepared: dict[int, _Prepared] = {}
        self._acceptor = threading.Thread(target=self._accept, name="dkf-verdicts", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        accept_connections(
            self._server,
            self._closed,
            lambda conn: threading.Thread(target=self._register, args=(conn,), daemon=True).start(),
        )

    def _register(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(_CONNECT_TIMEOUT_S)
            head = _recv_exact(conn, _TOKEN_BYTES + _HELLO.size)
            if not secrets.compare_digest(head[:_TOKEN_BYTES], self.token):
                _log.warning("Refused a connection without the write's token.")
                conn.close()
                return
            split, attempt, records, size = _HELLO.unpack(head[_TOKEN_BYTES:])
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    return
                earlier = self._prepared.get(split)
                self._prepared[split] = _Prepared(conn, attempt, records, size)
            if earlier is not None:
                _close(earlier.conn)
            conn.sendall(_REGISTERED)
        except (OSError, ConnectionError):
            _close(conn)

    def prepared(self) -> dict[int, _Prepared]:
        """The registered holders by split index."""
        with self._lock:
            return dict(self._prepared)

    def alive(self, splits: Sequence[int]) -> dict[int, str]:
        """Ask the holders of ``splits`` whether they still hold their transaction; returns
        those that did not answer (never registered, or their worker is gone), with why."""
        prepared = self.prepared()
        lost = {s: "it never registered" for s in splits if s not in prepared}
        for split in splits:
            holder = prepared.get(split)
            if holder is None:
                continue
            try:
                holder.conn.settimeout(_REQUEST_TIMEOUT_S)
                holder.conn.sendall(_PING)
                answer = _recv_exact(holder.conn, 1)
                if answer != _PONG:
                    lost[split] = f"it answered {answer!r}"
            except (OSError, ConnectionError) as exc:
                lost[split] = f"its connection failed ({exc})"
        return lost

    def commit(self, splits: Sequence[int], wait_s: float) -> dict[int, str]:
        """Tell the holders of ``splits`` to commit, all at once, and collect their answers
        (waiting up to ``wait_s``); returns the splits whose commit failed or is not known,
        with the reason."""
        prepared = self.prepared()
        failed: dict[int, str] = {}
        asked: list[int] = []
        for split in splits:
            holder = prepared.get(split)
            if holder is None:
                failed[split] = "its holder never registered"
                continue
            try:
                holder.conn.sendall(_COMMIT)
                asked.append(split)
            except OSError as exc:
                failed[split] = f"its holder could not be told to commit ({exc})"
        deadline = time.monotonic() + wait_s
        for split in asked:
            conn = prepared[split].conn
            try:
                conn.settimeout(max(1.0, deadline - time.monotonic()))
                answer = _recv_exact(conn, 1)
                if answer != _COMMITTED:
                    (length,) = _LENGTH.unpack(_recv_exact(conn, _LENGTH.size))
                    failed[split] = _recv_exact(conn, length).decode("utf-8", "replace")
            except (OSError, ConnectionError) as exc:
                failed[split] = f"its holder did not answer the commit ({exc})"
        return failed

    def abort_all(self) -> None:
        """Tell every registered holder to abort (best effort: a holder that loses the
        connection aborts too)."""
        for holder in self.prepared().values():
            with contextlib.suppress(OSError):
                holder.conn.sendall(_ABORT)

    def forget(self) -> None:
        """Drop every registration (their connections close; holders that got no verdict
        abort), before the splits are written again."""
        with self._lock:
            prepared, self._prepared = self._prepared, {}
        for holder in prepared.values():
            _close(holder.conn)

    def close(self) -> None:
        """Stop accepting and close every connection: holders without a verdict abort."""
        self._closed.set()
        self._server.close()
        self.forget()
        self._acceptor.join()


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def _close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        conn.close()


# -- the tasks' side ---------------------------------------------------------------------------
def _hold(producer: Any, conn: socket.socket, deadline: float, transactional_id: str) -> None:
    """A holder thread: keep a prepared transaction open until the driver's verdict, then
    commit or abort it. No verdict by ``deadline`` (the transaction timeout's safe share), or a
    driver that goes away, aborts it; so does a commit that fails."""
    committed = False
    try:
        while True:
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            command = conn.recv(1)
            if command == _PING:
                conn.sendall(_PONG)
                continue
            if command != _COMMIT:
                return  # an abort, the driver gone, or no verdict in time
            error = _commit(producer, deadline, transactional_id)
            committed = error is None
            if error is None:
                conn.sendall(_COMMITTED)
            else:
                text = error.encode("utf-8", "replace")
                conn.sendall(_FAILED + _LENGTH.pack(len(text)) + text)
            return
    except OSError:
        return
    finally:
        if not committed:
            with contextlib.suppress(Exception):
                producer.abort_transaction(_REQUEST_TIMEOUT_S)
        _close(conn)
        with contextlib.suppress(Exception):
            producer.flush(0)


def _commit(producer: Any, deadline: float, transactional_id: str) -> str | None:
    """Commit a holder's transaction, retrying one that timed out until ``deadline``; None
    once committed, else why not (the driver writes the split again)."""
    from confluent_kafka import KafkaException

    from ..errors import KafkaErrorKind, classify_kafka_error

    while True:
        attempt_s = max(1.0, min(COMMIT_ATTEMPT_TIMEOUT_S, deadline - time.monotonic()))
        try:
            producer.commit_transaction(attempt_s)
            return None
        except KafkaException as exc:
            kind = classify_kafka_error(exc)
            if kind == KafkaErrorKind.RETRIABLE and time.monotonic() < deadline:
                continue
            return f"{transactional_id!r}: {exc}"


def _transactional_producer(
    client: Mapping[str, Any], tid: str, timeout_ms: int
) -> tuple[Any, DeliveryReport]:
    """A producer of ``tid`` with the sink's client settings (not initialised yet)."""
    config = producer_config(client, DeliveryGuarantee.EXACTLY_ONCE)
    config.update({"transactional.id": tid, "transaction.timeout.ms": timeout_ms})
    return reporting_producer(config)


def _initialise(producer: Any, tid: str, timeout_ms: int) -> None:
    """``init_transactions``: fences the id's earlier producers and ends what they left open.

    Raises:
        TransactionError: the id could not be initialised.
    """
    from confluent_kafka import KafkaException

    try:
        producer.list_topics(timeout=_REQUEST_TIMEOUT_S)  # the cluster first, as the run path
        producer.init_transactions(max(_REQUEST_TIMEOUT_S, timeout_ms / 1000))
    except KafkaException as exc:
        raise TransactionError(
            f"Could not initialise transactional id {tid!r}: {exc}. Nothing was committed."
        ) from exc


def _register(
    address: tuple[str, int], token: bytes, split: int, attempt: int, records: int, size: int
) -> socket.socket:
    """Connect to the driver's :class:`VerdictServer` and register a prepared split."""
    conn = socket.create_connection(address, timeout=_CONNECT_TIMEOUT_S)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    conn.sendall(token + _HELLO.pack(split, attempt, records, size))
    if _recv_exact(conn, 1) != _REGISTERED:
        raise ConnectionError("the driver did not register the split")
    return conn


@dataclass(frozen=True)
class _TaskPlan:
    """What every writing task of one split write needs (shipped with the task)."""

    splits: tuple[KafkaSplit, ...]
    topic: str
    producer: Mapping[str, Any]
    consumer: Mapping[str, Any]
    prefix: str
    asset: str
    group: str
    timeout_ms: int
    partitioner: SinkPartitioner
    address: tuple[str, int]
    token: bytes


def _prepare_split(plan: _TaskPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One writing task: its split's output in a transaction of its own, prepared and handed
    to a holder thread; one result row."""
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka import TopicPartition as CTopicPartition
    from pyspark import TaskContext

    settle_worker_heap()
    context = TaskContext.get()
    index = context.partitionId() if context is not None else 0
    attempt = context.attemptNumber() if context is not None else 0
    if index >= len(plan.splits):
        raise KafkaConnectorError(
            f"Writing task {index} has no source split ({len(plan.splits)} planned): the "
            f"output's partitions are not the source's splits. Nothing was committed."
        )
    split = plan.splits[index]
    tid = split_transactional_id(plan.prefix, plan.asset, split.topic, split.partition)
    started = time.monotonic()
    deadline = started + plan.timeout_ms / 1000 * TIMEOUT_SAFETY
    producer, report = _transactional_producer(plan.producer, tid, plan.timeout_ms)
    consumer = Consumer(
        {
            **plan.consumer,
            "group.id": plan.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": "false",
        }
    )
    handed = False
    try:
        _initialise(producer, tid, plan.timeout_ms)
        wait_s = max(_REQUEST_TIMEOUT_S, plan.timeout_ms / 1000)
        done = fetch_committed(consumer, plan.group, [(split.topic, split.partition)], wait_s)
        progress = done.get((split.topic, split.partition), -1)
        if progress >= split.stop:  # committed by an earlier attempt of this run
            # Read to the end all the same: a Python worker whose task leaves input unread
            # exits instead of being reused, and with it the holders of other splits it runs.
            for _ in batches:
                pass
            yield _row(index, 0, 0, "committed")
            return
        if progress > split.start:
            raise TransactionError(
                f"Split {split.topic}-{split.partition} [{split.start}, {split.stop}) cannot be "
                f"written: the progress group {plan.group!r} is at {progress}, so another run "
                f"wrote part of it meanwhile. Nothing of this split was committed."
            )
        producer.begin_transaction()
        counts = produce_batches(
            producer,
            batches,
            plan.topic,
            plan.partitioner.open(index, len(plan.splits)),
            stop=report.has_failed,
        )
        remaining = producer.flush(max(0.0, deadline - time.monotonic()))
        if report.failed or remaining:
            error = report.first_error or f"{remaining} record(s) not delivered in time"
            raise DeliveryError(
                f"{report.failed + remaining} record(s) of split {split.topic}-"
                f"{split.partition} to topic {plan.topic!r} were not delivered: {error}. The "
                f"run's transactions are aborted; nothing was committed."
            )
        producer.send_offsets_to_transaction(
            [CTopicPartition(split.topic, split.partition, split.stop)],
            consumer.consumer_group_metadata(),
            _REQUEST_TIMEOUT_S,
        )
        conn = _register(plan.address, plan.token, index, attempt, counts.records, counts.bytes)
        threading.Thread(
            target=_hold, args=(producer, conn, deadline, tid), name=f"dkf-hold-{tid}", daemon=True
        ).start()
        handed = True
        yield _row(index, counts.records, counts.bytes, "prepared")
    except (KafkaException, SystemError) as exc:
        cause = kafka_error_of(exc)
        if cause is None:
            raise
        raise TransactionError(
            f"The transaction of split {split.topic}-{split.partition} ({tid!r}) failed: "
            f"{cause}. Nothing was committed."
        ) from exc
    finally:
        consumer.close()
        if not handed:
            with contextlib.suppress(Exception):
                producer.abort_transaction(_REQUEST_TIMEOUT_S)


def _row(split: int, records: int, size: int, state: str) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist(
        [{"split": split, "records": records, "bytes": size, "state": state}],
        schema=pa.schema(
            [
                ("split", pa.int32()),
                ("records", pa.int64()),
                ("bytes", pa.int64()),
                ("state", pa.string()),
            ]
        ),
    )


# -- the driver's side -------------------------------------------------------------------------
class SplitTransactions:
    """The exactly-once writer of one asset's sink with a transaction per source split.

    Args:
        topic: the sink topic.
        client: the sink table's librdkafka producer settings.
        prefix: ``sink.transactional-id-prefix``.
        asset: the asset's name (part of every id and of the progress group).
        partitioner: the sink's resolved ``sink.partitioner``.
        consumer: librdkafka consumer settings of the sink's cluster.
        admin: the run's admin client of the cluster.
    """

    def __init__(
        self,
        topic: str,
        client: Mapping[str, Any],
        prefix: str,
        asset: str,
        *,
        partitioner: SinkPartitioner,
        consumer: Mapping[str, Any] | None = None,
        admin: KafkaAdmin,
        log: logging.Logger | Any = _log,
    ) -> None:
        self.topic = topic
        self.client = dict(client)
        self.prefix = prefix
        self.asset = asset
        self.partitioner = partitioner
        self.consumer = dict(consumer if consumer is not None else role_config(client, "consumer"))
        self.admin = admin
        self.log = log
        self.group = progress_group(prefix, asset)
        self.timeout_ms = 0
        self._consumers: dict[str, Any] = {}

    def begin(self) -> None:
        """Check the transaction timeout against the brokers (before anything is read).

        Raises:
            KafkaOptionsError: the timeout exceeds the brokers' maximum.
        """
        self.timeout_ms = transaction_timeout_ms(
            self.client, broker_max_transaction_timeout_ms(self.admin)
        )

    def fence(self, partitions: Sequence[TopicPartition]) -> None:
        """``init_transactions`` of the split id of every source partition in ``partitions``:
        a transaction a killed run left open is aborted (or its commit completed) now.

        Raises:
            TransactionError: an id could not be initialised.
        """
        ids = [split_transactional_id(self.prefix, self.asset, t, p) for t, p in partitions]
        if not ids:
            return
        with ThreadPoolExecutor(min(_FENCING_THREADS, len(ids))) as pool:
            list(pool.map(self._fence_one, ids))
        self.log.info(f"Fenced {len(ids)} split transactional id(s) of {self.asset!r}.")

    def _fence_one(self, tid: str) -> None:

        producer, _ = _transactional_producer(self.client, tid, self.timeout_ms)
        try:
            _initialise(producer, tid, self.timeout_ms)
        finally:
            producer.flush(0)

    def resume_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Where each source partition resumes: fences the partitions' split ids, then takes
        the larger of the source group's committed offset and the progress group's (the
        progress group is ahead when a run committed its splits but not the source group)."""
        if not partitions:
            return {}
        self.fence(partitions)
        wait_s = max(_REQUEST_TIMEOUT_S, self.timeout_ms / 1000)
        source = fetch_committed(self._consumer(group_id), group_id, partitions, wait_s)
        progress = fetch_committed(self._consumer(self.group), self.group, partitions, wait_s)
        return furthest(source, progress)

    def _consumer(self, group_id: str) -> Any:
        from confluent_kafka import Consumer

        if group_id not in self._consumers:
            config = {**self.consumer, "group.id": group_id, "isolation.level": "read_committed"}
            config["enable.auto.commit"] = "false"
            self._consumers[group_id] = Consumer(config)
        return self._consumers[group_id]

    def write(
        self,
        encoded: DataFrame,
        splits: Sequence[KafkaSplit],
        decide: Callable[[], None],
    ) -> TransactionResult:
        """Write ``encoded`` (partition ``i`` holds split ``i``'s output) with a transaction per
        split, let ``decide`` judge (it raises to abort every split), and commit them.

        Raises:
            TransactionError: a split could not be prepared (nothing committed), a holder was
                lost before the verdict (nothing committed), or splits still failed to commit
                after :data:`REWRITES` rewrites (the message names those that committed).
            DeliveryError: a record was not delivered (nothing committed).
        """
        started = time.monotonic()
        if not splits:  # nothing new to read: nothing to write, still decided as a run
            decide()
            return TransactionResult(0, 0, 0, None, 0.0, transactional_id=self._ids())
        host, bind = driver_address(encoded.sparkSession)
        server = VerdictServer(host, bind)
        plan = _TaskPlan(
            splits=tuple(splits),
            topic=self.topic,
            producer=self.client,
            consumer=self.consumer,
            prefix=self.prefix,
            asset=self.asset,
            group=self.group,
            timeout_ms=self.timeout_ms,
            partitioner=self.partitioner,
            address=server.address,
            token=server.token,
        )

        def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield from _prepare_split(plan, batches)

        def names(indices: Sequence[int] | Mapping[int, str]) -> str:
            return ", ".join(f"{splits[i].topic}-{splits[i].partition}" for i in sorted(indices))

        produced: dict[int, tuple[int, int]] = {}  # split -> its last prepared records, bytes
        committed: list[int] = []
        self.log.info(f"Split transactions of {self.asset!r}: producing {len(splits)} split(s).")
        try:
            for round_ in range(REWRITES + 1):
                rows = _collect(encoded, task)
                if round_ == 0:
                    decide()
                prepared = sorted(r["split"] for r in rows if r["state"] == "prepared")
                produced.update(
                    {
                        r["split"]: (r["records"], r["bytes"])
                        for r in rows
                        if r["state"] == "prepared"
                    }
                )
                lost = server.alive(prepared)
                if lost:
                    raise TransactionError(
                        f"The holders of split(s) {names(lost)} were lost before the "
                        f"verdict ({'; '.join(lost.values())}: an executor or its Python worker "
                        f"ended); every split's "
                        f"transaction is aborted and nothing was committed"
                        + (f" beyond the split(s) {names(committed)}" if committed else "")
                        + ". The next run writes the rest."
                    )
                self.log.info(
                    f"Split transactions of {self.asset!r}: {len(prepared)} prepared; committing."
                )
                failed = server.commit(prepared, self.timeout_ms / 1000)
                committed += [s for s in prepared if s not in failed]
                if not failed:
                    break
                self.log.warning(
                    f"Split(s) {names(failed)} did not commit ({'; '.join(failed.values())}"
                    f"); writing them again (rewrite {round_ + 1} of {REWRITES})."
                )
                server.forget()
            else:
                raise TransactionError(
                    f"Split(s) {names(failed)} of {self.asset!r} did not commit after "
                    f"{REWRITES} rewrites ({'; '.join(failed.values())}). Split(s) "
                    f"{names(committed)} committed and are visible; the next run writes "
                    f"the rest (each split once: the progress group {self.group!r} records "
                    f"what committed)."
                )
        except BaseException:
            server.abort_all()
            raise
        finally:
            server.close()
        elapsed_ms = (time.monotonic() - started) * 1000
        records = sum(produced[s][0] for s in committed)
        size = sum(produced[s][1] for s in committed)
        self.log.info(
            f"Committed {len(committed)} split transaction(s) of {self.asset!r}: "
            f"{records} record(s) in {elapsed_ms:.0f} ms."
        )
        return TransactionResult(
            records=records,
            bytes=size,
            failed=0,
            first_error=None,
            send_ms=elapsed_ms,
            by_topic={self.topic: records},
            transactional_id=self._ids(),
            transaction_ms=round(elapsed_ms, 1),
            commit_attempts=1,
            timeout_ms=self.timeout_ms,
        )

    def _ids(self) -> str:
        """The pattern of the split ids, for the run's metadata."""
        return f"{self.prefix}-{self.asset}-<topic>-<partition>"

    def close(self) -> None:
        """Release the group consumers (never raises)."""
        consumers, self._consumers = self._consumers, {}
        for consumer in consumers.values():
            with contextlib.suppress(Exception):
                consumer.close()


def _collect(
    encoded: DataFrame, task: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
) -> list[Any]:
    """Run the writing job; a task's connector error is raised as itself."""
    try:
        return encoded.mapInArrow(task, _RESULT_SCHEMA).collect()
    except KafkaConnectorError:
        raise
    except Exception as exc:  # Spark wraps what a task raised
        error = connector_error(exc)
        if error is None:
            raise
        raise error from exc


__all__ = [
    "REWRITES",
    "SplitTransactions",
    "VerdictServer",
    "progress_group",
    "split_transactional_id",
]
