"""Executor-side reading, as Flink's source reader: each Spark task reads its splits exactly.

A task assigns its ``[start, stop)`` range to a confluent-kafka consumer, consumes in bounded
batches and hands Arrow record batches to Spark through ``mapInArrow``. A range is finished when
the consumer reaches the stop offset, including when transaction markers follow the last record.

Per-record Python work is what limits throughput, so a batch is turned into columns with one
C-level ``map`` per wanted field (no per-record Python frames), the stop cut-off is found by
bisection, columns that do not vary per record (topic, partition, contiguous offsets) are built
without touching the records at all, and the cyclic garbage collector is paused while a batch of
message objects is alive. Batches are bounded in records and bytes, so memory does not grow with
the size of a range.

Spark's Python workers live across tasks, so a worker keeps the consumer of a finished split for
its next split (as Spark's own Kafka source keeps consumers on its executors): a new consumer
costs connections, threads and fresh memory (page faults) that would otherwise be paid per task.
A worker also moves the objects alive when it starts reading (imported modules, mostly) out of
the collector's reach once, since Spark collects garbage after every task.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

from .._idle_clients import IdleClients
from .._worker import collector_paused, settle_worker_heap
from ..errors import KafkaConnectorError, OffsetsError
from .enumerator import KafkaSplit

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

#: Every field a record has, in Flink's metadata names (raw key/value as ``key``/``value``).
RECORD_FIELDS = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestamp-type",
    "headers",
    "leader-epoch",
)
#: A field the reader gives besides the record's own: why the record's ``timestamp`` is null
#: although the record has one (its milliseconds lie beyond what Spark's TIMESTAMP holds, see
#: :data:`MAX_TIMESTAMP_MS`), null for every other record.
TIMESTAMP_ERROR = "timestamp-error"
#: The largest magnitude of a record timestamp in milliseconds whose microseconds (Spark's unit)
#: fit in a 64-bit integer; a producer may set any 64-bit timestamp (CreateTime).
MAX_TIMESTAMP_MS = (2**63 - 1) // 1000
_READ_FIELDS = (*RECORD_FIELDS, TIMESTAMP_ERROR)
#: Most records in one Arrow batch (one ``consume`` call).
DEFAULT_BATCH_SIZE = 10_000
#: Target size of one batch; large records make batches hold fewer than ``batch_size``.
DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
#: The most records confluent-kafka's ``Consumer.consume`` returns at once.
MAX_BATCH_SIZE = 1_000_000
DEFAULT_IDLE_TIMEOUT_S = 120.0
#: librdkafka settings tuned for reading a backlog; ``properties.*`` of the table win over them.
CONSUMER_DEFAULTS: dict[str, Any] = {
    # librdkafka pauses fetching for 1 s once its local queue is full; a reader that drains the
    # queue faster than that would then wait idle for most of the second.
    "fetch.queue.backoff.ms": 10,
    # Fewer, larger fetch round trips (the default is 1 MiB per partition).
    "max.partition.fetch.bytes": 4 * 1024 * 1024,
    # Prefetched data held per consumer: enough to keep the reader busy, bounded memory.
    "queued.max.messages.kbytes": 16 * 1024,
    # A range usually ends at the log end, where the last fetch waits on the broker for new
    # data; a consumer kept for the next split cannot fetch its new partition before that
    # fetch returns (librdkafka's default wait is 500 ms).
    "fetch.wait.max.ms": 10,
}
#: Seconds a finished split's consumer is kept for the process's next split before it is closed.
IDLE_CONSUMER_TIMEOUT_S = 60.0
_TIMESTAMP_TYPES = ("NoTimestampType", "CreateTime", "LogAppendTime")
_stamp_type = itemgetter(0)  # Message.timestamp() is (type, millis)
_stamp_millis = itemgetter(1)
_POLL_TIMEOUT_S = 0.2
_FIRST_BATCH = 100  # record sizes are unknown before the first batch
_SIZE_SAMPLE = 64  # records sampled per batch to estimate the record size
_RECORD_OVERHEAD = 128  # bytes per consumed message beyond its value (object, key, metadata)


def _fields_module() -> Any:
    """The compiled extraction of message fields (``_messages``), or None without it."""
    try:
        from . import _messages
    except ImportError:
        return None
    return _messages


def column_name(field: str) -> str:
    """The raw DataFrame column of a record field (``timestamp-type`` → ``timestamp_type``)."""
    return field.replace("-", "_")


def _check_fields(fields: Sequence[str]) -> None:
    unknown = [f for f in fields if f not in _READ_FIELDS]
    if unknown:
        raise KafkaConnectorError(
            f"Unknown record field(s) {', '.join(map(repr, unknown))}; a Kafka record has "
            f"{', '.join(RECORD_FIELDS)} (and the reader gives {TIMESTAMP_ERROR})."
        )


def arrow_schema(fields: Sequence[str]) -> pa.Schema:
    """The Arrow schema of the raw record columns for ``fields``."""
    import pyarrow as pa

    _check_fields(fields)
    types: dict[str, pa.DataType] = {
        "key": pa.binary(),
        "value": pa.binary(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "timestamp": pa.timestamp("us", tz="UTC"),  # Spark's Arrow reader takes only µs
        "timestamp-type": pa.string(),
        "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
        "leader-epoch": pa.int32(),
        TIMESTAMP_ERROR: pa.string(),
    }
    return pa.schema([(column_name(f), types[f]) for f in fields])


def spark_schema(fields: Sequence[str], derived: Sequence[DerivedColumn] = ()) -> StructType:
    """The Spark schema of the raw record columns for ``fields``, then the ``derived`` columns."""
    from pyspark.sql import types as T

    _check_fields(fields)
    types = {
        "key": T.BinaryType(),
        "value": T.BinaryType(),
        "topic": T.StringType(),
        "partition": T.IntegerType(),
        "offset": T.LongType(),
        "timestamp": T.TimestampType(),
        "timestamp-type": T.StringType(),
        "headers": T.ArrayType(
            T.StructType(
                [T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]
            )
        ),
        "leader-epoch": T.IntegerType(),
        TIMESTAMP_ERROR: T.StringType(),
    }
    return T.StructType(
        [T.StructField(column_name(f), types[f]) for f in fields]
        + [T.StructField(d.name, d.spark_type) for d in derived]
    )


@dataclass(frozen=True)
class DerivedColumn:
    """A column computed from a raw field of each Arrow batch in the task that reads it (a
    format's native decoding of the values, where the bytes already are).

    Example:
        >>> DerivedColumn("__dkf_value_native", "value", StructType([]), decode)  # doctest: +SKIP
    """

    name: str
    #: The raw record field it is computed from (one of the fields read).
    source: str
    spark_type: DataType
    #: Arrow array of the source field → Arrow array of ``spark_type``, same length.
    compute: Callable[[pa.Array], pa.Array]
    #: Another derived column (before it): computed only for the records that one left null,
    #: null for the others.
    after: str | None = None


@dataclass(frozen=True)
class Shedding:
    """Raw fields a batch carries only for the records that one of the ``decoded_by`` derived
    columns left null: the other records were decoded where they were read, and nothing reads
    these fields of theirs again (their bytes matter to records decoded or reported later).
    Not building and shipping them is most of what a natively decoded batch saves.

    Example:
        >>> Shedding(("key", "value"), ("__dkf_value_native",))  # doctest: +SKIP
    """

    fields: tuple[str, ...]
    decoded_by: tuple[str, ...]


def consumer_settings(consumer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The librdkafka configuration of a split's consumer, built from ``consumer_config``.

    :data:`CONSUMER_DEFAULTS` first, then ``consumer_config`` (the table's ``properties.*``);
    partition EOF events and no auto-commit are forced, and an offset that is no longer in
    the log is an error unless ``auto.offset.reset`` says otherwise (never a silent skip).

    Example:
        >>> consumer_settings({"bootstrap.servers": "b:9092"})["auto.offset.reset"]
        'error'
    """
    config: dict[str, Any] = {
        "group.id": "dagster-kafka-flinklike-reader",
        **CONSUMER_DEFAULTS,
        **consumer_config,
    }
    config.setdefault("auto.offset.reset", "error")
    config.update({"enable.partition.eof": True, "enable.auto.commit": False})
    return config


class _BatchBuilder:
    """Turns a list of consumed records of one split into an Arrow record batch: the wanted
    fields, then the ``derived`` columns; the ``shedding`` fields only where needed."""

    def __init__(
        self,
        split: KafkaSplit,
        fields: Sequence[str],
        derived: Sequence[DerivedColumn] = (),
        shedding: Shedding | None = None,
    ) -> None:
        import pyarrow as pa
        from confluent_kafka import Message

        self.fields = tuple(fields)
        self.schema = arrow_schema(self.fields)
        self.derived = tuple(derived)
        self.names = [*self.schema.names, *(d.name for d in self.derived)]
        self.shed = tuple(shedding.fields) if shedding is not None else ()
        self.decoded_by = [
            i for i, d in enumerate(self.derived) if shedding and d.name in shedding.decoded_by
        ]
        #: For each derived column, the index of the one it is computed after (or None).
        position = {d.name: i for i, d in enumerate(self.derived)}
        self._after = [None if d.after is None else position[d.after] for d in self.derived]
        #: Fields built for every record first: those not shed, and the derived columns' sources.
        self._first = [
            f for f in self.fields if f not in self.shed or any(d.source == f for d in derived)
        ]
        self._topic = pa.scalar(split.topic, pa.string())
        self._partition = pa.scalar(split.partition, pa.int32())
        self._headers_type = arrow_schema(("headers",)).field(0).type
        self._type_names = pa.array(_TIMESTAMP_TYPES, pa.string())
        self._timestamp = pa.timestamp("us", tz="UTC")
        self._counting = pa.array([], pa.int64())
        self._message = Message
        self._native = _fields_module()

    def _offsets(self, records: list[Any]) -> pa.Array:
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(records)
        first = records[0].offset()
        if records[-1].offset() - first != n - 1:  # gaps: markers, aborted or compacted records
            return pa.array(list(map(self._message.offset, records)), pa.int64())
        if len(self._counting) < n:
            self._counting = pa.array(range(max(n, 1024)), pa.int64())
        return pc.add(self._counting.slice(0, n), pa.scalar(first, pa.int64()))

    def _stamps(self, records: list[Any], cache: dict[str, Any]) -> list[tuple[int, int]]:
        """The records' (type, milliseconds) timestamps, taken once per batch."""
        stamps = cache.get("stamps")
        if stamps is None:
            stamps = cache["stamps"] = list(map(self._message.timestamp, records))
        return stamps

    def _timestamps(self, records: list[Any], cache: dict[str, Any]) -> tuple[pa.Array, pa.Array]:
        """Timestamps in µs (Spark's unit), null where a record has no timestamp (type 0) or one
        beyond :data:`MAX_TIMESTAMP_MS`; and :data:`TIMESTAMP_ERROR` (why) for the latter."""
        import pyarrow as pa

        found = cache.get("timestamp")
        if found is not None:
            return cast("tuple[pa.Array, pa.Array]", found)
        n = len(records)
        beyond: list[tuple[int, int, int]]
        if self._native is not None:
            validity, micros, beyond = self._native.timestamps(records, self._message.timestamp)
            buffers = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(micros)]
            stamps = pa.Array.from_buffers(self._timestamp, n, buffers)
        else:
            stamps, beyond = self._python_timestamps(self._stamps(records, cache))
        errors = pa.nulls(n, pa.string())
        if beyond:
            reasons: list[str | None] = [None] * n
            for i, kind, millis in beyond:
                reasons[i] = timestamp_error(kind, millis)
            errors = pa.array(reasons, pa.string())
        cache["timestamp"] = stamps, errors
        return stamps, errors

    def _python_timestamps(
        self, stamps: list[tuple[int, int]]
    ) -> tuple[pa.Array, list[tuple[int, int, int]]]:
        """:meth:`_timestamps` without the C module: the same array, and the records beyond
        :data:`MAX_TIMESTAMP_MS` as (index, type, milliseconds)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        millis = pa.array(list(map(_stamp_millis, stamps)), pa.int64())
        kinds = pa.array(list(map(_stamp_type, stamps)), pa.int8())
        beyond = pc.or_(pc.greater(millis, MAX_TIMESTAMP_MS), pc.less(millis, -MAX_TIMESTAMP_MS))
        beyond = pc.and_(beyond, pc.greater(kinds, 0))
        kept = pc.and_(pc.greater(kinds, 0), pc.invert(beyond))
        micros = pc.multiply(pc.if_else(kept, millis, None), 1000).view(self._timestamp)
        if not beyond.true_count:
            return micros, []
        return micros, [(i, *stamps[i]) for i in pc.indices_nonzero(beyond).to_pylist()]

    def _headers(self, records: list[Any]) -> pa.Array:
        import pyarrow as pa

        headers = pa.array(list(map(self._message.headers, records)), self._headers_type)
        if headers.null_count:  # no headers is an empty list, as a Flink row shows it
            headers = pa.ListArray.from_arrays(
                headers.offsets, headers.values, type=self._headers_type
            )
        return headers

    def _field(self, field: str, records: list[Any], cache: dict[str, Any]) -> pa.Array:
        """One field of every record (``cache``: what fields of one batch share, filled on first
        use: the records' timestamps)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        message, native = self._message, self._native
        if field in ("value", "key"):
            method = message.value if field == "value" else message.key
            if native is not None:
                validity, offsets, data = native.binaries(records, method)
                buffers = [None if validity is None else pa.py_buffer(validity)]
                buffers += [pa.py_buffer(offsets), pa.py_buffer(data)]
                return pa.Array.from_buffers(pa.binary(), len(records), buffers)
            return pa.array(list(map(method, records)), pa.binary())
        if field == "offset":
            return self._offsets(records)
        if field == "topic":
            return pa.repeat(self._topic, len(records))
        if field == "partition":
            return pa.repeat(self._partition, len(records))
        if field in ("timestamp", TIMESTAMP_ERROR):
            stamps, errors = self._timestamps(records, cache)
            return stamps if field == "timestamp" else errors
        if field == "timestamp-type":
            kinds = pa.array(list(map(_stamp_type, self._stamps(records, cache))), pa.int8())
            return pc.take(self._type_names, kinds)
        if field == "headers":
            return self._headers(records)
        return pa.array(list(map(message.leader_epoch, records)), pa.int32())  # leader-epoch

    def build(self, records: list[Any]) -> pa.RecordBatch:
        """The wanted fields of ``records`` (all from this split, in offset order), then the
        derived columns; the shed fields are null where the decoding columns all decoded."""
        import pyarrow as pa

        cache: dict[str, Any] = {}
        built = {f: self._field(f, records, cache) for f in self._first}
        derived: list[pa.Array] = []
        for d, after in zip(self.derived, self._after, strict=True):
            if after is None:
                derived.append(d.compute(built[d.source]))
            else:
                derived.append(_where(derived[after].is_null(), d.compute, built[d.source]))
        if self.shed:
            self._shed(built, derived, records, cache)
        arrays = [*(built[f] for f in self.fields), *derived]
        return pa.RecordBatch.from_arrays(arrays, names=self.names)

    def _shed(
        self,
        built: dict[str, pa.Array],
        derived: list[pa.Array],
        records: list[Any],
        cache: dict[str, Any],
    ) -> None:
        """Fill in the shed fields: null where every decoding column decoded the record (and its
        timestamp was read: a record with a :data:`TIMESTAMP_ERROR` is dirty, its bytes kept)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(records)
        decoded: pa.Array | None = None
        for i in self.decoded_by:
            valid = derived[i].is_valid()
            decoded = valid if decoded is None else pc.and_(decoded, valid)
        errors = built.get(TIMESTAMP_ERROR)
        if errors is not None and errors.null_count < n:
            clean = errors.is_null()
            decoded = clean if decoded is None else pc.and_(decoded, clean)
        count = n if decoded is None else decoded.true_count
        for field in self.shed:
            kind = self.schema.field(column_name(field)).type
            if count == n:
                built[field] = pa.nulls(n, kind)
                continue
            array = built.get(field)
            if array is None:
                array = self._field(field, records, cache)
            if count:
                array = pc.if_else(decoded, pa.scalar(None, kind), array)
            built[field] = array


def _where(rows: pa.BooleanArray, compute: Callable[[pa.Array], pa.Array], values: pa.Array) -> Any:
    """``compute`` over the ``values`` of ``rows`` only, null at the other rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = rows.true_count
    if count == len(values):
        return compute(values)
    result = compute(values.filter(rows))
    if count == 0:
        return pa.nulls(len(values), result.type)
    position = pc.subtract(pc.cumulative_sum(rows.cast(pa.int64())), 1)
    return result.take(pc.if_else(rows, position, pa.scalar(None, pa.int64())))


def timestamp_error(kind: int, millis: int) -> str:
    """Why a record timestamp of ``millis`` (type ``kind``) beyond :data:`MAX_TIMESTAMP_MS` makes
    its record dirty (the :data:`TIMESTAMP_ERROR` of the record).

    Example:
        >>> timestamp_error(1, 2**63 - 1).split(" is ")[0]
        'timestamp: 9223372036854775807 ms (CreateTime)'
    """
    name = _TIMESTAMP_TYPES[kind] if 0 <= kind < len(_TIMESTAMP_TYPES) else f"type {kind}"
    return (
        f"timestamp: {millis} ms ({name}) is beyond the range of Spark's TIMESTAMP "
        f"(microseconds in 64 bits: at most {MAX_TIMESTAMP_MS} ms from the epoch either way)"
    )


def _next_count(records: list[Any], batch_size: int, max_batch_bytes: int) -> int:
    """How many records the next batch may hold to stay near ``max_batch_bytes``."""
    step = max(1, len(records) // _SIZE_SAMPLE)
    sample = records[::step]
    size = sum(map(len, sample)) / len(sample) + _RECORD_OVERHEAD
    return max(1, min(batch_size, int(max_batch_bytes // size)))


def _new_consumer(settings: dict[str, Any]) -> Any:
    from confluent_kafka import Consumer

    return Consumer(settings)


_IDLE_CONSUMERS = IdleClients(
    _new_consumer, lambda consumer: consumer.close(), IDLE_CONSUMER_TIMEOUT_S
)


def close_idle_consumers() -> int:
    """Close the consumers this process keeps from finished splits (see ``keep_consumer``).

    Returns:
        How many consumers were closed.

    Example:
        >>> close_idle_consumers()
        0
    """
    return _IDLE_CONSUMERS.close()


class _SplitReader:
    """The consumer of one split and where it is: each :meth:`step` is one consume call."""

    def __init__(
        self,
        split: KafkaSplit,
        consumer_config: Mapping[str, Any],
        fields: Sequence[str],
        batch_size: int,
        max_batch_bytes: int,
        idle_timeout_s: float,
        keep_consumer: bool,
        derived: Sequence[DerivedColumn] = (),
        shedding: Shedding | None = None,
    ) -> None:
        from confluent_kafka import Consumer, Message, TopicPartition

        self.split = split
        self.batch_size = batch_size
        self.max_batch_bytes = max_batch_bytes
        self.idle_timeout_s = idle_timeout_s
        self.builder = _BatchBuilder(split, fields, derived, shedding)
        self._error_of = Message.error
        self._offset_of = cast("Callable[[Any], int]", Message.offset)
        self.settings = consumer_settings(consumer_config)
        self.keep_consumer = keep_consumer
        if keep_consumer:
            self.consumer = _IDLE_CONSUMERS.take(self.settings)
        else:
            self.consumer = Consumer(self.settings)
        self.tp = TopicPartition(split.topic, split.partition, split.start)
        try:
            self.consumer.assign([self.tp])
        except BaseException:
            self.consumer.close()
            raise
        self.position = split.start  # the next offset the range still needs
        self.wanted = min(batch_size, _FIRST_BATCH)
        self.last_progress = time.monotonic()
        self.done = False

    def step(self) -> pa.RecordBatch | None:
        """Consume once; the batch of the records that belong to the range, if any."""
        stop = self.split.stop
        # Asking for no more than the offsets left lets consume() return as soon as the range
        # is complete instead of waiting for a full batch.
        messages: list[Any] = self.consumer.consume(
            num_messages=min(self.wanted, stop - self.position), timeout=_POLL_TIMEOUT_S
        )
        if not messages:
            self.done = _check_idle(
                self.consumer, self.tp, self.split, self.last_progress, self.idle_timeout_s
            )
            return None
        if any(map(self._error_of, messages)):
            messages, self.done = _records_only(messages, self.split, self.position)
        if messages and messages[-1].offset() >= stop:
            messages = messages[: bisect_left(messages, stop, key=self._offset_of)]
            self.done = True
        if not messages:
            return None
        self.position = messages[-1].offset() + 1
        self.done = self.done or self.position >= stop
        self.last_progress = time.monotonic()
        self.wanted = _next_count(messages, self.batch_size, self.max_batch_bytes)
        return self.builder.build(messages)

    def close(self, completed: bool) -> None:
        """Close the consumer (it never commits offsets), or keep it for the next split.

        Only the consumer of a range read to its end is kept, unassigned first: its fetches stop
        and what it prefetched is dropped, so the next assignment starts clean.
        """
        if not (completed and self.keep_consumer):
            self.consumer.close()
            return
        try:
            self.consumer.unassign()
        except BaseException:
            self.consumer.close()
            raise
        _IDLE_CONSUMERS.put(self.settings, self.consumer)


def read_split(
    split: KafkaSplit,
    consumer_config: Mapping[str, Any],
    fields: Sequence[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    keep_consumer: bool = False,
    derived: Sequence[DerivedColumn] = (),
    shedding: Shedding | None = None,
) -> Generator[pa.RecordBatch, None, None]:
    """Read exactly the offsets ``[split.start, split.stop)`` as Arrow batches of raw fields.

    Batches hold at most ``batch_size`` records and, past the first batch, about
    ``max_batch_bytes``: a range of any size is read in bounded memory. The garbage collector
    is paused while a batch is consumed and built (never while the caller holds a batch).
    With ``keep_consumer`` the consumer comes from, and after a complete read goes back to,
    the consumers this process keeps idle (:func:`close_idle_consumers` closes them); otherwise
    it is created for the split and closed after it.

    Args:
        split: the topic-partition range to read.
        consumer_config: librdkafka settings (see :func:`consumer_settings`).
        fields: record fields to extract, from :data:`RECORD_FIELDS`.
        batch_size: most records per batch (1 to 1,000,000).
        idle_timeout_s: fail when no record arrives for this long before the stop offset.
        max_batch_bytes: target bytes per batch.
        keep_consumer: reuse this process's idle consumer with the same settings, and keep
            this one for the next split.
        derived: columns computed from each batch, after the fields.
        shedding: fields left null where the derived columns it names all decoded a record.

    Raises:
        OffsetsError: consuming failed (for example the range was deleted by retention after
            planning), or the stop offset was not reached within ``idle_timeout_s``.

    Example:
        >>> split = KafkaSplit("orders", 0, 0, 100)
        >>> config = {"bootstrap.servers": "b:9092"}
        >>> batches = read_split(split, config, ("value",))  # doctest: +SKIP
    """
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, got {batch_size}.")
    if split.stop <= split.start:
        return
    reader = _SplitReader(
        split,
        consumer_config,
        fields,
        batch_size,
        max_batch_bytes,
        idle_timeout_s,
        keep_consumer,
        derived,
        shedding,
    )
    completed = False
    try:
        while not reader.done:
            with collector_paused():
                batch = reader.step()
            if batch is not None:
                yield batch
        completed = True
    finally:
        reader.close(completed)


def _records_only(messages: list[Any], split: KafkaSplit, position: int) -> tuple[list[Any], bool]:
    """The records of ``messages`` without events, and whether an EOF event ends the range.

    Raises:
        OffsetsError: a consume error other than end-of-partition before the range is complete.
    """
    from confluent_kafka import KafkaError

    records: list[Any] = []
    for message in messages:
        error = message.error()
        if error is None:
            records.append(message)
            continue
        if error.code() == KafkaError._PARTITION_EOF:
            if (message.offset() or 0) >= split.stop:
                return records, True
            continue
        if records and records[-1].offset() >= split.stop - 1:
            return records, True  # the range was complete before the error
        offset = message.offset()
        if offset is None or offset < 0:
            offset = records[-1].offset() + 1 if records else position
        hint = ""
        if error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
            hint = (
                f" Offsets [{split.start}, {split.stop}) are no longer all in the log (deleted "
                f"by retention or delete-records after the run was planned); plan the run again."
            )
        raise OffsetsError(
            f"Reading {split.topic}-{split.partition} failed at offset {offset}: "
            f"{error.str()}.{hint}"
        )
    return records, False


def _check_idle(
    consumer: Any, tp: Any, split: KafkaSplit, last_progress: float, idle_timeout_s: float
) -> bool:
    """Whether an idle consumer is done (its position passed the stop offset).

    Raises:
        OffsetsError: nothing arrived for ``idle_timeout_s`` and the stop offset is not reached.
    """
    position = consumer.position([tp])[0].offset
    if position >= split.stop:
        return True
    if time.monotonic() - last_progress > idle_timeout_s:
        raise OffsetsError(
            f"Reading {split.topic}-{split.partition} made no progress for "
            f"{idle_timeout_s:.0f}s at position {position}; stop offset is {split.stop} (is an "
            f"open transaction holding the last stable offset below it?)."
        )
    return False


def read_splits(
    spark: SparkSession,
    splits: Sequence[KafkaSplit],
    consumer_config: Mapping[str, Any],
    fields: Sequence[str] = ("key", "value", "topic", "partition", "offset", "timestamp"),
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    derived: Sequence[DerivedColumn] = (),
    shedding: Shedding | None = None,
) -> DataFrame:
    """A DataFrame of the raw records of ``splits``: one Spark task per split.

    Columns are the record ``fields`` (``timestamp-type`` becomes ``timestamp_type``), then the
    ``derived`` columns, computed batch by batch in the reading task; with ``shedding``, its
    fields are null for the records its decoding columns all decoded. The Spark
    Python workers keep each finished split's consumer for their next split with the same
    settings (closed after :data:`IDLE_CONSUMER_TIMEOUT_S` unused).

    Example:
        >>> df = read_splits(spark, plan.splits, client_config(spec.properties))  # doctest: +SKIP
    """
    fields = tuple(fields)
    derived = tuple(derived)
    missing = [d.source for d in derived if d.source not in fields]
    if missing:
        raise KafkaConnectorError(f"Derived columns read field(s) {missing} that are not read.")
    if shedding is not None:
        unknown = set(shedding.decoded_by) - {d.name for d in derived}
        if unknown or not set(shedding.fields) <= set(fields):
            raise KafkaConnectorError(
                f"Shedding names columns that are not read: {sorted(unknown)}, "
                f"{sorted(set(shedding.fields) - set(fields))}."
            )
    schema = spark_schema(fields, derived)
    split_list = list(splits)
    config = dict(consumer_config)
    if not split_list:
        return spark.createDataFrame([], schema)

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        settle_worker_heap()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from read_split(
                    split_list[index],
                    config,
                    fields,
                    batch_size=batch_size,
                    keep_consumer=True,
                    derived=derived,
                    shedding=shedding,
                )

    n = len(split_list)
    return spark.range(0, n, 1, n).mapInArrow(read_partition, schema)
