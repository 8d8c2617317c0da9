"""Write: the query's result to the sink table with its ``sink.delivery-guarantee``.

``none`` and ``at-least-once`` go through the writer tasks. ``exactly-once`` first fences the
asset's previous transactional producer (:func:`open_transaction`, before anything is read), then
produces the output, the dead letters and every source's stop offsets in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import KafkaOptionsError
from ..options import DeliveryGuarantee
from ..sink.partitioners import SinkPartitioner
from ..sink.serializer import serialize
from ..sink.transactional import TransactionalSink, transactional_id
from ..sink.writer import WriteResult, distribute, plan_partitioner, write
from ..source.offsets import TopicPartition
from .dirty import DirtyData
from .tables import KafkaClients, ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def is_exactly_once(table: ResolvedTable | None) -> bool:
    """Whether ``table`` is a sink that commits output and source offsets in one transaction."""
    return table is not None and table.spec.delivery_guarantee == DeliveryGuarantee.EXACTLY_ONCE


def sink_partitioner(table: ResolvedTable, clients: KafkaClients) -> SinkPartitioner:
    """The table's ``sink.partitioner`` for its topic, with its class loaded once at declaration
    and the topic's partitions read through the run's admin client (only when it needs them)."""
    return plan_partitioner(
        table.spec.sink_partitioner,
        table.topic,
        clients.admin(table).client,
        table.partitioner_class,
    )


def open_transaction(
    sink: ResolvedTable, asset_name: str | None, clients: KafkaClients, log: logging.Logger | Any
) -> TransactionalSink:
    """Fence the previous run of the asset and get its transactional producer ready.

    ``init_transactions`` with the stable id aborts or completes a lingering transaction, so
    the source offsets read next are final.

    Raises:
        KafkaOptionsError: no asset name, or ``transaction.timeout.ms`` above the brokers' max.
        TransactionError: the producer could not be initialised.
    """
    if not asset_name:
        raise KafkaOptionsError("An exactly-once sink needs the asset's name.")
    transaction = TransactionalSink(
        sink.topic,
        sink.producer,
        transactional_id(sink.spec.transactional_id_prefix or "", asset_name),
        partitioner=sink_partitioner(sink, clients),
        consumer=sink.consumer,
        admin=clients.admin(sink),
        log=log,
    )
    transaction.begin()
    return transaction


def write_table(
    table: ResolvedTable,
    frame: DataFrame,
    clients: KafkaClients,
    log: logging.Logger | Any,
    *,
    transaction: TransactionalSink | None = None,
    source_offsets: Mapping[str, Mapping[TopicPartition, int]] | None = None,
    dirty: Callable[[], Sequence[DirtyData]] = tuple,
    ready: Callable[[], None] | None = None,
) -> WriteResult:
    """Serialize ``frame`` and produce it to the table's topic.

    With ``transaction`` (exactly-once), the output, the dead letters of the sources' ``dirty``
    data and ``source_offsets`` (consumer group → stop offsets) commit in that one transaction;
    ``dirty`` is asked once the output is produced (the sources' statistics come from that
    pass) and may raise to abort it, and ``ready`` once all of it is delivered, just before the
    commit (it may raise to abort it too). Otherwise the table's delivery guarantee applies and
    dead letters and the decision to commit are the commit phase's.

    Raises:
        DeliveryError: an at-least-once record was not delivered.
        TransactionError: the transaction was fenced, timed out or failed to commit.
    """
    encoded = serialize(table.spec, frame)
    if transaction is not None:
        return transaction.write(
            encoded, source_offsets or {}, extra=lambda: _letters(dirty()), ready=ready
        )
    result = write(
        encoded,
        table.topic,
        table.producer,
        table.spec.delivery_guarantee,
        parallelism=table.spec.sink_parallelism,
        partitioner=sink_partitioner(table, clients),
    )
    log.info(
        f"Wrote {result.records} record(s) to {table.topic!r} "
        f"({table.spec.delivery_guarantee.value}); recording the checkpoint next."
    )
    return result


def write_topics(
    table: ResolvedTable,
    outputs: Sequence[tuple[str, DataFrame, SinkPartitioner]],
    log: logging.Logger | Any,
    *,
    transaction: TransactionalSink | None = None,
    source_offsets: Mapping[str, Mapping[TopicPartition, int]] | None = None,
    dirty: Callable[[], Sequence[DirtyData]] = tuple,
    ready: Callable[[], None] | None = None,
) -> WriteResult:
    """Produce encoded frames (``key``, ``value`` [, the ``SEQUENCE`` order]) to their topics
    with ``table``'s client settings and delivery guarantee: a pipeline that writes many
    topics. With ``transaction`` (exactly-once) every topic, the dead letters of ``dirty`` (asked
    once the outputs are produced, as :func:`write_table` does) and ``source_offsets`` commit in
    that one transaction, once ``ready`` let it.

    Raises:
        DeliveryError: an at-least-once record was not delivered.
        TransactionError: the transaction was fenced, timed out or failed to commit.
    """
    if transaction is not None:
        spread = [(topic, distribute(frame), p) for topic, frame, p in outputs]
        return transaction.write_outputs(
            spread, source_offsets or {}, extra=lambda: _letters(dirty()), ready=ready
        )
    results = {
        topic: write(
            frame,
            topic,
            table.producer,
            table.spec.delivery_guarantee,
            parallelism=table.spec.sink_parallelism,
            partitioner=partitioner,
        )
        for topic, frame, partitioner in outputs
    }
    errors = [r.first_error for r in results.values() if r.first_error]
    result = WriteResult(
        records=sum(r.records for r in results.values()),
        bytes=sum(r.bytes for r in results.values()),
        failed=sum(r.failed for r in results.values()),
        first_error=errors[0] if errors else None,
        send_ms=sum(r.send_ms for r in results.values()),
        by_topic={t: r.records for t, r in results.items()},
    )
    log.info(
        f"Wrote {result.records} record(s) to {len(results)} topic(s) "
        f"({table.spec.delivery_guarantee.value}); recording the checkpoint next."
    )
    return result


def _letters(dirty: Sequence[DirtyData]) -> list[tuple[str, DataFrame]]:
    """The dead letters of ``dirty`` as (topic, frame) pairs."""
    return [
        (d.dead_letter_topic or "", d.dead_letters) for d in dirty if d.dead_letters is not None
    ]


def write_dead_letters(sources: Mapping[str, ResolvedTable], dirty: Sequence[DirtyData]) -> None:
    """Write the dead letters of ``dirty`` (at-least-once) to their sources' dead-letter topics.

    Raises:
        DeliveryError: a dead letter was not delivered (the run fails, the checkpoint stays).
    """
    for data in dirty:
        if data.dead_letters is None or not data.dead_letter_topic:
            continue
        write(data.dead_letters, data.dead_letter_topic, sources[data.source].producer)
