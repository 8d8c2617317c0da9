"""Sink writers per delivery guarantee: Spark tasks produce with confluent-kafka.

``none`` fires and forgets (failures counted and logged); ``at-least-once`` checks every delivery
report and fails the task — and so the run, before any checkpoint advances — on the first
failure.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import DeliveryError
from ..options import DeliveryGuarantee, client_config
from .partitioners import LIBRDKAFKA_DEFAULT

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

_RESULT_SCHEMA = "records long, bytes long, failed long, error string, send_ms double"
_FLUSH_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class WriteResult:
    """What a write did: records and bytes delivered, failures, time spent sending."""

    records: int
    bytes: int
    failed: int
    first_error: str | None
    send_ms: float


def producer_config(
    properties: Mapping[str, str], guarantee: DeliveryGuarantee, partitioner: str = "default"
) -> dict[str, Any]:
    """librdkafka producer settings for a sink's ``properties.*`` and delivery guarantee."""
    config: dict[str, Any] = {"partitioner": LIBRDKAFKA_DEFAULT, "linger.ms": 5}
    if guarantee != DeliveryGuarantee.NONE:
        config.update({"acks": "all", "enable.idempotence": True})
    config.update(client_config(properties, role="producer"))
    return config


def _produce_batches(
    batches: Iterator[pa.RecordBatch], topic: str, config: Mapping[str, Any], fail_fast: bool
) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa
    from confluent_kafka import Producer

    producer = Producer(dict(config))
    state: dict[str, Any] = {"failed": 0, "error": None, "bytes": 0}

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            state["failed"] += 1
            state["error"] = state["error"] or str(err)
        else:
            state["bytes"] += len(msg.value() or b"") + len(msg.key() or b"")

    records = 0
    started = time.perf_counter()
    produce = producer.produce
    for batch in batches:
        names = batch.schema.names
        keys = batch.column(names.index("key")).to_pylist()
        values = batch.column(names.index("value")).to_pylist()
        stamps = (
            batch.column(names.index("timestamp")).to_pylist() if "timestamp" in names else None
        )
        headers = batch.column(names.index("headers")).to_pylist() if "headers" in names else None
        for i, value in enumerate(values):
            kwargs: dict[str, Any] = {}
            if stamps is not None and stamps[i] is not None:
                kwargs["timestamp"] = int(stamps[i].timestamp() * 1000)
            if headers is not None and headers[i]:
                kwargs["headers"] = [(h["key"], h["value"]) for h in headers[i]]
            while True:
                try:
                    produce(topic, value, keys[i], on_delivery=on_delivery, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)
            records += 1
            if fail_fast and state["failed"]:
                break
        producer.poll(0)
        if fail_fast and state["failed"]:
            break
    remaining = producer.flush(_FLUSH_TIMEOUT_S)
    if remaining:
        state["failed"] += remaining
        state["error"] = state["error"] or f"{remaining} record(s) not delivered before timeout"
    send_ms = (time.perf_counter() - started) * 1000
    if fail_fast and state["failed"]:
        raise DeliveryError(
            f"{state['failed']} record(s) to topic {topic!r} were not delivered: "
            f"{state['error']}. The run fails and the checkpoint does not advance."
        )
    yield pa.RecordBatch.from_pylist(
        [
            {
                "records": records - state["failed"],
                "bytes": state["bytes"],
                "failed": state["failed"],
                "error": state["error"],
                "send_ms": send_ms,
            }
        ]
    )


def write(
    encoded: DataFrame,
    topic: str,
    properties: Mapping[str, str],
    guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE,
    *,
    parallelism: int | None = None,
) -> WriteResult:
    """Produce the ``key``/``value`` [``timestamp``, ``headers``] rows of ``encoded`` to ``topic``.

    Raises:
        DeliveryError: with ``at-least-once``, when any record was not delivered.
    """
    if guarantee == DeliveryGuarantee.EXACTLY_ONCE:
        raise DeliveryError(
            "'sink.delivery-guarantee' = 'exactly-once' needs the transactional writer; "
            "use the streaming asset, which commits output and offsets in one transaction."
        )
    config = producer_config(properties, guarantee)
    fail_fast = guarantee == DeliveryGuarantee.AT_LEAST_ONCE
    if parallelism:
        encoded = encoded.repartition(parallelism)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _produce_batches(batches, topic, config, fail_fast)

    rows = encoded.mapInArrow(task, _RESULT_SCHEMA).collect()
    errors = [r["error"] for r in rows if r["error"]]
    return WriteResult(
        records=sum(r["records"] for r in rows),
        bytes=sum(r["bytes"] for r in rows),
        failed=sum(r["failed"] for r in rows),
        first_error=errors[0] if errors else None,
        send_ms=max((r["send_ms"] for r in rows), default=0.0),
    )
