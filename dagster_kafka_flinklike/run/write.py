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
from ..options import DeliveryGuarantee, KafkaTableSpec, TransactionScope
from ..sink.partitioners import SinkPartitioner
from ..sink.serializer import SEQUENCE, serialize
from ..sink.split_transactions import SplitTransactions, progress_group
from ..sink.transactional import TransactionalSink, transactional_id
from ..sink.writer import WriteResult, distribute, plan_partitioner, write
from ..source.enumerator import KafkaSplit
from ..source.offsets import TopicPartition
from .dirty import DirtyData
from .tables import KafkaClients, ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def is_exactly_once(table: ResolvedTable | None) -> bool:
    """Whether ``table`` is a sink that commits output and source offsets in one transaction."""
    return table is not None and table.spec.delivery_guarantee == DeliveryGuarantee.EXACTLY_ONCE


def _split_scope(spec: KafkaTableSpec | None) -> bool:
    """Whether ``spec`` is an exactly-once sink with a transaction per source split."""
    return (
        spec is not None
        and spec.delivery_guarantee == DeliveryGuarantee.EXACTLY_ONCE
        and spec.transaction_scope == TransactionScope.SPLIT
    )


def writes_splits(table: ResolvedTable | None) -> bool:
    """Whether ``table`` is an exactly-once sink with a transaction per source split."""
    return table is not None and _split_scope(table.spec)


#: What every refusal of the split scope ends with: the way out.
_USE_RUN_SCOPE = "Remove 'sink.transaction-scope' (or set it to 'run') for this sink."


def refuse_splits(reason: str) -> KafkaOptionsError:
    """The error for an asset or a run the split scope cannot write, with ``reason``."""
    return KafkaOptionsError(
        f"'sink.transaction-scope' = 'split' cannot write this asset: {reason}. {_USE_RUN_SCOPE}",
        keys=("sink.transaction-scope",),
    )


def check_split_sources(
    sources: Mapping[str, KafkaTableSpec],
    sink: KafkaTableSpec | None,
    *,
    replays: bool,
    stateful: bool = False,
) -> None:
    """Refuse what the split scope (``sink``'s) can never write, as soon as it is known (when
    the asset is defined, and again when a run writes): a split's transaction carries one
    source partition's progress and its output alone, so one source, without dead letters,
    read from its checkpoint (not over time windows or offset batches: ``replays``), by a query
    that keeps no state (``stateful``).

    Raises:
        KafkaOptionsError: naming ``sink.transaction-scope`` and the reason.
    """
    if not _split_scope(sink):
        return
    if stateful:
        raise refuse_splits(
            "a stateful query's micro-batches are shuffled (state is kept by key), so each "
            "batch commits in one transaction"
        )
    if len(sources) != 1:
        raise refuse_splits(
            f"it reads {len(sources)} sources; a split's transaction carries one source "
            f"partition's progress"
        )
    for name, spec in sources.items():
        if spec.dead_letter_topic:
            raise refuse_splits(
                f"source {name!r} writes dead letters ('ingestion.dead-letter.topic'), which "
                f"this scope does not yet commit with the splits' transactions"
            )
    if replays:
        raise refuse_splits(
            "a run over time windows or offset batches records no progress, so its output "
            "must commit all at once"
        )


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
        progress_group=progress_group(sink.spec.transactional_id_prefix or "", asset_name),
    )
    transaction.begin()
    return transaction


def open_split_transactions(
    sink: ResolvedTable, asset_name: str | None, clients: KafkaClients, log: logging.Logger | Any
) -> SplitTransactions:
    """The split-scope exactly-once writer of the asset's sink, its timeout checked against
    the brokers (its ids are fenced when the sources are planned).

    Raises:
        KafkaOptionsError: no asset name, or ``transaction.timeout.ms`` above the brokers' max.
    """
    if not asset_name:
        raise KafkaOptionsError("An exactly-once sink needs the asset's name.")
    writer = SplitTransactions(
        sink.topic,
        sink.producer,
        sink.spec.transactional_id_prefix or "",
        asset_name,
        partitioner=sink_partitioner(sink, clients),
        consumer=sink.consumer,
        admin=clients.admin(sink),
        log=log,
    )
    writer.begin()
    return writer


#: Operators of a physical plan that move rows between partitions (a broadcast does not: the
#: streamed side keeps its partitions).
_MOVES_ROWS = ("Exchange", "Union", "Coalesce")


def check_split_plan(encoded: DataFrame) -> None:
    """Refuse output whose partitions are not the source's splits: the split scope commits
    each split's output with its source offsets, so a task must write exactly the rows of the
    split it read (no shuffle, union or coalesce between the read and the write). The Python
    workers must be reused: a prepared transaction outlives its task in its worker.

    Raises:
        KafkaOptionsError: the plan moves rows between partitions (the operator named), or
            Python workers are not reused.
    """
    from .._sessions import is_connect

    reuse = str(encoded.sparkSession.conf.get("spark.python.worker.reuse", "true"))
    if reuse.strip().lower() != "true":
        raise refuse_splits(
            "'spark.python.worker.reuse' is false, so a Python worker ends with its task and "
            "cannot hold the split's prepared transaction until the driver's verdict"
        )
    if is_connect(encoded.sparkSession):
        text = encoded._explain_string(mode="simple")  # type: ignore[operator]
    else:
        text = str(encoded._jdf.queryExecution().executedPlan().toString())
    for line in text.splitlines():
        moved = [op for op in _MOVES_ROWS if op in line and "BroadcastExchange" not in line]
        if moved:
            raise refuse_splits(
                f"its query moves rows between partitions ({line.strip()[:120]!r}), so a "
                f"writing task's rows are not one source split's (joins of two Kafka "
                f"sources, aggregations, repartitioning and upsert-kafka changelogs write with "
                f"one transaction per run)"
            )


def write_splits(
    table: ResolvedTable,
    frame: DataFrame,
    writer: SplitTransactions,
    splits: list[KafkaSplit],
    decide: Callable[[], None],
) -> WriteResult:
    """Serialize ``frame`` (partition ``i`` from split ``i``) and write it with a transaction
    per split; ``decide`` runs once every split is prepared and may raise to abort them all.

    Raises:
        KafkaOptionsError: the output's partitions are not the source's splits.
        DeliveryError: a record was not delivered (nothing committed).
        TransactionError: see :meth:`SplitTransactions.write`.
    """
    encoded = serialize(table.spec, frame)
    if SEQUENCE in encoded.columns:
        raise refuse_splits("an upsert-kafka changelog orders each key's changes over the run")
    check_split_plan(encoded)
    return writer.write(encoded, splits, decide)


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
