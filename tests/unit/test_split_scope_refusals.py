"""What a transaction per split can never write is refused when the asset is defined, naming
``sink.transaction-scope`` and the reason (not after a run has fenced its splits and read)."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import DailyPartitionsDefinition

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaTableSpec,
    kafka_stateful_asset,
    kafka_streaming_asset,
)

SOURCE = {"connector": "kafka", "topic": "orders", "format": "json"}
SINK = {
    "connector": "kafka",
    "topic": "out",
    "format": "json",
    "sink.delivery-guarantee": "exactly-once",
    "sink.transactional-id-prefix": "p",
    "sink.transaction-scope": "split",
}


def _source(**options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options({**SOURCE, **options})


def _sink(**options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options({**SINK, **options}, role="sink")


def _refused(build: Any, reason: str) -> None:
    with pytest.raises(KafkaOptionsError, match=reason) as exc:
        build()
    assert exc.value.keys == ("sink.transaction-scope",)
    assert "'sink.transaction-scope' = 'split' cannot write this asset" in str(exc.value)
    assert "Remove 'sink.transaction-scope'" in str(exc.value)


def test_two_sources_are_refused() -> None:
    sources = {"a": _source(), "b": _source(topic="returns")}
    _refused(lambda: kafka_streaming_asset(sources=sources, sink=_sink()), "reads 2 sources")


def test_a_source_with_dead_letters_is_refused() -> None:
    source = _source(**{"ingestion.dead-letter.topic": "dead"})
    _refused(
        lambda: kafka_streaming_asset(sources={"orders": source}, sink=_sink()),
        r"source 'orders' writes dead letters \('ingestion.dead-letter.topic'\)",
    )


def test_time_windows_and_offset_batches_are_refused() -> None:
    orders = {"orders": _source()}
    daily = DailyPartitionsDefinition(start_date="2026-01-01")
    _refused(
        lambda: kafka_streaming_asset(sources=orders, sink=_sink(), partitions_def=daily),
        "time windows or offset batches",
    )
    _refused(
        lambda: kafka_streaming_asset(sources=orders, sink=_sink(), offset_batches=True),
        "time windows or offset batches",
    )


def test_a_stateful_query_is_refused() -> None:
    _refused(
        lambda: kafka_stateful_asset(sources={"orders": _source()}, sink=_sink()),
        "stateful query's micro-batches are shuffled",
    )


def test_one_plain_source_is_defined_and_the_run_scope_takes_two() -> None:
    @kafka_streaming_asset(sources={"orders": _source()}, sink=_sink())
    def split_revenue(context, orders):  # type: ignore[no-untyped-def]
        return orders

    assert split_revenue.key.path == ["split_revenue"]
    run_scope = _sink(**{"sink.transaction-scope": "run"})

    @kafka_streaming_asset(sources={"a": _source(), "b": _source(topic="r")}, sink=run_scope)
    def run_revenue(context, a, b):  # type: ignore[no-untyped-def]
        return a

    assert run_revenue.key.path == ["run_revenue"]
