"""The ``dkf`` command line: manage the local development Kafka broker, Schema Registry,
Spark Connect server and Spark standalone cluster; check and run Flink SQL scripts.

Kept free of module-level pyspark and dagster imports so that ``dkf local-kafka status`` answers
in well under a second.

Example:
    .. code-block:: console

        $ dkf local-kafka start
        127.0.0.1:41234
        $ dkf local-kafka status
        127.0.0.1:41234
        $ dkf local-kafka stop
        $ dkf local-registry start
        http://127.0.0.1:41235/apis/ccompat/v7
        $ dkf local-spark start
        sc://127.0.0.1:41236
        $ dkf local-spark start --workers 2
        spark://127.0.0.1:41237
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..local import EmbeddedKafkaCluster, EmbeddedSparkCluster, JvmService

__all__ = ["main"]

# argparse's private subparsers type; "Any" keeps the registration functions simple to type.
_Subparsers = Any
_Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class _LocalService:
    """What ``dkf local-<name> start|stop|status`` needs to know about one embedded service."""

    command: str  # "local-kafka"
    kind: str  # its class in .local, imported when the command runs: "EmbeddedKafka"
    folder: str  # its directory under $DKF_HOME
    noun: str  # "Kafka broker"
    short: str  # "broker"
    address: str  # what `start` and `status` print: "bootstrap address"
    env: str  # the variable that makes the demo and the tests use another one
    env_names: str  # what that variable names
    description: str
    #: The option that runs a cluster of N >= ``cluster_from`` instead (in ``cluster_folder``):
    #: ``--nodes`` (Kafka brokers) or ``--workers`` (a Spark standalone cluster); empty: none.
    cluster_option: str = ""
    cluster_from: int = 2
    cluster_kind: str = ""
    cluster_folder: str = ""
    cluster_help: str = ""
    cluster_noun: str = ""
    #: The variable that names another cluster, where it is not ``env``.
    cluster_env: str = ""

    def is_cluster(self, size: int) -> bool:
        """Whether ``size`` asks for the service's cluster."""
        return bool(self.cluster_option) and size >= self.cluster_from

    def noun_of(self, size: int) -> str:
        """What the command manages for ``size``: the service, or its cluster."""
        return self.cluster_noun if self.is_cluster(size) else self.noun

    def env_of(self, size: int) -> str:
        """The variable that makes the demo and the tests use another one of it."""
        return self.cluster_env or self.env if self.is_cluster(size) else self.env

    def make(self, size: int = 0) -> JvmService | EmbeddedKafkaCluster | EmbeddedSparkCluster:
        """The service in its directory under ``default_home()``, or its cluster of ``size``."""
        from .. import local

        if self.is_cluster(size):
            cluster = getattr(local, self.cluster_kind)
            return cluster(local.default_home() / self.cluster_folder, size)  # type: ignore[no-any-return]
        kind: type[JvmService] = getattr(local, self.kind)
        return kind(local.default_home() / self.folder)


_KAFKA = _LocalService(
    command="local-kafka",
    kind="EmbeddedKafka",
    folder="kafka",
    noun="Kafka broker",
    short="broker",
    address="bootstrap address",
    env="KAFKA_BOOTSTRAP_SERVERS",
    env_names="cluster",
    description=(
        "Manage a real single-node Apache Kafka broker on 127.0.0.1, kept in "
        "$DKF_HOME/kafka (default ./.local/kafka). The first start downloads Kafka with "
        "Maven and needs Java 17+. The broker keeps running until `dkf local-kafka stop`. "
        "With --nodes N (2 or more) the same commands manage a cluster of N brokers (KRaft, "
        "replication factor 3, min.insync.replicas 2) in $DKF_HOME/kafka-cluster instead."
    ),
    cluster_option="--nodes",
    cluster_kind="EmbeddedKafkaCluster",
    cluster_folder="kafka-cluster",
    cluster_help="a cluster of this many nodes (1: one broker)",
    cluster_noun="Kafka cluster",
)
_REGISTRY = _LocalService(
    command="local-registry",
    kind="EmbeddedSchemaRegistry",
    folder="schema-registry",
    noun="Schema Registry",
    short="registry",
    address="URL",
    env="SCHEMA_REGISTRY_URL",
    env_names="registry",
    description=(
        "Manage a real Schema Registry with Confluent's REST API (Apicurio Registry) on "
        "127.0.0.1, kept in $DKF_HOME/schema-registry (default ./.local/schema-registry). "
        "The first start downloads it (about 110 MB) and needs Java 17+. It prints the URL "
        "for SchemaRegistryClient / 'avro-confluent.url' and keeps running until "
        "`dkf local-registry stop`."
    ),
)
_SPARK = _LocalService(
    command="local-spark",
    kind="EmbeddedSparkConnect",
    folder="spark-connect",
    noun="Spark Connect server",
    short="server",
    address="URL",
    env="SPARK_REMOTE",
    env_names="server",
    description=(
        "Manage a Spark Connect server (Spark in local mode, from the installed PySpark) on "
        "127.0.0.1, kept in $DKF_HOME/spark-connect (default ./.local/spark-connect). It needs "
        "Java 17+. It prints the URL for SparkResource(remote=...) / SPARK_REMOTE; its Python "
        "workers run this interpreter with this package importable. It keeps running until "
        "`dkf local-spark stop`. With --workers N (1 or more) the same commands manage a Spark "
        "standalone cluster instead (a master and N workers, each a JVM of its own, from the "
        "installed PySpark) in $DKF_HOME/spark-cluster, and print its master URL for "
        "spark.master / SPARK_MASTER."
    ),
    cluster_option="--workers",
    cluster_from=1,
    cluster_kind="EmbeddedSparkCluster",
    cluster_folder="spark-cluster",
    cluster_help="a standalone cluster of this many workers (0: the Spark Connect server)",
    cluster_noun="Spark standalone cluster",
    cluster_env="SPARK_MASTER",
)


def _cmd_start(service: _LocalService, args: argparse.Namespace) -> int:
    from ..local import EmbeddedServiceError

    env = service.env_of(args.size)
    if os.environ.get(env, "").strip():
        print(
            f"note: {env} is set, so the demo and the tests use that "
            f"{service.env_names}, not this local {service.noun_of(args.size)}.",
            file=sys.stderr,
        )
    try:
        address = service.make(args.size).start(timeout=args.timeout)
    except EmbeddedServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(address)
    return 0


def _cmd_stop(service: _LocalService, args: argparse.Namespace) -> int:
    from ..local import EmbeddedServiceError

    instance = service.make(args.size)
    try:
        stopped = instance.stop(timeout=args.timeout)
    except EmbeddedServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    noun = service.noun_of(args.size)
    if stopped:
        print(f"stopped the local {noun} in {instance.data_dir}")
    else:
        print(f"no local {noun} was running in {instance.data_dir}")
    return 0


def _cmd_status(service: _LocalService, args: argparse.Namespace) -> int:
    address = service.make(args.size).status()
    if address is None:
        print("not running", file=sys.stderr)
        return 1
    print(address)
    return 0


def _add_local_service(subparsers: _Subparsers, service: _LocalService) -> None:
    """Register ``dkf <service.command> start|stop|status``."""
    parser = subparsers.add_parser(
        service.command,
        help=f"manage the local development {service.noun}",
        description=service.description,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    noun = service.short

    start = actions.add_parser(
        "start", help=f"start the {noun} if needed; print its {service.address}"
    )
    start.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for readiness (120)"
    )
    start.set_defaults(handler=functools.partial(_cmd_start, service))

    stop = actions.add_parser("stop", help=f"stop the {noun} (its data is kept)")
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL follows SIGTERM (30)"
    )
    stop.set_defaults(handler=functools.partial(_cmd_stop, service))

    status = actions.add_parser(
        "status", help=f"print the {service.address}; exit 1 when not running"
    )
    status.set_defaults(handler=functools.partial(_cmd_status, service))
    for action in (start, stop, status):
        if service.cluster_option:
            action.add_argument(
                service.cluster_option,
                dest="size",
                type=int,
                default=service.cluster_from - 1,
                help=service.cluster_help,
            )
        else:
            action.set_defaults(size=0)


def _add_local_kafka(subparsers: _Subparsers) -> None:
    """Register ``dkf local-kafka start|stop|status``."""
    _add_local_service(subparsers, _KAFKA)


def _add_local_registry(subparsers: _Subparsers) -> None:
    """Register ``dkf local-registry start|stop|status``."""
    _add_local_service(subparsers, _REGISTRY)


def _add_local_spark(subparsers: _Subparsers) -> None:
    """Register ``dkf local-spark start|stop|status``."""
    _add_local_service(subparsers, _SPARK)


# ---------------------------------------------------------------------------------------------
# More subcommands (e.g. `dkf demo`) go here: write `_add_<name>(subparsers)` that registers a
# parser and calls `set_defaults(handler=...)` with a `(args) -> int` function, then append it to
# _REGISTRATIONS. Import heavy modules (pyspark, dagster) inside the handler, not at the top.
# ---------------------------------------------------------------------------------------------


def _add_sql(subparsers: _Subparsers) -> None:
    """Register ``dkf sql check|run`` (:mod:`.cli.sql`)."""
    from .sql import register

    register(subparsers)


_REGISTRATIONS: list[Callable[[_Subparsers], None]] = [
    _add_local_kafka,
    _add_local_registry,
    _add_local_spark,
    _add_sql,
]


def build_parser() -> argparse.ArgumentParser:
    """The ``dkf`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="dkf",
        description="dagster-kafka-flinklike: Flink's Kafka connector semantics for Dagster.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in _REGISTRATIONS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dkf`` command line and return its exit code.

    Args:
        argv: the arguments after the program name; ``None`` reads ``sys.argv``.

    Returns:
        0 on success, non-zero on failure (``local-kafka``, ``local-registry`` and
        ``local-spark status``: 1 when not running).

    Example:
        >>> main(["local-kafka", "status"])  # doctest: +SKIP
        127.0.0.1:41234
        0
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="dkf: %(message)s",
        stream=sys.stderr,
    )
    handler: _Handler = args.handler
    return handler(args)
