"""Asset checks for Kafka tables: dirty data, transaction timeout, hanging transactions, lag.

Each check is a small configuration object (thresholds, severity, ``blocking``) validated when it
is built, so a bad threshold fails at definition load naming the parameter. Attach checks to a
streaming asset with ``@kafka_streaming_asset(checks=[...])``: the run emits their results with
the materialization (it knows the figures), and each can also run alone, without a
materialization (select only the check, e.g. ``AssetSelection.checks_for_assets(asset)`` in a
scheduled job). For assets built otherwise (an IO-manager asset, an external topic),
:func:`build_kafka_asset_checks` makes standalone checks over the same evaluations.

A check that cannot reach the cluster fails with the reason, naming the bootstrap servers; it
never raises into the run or the daemon. Each check's Kafka requests end within
:data:`CHECK_BUDGET_S` whatever the cluster does (down, paused, electing a leader), and a cluster
that did not answer one check of an evaluation is not asked again by the next ones: they fail at
once with the same reason (and the brokers' settings are asked once for all the checks).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    AssetsDefinition,
    MetadataValue,
    multi_asset_check,
)

from ._budget import BudgetedClients, Memo, servers_of
from .errors import BlockingCheckError, KafkaOptionsError
from .history import (
    checkpoint_of,
    last_materialization_metadata,
    metadata_value,
    recorded_windows,
)
from .options import KafkaTableSpec
from .run import metrics as m
from .run.lag import source_lag
from .run.transactions import (
    OpenTransaction,
    open_transactions,
    still_open,
    transaction_timeouts,
)
from .run.windows import window_ranges
from .run.write import is_exactly_once
from .state.checkpoint import OffsetsCheckpoint

if TYPE_CHECKING:  # pragma: no cover
    from dagster import DagsterInstance

    from .run import KafkaClients, ResolvedTable, StreamingRun

#: How long one Kafka request of a check may take, retries included.
CHECK_TIMEOUT_S = 15.0
#: How long all the Kafka requests of one check may take together: a check that has not heard
#: from the cluster by then fails, saying so.
CHECK_BUDGET_S = 30.0
#: Broker setting that bounds every producer's transaction timeout.
BROKER_MAX_TIMEOUT = "transaction.max.timeout.ms"


def _invalid(check: str, parameter: str, why: str) -> KafkaOptionsError:
    return KafkaOptionsError(f"{check}: parameter '{parameter}' {why}.", keys=(parameter,))


def _non_negative(check: str, parameter: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise _invalid(check, parameter, f"must be a number >= 0, got {value!r}")


def _whole(check: str, parameter: str, value: int | None, minimum: int) -> None:
    if value is not None and (not isinstance(value, int) or value < minimum):
        raise _invalid(check, parameter, f"must be an int >= {minimum}, got {value!r}")


def _ratio(check: str, parameter: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and 0 <= value <= 1):
        raise _invalid(check, parameter, f"must be a ratio between 0 and 1, got {value!r}")


def _duration_ms(check: str, parameter: str, value: timedelta | None) -> int | None:
    if value is None:
        return None
    if not isinstance(value, timedelta) or value.total_seconds() <= 0:
        raise _invalid(check, parameter, f"must be a positive timedelta, got {value!r}")
    return int(value.total_seconds() * 1000)


def _severity(check: str, value: Any) -> AssetCheckSeverity:
    if isinstance(value, AssetCheckSeverity):
        return value
    if isinstance(value, str) and value.upper() in ("WARN", "ERROR"):
        return AssetCheckSeverity(value.upper())
    raise _invalid(check, "severity", f"must be 'WARN' or 'ERROR', got {value!r}")


@dataclass
class CheckScope:
    """What a check evaluates: the asset's Kafka tables and, when run with a materialization,
    the run that just finished; otherwise the asset's last materialization."""

    asset_key: AssetKey
    sources: Mapping[str, ResolvedTable]
    sink: ResolvedTable | None
    clients: KafkaClients
    #: Where the sources resume (this run's new checkpoint, or the last one).
    checkpoint: OffsetsCheckpoint | None
    #: The run that just materialized the asset, when the check runs with it.
    run: StreamingRun | None = None
    #: Metadata of the asset's last materialization, when the check runs alone.
    last_metadata: Mapping[str, Any] = field(default_factory=dict)
    #: The streaming asset's tables and partitioning (``StreamingTables``), when known.
    tables: Any = None
    #: The Dagster instance (materialization history), when known.
    instance: Any = None
    #: What the checks of this scope learned of its clusters (those that did not answer, the
    #: brokers' settings), so the next checks do not wait for the same thing again.
    memo: Memo = field(default_factory=Memo)

    @property
    def exactly_once(self) -> bool:
        """Whether the sink commits the source offsets in its transaction."""
        return is_exactly_once(self.sink)

    @property
    def servers(self) -> str:
        """The bootstrap servers of the scope's tables."""
        return servers_of([self.sink, *self.sources.values()])

    def budgeted(self) -> CheckScope:
        """This scope with clients whose requests end within :data:`CHECK_BUDGET_S` from now
        (one check's evaluation)."""
        clients = BudgetedClients(
            self.clients,
            CHECK_BUDGET_S,
            timeout_s=min(CHECK_TIMEOUT_S, self.clients.timeout_s),
            memo=self.memo,
        )
        return replace(self, clients=clients)


@dataclass(frozen=True)
class KafkaAssetCheck:
    """Base of the Kafka asset checks: a name, a severity on failure and ``blocking``."""

    #: The check's name on the asset (unique per asset).
    name: str = ""
    #: Severity of a failed result (``WARN`` or ``ERROR``).
    severity: AssetCheckSeverity | str = AssetCheckSeverity.ERROR
    #: With ``ERROR`` severity, a failure stops downstream assets of the same run; for a check
    #: decided before the commit (``before_commit``), it also fails the run, which then
    #: commits nothing.
    blocking: bool = False
    description: ClassVar[str] = ""
    #: The run knows this check's figures before it commits (they come from reading and
    #: writing), so it is decided between the write and the commit. A subclass of your own
    #: that judges only ``scope.run`` may set it too.
    before_commit: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", _severity(type(self).__name__, self.severity))
        if not self.name:
            object.__setattr__(self, "name", self.default_name)

    @property
    def default_name(self) -> str:
        """The check's name when none is given."""
        raise NotImplementedError

    def spec(self, asset_key: AssetKey) -> AssetCheckSpec:
        """The Dagster check spec of this check on ``asset_key``."""
        return AssetCheckSpec(
            self.name, asset=asset_key, description=self.description, blocking=self.blocking
        )

    def evaluate(self, scope: CheckScope) -> AssetCheckResult:
        """The check's result for ``scope``, its Kafka requests within :data:`CHECK_BUDGET_S`;
        any failure to evaluate is a failed result naming the cluster."""
        try:
            return self._evaluate(scope.budgeted())
        except Exception as exc:  # a check never raises into the run or the daemon
            return self.failed(exc, scope.asset_key, servers=scope.servers)

    def failed(
        self, exc: BaseException, asset_key: AssetKey | None = None, *, servers: str | None = None
    ) -> AssetCheckResult:
        """A failed result saying why the check could not be evaluated (against the Kafka
        cluster at ``servers``, when known)."""
        where = f" against Kafka at {servers}" if servers else ""
        metadata: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}"}
        if servers:
            metadata["bootstrapServers"] = servers
        return AssetCheckResult(
            asset_key=asset_key,
            check_name=self.name,
            passed=False,
            severity=self.severity,  # type: ignore[arg-type]
            description=f"The check could not be evaluated{where}: {exc}",
            metadata=metadata,
        )

    def _evaluate(self, scope: CheckScope) -> AssetCheckResult:
        raise NotImplementedError

    def _verdict(
        self,
        scope: CheckScope,
        failures: Sequence[str],
        metadata: Mapping[str, Any],
        *,
        failed: str,
        passed: str,
    ) -> AssetCheckResult:
        """Failed (``failed`` with the failures joined in for ``{}``) if any, else passed."""
        if failures:
            text = failed.format("; ".join(failures))
            return self._result(scope, passed=False, description=text, metadata=metadata)
        return self._result(scope, passed=True, description=passed, metadata=metadata)

    def _result(
        self,
        scope: CheckScope,
        *,
        passed: bool,
        description: str,
        metadata: Mapping[str, Any],
        severity: AssetCheckSeverity | None = None,
    ) -> AssetCheckResult:
        return AssetCheckResult(
            asset_key=scope.asset_key,
            check_name=self.name,
            passed=passed,
            severity=severity or self.severity,  # type: ignore[arg-type]
            description=description,
            metadata=dict(metadata),
        )


@dataclass(frozen=True)
class DirtyDataCheck(KafkaAssetCheck):
    """Dirty records of the run's sources vs a maximum count and ratio.

    The count limit defaults to each source's ``ingestion.error-tolerance.max-count`` (a run
    above it fails already, as in Flink); ``max_ratio`` adds a limit on the share of dirty
    records. The result lists, per source, the dirty count and ratio, samples of the dirty
    records (topic, partition, offset, error, the start of the value), and the dead-letter
    topic with its end offsets after the run's dead letters. Make it ``blocking`` so
    downstream assets do not run on dirty input.

    Example:
        >>> DirtyDataCheck(max_ratio=0.01, blocking=True).name
        'kafka_dirty_data'
    """

    max_count: int | None = None
    max_ratio: float | None = None
    description: ClassVar[str] = (
        "Records of the Kafka sources that could not be decoded, against a maximum count and ratio."
    )
    before_commit: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _whole("DirtyDataCheck", "max_count", self.max_count, 0)
        _ratio("DirtyDataCheck", "max_ratio", self.max_ratio)

    @property
    def default_name(self) -> str:
        return "kafka_dirty_data"

    def _evaluate(self, scope: CheckScope) -> AssetCheckResult:
        figures: dict[str, dict[str, Any]] = {}
        samples: list[Any] = []
        if scope.run is not None:
            for name, read in scope.run.sources.items():
                figures[name] = {
                    "records": read.dirty.records,
                    "dirty": read.dirty.dirty,
                    "dead_letter_topic": read.dirty.dead_letter_topic,
                    "max_count": read.table.spec.error_tolerance_max_count,
                }
                if read.dirty.dirty and read.dirty.dead_letter_topic:
                    figures[name]["dead_letter_end_offsets"] = _end_offsets(
                        scope.clients.admin(read.table), read.dirty.dead_letter_topic
                    )
                samples.extend(read.dirty.samples)
        else:
            last = scope.last_metadata
            if m.NUM_RECORDS_IN.name not in last:
                return self._result(
                    scope,
                    passed=True,
                    description="No materialization with Kafka figures yet: nothing to check.",
                    metadata={},
                )
            limits = [t.spec.error_tolerance_max_count for t in scope.sources.values()]
            figures["all sources"] = {
                "records": int(metadata_value(last[m.NUM_RECORDS_IN.name])),
                "dirty": int(metadata_value(last.get(m.DIRTY_RECORDS.name, 0))),
                "dead_letter_topic": None,
                "max_count": min((x for x in limits if x >= 0), default=-1),
            }
            samples.extend(metadata_value(last.get(m.DIRTY_SAMPLES)) or [])
        failures: list[str] = []
        for name, f in figures.items():
            ratio = f["dirty"] / f["records"] if f["records"] else 0.0
            f["ratio"] = round(ratio, 6)
            limit = self.max_count if self.max_count is not None else f["max_count"]
            if limit is not None and limit >= 0 and f["dirty"] > limit:
                failures.append(f"{name}: {f['dirty']} dirty record(s) > max_count {limit}")
            if self.max_ratio is not None and ratio > self.max_ratio:
                failures.append(f"{name}: dirty ratio {ratio:.4g} > max_ratio {self.max_ratio}")
        dirty = sum(f["dirty"] for f in figures.values())
        records = sum(f["records"] for f in figures.values())
        metadata: dict[str, Any] = {
            m.DIRTY_RECORDS.name: dirty,
            m.NUM_RECORDS_IN.name: records,
            m.DIRTY_RATIO.name: round(dirty / records, 6) if records else 0.0,
            "sources": MetadataValue.json(figures),
        }
        if self.max_count is not None:
            metadata["max_count"] = self.max_count
        if self.max_ratio is not None:
            metadata["max_ratio"] = self.max_ratio
        if samples:
            metadata[m.DIRTY_SAMPLES] = MetadataValue.json(samples)
        letters = sorted(
            {f["dead_letter_topic"] for f in figures.values() if f["dead_letter_topic"]}
        )
        if letters:
            metadata["deadLetterTopics"] = ", ".join(letters)
        return self._verdict(
            scope,
            failures,
            metadata,
            failed="Too much dirty data: {}. See the samples; fix the producer or the declared "
            "schema, then re-run the affected offsets.",
            passed=f"{dirty} dirty record(s) of {records} read, within the limits.",
        )


@dataclass(frozen=True)
class TransactionTimeoutCheck(KafkaAssetCheck):
    """An exactly-once sink's transaction timeout against the brokers' and the run's duration.

    Fails (ERROR) when the producer's ``transaction.timeout.ms`` exceeds the smallest
    ``transaction.max.timeout.ms`` of the brokers (every transaction would be refused); warns
    when the run's transaction took more than ``warn_ratio`` of the timeout and fails above
    ``fail_ratio`` (a larger run would be aborted by the broker). Alone, it checks the
    configuration against the brokers and the last run's duration.

    Example:
        >>> TransactionTimeoutCheck(warn_ratio=0.4).fail_ratio
        0.9
    """

    warn_ratio: float = 0.5
    fail_ratio: float = 0.9
    description: ClassVar[str] = (
        "The exactly-once sink's transaction.timeout.ms against the brokers' "
        "transaction.max.timeout.ms and the run's transaction duration."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _ratio("TransactionTimeoutCheck", "warn_ratio", self.warn_ratio)
        _ratio("TransactionTimeoutCheck", "fail_ratio", self.fail_ratio)
        if self.warn_ratio >= self.fail_ratio:
            raise _invalid(
                "TransactionTimeoutCheck",
                "warn_ratio",
                f"must be below fail_ratio ({self.fail_ratio}), got {self.warn_ratio}",
            )

    @property
    def default_name(self) -> str:
        return "kafka_transaction_timeout"

    def _evaluate(self, scope: CheckScope) -> AssetCheckResult:
        sink = scope.sink
        if sink is None or not scope.exactly_once:
            return self._result(
                scope,
                passed=True,
                description="The sink is not exactly-once: no transactions to check.",
                metadata={},
            )
        timeouts = transaction_timeouts(sink.producer, scope.clients.admin(sink))
        metadata: dict[str, Any] = {
            m.TRANSACTION_TIMEOUT.name: timeouts.effective_ms,
            BROKER_MAX_TIMEOUT: timeouts.broker_max_ms,
        }
        if timeouts.exceeds_broker:
            return self._result(
                scope,
                passed=False,
                severity=AssetCheckSeverity.ERROR,
                description=(
                    f"'properties.transaction.timeout.ms' = {timeouts.configured_ms} exceeds the "
                    f"brokers' '{BROKER_MAX_TIMEOUT}' = {timeouts.broker_max_ms}: every "
                    f"transaction of the sink would be refused. Lower the table's timeout or "
                    f"raise the broker setting."
                ),
                metadata=metadata,
            )
        duration = None
        if scope.run is not None and scope.run.write_result is not None:
            duration = getattr(scope.run.write_result, "transaction_ms", None)
        elif m.TRANSACTION_DURATION.name in scope.last_metadata:
            duration = float(metadata_value(scope.last_metadata[m.TRANSACTION_DURATION.name]))
        if duration is None:
            return self._result(
                scope,
                passed=True,
                description=f"Timeout {timeouts.effective_ms} ms is within the brokers' maximum; "
                f"no transaction measured yet.",
                metadata=metadata,
            )
        share = duration / timeouts.effective_ms
        metadata.update({m.TRANSACTION_DURATION.name: duration, "timeoutShare": round(share, 4)})
        advice = (
            f"The transaction took {duration:.0f} ms, {share:.1%} of the {timeouts.effective_ms} "
            f"ms timeout"
        )
        if share > self.fail_ratio:
            return self._result(
                scope,
                passed=False,
                severity=AssetCheckSeverity.ERROR,
                description=f"{advice} (> {self.fail_ratio:.0%}): a larger run would be aborted "
                f"by the broker. Raise 'properties.transaction.timeout.ms' (up to the brokers' "
                f"'{BROKER_MAX_TIMEOUT}') or read less per run.",
                metadata=metadata,
            )
        if share > self.warn_ratio:
            return self._result(
                scope,
                passed=False,
                severity=AssetCheckSeverity.WARN,
                description=f"{advice} (> {self.warn_ratio:.0%}).",
                metadata=metadata,
            )
        return self._result(scope, passed=True, description=f"{advice}.", metadata=metadata)


@dataclass(frozen=True)
class HangingTransactionsCheck(KafkaAssetCheck):
    """Partitions where an open transaction has blocked read_committed readers too long.

    Looks at the sink topic and at every source read ``read_committed``: a partition whose last
    stable offset stays below its high watermark stops read_committed consumers there until the
    transaction that holds it commits or aborts. Readers have been blocked since that
    transaction's first record (the record at the last stable offset) was written. A partition
    blocked longer than ``max_open`` whose last stable offset has not moved when read again
    fails the check, with the partition, both offsets, how long, and the command that aborts
    the transaction. With the materialization, such a partition is watched up to
    :data:`SETTLE_S` first: the run's own transaction has committed, but its markers may still
    be on their way to the sink's partitions.

    Without ``max_open``: :data:`DEFAULT_MAX_BLOCKED` (2 minutes) on the sink, whose
    transactions are the asset's runs' and last seconds, so a run killed inside its
    transaction is reported within minutes instead of when the broker aborts it (after the
    producer's ``transaction.timeout.ms``, 15 minutes by default); on sources, whose
    producers may hold transactions as long as their timeout (a Flink job's last a checkpoint
    interval), the brokers' ``transaction.max.timeout.ms``. Raise ``max_open`` above the
    longest transaction of a sink whose runs produce for longer.

    Example:
        >>> HangingTransactionsCheck(max_open=timedelta(minutes=5)).name
        'kafka_hanging_transactions'
    """

    max_open: timedelta | None = None
    description: ClassVar[str] = (
        "Partitions of the sink and read_committed sources where an open transaction has held "
        "the last stable offset below the high watermark too long (read_committed readers are "
        "blocked there)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _duration_ms("HangingTransactionsCheck", "max_open", self.max_open)

    @property
    def default_name(self) -> str:
        return "kafka_hanging_transactions"

    def _tables(self, scope: CheckScope) -> list[tuple[ResolvedTable, bool]]:
        tables: list[tuple[ResolvedTable, bool]] = []
        if scope.sink is not None:
            tables.append((scope.sink, True))
        for table in scope.sources.values():
            if table.consumer.get("isolation.level", "read_committed") == "read_committed":
                tables.append((table, False))
        return tables

    def _evaluate(self, scope: CheckScope) -> AssetCheckResult:
        now = int(time.time() * 1000)
        explicit = _duration_ms(self.name, "max_open", self.max_open)
        hanging: list[dict[str, Any]] = []
        open_ones: list[dict[str, Any]] = []
        commands: list[str] = []
        seen: set[tuple[str, int]] = set()
        broker_max: int | None = None
        sink_timeout: int | None = None
        for table, is_sink in self._tables(scope):
            admin = scope.clients.admin(table)
            timeouts = transaction_timeouts(table.producer, admin)
            broker_max = timeouts.broker_max_ms
            if is_sink:
                sink_timeout = timeouts.effective_ms
            limit = explicit
            if limit is None:
                default = _duration_ms(self.name, "max_open", DEFAULT_MAX_BLOCKED)
                limit = default if is_sink else timeouts.broker_max_ms
            partitions = [tp for tp in _table_partitions(table, admin) if tp not in seen]
            seen.update(partitions)
            held = open_transactions(admin, partitions, table.consumer)
            rows = {(t.topic, t.partition): _open_row(t, now, limit) for t in held}
            open_ones.extend(rows.values())
            over = [t for t in held if _blocked_too_long(rows[(t.topic, t.partition)])]
            settle = SETTLE_S if scope.run is not None else 0.0
            for txn in still_open(admin, over, settle_s=settle):
                hanging.append(rows[(txn.topic, txn.partition)])
                commands.append(_abort_command(table, txn))
        metadata: dict[str, Any] = {
            "openTransactions": len(open_ones),
            "hangingTransactions": len(hanging),
            "partitions": MetadataValue.json(open_ones),
        }
        if hanging:
            metadata["abortCommands"] = MetadataValue.json(commands)
            return self._result(
                scope,
                passed=False,
                description=_hanging_text(hanging, commands, sink_timeout, broker_max),
                metadata=metadata,
            )
        return self._result(
            scope,
            passed=True,
            description=f"{len(open_ones)} open transaction(s); none has blocked read_committed "
            f"readers beyond its limit.",
            metadata=metadata,
        )


#: How long read_committed readers of the sink may be blocked by an open transaction before
#: :class:`HangingTransactionsCheck` fails, unless ``max_open`` says otherwise.
DEFAULT_MAX_BLOCKED = timedelta(minutes=2)
#: How long :class:`HangingTransactionsCheck`, run with the materialization, watches a partition
#: blocked too long for its last stable offset to move (the run's just-committed transaction)
#: before reporting it.
SETTLE_S = 3.0
#: Abort commands quoted in a failed result's text (all are in its metadata).
_COMMANDS_SHOWN = 5


def _open_row(txn: OpenTransaction, now_ms: int, limit_ms: int | None) -> dict[str, Any]:
    return {
        "topic": txn.topic,
        "partition": txn.partition,
        "lastStableOffset": txn.last_stable_offset,
        "highWatermark": txn.high_watermark,
        "openMs": txn.open_ms(now_ms),
        "limitMs": limit_ms,
    }


def _blocked_too_long(row: Mapping[str, Any]) -> bool:
    return (
        row["openMs"] is not None and row["limitMs"] is not None and row["openMs"] > row["limitMs"]
    )


def _abort_command(table: ResolvedTable, txn: OpenTransaction) -> str:
    """``kafka-transactions.sh``'s abort of the transaction holding ``txn``'s partition."""
    secured = table.properties.get("security.protocol", "PLAINTEXT").upper() != "PLAINTEXT"
    return (
        f"kafka-transactions.sh --bootstrap-server {table.bootstrap_servers}"
        + (" --command-config <client.properties>" if secured else "")
        + f" abort --topic {txn.topic} --partition {txn.partition} "
        f"--start-offset {txn.last_stable_offset}"
    )


def _span(ms: int) -> str:
    """``ms`` as ``1h02m03s``, ``2m05s`` or ``7s``."""
    seconds = ms // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _hanging_text(
    hanging: Sequence[Mapping[str, Any]],
    commands: Sequence[str],
    sink_timeout_ms: int | None,
    broker_max_ms: int | None,
) -> str:
    """What a failed :class:`HangingTransactionsCheck` says: where, how long, what to do."""
    where = "; ".join(
        f"{h['topic']}-{h['partition']}: blocked for {_span(h['openMs'])} (limit "
        f"{_span(h['limitMs'])}) at last stable offset {h['lastStableOffset']}, high watermark "
        f"{h['highWatermark']} ({h['highWatermark'] - h['lastStableOffset']} offset(s) held)"
        for h in hanging
    )
    shown = "; ".join(f"`{c}`" for c in commands[:_COMMANDS_SHOWN])
    more = (
        f" (and {len(commands) - _COMMANDS_SHOWN} more in the metadata)"
        if len(commands) > _COMMANDS_SHOWN
        else ""
    )
    limits = []
    if sink_timeout_ms is not None:
        limits.append(f"the sink's producers use {sink_timeout_ms} ms")
    if broker_max_ms is not None:
        limits.append(f"at most the brokers' '{BROKER_MAX_TIMEOUT}' = {broker_max_ms} ms")
    return (
        f"Read_committed readers are blocked by open transaction(s) that did not end: {where}. "
        f"If the producer is gone (a killed run), abort its transaction: {shown}{more}. "
        f"Otherwise the broker aborts it itself once its producer's 'transaction.timeout.ms' "
        f"has passed since it began" + (f" ({'; '.join(limits)})." if limits else ".")
    )


def _end_offsets(admin: Any, topic: str) -> dict[str, int]:
    """The end offsets of ``topic``'s partitions (where the run's dead letters end)."""
    partitions = [(topic, p) for p in range(admin.discover([topic]).get(topic, 0))]
    return {f"{t}-{p}": o for (t, p), o in sorted(admin.high_watermarks(partitions).items())}


def _table_partitions(table: ResolvedTable, admin: Any) -> list[tuple[str, int]]:
    found = admin.discover(table.spec.topics, table.spec.topic_pattern)
    return [(topic, p) for topic, count in found.items() for p in range(count)]


@dataclass(frozen=True)
class ConsumerLagCheck(KafkaAssetCheck):
    """Records the streaming asset has not read yet, and how old the oldest of them is.

    Pending records are planned exactly as the next run would plan them: from the checkpoint
    (under exactly-once, the consumer group's committed offsets) to the end of the log. The
    oldest pending record's age comes from its timestamp (one fetch per partition with records
    pending). Run it alone on a schedule to watch freshness between runs.

    Example:
        >>> ConsumerLagCheck(max_pending_records=10_000, severity="WARN").name
        'kafka_consumer_lag'
    """

    max_pending_records: int | None = None
    max_pending_age: timedelta | None = None
    description: ClassVar[str] = (
        "Records of the Kafka sources not read yet (pending records) and the age of the oldest."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _non_negative("ConsumerLagCheck", "max_pending_records", self.max_pending_records)
        _duration_ms("ConsumerLagCheck", "max_pending_age", self.max_pending_age)
        if self.max_pending_records is None and self.max_pending_age is None:
            raise _invalid(
                "ConsumerLagCheck",
                "max_pending_records",
                "or 'max_pending_age' must be given (a lag check needs a threshold)",
            )

    @property
    def default_name(self) -> str:
        return "kafka_consumer_lag"

    def _evaluate(self, scope: CheckScope) -> AssetCheckResult:
        now = int(time.time() * 1000)
        age_limit = _duration_ms(self.name, "max_pending_age", self.max_pending_age)
        per_partition: dict[str, Any] = {}
        total = 0
        oldest: int | None = None
        for name, table in scope.sources.items():
            lag = source_lag(
                table,
                scope.clients.admin(table),
                scope.checkpoint,
                exactly_once=scope.exactly_once,
                probe_ages=age_limit is not None,
            )
            total += lag.total
            age = lag.oldest_age_ms(now)
            if age is not None:
                oldest = age if oldest is None else max(oldest, age)
            for tp, pending in lag.pending.items():
                per_partition[f"{name}/{tp[0]}-{tp[1]}"] = pending
        metadata: dict[str, Any] = {
            m.PENDING_RECORDS.name: total,
            m.OFFSETS: MetadataValue.json(per_partition),
        }
        if oldest is not None:
            metadata[m.OLDEST_PENDING_AGE.name] = oldest
        failures = []
        if self.max_pending_records is not None and total > self.max_pending_records:
            failures.append(
                f"{total} pending record(s) > max_pending_records {self.max_pending_records}"
            )
        if age_limit is not None and oldest is not None and oldest > age_limit:
            failures.append(
                f"the oldest pending record is {oldest / 1000:.0f}s old > "
                f"max_pending_age {age_limit / 1000:.0f}s"
            )
        return self._verdict(
            scope,
            failures,
            metadata,
            failed="Kafka sources lag: {}. Materialize the asset (or raise its schedule's "
            "frequency).",
            passed=f"{total} pending record(s), within the limits.",
        )


@dataclass(frozen=True)
class LateDataCheck(KafkaAssetCheck):
    """Windows of a time-partitioned streaming asset that got records after they were read.

    For each of the last ``windows`` materialized windows, the window's offset range is planned
    again (offsets-for-times of its start, and of its end plus the allowed lateness) and
    compared with the range its materialization recorded: a range that has grown holds records
    that arrived after the window was read (it was still open, or they came within the allowed
    lateness). The result names the windows to re-run and how many offsets each gained. It also
    reports the records those windows counted late (``lateRecords``: they arrived after their
    own window's lateness, so they are in no window, and re-running does not bring them back).

    Example:
        >>> LateDataCheck(windows=48, severity="WARN").name
        'kafka_late_data'
    """

    windows: int = 24
    description: ClassVar[str] = (
        "Time windows whose offset range grew after they were materialized (records arrived "
        "late): the partitions to re-run."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _whole("LateDataCheck", "windows", self.windows, 1)

    @property
    def default_name(self) -> str:
        return "kafka_late_data"

    def _evaluate(self, scope: CheckScope) -> AssetCheckResult:
        tables = scope.tables
        if tables is None or tables.partitions_def is None or scope.instance is None:
            return self._result(
                scope,
                passed=True,
                description="The asset is not partitioned by time windows: nothing to check.",
                metadata={},
            )
        recorded = recorded_windows(scope.instance, scope.asset_key, self.windows)
        grown: dict[str, int] = {}
        late = {k: n for k, (_, n) in recorded.items() if n}
        for partition_key, (ranges, _) in recorded.items():
            window = tables.window(partition_key)
            gained = 0
            for name, table in scope.sources.items():
                admin = scope.clients.admin(table)
                mine = {k: v for k, v in ranges.items() if k.startswith(f"{name}/")}
                parts = [_split_partition(k[len(name) + 1 :]) for k in mine]
                ends = admin.end_offsets(parts)
                now = window_ranges(admin, parts, {partition_key: window}, ends)[partition_key]
                for k, (_start, stop) in mine.items():
                    gained += max(now[_split_partition(k[len(name) + 1 :])][1] - stop, 0)
            if gained:
                grown[partition_key] = gained
        metadata: dict[str, Any] = {
            "windowsChecked": len(recorded),
            "windowsToRerun": MetadataValue.json(sorted(grown)),
            "offsetsGained": MetadataValue.json(grown),
            m.LATE_RECORDS.name: sum(late.values()),
            "lateRecordsByWindow": MetadataValue.json(late),
        }
        beyond = (
            f" {sum(late.values())} record(s) arrived after their window's allowed lateness "
            f"(counted by {', '.join(sorted(late))}): they are in no window, and re-running "
            f"does not bring them back."
            if late
            else ""
        )
        if grown:
            return self._result(
                scope,
                passed=False,
                description=f"{len(grown)} window(s) got records after they were read: "
                f"{', '.join(sorted(grown))}. Re-materialize those partitions (a backfill over "
                f"them).{beyond}",
                metadata=metadata,
            )
        return self._result(
            scope,
            passed=True,
            description=f"None of the last {len(recorded)} window(s) got records since read."
            f"{beyond}",
            metadata=metadata,
        )


def _split_partition(text: str) -> tuple[str, int]:
    topic, _, partition = text.rpartition("-")
    return topic, int(partition)


def default_checks(
    sources: Mapping[str, KafkaTableSpec], sink: KafkaTableSpec | None
) -> list[KafkaAssetCheck]:
    """The checks a streaming asset gets when it names none: dirty data where a source
    tolerates dirty records, transaction timeout and hanging transactions for an exactly-once
    sink."""
    checks: list[KafkaAssetCheck] = []
    tolerant = any(
        spec.ignore_errors
        or spec.value_format.ignore_parse_errors
        or (spec.key_format is not None and spec.key_format.ignore_parse_errors)
        for spec in sources.values()
    )
    if tolerant:
        checks.append(DirtyDataCheck())
    if sink is not None and sink.delivery_guarantee.value == "exactly-once":
        checks += [TransactionTimeoutCheck(), HangingTransactionsCheck()]
    return checks


def check_names_are_unique(checks: Sequence[KafkaAssetCheck], asset: str) -> None:
    """Refuse two checks of one name on an asset (Dagster keys checks by asset and name)."""
    names = [c.name for c in checks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise KafkaOptionsError(
            f"Asset {asset!r} has more than one check named {', '.join(twice)}; give each check "
            f"a distinct 'name'.",
            keys=("checks",),
        )


def selected_checks(
    context: Any, key: AssetKey, checks: Sequence[KafkaAssetCheck]
) -> list[KafkaAssetCheck]:
    """The ``checks`` of asset ``key`` that the run of ``context`` selected, in key order (a
    run may select some of an asset's checks, or none)."""
    by_key = {AssetCheckKey(key, c.name): c for c in checks}
    return [by_key[k] for k in sorted(context.selected_asset_check_keys, key=str)]


def build_kafka_asset_checks(
    asset: AssetKey | str | Sequence[str] | AssetsDefinition,
    checks: Sequence[KafkaAssetCheck],
    *,
    sources: Mapping[str, KafkaTableSpec] | None = None,
    sink: KafkaTableSpec | None = None,
    kafka_resource_key: str = "kafka",
    name: str | None = None,
) -> list[Any]:
    """Standalone checks of ``asset`` over its Kafka tables, evaluated without a run.

    For assets not built by ``@kafka_streaming_asset`` (those take ``checks=`` instead): an
    asset written to a Kafka ``sink`` through ``KafkaIOManager``, or the consumer lag of
    ``sources`` that a job of yours reads. Figures a run would know (dirty records, the
    transaction's duration) come from the asset's last materialization.

    Example:
        >>> checks = build_kafka_asset_checks(  # doctest: +SKIP
        ...     "revenue", [HangingTransactionsCheck()], sink=revenue_table)
        >>> Definitions(assets=[...], asset_checks=checks)  # doctest: +SKIP

    Raises:
        KafkaOptionsError: two checks share a name, or no table is given.
    """
    from .run import KafkaClients

    key = asset.key if isinstance(asset, AssetsDefinition) else AssetKey.from_coercible(asset)
    sources = dict(sources or {})
    if not sources and sink is None:
        raise KafkaOptionsError(
            "build_kafka_asset_checks needs the asset's Kafka 'sources' or 'sink' table.",
            keys=("sources", "sink"),
        )
    check_names_are_unique(checks, key.to_user_string())

    @multi_asset_check(
        specs=[c.spec(key) for c in checks],
        name=name or f"{key.to_python_identifier()}_kafka_checks",
        can_subset=True,
        required_resource_keys={kafka_resource_key},
    )
    def _kafka_checks(context):  # type: ignore[no-untyped-def]
        # (unannotated: Dagster checks the annotation's object, and annotations are strings)
        kafka = getattr(context.resources, kafka_resource_key)
        yield from evaluate_checks(
            selected_checks(context, key, checks),
            key,
            lambda: CheckScope(
                asset_key=key,
                sources={n: kafka.resolve(s, n) for n, s in sources.items()},
                sink=kafka.resolve(sink, key.to_user_string()) if sink is not None else None,
                clients=KafkaClients(timeout_s=CHECK_TIMEOUT_S),
                checkpoint=None,
            ),
            context.instance,
        )

    return [_kafka_checks]


class CommitGate:
    """The checks of an asset decided before its run commits: those whose figures the run
    knows (``before_commit``, e.g. :class:`DirtyDataCheck`).

    A :class:`~.run.StreamingRun` calls it once every source is read and counted and before
    anything commits. A failing blocking check (``blocking=True``, severity ``ERROR``) raises
    :class:`~.errors.BlockingCheckError`: an exactly-once transaction is aborted, an
    at-least-once run keeps its checkpoint and group offsets, and the run fails. ``results``
    holds what it decided, for the driver to emit with the materialization (or before the
    failure); ``after_commit`` are the checks left to evaluate once the run has committed.

    Example:
        >>> gate = CommitGate([DirtyDataCheck(blocking=True)], AssetKey("a"), make_scope=None)
        >>> [c.name for c in gate.checks], gate.after_commit
        (['kafka_dirty_data'], [])
    """

    def __init__(
        self,
        checks: Sequence[KafkaAssetCheck],
        asset_key: AssetKey,
        make_scope: Callable[[StreamingRun], CheckScope] | None,
    ) -> None:
        self.checks = [c for c in checks if c.before_commit]
        self.after_commit = [c for c in checks if not c.before_commit]
        self.asset_key = asset_key
        self.make_scope = make_scope
        self.results: list[AssetCheckResult] = []

    def __call__(self, run: StreamingRun) -> None:
        """Evaluate the checks over ``run``; raise if a blocking one failed.

        Raises:
            BlockingCheckError: a blocking check failed with severity ERROR.
        """
        make_scope = self.make_scope
        assert make_scope is not None, "a gate needs a scope to decide on"
        results = evaluate_checks(self.checks, self.asset_key, lambda: make_scope(run))
        failed = [
            (check, result)
            for check, result in zip(self.checks, results, strict=True)
            if check.blocking and not result.passed and result.severity == AssetCheckSeverity.ERROR
        ]
        if not failed:
            self.results = results
            return
        outcome = f"The run failed before its commit: {run.failure_outcome}"
        self.results = [
            r._replace(description=f"{r.description} {outcome}")
            if any(r is f for _, f in failed)
            else r
            for r in results
        ]
        reasons = "; ".join(f"{c.name}: {r.description}" for c, r in failed)
        raise BlockingCheckError(
            f"Blocking check(s) failed on asset {self.asset_key.to_user_string()!r}: {reasons} "
            f"{outcome} Re-running fails the same way until the data or the threshold changes.",
            checks=tuple(c.name for c, _ in failed),
        )


def evaluate_checks(
    checks: Sequence[KafkaAssetCheck],
    asset_key: AssetKey,
    make_scope: Callable[[], CheckScope],
    instance: DagsterInstance | None = None,
) -> list[AssetCheckResult]:
    """Evaluate ``checks`` over the scope ``make_scope`` builds; without a run in it, over the
    asset's last materialization (read from ``instance``). Never raises: a scope that cannot
    be built (no bootstrap servers, an unreadable checkpoint) fails every check with why."""
    if not checks:
        return []
    try:
        scope = make_scope()
        if scope.run is None and instance is not None:
            scope.last_metadata = last_materialization_metadata(instance, scope.asset_key)
            if scope.checkpoint is None:
                scope.checkpoint = checkpoint_of(scope.last_metadata)
    except Exception as exc:  # a check never raises into the run or the daemon
        return [c.failed(exc, asset_key) for c in checks]
    return [c.evaluate(scope) for c in checks]


__all__ = [
    "ConsumerLagCheck",
    "DirtyDataCheck",
    "HangingTransactionsCheck",
    "KafkaAssetCheck",
    "LateDataCheck",
    "TransactionTimeoutCheck",
    "build_kafka_asset_checks",
]
