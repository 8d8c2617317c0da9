"""Sensors for Kafka tables: partition discovery and new data.

- **Discovery** (Flink's ``scan.topic-partition-discovery.interval``): at the table's interval, a
  tick lists the topics matching ``topic`` / ``topic-pattern`` and their partitions, keeps them in
  the cursor, logs what appeared and requests a run of the assets that read the table (new
  partitions start at the log start there, as in Flink). A discovery is requested once.
  A discovery whose run failed is not requested again: the new partitions stay in the plan of
  the next run of those assets (from their log start), e.g. the one their new-data sensor
  requests; the next tick's skip says that the run failed.
- **New data**: a tick plans what the next run of a streaming asset would read (the run's own
  planner, no record read), records the per-partition lag as an observation of the asset (so
  the UI plots lag between runs) and requests a run when enough records are pending or the
  oldest has waited too long. The run key names the end offsets it saw, so one batch is never
  requested twice, and no run is requested while one of the asset is in flight. A batch whose
  run failed is requested again after a backoff, a bounded number of times
  (:mod:`._sensor_retries`); every tick that requests nothing says why.

A tick is a few metadata requests with a short timeout and a query of a few run records; a
cluster that does not answer gives a skip with the reason and leaves the cursor where it was.
All the Kafka requests of a tick end within :data:`TICK_BUDGET_S`, far inside Dagster's sensor
evaluation timeout (60 s by default), whatever the cluster does (down, paused, electing a
leader): the skip names the bootstrap servers and what failed, and the next tick asks again
with a new client.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AssetSelection,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from ._budget import BudgetedClients, servers_of
from ._sensor_retries import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BACKOFF,
    ENDED_BADLY,
    IN_FLIGHT,
    RetryPolicy,
    decide,
    skip_reason,
)
from .errors import KafkaOptionsError
from .history import latest_checkpoint
from .materialization import streaming_tables
from .options import DeliveryGuarantee, KafkaTableSpec
from .run import KafkaClients, ResolvedTable
from .run import metrics as m
from .run.batches import OffsetRanges, batch_key, batch_positions, next_batch
from .run.lag import source_lag

#: How long one Kafka request of a tick may take, retries included (Dagster allows 60 s).
TICK_TIMEOUT_S = 10.0
#: How long all the Kafka requests of one tick may take together: a tick that has not heard
#: from the cluster by then skips, well within Dagster's sensor evaluation timeout (60 s).
TICK_BUDGET_S = 30.0
#: Version of the sensors' cursor layout.
CURSOR_VERSION = 1
#: Tag on the runs a sensor requests, naming the sensor.
SENSOR_TAG = "dagster-kafka-flinklike/sensor"
#: Tag on the runs the new-data sensor requests: the batch they read (a digest of where it
#: starts), by which the sensor finds the batch's runs again.
BATCH_TAG = "dagster-kafka-flinklike/batch"
#: Tag on those runs: which attempt at the batch (1 for the first request).
ATTEMPT_TAG = "dagster-kafka-flinklike/attempt"
#: Dagster's tag on a run of one partition (an offset batch's key).
_PARTITION_TAG = "dagster/partition"
#: Admin clients kept by the code server between ticks: one per cluster.
_CLIENTS = KafkaClients(timeout_s=TICK_TIMEOUT_S)


def _identifier(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_") or "kafka"


def _table_label(spec: KafkaTableSpec) -> str:
    return spec.name or ";".join(spec.topics) or str(spec.topic_pattern)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _state(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("v") != CURSOR_VERSION:
        return None
    return data


def _cursor(text: str | None, key: str) -> dict[str, Any] | None:
    value = (_state(text) or {}).get(key)
    return value if isinstance(value, dict) else None


def _dump(key: str, value: Mapping[str, Any], **more: Any) -> str:
    return json.dumps(
        {"v": CURSOR_VERSION, key: dict(sorted(value.items())), **more}, sort_keys=True
    )


def _digest(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _asset_keys(assets: Sequence[AssetsDefinition | AssetKey | str]) -> list[AssetKey]:
    keys: list[AssetKey] = []
    for a in assets:
        keys.extend(a.keys if isinstance(a, AssetsDefinition) else [AssetKey.from_coercible(a)])
    return keys


def build_kafka_discovery_sensor(
    table: KafkaTableSpec,
    assets: Sequence[AssetsDefinition | AssetKey | str],
    *,
    name: str | None = None,
    minimum_interval_seconds: int | None = None,
    kafka_resource_key: str = "kafka",
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
) -> SensorDefinition:
    """A sensor that discovers the topics and partitions of a source ``table`` and requests a
    run of ``assets`` (those that read it) when new ones appear.

    It ticks every ``scan.topic-partition-discovery.interval`` of the table (Flink's default:
    5 minutes) unless ``minimum_interval_seconds`` says otherwise. The first tick records what
    exists; later ticks log new topics and partitions (and vanished ones) and request one run
    per discovery, never the same discovery twice.

    Example:
        >>> sensor = build_kafka_discovery_sensor(ORDERS, [channel_revenue])  # doctest: +SKIP

    Raises:
        KafkaOptionsError: the table turns discovery off (interval 0 or negative) and no
            ``minimum_interval_seconds`` is given, or no asset is named.
    """
    interval_ms = table.partition_discovery_interval_ms
    if minimum_interval_seconds is None:
        if interval_ms is None:
            raise KafkaOptionsError(
                f"Table {_table_label(table)!r} disables partition discovery "
                f"('scan.topic-partition-discovery.interval' is 0 or negative); set a positive "
                f"interval or pass minimum_interval_seconds.",
                keys=("scan.topic-partition-discovery.interval",),
            )
        minimum_interval_seconds = max(1, interval_ms // 1000)
    keys = _asset_keys(assets)
    if not keys:
        raise KafkaOptionsError("A discovery sensor needs the assets that read the table.")
    label = _table_label(table)
    sensor_name = name or f"{_identifier(label)}_partition_discovery"

    @sensor(
        name=sensor_name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        asset_selection=AssetSelection.assets(*keys),
        required_resource_keys={kafka_resource_key},
        description=f"Discovers new topics and partitions of Kafka table {label!r} "
        f"({'pattern ' + repr(table.topic_pattern) if table.topic_pattern else table.topics}).",
    )
    def _discovery(context: SensorEvaluationContext, **_: Any) -> SensorResult | SkipReason:
        # (``**_``: calling a sensor directly also passes its resources as keywords)
        kafka = getattr(context.resources, kafka_resource_key)
        resolved = None
        try:
            resolved = kafka.resolve(table, label)
            clients = BudgetedClients(_CLIENTS, TICK_BUDGET_S)
            found = clients.admin(resolved).discover(table.topics, table.topic_pattern)
        except Exception as exc:  # a tick never raises: skip, keep the cursor
            if resolved is not None:
                _CLIENTS.forget(resolved)
            return SkipReason(
                f"Could not read the topics of Kafka table {label!r} from "
                f"{servers_of([resolved])}: {exc} The cursor stays; the next tick asks again."
            )
        cursor = _dump("topics", found)
        known = _cursor(context.cursor, "topics")
        total = sum(found.values())
        if known is None:
            return SensorResult(
                skip_reason=f"First discovery of {label!r}: {len(found)} topic(s), {total} "
                f"partition(s); new ones are reported from now on.",
                cursor=cursor,
            )
        new = {
            t: list(range(int(known.get(t, 0)), n)) for t, n in found.items() if n > known.get(t, 0)
        }
        gone = sorted(set(known) - set(found))
        if gone:
            context.log.info(f"Topic(s) no longer matched by {label!r}: {', '.join(gone)}")
        if not new:
            return SensorResult(
                skip_reason=f"No new topics or partitions of {label!r} ({len(found)} topic(s), "
                f"{total} partition(s))." + _failed_discovery(context, sensor_name, keys),
                cursor=cursor,
            )
        described = "; ".join(
            f"{t}: {'new topic, ' if t not in known else ''}partition(s) {', '.join(map(str, ps))}"
            for t, ps in sorted(new.items())
        )
        context.log.info(
            f"Discovered for Kafka table {label!r}: {described}. They start at the log start "
            f"offset (as in Flink); requesting a run of "
            f"{', '.join(k.to_user_string() for k in keys)}."
        )
        request = RunRequest(
            run_key=f"discovery-{_digest(new)}",
            asset_selection=keys,
            tags={SENSOR_TAG: sensor_name},
        )
        return SensorResult(run_requests=[request], cursor=cursor)

    return _discovery


def _failed_discovery(
    context: SensorEvaluationContext, sensor_name: str, keys: Sequence[AssetKey]
) -> str:
    """What a quiet tick adds when the run of the sensor's last discovery failed."""
    records = context.instance.get_run_records(RunsFilter(tags={SENSOR_TAG: sensor_name}), limit=1)
    if not records or records[0].dagster_run.status not in ENDED_BADLY:
        return ""
    return (
        f" The run of the last discovery ({records[0].dagster_run.run_id}) did not succeed; a "
        f"discovery is not requested again: the partitions it found are in the plan of the next "
        f"run of {', '.join(k.to_user_string() for k in keys)} (from their log start), e.g. the "
        f"one a new-data sensor requests."
    )


def build_kafka_discovery_sensors(
    assets: Sequence[AssetsDefinition],
    *,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
) -> list[SensorDefinition]:
    """One discovery sensor per subscription (topics or topic pattern, and cluster) of the
    source tables of the streaming ``assets`` whose ``scan.topic-partition-discovery.interval``
    is positive (Flink's default is 5 minutes), targeting every given asset that reads it, at
    the first such table's interval.

    Example:
        >>> defs = Definitions(assets=[revenue],  # doctest: +SKIP
        ...                    sensors=build_kafka_discovery_sensors([revenue]))
    """
    by_table: dict[Any, tuple[KafkaTableSpec, list[AssetsDefinition], str]] = {}
    for asset in assets:
        tables = streaming_tables(asset)
        for spec in tables.sources.values():
            if spec.partition_discovery_interval_ms is None:
                continue
            identity = (spec.topics, spec.topic_pattern, spec.bootstrap_servers)
            entry = by_table.setdefault(identity, (spec, [], tables.kafka_resource_key))
            entry[1].append(asset)
    return [
        build_kafka_discovery_sensor(
            spec, readers, kafka_resource_key=resource_key, default_status=default_status
        )
        for spec, readers, resource_key in by_table.values()
    ]


def _next_batch(
    tables: Sequence[ResolvedTable], done: Sequence[str], clients: BudgetedClients
) -> OffsetRanges:
    """The ranges of each source's next offset batch after the batches ``done``."""
    positions = batch_positions(done)
    return {
        table.name: next_batch(
            table, clients.admin(table), positions.get(table.name, {}) if done else None
        )
        for table in tables
    }


def _in_flight(context: SensorEvaluationContext, key: AssetKey) -> str | None:
    records = context.instance.get_run_records(RunsFilter(statuses=list(IN_FLIGHT)), limit=50)
    for record in records:
        selection = record.dagster_run.asset_selection or set()
        if key in selection:
            return record.dagster_run.run_id
    return None


def _batch_runs(
    context: SensorEvaluationContext, key: AssetKey, tags: Mapping[str, str], limit: int
) -> list[Any]:
    """The newest runs (at most ``limit``) that carry ``tags`` and may have materialized ``key``
    (a run of all assets of its job names none)."""
    records = context.instance.get_run_records(RunsFilter(tags=dict(tags)), limit=limit)
    return [
        r
        for r in records
        if not r.dagster_run.asset_selection or key in r.dagster_run.asset_selection
    ]


def build_kafka_new_data_sensor(
    asset: AssetsDefinition,
    *,
    min_pending_records: int = 1,
    max_pending_age: timedelta | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    retry_backoff: timedelta = DEFAULT_RETRY_BACKOFF,
    name: str | None = None,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
) -> SensorDefinition:
    """A sensor that requests a run of the streaming ``asset`` when its sources have new data.

    It requests a run when at least ``min_pending_records`` records are pending, or when
    records have been pending longer than ``max_pending_age`` (measured from the tick that
    first saw them). Every tick records the lag as an observation of the asset
    (``pendingRecords``, ``oldestPendingAgeMs``, per-partition ``offsets``). For an asset
    partitioned by offset batches, the pending records are the next batch: from where the last
    batch stopped to the end of the log; when due, the tick adds the batch's key to the asset's
    dynamic partitions and requests its run.

    A batch whose run failed (or was canceled) is requested again under a new run key, after
    ``retry_backoff`` (doubled after each further failure: 1, 2, 4 minutes by default), at most
    ``max_retries`` times; then the sensor gives up on it, and its skips name the failed runs and
    how to resume (re-execute the last one, or delete the sensor's cursor for a new count). An
    offset batch whose run failed holds back the next one, so batches reach the sink in order.

    Example:
        >>> sensor = build_kafka_new_data_sensor(  # doctest: +SKIP
        ...     channel_revenue, min_pending_records=1000, max_pending_age=timedelta(minutes=5))

    Raises:
        KafkaOptionsError: a threshold or retry parameter is invalid (naming it), or ``asset``
            was not built by ``@kafka_streaming_asset``.
    """
    if not isinstance(min_pending_records, int) or min_pending_records < 1:
        raise KafkaOptionsError(
            f"build_kafka_new_data_sensor: parameter 'min_pending_records' must be an int >= 1, "
            f"got {min_pending_records!r}.",
            keys=("min_pending_records",),
        )
    age_ms: int | None = None
    if max_pending_age is not None:
        if not isinstance(max_pending_age, timedelta) or max_pending_age.total_seconds() <= 0:
            raise KafkaOptionsError(
                f"build_kafka_new_data_sensor: parameter 'max_pending_age' must be a positive "
                f"timedelta, got {max_pending_age!r}.",
                keys=("max_pending_age",),
            )
        age_ms = int(max_pending_age.total_seconds() * 1000)
    policy = RetryPolicy.of(max_retries, retry_backoff)
    tables = streaming_tables(asset)
    key = asset.key
    label = key.to_user_string()
    batches = tables.offset_batches
    if tables.partitions_def is not None:
        raise KafkaOptionsError(
            f"Asset {label!r} is partitioned by time windows: its runs read "
            f"windows, not the records pending since a checkpoint. Schedule its windows instead "
            f"(dagster's build_schedule_from_partitioned_job).",
            keys=("partitions_def",),
        )
    sensor_name = name or f"{key.to_python_identifier()}_new_data"
    exactly_once = tables.sink is not None and (
        tables.sink.delivery_guarantee == DeliveryGuarantee.EXACTLY_ONCE
    )

    @sensor(
        name=sensor_name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        asset_selection=AssetSelection.assets(key),
        required_resource_keys={tables.kafka_resource_key},
        description=f"Requests a run of {label!r} when its Kafka sources have "
        f"{min_pending_records}+ pending record(s)"
        + (f" or records pending over {max_pending_age}" if max_pending_age else "")
        + f"; a batch whose run failed is requested again up to {max_retries} time(s).",
    )
    def _new_data(context: SensorEvaluationContext, **_: Any) -> SensorResult | SkipReason:
        # (``**_``: calling a sensor directly also passes its resources as keywords)
        kafka = getattr(context.resources, tables.kafka_resource_key)
        now = _now_ms()
        resolved: list[ResolvedTable] = []
        done: list[str] = []
        try:
            resolved = [kafka.resolve(spec, source) for source, spec in tables.sources.items()]
            clients = BudgetedClients(_CLIENTS, TICK_BUDGET_S)
            if batches is not None:
                done = list(context.instance.get_dynamic_partitions(str(batches.name)))
                batch = _next_batch(resolved, done, clients)
                ranges = {(s, tp): r for s, found in batch.items() for tp, r in found.items()}
            else:
                batch = {}
                checkpoint = latest_checkpoint(context.instance, key)
                ranges = {}
                for table in resolved:
                    lag = source_lag(
                        table, clients.admin(table), checkpoint, exactly_once=exactly_once
                    )
                    ranges.update(
                        {(table.name, tp): (lag.starts[tp], lag.stops[tp]) for tp in lag.stops}
                    )
        except Exception as exc:  # a tick never raises: skip, keep the cursor
            for table in resolved:
                _CLIENTS.forget(table)
            return SkipReason(
                f"Could not plan the Kafka sources of {label!r} from {servers_of(resolved)}: "
                f"{exc} No run is requested and the cursor stays; the next tick asks again."
            )
        pending = {f"{s}/{t}-{p}": max(b - a, 0) for (s, (t, p)), (a, b) in ranges.items()}
        stops = {f"{s}/{t}-{p}": b for (s, (t, p)), (_, b) in ranges.items()}
        state = _state(context.cursor)
        # When the cursor began: failed runs created before it do not count (deleting the cursor
        # starts a new count). A second early: run storage may round its creation times down.
        retries_from = int((state or {}).get("retriesFrom", 0 if state else now - 1000))
        since = {
            k: int(v)
            for k, v in (_cursor(context.cursor, "since") or {}).items()
            if pending.get(k, 0) > 0
        }
        for k, count in pending.items():
            if count > 0:
                since.setdefault(k, now)
        total = sum(pending.values())
        oldest = now - min(since.values()) if since else 0
        observation = AssetObservation(
            asset_key=key,
            metadata={
                m.PENDING_RECORDS.name: total,
                m.OLDEST_PENDING_AGE.name: oldest,
                m.PARTITIONS.name: len(pending),
                m.OFFSETS: MetadataValue.json(pending),
            },
        )
        cursor = _dump("since", since, retriesFrom=retries_from)

        def skip(reason: str) -> SensorResult:
            return SensorResult(skip_reason=reason, cursor=cursor, asset_events=[observation])

        def request(run_key: str, batch_id: str, attempt: int, partition: str | None) -> RunRequest:
            return RunRequest(
                run_key=run_key,
                asset_selection=[key],
                partition_key=partition,
                tags={SENSOR_TAG: sensor_name, BATCH_TAG: batch_id, ATTEMPT_TAG: str(attempt)},
            )

        # The batch the last run read, and what became of its runs.
        if batches is not None:
            last = done[-1] if done else None
            batch_id = _digest(last)
            what = f"offset batch {last!r} of {label!r}"
            verdict = None
            if last is not None:
                runs = _batch_runs(context, key, {_PARTITION_TAG: last}, policy.attempts + 1)
                verdict = decide(runs, policy, since_ms=retries_from, now_ms=now)
        else:
            last = None
            starts = {f"{s}/{t}-{p}": a for (s, (t, p)), (a, _) in ranges.items()}
            batch_id = _digest([label, starts])
            what = f"the records of {label!r} pending from its checkpoint"
            runs = _batch_runs(context, key, {BATCH_TAG: batch_id}, policy.attempts + 1)
            verdict = decide(runs, policy, since_ms=retries_from, now_ms=now)
        if verdict is not None and verdict.kind in ("in_flight", "wait", "gave_up"):
            held = (
                " The next batch waits for it (batches reach the sink in order)."
                if (last is not None and verdict.kind != "in_flight")
                else ""
            )
            return skip(
                f"{total} record(s) pending. "
                + skip_reason(verdict, policy, what, sensor_name)
                + held
            )
        if verdict is not None and verdict.kind == "retry":
            running = _in_flight(context, key)
            if running is not None:
                return skip(
                    f"{total} record(s) pending; {what} is due for attempt {verdict.attempt}, but "
                    f"run {running} of {label!r} is in flight."
                )
            base = f"batch-{batch_id}" if last is not None else f"new-data-{_digest(stops)}"
            context.log.info(
                f"Requesting {what} again: attempt {verdict.attempt} of {policy.attempts}, after "
                f"run {verdict.run_id} failed."
            )
            retry = request(
                f"{base}-attempt-{verdict.attempt}-after-{verdict.run_id}",
                batch_id,
                verdict.attempt,
                last,
            )
            return SensorResult(run_requests=[retry], cursor=cursor, asset_events=[observation])

        due = total >= min_pending_records or (age_ms is not None and total and oldest >= age_ms)
        if not due:
            return skip(
                f"{total} record(s) pending (oldest for {oldest / 1000:.0f}s): below the "
                f"thresholds."
            )
        running = _in_flight(context, key)
        if running is not None:
            return skip(
                f"{total} record(s) pending, but run {running} of {label!r} is in flight; it or "
                f"the next one reads them."
            )
        if batches is not None:
            name = batch_key(batch)
            context.log.info(f"New offset batch of {label!r}: {name}")
            return SensorResult(
                run_requests=[request(f"batch-{_digest(name)}", _digest(name), 1, name)],
                dynamic_partitions_requests=[batches.build_add_request([name])],
                cursor=cursor,
                asset_events=[observation],
            )
        first = request(f"new-data-{_digest(stops)}", batch_id, 1, None)
        return SensorResult(run_requests=[first], cursor=cursor, asset_events=[observation])

    return _new_data


__all__ = [
    "build_kafka_discovery_sensor",
    "build_kafka_discovery_sensors",
    "build_kafka_new_data_sensor",
]
