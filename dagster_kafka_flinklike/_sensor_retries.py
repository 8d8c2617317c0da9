"""Retries of the new-data sensor: a batch whose run failed is requested again, a bounded number
of times, after a backoff, and every tick that requests nothing says why.

A batch is what one run of the asset reads: the records pending from where the asset resumes
(its checkpoint, or under exactly-once its group's committed offsets), or one offset batch. A
failed run moves neither, so the next run reads the same batch again: the sensor counts the
failed runs of the batch (found in the Dagster instance by a tag, one query of a few records),
waits ``retry_backoff`` after the first failure (doubling after each next one), then requests
it again under a new run key, up to ``max_retries`` times, then gives up and says how to resume.
The cursor keeps when its count began: deleting the cursor starts a new count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dagster import DagsterRunStatus, RunRecord

from .errors import KafkaOptionsError

#: Retries of a batch whose run failed, unless the sensor says otherwise.
DEFAULT_MAX_RETRIES = 3
#: Wait after a batch's first failed run before its retry (doubled after each next failure).
DEFAULT_RETRY_BACKOFF = timedelta(minutes=1)
#: Run statuses of a run that ended without success.
ENDED_BADLY = (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)
#: Run statuses of a run that has not ended.
IN_FLIGHT = (
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
)


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, the new-data sensor requests a failed batch again.

    Example:
        >>> policy = RetryPolicy.of(3, timedelta(minutes=1))
        >>> policy.attempts, policy.backoff_ms(1), policy.backoff_ms(3)
        (4, 60000, 240000)
    """

    max_retries: int
    backoff: timedelta

    @classmethod
    def of(cls, max_retries: int, backoff: timedelta) -> RetryPolicy:
        """The policy of a sensor's parameters.

        Raises:
            KafkaOptionsError: ``max_retries`` is not an int >= 0, or ``retry_backoff`` not a
                timedelta >= 0 (the parameter is named).
        """
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise KafkaOptionsError(
                f"build_kafka_new_data_sensor: parameter 'max_retries' must be an int >= 0, got "
                f"{max_retries!r}.",
                keys=("max_retries",),
            )
        if (
            not isinstance(backoff, timedelta)
            or not math.isfinite(backoff.total_seconds())
            or backoff.total_seconds() < 0
        ):
            raise KafkaOptionsError(
                f"build_kafka_new_data_sensor: parameter 'retry_backoff' must be a timedelta >= "
                f"0, got {backoff!r}.",
                keys=("retry_backoff",),
            )
        return cls(max_retries, backoff)

    @property
    def attempts(self) -> int:
        """Runs of one batch at most: the first and its retries."""
        return 1 + self.max_retries

    def backoff_ms(self, failures: int) -> int:
        """The wait after the ``failures``-th failed run of a batch."""
        return int(self.backoff.total_seconds() * 1000) * 2 ** max(failures - 1, 0)


@dataclass(frozen=True)
class Verdict:
    """What the sensor does about a batch, from its runs.

    ``kind`` is ``go`` (no run of it failed last: request it as usual), ``in_flight``, ``wait``
    (for the backoff, until ``at_ms``), ``retry`` (request attempt ``attempt`` now) or
    ``gave_up``. ``failed`` are the failed runs counted, newest first.
    """

    kind: str
    attempt: int = 1
    failed: tuple[str, ...] = ()
    at_ms: int | None = None
    run_id: str | None = None


def _ended_ms(record: RunRecord) -> int:
    ended = record.end_time or record.update_timestamp.timestamp()
    return int(ended * 1000)


def decide(
    runs: Sequence[RunRecord], policy: RetryPolicy, *, since_ms: int, now_ms: int
) -> Verdict:
    """What to do about a batch whose runs (newest first) are ``runs``: failed runs created
    before ``since_ms`` (the cursor's start) do not count against ``policy``.

    Example:
        >>> decide([], RetryPolicy.of(3, timedelta(minutes=1)), since_ms=0, now_ms=0).kind
        'go'
    """
    if not runs:
        return Verdict("go")
    newest = runs[0]
    status = newest.dagster_run.status
    if status in IN_FLIGHT:
        return Verdict("in_flight", run_id=newest.dagster_run.run_id)
    if status not in ENDED_BADLY:
        return Verdict("go")
    failed: list[RunRecord] = []
    for record in runs:
        if record.dagster_run.status not in ENDED_BADLY:
            break
        if record.create_timestamp.timestamp() * 1000 < since_ms:
            break
        failed.append(record)
    ids = tuple(r.dagster_run.run_id for r in failed)
    last = newest.dagster_run.run_id
    if len(failed) >= policy.attempts:
        return Verdict("gave_up", attempt=len(failed), failed=ids, run_id=last)
    at = _ended_ms(newest) + policy.backoff_ms(len(failed)) if failed else now_ms
    kind = "retry" if now_ms >= at else "wait"
    return Verdict(kind, attempt=len(failed) + 1, failed=ids, at_ms=at, run_id=last)


def utc(ms: int) -> str:
    """``ms`` since the epoch as a UTC time a user reads.

    Example:
        >>> utc(0)
        '1970-01-01 00:00:00 UTC'
    """
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def skip_reason(verdict: Verdict, policy: RetryPolicy, what: str, sensor_name: str) -> str:
    """Why no run of ``what`` (the batch, and the asset) is requested this tick."""
    if verdict.kind == "in_flight":
        return f"Run {verdict.run_id} of {what} is in flight."
    if verdict.kind == "wait":
        return (
            f"Run {verdict.run_id} of {what} failed (attempt {verdict.attempt - 1} of "
            f"{policy.attempts}); attempt {verdict.attempt} of {policy.attempts} is requested "
            f"at {utc(verdict.at_ms or 0)}, after a backoff of "
            f"{_span(policy.backoff_ms(verdict.attempt - 1))}."
        )
    if verdict.kind == "gave_up":
        return (
            f"Gave up on {what} after {verdict.attempt} failed attempt(s) (runs "
            f"{', '.join(reversed(verdict.failed))}); no run is requested for it. Fix the "
            f"cause (the runs' errors say it), then re-execute run {verdict.run_id}: the sensor "
            f"goes on once a run of it succeeds. Or delete the sensor's cursor (`dagster sensor "
            f"cursor {sensor_name} --delete`) to try it {policy.attempts} more time(s)."
        )
    raise ValueError(f"No skip for a {verdict.kind!r} verdict.")


def _span(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:g}s"
    return f"{seconds / 60:g} min"
