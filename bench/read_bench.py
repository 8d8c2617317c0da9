"""Read benchmark: our Spark reader against a raw confluent-kafka consume loop, in one run.

Fills a 6-partition topic with ``$BENCH_RECORDS`` (default 5,000,000) ~220-byte JSON orders,
then measures records per second of

- ``raw_loop_rps``: a raw batch-consume loop in as many processes as Spark has task slots,
  each assigned its share of the partitions (also: one process, and the loop with Python's
  garbage collector paused as the reader pauses it);
- ``reader_rps``: ``read_splits`` over the planned splits into Spark's no-op sink, raw value
  bytes only; ``reader_fields_rps`` the same with the fields JSON decoding reads;
- ``reader_json_rps``: the reader plus JSON decoding into the order schema (the native batch
  decoding in the reading tasks, then ``decode_records``);
- ``json_step_rps``: a run's whole JSON read step (plan, read, decode, input statistics) into the
  no-op sink, and the anchor, Spark's own Kafka source (``spark_value_rps``, ``spark_json_rps``
  with ``from_json``), in the same session (``ratio_json_step_vs_spark``,
  ``ratio_json_step_vs_raw``, ``ratio_value_vs_spark``);
- ``reader_avro_rps``: the same orders as Avro datums (format ``avro``, the schema derived from
  the columns) in a second topic, read and decoded (natively where the scanner takes them:
  ``ratio_avro``, ``ratio_avro_vs_json``),
  and ``spark_avro_rps``, Spark's own source with ``from_avro`` of the same schema over that
  topic (``ratio_avro_vs_spark``);
- ``reader_protobuf_rps``: the same orders as protobuf messages (format ``protobuf``, message
  ``bench.Order``, the order time as epoch milliseconds) in a third topic, read and decoded
  (natively where the scanner takes them), and ``spark_protobuf_rps``, Spark's own source with
  ``from_protobuf`` of the same descriptor (``ratio_protobuf_vs_spark``);

the CPU time per record of each, and the peak RSS of the driver, the Spark JVM and the Spark
Python workers. Then, in the same session, the JSON step against Spark's source on several
record shapes, each with its own Spark query and both sides' rows compared
(``read_shapes.py``: ``ratio_json_step_vs_spark_<shape>``, ``shapes_differ``, ...). The last
line printed is one JSON object with every figure; see ``bench/README.md``.

Environment: ``BENCH_RECORDS``, ``BENCH_PARTITIONS`` (6), ``BENCH_REPEATS`` (3; records/s are the
best of n, ratios the median of the rounds' own), ``BENCH_BATCH`` (the reader's batch size),
``BENCH_SPARK_KAFKA`` (0: no Spark Kafka source anchor), ``BENCH_WARMUP`` (records each Spark
query reads before the timed runs; a twentieth of ``BENCH_RECORDS``), ``BENCH_COMPRESSION``
(``none`` or ``lz4``), ``BENCH_DRIVER_MEMORY`` (the Spark driver heap; the library's local
default, ``2g``, when unset: a smaller one shows that memory does not grow with the range),
``KAFKA_BOOTSTRAP_SERVERS`` (use that broker instead of starting one), ``BENCH_SHAPES`` and
``BENCH_SHAPE_RECORDS`` (the record shapes: see ``read_shapes.py``).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _common as common

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from dagster_kafka_flinklike.run.decode import DecodedTable


def _raw_worker(
    settings: Mapping[str, Any],
    topic: str,
    partitions: list[int],
    expected: int,
    batch: int,
    gc_paused: bool,
    go: Any,
    results: Any,
) -> None:
    """One raw-loop process: consume ``partitions`` from the start until ``expected`` records.

    Each message is checked for an error and has its ``value()`` touched; nothing is decoded.
    With ``gc_paused`` the cyclic garbage collector is off, as the reader has it while it
    consumes.
    """
    import gc

    from confluent_kafka import Consumer, KafkaError, TopicPartition

    if gc_paused:
        gc.disable()
    go.wait()
    began = time.monotonic()
    cpu = time.process_time()  # this process's threads, librdkafka's included
    consumer = Consumer(dict(settings))
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    count = 0
    last = began
    try:
        while count < expected:
            messages = consumer.consume(num_messages=min(batch, expected - count), timeout=1.0)
            for message in messages:
                error = message.error()
                if error is None:
                    message.value()
                    count += 1
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"raw loop on {topic} {partitions}: {error.str()}")
            now = time.monotonic()
            if messages:
                last = now
            elif now - last > 120:
                raise RuntimeError(f"raw loop on {topic} {partitions} stalled at {count} records")
    finally:
        consumer.close()
    elapsed = time.monotonic() - began
    results.put((count, elapsed, common.self_peak_rss_mb(), time.process_time() - cpu))


def raw_loop(
    settings: Mapping[str, Any],
    topic: str,
    ends: Mapping[int, int],
    processes: int,
    batch: int,
    *,
    gc_paused: bool = False,
) -> tuple[float, float, float]:
    """Records/s of ``processes`` raw-loop processes sharing the partitions, their peak RSS
    and the CPU seconds they used.

    Processes are started first and released together, so interpreter start-up is not timed;
    consumer creation, fetching and closing are.
    """
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    results = ctx.Queue()
    partitions = sorted(ends)
    shares = [partitions[i::processes] for i in range(processes)]
    procs = [
        ctx.Process(
            target=_raw_worker,
            args=(
                settings,
                topic,
                share,
                sum(ends[p] for p in share),
                batch,
                gc_paused,
                go,
                results,
            ),
        )
        for share in shares
    ]
    for proc in procs:
        proc.start()
    time.sleep(1.0)  # let the interpreters import confluent_kafka before the clock starts
    began = time.monotonic()
    go.set()
    outcome = [results.get(timeout=3600) for _ in procs]
    elapsed = time.monotonic() - began
    for proc in procs:
        proc.join()
    records = sum(r[0] for r in outcome)
    if records != sum(ends.values()) or any(p.exitcode for p in procs):
        raise RuntimeError(f"raw loop read {records} records of {sum(ends.values())}")
    return records / elapsed, max(r[2] for r in outcome), sum(r[3] for r in outcome)


def start_spark() -> SparkSession:
    """The session the library's resources build (``local[2]``, or ``$SPARK_MASTER``'s
    cluster), with Spark's Avro package."""
    settings: dict[str, str] = {}
    driver_memory = os.environ.get("BENCH_DRIVER_MEMORY", "").strip()
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    return common.start_spark("dkf-read-bench", settings, spark_avro=True)


def output_rows(spark: SparkSession) -> int:
    """Rows the last SQL execution produced: its largest "number of output rows" metric.

    Spark counts them anyway, so the timed runs need no extra counting operator.
    """
    # Metrics reach the status store through the asynchronous listener bus: drain it first.
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)  # type: ignore[union-attr]
    store = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    executions = store.executionsList()
    last = executions.apply(executions.size() - 1)
    values = store.executionMetrics(last.executionId())
    rows = 0
    metrics = last.metrics().iterator()
    while metrics.hasNext():
        metric = metrics.next()
        value = values.get(metric.accumulatorId())
        if metric.name() == "number of output rows" and value.isDefined():
            rows = max(rows, int(str(value.get()).replace(",", "")))
    return rows


@dataclass
class SparkRun:
    """One timed Spark job: wall time, rows out, and CPU seconds by process kind."""

    seconds: float
    rows: int
    jvm_cpu: float  # the Spark JVM (driver and executor in local mode), JIT included
    jit_cpu: float  # of which the JIT compiler threads
    python_cpu: float  # the Spark Python daemon and workers
    new_workers: int  # Python workers started during the run (each imports the library)

    @property
    def cpu(self) -> float:
        """CPU seconds of the Spark JVM and the Python workers together."""
        return self.jvm_cpu + self.python_cpu

    def cpu_us(self, records: int) -> dict[str, float]:
        """CPU µs per record by process kind: the Spark JVM (of it the JIT compiler) and the
        Python workers (the reading tasks' native decoding is the workers' time, Arrow to rows
        and Spark's expressions the JVM's)."""
        return {
            "spark_jvm": round(self.jvm_cpu / records * 1e6, 2),
            "spark_jvm_jit": round(self.jit_cpu / records * 1e6, 2),
            "spark_python_workers": round(self.python_cpu / records * 1e6, 2),
        }


def timed_noop_write(spark: SparkSession, df: DataFrame) -> SparkRun:
    """Write ``df`` to the no-op sink: seconds, row count, and the CPU the Spark JVM and Python
    workers used meanwhile (and how much of the JVM's went to JIT compilation)."""
    meter = common.CpuMeter()
    began = time.monotonic()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.monotonic() - began
    used, jit = meter.used(), meter.jit()
    started = len(set(common.cpu_by_pid(("spark-python",))) - set(meter.before))
    return SparkRun(
        elapsed,
        output_rows(spark),
        used["spark-jvm"],
        jit["spark-jvm"],
        used["spark-python"],
        started,
    )


def dirty_rows(decoded: DataFrame) -> tuple[int, int]:
    """Rows and dirty rows (``__dkf_error`` set) of a decoded DataFrame, in one pass."""
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.source.records import ERROR

    row = decoded.agg(F.count(F.lit(1)).alias("rows"), F.count(F.col(ERROR)).alias("dirty"))
    first = row.collect()[0]
    return int(first["rows"]), int(first["dirty"])


def _worker_rss(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each Spark Python worker reports its pid and its own peak RSS."""
    import os
    import resource

    import pyarrow as pa

    for batch in batches:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        yield pa.RecordBatch.from_pydict(
            {"pid": [os.getpid()] * batch.num_rows, "rss_mb": [rss] * batch.num_rows}
        )


def worker_peaks(spark: SparkSession, tasks: int) -> dict[int, float]:
    """Peak RSS per Spark Python worker, reported by the workers themselves (a tiny job)."""
    rows = spark.range(0, tasks, 1, tasks).mapInArrow(_worker_rss, "pid long, rss_mb double")
    peaks: dict[int, float] = {}
    for row in rows.collect():
        peaks[row["pid"]] = max(peaks.get(row["pid"], 0.0), row["rss_mb"])
    return peaks


@dataclass
class Workload:
    """The filled topic and everything the measurements read it with."""

    topic: str
    records: int
    ends: dict[int, int]
    spec: Any  # KafkaTableSpec of the orders (JSON)
    consumer_config: dict[str, Any]
    splits: tuple[Any, ...]
    fields: tuple[str, ...]
    batch: int
    warmup: int  # records each query reads before the timed runs
    avro_spec: Any = None  # the same orders as Avro (format 'avro'), in their own topic
    avro_splits: tuple[Any, ...] = ()
    protobuf_spec: Any = None  # and as protobuf messages (format 'protobuf')
    protobuf_splits: tuple[Any, ...] = ()


def _plan(spec: Any) -> Any:
    from dagster_kafka_flinklike.source import plan_source
    from dagster_kafka_flinklike.source.admin import KafkaAdmin

    admin = KafkaAdmin(spec.properties)
    return plan_source(spec, admin.partitions(spec.topics), admin)


def table_spec(
    bootstrap: str, topic: str, fmt: str, columns: Sequence[Mapping[str, str]], **options: str
) -> Any:
    """The ``KafkaTableSpec`` of a benchmark table: ``topic`` read from the earliest offset in
    format ``fmt``, with ``columns`` (``{"name": ..., "type": ...}`` each) and the format's
    ``options``, as a Flink DDL's options declare it."""
    from dagster_kafka_flinklike import KafkaTableSpec

    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "properties.group.id": "dkf-read-bench",
            "scan.startup.mode": "earliest-offset",
            "format": fmt,
            **options,
        },
        columns=list(columns),
    )


def prepare(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    avro_topic: str,
    protobuf_topic: str,
    descriptor_file: str,
) -> Workload:
    """Plan the reads of the filled topics the way the library plans a run."""
    from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS
    from dagster_kafka_flinklike.options import client_config
    from dagster_kafka_flinklike.source.reader import DEFAULT_BATCH_SIZE
    from dagster_kafka_flinklike.source.records import record_fields

    spec = table_spec(bootstrap, topic, "json", ORDER_COLUMNS)
    avro_spec = table_spec(bootstrap, avro_topic, "avro", ORDER_COLUMNS)
    protobuf_spec = table_spec(
        bootstrap, protobuf_topic, "protobuf", common.PROTOBUF_ORDER_COLUMNS,
        **{"protobuf.message-class-name": common.PROTOBUF_ORDER_MESSAGE,
           "protobuf.descriptor-file": descriptor_file},
    )  # fmt: skip
    plan = _plan(spec)
    workload = Workload(
        topic=topic,
        records=records,
        ends=common.end_offsets(bootstrap, topic, partitions),
        spec=spec,
        consumer_config=client_config(spec.properties),
        splits=plan.splits,
        fields=record_fields(spec),
        batch=common.env_int("BENCH_BATCH", DEFAULT_BATCH_SIZE),
        warmup=common.env_int("BENCH_WARMUP", max(10_000, records // 20)),
        avro_spec=avro_spec,
        avro_splits=_plan(avro_spec).splits,
        protobuf_spec=protobuf_spec,
        protobuf_splits=_plan(protobuf_spec).splits,
    )
    common.log(
        f"plan: {len(plan.splits)} splits of {plan.pending_offsets:,} offsets; JSON path "
        f"fields {', '.join(workload.fields)}; batch size {workload.batch:,}"
    )
    return workload


def warm_splits(topic: str, ends: Mapping[int, int], records: int) -> list[Any]:
    """The warm-up slice of ``topic``: about ``records`` records, the first of each partition
    (one task per partition, as in the timed runs)."""
    from dagster_kafka_flinklike.source import KafkaSplit

    share = max(1, records // len(ends))
    return [KafkaSplit(topic, p, 0, min(end, share)) for p, end in ends.items()]


def warm_up(spark: SparkSession, work: Workload, slots: int) -> None:
    """Run every timed Spark query once over a slice of each partition; not timed.

    The JVM compiles what a query runs per record, per batch and per task only after it ran
    often enough; a slice of the data (``work.warmup`` records, one task per partition as in
    the timed runs) makes the timed runs measure reading rather than JIT compilation, as the
    raw loop's timing leaves out its interpreter start-up. The timed JSON runs only count rows,
    so this also checks that the orders decode cleanly. A run's JSON step and the anchor's
    queries (Spark's Kafka source, unless left out) are warmed up the same way.
    """
    from dagster_kafka_flinklike.source import KafkaSplit
    from dagster_kafka_flinklike.source.reader import read_splits
    from dagster_kafka_flinklike.source.records import decode_records, native_reading

    warm = warm_splits(work.topic, work.ends, work.warmup)
    jit = 0.0
    for columns in (("value",), work.fields):
        df = read_splits(spark, warm, work.consumer_config, columns, batch_size=work.batch)
        jit += timed_noop_write(spark, df).jit_cpu
    derived, shedding = native_reading(work.spec)
    df = read_splits(
        spark,
        warm,
        work.consumer_config,
        work.fields,
        batch_size=work.batch,
        derived=derived,
        shedding=shedding,
    )
    jit += timed_noop_write(spark, decode_records(work.spec, df)).jit_cpu
    rows, dirty = dirty_rows(decode_records(work.spec, df))
    if rows != sum(s.size for s in warm) or dirty:
        raise RuntimeError(f"decoding the warm-up orders gave {rows} rows, {dirty} dirty")
    avro_topic = work.avro_spec.topics[0]
    warm_avro = [KafkaSplit(avro_topic, s.partition, s.start, s.stop) for s in warm]
    df = native_frame(spark, work, work.avro_spec, warm_avro)
    jit += timed_noop_write(spark, decode_records(work.avro_spec, df)).jit_cpu
    avro_rows, avro_dirty = dirty_rows(decode_records(work.avro_spec, df))
    if avro_rows != rows or avro_dirty:
        raise RuntimeError(f"decoding the Avro orders gave {avro_rows} rows, {avro_dirty} dirty")
    protobuf_topic = work.protobuf_spec.topics[0]
    warm_protobuf = [KafkaSplit(protobuf_topic, s.partition, s.start, s.stop) for s in warm]
    df = native_frame(spark, work, work.protobuf_spec, warm_protobuf)
    jit += timed_noop_write(spark, decode_records(work.protobuf_spec, df)).jit_cpu
    pb_rows, pb_dirty = dirty_rows(decode_records(work.protobuf_spec, df))
    if pb_rows != rows or pb_dirty:
        raise RuntimeError(f"decoding the protobuf orders gave {pb_rows} rows, {pb_dirty} dirty")
    jit += json_step(spark, work.spec, work.records, warm).jit_cpu
    if common.SPARK_KAFKA:  # the anchor's queries, over the same slice
        ends = {s.partition: s.stop for s in warm}
        for query in (None, json_query(work.spec.columns)):
            jit += timed_noop_write(spark, spark_kafka_frame(spark, work.spec, query, ends)).jit_cpu
        frame = spark_kafka_frame(spark, work.avro_spec, avro_query(work.avro_spec.columns), ends)
        jit += timed_noop_write(spark, frame).jit_cpu
        if common.SPARK_PROTOBUF:
            frame = spark_kafka_frame(spark, work.protobuf_spec, protobuf_query(), ends)
            jit += timed_noop_write(spark, frame).jit_cpu
    common.log(
        f"spark: {slots} task slots, warmed up on {rows:,} records per query ({jit:.1f} CPU s "
        f"of JIT compilation); the orders decode cleanly"
    )


#: Per measurement: (records/s, seconds, CPU seconds, the Spark run if any) of every repeat.
Runs = dict[str, list[tuple[float, float, float, SparkRun | None]]]


def measure(spark: SparkSession, work: Workload, slots: int, repeats: int) -> tuple[Runs, float]:
    """Every timed measurement, ``repeats`` times, interleaved; and the raw loops' peak RSS."""
    from dagster_kafka_flinklike.source.reader import consumer_settings, read_splits
    from dagster_kafka_flinklike.source.records import decode_records, native_reading

    records = work.records
    derived, shedding = native_reading(work.spec)
    settings = consumer_settings(work.consumer_config)
    runs: Runs = {
        name: []
        for name in (
            "single",
            "raw",
            "raw_gc_paused",
            "reader",
            "fields",
            "json",
            "avro",
            "protobuf",
            "json_step",
            *(("spark_value", "spark_json", "spark_avro") if common.SPARK_KAFKA else ()),
            *(("spark_protobuf",) if common.SPARK_KAFKA and common.SPARK_PROTOBUF else ()),
        )
    }
    raw_rss = 0.0

    def record(name: str, label: str, seconds: float, cpu: float, spark: SparkRun | None) -> None:
        runs[name].append((records / seconds, seconds, cpu, spark))
        split = ""
        if spark is not None:
            split = (
                f": JVM {spark.jvm_cpu / records * 1e6:.2f} (JIT "
                f"{spark.jit_cpu / records * 1e6:.2f}), Python workers "
                f"{spark.python_cpu / records * 1e6:.2f}; {spark.new_workers} new Python workers"
            )
        common.log(
            f"{label}: {records / seconds:,.0f} records/s ({seconds:.1f}s, "
            f"{cpu / records * 1e6:.2f} CPU µs/record{split})"
        )

    rps, raw_rss, cpu = raw_loop(settings, work.topic, work.ends, 1, work.batch)
    record("single", "raw loop, 1 process", records / rps, cpu, None)
    for attempt in range(1, repeats + 1):
        tag = f" (run {attempt}/{repeats})" if repeats > 1 else ""
        for name, label, paused in (
            ("raw", f"raw loop, {slots} processes", False),
            ("raw_gc_paused", f"raw loop, {slots} processes, GC paused", True),
        ):
            rps, rss, cpu = raw_loop(
                settings, work.topic, work.ends, slots, work.batch, gc_paused=paused
            )
            raw_rss = max(raw_rss, rss)
            record(name, label + tag, records / rps, cpu, None)

        for name, label, columns in (
            ("reader", "reader (value) -> noop", ("value",)),
            ("fields", f"reader ({', '.join(work.fields)}) -> noop", work.fields),
        ):
            df = read_splits(
                spark, work.splits, work.consumer_config, columns, batch_size=work.batch
            )
            run = timed_noop_write(spark, df)
            if run.rows != records:
                raise RuntimeError(f"{label} returned {run.rows} rows, expected {records}")
            record(name, label + tag, run.seconds, run.cpu, run)

        raw = read_splits(
            spark,
            work.splits,
            work.consumer_config,
            work.fields,
            batch_size=work.batch,
            derived=derived,
            shedding=shedding,
        )
        run = timed_noop_write(spark, decode_records(work.spec, raw))
        if run.rows != records:
            raise RuntimeError(f"reader + JSON returned {run.rows} rows, expected {records}")
        record("json", f"reader + JSON -> noop{tag}", run.seconds, run.cpu, run)

        raw = native_frame(spark, work, work.avro_spec, work.avro_splits)
        run = timed_noop_write(spark, decode_records(work.avro_spec, raw))
        if run.rows != records:
            raise RuntimeError(f"reader + Avro returned {run.rows} rows, expected {records}")
        record("avro", f"reader + Avro -> noop{tag}", run.seconds, run.cpu, run)

        raw = native_frame(spark, work, work.protobuf_spec, work.protobuf_splits)
        run = timed_noop_write(spark, decode_records(work.protobuf_spec, raw))
        if run.rows != records:
            raise RuntimeError(f"reader + protobuf returned {run.rows} rows, expected {records}")
        record("protobuf", f"reader + protobuf -> noop{tag}", run.seconds, run.cpu, run)

        run = json_step(spark, work.spec, work.records)
        record("json_step", f"a run's JSON read step -> noop{tag}", run.seconds, run.cpu, run)
        if common.SPARK_KAFKA:
            for name, label, query in (
                ("spark_value", "Spark's Kafka source (value) -> noop", None),
                (
                    "spark_json",
                    "Spark's Kafka source + from_json -> noop",
                    json_query(work.spec.columns),
                ),
                (
                    "spark_avro",
                    "Spark's Kafka source + from_avro -> noop",
                    avro_query(work.avro_spec.columns),
                ),
                *(
                    (
                        (
                            "spark_protobuf",
                            "Spark's Kafka source + from_protobuf -> noop",
                            protobuf_query(),
                        ),
                    )
                    if common.SPARK_PROTOBUF
                    else ()
                ),
            ):
                spec = {"spark_avro": work.avro_spec, "spark_protobuf": work.protobuf_spec}.get(
                    name, work.spec
                )
                frame = spark_kafka_frame(spark, spec, query)
                if attempt == 1 and (rows := frame.count()) != records:  # not timed
                    raise RuntimeError(f"{label} returned {rows} rows, expected {records}")
                run = timed_noop_write(spark, frame)
                record(name, label + tag, run.seconds, run.cpu, run)
    return runs, raw_rss


@contextmanager
def json_step_table(
    spark: SparkSession, spec: Any, splits: Sequence[Any] | None = None
) -> Iterator[DecodedTable]:
    """A run's JSON read step up to its sink's action: resolve the table, plan its offsets,
    read (with the native JSON decoding in the reading tasks) and decode with the dirty-data
    columns (``decode_table``: the first action over the clean rows observes the input
    statistics). With ``splits`` (a warm-up), those are read instead of the planned ones."""
    from dagster_kafka_flinklike.run.decode import decode_table
    from dagster_kafka_flinklike.run.plan import plan_table
    from dagster_kafka_flinklike.run.read import read_table
    from dagster_kafka_flinklike.run.tables import KafkaClients, resolve_table

    table = resolve_table(spec, {})
    clients = KafkaClients()
    try:
        plan = plan_table(table, clients.admin(table), None)
        if splits is not None:
            plan = replace(plan, splits=tuple(splits))
        yield decode_table(table, read_table(spark, table, plan))
    finally:
        clients.clear()


def json_step(
    spark: SparkSession,
    spec: Any,
    records: int,
    splits: Sequence[Any] | None = None,
    *,
    clean: bool = True,
) -> SparkRun:
    """What a streaming asset pays to read a JSON source (:func:`json_step_table`), into the
    no-op sink; that write fills the run's input statistics, as a run's sink write does. Every
    one of the ``records`` (or of ``splits``) must be read, and with ``clean`` none may be
    dirty (a shape's differences are reported by its check instead)."""
    meter = common.CpuMeter()
    began = time.monotonic()
    with json_step_table(spark, spec, splits) as decoded:
        decoded.frame.write.format("noop").mode("overwrite").save()
        if not decoded.counts.counted:
            raise RuntimeError("the write did not count the input statistics (observation)")
    elapsed = time.monotonic() - began
    expected = records if splits is None else sum(s.size for s in splits)
    if decoded.stats.records != expected or (clean and decoded.stats.dirty):
        raise RuntimeError(f"the JSON step read {decoded.stats}, expected {expected} clean")
    used, jit = meter.used(), meter.jit()
    return SparkRun(elapsed, decoded.stats.records, used["spark-jvm"], jit["spark-jvm"],
                    used["spark-python"], 0)  # fmt: skip


#: A query over Spark's own Kafka source: its frame (``value`` and the other fields of
#: Spark's source) in, the table's rows out.
SparkQuery = Callable[["DataFrame"], "DataFrame"]
#: How the orders write TIMESTAMP(3) (Flink's SQL text without a fraction), for ``from_json``.
ORDER_TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss"


def json_query(
    columns: Sequence[Any], timestamp_format: str = ORDER_TIMESTAMP_FORMAT
) -> SparkQuery:
    """Spark's own JSON read of a table: ``from_json`` of the value into ``columns`` (the
    table's, as their Spark types), TIMESTAMP text parsed with ``timestamp_format``."""
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.options import struct_type

    schema = struct_type(list(columns))
    options = {"timestampNTZFormat": timestamp_format}

    def query(frame: DataFrame) -> DataFrame:
        parsed = F.from_json(F.col("value").cast("string"), schema, options)
        return frame.select(parsed.alias("row")).select("row.*")

    return query


def avro_query(columns: Sequence[Any]) -> SparkQuery:
    """Spark's own Avro read of a table: ``from_avro`` of the value (a plain datum, as the
    ``avro`` format writes it) with the schema the library derives from ``columns``."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from dagster_kafka_flinklike.options import Column, avro_schema

    schema = avro_schema([c if isinstance(c, Column) else Column(**c) for c in columns])

    def query(frame: DataFrame) -> DataFrame:
        return frame.select(from_avro(F.col("value"), schema).alias("row")).select("row.*")

    return query


def native_frame(
    spark: SparkSession, work: Workload, spec: Any, splits: Sequence[Any]
) -> DataFrame:
    """The reader over ``splits`` of the Avro or protobuf orders (table ``spec``), the records
    decoded natively in the reading tasks where the scanner takes them (as a run reads them)."""
    from dagster_kafka_flinklike.source.reader import read_splits
    from dagster_kafka_flinklike.source.records import native_reading, record_fields

    derived, shedding = native_reading(spec)
    fields = record_fields(spec)
    return read_splits(
        spark, splits, work.consumer_config, fields, batch_size=work.batch, derived=derived,
        shedding=shedding,
    )  # fmt: skip


def protobuf_query() -> SparkQuery:
    """Spark's own protobuf read: ``from_protobuf`` of the value as ``bench.Order`` with the
    descriptor set the topic was written with."""
    from pyspark.sql import functions as F
    from pyspark.sql.protobuf.functions import from_protobuf

    descriptor = common.protobuf_order_descriptor()

    def query(frame: DataFrame) -> DataFrame:
        parsed = from_protobuf(
            F.col("value"), common.PROTOBUF_ORDER_MESSAGE, binaryDescriptorSet=descriptor
        )
        return frame.select(parsed.alias("row")).select("row.*")

    return query


def spark_kafka_frame(
    spark: SparkSession,
    spec: Any,
    query: SparkQuery | None = None,
    ends: Mapping[int, int] | None = None,
) -> DataFrame:
    """The topic of ``spec`` through Spark's own Kafka source: the value, or the rows of
    ``query`` (e.g. :func:`json_query`); up to the latest offsets, or ``ends``."""
    import json

    topic = spec.topics[0]
    ending = "latest" if ends is None else json.dumps({topic: {str(p): e for p, e in ends.items()}})
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", spec.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", ending)
        .load()
    )
    return frame.select("value") if query is None else query(frame)


#: The summary's ratios: key, numerator, denominator (measurements of :func:`measure`), each the
#: median over the rounds of that round's ratio.
RATIOS = (
    ("ratio_raw", "reader", "raw"),
    ("ratio_fields", "fields", "raw"),
    ("ratio_json", "json", "raw"),
    ("ratio_avro", "avro", "raw"),
    ("ratio_json_step_vs_raw", "json_step", "reader"),
    ("ratio_json_step_vs_spark", "json_step", "spark_json"),
    ("ratio_value_vs_spark", "reader", "spark_value"),
    ("ratio_avro_vs_json", "avro", "json"),
    ("ratio_avro_vs_spark", "avro", "spark_avro"),
    ("ratio_protobuf_vs_spark", "protobuf", "spark_protobuf"),
    ("ratio_raw_gc_paused", "reader", "raw_gc_paused"),
)


def summarize(runs: Runs, records: int, rss: dict[str, float]) -> dict[str, Any]:
    """The figures of the summary line: records/s as the best of the repeats, ratios as the
    medians of the rounds' own ratios (each round measures every path once, in turn), CPU and
    memory."""
    best = {name: max(r[0] for r in results) for name, results in runs.items()}
    fastest = {name: min(r[1] for r in results) for name, results in runs.items()}
    rps = {name: [r[0] for r in results] for name, results in runs.items()}
    paired = {
        key: common.paired_ratios(rps[top], rps[bottom])
        for key, top, bottom in RATIOS
        if top in rps and bottom in rps
    }
    ratios = {key: per_round for key, (per_round, _) in paired.items()}
    median = {key: middle for key, (_, middle) in paired.items()}
    cpu_us = {
        name: round(min(r[2] for r in results) / records * 1e6, 2) for name, results in runs.items()
    }
    by_process: dict[str, dict[str, float]] = {}
    for name, key in (
        ("reader", "reader"),
        ("fields", "reader_fields"),
        ("json", "reader_json"),
        ("avro", "reader_avro"),
        ("protobuf", "reader_protobuf"),
    ):
        spark = min((r[3] for r in runs[name] if r[3] is not None), key=lambda run: run.cpu)
        by_process[key] = {**spark.cpu_us(records), "new_python_workers": spark.new_workers}
    decode_shares = [1 - j / f for j, f in zip(rps["json"], rps["fields"], strict=True)]
    return {
        "raw_loop_rps": round(best["raw"]),
        "raw_loop_single_rps": round(best["single"]),
        "raw_loop_gc_paused_rps": round(best["raw_gc_paused"]),
        "reader_rps": round(best["reader"]),
        "reader_fields_rps": round(best["fields"]),
        "reader_json_rps": round(best["json"]),
        "reader_avro_rps": round(best["avro"]),
        "reader_protobuf_rps": round(best["protobuf"]),
        "json_step_rps": round(best["json_step"]),
        **(
            {
                "spark_value_rps": round(best["spark_value"]),
                "spark_json_rps": round(best["spark_json"]),
                "spark_avro_rps": round(best["spark_avro"]),
                **(
                    {"spark_protobuf_rps": round(best["spark_protobuf"])}
                    if "spark_protobuf" in best
                    else {"spark_protobuf_rps": None}
                ),
            }
            if "spark_value" in best
            else {}
        ),
        **median,
        "decode_cost_s": round(fastest["json"] - fastest["fields"], 2),
        "decode_share": round(statistics.median(decode_shares), 3),
        "ratios_per_run": ratios,
        "cpu_us_per_record": {
            "raw_loop": cpu_us["raw"],
            "raw_loop_single": cpu_us["single"],
            "raw_loop_gc_paused": cpu_us["raw_gc_paused"],
            "reader": cpu_us["reader"],
            "reader_fields": cpu_us["fields"],
            "reader_json": cpu_us["json"],
            "reader_avro": cpu_us["avro"],
            "reader_protobuf": cpu_us["protobuf"],
        },
        "cpu_us_per_record_spark": by_process,
        "rps_per_run": {name: [round(r[0]) for r in results] for name, results in runs.items()},
        "peak_rss_mb": max(
            rss["driver"],
            rss["spark_jvm"],
            rss["spark_python_workers"],
            rss["spark_python_workers_self_reported"],
        ),
        "rss_mb": rss,
    }


def run() -> dict[str, Any]:
    """The whole benchmark; returns the summary printed as the last line."""
    import read_shapes  # imports this module: see the end of the file

    records = common.env_int("BENCH_RECORDS", 5_000_000)
    partitions = common.env_int("BENCH_PARTITIONS", 6)
    repeats = max(1, common.env_int("BENCH_REPEATS", common.DEFAULT_REPEATS))
    compression = os.environ.get("BENCH_COMPRESSION", "none").strip() or "none"
    shapes = read_shapes.selected_shapes()
    shape_records = common.env_int("BENCH_SHAPE_RECORDS", read_shapes.DEFAULT_SHAPE_RECORDS)
    per_record = common.RECORD_DISK_BYTES + 150  # the protobuf orders in a topic of their own
    disk = records * per_record + read_shapes.disk_bytes(shapes, shape_records)
    summary: dict[str, Any] = {
        "records": records,
        "partitions": partitions,
        "repeats": repeats,
        "compression": compression,
        "load_avg_1m_start": round(os.getloadavg()[0], 2),
    }
    sampler = common.RssSampler().start()
    with common.bench_kafka(disk_bytes=disk) as bootstrap:
        topic = common.create_topic(bootstrap, f"dkf-read-bench-{uuid.uuid4().hex[:8]}", partitions)
        avro_topic = common.create_topic(bootstrap, f"{topic}-avro", partitions)
        protobuf_topic = common.create_topic(bootstrap, f"{topic}-protobuf", partitions)
        descriptor = Path(tempfile.mkdtemp(prefix="dkf-read-bench-")) / "orders.desc"
        descriptor.write_bytes(common.protobuf_order_descriptor())
        try:
            common.log(
                f"produce: {records:,} JSON orders to {topic} ({partitions} partitions, "
                f"compression {compression}, 2 producer processes)..."
            )
            produce_rps = common.produce_orders(
                bootstrap, topic, records, partitions, compression=compression
            )
            common.log(f"produce: {produce_rps:,.0f} records/s")
            common.log(f"produce: the same {records:,} orders as Avro to {avro_topic}...")
            common.produce_orders(
                bootstrap, avro_topic, records, partitions, compression=compression,
                value_format="avro",
            )  # fmt: skip
            common.log(f"produce: the same {records:,} orders as protobuf to {protobuf_topic}...")
            common.produce_orders(
                bootstrap, protobuf_topic, records, partitions, compression=compression,
                value_format="protobuf",
            )  # fmt: skip
            work = prepare(
                bootstrap, topic, records, partitions, avro_topic, protobuf_topic, str(descriptor)
            )
            common.log("spark: starting local session (not timed)...")
            spark = start_spark()
            try:
                slots = spark.sparkContext.defaultParallelism
                driver_memory = spark.conf.get("spark.driver.memory", "")
                warm_up(spark, work, slots)
                runs, raw_rss = measure(spark, work, slots, repeats)
                reported = worker_peaks(spark, 4 * slots)
                sampler.stop()  # the memory figures are those of the measurements above
                shape_figures = read_shapes.measure_shapes(
                    spark, bootstrap, shapes, shape_records, partitions, work.warmup, repeats,
                    compression,
                )  # fmt: skip
            finally:
                sampler.stop()  # before the JVM and its workers exit
                spark.stop()
        finally:
            common.delete_topic(bootstrap, topic)
            common.delete_topic(bootstrap, avro_topic)
            common.delete_topic(bootstrap, protobuf_topic)
            shutil.rmtree(descriptor.parent, ignore_errors=True)
    kinds = sampler.by_kind()
    rss: dict[str, float] = {
        "driver": round(common.self_peak_rss_mb(), 1),
        "spark_jvm": kinds.get("spark-jvm", 0.0),
        "spark_python_workers": kinds.get("spark-python", 0.0),
        "spark_python_workers_self_reported": round(max(reported.values(), default=0.0), 1),
        "raw_loop_process": round(raw_rss, 1),
    }
    if "kafka-broker" in kinds:
        rss["kafka_broker"] = kinds["kafka-broker"]
    summary.update(summarize(runs, records, rss))
    summary.update(
        {
            "processes": slots,
            "splits": len(work.splits),
            "batch_size": work.batch,
            "driver_memory": driver_memory,
            "warmup_records": sum(s.size for s in warm_splits(work.topic, work.ends, work.warmup)),
            "produce_rps": round(produce_rps),
            **shape_figures,
            "load_avg_1m_end": round(os.getloadavg()[0], 2),
        }
    )
    return summary


def headline(summary: dict[str, Any]) -> str:
    """The summary's readable line."""
    shapes = ""
    if "ratio_json_step_vs_spark_min" in summary:
        differ = summary["shapes_differ"]
        shapes = (
            f"; shapes: JSON step at least {summary['ratio_json_step_vs_spark_min']:.2f}x "
            f"Spark's source, rows {'differ in ' + ', '.join(differ) if differ else 'the same'}"
        )
    return (
        f"summary: reader {summary['ratio_raw']:.2f}x the raw loop "
        f"({summary['ratio_fields']:.2f}x with the JSON path's fields), reader + JSON "
        f"{summary['ratio_json']:.2f}x, reader + Avro {summary['ratio_avro']:.2f}x; JSON "
        f"decoding takes {summary['decode_share']:.0%} of "
        f"the reader's throughput; peak RSS {summary['peak_rss_mb']:.0f} MiB{shapes}"
    )


if __name__ == "__main__":
    # read_shapes imports this module by its name: let it find this run's, not a second copy.
    sys.modules.setdefault("read_bench", sys.modules[__name__])
    common.run_and_print(run, headline)
