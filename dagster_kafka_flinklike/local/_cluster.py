"""A real multi-node Apache Kafka cluster (KRaft, combined broker and controller nodes) on
127.0.0.1, for tests that kill, pause and restart brokers.

Each node is an :class:`~._broker.EmbeddedKafka` in ``data_dir/node-<id>`` with the same
cluster id and a static controller quorum of every node. Partitions and the internal topics
replicate to three nodes with ``min.insync.replicas`` 2 (:func:`~._broker.replication_properties`),
so one node may die without loss. ``cluster.json`` keeps the cluster id and every node's ports:
the nodes know each other by them, so a restarted node takes the same ports again (chosen
outside the system's ephemeral range, so that no client connection takes them meanwhile).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import EmbeddedKafkaError
from ._broker import EmbeddedKafka, _new_cluster_id
from ._service import HOST, StartedWhileUsed, port_is_free, write_json_atomic

__all__ = ["EmbeddedKafkaCluster"]

logger = logging.getLogger(__name__)
#: A node that exited during startup is started again only when at least this much time is left.
_SECOND_START_S = 30.0

CLUSTER_FILE = "cluster.json"


def _ephemeral_range() -> tuple[int, int]:
    """The ports the system gives outgoing connections (Linux's default where unknown)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _fixed_ports(count: int) -> list[int]:
    """``count`` free ports outside the ephemeral range, for listeners that keep their ports.

    A port in that range may be given to an outgoing connection while its node is down: a
    client retrying the dead node can even connect to itself on it (TCP's simultaneous open),
    and the node could not listen there again.
    """
    low, high = _ephemeral_range()
    candidates = [p for p in range(10_000, 65_000) if not low <= p <= high]
    chosen: list[int] = []
    for port in random.sample(candidates, len(candidates)):
        if port_is_free(port):
            chosen.append(port)
            if len(chosen) == count:
                return sorted(chosen)
    raise EmbeddedKafkaError(f"Found no {count} free ports outside {low}-{high} on {HOST}.")


class EmbeddedKafkaCluster(StartedWhileUsed):
    """``nodes`` Kafka brokers in ``data_dir``, each a detached ``java`` process.

    :meth:`start` launches every node at once (a node serves only once a majority of the
    controller quorum runs) and returns when the cluster's metadata lists them all. A node is
    stopped, killed, paused or restarted through :meth:`node`.

    Args:
        data_dir: the cluster's directory, created if needed.
        nodes: how many nodes (at least 2).
        extra_properties: broker settings of every node, as for :class:`EmbeddedKafka`.

    Example:
        >>> with EmbeddedKafkaCluster(Path("/tmp/kafka3")) as cluster:  # doctest: +SKIP
        ...     producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    """

    def __init__(
        self,
        data_dir: Path,
        nodes: int = 3,
        *,
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        if nodes < 2:
            raise EmbeddedKafkaError(
                f"A Kafka cluster needs at least 2 nodes, not {nodes}: use EmbeddedKafka for one."
            )
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.size = nodes
        self.extra_properties = dict(extra_properties or {})
        self._known: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.data_dir)!r}, nodes={self.size})"

    def _layout(self) -> dict[str, Any]:
        """The cluster id and each node's ports: chosen on the first start, then kept (read
        once per object)."""
        if self._known is not None:
            return self._known
        path = self.data_dir / CLUSTER_FILE
        try:
            layout = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            layout = None
        if layout is not None and len(layout.get("nodes", {})) != self.size:
            raise EmbeddedKafkaError(
                f"The Kafka cluster in {self.data_dir} has {len(layout['nodes'])} nodes, not "
                f"{self.size}. Stop it and delete the directory to start a cluster of "
                f"{self.size}."
            )
        if layout is None:
            chosen = _fixed_ports(2 * self.size)
            layout = {
                "cluster_id": _new_cluster_id(),
                "nodes": {
                    str(node): {"port": chosen[2 * i], "controller_port": chosen[2 * i + 1]}
                    for i, node in enumerate(range(1, self.size + 1))
                },
            }
            self.data_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, layout)
        self._known = layout
        return layout

    def node(self, node_id: int) -> EmbeddedKafka:
        """Node ``node_id`` (1 to ``nodes``): status, pid, stop and start of that broker alone."""
        layout = self._layout()
        nodes = layout["nodes"]
        if str(node_id) not in nodes:
            raise EmbeddedKafkaError(f"The cluster has nodes 1 to {self.size}, not {node_id}.")
        return EmbeddedKafka(
            self.data_dir / f"node-{node_id}",
            port=int(nodes[str(node_id)]["port"]),
            extra_properties=self.extra_properties,
            node_id=node_id,
            voters={int(n): int(p["controller_port"]) for n, p in nodes.items()},
            cluster_id=str(layout["cluster_id"]),
        )

    @property
    def nodes(self) -> list[EmbeddedKafka]:
        """Every node, in node id order."""
        return [self.node(n) for n in range(1, self.size + 1)]

    @property
    def bootstrap_servers(self) -> str:
        """Every node's client address, comma-separated (whether each runs or not)."""
        ports = [p["port"] for _, p in sorted(self._layout()["nodes"].items())]
        return ",".join(f"{HOST}:{port}" for port in ports)

    def start(self, timeout: float = 180) -> str:
        """Start every node that is not running, and wait until the cluster's metadata lists all
        of them; returns :attr:`bootstrap_servers`.

        Raises:
            EmbeddedKafkaError: a node could not start, or the cluster did not form in time.
        """
        nodes = self.nodes
        deadline = time.monotonic() + timeout
        with ThreadPoolExecutor(len(nodes), thread_name_prefix="dkf-kafka-node") as pool:
            started = [pool.submit(self._start_node, n, deadline) for n in nodes]
            for future in started:
                future.result()
        self.wait_formed(max(1.0, deadline - time.monotonic()))
        return self.bootstrap_servers

    @staticmethod
    def _start_node(node: EmbeddedKafka, deadline: float) -> None:
        """Start ``node``, and start it again once when it exits during startup while time is
        left: a restarted node gives up when the controller quorum, itself recovering, does not
        register it in time (Kafka leaves restarting it to a supervisor, which this is)."""
        try:
            node.start(max(1.0, deadline - time.monotonic()))
        except EmbeddedKafkaError as exc:
            if deadline - time.monotonic() < _SECOND_START_S:
                raise
            logger.warning("Kafka node %s: %s; starting it again.", node.data_dir, exc)
            node.start(max(1.0, deadline - time.monotonic()))

    def wait_formed(self, timeout: float = 60) -> None:
        """Wait until the metadata lists every node as a broker.

        Raises:
            EmbeddedKafkaError: it did not within ``timeout`` seconds.
        """
        from confluent_kafka.admin import AdminClient

        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "logger": logging.getLogger(__name__ + ".probe"),  # not librdkafka's stderr
        }
        admin = AdminClient(config)
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        while True:
            try:
                seen = set(admin.list_topics(timeout=5).brokers)
            except Exception as exc:  # not answering yet: ask again until the deadline
                logger.debug("cluster metadata: %s", exc)
            if len(seen) == self.size:
                return
            if time.monotonic() > deadline:
                raise EmbeddedKafkaError(
                    f"The Kafka cluster in {self.data_dir} did not form in {timeout:.0f} s: the "
                    f"metadata lists brokers {sorted(seen)} of 1 to {self.size}. See each "
                    f"node's logs/server.log."
                )
            time.sleep(0.3)

    def status(self) -> str | None:
        """The bootstrap servers of the running nodes, or ``None`` when none runs."""
        if not (self.data_dir / CLUSTER_FILE).is_file():
            return None
        running = [address for n in self.nodes if (address := n.status()) is not None]
        return ",".join(running) or None

    def stop(self, timeout: float = 30) -> bool:
        """Stop every node (SIGTERM, then SIGKILL after ``timeout``); whether any ran."""
        if not (self.data_dir / CLUSTER_FILE).is_file():
            return False
        nodes = self.nodes
        with ThreadPoolExecutor(len(nodes), thread_name_prefix="dkf-kafka-node") as pool:
            return any(list(pool.map(lambda n: n.stop(timeout), nodes)))
