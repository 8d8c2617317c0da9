"""``dkf sql check|run FILE.sql``: Flink SQL scripts from the command line.

``check`` plans the script (options, types, translation, run modes) and, unless ``--no-spark``,
lets Spark analyse every translated query over empty tables of the declared columns (function
names, column names, types) without reading Kafka. ``run`` materializes every insert once as a
bounded run against ``$KAFKA_BOOTSTRAP_SERVERS`` or the embedded broker, keeping checkpoints in a
Dagster instance under ``$DKF_HOME/sql/<script>``, and prints records read and written.
Exit codes: 0 ok, 1 the script or the run failed (the error on stderr), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import KafkaOptionsError


def _partitions(args: argparse.Namespace) -> Any:
    if not args.hourly and not args.daily:
        return None
    from dagster import DailyPartitionsDefinition, HourlyPartitionsDefinition

    if args.hourly:
        return HourlyPartitionsDefinition(start_date=args.hourly)
    return DailyPartitionsDefinition(start_date=args.daily)


def _plan(args: argparse.Namespace) -> Any:
    from ..components.flink_sql import partition_period
    from ..sql.pipeline import plan_flink_sql

    return plan_flink_sql(Path(args.file), windows=partition_period(_partitions(args)))


def analyse(pipeline: Any, spark: Any) -> list[str]:
    """Spark's analysis of every insert over empty source tables: one message per failure."""
    import logging

    # PySpark logs each analysis error with its JVM stack; the message below says it once
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)

    from ..options import struct_type
    from ..run.stateful import BatchQuery
    from ..source.records import with_computed_columns

    problems: list[str] = []
    for insert in pipeline.inserts:
        inferred = sorted(n for n, spec in insert.sources.items() if spec.infers_schema)
        if inferred:  # columns known only from the data: nothing to analyse against
            print(
                f"INSERT INTO {insert.name} (line {insert.line}): not analysed; the columns of "
                f"{', '.join(inferred)} are inferred from the data when it runs"
            )
            continue
        frames = {}
        for name, spec in insert.sources.items():
            stored = [c for c in spec.columns if c.expression is None]
            frames[name] = with_computed_columns(
                spec, spark.createDataFrame([], struct_type(stored))
            )
        try:
            result = insert.run_query(spark, frames)
            if isinstance(result, BatchQuery):  # (e.g. the query over the rows of sessions)
                result = result.result()
            result.schema  # noqa: B018 (analysis happens here)
        except Exception as exc:  # Spark's analysis errors, reported per insert
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            problems.append(f"INSERT INTO {insert.name} (line {insert.line}): {first}")
    return problems


def _spark() -> Any:
    """A local session for analysis only: no Python workers started in the background (the
    analysis runs no task, and a warm-up job cut short at exit logs executor errors)."""
    from ..spark import SparkResource, default_spark_config

    config = default_spark_config("dkf-sql", short_runs=True)
    return SparkResource(spark_config=config, start_early=False).spark_session


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        pipeline = _plan(args)
    except (KafkaOptionsError, OSError) as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 1
    for insert in pipeline.inserts:
        sources = ", ".join(sorted(insert.sources))
        print(
            f"INSERT INTO {insert.name} (line {insert.line}): reads {sources}; {insert.mode} runs"
        )
    if not args.no_spark:
        problems = analyse(pipeline, _spark())
        for problem in problems:
            print(f"error: {args.file}: {problem}", file=sys.stderr)
        if problems:
            return 1
    print(f"ok: {len(pipeline.inserts)} insert(s), {len(pipeline.tables)} Kafka table(s)")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from dagster import AssetsDefinition, DagsterInstance, materialize

    from ..components.flink_sql import build_flink_sql_definitions
    from ..local import default_home, ensure_local_kafka
    from ..resources import KafkaResource
    from ..spark import SparkResource, default_spark_config

    path = Path(args.file)
    try:
        defs = build_flink_sql_definitions(path, partitions_def=_partitions(args))
    except (KafkaOptionsError, OSError) as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 1
    if (args.hourly or args.daily) and not args.partition:
        print("error: a partitioned run needs --partition KEY", file=sys.stderr)
        return 2
    home = default_home() / "sql" / path.stem
    home.mkdir(parents=True, exist_ok=True)
    bootstrap = ensure_local_kafka()
    where = "KAFKA_BOOTSTRAP_SERVERS" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") else "embedded"
    print(f"Kafka: {bootstrap} ({where})")
    assets = [
        a for a in defs.assets or () if isinstance(a, AssetsDefinition) and a.is_materializable
    ]
    with DagsterInstance.local_temp(tempdir=str(home)) as instance:
        result = materialize(
            assets,
            instance=instance,
            resources={
                "kafka": KafkaResource(bootstrap_servers=bootstrap),
                "pyspark": SparkResource(
                    spark_config=default_spark_config("dkf-sql", short_runs=True)
                ),
            },
            partition_key=args.partition,
            raise_on_error=False,
        )
        for event in result.get_asset_materialization_events():
            mat = event.step_materialization_data.materialization
            meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
            print(
                f"{mat.asset_key.to_user_string()}: read {meta.get('numRecordsIn', 0)}, "
                f"wrote {meta.get('numRecordsOut', 0)}, dirty {meta.get('dirtyRecords', 0)}"
            )
        if not result.success:
            for event in result.get_step_failure_events():
                error = event.step_failure_data.error
                cause = error.cause if error and error.cause else error
                message = cause.message.strip() if cause else "failed"
                print(f"error: {event.step_key}: {message}", file=sys.stderr)
            return 1
    return 0


def register(subparsers: Any) -> None:
    """Register ``dkf sql check|run``."""
    parser = subparsers.add_parser(
        "sql",
        help="check or run a Flink SQL script",
        description="Check or run a Flink SQL script (CREATE TABLE ... WITH ('connector' = "
        "'kafka'), CREATE VIEW, INSERT INTO, statement sets, SET).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, handler, text in (
        ("check", _cmd_check, "validate options, types and translation; run nothing"),
        ("run", _cmd_run, "run every INSERT once as a bounded run; print records read/written"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("file", help="the .sql script")
        sub.add_argument("--hourly", metavar="START", help="hourly partitions from START")
        sub.add_argument("--daily", metavar="START", help="daily partitions from START")
        if name == "check":
            sub.add_argument(
                "--no-spark", action="store_true", help="skip Spark's analysis of the queries"
            )
        else:
            sub.add_argument("--partition", metavar="KEY", help="the partition to run")
        sub.set_defaults(handler=handler)
