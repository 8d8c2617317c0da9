"""Stream a DataFrame's Arrow batches from Spark's tasks straight to the driver's Python process.

The exactly-once sink has one transactional producer, on the driver, so the whole result passes
through the driver. Spark's collection paths (``toLocalIterator``) carry every batch through the
driver JVM's heap. Here each task's Python worker connects to a :class:`BatchServer` in the
driver's Python process and writes its partition as an Arrow IPC stream; the driver reads the
streams of all running tasks at once, in bounded memory. Spark's job itself returns one row per
partition — its row count — which the driver checks against what it received.

Task attempts: the first complete stream of a partition wins; a later attempt of the same
partition (a retry, a speculative copy) is read and discarded. An attempt that breaks after
some of its rows were handed on cannot be resumed safely (a retry may order its rows
differently), so the transfer fails and the caller aborts its transaction.

Network: executors connect to the driver at ``spark.driver.host`` on a port chosen per write
(listening on ``spark.driver.bindAddress`` when set), as they already reach the driver's other
ports; a connection must present the write's random token. Over Spark Connect the producer runs
in the client's process, not in the server's driver: executors connect to the client at the
address it reaches the server from (127.0.0.1 for a server on this machine).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import secrets
import socket
import struct
import threading
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

from .._worker import settle_worker_heap
from ..errors import SchemaRegistryClientError, TransactionError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

_log = logging.getLogger(__name__)

_TOKEN_BYTES = 16
_HEADER = struct.Struct(">ii")  # partition, attempt
_ACK = struct.Struct(">q")  # rows received
_EMPTY, _STREAM = b"\x00", b"\x01"
_CONNECT_TIMEOUT_S = 60.0
_POLL_S = 0.2
#: Batches waiting for the driver's consumer; the senders block beyond this (backpressure).
QUEUE_BATCHES = 16
_DONE = object()


class TransferError(TransactionError):
    """A partition's stream broke after part of it was handed on, or counts disagree."""


def _read_exact(stream: Any, size: int) -> bytes:
    data = stream.read(size)
    if data is None or len(data) != size:
        raise ConnectionError(f"stream ended after {len(data or b'')} of {size} bytes")
    return bytes(data)


def send_partition(
    address: tuple[str, int],
    token: bytes,
    partition: int,
    attempt: int,
    batches: Iterator[pa.RecordBatch],
) -> int:
    """Send one task's batches to a :class:`BatchServer`; returns the rows the server received.

    Blocks until the server acknowledges the whole stream, so a task succeeds only once its rows
    are with the driver.

    Raises:
        TransferError: the server acknowledged a different number of rows.
    """
    import pyarrow as pa

    rows = 0
    with socket.create_connection(address, timeout=_CONNECT_TIMEOUT_S) as sock:
        sock.settimeout(None)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        with sock.makefile("wb", buffering=1 << 20) as out:
            out.write(token + _HEADER.pack(partition, attempt))
            writer = None
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    out.write(_STREAM)
                    writer = pa.ipc.new_stream(out, batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
            if writer is None:
                out.write(_EMPTY)
            else:
                writer.close()
            out.flush()
        with sock.makefile("rb") as answers:
            (received,) = _ACK.unpack(_read_exact(answers, _ACK.size))
    if received != rows:
        raise TransferError(
            f"Partition {partition} sent {rows} row(s) to the driver, which acknowledged "
            f"{received}."
        )
    return received


def accept_connections(
    server: socket.socket, closed: threading.Event, take: Callable[[socket.socket], None]
) -> None:
    """Accept connections on ``server`` (a listening socket with a timeout) and hand each to
    ``take`` until ``closed`` is set or the socket is closed."""
    while not closed.is_set():
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        take(conn)


class BatchServer:
    """Receives partitions' Arrow streams on the driver and queues ``(partition, batch)``.

    Iterate :meth:`batches` from one thread while the Spark job runs; :meth:`finish` with the
    job's per-partition counts ends the iteration once everything queued has been taken.

    Args:
        host: the address tasks connect to (the driver's host).
        bind: the address to listen on (defaults to ``host``).
    """

    def __init__(self, host: str, bind: str | None = None) -> None:
        self.token = secrets.token_bytes(_TOKEN_BYTES)
        self._server = socket.create_server((bind or host, 0))
        self._server.settimeout(_POLL_S)
        self.address = (host, self._server.getsockname()[1])
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_BATCHES)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._partition_locks: dict[int, threading.Lock] = {}
        self._complete: dict[int, int] = {}
        self._connections: set[socket.socket] = set()
        self._acceptor = threading.Thread(target=self._accept, name="dkf-batch-server", daemon=True)
        self._acceptor.start()

    # -- receiving --------------------------------------------------------------------------
    def _accept(self) -> None:
        accept_connections(self._server, self._closed, self._receive)

    def _receive(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
        threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _put(self, item: Any) -> None:
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return
            except queue.Full:
                continue
        raise ConnectionAbortedError("the transfer was closed")

    def _handle(self, conn: socket.socket) -> None:
        import pyarrow as pa

        conn.settimeout(None)
        partition, forwarded = -1, 0
        try:
            with conn, conn.makefile("rb", buffering=1 << 20) as stream:
                head = _read_exact(stream, _TOKEN_BYTES + _HEADER.size)
                if not secrets.compare_digest(head[:_TOKEN_BYTES], self.token):
                    _log.warning("Refused a connection without the transfer's token.")
                    return
                partition, attempt = _HEADER.unpack(head[_TOKEN_BYTES:])
                with self._lock:
                    partition_lock = self._partition_locks.setdefault(partition, threading.Lock())
                with partition_lock:
                    discard = partition in self._complete
                    rows = 0
                    if _read_exact(stream, 1) == _STREAM:
                        for batch in pa.ipc.open_stream(stream):
                            rows += batch.num_rows
                            if not discard:
                                self._put((partition, batch))
                                forwarded += batch.num_rows
                    if not discard:
                        self._complete[partition] = rows
                    conn.sendall(_ACK.pack(rows))
                    if discard:
                        _log.info(
                            f"Partition {partition}, attempt {attempt}: already received from "
                            f"an earlier attempt; {rows} row(s) discarded."
                        )
        except (OSError, pa.ArrowInvalid, ConnectionError) as exc:
            if forwarded and not self._closed.is_set():
                with contextlib.suppress(ConnectionAbortedError):
                    self._put(
                        TransferError(
                            f"The Spark task of partition {partition} failed after sending "
                            f"{forwarded} row(s) to the driver ({exc}). Its retry cannot be "
                            f"matched row for row, so the transaction is aborted; nothing was "
                            f"committed and the next run re-reads the same offsets."
                        )
                    )
        finally:
            with self._lock:
                self._connections.discard(conn)

    # -- the driver's side ------------------------------------------------------------------
    def finish(self, counts: dict[int, int] | BaseException) -> None:
        """End :meth:`batches` with the job's rows per partition, or with the job's error."""
        self._put((_DONE, counts))

    def batches(
        self, check: Callable[[], None] | None = None
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """Yield ``(partition, batch)`` as the streams arrive, until :meth:`finish`.

        ``check`` is called while waiting for the next batch (every fraction of a second); what
        it raises ends the iteration, e.g. a transaction about to outlive its timeout.

        Raises:
            TransferError: a stream broke after part of it was handed on, or the driver did
                not receive exactly what the job's tasks counted.
        """
        while True:
            try:
                item = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                if check is not None:
                    check()
                continue
            if isinstance(item, BaseException):
                raise item
            if item[0] is _DONE:
                counts = item[1]
                if isinstance(counts, BaseException):
                    raise counts
                self._check(counts)
                return
            yield item

    def _check(self, counts: dict[int, int]) -> None:
        received = dict(self._complete)
        if received != counts:
            raise TransferError(
                f"The driver received rows per partition {received}, but the Spark job counted "
                f"{counts}; the transaction is aborted and nothing was committed."
            )

    def close(self) -> None:
        """Stop accepting, drop open streams and unblock every handler."""
        self._closed.set()
        self._server.close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._acceptor.join()


def driver_address(spark: Any) -> tuple[str, str]:
    """Where executors reach this process (host) and where it listens (bind address)."""
    from .._sessions import is_connect

    if is_connect(spark):
        host = _client_address(str(spark.client.host))
        return host, host
    conf = spark.sparkContext.getConf()
    host = conf.get("spark.driver.host", None) or socket.gethostname()
    return host, conf.get("spark.driver.bindAddress", None) or host


def _client_address(server_host: str) -> str:
    """This machine's address on the route to a Spark Connect server at ``server_host``: where
    that server's executors (on its machine or its network) reach this client."""
    try:
        infos = socket.getaddrinfo(server_host, None, socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        infos = []
    for *_, address in infos:
        ip = str(address[0])
        if ip.startswith("127."):
            return "127.0.0.1"
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((ip, 9))  # UDP: picks the route, sends nothing
            except OSError:
                continue
            return str(probe.getsockname()[0])
    return socket.gethostbyname(socket.gethostname())


def driver_batches(
    frame: DataFrame, check: Callable[[], None] | None = None
) -> Generator[tuple[int, pa.RecordBatch], None, None]:
    """Stream a DataFrame to the driver as ``(spark_partition, Arrow batch)``, bounded memory.

    Runs the Spark job in a background thread; its tasks stream their partitions to a
    :class:`BatchServer` in this process, bypassing the driver JVM. Closing the iterator early
    (or ``check`` raising while it waits, see :meth:`BatchServer.batches`) cancels the job.

    Raises:
        TransferError: a partition's stream broke after part of it was yielded, or the counts
            disagree.
    """
    from pyspark import InheritableThread, TaskContext

    spark = frame.sparkSession
    host, bind = driver_address(spark)
    server = BatchServer(host, bind)
    address, token = server.address, server.token

    def send(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        settle_worker_heap()
        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        attempt = context.attemptNumber() if context is not None else 0
        rows = send_partition(address, token, partition, attempt, batches)
        yield pa.RecordBatch.from_pydict(
            {"partition": [partition], "rows": [rows]},
            schema=pa.schema([("partition", pa.int32()), ("rows", pa.int64())]),
        )

    group = f"dkf-driver-stream-{uuid.uuid4().hex}"
    jobs = _JobGroup(spark, group)

    def run() -> None:
        try:
            jobs.enter()
            counts = frame.mapInArrow(send, "partition int, rows long").collect()
            server.finish({row["partition"]: row["rows"] for row in counts})
        except BaseException as exc:  # a task's registry failure as our error, else Spark's
            with contextlib.suppress(ConnectionAbortedError):
                server.finish(SchemaRegistryClientError.raised_in_task(exc) or exc)

    job = InheritableThread(target=run, name="dkf-driver-stream-job", daemon=True, session=spark)
    job.start()
    try:
        yield from server.batches(check)
    finally:
        if job.is_alive():
            jobs.cancel()
        server.close()
        job.join()


class _JobGroup:
    """The Spark jobs a thread starts, cancellable from another thread: a job group on a
    classic session, an operation tag on a Spark Connect session (which has no SparkContext)."""

    def __init__(self, spark: Any, name: str) -> None:
        from .._sessions import is_connect

        self.spark = spark
        self.name = name
        self.connect = is_connect(spark)

    def enter(self) -> None:
        """Put the calling thread's next jobs in the group."""
        if self.connect:
            self.spark.addTag(self.name)
        else:
            self.spark.sparkContext.setJobGroup(
                self.name, "exactly-once sink: stream to the driver", True
            )

    def cancel(self) -> None:
        """Cancel the group's running jobs."""
        if self.connect:
            self.spark.interruptTag(self.name)
        else:
            self.spark.sparkContext.cancelJobGroup(self.name)
