"""Run the Flink SQL corpus twice here, with new input and late data between, and once on Flink.

Every job in ``jobs/`` reads one topic of orders (``{orders}``) and writes ``{sink}``. The
harness produces the first increment, materializes the job's assets, produces the second
(a record for a window the watermark has passed, records within the delay, more event time),
materializes again, then runs the job on Apache Flink over the same topic into a sink of its own
and compares:

- append sinks as multisets of records; where the sink has a ``window_end`` column, Flink's
  bounded job closes every window at the end of its input, so only the windows Flink's
  watermark had passed (``window_end - 1 ms <= max event time - 5 s``) are compared;
- ``upsert-kafka`` sinks after folding by key (tombstones delete);
- JSON numbers by value (Flink writes a ``DECIMAL`` 2.00 as ``2``, this project as ``2.00``:
  the same JSON number).

Each job ends as ``same`` (our sink equals Flink's), ``refused`` (we refuse it, or our run
fails, and Flink refuses it or its job fails too), ``refused-ours`` (we refuse a job Flink
runs: the reason is ours), ``flink-refuses`` (we run a job Flink refuses), ``failed`` (our run
failed) or ``different`` (a silently different result: a defect). ``python -m tests.corpus``
runs all of them and prints the figures, the last line JSON.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

JOBS = Path(__file__).parent / "jobs"
T0 = datetime(2026, 11, 20, tzinfo=UTC)
#: The watermark delay every windowed job declares.
DELAY = timedelta(seconds=5)


def _order(n: int, channel: str, amount: int, user: str, seconds: float) -> dict[str, Any]:
    ts = (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return {"order_id": n, "channel": channel, "amount": amount, "user_name": user, "ts": ts}


FIRST = [
    _order(1, "web", 10, "ann", 1), _order(2, "app", 5, "bob", 3),
    _order(3, "web", 7, "ann", 12), _order(4, "web", 1, "cid", 9),
    _order(5, "app", 2, "bob", 16), _order(6, "shop", 20, "ann", 21),
]  # fmt: skip
SECOND = [
    _order(7, "web", 100, "bob", 4), _order(8, "app", 3, "cid", 14),
    _order(9, "web", 4, "ann", 25), _order(10, "shop", 6, "bob", 34.999),
    _order(11, "app", 9, "ann", 33),
]  # fmt: skip
WATERMARK = T0 + timedelta(seconds=34.999) - DELAY


@dataclass(frozen=True)
class Outcome:
    """One job's result: its status and what differed or why it was refused."""

    job: str
    status: str
    detail: str = ""


def jobs() -> list[Path]:
    """The corpus, by name."""
    return sorted(JOBS.glob("*.sql"))


def _json(raw: bytes) -> Any:
    """A JSON value with its numbers by value (``2``, ``2.00`` and ``2E+0`` are one number)."""

    def canonical(v: Any) -> Any:
        if isinstance(v, Decimal):
            return {"number": format(v.normalize(), "f")}
        if isinstance(v, dict):
            return {k: canonical(x) for k, x in v.items()}
        if isinstance(v, list):
            return [canonical(x) for x in v]
        return v

    return canonical(json.loads(raw, parse_float=Decimal, parse_int=Decimal))


def _records(bootstrap: str, topic: str) -> list[tuple[Any, Any]]:
    from tests.conftest import consume_all

    return [
        (
            _json(m.key()) if m.key() else None,
            _json(m.value()) if m.value() is not None else None,
        )
        for m in consume_all(bootstrap, topic, 1)
    ]


def _result(bootstrap: str, topic: str, upsert: bool, closed_only: bool) -> list[str]:
    rows = _records(bootstrap, topic)
    if upsert:
        latest: dict[str, Any] = {}
        for key, value in rows:
            k = json.dumps(key, sort_keys=True)
            if value is None:
                latest.pop(k, None)
            else:
                latest[k] = value
        values = list(latest.values())
    else:
        values = [v for _, v in rows]
    if closed_only:
        values = [
            v
            for v in values
            if datetime.fromisoformat(v["window_end"]).replace(tzinfo=UTC)
            - timedelta(milliseconds=1)
            <= WATERMARK
        ]
    return sorted(json.dumps(v, sort_keys=True) for v in values)


def run_job(
    path: Path,
    bootstrap: str,
    oracle: Any,
    resources: dict[str, Any],
    new_topic: Callable[[int], str],
) -> Outcome:
    """Run one corpus job here (twice) and on Flink; compare."""
    from confluent_kafka import Producer
    from dagster import DagsterInstance, materialize

    from dagster_kafka_flinklike.components import build_flink_sql_definitions
    from dagster_kafka_flinklike.errors import KafkaOptionsError
    from dagster_kafka_flinklike.sql.pipeline import plan_flink_sql
    from tests.integration.test_flink_oracle import for_flink
    from tests.oracle import FlinkOracleError

    name = path.stem
    orders, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    text = path.read_text()

    def script(sink: str) -> str:
        return text.replace("{orders}", orders).replace("{sink}", sink)

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 0, "max.in.flight.requests.per.connection": 1}
    )

    def send(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            producer.produce(orders, json.dumps(row).encode(), partition=0)
        assert producer.flush(30) == 0

    send(FIRST)
    try:
        defs = build_flink_sql_definitions(script(ours), include_source_assets=False)
    except KafkaOptionsError as exc:
        refusal = str(exc).splitlines()[0]
        send(SECOND)
        try:
            oracle.run(for_flink(script(theirs)), bootstrap=bootstrap)
        except FlinkOracleError:
            return Outcome(name, "refused", refusal)
        return Outcome(name, "refused-ours", refusal)
    assets = list(defs.assets or ())
    [insert] = plan_flink_sql(script(ours)).inserts
    upsert = insert.sink.is_upsert
    closed = any(c.name == "window_end" for c in insert.sink.columns)
    flink: list[Future[str]] = []

    def start_flink() -> Future[str]:
        """Flink's run over all the input, started once (beside our second run)."""
        if not flink:
            flink.append(oracle.submit(for_flink(script(theirs)), bootstrap=bootstrap))
        return flink[0]

    with tempfile.TemporaryDirectory(prefix="dkf-corpus-") as home:
        instance = DagsterInstance.ephemeral(tempdir=home)
        for increment in (None, SECOND):
            if increment:
                send(increment)
                start_flink()
            result = materialize(
                assets, instance=instance, resources=resources, raise_on_error=False
            )
            if not result.success:
                failure = result.get_step_failure_events()[0].step_failure_data.error
                message = failure.message.splitlines()[0] if failure else ""
                if increment is None:
                    send(SECOND)  # Flink reads what a second run would have read
                try:
                    start_flink().result()
                except FlinkOracleError:
                    return Outcome(name, "refused", f"both fail: {message}")
                return Outcome(name, "failed", message)
    try:
        start_flink().result()
    except FlinkOracleError as exc:
        return Outcome(name, "flink-refuses", str(exc).splitlines()[-1])
    mine, flink = (_result(bootstrap, t, upsert, closed) for t in (ours, theirs))
    if mine == flink:
        return Outcome(name, "same", f"{len(mine)} record(s)")
    return Outcome(name, "different", f"ours {mine}\nflink {flink}")
