"""Sink writers per delivery guarantee: Spark tasks produce with confluent-kafka.

``none`` fires and forgets (failures counted and logged); ``at-least-once`` checks every delivery
report and fails the task — and so the run, before any checkpoint advances — on the first
failure. :func:`produce_batches` is the produce loop itself, usable with any producer (the
transactional writer drives it on the driver).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._idle_clients import IdleClients
from .._worker import settle_worker_heap
from ..errors import (
    DeliveryError,
    KafkaConnectorError,
    KafkaOptionsError,
    SchemaRegistryClientError,
    TransactionError,
    classify_kafka_error,
    kafka_error_of,
)
from ..options import DeliveryGuarantee, role_config
from .partitioners import LIBRDKAFKA_DEFAULT, SinkPartitioner, TaskPartitioner
from .serializer import SEQUENCE

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

_RESULT_SCHEMA = "records long, bytes long, failed long, error string, send_ms double"
_FLUSH_TIMEOUT_S = 300.0
_METADATA_TIMEOUT_S = 30.0
#: A new task producer's metadata request waits no longer (a cluster that does not answer then
#: fails the deliveries, within their own timeouts).
_HEAD_START_TIMEOUT_S = 5.0
_TASK_ERRORS: dict[str, type[KafkaConnectorError]] = {
    "DeliveryError": DeliveryError,
    "KafkaOptionsError": KafkaOptionsError,
    "TransactionError": TransactionError,
    "KafkaConnectorError": KafkaConnectorError,
}
_TASK_ERROR = re.compile(r"\b(" + "|".join(_TASK_ERRORS) + r"): (.+)")
_OPTION_KEY = re.compile(r"'(sink\.[a-z.-]+)'")
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.+?)(?: SQLSTATE: \w+)?$", re.MULTILINE)


@dataclass(frozen=True)
class WriteResult:
    """What a write did: records and bytes delivered, failures, time spent sending."""

    records: int
    bytes: int
    failed: int
    first_error: str | None
    send_ms: float
    #: Records delivered per topic, for a write to several topics.
    by_topic: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ProduceCounts:
    """What :func:`produce_batches` handed to the producer: records and key+value bytes."""

    records: int
    bytes: int


class DeliveryReport:
    """A delivery-report callback that counts failures.

    Give it to the producer's configuration as ``on_delivery`` (see :func:`reporting_producer`):
    confluent-kafka parses keyword arguments on every ``produce`` call, so passing
    ``on_delivery=`` per record costs about 0.8 µs each. Successful deliveries cost one
    comparison; a failure records its count, bytes and the first error message.

    Example:
        >>> report = DeliveryReport()
        >>> report(None, object())
        >>> report.failed, report.has_failed()
        (0, False)
    """

    __slots__ = ("failed", "failed_bytes", "first_error", "first_kafka_error")

    def __init__(self) -> None:
        self.failed = 0
        self.failed_bytes = 0
        self.first_error: str | None = None
        #: The first failure's ``KafkaError`` itself, for :func:`classify_kafka_error`.
        self.first_kafka_error: Any = None

    def __call__(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed += 1
            self.failed_bytes += len(msg.value() or b"") + len(msg.key() or b"")
            if self.first_error is None:
                self.first_error = str(err)
                self.first_kafka_error = err

    def has_failed(self) -> bool:
        """Whether any delivery failed so far (a ``stop`` predicate for fail-fast writes)."""
        return self.failed > 0

    def reset(self) -> None:
        """Start counting afresh (a kept producer's next task, a transaction's next write)."""
        self.failed = 0
        self.failed_bytes = 0
        self.first_error = None
        self.first_kafka_error = None


def reporting_producer(settings: Mapping[str, Any]) -> tuple[Any, DeliveryReport]:
    """A confluent-kafka producer whose delivery reports all go to its own
    :class:`DeliveryReport`, returned with it."""
    from confluent_kafka import Producer

    report = DeliveryReport()
    return Producer({**settings, "on_delivery": report}), report


def producer_config(client: Mapping[str, Any], guarantee: DeliveryGuarantee) -> dict[str, Any]:
    """librdkafka producer settings for a sink's client settings and delivery guarantee.

    ``client`` is the table's producer settings (``client_config(properties, role="producer")``,
    or a run's resolved table); they win over the writer's defaults. Keyed records without an
    explicit partition are hashed as the Java client hashes them. Only failed deliveries are
    reported (the writers count what they produce, and a flush waits out every record), which
    saves a Python callback per delivered record.
    """
    config: dict[str, Any] = {
        "partitioner": LIBRDKAFKA_DEFAULT,
        "linger.ms": 5,
        "delivery.report.only.error": True,
    }
    if guarantee != DeliveryGuarantee.NONE:
        config.update({"acks": "all", "enable.idempotence": True})
    config.update(client)
    return config


def partitions_of(client: Any, topic: str) -> tuple[int, ...]:
    """The partition ids of ``topic``, ascending, through any client's ``list_topics``.

    Raises:
        DeliveryError: the topic does not exist or its metadata cannot be read.
    """
    from confluent_kafka import KafkaException

    try:
        metadata = client.list_topics(topic=topic, timeout=_METADATA_TIMEOUT_S)
    except KafkaException as exc:
        raise DeliveryError(f"Cannot read the metadata of sink topic {topic!r}: {exc}.") from None
    info = metadata.topics.get(topic)
    if info is None or info.error is not None or not info.partitions:
        reason = info.error if info is not None and info.error is not None else "no partitions"
        raise DeliveryError(
            f"Cannot read the partitions of sink topic {topic!r} (needed by 'sink.partitioner'): "
            f"{reason}. Check the table's 'topic' option and that the topic exists."
        )
    return tuple(sorted(info.partitions))


def plan_partitioner(
    option: str, topic: str, metadata_client: Any, custom: type | None = None
) -> SinkPartitioner:
    """Resolve ``sink.partitioner`` for ``topic``, looking up its partitions once if needed.

    ``metadata_client`` is any confluent-kafka client of the cluster (an ``AdminClient``
    shared by the run), asked for the topic's partitions unless the partitioner is ``default``;
    ``custom`` is the user class the table spec loaded (``KafkaTableSpec.partitioner_class``).

    Example:
        >>> plan_partitioner("default", "orders", None).partitions
        ()
    """
    if option.strip() == "default":
        return SinkPartitioner.resolve("default", topic)
    return SinkPartitioner.resolve(option, topic, partitions_of(metadata_client, topic), custom)


def _timestamps_ms(column: pa.Array) -> list[int]:
    """Record timestamps in epoch ms (0 = let the producer stamp it) from a timestamp column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        column = pc.cast(column, pa.timestamp("ms", column.type.tz), safe=False)
    ints = pc.cast(column, pa.int64(), safe=False)
    return pc.fill_null(ints, 0).to_pylist()  # type: ignore[no-any-return]


def _headers(column: pa.Array) -> list[Any]:
    """Headers as confluent-kafka wants them: a list of (name, bytes) pairs, or None, per record."""
    import pyarrow as pa

    rows = column.to_pylist()
    if pa.types.is_map(column.type):
        return rows  # a map converts to lists of (key, value) tuples already
    return [None if h is None else [(e["key"], e["value"]) for e in h] for h in rows]


def produce_batches(
    producer: Any,
    batches: Iterable[pa.RecordBatch],
    topic: str,
    partitioner: TaskPartitioner,
    on_delivery: Callable[[Any, Any], None] | None = None,
    *,
    stop: Callable[[], bool] | None = None,
) -> ProduceCounts:
    """Produce every row of ``batches`` (``key``, ``value`` [, ``timestamp``, ``headers``]).

    The loop behind every writer. Each batch's columns become Python lists once; the partition
    comes from ``partitioner`` (a :class:`TaskPartitioner`, e.g.
    ``SinkPartitioner.resolve("default", topic).open(0, 1)``). Delivery reports go to the
    producer's configured ``on_delivery`` (:func:`reporting_producer`; the fast path) or, if
    given, to ``on_delivery`` — they arrive while this polls and when the caller flushes, which
    it must do afterwards. A full local queue is waited out, never dropped. ``stop`` is asked
    after every batch: true ends the loop early (fail fast). Transactions are the caller's:
    begin before, commit after.

    Example:
        >>> task_partitioner = SinkPartitioner.resolve("default", "orders").open(0, 1)
        >>> producer, report = reporting_producer(settings)  # doctest: +SKIP
        >>> counts = produce_batches(  # doctest: +SKIP
        ...     producer, batches, "orders", task_partitioner
        ... )
        >>> producer.flush(), report.failed  # doctest: +SKIP

    Returns:
        The records and key+value bytes handed to the producer.
    """
    import pyarrow.compute as pc

    produce = producer.produce
    records = 0
    size = 0
    for batch in batches:
        names = batch.schema.names
        key_column = batch.column(names.index("key"))
        value_column = batch.column(names.index("value"))
        keys = key_column.to_pylist()
        values = value_column.to_pylist()
        for column in (key_column, value_column):
            if column.null_count < len(column):  # an all-null column may have Arrow type null
                size += pc.sum(pc.binary_length(column)).as_py() or 0
        stamps: list[int] | None = None
        headers: list[Any] | None = None
        if "timestamp" in names:
            stamps = _timestamps_ms(batch.column(names.index("timestamp")))
        if "headers" in names:
            headers = _headers(batch.column(names.index("headers")))
        partitions = partitioner.assign(keys, values)
        if stamps is None and headers is None and on_delivery is None:
            # Positional arguments only: confluent-kafka's keyword parsing costs ~0.8 µs/record.
            if isinstance(partitions, int):
                for key, value in zip(keys, values, strict=True):
                    try:
                        produce(topic, value, key, partitions)
                    except BufferError:
                        _retry(producer, topic, value, key, partitions, None, 0, None)
            else:
                for key, value, p in zip(keys, values, partitions, strict=False):  # endless cycle
                    try:
                        produce(topic, value, key, p)
                    except BufferError:
                        _retry(producer, topic, value, key, p, None, 0, None)
        else:
            parts = itertools.repeat(partitions) if isinstance(partitions, int) else partitions
            rows = zip(  # the partitions may be an endless round-robin cycle: not strict
                keys,
                values,
                stamps if stamps is not None else itertools.repeat(0),
                headers if headers is not None else itertools.repeat(None),
                parts,
                strict=False,
            )
            extra = {} if on_delivery is None else {"on_delivery": on_delivery}
            for key, value, stamp, header, p in rows:
                try:
                    produce(topic, value, key, p, timestamp=stamp, headers=header, **extra)
                except BufferError:
                    _retry(producer, topic, value, key, p, on_delivery, stamp, header)
        records += len(values)
        producer.poll(0)
        if stop is not None and stop():
            break
    return ProduceCounts(records=records, bytes=size)


def produce_arrow_batches(
    producer: Any,
    batches: Iterable[pa.RecordBatch],
    topic: str,
    state: dict[str, Any],
    *,
    partitioner: str | SinkPartitioner = "default",
    task: int = 0,
    num_tasks: int = 0,
) -> int:
    """:func:`produce_batches` for a caller that keeps its state in a dict across calls.

    ``state`` holds ``bytes`` (key+value bytes handed to the producer) and, under a private key,
    each ``task``'s :class:`TaskPartitioner`, so ``fixed`` / ``round-robin`` / a user class keep
    their per-task behaviour over many calls; the topic's partitions are read once, through
    ``producer``. Delivery reports go to the producer's configured ``on_delivery``
    (:func:`reporting_producer`), which counts failures and their bytes.

    Example:
        >>> producer, report = reporting_producer(settings)  # doctest: +SKIP
        >>> state = {}
        >>> produce_arrow_batches(  # doctest: +SKIP
        ...     producer, [batch], "orders", state, partitioner="fixed", task=3
        ... )
        >>> producer.flush(), report.failed  # doctest: +SKIP

    Returns:
        The number of records handed to the producer by this call.
    """
    state.setdefault("bytes", 0)
    opened: dict[tuple[str, Any, int], TaskPartitioner] = state.setdefault("_partitioners", {})
    slot = (topic, partitioner, task)
    if slot not in opened:
        if isinstance(partitioner, SinkPartitioner):
            resolved = partitioner
        else:
            resolved = plan_partitioner(partitioner, topic, producer)
        opened[slot] = resolved.open(task, num_tasks)
    counts = produce_batches(producer, batches, topic, opened[slot])
    state["bytes"] += counts.bytes
    return counts.records


def _retry(
    producer: Any,
    topic: str,
    value: bytes | None,
    key: bytes | None,
    partition: int,
    on_delivery: Callable[[Any, Any], None] | None,
    timestamp: int,
    headers: Any,
) -> None:
    """Serve delivery reports until the full local queue takes the record."""
    extra = {} if on_delivery is None else {"on_delivery": on_delivery}
    while True:
        producer.poll(0.05)
        try:
            producer.produce(
                topic, value, key, partition, timestamp=timestamp, headers=headers, **extra
            )
            return
        except BufferError:
            continue


#: ``(producer, report)`` pairs of tasks that delivered everything, kept by a Python worker for
#: its next task.
_IDLE_PRODUCERS = IdleClients(reporting_producer, lambda pair: pair[0].flush(0), 60.0)


def _ask_metadata_first(topic: str) -> Callable[[tuple[Any, DeliveryReport]], None]:
    """For a new idempotent producer: the topic's metadata before its first record. Otherwise
    librdkafka asks for the producer id on the bootstrap connection it is about to replace,
    loses the answer and asks again 500 ms later: the first delivery took 515 ms in 12 of 12
    fresh processes here, and 3-10 ms in 11 of 12 after the metadata (which took 65-90 ms)."""

    def ask(pair: tuple[Any, DeliveryReport]) -> None:
        with contextlib.suppress(Exception):  # only a head start: producing reports errors
            pair[0].list_topics(topic=topic, timeout=_HEAD_START_TIMEOUT_S)

    return ask


def _write_task(
    batches: Iterator[pa.RecordBatch],
    topic: str,
    config: Mapping[str, Any],
    partitioner: SinkPartitioner,
    num_tasks: int,
    fail_fast: bool,
) -> Iterator[pa.RecordBatch]:
    """One Spark task: a producer of its own, its rows produced, one result row (none if empty).

    The producer is flushed before the task ends and, if everything was delivered, kept for the
    worker's next task.
    """
    import pyarrow as pa
    from pyspark import TaskContext

    settle_worker_heap()
    first = next(batches, None)
    while first is not None and first.num_rows == 0:
        first = next(batches, None)
    if first is None:  # an empty task opens no connection
        return
    context = TaskContext.get()
    task_index = context.partitionId() if context is not None else 0
    pair = _IDLE_PRODUCERS.take(config, _ask_metadata_first(topic))
    producer, report = pair
    report.reset()
    started = time.perf_counter()
    try:
        counts = produce_batches(
            producer,
            itertools.chain([first], batches),
            topic,
            partitioner.open(task_index, num_tasks),
            stop=report.has_failed if fail_fast else None,
        )
        remaining = producer.flush(_FLUSH_TIMEOUT_S)
    except SystemError as exc:  # a fatal producer error, raised from the next delivery callback
        kind = classify_kafka_error(exc)
        if kind is None:
            raise
        raise DeliveryError(
            f"The producer to topic {topic!r} failed ({kind.value}): {kafka_error_of(exc)}. The "
            f"run fails and the checkpoint does not advance."
        ) from exc
    failed = report.failed + remaining
    error = report.first_error
    if remaining and error is None:
        error = f"{remaining} record(s) not delivered within {_FLUSH_TIMEOUT_S:.0f} s"
    send_ms = (time.perf_counter() - started) * 1000
    if not failed:
        _IDLE_PRODUCERS.put(config, pair)
    if fail_fast and failed:
        raise DeliveryError(
            f"{failed} record(s) to topic {topic!r} were not delivered: {error}. "
            f"The run fails and the checkpoint does not advance."
        )
    yield pa.RecordBatch.from_pylist(
        [
            {
                "records": counts.records - failed,
                "bytes": max(counts.bytes - report.failed_bytes, 0),
                "failed": failed,
                "error": error,
                "send_ms": send_ms,
            }
        ]
    )


def connector_error(exc: Exception) -> KafkaConnectorError | None:
    """The connector error a Spark task raised, recovered from Spark's wrapping exception."""
    registry = SchemaRegistryClientError.raised_in_task(exc)  # e.g. decoding the written rows
    if registry is not None:
        return registry
    text = str(exc)
    found = _TASK_ERROR.search(text)
    if found is not None:
        kind, message = _TASK_ERRORS[found.group(1)], found.group(2).strip()
        if kind is KafkaOptionsError:
            return KafkaOptionsError(message, keys=tuple(_OPTION_KEY.findall(message)))
        return kind(message)
    raised = _RAISED.search(text)
    if raised is not None:
        return KafkaConnectorError(raised.group(1).strip())
    return None


def distribute(encoded: DataFrame, parallelism: int | None = None) -> DataFrame:
    """The rows as the writing tasks get them.

    An ``upsert-kafka`` changelog (it carries the ``SEQUENCE`` column) is hash-partitioned by
    key and ordered within each key, so one task produces all of a key's changes in order;
    otherwise ``parallelism`` (``sink.parallelism``), when given, sets the number of tasks.
    """
    if SEQUENCE in encoded.columns:
        if parallelism:
            encoded = encoded.repartition(parallelism, "key")
        else:
            encoded = encoded.repartition("key")
        return encoded.sortWithinPartitions(SEQUENCE).drop(SEQUENCE)
    if parallelism:
        return encoded.repartition(parallelism)
    return encoded


def num_partitions(frame: DataFrame) -> int:
    """The number of partitions (so of writing tasks) of ``frame``.

    A classic session knows it from the plan; Spark Connect has no RDDs, so a job that returns
    one row per partition counts them (running ``frame``'s upstream stages once more).
    """
    from .._sessions import is_connect

    if not is_connect(frame.sparkSession):
        return int(frame.rdd.getNumPartitions())

    def one_row(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"task": [1]}, schema=pa.schema([("task", pa.int64())]))

    return int(frame.mapInArrow(one_row, "task long").count())


def write(
    encoded: DataFrame,
    topic: str,
    client: Mapping[str, Any],
    guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE,
    *,
    parallelism: int | None = None,
    partitioner: str | SinkPartitioner = "default",
) -> WriteResult:
    """Produce the ``key``/``value`` [``timestamp``, ``headers``] rows of ``encoded`` to ``topic``.

    Args:
        encoded: the output of :func:`~dagster_kafka_flinklike.sink.serializer.serialize`
            (or any DataFrame with binary ``key`` and ``value`` columns).
        topic: the sink topic.
        client: librdkafka producer settings (``client_config(properties, role="producer")``,
            or a run's resolved table).
        guarantee: ``none`` or ``at-least-once`` (exactly-once is the transactional writer's).
        parallelism: ``sink.parallelism``: the number of writing Spark tasks (default: the
            DataFrame's partitions). A user partitioner's ``open`` gets it as ``num_tasks``;
            without it the DataFrame's partitions are counted first, which may run its upstream
            stages an extra time.
        partitioner: ``sink.partitioner``: ``default``, ``fixed``, ``round-robin`` or a class
            path (its partitions looked up through an admin client of ``client``'s cluster),
            or a :class:`SinkPartitioner` resolved already (a run resolves it once). An
            ``upsert-kafka`` encoding carrying the ``SEQUENCE`` column is first hash-partitioned
            by key in Spark, so each key's changes are produced by one task, in the DataFrame's
            order.

    Example:
        >>> write(serialize(spec, df), "orders", {"bootstrap.servers": "b:9092"})  # doctest: +SKIP

    Raises:
        DeliveryError: with ``at-least-once``, when any record was not delivered; also when a
            non-default partitioner cannot read the topic's partitions.
        KafkaOptionsError: a bad ``sink.partitioner`` class, or one returning a partition the
            topic does not have.
        KafkaConnectorError: rows the sink cannot write (e.g. a bad ``__row_kind``).
    """
    if guarantee == DeliveryGuarantee.EXACTLY_ONCE:
        raise DeliveryError(
            "'sink.delivery-guarantee' = 'exactly-once' needs the transactional writer; "
            "use the streaming asset, which commits output and offsets in one transaction."
        )
    config = producer_config(client, guarantee)
    fail_fast = guarantee == DeliveryGuarantee.AT_LEAST_ONCE
    if isinstance(partitioner, SinkPartitioner):
        placement = partitioner
    elif partitioner.strip() == "default":
        placement = SinkPartitioner.resolve("default", topic)
    else:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(role_config(client, "admin"))
        placement = plan_partitioner(partitioner, topic, admin)
    encoded = distribute(encoded, parallelism)
    num_tasks = parallelism or 0
    if placement.custom is not None and not num_tasks:
        num_tasks = num_partitions(encoded)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _write_task(batches, topic, config, placement, num_tasks, fail_fast)

    try:
        rows = encoded.mapInArrow(task, _RESULT_SCHEMA).collect()
    except Exception as exc:  # Spark wraps what a task raised; surface the connector's error
        error = connector_error(exc)
        if error is None:
            raise
        raise error from exc
    errors = [r["error"] for r in rows if r["error"]]
    return WriteResult(
        records=sum(r["records"] for r in rows),
        bytes=sum(r["bytes"] for r in rows),
        failed=sum(r["failed"] for r in rows),
        first_error=errors[0] if errors else None,
        send_ms=max((r["send_ms"] for r in rows), default=0.0),
    )
