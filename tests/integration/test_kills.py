"""Delivery guarantees under SIGKILL: a Kafka → Spark → Kafka asset killed at random moments.

Each round produces a slice of the input, starts the asset in a child process (its own process
group: Python driver, Spark JVM and workers) and kills the whole group with SIGKILL at a moment
drawn from a seeded generator: a random time after start, or just after the run logs that its
transaction is initialised, producing, committing or committed (before Dagster records the
run); for at-least-once, a random time or just after the write, before the checkpoint. After
the kills, runs repeat unkilled until the input is drained; an independent read_committed
consumer then counts every input id in the output.

Replay a failure with ``KILL_TEST_SEED=<seed printed> pytest tests/integration/test_kills.py``;
``make soak`` runs them longer (more records and kills) than ``make test`` does.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.conftest import consume_all

# CI-sized by default; `make soak` runs 200k records, 20 + 8 + 10 kills.
RECORDS = int(os.environ.get("KILL_TEST_RECORDS", "24000"))
EOS_KILLS = int(os.environ.get("KILL_TEST_KILLS", "3"))
ALO_KILLS = int(os.environ.get("KILL_TEST_ALO_KILLS", "2"))
PARTITIONS = 3
CHILD_TIMEOUT_S = 300.0
REPO = Path(__file__).resolve().parents[2]

#: Log lines of the exactly-once sink that mark the moments worth killing at.
EOS_MARKERS = ("initialised", "producing.", "committing.", "committed.")
#: The same moments of the sink with a transaction per split: ids fenced, splits producing,
#: all prepared and committing, committed.
SPLIT_MARKERS = ("split transactional id", ": producing", "prepared; committing.", "Committed")
#: At-least-once: a random time, or right after the write, before the checkpoint is recorded.
ALO_MARKERS = ("time", "time", "recording the checkpoint next")


def _seed(variable: str = "KILL_TEST_SEED") -> int:
    seed = int(os.environ.get(variable, str(random.SystemRandom().randrange(2**31))))
    print(f"seed: {seed} (replay with {variable}={seed})", flush=True)
    return seed


def _produce_slice(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    payload = "x" * 120
    for i in range(first, first + count):
        while True:
            try:
                producer.produce(topic, json.dumps({"id": i, "payload": payload}).encode())
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def _output_ids(bootstrap: str, topic: str) -> Counter[int]:
    return Counter(json.loads(m.value())["id"] for m in consume_all(bootstrap, topic, PARTITIONS))


class Child:
    """The asset's run in its own process group, with its output lines in a queue."""

    def __init__(
        self,
        args: list[str],
        home: Path,
        module: str = "tests.integration.kill_child",
        env: dict[str, str] | None = None,
    ) -> None:
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "PYTHONUNBUFFERED": "1",
            "PYTHONFAULTHANDLER": "1",  # SIGABRT prints every thread's stack (a hang's cause)
            **(env or {}),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        self.ended = False  # its output has ended (it exited)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, marker: str | None, timeout: float) -> bool:
        """Wait until a line containing ``marker`` (or, with None, the end); False at the end."""
        deadline = time.monotonic() + timeout
        while not self.ended and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                self.ended = True
                break
            self.log.append(line)
            if marker is not None and marker in line:
                return True
        if self.ended:
            return False
        stacks = self._stacks()
        raise AssertionError(
            f"child did not reach {marker!r} in {timeout}s:\n{self.causes()}\n{stacks}"
        )

    def _stacks(self) -> str:
        """Every thread's stack of the Python process (faulthandler, on SIGABRT)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGABRT)
        dumped: list[str] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                break
            dumped.append(line)
        heads = ("Thread 0x", "Current thread", "  File")
        python = [line for line in dumped if line.startswith(heads)]
        return "".join(python[-200:]) or "".join(dumped[-60:])

    def kill(self) -> bool:
        """SIGKILL the whole process group; True if it was still running."""
        alive = self.process.poll() is None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        return alive

    def finish(self) -> int:
        self.wait_for(None, CHILD_TIMEOUT_S)
        return self.process.wait(timeout=60)

    def tail(self) -> str:
        return "".join(self.log[-40:])

    def causes(self) -> str:
        """The log's exception lines and its tail."""
        causes = [line for line in self.log if "Caused by" in line or "Error:" in line]
        return "".join(causes[-20:]) + "\n...\n" + self.tail()


def _write_instance_config(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")


def _moments(rng: random.Random, markers: tuple[str, ...]) -> Iterator[str]:
    """The kill moments, drawn from ``markers`` without repeats until each was drawn (a run
    with as many kills as markers hits every one)."""
    while True:
        yield from rng.sample(markers, len(markers))


def _kill_at_a_moment(
    child: Child,
    rng: random.Random,
    moment: str,
    longest_s: float,
    counts: Counter[str],
) -> None:
    """SIGKILL ``child`` at ``moment`` (a log line, or ``time``: up to ``longest_s`` after its
    start); count the kill, or how the child ended before it."""
    if moment == "time":
        reached = True
        time.sleep(rng.uniform(1.0, longest_s))
    else:
        reached = child.wait_for(moment, CHILD_TIMEOUT_S)
        time.sleep(rng.uniform(0.0, 0.05))
    if reached and child.kill():
        counts["killed"] += 1
        counts[f"killed at {moment}"] += 1
    else:
        counts["completed" if child.finish() == 0 else "failed"] += 1


def _run_with_kills(
    bootstrap: str,
    new_topic,
    tmp_path: Path,
    guarantee: str,
    kills_wanted: int,
    sink_extra: dict[str, str] | None = None,
) -> tuple[Counter[int], dict[str, int]]:
    rng = random.Random(_seed())
    source, sink = new_topic(partitions=PARTITIONS), new_topic(partitions=PARTITIONS)
    home = tmp_path / "dagster_home"
    _write_instance_config(home)
    args = [bootstrap, source, sink, guarantee]
    if sink_extra:
        args.append(json.dumps(sink_extra))
    if guarantee != "exactly-once":
        markers = ALO_MARKERS
    elif sink_extra and sink_extra.get("sink.transaction-scope") == "split":
        markers = ("time", *SPLIT_MARKERS)
    else:
        markers = ("time", *EOS_MARKERS)
    slices = max(kills_wanted, 1)
    per_slice = RECORDS // slices
    produced = 0
    counts: Counter[str] = Counter()
    rounds = 0
    moments = _moments(rng, markers)
    while counts["killed"] < kills_wanted:
        rounds += 1
        assert rounds <= kills_wanted * 3, f"too few kills landed: {dict(counts)}"
        if produced < RECORDS:
            count = per_slice if rounds < slices else RECORDS - produced
            _produce_slice(bootstrap, source, produced, count)
            produced += count
        _kill_at_a_moment(Child(args, home), rng, next(moments), 14.0, counts)
    if produced < RECORDS:
        _produce_slice(bootstrap, source, produced, RECORDS - produced)
    # Drain: unkilled runs until one succeeds (the input is complete, so one success drains it).
    for _attempt in range(3):
        child = Child(args, home)
        code = child.finish()
        counts["drain runs"] += 1
        if code == 0:
            break
    else:
        raise AssertionError(f"the drain run failed:\n{child.tail()}")
    print(f"{guarantee} kill test: {dict(counts)}", flush=True)
    return _output_ids(bootstrap, sink), dict(counts)


@pytest.mark.parametrize("scope", ["run", "split"])
def test_exactly_once_survives_sigkill(kafka_bootstrap, new_topic, tmp_path, scope) -> None:
    extra = {"sink.transaction-scope": scope}
    ids, counts = _run_with_kills(
        kafka_bootstrap, new_topic, tmp_path, "exactly-once", EOS_KILLS, extra
    )
    assert counts["killed"] >= EOS_KILLS
    missing = [i for i in range(RECORDS) if ids[i] == 0]
    duplicated = {i: n for i, n in ids.items() if n > 1}
    extra = [i for i in ids if not 0 <= i < RECORDS]
    assert not missing, f"{len(missing)} input records lost, e.g. {missing[:10]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated)[:10]}"
    assert not extra
    assert sum(ids.values()) == RECORDS


def test_at_least_once_loses_nothing_under_sigkill(kafka_bootstrap, new_topic, tmp_path) -> None:
    ids, counts = _run_with_kills(kafka_bootstrap, new_topic, tmp_path, "at-least-once", ALO_KILLS)
    assert counts["killed"] >= ALO_KILLS
    missing = [i for i in range(RECORDS) if ids[i] == 0]
    assert not missing, f"{len(missing)} input records lost, e.g. {missing[:10]}"
    duplicates = sum(n - 1 for n in ids.values() if n > 1)
    print(f"at-least-once: {duplicates} duplicate record(s) after {counts['killed']} kills")


STATEFUL_KILLS = int(os.environ.get("KILL_TEST_STATEFUL_KILLS", "1"))
T0_MS = 1_795_000_000_000


def _produce_readings(bootstrap: str, topic: str, first: int, count: int) -> None:
    """Readings ``first`` to ``first + count - 1`` in event-time order: 4 a second, 3 sensors."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(first, first + count):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0_MS / 1000 + i / 4))
        value = {
            "id": i,
            "sensor": f"s{i % 3}",
            "reading": i % 7,
            "ts": f"{stamp}.{(i % 4) * 250:03d}",
        }
        producer.produce(topic, json.dumps(value).encode())
    assert producer.flush(30) == 0


def _closed_windows(rows: list[dict], sent: int) -> list[dict]:
    """Of Flink's 10-second windows over ``sent`` readings, those its watermark has closed (in
    event-time order nothing is late; the watermark ends 2 s behind the last reading)."""
    last_ms = T0_MS + (sent - 1) * 250
    return [
        r for r in rows
        if calendar.timegm(time.strptime(r["window_start"], "%Y-%m-%d %H:%M:%S")) + 10 - 0.001
        <= (last_ms - 2000) / 1000
    ]  # fmt: skip


def test_a_stateful_exactly_once_asset_survives_sigkill(
    kafka_bootstrap, new_topic, tmp_path, oracle
) -> None:
    """Event-time windows into an exactly-once sink (`dkf sql run`), killed at random moments,
    then run to completion: the sink holds exactly the windows Flink writes."""
    from tests.integration.test_flink_oracle import for_flink
    from tests.integration.test_flink_sql import script, values

    rng = random.Random(_seed())
    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    path = tmp_path / "windows.sql"
    path.write_text(script("tumble_exactly_once.sql", source, ours))
    home = tmp_path / "dkf_home"
    _write_instance_config(home)
    env = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "DKF_HOME": str(home)}
    sent = 0

    def produce(count: int) -> None:
        nonlocal sent
        _produce_readings(kafka_bootstrap, source, sent, count)
        sent += count

    counts: Counter[str] = Counter()
    moments = _moments(rng, ("time", *EOS_MARKERS))
    while counts["killed"] < STATEFUL_KILLS:
        assert counts["rounds"] < STATEFUL_KILLS * 3, f"too few kills landed: {dict(counts)}"
        counts["rounds"] += 1
        produce(400)
        child = Child(["sql", "run", str(path)], home, "dagster_kafka_flinklike.cli", env)
        _kill_at_a_moment(child, rng, next(moments), 20.0, counts)
    produce(400)
    flink = for_flink(script("tumble_exactly_once.sql", source, theirs))
    flink = flink.replace("'exactly-once'", "'at-least-once'")
    flink_done = oracle.submit(flink, bootstrap=kafka_bootstrap)  # all input is in the topic
    child = Child(["sql", "run", str(path)], home, "dagster_kafka_flinklike.cli", env)
    assert child.finish() == 0, child.tail()
    print(f"stateful exactly-once kill test: {dict(counts)}", flush=True)
    flink_done.result()
    closed = _closed_windows(values(kafka_bootstrap, theirs), sent)
    mine = values(kafka_bootstrap, ours)
    assert len(mine) == len(closed) > 3 * (sent // 40 - 2)
    key = lambda r: (r["window_start"], r["sensor"])  # noqa: E731
    assert sorted(mine, key=key) == sorted(closed, key=key)
