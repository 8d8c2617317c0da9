"""Transactions seen from outside: open (possibly hanging) transactions and timeout settings.

A partition whose last stable offset stays below its high watermark holds an open transaction:
read_committed consumers stop there until it commits or aborts. The first record of the oldest
open transaction sits at the last stable offset, so its timestamp tells how long readers have
been blocked there. A transaction that has just committed holds the offset a moment longer (the
commit returns before its markers are written): :func:`still_open` watches the last stable offset
move before calling a transaction stuck.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..sink.transactional import (
    DEFAULT_TRANSACTION_TIMEOUT_MS,
    MAX_DEFAULT_TRANSACTION_TIMEOUT_MS,
    broker_max_transaction_timeout_ms,
)
from ..source.admin import KafkaAdmin
from ..source.offsets import TopicPartition
from ..source.probe import record_timestamps


@dataclass(frozen=True)
class OpenTransaction:
    """A partition held by an open transaction: last stable offset below the high watermark.

    Example:
        >>> t = OpenTransaction("orders", 0, 10, 14, first_record_ms=1_000)
        >>> t.held_records, t.open_ms(now_ms=61_000)
        (4, 60000)
    """

    topic: str
    partition: int
    last_stable_offset: int
    high_watermark: int
    #: Timestamp of the record at the last stable offset (the open transaction's first record),
    #: None when it could not be fetched.
    first_record_ms: int | None = None

    @property
    def held_records(self) -> int:
        """Offsets read_committed consumers cannot pass yet."""
        return self.high_watermark - self.last_stable_offset

    def open_ms(self, now_ms: int) -> int | None:
        """How long the transaction has been open, by its first record's timestamp."""
        if self.first_record_ms is None:
            return None
        return max(now_ms - self.first_record_ms, 0)


def open_transactions(
    admin: KafkaAdmin,
    partitions: Sequence[TopicPartition],
    consumer_config: Mapping[str, Any],
) -> list[OpenTransaction]:
    """The partitions of ``partitions`` held by an open transaction, with its first record's
    timestamp (two offset requests, then one fetch per held partition).

    Raises:
        KafkaClientError or OffsetsError: the cluster did not answer.
    """
    if not partitions:
        return []
    stable = admin.last_stable_offsets(partitions)
    high = admin.high_watermarks(partitions)
    held = {tp: stable[tp] for tp in partitions if stable[tp] < high[tp]}
    stamps = record_timestamps(consumer_config, held, timeout_s=admin.timeout_s)
    return [
        OpenTransaction(tp[0], tp[1], lso, high[tp], stamps.get(tp))
        for tp, lso in sorted(held.items())
    ]


def still_open(
    admin: KafkaAdmin, held: Sequence[OpenTransaction], *, settle_s: float
) -> list[OpenTransaction]:
    """Those of ``held`` whose last stable offset has not moved within ``settle_s`` (read again
    every 0.2 s until all moved): a transaction that was ending when ``held`` was observed, such
    as a run's own just-committed one, moves it within moments; a stuck one does not.

    Raises:
        KafkaClientError or OffsetsError: the cluster did not answer.
    """
    waiting = {(t.topic, t.partition): t.last_stable_offset for t in held}
    deadline = time.monotonic() + settle_s
    while waiting:
        stable = admin.last_stable_offsets(list(waiting))
        waiting = {tp: lso for tp, lso in waiting.items() if stable[tp] == lso}
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    return [t for t in held if (t.topic, t.partition) in waiting]


@dataclass(frozen=True)
class TransactionTimeouts:
    """A sink producer's ``transaction.timeout.ms`` against the brokers' maximum.

    Example:
        >>> TransactionTimeouts(configured_ms=60_000, broker_max_ms=900_000).effective_ms
        60000
    """

    #: ``properties.transaction.timeout.ms`` of the table, None when unset.
    configured_ms: int | None
    #: The smallest ``transaction.max.timeout.ms`` of the brokers, None when unknown.
    broker_max_ms: int | None

    @property
    def effective_ms(self) -> int:
        """The timeout the sink runs with: the configured one, else the brokers' maximum (at
        most an hour), as the exactly-once writer chooses it."""
        if self.configured_ms is not None:
            return self.configured_ms
        limit = self.broker_max_ms or DEFAULT_TRANSACTION_TIMEOUT_MS
        return min(limit, MAX_DEFAULT_TRANSACTION_TIMEOUT_MS)

    @property
    def exceeds_broker(self) -> bool:
        """Whether the brokers would refuse every transaction of the producer."""
        return (
            self.configured_ms is not None
            and self.broker_max_ms is not None
            and self.configured_ms > self.broker_max_ms
        )


def transaction_timeouts(producer: Mapping[str, Any], admin: KafkaAdmin) -> TransactionTimeouts:
    """The sink's configured timeout (from its producer settings) and the brokers' maximum.

    Raises:
        KafkaClientError: the brokers did not answer.
    """
    configured = producer.get("transaction.timeout.ms")
    return TransactionTimeouts(
        int(configured) if configured is not None else None,
        broker_max_transaction_timeout_ms(admin),
    )
