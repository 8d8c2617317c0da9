"""Time budgets of the observers: sensor ticks, checks and topic observations.

An observer asks the cluster a few things (metadata, offsets, a consumer group) and must answer
within its budget whatever the cluster does: a sensor tick within Dagster's sensor evaluation
timeout (60 s by default), a check or an observation without holding its run for minutes. Each
request has its timeout, but an evaluation makes several requests and retries some: the
:class:`BudgetedAdmin` of an evaluation cuts each request's timeout to what is left of the
evaluation's deadline, and starts none once it has passed.

It also refuses offsets the cluster did not give. librdkafka answers a ListOffsets request whose
partition leader cannot be reached (killed, paused, being replaced) with offset -1001
(``OFFSET_INVALID``) and no error: read as an offset, it gives negative end offsets and a wrong
lag (a lag check passing on data it could not read). The admin client asks such a partition
again while its request's time lasts; a negative offset that still comes back fails the
request, naming the partitions, and the evaluation reports why.

What one evaluation learns of a cluster is kept for the rest of it (the checks of one asset,
the topics of one observation; :class:`Memo`): a cluster whose metadata request failed is not
asked again (the later requests fail at once with the first one's reason instead of waiting as
long again), and a broker setting is asked once (two checks need the brokers'
``transaction.max.timeout.ms``; a broker that does not answer makes each wait).

A consumer group's committed offsets (where an exactly-once source resumes) are asked through a
consumer of the group, not the admin client's group requests: librdkafka (2.16) aborts the whole
process, an assertion in the enqueue-once object of an admin request sent to a group
coordinator (``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'``, its open
issue 4605), when such a request times out while the coordinator is down, paused or moving,
which would take the code server's sensors or the checks' run with it. A consumer's
``committed()`` goes through the consumer group machinery, answers within its timeout and
retries nothing behind the caller's back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import KafkaClientError, OffsetsError
from .options import client_config
from .run.tables import KafkaClients, ResolvedTable
from .source.admin import NO_ANSWER, KafkaAdmin
from .source.offsets import TopicPartition, describe_partitions

#: librdkafka's offset of a partition whose ListOffsets got no answer (``OFFSET_INVALID``).
NO_OFFSET = NO_ANSWER
#: A request is not started with less time than this left.
_MIN_REQUEST_S = 0.2
_RETRY_PAUSE_S = 0.2

#: A cluster, as :attr:`ResolvedTable.cluster_key` names it.
ClusterKey = tuple[tuple[str, str], ...]


@dataclass
class Memo:
    """What one evaluation has learned of its clusters, for its next requests."""

    #: Clusters whose metadata request failed, and why.
    unreachable: dict[ClusterKey, str] = field(default_factory=dict)
    #: Broker settings asked (cluster, setting name): every broker's value, or why not.
    broker_settings: dict[tuple[ClusterKey, str], list[str] | KafkaClientError] = field(
        default_factory=dict
    )


class BudgetedAdmin(KafkaAdmin):
    """A :class:`KafkaAdmin` whose requests end by ``deadline`` (``time.monotonic()``) and whose
    offsets are ones the cluster gave.

    Each request waits at most ``timeout_s`` and at most what is left until the deadline; none
    starts after it (:class:`~.errors.KafkaClientError` naming the cluster and the budget).
    """

    def __init__(
        self,
        properties: Any,
        group_id: str | None = None,
        *,
        client: Any,
        timeout_s: float,
        deadline: float,
        budget_s: float,
        consumer: Mapping[str, Any] | None = None,
        cluster_key: ClusterKey = (),
        memo: Memo | None = None,
    ) -> None:
        self.deadline = deadline
        self.cluster_key = cluster_key
        self.memo = memo if memo is not None else Memo()
        self.budget_s = budget_s
        self._request_timeout_s = timeout_s
        self.servers = str(dict(properties).get("bootstrap.servers", "?"))
        super().__init__(
            properties,
            group_id,
            client=client,
            timeout_s=timeout_s,
            consumer=consumer or client_config(properties, role="consumer"),
        )

    @property
    def timeout_s(self) -> float:
        """How long the next request may wait: its timeout, cut to what is left of the budget.

        Raises:
            KafkaClientError: the budget is spent.
        """
        left = self.deadline - time.monotonic()
        if left < _MIN_REQUEST_S:
            raise KafkaClientError(
                f"Kafka at {self.servers} did not answer within the {self.budget_s:g} s this "
                f"evaluation may wait (each request at most {self._request_timeout_s:g} s)."
            )
        return min(self._request_timeout_s, left)

    @timeout_s.setter
    def timeout_s(self, value: float) -> None:
        self._request_timeout_s = value

    def metadata(self, topic: str | None = None) -> Any:
        """The cluster's metadata; a failure marks the cluster unreachable for the evaluation.

        Raises:
            KafkaClientError: the cluster did not answer.
        """
        try:
            return super().metadata(topic)
        except KafkaClientError as exc:
            self.memo.unreachable.setdefault(self.cluster_key, str(exc))
            raise

    def broker_config(self, name: str) -> list[str]:
        """Broker setting ``name`` of every broker, asked once in the evaluation.

        Raises:
            KafkaClientError: the brokers did not answer (now or earlier in the evaluation).
        """
        key = (self.cluster_key, name)
        known = self.memo.broker_settings.get(key)
        if known is None:
            try:
                known = super().broker_config(name)
            except KafkaClientError as exc:
                known = exc
            self.memo.broker_settings[key] = known
        if isinstance(known, KafkaClientError):
            raise KafkaClientError(f"{known} (not asked again in this evaluation)", known)
        return list(known)

    def _answered(
        self,
        what: str,
        ask: Callable[[Sequence[TopicPartition]], dict[TopicPartition, int]],
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """``ask(partitions)``, refusing a partition that got no offset (``ask`` has asked it
        again while its time lasted). Not asked once more: the client asks the leader its
        metadata names, which stays the one that did not answer until the cluster has replaced
        it and the client has heard of it; the next evaluation, with a new client, asks again.

        Raises:
            OffsetsError: a partition got no offset (its leader did not answer).
        """
        answer = ask(partitions)
        lost = [tp for tp in dict.fromkeys(partitions) if answer.get(tp, NO_OFFSET) < 0]
        if lost:
            raise OffsetsError(
                f"Kafka at {self.servers} gave no {what} for {describe_partitions(lost)}: the "
                f"leader of each did not answer (it is down, paused or being replaced); the "
                f"next evaluation asks again."
            )
        return answer

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets (see :meth:`KafkaAdmin.beginning_offsets`)."""
        return self._answered("log start offset", super().beginning_offsets, partitions)

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """End offsets (see :meth:`KafkaAdmin.end_offsets`)."""
        return self._answered("end offset", super().end_offsets, partitions)

    def last_stable_offsets(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Last stable offsets (see :meth:`KafkaAdmin.last_stable_offsets`)."""
        return self._answered("last stable offset", super().last_stable_offsets, partitions)

    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermarks (see :meth:`KafkaAdmin.high_watermarks`)."""
        return self._answered("high watermark", super().high_watermarks, partitions)


class BudgetedClients(KafkaClients):
    """The admin clients of one evaluation, over ``clients`` (whose cached clients they share),
    every request of it ending within ``budget_s`` from now.

    ``memo`` keeps what the evaluation learned of its clusters (:class:`Memo`): shared by the
    evaluations of one run (the checks of an asset), a cluster that did not answer one is not
    asked again by the next ones, which fail at once with the same reason, and a broker
    setting is asked once.

    Example:
        >>> tick = BudgetedClients(KafkaClients(timeout_s=10), budget_s=30)
        >>> tick.admin(table).end_offsets([("orders", 0)])  # doctest: +SKIP
        {('orders', 0): 42}
    """

    def __init__(
        self,
        clients: KafkaClients,
        budget_s: float,
        *,
        timeout_s: float | None = None,
        memo: Memo | None = None,
    ) -> None:
        super().__init__(timeout_s=timeout_s if timeout_s is not None else clients.timeout_s)
        self.clients = clients
        self.budget_s = budget_s
        self.deadline = time.monotonic() + budget_s
        self.memo = memo if memo is not None else Memo()

    def admin(self, table: ResolvedTable) -> BudgetedAdmin:
        """A budgeted admin view of ``table`` over its cluster's shared client.

        Raises:
            KafkaClientError: the cluster did not answer earlier in this evaluation.
        """
        reason = self.memo.unreachable.get(table.cluster_key)
        if reason is not None:
            raise KafkaClientError(f"{reason} (not asked again in this evaluation)")
        shared = self.clients.admin(table)
        return BudgetedAdmin(
            table.properties,
            group_id=table.group_id,
            client=shared.client,
            timeout_s=self.timeout_s,
            deadline=self.deadline,
            budget_s=self.budget_s,
            consumer=table.consumer,
            cluster_key=table.cluster_key,
            memo=self.memo,
        )

    def clear(self) -> None:
        """Drop every client of the clients this evaluation shares."""
        self.clients.clear()

    def forget(self, table: ResolvedTable) -> None:
        """Drop the shared client of ``table``'s cluster (see :meth:`KafkaClients.forget`)."""
        self.clients.forget(table)


def servers_of(tables: Sequence[ResolvedTable | None]) -> str:
    """The bootstrap servers of ``tables``' clusters, for a reason a user reads.

    Example:
        >>> servers_of([])
        'the cluster'
    """
    found = list(dict.fromkeys(t.bootstrap_servers for t in tables if t is not None))
    return " and ".join(found) if found else "the cluster"


__all__ = ["NO_OFFSET", "BudgetedAdmin", "BudgetedClients", "Memo", "servers_of"]
