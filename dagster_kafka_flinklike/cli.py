"""The ``dkf`` command line: manage the local development Kafka broker (and run the demo).

Kept free of module-level pyspark and dagster imports so that ``dkf local-kafka status`` answers
in well under a second.

Example:
    .. code-block:: console

        $ dkf local-kafka start
        127.0.0.1:41234
        $ dkf local-kafka status
        127.0.0.1:41234
        $ dkf local-kafka stop
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

# argparse's private subparsers type; "Any" keeps the registration functions simple to type.
_Subparsers = Any
_Handler = Callable[[argparse.Namespace], int]


def _local_kafka_dir() -> Path:
    from .local import default_home

    return default_home() / "kafka"


def _cmd_local_kafka_start(args: argparse.Namespace) -> int:
    from .local import EmbeddedKafka, EmbeddedKafkaError

    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip():
        print(
            "note: KAFKA_BOOTSTRAP_SERVERS is set, so the demo and the tests use that cluster, "
            "not this local broker.",
            file=sys.stderr,
        )
    kafka = EmbeddedKafka(_local_kafka_dir())
    try:
        bootstrap = kafka.start(timeout=args.timeout)
    except EmbeddedKafkaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(bootstrap)
    return 0


def _cmd_local_kafka_stop(args: argparse.Namespace) -> int:
    from .local import EmbeddedKafka, EmbeddedKafkaError

    directory = _local_kafka_dir()
    try:
        stopped = EmbeddedKafka(directory).stop(timeout=args.timeout)
    except EmbeddedKafkaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if stopped:
        print(f"stopped the local Kafka broker in {directory}")
    else:
        print(f"no local Kafka broker was running in {directory}")
    return 0


def _cmd_local_kafka_status(args: argparse.Namespace) -> int:
    from .local import EmbeddedKafka

    bootstrap = EmbeddedKafka(_local_kafka_dir()).status()
    if bootstrap is None:
        print("not running", file=sys.stderr)
        return 1
    print(bootstrap)
    return 0


def _add_local_kafka(subparsers: _Subparsers) -> None:
    """Register ``dkf local-kafka start|stop|status``."""
    parser = subparsers.add_parser(
        "local-kafka",
        help="manage the local development Kafka broker",
        description=(
            "Manage a real single-node Apache Kafka broker on 127.0.0.1, kept in "
            "$DKF_HOME/kafka (default ./.local/kafka). The first start downloads Kafka with "
            "Maven and needs Java 17+. The broker keeps running until `dkf local-kafka stop`."
        ),
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    start = actions.add_parser(
        "start", help="start the broker if needed; print its bootstrap address"
    )
    start.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for readiness (120)"
    )
    start.set_defaults(handler=_cmd_local_kafka_start)

    stop = actions.add_parser("stop", help="stop the broker (its data is kept)")
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL follows SIGTERM (30)"
    )
    stop.set_defaults(handler=_cmd_local_kafka_stop)

    status = actions.add_parser(
        "status", help="print the bootstrap address; exit 1 when not running"
    )
    status.set_defaults(handler=_cmd_local_kafka_status)


# ---------------------------------------------------------------------------------------------
# More subcommands (e.g. `dkf demo`) go here: write `_add_<name>(subparsers)` that registers a
# parser and calls `set_defaults(handler=...)` with a `(args) -> int` function, then append it to
# _REGISTRATIONS. Import heavy modules (pyspark, dagster) inside the handler, not at the top.
# ---------------------------------------------------------------------------------------------


def _add_sql(subparsers: _Subparsers) -> None:
    """Register ``dkf sql check|run`` (:mod:`.sql.cli`)."""
    from .sql.cli import register

    register(subparsers)


_REGISTRATIONS: list[Callable[[_Subparsers], None]] = [
    _add_local_kafka,
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
        0 on success, non-zero on failure (``local-kafka status``: 1 when not running).

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


if __name__ == "__main__":
    sys.exit(main())
