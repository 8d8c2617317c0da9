"""The new-data sensor's retries, decided from real run records of a Dagster instance."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.test_utils import create_run_for_test

from dagster_kafka_flinklike import KafkaOptionsError, KafkaTableSpec, kafka_streaming_asset
from dagster_kafka_flinklike import build_kafka_new_data_sensor as new_data_sensor
from dagster_kafka_flinklike._sensor_retries import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BACKOFF,
    RetryPolicy,
    decide,
    skip_reason,
)

POLICY = RetryPolicy.of(2, timedelta(minutes=1))


def runs_of(instance: DagsterInstance, *statuses: DagsterRunStatus) -> list[Any]:
    """Runs that ended with ``statuses``, oldest first; all the instance's records, newest
    first."""
    for status in statuses:
        if status == DagsterRunStatus.SUCCESS:
            create_run_for_test(instance, job_name="j", status=status)
            continue
        run = create_run_for_test(instance, job_name="j", status=DagsterRunStatus.STARTED)
        if status == DagsterRunStatus.FAILURE:
            instance.report_run_failed(run)
        else:
            instance.report_run_canceled(run)
    return list(instance.get_run_records())


def ended_ms(record: Any) -> int:
    return int(record.end_time * 1000)


def test_a_failed_batch_waits_a_doubling_backoff_then_gives_up() -> None:
    instance = DagsterInstance.ephemeral()
    [first] = runs_of(instance, DagsterRunStatus.FAILURE)
    end = ended_ms(first)
    waiting = decide([first], POLICY, since_ms=0, now_ms=end + 59_000)
    assert (waiting.kind, waiting.attempt, waiting.at_ms) == ("wait", 2, end + 60_000)
    text = skip_reason(waiting, POLICY, "the batch", "s")
    assert f"Run {first.dagster_run.run_id} of the batch failed (attempt 1 of 3)" in text
    assert "attempt 2 of 3 is requested at " in text and "after a backoff of 60s" in text
    assert decide([first], POLICY, since_ms=0, now_ms=end + 60_000).kind == "retry"

    second = runs_of(instance, DagsterRunStatus.CANCELED)  # canceled counts as not succeeded
    later = decide(second, POLICY, since_ms=0, now_ms=ended_ms(second[0]) + 60_000)
    assert (later.kind, later.attempt) == ("wait", 3)  # 2 minutes after the second failure
    assert later.at_ms == ended_ms(second[0]) + 120_000

    third = runs_of(instance, DagsterRunStatus.FAILURE)
    given_up = decide(third, POLICY, since_ms=0, now_ms=10**15)
    assert (given_up.kind, given_up.attempt) == ("gave_up", 3)
    ids = [r.dagster_run.run_id for r in reversed(third)]
    text = skip_reason(given_up, POLICY, "the batch", "orders_new_data")
    assert f"after 3 failed attempt(s) (runs {', '.join(ids)})" in text
    assert f"re-execute run {ids[-1]}" in text
    assert "`dagster sensor cursor orders_new_data --delete`" in text

    # a new count from the cursor's start: the failures before it do not count
    fresh = decide(third, POLICY, since_ms=10**15, now_ms=10**15)
    assert (fresh.kind, fresh.attempt, fresh.failed) == ("retry", 1, ())


def test_a_success_or_a_run_in_flight_ends_the_retries() -> None:
    instance = DagsterInstance.ephemeral()
    assert decide([], POLICY, since_ms=0, now_ms=0).kind == "go"
    records = runs_of(instance, DagsterRunStatus.FAILURE, DagsterRunStatus.SUCCESS)
    assert decide(records, POLICY, since_ms=0, now_ms=0).kind == "go"
    create_run_for_test(instance, job_name="j", status=DagsterRunStatus.STARTED)
    flying = decide(list(instance.get_run_records()), POLICY, since_ms=0, now_ms=0)
    assert flying.kind == "in_flight"
    assert "is in flight" in skip_reason(flying, POLICY, "the batch", "s")


def test_zero_retries_gives_up_after_the_first_failure() -> None:
    instance = DagsterInstance.ephemeral()
    policy = RetryPolicy.of(0, timedelta(0))
    given_up = decide(runs_of(instance, DagsterRunStatus.FAILURE), policy, since_ms=0, now_ms=0)
    assert (given_up.kind, given_up.attempt) == ("gave_up", 1)


def asset() -> Any:
    columns = [{"name": "id", "type": "BIGINT"}]
    source = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "orders", "format": "json"}, columns=columns, role="source"
    )
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "out", "format": "json"}, columns=columns, role="sink"
    )

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name="copied", checks=[])
    def _copy(context, events):  # type: ignore[no-untyped-def]
        return events

    return _copy


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"max_retries": True}, "max_retries"),
        ({"retry_backoff": timedelta(seconds=-1)}, "retry_backoff"),
        ({"retry_backoff": 60}, "retry_backoff"),
    ],
)
def test_bad_retry_parameters_fail_at_load_naming_them(arguments: dict, parameter: str) -> None:
    with pytest.raises(KafkaOptionsError, match=f"parameter '{parameter}'") as exc:
        new_data_sensor(asset(), **arguments)
    assert exc.value.keys == (parameter,)


def test_the_retry_defaults_are_the_documented_ones() -> None:
    from pathlib import Path

    assert (3, timedelta(minutes=1)) == (DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF)
    sensor = new_data_sensor(asset())
    assert "requested again up to 3 time(s)" in (sensor.description or "")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Sensors", 1)[1].split("###", 1)[0]
    assert "`max_retries=3`" in section and "`retry_backoff=timedelta(minutes=1)`" in section
    assert AssetKey("copied") in sensor.asset_selection.resolve([asset()])
