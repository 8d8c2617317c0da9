"""Per-materialization overhead: ``make bench-run``.

One increment of the example's orders pipeline (``BENCH_RUN_RECORDS`` JSON orders, default 500,
in topic ``orders`` → ``channel_revenue``'s Spark query → topic ``channel_revenue``, exactly-once,
as ``definitions/`` declares it), measured three ways, and the same job hand-written with Spark's
own Kafka source and sink as the anchor:

- ``warm_increment_s``: materializing an increment in a process whose Spark session and Python
  workers are already up (the median of ``BENCH_RUN_WARM`` increments, after one untimed);
- ``cold_increment_s``: a fresh ``dagster asset materialize -m definitions --select
  channel_revenue`` process, whole wall time (interpreter, imports, Spark start, the run);
- ``spark_cold_s``: a fresh process running the hand-written Spark job over the same increment
  (``spark-sql-kafka-0-10`` of this Spark release through ``spark.jars.packages``);
- ``ratio_cold_vs_spark``: the median of the paired rounds' cold ÷ Spark ratios (each round runs
  both over the same increment, in alternating order);
- ``connect_increment_s``: a fresh process materializing an increment against a Spark Connect
  server (``dkf local-spark start``; ``SPARK_REMOTE`` points the run at it), the median of
  ``BENCH_RUN_ROUNDS`` after one untimed (``connect_first_s``: the server's first run starts
  the session's Python workers). Null, with a note, where this installation has no
  ``dkf local-spark``.

The last printed line is one JSON object with these figures.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The hand-written job's query, as ``channel_revenue`` computes it (dirty records skipped).
_ORDER_SCHEMA = (
    "order_id STRING, order_channel STRING, order_time STRING, pay_amount DOUBLE, "
    "real_pay DOUBLE, pay_time STRING, user_id STRING, user_name STRING, area_id STRING"
)
PARTITIONS = 3
SOURCE = "orders"
SINK = "channel_revenue"
SPARK_SINK = "spark_channel_revenue"
ASSET = "channel_revenue"


def spark_job(bootstrap: str, starts: str, package: str) -> None:
    """The anchor, run in its own process: what a Spark user would write for the increment.

    Spark's Kafka source reads ``orders`` from ``starts`` (Spark's JSON offsets) to the end of
    the log, ``from_json`` decodes, the same aggregation runs, and Spark's Kafka sink writes the
    rows keyed by channel. Only PySpark is imported.
    """
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("spark-kafka-increment")
        .config("spark.jars.packages", package)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    orders = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", SOURCE)
        .option("startingOffsets", starts)
        .option("endingOffsets", "latest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), _ORDER_SCHEMA).alias("o"))
        .select("o.*")
        .where(F.col("order_channel").isNotNull())
    )
    revenue = orders.groupBy("order_channel").agg(
        F.count(F.lit(1)).alias("order_count"), F.round(F.sum("real_pay"), 2).alias("revenue")
    )
    (
        revenue.select(
            F.col("order_channel").alias("key"),
            F.to_json(F.struct("order_channel", "order_count", "revenue")).alias("value"),
        )
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", SPARK_SINK)
        .save()
    )
    spark.stop()


# ----------------------------------------------------------------------------- the benchmark


def _produce_increment(bootstrap: str, batch: int, records: int) -> dict[int, int]:
    """Produce batch ``batch`` of the example's orders; returns the end offsets before it."""
    import _common as common
    from confluent_kafka import Producer

    from dagster_kafka_flinklike.local.orders import encode_order, generate_orders

    before = common.end_offsets(bootstrap, SOURCE, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for order in generate_orders(batch, records):
        key, value = encode_order(order)
        producer.produce(SOURCE, value, key)
    if producer.flush(60):
        raise RuntimeError("could not deliver the increment")
    after = common.end_offsets(bootstrap, SOURCE, PARTITIONS)
    if sum(after.values()) - sum(before.values()) != records:
        raise RuntimeError(f"{SOURCE} grew by {sum(after.values()) - sum(before.values())}")
    return before


def _group_offsets(bootstrap: str, group: str) -> dict[int, int]:
    """The committed offsets of ``group`` on the source topic (-1001 where none)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(SOURCE, p) for p in range(PARTITIONS)], 30)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def _timed(command: list[str], env: dict[str, str], what: str) -> float:
    """Run ``command`` in a fresh process; its wall time. Its output goes to a log file, shown
    when it fails."""
    with tempfile.NamedTemporaryFile("w+", prefix="dkf-bench-run-", suffix=".log") as out:
        began = time.monotonic()
        code = subprocess.call(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        elapsed = time.monotonic() - began
        if code:
            out.seek(0)
            raise RuntimeError(f"{what} exited with {code}:\n{out.read()[-6000:]}")
    return elapsed


def _materialize_command() -> list[str]:
    return [
        str(Path(sys.executable).parent / "dagster"),
        "asset",
        "materialize",
        "-m",
        "definitions",
        "--select",
        ASSET,
    ]


def _cold_materialize(bootstrap: str, env: dict[str, str], what: str) -> float:
    """A fresh ``dagster asset materialize`` of the asset; checks that it consumed the whole
    increment (the group's offsets reach the end of the log)."""
    elapsed = _timed(_materialize_command(), env, what)
    import _common as common

    ends = common.end_offsets(bootstrap, SOURCE, PARTITIONS)
    if _group_offsets(bootstrap, ASSET) != ends:
        raise RuntimeError(f"{what}: the checkpoint does not reach the end offsets {ends}")
    return elapsed


def _spark_cold(bootstrap: str, starts: dict[int, int], package: str, env: dict[str, str]) -> float:
    """The hand-written job in a fresh process over the increment that starts at ``starts``;
    checks that it wrote one record per order channel."""
    import _common as common

    from dagster_kafka_flinklike.local.orders import CHANNELS

    before = sum(common.end_offsets(bootstrap, SPARK_SINK, PARTITIONS).values())
    offsets = json.dumps({SOURCE: {str(p): o for p, o in starts.items()}})
    command = [sys.executable, str(Path(__file__)), "spark-job", bootstrap, offsets, package]
    elapsed = _timed(command, env, "the hand-written Spark job")
    written = sum(common.end_offsets(bootstrap, SPARK_SINK, PARTITIONS).values()) - before
    if written != len(CHANNELS):
        raise RuntimeError(f"the hand-written Spark job wrote {written} records")
    return elapsed


def _local_spark(env: dict[str, str], action: str) -> subprocess.CompletedProcess[str]:
    dkf = str(Path(sys.executable).parent / "dkf")
    return subprocess.run(
        [dkf, "local-spark", action], env=env, cwd=ROOT, capture_output=True, text=True
    )


def _connect_url(env: dict[str, str]) -> tuple[str | None, bool, str]:
    """(the ``sc://`` URL of a running Spark Connect server, whether this run started it, a
    note). ``$SPARK_REMOTE`` wins; else ``dkf local-spark start``."""
    if os.environ.get("SPARK_REMOTE"):
        return os.environ["SPARK_REMOTE"], False, "$SPARK_REMOTE"
    dkf = str(Path(sys.executable).parent / "dkf")
    probe = subprocess.run([dkf, "local-spark", "--help"], env=env, capture_output=True)
    if probe.returncode != 0:
        return None, False, "no `dkf local-spark` in this installation: Spark Connect not measured"
    began = time.monotonic()
    started = _local_spark(env, "start")
    urls = [w for w in started.stdout.split() if w.startswith("sc://")]
    if started.returncode != 0 or not urls:
        return None, False, f"`dkf local-spark start` failed: {started.stderr.strip()[-500:]}"
    return urls[0], True, f"dkf local-spark started in {time.monotonic() - began:.1f}s"


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def run() -> dict[str, Any]:
    import _common as common

    records = common.env_int("BENCH_RUN_RECORDS", 500)
    warm_count = common.env_int("BENCH_RUN_WARM", 5)
    rounds = common.env_int("BENCH_RUN_ROUNDS", 3)
    package = common.spark_kafka_package()
    summary: dict[str, Any] = {
        "records": records,
        "spark_kafka_package": package,
        "load_avg_1m_start": round(os.getloadavg()[0], 2),
    }
    home = Path(tempfile.mkdtemp(prefix="dkf-bench-run-home-"))
    (home / "dagster.yaml").touch()
    try:
        return _measure(summary, home, records, warm_count, rounds, package)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _measure(
    summary: dict[str, Any], home: Path, records: int, warm_count: int, rounds: int, package: str
) -> dict[str, Any]:
    """The measurements of :func:`run`, with ``home`` as the runs' ``DAGSTER_HOME``."""
    import _common as common

    with common.bench_kafka() as bootstrap:
        for topic in (SOURCE, SINK, SPARK_SINK):
            common.create_topic(bootstrap, topic, PARTITIONS)
        env = {
            **os.environ,
            "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "DAGSTER_HOME": str(home),
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        env.pop("SPARK_REMOTE", None)
        batch = 0

        # Warm: one process, one Spark session, increments one after another.
        common.log(f"warm: {warm_count} increments of {records} after one untimed")
        warm_out = subprocess.run(
            [sys.executable, str(Path(__file__)), "warm", bootstrap, str(records), str(warm_count)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if warm_out.returncode:
            raise RuntimeError(f"warm increments failed:\n{warm_out.stderr[-6000:]}")
        warm = json.loads(warm_out.stdout.strip().splitlines()[-1])
        batch += warm_count + 1
        summary["warm_increments_s"] = warm["increments_s"]
        summary["warm_increment_s"] = _median(warm["increments_s"])
        common.log(f"warm: {warm['increments_s']} (first, untimed: {warm['first_s']})")

        # Paired rounds: the same increment through a fresh Dagster process and a fresh
        # hand-written Spark job, in alternating order.
        cold, spark, ratios = [], [], []
        for n in range(rounds):
            starts = _produce_increment(bootstrap, batch, records)
            batch += 1
            order = ("cold", "spark") if n % 2 == 0 else ("spark", "cold")
            times: dict[str, float] = {}
            for what in order:
                if what == "cold":
                    times[what] = _cold_materialize(bootstrap, env, "dagster asset materialize")
                else:
                    times[what] = _spark_cold(bootstrap, starts, package, env)
            cold.append(round(times["cold"], 2))
            spark.append(round(times["spark"], 2))
            ratios.append(round(times["cold"] / times["spark"], 2))
            common.log(
                f"round {n + 1}: cold {times['cold']:.1f}s, spark {times['spark']:.1f}s "
                f"({' then '.join(order)}), ratio {ratios[-1]:.2f}"
            )
        summary.update(
            cold_increments_s=cold,
            spark_cold_runs_s=spark,
            ratios_cold_vs_spark=ratios,
            cold_increment_s=_median(cold),
            spark_cold_s=_median(spark),
            ratio_cold_vs_spark=_median(ratios),
        )

        # Spark Connect: a fresh process whose run uses a running Connect server.
        url, started, note = _connect_url(env)
        summary["connect_note"] = note
        summary["connect_increment_s"] = None
        if url is not None:
            try:
                # The server's first run starts the named session's Python workers and compiles
                # the queries' code: measured, not counted (as the warm increments' first).
                _produce_increment(bootstrap, batch, records)
                batch += 1
                first = _cold_materialize(
                    bootstrap, {**env, "SPARK_REMOTE": url}, "the first run over Spark Connect"
                )
                summary["connect_first_s"] = round(first, 2)
                common.log(f"connect: first run {first:.1f}s (untimed: starts the workers)")
                connect = []
                for n in range(rounds):
                    _produce_increment(bootstrap, batch, records)
                    batch += 1
                    what = "dagster asset materialize (Spark Connect)"
                    elapsed = _cold_materialize(bootstrap, {**env, "SPARK_REMOTE": url}, what)
                    connect.append(round(elapsed, 2))
                    common.log(f"connect round {n + 1}: {elapsed:.1f}s ({url})")
                summary["connect_increments_s"] = connect
                summary["connect_increment_s"] = _median(connect)
            finally:
                if started:
                    _local_spark(env, "stop")
        else:
            common.log(f"connect: {note}")
    summary["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    return summary


def warm(bootstrap: str, records: int, count: int) -> None:
    """Child process: ``count`` + 1 increments materialized one after another in this process
    (the first starts Spark and is not counted); prints their times as JSON."""
    from dagster import DagsterInstance, materialize

    from definitions import channel_revenue, defs

    first = None
    times = []
    with DagsterInstance.get() as instance:
        for n in range(count + 1):
            _produce_increment(bootstrap, n, records)
            began = time.monotonic()
            result = materialize(
                [channel_revenue], resources=defs.resources, instance=instance, tags={}
            )
            elapsed = round(time.monotonic() - began, 3)
            if not result.success:
                raise RuntimeError("the warm materialization failed")
            mat = result.asset_materializations_for_node(ASSET)[0].metadata
            if mat["numRecordsIn"].value != records:
                raise RuntimeError(f"read {mat['numRecordsIn'].value} records, not {records}")
            if n == 0:
                first = elapsed
            else:
                times.append(elapsed)
    print(json.dumps({"first_s": first, "increments_s": times}), flush=True)


ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "spark-job":
        spark_job(*sys.argv[2:5])
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        if len(sys.argv) > 1 and sys.argv[1] == "warm":
            warm(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        else:
            import _common as common

            common.run_and_print(
                run,
                lambda s: (
                    f"increment of {s['records']}: warm {s['warm_increment_s']}s, cold "
                    f"{s['cold_increment_s']}s, hand-written Spark {s['spark_cold_s']}s, "
                    f"cold/Spark {s['ratio_cold_vs_spark']}, Spark Connect "
                    f"{s['connect_increment_s'] if s['connect_increment_s'] is not None else '-'}s"
                ),
            )
