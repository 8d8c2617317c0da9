"""Sensors, checks and topic observations against a cluster that is down, paused or losing a
partition leader, on a real 3-node KRaft cluster of this module's own.

Four observers of one streaming asset, each with a Dagster instance of its own: the discovery
sensor and the new-data sensor, ticked by Dagster's own evaluation (``evaluate_tick``, with the
instance and the definitions), the observation of the source topic and the asset's checks run
alone, both executed as jobs. Every fault meets the four at once (in threads: a fault costs the
longest of them, not their sum). Each returns within its budget (the defaults when the whole
cluster is down, a few seconds when one node is: see :func:`short_budgets`), with the right
answer or a reason naming the bootstrap servers, never a wrong figure; once the cluster is back,
the next evaluation gives the right answer (the records produced meanwhile, the partition
added). A real ``dagster-daemon`` ticks a new-data sensor through the outage of the whole
cluster: its ticks skip with the reason, and the first after the outage requests the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from dagster import (
    AssetKey,
    AssetSelection,
    DagsterInstance,
    Definitions,
    ResourceDefinition,
    RunsFilter,
    build_sensor_context,
    define_asset_job,
)
from dagster._core.instance.ref import InstanceRef
from dagster._core.scheduler.instigation import InstigatorType, TickStatus

from dagster_kafka_flinklike import (
    ConsumerLagCheck,
    HangingTransactionsCheck,
    KafkaResource,
    KafkaTableSpec,
    TransactionTimeoutCheck,
    build_kafka_discovery_sensor,
    build_kafka_new_data_sensor,
    build_kafka_source_assets,
    checks,
    kafka_streaming_asset,
    sensors,
    source_assets,
)
from dagster_kafka_flinklike.local import EmbeddedKafkaCluster
from tests.conftest import KEEP_EVERYTHING, produce, wait_for_topic
from tests.e2e.test_daemon import BIN, WORKSPACE, _stop

pytestmark = [pytest.mark.kafka]

PARTITIONS = 3
#: What an evaluation may take beyond its Kafka budget: Dagster's own work around it (a run and
#: its events, the instance) on a busy 2-core machine.
SLACK_S = 8.0
#: The observers' budget in the tests of a node's fault (see :func:`short_budgets`).
SHORT_BUDGET_S = 5.0
#: Dagster's sensor evaluation timeout (its default): a tick that takes longer fails.
DAGSTER_SENSOR_TIMEOUT_S = 60.0
#: The checks that ask the cluster: the lag, the sink's transactions and its timeout.
KAFKA_CHECKS = ("kafka_consumer_lag", "kafka_hanging_transactions", "kafka_transaction_timeout")
COLUMNS = [{"name": "id", "type": "BIGINT"}]
#: The daemon's instance: runs are queued, never launched (the test needs the request, not Spark).
DAGSTER_YAML = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    max_concurrent_runs: 0
"""
DAEMON_SENSOR = "daemon_copy_new_data"
#: Stops the cluster if this process dies without its teardown (a librdkafka abort, a kill):
#: its nodes are detached processes, one of them maybe paused.
WATCHDOG = """
import os, sys, time
from pathlib import Path
from dagster_kafka_flinklike.local import EmbeddedKafkaCluster
parent, path = int(sys.argv[1]), sys.argv[2]
while os.getppid() == parent:
    time.sleep(1)
EmbeddedKafkaCluster(Path(path), 3).stop(timeout=5)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedKafkaCluster]:
    """A 3-node cluster of this module's own (its faults must not reach other tests)."""
    path = tmp_path_factory.mktemp("kafka-cluster")
    kafka = EmbeddedKafkaCluster(path, 3, extra_properties=KEEP_EVERYTHING)
    watchdog = subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, str(os.getpid()), str(path)], start_new_session=True
    )
    try:
        kafka.start(timeout=240)
        yield kafka
    finally:
        kafka.stop()
        watchdog.kill()
        watchdog.wait()


@pytest.fixture(autouse=True)
def drop_sensor_clients() -> Iterator[None]:
    """The sensors keep an admin client per cluster for the process's life."""
    yield
    sensors._CLIENTS.clear()


@pytest.fixture(autouse=True)
def whole_cluster(cluster: EmbeddedKafkaCluster) -> None:
    """Every node runs when a test begins (a test may leave one dead)."""
    cluster.start(timeout=240)


@contextlib.contextmanager
def short_budgets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Observers whose Kafka requests end within :data:`SHORT_BUDGET_S`: a fault costs the test
    seconds, not the half minute of the defaults, and an evaluation not held to its budget (two
    requests that each wait their whole timeout, 10 or 15 s) fails the test's bound."""
    with monkeypatch.context() as patch:
        patch.setattr(sensors, "TICK_BUDGET_S", SHORT_BUDGET_S)
        patch.setattr(checks, "CHECK_BUDGET_S", SHORT_BUDGET_S)
        patch.setattr(source_assets, "OBSERVE_BUDGET_S", SHORT_BUDGET_S)
        yield


def _topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions)])[name].result(60)
    wait_for_topic(admin, name, partitions, timeout=60)
    return name


def _leader(cluster: EmbeddedKafkaCluster, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    deadline = time.monotonic() + 60
    while True:
        partitions = admin.list_topics(topic, timeout=30).topics[topic].partitions
        leader = int(partitions[partition].leader)
        if leader >= 0:
            return leader
        assert time.monotonic() < deadline, f"{topic}-{partition} has no leader"
        time.sleep(0.2)


def _restart(cluster: EmbeddedKafkaCluster) -> None:
    """Start the nodes that are down; wait until the cluster has formed again."""
    began = time.monotonic()
    cluster.start(timeout=240)
    print(f"cluster restarted in {time.monotonic() - began:.1f} s", flush=True)


def _signal(cluster: EmbeddedKafkaCluster, node_id: int, signum: int) -> None:
    pid = cluster.node(node_id).pid
    assert pid is not None, f"node {node_id} is not running"
    os.kill(pid, signum)


def _error_text(result: Any) -> str:
    """Every message of the errors (and their causes) that failed a run's steps."""
    texts = []
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        while error is not None:
            texts.append(str(error.message).strip())
            error = error.cause
    return " | ".join(reversed(texts))  # the innermost (the connector's own) first


@dataclass
class Answer:
    """What one observer answered, and how long it took."""

    elapsed: float
    #: Why it could not answer (a tick's skip, a failed observation), or None.
    reason: str | None = None
    #: The answer: a tick's pending records and run keys, the end offsets, the checks' results.
    value: Any = None
    run_keys: list[str] = field(default_factory=list)


class Observers:
    """A streaming asset over a source topic and an exactly-once sink, and its four observers."""

    def __init__(self, cluster: EmbeddedKafkaCluster, name: str) -> None:
        self.cluster = cluster
        self.servers = cluster.bootstrap_servers
        tag = f"{name}-{time.time_ns()}"
        self.source = _topic(self.servers, f"in-{tag}")
        _topic(self.servers, f"out-{tag}")
        self.partitions = PARTITIONS
        self.produced: Counter[int] = Counter()
        source = KafkaTableSpec.from_options(
            {
                "connector": "kafka",
                "topic": self.source,
                "properties.group.id": f"group-{tag}",
                "scan.startup.mode": "earliest-offset",
                "format": "json",
            },
            columns=COLUMNS,
            role="source",
            name="events",
        )
        sink = KafkaTableSpec.from_options(
            {
                "connector": "kafka",
                "topic": f"out-{tag}",
                "format": "json",
                "sink.delivery-guarantee": "exactly-once",
                "sink.transactional-id-prefix": f"txn-{tag}",
            },
            columns=COLUMNS,
            role="sink",
        )
        asset_checks = [
            ConsumerLagCheck(max_pending_records=1_000_000),
            HangingTransactionsCheck(),
            TransactionTimeoutCheck(),
        ]

        @kafka_streaming_asset(sources={"events": source}, sink=sink, checks=asset_checks)
        def copied(context, events):  # type: ignore[no-untyped-def]
            return events

        [topics] = build_kafka_source_assets([copied])
        self.discovery = build_kafka_discovery_sensor(source, [copied], minimum_interval_seconds=30)
        self.new_data = build_kafka_new_data_sensor(copied)
        self.defs = Definitions(
            assets=[copied, topics],
            sensors=[self.discovery, self.new_data],
            jobs=[
                define_asset_job("observe", selection=[AssetKey("events")]),
                define_asset_job("checks", selection=AssetSelection.checks_for_assets(copied)),
            ],
            # Checks run alone read no data: no Spark session.
            resources={
                "kafka": KafkaResource(bootstrap_servers=self.servers),
                "pyspark": ResourceDefinition.none_resource(),
            },
        )
        # An instance per observer, as they run at once (without capturing compute logs: runs
        # in threads would swap the process's stdout and stderr under each other).
        self.instances = {
            kind: DagsterInstance.ephemeral()
            for kind in ("discovery", "new_data", "observe", "checks")
        }
        self.cursors: dict[str, str | None] = {}

    # -- the data -------------------------------------------------------------------------------
    def produce(self, per_partition: int, partitions: int | None = None) -> None:
        for p in range(partitions or self.partitions):
            first = self.produced[p]
            values = [json.dumps({"id": i}).encode() for i in range(first, first + per_partition)]
            produce(self.servers, self.source, [(None, v, p) for v in values])
            self.produced[p] += per_partition

    def add_partition(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.servers})
        self.partitions += 1
        admin.create_partitions([NewPartitions(self.source, self.partitions)])[self.source].result(
            60
        )
        wait_for_topic(admin, self.source, self.partitions, timeout=60)

    @property
    def total(self) -> int:
        return sum(self.produced.values())

    @property
    def end_offsets(self) -> dict[str, int]:
        return {f"{self.source}-{p}": self.produced[p] for p in range(self.partitions)}

    # -- the observers --------------------------------------------------------------------------
    def tick(self, kind: str) -> Answer:
        sensor = self.discovery if kind == "discovery" else self.new_data
        began = time.monotonic()
        context = build_sensor_context(
            instance=self.instances[kind],
            cursor=self.cursors.get(kind),
            definitions=self.defs,
            resources={"kafka": KafkaResource(bootstrap_servers=self.servers)},
        )
        data = sensor.evaluate_tick(context)
        elapsed = time.monotonic() - began
        self.cursors[kind] = data.cursor
        keys = [r.run_key for r in data.run_requests or []]
        pending = [e.metadata["pendingRecords"].value for e in data.asset_events or []]
        message = data.skip_message or ""
        if message.startswith("Could not"):  # the tick could not ask the cluster
            return Answer(elapsed, reason=message)
        return Answer(elapsed, value=(pending[0] if pending else message), run_keys=keys)

    def observe(self) -> Answer:
        instance = self.instances["observe"]
        began = time.monotonic()
        job = self.defs.resolve_job_def("observe")
        result = job.execute_in_process(instance=instance, raise_on_error=False)
        elapsed = time.monotonic() - began
        if not result.success:
            return Answer(elapsed, reason=_error_text(result))
        [record] = instance.fetch_observations(AssetKey("events"), limit=1).records
        return Answer(elapsed, value=record.asset_observation.metadata["endOffsets"].value)

    def check(self) -> Answer:
        began = time.monotonic()
        job = self.defs.resolve_job_def("checks")
        result = job.execute_in_process(instance=self.instances["checks"], raise_on_error=False)
        elapsed = time.monotonic() - began
        assert result.success, f"a check failed its run: {_error_text(result)}"
        found = {e.check_name: e for e in result.get_asset_check_evaluations()}
        return Answer(elapsed, value=found)

    def evaluate(self, label: str) -> dict[str, Answer]:
        """All four at once (``label``: the cluster's state, for the test's output)."""
        calls: dict[str, Callable[[], Answer]] = {
            "discovery": lambda: self.tick("discovery"),
            "new_data": lambda: self.tick("new_data"),
            "observe": self.observe,
            "checks": self.check,
        }
        with ThreadPoolExecutor(len(calls)) as pool:
            futures = {name: pool.submit(call) for name, call in calls.items()}
            answers = {name: future.result() for name, future in futures.items()}
        said = ", ".join(
            f"{name} {a.elapsed:.1f} s{' (' + a.reason[:300] + ')' if a.reason else ''}"
            for name, a in answers.items()
        )
        failed = [
            f"{c}: {e.description[:300]}"
            for c, e in answers["checks"].value.items()
            if not e.passed
        ]
        said += f"; failed checks: {failed}" if failed else ""
        print(f"{self.source} {label}: {said}", flush=True)
        return answers

    # -- what they must say ---------------------------------------------------------------------
    def assert_in_time(self, answers: dict[str, Answer], *, cluster_down: bool = False) -> None:
        """Each answered within its budget (the checks: one budget when the cluster is down,
        as a cluster that did not answer one check is not asked again by the next)."""
        budgets = {
            "discovery": sensors.TICK_BUDGET_S,
            "new_data": sensors.TICK_BUDGET_S,
            "observe": source_assets.OBSERVE_BUDGET_S,
            "checks": checks.CHECK_BUDGET_S * (1 if cluster_down else len(KAFKA_CHECKS)),
        }
        for name, answer in answers.items():
            assert answer.elapsed < budgets[name] + SLACK_S, (name, answer)
        for name in ("discovery", "new_data"):
            assert answers[name].elapsed < DAGSTER_SENSOR_TIMEOUT_S - SLACK_S, answers[name]

    def assert_reason(self, answers: dict[str, Answer], names: tuple[str, ...]) -> None:
        """The observers ``names`` could not answer and say why, naming the cluster."""
        for name in names:
            if name == "checks":
                for check in KAFKA_CHECKS:
                    result = answers[name].value[check]
                    assert not result.passed, (check, result.description)
                    assert (
                        f"could not be evaluated against Kafka at {self.servers}"
                        in result.description
                    ), result.description
            else:
                reason = answers[name].reason
                assert reason is not None and self.servers in reason, (name, answers[name])

    def is_right(self, name: str, answer: Answer, *, requests: int) -> bool:
        """Whether ``answer`` is the right answer of observer ``name`` for the data produced
        (``requests``: how many runs the discovery sensor requests)."""
        if answer.reason is not None:
            return False
        if name == "discovery":
            return len(answer.run_keys) == requests
        if name == "new_data":
            return answer.value == self.total and len(answer.run_keys) == 1
        if name == "observe":
            return bool(answer.value == self.end_offsets)
        lag = answer.value["kafka_consumer_lag"]
        return (
            all(answer.value[c].passed for c in KAFKA_CHECKS)
            and lag.metadata["pendingRecords"].value == self.total
            and lag.description.startswith(f"{self.total} pending record(s)")
        )

    def assert_right(self, answers: dict[str, Answer], *, requests: int = 0) -> None:
        for name, answer in answers.items():
            assert self.is_right(name, answer, requests=requests), (name, self.total, answer)

    def assert_right_or_reason(self, answers: dict[str, Answer]) -> None:
        """Each observer gave the right answer or said why it could not, naming the cluster:
        never a wrong figure."""
        for name, answer in answers.items():
            if name == "checks":
                for check in KAFKA_CHECKS:
                    result = answer.value[check]
                    if not result.passed:
                        assert f"against Kafka at {self.servers}" in result.description, result
                    elif check == "kafka_consumer_lag":
                        assert result.metadata["pendingRecords"].value == self.total, result
            elif answer.reason is not None:
                assert self.servers in answer.reason, (name, answer)
            else:
                assert self.is_right(name, answer, requests=0), (name, self.total, answer)


# -- the daemon ---------------------------------------------------------------------------------
class Daemon:
    """A real ``dagster-daemon`` over ``tests.e2e.daemon_location`` (a new-data sensor that
    requests a run from 5 pending records, ticking every 5 s) on the cluster."""

    def __init__(self, tmp_path: Path, servers: str) -> None:
        self.servers = servers
        self.source = _topic(servers, f"daemon-in-{time.time_ns()}")
        sink = _topic(servers, f"daemon-out-{time.time_ns()}", partitions=1)
        self.home = tmp_path / "dagster_home"
        self.home.mkdir(parents=True)
        (self.home / "dagster.yaml").write_text(DAGSTER_YAML)
        (tmp_path / "workspace.yaml").write_text(WORKSPACE)
        env = {
            **os.environ,
            "DAGSTER_HOME": str(self.home),
            "KAFKA_BOOTSTRAP_SERVERS": servers,
            "DKF_DAEMON_SOURCE": self.source,
            "DKF_DAEMON_SINK": sink,
            "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
            ),
        }
        # The instance's storage first: the daemon and this test would race to create it.
        self.instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(self.home)))
        self.instance.get_runs(limit=1)
        self.log_path = tmp_path / "daemon.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(tmp_path / "workspace.yaml")],
            cwd=tmp_path,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text()[-4000:]

    def ticks(self) -> list[Any]:
        """The sensor's ticks, oldest first."""
        states = self.instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
        found = [
            tick
            for state in states
            if state.instigator_name == DAEMON_SENSOR
            for tick in self.instance.get_ticks(
                state.instigator_origin_id, state.selector_id, limit=200
            )
        ]
        return sorted(found, key=lambda t: t.timestamp)

    def wait_for(self, what: str, found: Callable[[list[Any]], bool], timeout: float) -> None:
        began = time.monotonic()
        while not found(self.ticks()):
            assert self.process.poll() is None, f"the daemon died: {self.log()}"
            assert time.monotonic() < began + timeout, (
                f"no tick {what} in {timeout:.0f} s: {self.log()}"
            )
            time.sleep(1)
        print(f"daemon: a tick {what} after {time.monotonic() - began:.1f} s", flush=True)

    def requested_runs(self) -> list[Any]:
        return self.instance.get_runs(RunsFilter(tags={sensors.SENSOR_TAG: DAEMON_SENSOR}))

    def stop(self) -> None:
        _stop(self.process)
        self._log.close()


# -- the faults ---------------------------------------------------------------------------------
def test_a_cluster_killed_whole_gives_reasons_in_time_then_the_right_answers(
    cluster: EmbeddedKafkaCluster, tmp_path: Path
) -> None:
    daemon = Daemon(tmp_path / "daemon", cluster.bootstrap_servers)
    try:
        observers = Observers(cluster, "down")
        observers.produce(10)
        observers.assert_right(observers.evaluate("healthy"))
        observers.produce(5)  # after the last ticks: the next ones must see them

        for node in cluster.nodes:
            _signal(cluster, node.node_id, signal.SIGKILL)
        killed_at = time.time()
        down = observers.evaluate("killed whole")
        observers.assert_in_time(down, cluster_down=True)
        observers.assert_reason(down, ("discovery", "new_data", "observe", "checks"))
        assert "the next tick asks again" in str(down["new_data"].reason)
        daemon.wait_for(
            "skipped during the outage with the reason",
            lambda ticks: any(
                t.timestamp > killed_at
                and t.status == TickStatus.SKIPPED
                and cluster.bootstrap_servers in (t.skip_reason or "")
                for t in ticks
            ),
            timeout=120,  # the daemon may still be starting
        )

        _restart(cluster)
        wait_for_topic(
            AdminClient({"bootstrap.servers": cluster.bootstrap_servers}),
            observers.source,
            PARTITIONS,
            timeout=60,
        )
        observers.add_partition()
        back = observers.evaluate("restarted")
        observers.assert_right(back, requests=1)  # the new partition is discovered
        assert back["new_data"].run_keys != [], back["new_data"]

        produce(
            cluster.bootstrap_servers,
            daemon.source,
            [(None, json.dumps({"id": i}).encode()) for i in range(20)],
        )
        daemon.wait_for(
            "requesting the run after the outage",
            lambda ticks: any(t.status == TickStatus.SUCCESS and t.run_ids for t in ticks),
            timeout=90,
        )
        ticks = daemon.ticks()
        assert not [t for t in ticks if t.status == TickStatus.FAILURE], [
            (t.status, t.error) for t in ticks if t.status == TickStatus.FAILURE
        ]
        assert daemon.process.poll() is None, daemon.log()
        [run] = daemon.requested_runs()
        assert run.tags[sensors.ATTEMPT_TAG] == "1"
    finally:
        daemon.stop()


def test_a_paused_node_gives_the_right_answers_or_reasons_in_time(
    cluster: EmbeddedKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    observers = Observers(cluster, "paused")
    observers.produce(10)
    before = observers.evaluate("healthy")
    observers.assert_right(before)

    leader = _leader(cluster, observers.source, 0)
    with short_budgets(monkeypatch):
        _signal(cluster, leader, signal.SIGSTOP)
        try:
            paused = observers.evaluate(f"node {leader} paused")
        finally:
            _signal(cluster, leader, signal.SIGCONT)
        observers.assert_in_time(paused)
    observers.assert_right_or_reason(paused)

    cluster.wait_formed(120)
    observers.produce(5)
    after = observers.evaluate("resumed")
    observers.assert_right(after)
    assert after["new_data"].run_keys != before["new_data"].run_keys  # the new records


def test_a_killed_partition_leader_gives_the_right_answers_or_reasons_in_time(
    cluster: EmbeddedKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    observers = Observers(cluster, "leader")
    observers.produce(10)
    before = observers.evaluate("healthy")
    observers.assert_right(before)

    leader = _leader(cluster, observers.source, 0)
    with short_budgets(monkeypatch):
        _signal(cluster, leader, signal.SIGKILL)
        killed = observers.evaluate(f"leader {leader} killed")
        observers.assert_in_time(killed)
    observers.assert_right_or_reason(killed)

    # The cluster recovers without the node: its partitions get new leaders, which take the
    # records produced meanwhile (the node is started again by the next test).
    observers.produce(5)
    after = observers.evaluate("new leaders elected")
    observers.assert_right(after)
    assert after["new_data"].run_keys != before["new_data"].run_keys  # the new records


def test_group_requests_survive_a_killed_coordinator(cluster: EmbeddedKafkaCluster) -> None:
    """Reading, committing and asking about consumer groups while a group's coordinator is
    killed: each request answers or fails with the connector's own error, and the process
    lives. (librdkafka's admin client aborts the process when a coordinator it asked about a
    group goes away; the connector asks those questions through consumers of the group and
    ListGroups.)"""
    from dagster_kafka_flinklike.errors import KafkaConnectorError
    from dagster_kafka_flinklike.source.admin import KafkaAdmin

    topic = _topic(cluster.bootstrap_servers, f"groups-{time.time_ns()}")
    partitions = [(topic, p) for p in range(PARTITIONS)]
    groups = [f"{topic}-g{i}" for i in range(4)]
    admins = {g: KafkaAdmin({"bootstrap.servers": cluster.bootstrap_servers}, g) for g in groups}
    for admin in admins.values():
        admin.commit_group_offsets(dict.fromkeys(partitions, 0))
    answered: Counter[str] = Counter()
    refused: list[BaseException] = []
    done = time.monotonic() + 3600

    def ask(worker: int) -> None:
        step = 0
        while time.monotonic() < done:
            admin = admins[groups[(worker + step) % len(groups)]]
            admin.timeout_s = 5.0
            try:
                if step % 3 == 0:
                    admin.committed_offsets(partitions)
                elif step % 3 == 1:
                    admin.commit_group_offsets(dict.fromkeys(partitions, step))
                else:
                    admin.group_in_use()
                answered[worker] += 1
            except KafkaConnectorError:
                answered["refused"] += 1
            except BaseException as exc:
                refused.append(exc)
                return
            step += 1

    # The node that coordinates the first group (asked before any fault: the admin client's
    # group requests are safe while the coordinator stays).
    described = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    coordinator = described.describe_consumer_groups([groups[0]])[groups[0]].result(60)
    with ThreadPoolExecutor(3) as pool:
        workers = [pool.submit(ask, w) for w in range(3)]
        try:
            time.sleep(2)
            _signal(cluster, coordinator.coordinator.id, signal.SIGKILL)
            time.sleep(3)
            _restart(cluster)
            time.sleep(2)  # and asked again once it is back
        finally:
            done = time.monotonic()
        for worker in workers:
            worker.result()
    assert not refused, refused
    assert all(answered[w] > 0 for w in range(3)), answered
    print(f"group requests through a coordinator kill: {dict(answered)}")
    for admin in admins.values():  # every group's offsets still read back, as last committed
        admin.timeout_s = 60.0
        committed = admin.committed_offsets(partitions)
        assert set(committed) == set(partitions) and len(set(committed.values())) == 1
