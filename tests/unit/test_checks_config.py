"""Kafka asset checks: thresholds validated at definition load, figures evaluated exactly."""

from __future__ import annotations

from datetime import timedelta

import pytest
from dagster import AssetCheckSeverity, AssetKey

from dagster_kafka_flinklike import (
    ConsumerLagCheck,
    DirtyDataCheck,
    HangingTransactionsCheck,
    KafkaOptionsError,
    KafkaTableSpec,
    TransactionTimeoutCheck,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.checks import CheckScope, default_checks
from dagster_kafka_flinklike.run import KafkaClients
from dagster_kafka_flinklike.run.transactions import OpenTransaction, TransactionTimeouts

SOURCE = {"connector": "kafka", "topic": "orders", "format": "json"}
EOS_SINK = {
    "connector": "kafka",
    "topic": "out",
    "format": "json",
    "sink.delivery-guarantee": "exactly-once",
    "sink.transactional-id-prefix": "p",
}


@pytest.mark.parametrize(
    ("build", "parameter"),
    [
        (lambda: DirtyDataCheck(max_ratio=1.5), "max_ratio"),
        (lambda: DirtyDataCheck(max_ratio=float("nan")), "max_ratio"),
        (lambda: DirtyDataCheck(max_count=-1), "max_count"),
        (lambda: TransactionTimeoutCheck(warn_ratio=0.9, fail_ratio=0.5), "warn_ratio"),
        (lambda: TransactionTimeoutCheck(fail_ratio=2.0), "fail_ratio"),
        (lambda: HangingTransactionsCheck(max_open=timedelta(0)), "max_open"),
        (lambda: ConsumerLagCheck(max_pending_records=-5), "max_pending_records"),
        (lambda: ConsumerLagCheck(max_pending_age=timedelta(seconds=-1)), "max_pending_age"),
        (lambda: ConsumerLagCheck(), "max_pending_records"),
        (lambda: DirtyDataCheck(severity="FATAL"), "severity"),
    ],
)
def test_invalid_thresholds_fail_naming_the_parameter(build, parameter: str) -> None:
    with pytest.raises(KafkaOptionsError, match=f"'{parameter}'") as exc:
        build()
    assert exc.value.keys == (parameter,)


def test_checks_are_named_and_carry_severity_and_blocking() -> None:
    check = DirtyDataCheck(max_ratio=0.1, severity="WARN", blocking=True)
    spec = check.spec(AssetKey("revenue"))
    assert (spec.name, spec.blocking) == ("kafka_dirty_data", True)
    assert check.severity == AssetCheckSeverity.WARN
    assert ConsumerLagCheck(max_pending_records=1, name="lag_a").name == "lag_a"


def test_default_checks_follow_the_tables() -> None:
    strict = KafkaTableSpec.from_options(SOURCE)
    tolerant = KafkaTableSpec.from_options({**SOURCE, "json.ignore-parse-errors": "true"})
    eos = KafkaTableSpec.from_options(EOS_SINK, role="sink")
    assert default_checks({"o": strict}, None) == []
    assert [c.name for c in default_checks({"o": tolerant}, None)] == ["kafka_dirty_data"]
    assert [c.name for c in default_checks({"o": strict}, eos)] == [
        "kafka_transaction_timeout",
        "kafka_hanging_transactions",
    ]


def test_two_checks_of_one_name_are_refused() -> None:
    source = KafkaTableSpec.from_options(SOURCE)
    with pytest.raises(KafkaOptionsError, match="more than one check named kafka_consumer_lag"):

        @kafka_streaming_asset(
            sources={"orders": source},
            checks=[
                ConsumerLagCheck(max_pending_records=1),
                ConsumerLagCheck(max_pending_age=None, max_pending_records=2),
            ],
        )
        def revenue(context, orders):  # type: ignore[no-untyped-def]
            return orders


def test_skipping_the_group_commit_under_exactly_once_is_refused() -> None:
    source = KafkaTableSpec.from_options(
        {**SOURCE, "properties.commit.offsets.on.checkpoint": "false"}
    )
    sink = KafkaTableSpec.from_options(EOS_SINK, role="sink")
    with pytest.raises(KafkaOptionsError, match=r"commit\.offsets\.on\.checkpoint") as exc:
        kafka_streaming_asset(sources={"orders": source}, sink=sink)
    assert "properties.commit.offsets.on.checkpoint" in exc.value.keys


def _scope(last: dict) -> CheckScope:
    return CheckScope(AssetKey("a"), {}, None, KafkaClients(), None, last_metadata=last)


def test_dirty_data_alone_reads_the_last_materialization() -> None:
    check = DirtyDataCheck(max_ratio=0.1)
    failed = check.evaluate(_scope({"numRecordsIn": 100, "dirtyRecords": 20}))
    assert not failed.passed
    assert "dirty ratio 0.2 > max_ratio 0.1" in (failed.description or "")
    assert failed.metadata["dirtyRatio"].value == 0.2
    passed = check.evaluate(_scope({"numRecordsIn": 100, "dirtyRecords": 5}))
    assert passed.passed
    assert check.evaluate(_scope({})).passed  # nothing materialized yet


def test_transaction_timeouts_and_open_transactions() -> None:
    assert TransactionTimeouts(None, 600_000).effective_ms == 600_000
    assert TransactionTimeouts(None, None).effective_ms == 900_000
    assert TransactionTimeouts(None, 7_200_000).effective_ms == 3_600_000
    assert TransactionTimeouts(60_000, 6_000).exceeds_broker
    assert not TransactionTimeouts(6_000, 6_000).exceeds_broker
    held = OpenTransaction("t", 1, 10, 25, first_record_ms=1_000)
    assert (held.held_records, held.open_ms(5_000)) == (15, 4_000)
    assert OpenTransaction("t", 1, 10, 25).open_ms(5_000) is None


def test_the_hanging_transactions_default_is_the_documented_one() -> None:
    from pathlib import Path

    from dagster_kafka_flinklike import checks

    assert timedelta(minutes=2) == checks.DEFAULT_MAX_BLOCKED
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    [row] = [
        line for line in readme.splitlines() if line.startswith("| `HangingTransactionsCheck`")
    ]
    assert "Default: 2 minutes on the sink" in row
    assert "DEFAULT_MAX_BLOCKED` (2 minutes)" in (HangingTransactionsCheck.__doc__ or "")
