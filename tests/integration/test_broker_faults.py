"""Delivery guarantees under broker faults, on a real 3-node KRaft cluster (replication factor 3,
``min.insync.replicas`` 2).

Each round produces a slice of the input and materializes the copy asset (the kill tests' asset,
:mod:`.kill_child`) while, at a moment drawn from a seeded generator, a thread applies one
fault: SIGKILL of the leader of a sink partition, of another node, or of every node (restarted
at once), or a node paused (SIGSTOP) for longer than the transaction timeout; or the run itself
is SIGKILLed (it then runs in its own process, killed at one of the kill tests' moments). The
run ends as it may, within bounded time: it succeeds, or it fails with one of the connector's
errors. Dead nodes restart; the cluster forms again. After the
rounds, runs repeat until one succeeds over the complete input, and an independent
read_committed drain counts every input id in the output: exactly-once, none lost and none
twice; at-least-once, none lost and duplicates only from the input that failed runs had not
checkpointed.

Sizes: ``FAULT_TEST_RECORDS``, ``FAULT_TEST_ROUNDS`` (exactly-once), ``FAULT_TEST_ALO_ROUNDS``
(at-least-once; half as many unless set);
``FAULT_TEST_SEED`` replays the faults (their moments are times, so a replay is close, not
exact); ``make faults`` runs the long version. The faults are taken in the order of
:data:`FAULTS`, so a CI-sized run of three rounds meets a leader kill, a cluster kill and a
pause, and a long run eleven client kills, four broker kills and a pause in every sixteen rounds.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import KafkaResource, SparkResource, errors
from dagster_kafka_flinklike.local import EmbeddedKafkaCluster
from dagster_kafka_flinklike.spark import local_spark_config
from tests.conftest import KEEP_EVERYTHING
from tests.integration.kill_child import build
from tests.integration.test_kills import (
    ALO_MARKERS,
    EOS_MARKERS,
    SPLIT_MARKERS,
    Child,
    _kill_at_a_moment,
    _output_ids,
    _produce_slice,
    _seed,
    _write_instance_config,
)

pytestmark = [pytest.mark.spark]

RECORDS = int(os.environ.get("FAULT_TEST_RECORDS", "6000"))
ROUNDS = int(os.environ.get("FAULT_TEST_ROUNDS", "3"))
#: At-least-once rounds (its faults are the same kinds; its point is the bound of duplicates).
ALO_ROUNDS = int(os.environ.get("FAULT_TEST_ALO_ROUNDS", str(max(2, ROUNDS // 2))))
PARTITIONS = 3
#: The rounds' transactions: short, so that a pause outlives them (on a busy machine a round's
#: transaction may outlive it too: the run fails, as it should, and a later run reads again).
TRANSACTION_TIMEOUT_MS = 10_000
PAUSE_S = TRANSACTION_TIMEOUT_MS / 1000 + 3
#: How long a run may take, whatever the fault: the timeouts bound it.
RUN_BOUND_S = 240.0
#: The faults, taken in turn (the first ones when there are fewer rounds), then shuffled: of
#: sixteen rounds, eleven client kills, four broker kills (one of them the whole cluster) and a
#: pause, so that the long version's 320 rounds give the issue's 200 client and 50 broker kills
#: with a margin (a client run may end before its kill).
FAULTS = (
    "leader", "cluster", "pause", "client", "node", "client", "client", "client",
    "leader", "client", "client", "client", "client", "client", "client", "client",
)  # fmt: skip
_OURS = {name for name in dir(errors) if name.endswith("Error")}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedKafkaCluster]:
    """A 3-node cluster of this module's own (the faults must not reach other tests)."""
    kafka = EmbeddedKafkaCluster(
        tmp_path_factory.mktemp("kafka-cluster"), 3, extra_properties=KEEP_EVERYTHING
    )
    kafka.start(timeout=240)
    try:
        yield kafka
    finally:
        kafka.stop()


def _topic(bootstrap: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS)])[name].result(60)
    deadline = time.monotonic() + 60
    while True:
        partitions = admin.list_topics(name, timeout=10).topics[name].partitions
        if len(partitions) == PARTITIONS and all(p.leader >= 0 for p in partitions.values()):
            return name
        assert time.monotonic() < deadline, f"topic {name} has no leaders"
        time.sleep(0.2)


def _leader(cluster: EmbeddedKafkaCluster, topic: str, partition: int) -> int:
    """The partition's leader (waiting while it has none, as during an election)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    deadline = time.monotonic() + 60
    while True:
        partitions = admin.list_topics(topic, timeout=30).topics[topic].partitions
        leader = int(partitions[partition].leader)
        if leader >= 0 or time.monotonic() > deadline:
            return leader
        time.sleep(0.2)


def _signal_node(cluster: EmbeddedKafkaCluster, node_id: int, signum: int) -> None:
    pid = cluster.node(node_id).pid
    assert pid is not None, f"node {node_id} is not running"
    os.kill(pid, signum)


def _fault(fault: str, cluster: EmbeddedKafkaCluster, sink: str, rng: random.Random) -> str:
    """Apply ``fault`` now; what was done."""
    if fault == "cluster":
        # A node found down already (one the machine's load took, or a kill not yet restarted)
        # is said so; the others are killed, and all restart.
        down = [n.node_id for n in cluster.nodes if n.pid is None]
        for node in cluster.nodes:
            if node.node_id not in down:
                _signal_node(cluster, node.node_id, signal.SIGKILL)
        time.sleep(rng.uniform(0.5, 3.0))
        cluster.start(timeout=240)
        return "every node killed and restarted" + (f" (down already: {down})" if down else "")
    leader = _leader(cluster, sink, rng.randrange(PARTITIONS))
    if fault == "leader":
        _signal_node(cluster, leader, signal.SIGKILL)
        return f"sink leader {leader} killed"
    other = rng.choice([n for n in range(1, cluster.size + 1) if n != leader])
    if fault == "node":
        _signal_node(cluster, other, signal.SIGKILL)
        return f"node {other} killed"
    _signal_node(cluster, other, signal.SIGSTOP)
    try:
        time.sleep(PAUSE_S)
    finally:
        _signal_node(cluster, other, signal.SIGCONT)
    return f"node {other} paused {PAUSE_S:.0f} s"


def _failure(result) -> str:  # type: ignore[no-untyped-def]
    """The connector's error that failed the run (its class and message's start)."""
    [event] = result.get_step_failure_events()
    error = event.step_failure_data.error
    while error is not None:
        if error.cls_name in _OURS:
            return str(error.message).strip()[:120]  # "<module>.<class>: <message>"
        error = error.cause
    raise AssertionError(f"a run failed without one of the connector's errors: {event}")


def _run_with_faults(
    cluster: EmbeddedKafkaCluster,
    tmp_path: Path,
    guarantee: str,
    rounds: int,
    scope: dict[str, str] | None = None,
) -> tuple[Counter[int], Counter[str], int]:
    """The rounds and the drain; the output's ids, what happened, and (at-least-once) the input
    that failed runs had not checkpointed (the bound of duplicates). ``scope``: more sink
    options (``sink.transaction-scope``)."""
    rng = random.Random(_seed("FAULT_TEST_SEED"))
    bootstrap = cluster.bootstrap_servers
    tag = f"{guarantee}-{time.time_ns()}"
    source, sink = _topic(bootstrap, f"faults-in-{tag}"), _topic(bootstrap, f"faults-out-{tag}")
    options = {"properties.transaction.timeout.ms": str(TRANSACTION_TIMEOUT_MS), **(scope or {})}
    asset = build(source, sink, guarantee, options)
    home = tmp_path / "dagster_home"  # one instance for the runs here and in child processes
    _write_instance_config(home)
    instance = DagsterInstance.local_temp(tempdir=str(home))
    child_args = [bootstrap, source, sink, guarantee, json.dumps(options)]
    markers = ("time", *EOS_MARKERS) if guarantee == "exactly-once" else ALO_MARKERS
    if scope and scope.get("sink.transaction-scope") == "split":
        markers = ("time", *SPLIT_MARKERS)
    resources = {
        "kafka": KafkaResource(bootstrap_servers=bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }

    # The drain meets no fault: its transaction may take as long as the machine needs (the same
    # sink and transactional id; only the producer's timeout differs).
    drain = build(
        source, sink, guarantee, {"properties.transaction.timeout.ms": "120000", **(scope or {})}
    )

    def run(draining: bool = False) -> bool:
        began = time.monotonic()
        result = materialize(
            [drain if draining else asset],
            instance=instance,
            resources=resources,
            raise_on_error=False,
        )
        assert time.monotonic() - began < RUN_BOUND_S, "a run outlived its bound"
        if not result.success:
            counts[f"failed: {_failure(result)}"] += 1
        return bool(result.success)

    faults = [FAULTS[i % len(FAULTS)] for i in range(rounds)]
    rng.shuffle(faults)
    per_round = RECORDS // (rounds + 1)
    produced = checkpointed = bound = 0
    counts: Counter[str] = Counter()

    def killed_run() -> bool:
        """The run in its own process, SIGKILLed at a moment drawn like the kill tests'."""
        ends: Counter[str] = Counter()
        _kill_at_a_moment(Child(child_args, home), rng, markers, 10.0, ends)
        counts["client killed" if ends["killed"] else "client not killed (ended first)"] += 1
        return bool(ends["completed"])

    for fault in faults:
        _produce_slice(bootstrap, source, produced, per_round)
        produced += per_round
        if fault == "client":
            succeeded = killed_run()
        else:
            done: list[str] = []
            injector = threading.Timer(
                rng.uniform(0.5, 6.0),
                lambda f=fault, d=done: d.append(_fault(f, cluster, sink, rng)),
            )
            injector.start()
            succeeded = run()
            injector.join()  # a fault after the run's end still counts: the next run meets it
            counts[done[0] if done else "fault failed"] += 1
            counts[f"faults: {fault}"] += bool(done)
        if succeeded:
            checkpointed = produced
            counts["runs succeeded"] += 1
        else:
            bound += produced - checkpointed
            counts["runs failed"] += 1
        cluster.start(timeout=240)  # restart what died; the cluster forms again
    _produce_slice(bootstrap, source, produced, RECORDS - produced)
    for _attempt in range(3):
        counts["drain runs"] += 1
        if run(draining=True):
            break
        bound += RECORDS - checkpointed
    else:
        raise AssertionError(f"no drain run succeeded: {dict(counts)}")
    print(f"{guarantee} broker fault test: {dict(counts)}", flush=True)
    return _output_ids(bootstrap, sink), counts, bound


def _lost(ids: Counter[int]) -> list[int]:
    return [i for i in range(RECORDS) if ids[i] == 0]


def _figures(
    guarantee: str, ids: Counter[int], counts: Counter[str], bound: int, scope: str | None = None
) -> None:
    """The run's figures, one JSON line (the long version's report)."""
    broker_kills = sum(counts[f"faults: {f}"] for f in ("leader", "node", "cluster"))
    figures = {
        "guarantee": guarantee,
        **({"transaction_scope": scope} if scope else {}),
        "records": RECORDS,
        "client_kills": counts["client killed"],
        "broker_kills": broker_kills,
        "whole_cluster_kills": counts["faults: cluster"],
        "pauses": counts["faults: pause"],
        "runs_failed": counts["runs failed"],
        "lost": len(_lost(ids)),
        "duplicated": sum(n - 1 for n in ids.values() if n > 1),
        "duplicate_bound": bound if guarantee == "at-least-once" else 0,
    }
    print(json.dumps(figures), flush=True)


@pytest.mark.parametrize("scope", ["run", "split"])
def test_exactly_once_survives_broker_faults(cluster, tmp_path, scope) -> None:
    extra = {"sink.transaction-scope": scope}
    ids, counts, _ = _run_with_faults(cluster, tmp_path, "exactly-once", ROUNDS, extra)
    _figures("exactly-once", ids, counts, 0, scope)
    assert "fault failed" not in counts, dict(counts)
    lost = _lost(ids)
    duplicated = {i: n for i, n in ids.items() if n > 1}
    assert not lost, f"{len(lost)} input records lost, e.g. {lost[:10]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated)[:10]}"
    assert sum(ids.values()) == RECORDS


def test_at_least_once_loses_nothing_under_broker_faults(cluster, tmp_path) -> None:
    ids, counts, bound = _run_with_faults(cluster, tmp_path, "at-least-once", ALO_ROUNDS)
    _figures("at-least-once", ids, counts, bound)
    assert "fault failed" not in counts, dict(counts)
    lost = _lost(ids)
    assert not lost, f"{len(lost)} input records lost, e.g. {lost[:10]}"
    duplicates = sum(n - 1 for n in ids.values() if n > 1)
    assert duplicates <= bound, f"{duplicates} duplicates, more than the {bound} not checkpointed"
    assert set(ids) == set(range(RECORDS))
    print(f"at-least-once: {duplicates} duplicate(s), bound {bound}", flush=True)
