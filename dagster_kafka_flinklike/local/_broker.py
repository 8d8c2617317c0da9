"""A real single-node Apache Kafka broker (KRaft combined mode) on 127.0.0.1 for demos and tests.

The broker runs the pinned :data:`KAFKA_VERSION` in a detached JVM so that it outlives the
Python process that started it (the ``dkf local-kafka start`` command exits at once). Everything
it needs lives in one directory: its configuration, its data, its logs and a ``state.json``
that lets any later process find, report or stop it (the life cycle of :class:`JvmService`).
"""

from __future__ import annotations

import base64
import logging
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import EmbeddedKafkaError
from ._security import LISTENER_PORTS, KafkaListenerSecurity
from ._service import (
    HOST,
    JvmService,
    Probe,
    default_home,
    free_port,
    from_env_or_start,
    from_env_or_status,
    port_is_free,
    render_properties,
    rolling_log4j2_properties,
)
from .fetch import _KAFKA_NEEDS, KAFKA_VERSION, fetch_kafka, find_java

__all__ = [
    "EmbeddedKafka",
    "default_home",
    "ensure_local_kafka",
    "free_port",
    "render_log4j2_properties",
    "render_server_properties",
    "resolve_bootstrap_servers",
]

logger = logging.getLogger(__name__)

SERVER_PROPERTIES = "server.properties"
LOG4J2_PROPERTIES = "log4j2.properties"
DATA_DIR = "data"  # log.dirs: topic partitions and the KRaft metadata log
#: How long a cluster node waits for its fixed ports to be released before it gives up.
PORT_RELEASE_S = 20.0

_HOST = HOST
_JVM_OPTS = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)

# Defaults for a single-node development broker. Kafka's own defaults assume three brokers
# (replication factor 3 for internal topics), which a single node can never satisfy.
_BASE_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("process.roles", "broker,controller"),
    ("node.id", "1"),
    ("controller.listener.names", "CONTROLLER"),
    ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
    ("inter.broker.listener.name", "PLAINTEXT"),
    ("num.partitions", "1"),
    ("default.replication.factor", "1"),
    ("min.insync.replicas", "1"),
    ("offsets.topic.replication.factor", "1"),
    # 50 partitions by default: creating them delays the first consumer group / transaction by
    # seconds on a small machine and buys nothing on a single node.
    ("offsets.topic.num.partitions", "5"),
    ("transaction.state.log.replication.factor", "1"),
    ("transaction.state.log.min.isr", "1"),
    ("transaction.state.log.num.partitions", "5"),
    ("share.coordinator.state.topic.replication.factor", "1"),
    ("share.coordinator.state.topic.min.isr", "1"),
    ("group.initial.rebalance.delay.ms", "0"),
    # Kafka's default (true) is kept on purpose: it is what a fresh local Kafka does. Tests
    # that need "missing topics fail" pass auto.create.topics.enable=false in extra_properties.
    ("auto.create.topics.enable", "true"),
    ("delete.topic.enable", "true"),
    # 128 MiB by default, allocated once a compacted topic is cleaned: too much for -Xmx512m.
    ("log.cleaner.dedupe.buffer.size", "33554432"),
)


def _substitute(value: str, port: int, controller_port: int, data_dir: Path) -> str:
    return (
        value.replace("{port}", str(port))
        .replace("{controller_port}", str(controller_port))
        .replace("{data_dir}", str(data_dir))
    )


def replication_properties(nodes: int) -> dict[str, str]:
    """The replication settings of a cluster of ``nodes`` brokers: every partition and internal
    topic on up to three of them, and writes (``acks=all``) that need two in sync from three
    nodes on, so that one broker may die without loss or unavailability.

    Example:
        >>> replication_properties(3)["min.insync.replicas"]
        '2'
    """
    factor = str(min(nodes, 3))
    in_sync = "2" if nodes >= 3 else "1"
    return {
        "default.replication.factor": factor,
        "min.insync.replicas": in_sync,
        "offsets.topic.replication.factor": factor,
        "transaction.state.log.replication.factor": factor,
        "transaction.state.log.min.isr": in_sync,
        "share.coordinator.state.topic.replication.factor": factor,
        "share.coordinator.state.topic.min.isr": in_sync,
    }


def render_server_properties(
    data_dir: Path,
    *,
    port: int,
    controller_port: int,
    extra_properties: Mapping[str, str] | None = None,
    node_id: int = 1,
    voters: Mapping[int, int] | None = None,
) -> str:
    """The ``server.properties`` of a single-node KRaft broker+controller on 127.0.0.1.

    The controller quorum is static (``controller.quorum.voters``, formatted without
    ``--standalone``) so that a restart may use different ports on the same formatted storage.
    ``extra_properties`` come last and so override the defaults (``java.util.Properties`` keeps
    the last value of a key). In their values, ``{port}``, ``{controller_port}`` and
    ``{data_dir}`` are replaced by the broker's, e.g. to add a SASL listener next to the
    PLAINTEXT one.

    A node of a cluster has its ``node_id`` and the controller ports of every node
    (``voters``: node id to port), and replicates as :func:`replication_properties` says.

    Args:
        data_dir: the broker directory; partitions go to ``data_dir / "data"``.
        port: the PLAINTEXT client port.
        controller_port: the KRaft controller port.
        extra_properties: more broker settings, appended verbatim.

    Example:
        >>> text = render_server_properties(Path("/k"), port=9092, controller_port=9093)
        >>> "advertised.listeners=PLAINTEXT://127.0.0.1:9092" in text
        True
    """
    quorum = dict(voters or {node_id: controller_port})
    if quorum.get(node_id) != controller_port:
        raise EmbeddedKafkaError(
            f"Node {node_id} of the cluster must be one of its voters {quorum}, on its "
            f"controller port {controller_port}."
        )
    cluster = {"node.id": str(node_id), **(replication_properties(len(quorum)) if voters else {})}
    props: list[tuple[str, str]] = [
        *((key, cluster.get(key, value)) for key, value in _BASE_PROPERTIES),
        ("listeners", f"PLAINTEXT://{_HOST}:{port},CONTROLLER://{_HOST}:{controller_port}"),
        ("advertised.listeners", f"PLAINTEXT://{_HOST}:{port}"),
        (
            "controller.quorum.voters",
            ",".join(f"{node}@{_HOST}:{p}" for node, p in sorted(quorum.items())),
        ),
        ("log.dirs", str(data_dir / DATA_DIR)),
    ]
    extra = {
        key: _substitute(str(value), port, controller_port, data_dir)
        for key, value in (extra_properties or {}).items()
    }
    return render_properties(
        f"Generated by dagster_kafka_flinklike.local for Apache Kafka {KAFKA_VERSION}.\n"
        "Rewritten on every start: put changes in EmbeddedKafka(extra_properties=...).",
        props,
        extra,
        EmbeddedKafkaError,
    )


def render_log4j2_properties(data_dir: Path) -> str:
    """A log4j2 configuration sending the broker's INFO log to ``data_dir/logs/server.log``.

    The file rolls over at 20 MB and keeps three old files, so a long-lived demo broker does not
    fill the disk.

    Example:
        >>> "rootLogger.level = INFO" in render_log4j2_properties(Path("/k"))
        True
    """
    return rolling_log4j2_properties(
        data_dir / EmbeddedKafka.log_name,
        "dkf-embedded-kafka",
        "the embedded broker's log",
        "logger.request.name = kafka.request.logger\nlogger.request.level = WARN\n",
    )


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as Kafka's Uuid)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka avoids ids that look like command-line flags
            return text


class EmbeddedKafka(JvmService):
    """A single-node Kafka broker in ``data_dir``, started as a detached ``java`` process.

    The broker listens on 127.0.0.1 only, with a PLAINTEXT client listener and a KRaft
    controller listener. Its storage is formatted on the first start and reused afterwards, so
    topics and records survive a stop and restart. ``state.json`` in ``data_dir`` records the
    running process, which makes :meth:`start` idempotent and lets any process (for example the
    ``dkf`` CLI) report or stop a broker that another process started.

    Files in ``data_dir``: ``server.properties`` and ``log4j2.properties`` (rewritten on every
    start), ``data/`` (partitions and metadata), ``logs/server.log`` (broker log),
    ``broker.out`` (JVM console), ``ports.json`` (last ports, reused when free) and
    ``state.json`` (only while running).

    Args:
        data_dir: the broker's directory, created if needed.
        port: the client port; ``None`` reuses the previous port if free, else picks a free one.
        extra_properties: broker settings appended to ``server.properties`` (they override the
            defaults); ``{port}``, ``{controller_port}`` and ``{data_dir}`` in values are
            replaced, see :func:`render_server_properties`.
        security: secured listeners beside PLAINTEXT (SASL_PLAINTEXT, SSL, SASL_SSL) and their
            users; connect with :meth:`flink_properties`.

    Example:
        >>> with EmbeddedKafka(Path("/tmp/kafka")) as kafka:  # doctest: +SKIP
        ...     producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    """

    label = "Kafka broker"
    address_key = "bootstrap"
    port_names: tuple[str, ...] = ("port", "controller_port")
    error = EmbeddedKafkaError
    stop_hint = "`dkf local-kafka stop` or EmbeddedKafka.stop()"
    console_name = "broker.out"  # the JVM's stdout and stderr (crashes, JVM errors)
    log_name = "logs/server.log"  # the broker's own log4j2 log, INFO level
    properties_name = SERVER_PROPERTIES

    _controller_port: int | None = None  # known once started or adopted

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        extra_properties: Mapping[str, str] | None = None,
        node_id: int = 1,
        voters: Mapping[int, int] | None = None,
        cluster_id: str | None = None,
        security: KafkaListenerSecurity | None = None,
    ) -> None:
        """``node_id``, ``voters`` (node id to controller port) and ``cluster_id`` make the
        broker one node of a cluster (:class:`~.EmbeddedKafkaCluster` sets them); its ports
        are then fixed: ``port`` and its own voter's."""
        super().__init__(data_dir, port=port, extra_properties=extra_properties)
        if voters is not None and (port is None or node_id not in voters):
            raise EmbeddedKafkaError(
                f"A cluster node needs its client port and a controller port among the voters "
                f"{dict(voters)} (node {node_id})."
            )
        if voters is not None and security is not None:
            raise EmbeddedKafkaError(
                "Secured listeners are available on a single embedded broker, not on a node "
                "of an EmbeddedKafkaCluster."
            )
        if security is not None:
            self.port_names = (*self.port_names, *LISTENER_PORTS.values())
        self.security = security
        self.node_id = node_id
        self.voters = dict(voters) if voters is not None else None
        self.cluster_id = cluster_id

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:<port>"`` of the running broker (started here or by another process).

        Raises:
            EmbeddedKafkaError: the broker is not running.
        """
        return self._running_address()

    def listener(self, protocol: str) -> str:
        """``"127.0.0.1:<port>"`` of the running broker's listener of ``protocol``
        (``PLAINTEXT``, or with ``security``: ``SASL_PLAINTEXT``, ``SSL``, ``SASL_SSL``).

        Raises:
            EmbeddedKafkaError: the broker is not running or has no such listener.
        """
        if protocol == "PLAINTEXT":
            return self.bootstrap_servers
        state = self._read_state() or {}
        port = state.get(LISTENER_PORTS.get(protocol, ""))
        if self.security is None or port is None:
            raise EmbeddedKafkaError(
                f"The embedded Kafka in {self.data_dir} has no running {protocol} listener "
                "(start it with security=KafkaListenerSecurity(...))."
            )
        return f"{_HOST}:{port}"

    def flink_properties(
        self, protocol: str, *, mechanism: str = "SCRAM-SHA-512", user: str | None = None
    ) -> dict[str, str]:
        """The ``properties.*`` options (bootstrap servers included) a Flink user writes to
        connect to this broker's ``protocol`` listener; see
        :meth:`KafkaListenerSecurity.flink_properties`."""
        address = self.listener(protocol)
        assert self.security is not None  # listener() refused otherwise
        return {
            "properties.bootstrap.servers": address,
            **self.security.flink_properties(
                self.data_dir, protocol, mechanism=mechanism, user=user
            ),
        }

    @property
    def controller_port(self) -> int | None:
        """The KRaft controller port of the last start, or ``None`` before a start."""
        if self._controller_port is None:
            state = self._read_state()
            if state is not None and "controller_port" in state:
                return int(state["controller_port"])
        return self._controller_port

    # ------------------------------------------------------------------ JvmService hooks

    def _find_java(self) -> str:
        return find_java(_KAFKA_NEEDS)

    def _fetch(self) -> Path:
        return fetch_kafka()

    def _address(self, ports: Mapping[str, int]) -> str:
        return f"{_HOST}:{ports['port']}"

    def _state_extra(self) -> dict[str, Any]:
        return {"kafka_version": KAFKA_VERSION}

    def _is_ours(self, cmdline: list[bytes]) -> bool:
        return b"kafka.Kafka" in cmdline and str(self.properties_file).encode() in cmdline

    def _adopted(self, state: Mapping[str, Any]) -> None:
        self._controller_port = int(state.get("controller_port") or 0) or None

    def _choose_ports(self, fresh: bool) -> dict[str, int]:
        if self.voters is None:
            return super()._choose_ports(fresh)
        assert self.port is not None
        ports = {"port": self.port, "controller_port": self.voters[self.node_id]}
        # A node killed a moment ago may still hold them while the system tears it down.
        deadline = time.monotonic() + PORT_RELEASE_S
        while True:
            taken = [str(p) for p in ports.values() if not port_is_free(p)]
            if not taken or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if taken:
            raise EmbeddedKafkaError(
                f"Cannot start node {self.node_id} of the Kafka cluster: port(s) "
                f"{', '.join(taken)} of {HOST} are in use, and a node keeps its ports (the "
                f"other nodes know it by them). Free them, or stop the cluster and delete "
                f"{self.data_dir.parent} to start afresh on other ports."
            )
        return ports

    def _after_ready(self, address: str, ports: Mapping[str, int]) -> None:
        if self.security is None:
            return
        from confluent_kafka.admin import AdminClient

        config: dict[str, Any] = {"bootstrap.servers": address}
        config["logger"] = logging.getLogger(__name__ + ".probe")
        admin = AdminClient(config)
        self.security.create_scram_users(admin, timeout=30)

    def _prepare(self, java: str, fetched: Path, ports: Mapping[str, int]) -> list[str]:
        props = self.properties_file
        log4j = self.data_dir / LOG4J2_PROPERTIES
        extra = dict(self.extra_properties or {})
        if self.security is not None:
            extra = {**self.security.server_properties(self.data_dir, _HOST, ports), **extra}
        props.touch(mode=0o600)  # it may hold the users' passwords
        props.write_text(
            render_server_properties(
                self.data_dir,
                port=ports["port"],
                controller_port=ports["controller_port"],
                extra_properties=extra,
                node_id=self.node_id,
                voters=self.voters,
            ),
            encoding="latin-1",
        )
        log4j.write_text(render_log4j2_properties(self.data_dir), encoding="latin-1")
        self._format_storage(java, fetched, props)
        cmd = [java, *_JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}"]
        cmd += [f"-Dkafka.logs.dir={self.server_log.parent}", "-cp", f"{fetched}/*"]
        return [*cmd, "kafka.Kafka", str(props)]

    def _make_probe(self) -> Probe:
        """Ready once a client sees the broker in the metadata and can create a topic."""
        from confluent_kafka.admin import AdminClient  # lazy: keep `import local` cheap

        admin: list[AdminClient] = []

        def probe(bootstrap: str, timeout: float) -> None:
            if not admin:
                config: dict[str, Any] = {
                    "bootstrap.servers": bootstrap,
                    "client.id": "dkf-embedded-kafka-probe",
                    "logger": logging.getLogger(__name__ + ".probe"),  # not librdkafka's stderr
                }
                admin.append(AdminClient(config))
            _probe(admin[0], timeout)

        return probe

    def _format_storage(self, java: str, libs: Path, props: Path) -> None:
        if (self.data_dir / DATA_DIR / "meta.properties").is_file():
            return
        cluster_id = self.cluster_id or _new_cluster_id()
        cmd = [java, "-cp", f"{libs}/*", "kafka.tools.StorageTool", "format"]
        cmd += ["-t", cluster_id, "-c", str(props), "--ignore-formatted"]
        logger.info("Formatting Kafka storage in %s (cluster id %s).", self.data_dir, cluster_id)
        try:
            result = subprocess.run(
                cmd,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedKafkaError(f"Formatting Kafka storage timed out: {cmd}") from exc
        if result.returncode != 0:
            raise EmbeddedKafkaError(
                f"Formatting Kafka storage in {self.data_dir} failed (exit code "
                f"{result.returncode}):\n{(result.stdout + result.stderr).strip()[-4000:]}"
            )


def _probe(admin: Any, timeout: float) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    metadata = admin.list_topics(timeout=timeout)
    if not metadata.brokers:
        raise RuntimeError("no broker in the cluster metadata yet")
    topic = f"_dkf_ready_probe_{uuid.uuid4().hex[:12]}"
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1)],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    try:
        futures[topic].result(timeout=timeout + 1)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    admin.delete_topics([topic], operation_timeout=timeout, request_timeout=timeout)[topic].result(
        timeout=timeout + 1
    )


def resolve_bootstrap_servers() -> str | None:
    """Where Kafka is, if anywhere: ``$KAFKA_BOOTSTRAP_SERVERS``, else the CLI's local broker.

    The local broker is the one in ``default_home() / "kafka"`` (``dkf local-kafka start``),
    and counts only while it runs. Nothing is started.

    Returns:
        A bootstrap servers string, or ``None`` when neither is available.

    Example:
        >>> import os
        >>> os.environ["KAFKA_BOOTSTRAP_SERVERS"] = "kafka:9092"
        >>> resolve_bootstrap_servers()
        'kafka:9092'
        >>> del os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    """
    return from_env_or_status("KAFKA_BOOTSTRAP_SERVERS", EmbeddedKafka(default_home() / "kafka"))


def ensure_local_kafka(timeout: float = 120) -> str:
    """A Kafka to talk to: ``$KAFKA_BOOTSTRAP_SERVERS``, else the local broker, started if needed.

    The local broker lives in ``default_home() / "kafka"`` and keeps running after this process
    exits (stop it with ``dkf local-kafka stop``).

    Args:
        timeout: seconds to wait for a freshly launched broker to become ready.

    Returns:
        A bootstrap servers string.

    Example:
        >>> bootstrap = ensure_local_kafka()  # doctest: +SKIP
        >>> bootstrap  # doctest: +SKIP
        '127.0.0.1:41234'
    """
    kafka = EmbeddedKafka(default_home() / "kafka")
    return from_env_or_start("KAFKA_BOOTSTRAP_SERVERS", kafka, timeout)
