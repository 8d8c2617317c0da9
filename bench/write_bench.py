"""Write benchmark: our Kafka sinks against a raw confluent-kafka produce loop, in one run.

Builds ``$BENCH_RECORDS`` (default 5,000,000) keyed ~220-byte JSON orders as a Spark DataFrame
(generated in Spark, cached and counted before any clock starts), then measures records per
second of

- ``raw_rps``: a raw produce loop in one process over pre-built ``(key, value)`` byte pairs,
  with the at-least-once sink's producer settings (``acks=all``, idempotence, linger), every
  delivery report checked;
- ``alo_rps``: the at-least-once sink, ``sink.writer.write`` (one producer per Spark task);
- ``eos_rps``: the exactly-once sink, ``TransactionalSink`` (``begin``, ``write``: one
  transactional producer on the driver, commit);
- ``eos_split_rps``: the exactly-once sink with a transaction per split
  (``sink.transaction-scope`` = ``split``, ``SplitTransactions``: ``begin``, fencing every
  split's id, one transactional producer per Spark task, the driver's verdict, the commits),
  each DataFrame partition standing for one split of an empty source topic of as many
  partitions, whose progress the transactions record;
- ``spark_rps``: the anchor, Spark's own Kafka sink (``spark-sql-kafka-0-10`` of this Spark
  release, ``df.write.format("kafka")``) with the at-least-once sink's producer settings
  (``acks=all``, idempotence, linger);

each into a fresh 6-partition topic whose contents are checked afterwards (the committed records
through a read_committed consumer for exactly-once), and the peak RSS of the driver, the Spark
JVM and the Spark Python workers. Every round measures each path once, in turn; the ratios
(``ratio_alo_vs_spark``, ``ratio_eos_vs_alo``, ``ratio_eos_split_vs_alo``, ...) are medians of
the rounds' own ratios. The last line printed is one JSON object with every figure. See
``bench/README.md``.

Environment: ``BENCH_RECORDS``, ``BENCH_PARTITIONS`` (6, of each topic), ``BENCH_REPEATS`` (5;
rounds), ``BENCH_SPARK_KAFKA`` (0: no Spark Kafka sink anchor), ``BENCH_PRODUCER_PROPERTIES`` (a
JSON object of client properties for all four),
``BENCH_SPARK_PARTITIONS`` (the DataFrame's partitions, so the at-least-once sink's tasks;
default one per 125,000 records, at least the task slots), ``BENCH_DRIVER_MEMORY`` (``6g``: the
Spark driver heap, which holds the cached records), ``KAFKA_BOOTSTRAP_SERVERS`` (use that broker
instead of starting one).
"""

from __future__ import annotations

import multiprocessing
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import _common as common

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: Records per DataFrame partition when ``BENCH_SPARK_PARTITIONS`` is not set: the at-least-once
#: sink's tasks, and the streams the exactly-once sink's driver reads.
RECORDS_PER_SPARK_PARTITION = 125_000
#: The Spark driver's heap: the cached DataFrame (~1.2 GB at 5M records) must fit in Spark's
#: storage memory, or the timed writes re-read part of it from disk. ``BENCH_DRIVER_MEMORY``
#: overrides it.
DRIVER_MEMORY = "6g"
#: The broker is warmed up by an untimed raw loop over this share of ``BENCH_RECORDS``.
BROKER_WARM_SHARE = 5
#: Repeats of each measurement (best of n) when ``BENCH_REPEATS`` is not set.
REPEATS = 5
#: Records of the untimed write through each sink just before it is timed.
WARM_RECORDS = 20_000
#: ... or this share of ``BENCH_RECORDS`` if larger, so the JVM's JIT has compiled the sinks'
#: hot paths before the clock starts (as the read benchmark warms up).
WARM_SHARE = 20
#: The raw loop serves delivery reports (``poll(0)``) after every this many records.
RAW_POLL_EVERY = 1_000
#: librdkafka producer settings that the Java client (Spark's Kafka sink) takes under the same name
#: and meaning; the others (``partitioner``, ``delivery.report.only.error``) have no Java
#: counterpart or Java's default already matches them (murmur2 hashing of the key).
JAVA_PRODUCER_KEYS = (
    "acks",
    "enable.idempotence",
    "linger.ms",
    "batch.size",
    "compression.type",
    "max.in.flight.requests.per.connection",
    "request.timeout.ms",
    "delivery.timeout.ms",
    "retries",
    "retry.backoff.ms",
)
#: One stable id, as the sink uses per asset: runs fence each other instead of adding ids.
TRANSACTIONAL_ID = "dkf-write-bench"
_FLUSH_TIMEOUT_S = 600.0


def _raw_worker(
    settings: Mapping[str, Any], topic: str, records: int, ready: Any, go: Any, results: Any
) -> None:
    """One raw-loop process: build the pairs, say ``ready``, wait for ``go``, produce, flush.

    The pairs are the bytes the Spark DataFrame holds (:func:`build_frame`), built before the
    clock starts. Producer creation, producing, polling and the final flush are timed.
    """
    from confluent_kafka import Producer

    templates = common.order_templates()
    width = len(templates)
    pairs = []
    for i in range(records):
        key = b"%019d" % i
        before, after = templates[i % width]
        pairs.append((key, before + key + after))
    delivered = [0]
    failed: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            delivered[0] += 1
        else:
            failed.append(str(err))

    ready.put(True)
    go.wait()
    began = time.monotonic()
    cpu = time.process_time()  # this process's threads, librdkafka's included
    stolen = common.steal_seconds()
    producer = Producer({**settings, "on_delivery": on_delivery})
    produce = producer.produce
    poll = producer.poll
    for start in range(0, records, RAW_POLL_EVERY):
        for key, value in pairs[start : start + RAW_POLL_EVERY]:
            try:
                produce(topic, value, key)
            except BufferError:  # local queue full: serve reports until it takes the record
                while True:
                    poll(0.05)
                    try:
                        produce(topic, value, key)
                        break
                    except BufferError:
                        continue
        poll(0)
    left = producer.flush(_FLUSH_TIMEOUT_S)
    elapsed = time.monotonic() - began
    results.put(
        {
            "seconds": elapsed,
            "cpu": time.process_time() - cpu,
            "stolen": common.steal_seconds() - stolen,
            "delivered": delivered[0],
            "failed": len(failed) + left,
            "error": failed[0] if failed else (f"{left} record(s) unflushed" if left else None),
            "rss_mb": common.self_peak_rss_mb(),
        }
    )


def raw_loop(
    settings: Mapping[str, Any], topic: str, records: int
) -> tuple[float, float, float, float]:
    """Seconds, CPU seconds, peak RSS and the machine's stolen CPU seconds (while it produced)
    of one raw-loop process producing ``records`` records.

    The process builds its pairs first and is released once ready, so neither interpreter
    start-up nor pair building is timed.

    Raises:
        RuntimeError: a delivery failed or the reports do not add up to ``records``.
    """
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    results = ctx.Queue()
    ready = ctx.Queue()
    proc = ctx.Process(target=_raw_worker, args=(settings, topic, records, ready, go, results))
    proc.start()
    _from_child(ready, proc, topic)
    go.set()
    outcome = _from_child(results, proc, topic)
    proc.join()
    # With 'delivery.report.only.error' only failures are reported: the flush then vouches.
    only_errors = str(settings.get("delivery.report.only.error", "false")).lower() == "true"
    reported = records if only_errors else outcome["delivered"]
    if proc.exitcode or outcome["failed"] or reported != records:
        raise RuntimeError(
            f"raw loop to {topic}: {outcome['delivered']} of {records} records delivered, "
            f"{outcome['failed']} failed (first error: {outcome['error']})"
        )
    return outcome["seconds"], outcome["cpu"], outcome["rss_mb"], outcome["stolen"]


def _from_child(queue: Any, proc: Any, topic: str) -> Any:
    """The next item ``proc`` puts on ``queue``; fails at once if the process died instead."""
    import queue as queues

    while True:
        try:
            return queue.get(timeout=1.0)
        except queues.Empty:
            if not proc.is_alive():
                raise RuntimeError(
                    f"the raw-loop process for {topic} exited with code {proc.exitcode}"
                ) from None


def start_spark(driver_memory: str) -> SparkSession:
    """The session the library's resources build (``local[2]``, or ``$SPARK_MASTER``'s
    cluster), with a driver heap of ``driver_memory`` so the cached records stay in memory."""
    return common.start_spark("dkf-write-bench", {"spark.driver.memory": driver_memory})


def build_frame(spark: SparkSession, records: int, partitions: int) -> DataFrame:
    """``records`` keyed orders as binary ``key`` / ``value`` columns, generated in Spark.

    Row ``i`` has the 19-digit key ``i`` and the value ``before + key + after`` of template
    ``i % 1000`` (:func:`_common.order_templates`): the raw loop's bytes exactly.
    """
    from pyspark.sql import functions as F

    templates = common.order_templates()
    table = spark.createDataFrame(
        [(i, before, after) for i, (before, after) in enumerate(templates)],
        "template long, before binary, after binary",
    )
    key = F.lpad(F.col("id").cast("string"), 19, "0").cast("binary")
    return (
        spark.range(0, records, 1, partitions)
        .withColumn("template", F.col("id") % len(templates))
        .join(F.broadcast(table), "template")
        .select(key.alias("key"), F.concat(F.col("before"), key, F.col("after")).alias("value"))
    )


def timed_alo(df: DataFrame, topic: str, client: Mapping[str, Any]) -> tuple[float, Cpu, Any]:
    """Seconds and CPU seconds by process kind of one at-least-once :func:`write`, its result."""
    from dagster_kafka_flinklike.options import DeliveryGuarantee
    from dagster_kafka_flinklike.sink.writer import write

    meter = common.CpuMeter()
    began = time.monotonic()
    result = write(df, topic, client, DeliveryGuarantee.AT_LEAST_ONCE)
    seconds = time.monotonic() - began
    return seconds, Cpu.of(meter), result


class _SinkLog:
    """The exactly-once sinks' log lines (initialised, producing, committing, committed, the
    producer's id and epoch) among the benchmark's own, so a failed check shows what the sink
    did."""

    def info(self, message: str) -> None:
        common.log(f"  sink: {message}")

    warning = debug = info


def timed_eos(df: DataFrame, topic: str, client: Mapping[str, Any]) -> tuple[float, Cpu, Any]:
    """Seconds and CPU seconds by process kind of one exactly-once write (begin, write,
    commit), and its result."""
    from dagster_kafka_flinklike.sink.transactional import TransactionalSink

    sink = TransactionalSink(topic, client, TRANSACTIONAL_ID, log=_SinkLog())
    try:
        meter = common.CpuMeter()
        began = time.monotonic()
        sink.begin()
        result = sink.write(df, offsets={})
        seconds = time.monotonic() - began
        cpu = Cpu.of(meter)
    finally:
        sink.close()
    return seconds, cpu, result


def timed_eos_split(
    df: DataFrame, topic: str, client: Mapping[str, Any], source: str, bootstrap: str
) -> tuple[float, Cpu, Any]:
    """Seconds and CPU seconds by process kind of one exactly-once write with a transaction per
    split (begin, fence, write, verdict, commits), and its result. DataFrame partition ``i``
    stands for a split of partition ``i`` of the empty topic ``source``; a new asset name each
    time, so no split is found committed already."""
    from dagster_kafka_flinklike.sink.partitioners import SinkPartitioner
    from dagster_kafka_flinklike.sink.split_transactions import SplitTransactions
    from dagster_kafka_flinklike.source.admin import KafkaAdmin
    from dagster_kafka_flinklike.source.enumerator import KafkaSplit

    tasks = df.rdd.getNumPartitions()
    splits = [KafkaSplit(source, i, 0, 1) for i in range(tasks)]
    writer = SplitTransactions(
        topic,
        client,
        TRANSACTIONAL_ID,
        f"split-{uuid.uuid4().hex[:8]}",
        partitioner=SinkPartitioner.resolve("default", topic),
        admin=KafkaAdmin({"bootstrap.servers": bootstrap}),
        log=_SinkLog(),
    )
    try:
        meter = common.CpuMeter()
        began = time.monotonic()
        writer.begin()
        writer.fence([(source, i) for i in range(tasks)])
        result = writer.write(df, splits, decide=lambda: None)
        seconds = time.monotonic() - began
        cpu = Cpu.of(meter)
    finally:
        writer.close()
    return seconds, cpu, result


def spark_kafka_options(settings: Mapping[str, Any]) -> dict[str, str]:
    """Spark's Kafka sink options (``kafka.*``) for librdkafka producer ``settings``: the ones
    the Java client knows by the same name (:data:`JAVA_PRODUCER_KEYS`), so Spark's sink
    produces as the at-least-once sink does (``acks=all``, idempotence, ``linger.ms``).

    Example:
        >>> spark_kafka_options({"acks": "all", "enable.idempotence": True, "partitioner": "x"})
        {'kafka.acks': 'all', 'kafka.enable.idempotence': 'true'}
    """
    given = dict(settings)
    if "compression.codec" in given:  # librdkafka's alias
        given.setdefault("compression.type", given["compression.codec"])
    options = {}
    for key in JAVA_PRODUCER_KEYS:
        if key in given:
            value = given[key]
            options[f"kafka.{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return options


def timed_spark(
    df: DataFrame, topic: str, bootstrap: str, options: Mapping[str, str]
) -> tuple[float, Cpu]:
    """Seconds and CPU seconds by process kind of one write through Spark's own Kafka sink."""
    meter = common.CpuMeter()
    began = time.monotonic()
    (
        df.write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .options(**options)
        .save()
    )
    seconds = time.monotonic() - began
    return seconds, Cpu.of(meter)


def producer_properties() -> dict[str, str]:
    """``BENCH_PRODUCER_PROPERTIES``: a JSON object of client properties (``properties.*``
    without the prefix, e.g. ``{"linger.ms": "20"}``) for the raw loop and both sinks."""
    import json

    text = os.environ.get("BENCH_PRODUCER_PROPERTIES", "").strip()
    if not text:
        return {}
    given = json.loads(text)
    if not isinstance(given, dict):
        raise SystemExit("BENCH_PRODUCER_PROPERTIES must be a JSON object")
    return {str(key): str(value) for key, value in given.items()}


@dataclass(frozen=True)
class Cpu:
    """CPU seconds of one measurement by process kind, of them the JVMs' JIT compilers', and
    the seconds the host stole from the machine's CPUs meanwhile."""

    by_kind: dict[str, float]
    jit: dict[str, float]
    stolen: float

    @classmethod
    def of(cls, meter: common.CpuMeter) -> Cpu:
        """What ``meter`` counted since it was made."""
        return cls(meter.used(), meter.jit(), meter.stolen())

    def sink(self) -> float:
        """Seconds without the broker's: what ``cpu_us_per_record`` counts."""
        return sum(used for kind, used in self.by_kind.items() if kind != "kafka-broker")


def stolen_share(cpu: Cpu, seconds: float) -> float:
    """The share of all CPUs' time over ``seconds`` that the host stole during a measurement."""
    return cpu.stolen / (seconds * (os.cpu_count() or 1))


def jvm_heap_used_mb(spark: SparkSession) -> float:
    """The Spark driver JVM's heap in use right after a full garbage collection, in MiB.

    Read after every exactly-once write: a sink that leaves data behind in the driver JVM shows
    as growth from one write to the next.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.java.lang.System.gc()
    runtime = jvm.java.lang.Runtime.getRuntime()
    return round((runtime.totalMemory() - runtime.freeMemory()) / 2**20, 1)


def committed_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Records of ``topic`` a read_committed consumer sees, counted to the end.

    Raises:
        RuntimeError: a partition has an open transaction (last stable offset below the high
            watermark), or the consumer reports an error.
    """
    from confluent_kafka import Consumer, IsolationLevel, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    # The coordinator writes the commit markers after the commit returns: wait for them.
    deadline = time.monotonic() + 60
    while True:
        stable = {
            tp.partition: info.result().offset
            for tp, info in admin.list_offsets(
                wanted, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=30
            ).items()
        }
        ends = common.end_offsets(bootstrap, topic, partitions)
        if stable == ends or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if stable != ends:
        raise RuntimeError(
            f"{topic}: last stable offsets {stable} are below the high watermarks {ends}: "
            f"a transaction is still open"
        )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "dkf-write-bench-verify",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    open_partitions = {p for p in range(partitions) if ends[p] > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in sorted(open_partitions)])
    count = 0
    last = time.monotonic()
    try:
        while open_partitions:
            messages = consumer.consume(num_messages=10_000, timeout=1.0)
            for message in messages:
                error = message.error()
                if error is None:
                    count += 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    open_partitions.discard(message.partition())
                else:
                    raise RuntimeError(f"reading {topic} back: {error.str()}")
            if messages:
                last = time.monotonic()
            elif time.monotonic() - last > 60:
                raise RuntimeError(f"reading {topic} back stalled after {count} records")
    finally:
        consumer.close()
    return count


def verify(bootstrap: str, topic: str, partitions: int, records: int, committed: bool) -> None:
    """Fail loudly unless ``topic`` holds exactly ``records`` records.

    Non-transactional topics are counted by their high watermarks; a transactional one by a
    read_committed consumer, so aborted or open transactions and markers do not count.
    """
    if committed:
        held = committed_records(bootstrap, topic, partitions)
        how = "committed records"
    else:
        held = sum(common.end_offsets(bootstrap, topic, partitions).values())
        how = "records by end offsets"
    if held != records:
        raise RuntimeError(f"{topic} holds {held:,} {how}, expected {records:,}")


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    """Delete the benchmark's topics (they hold gigabytes at the default size)."""
    from confluent_kafka.admin import AdminClient

    if not topics:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the futures
    for topic, future in admin.delete_topics(topics, operation_timeout=30).items():
        try:
            future.result(timeout=60)
        except Exception as exc:  # cleanup only: report and go on
            common.log(f"cleanup: could not delete {topic}: {exc}")


def run() -> dict[str, Any]:
    """The whole benchmark; returns the summary printed as the last line."""
    records = common.env_int("BENCH_RECORDS", 5_000_000)
    partitions = common.env_int("BENCH_PARTITIONS", 6)
    repeats = max(1, common.env_int("BENCH_REPEATS", REPEATS))
    sampler = common.RssSampler().start()
    summary: dict[str, Any] = {
        "records": records,
        "partitions": partitions,
        "load_avg_1m_start": round(os.getloadavg()[0], 2),
    }
    # Each topic is deleted once checked: at most the one being written, the one being checked
    # and one whose files the broker is still removing.
    with common.bench_kafka(disk_bytes=3 * records * common.RECORD_DISK_BYTES) as bootstrap:
        topics: list[str] = []
        try:
            summary.update(measure(bootstrap, records, partitions, repeats, sampler, topics))
        finally:
            delete_topics(bootstrap, topics)
    return summary


def measure(
    bootstrap: str,
    records: int,
    partitions: int,
    repeats: int,
    sampler: common.RssSampler,
    topics: list[str],
) -> dict[str, Any]:
    """Build the DataFrame, then time the raw loop, the at-least-once and exactly-once sinks.

    Every topic created is appended to ``topics`` (for cleanup).
    """
    from dagster_kafka_flinklike.options import DeliveryGuarantee, client_config
    from dagster_kafka_flinklike.sink.transactional import (
        broker_max_transaction_timeout_ms,
        transaction_timeout_ms,
    )
    from dagster_kafka_flinklike.sink.writer import producer_config
    from dagster_kafka_flinklike.source.admin import KafkaAdmin

    properties = {**producer_properties(), "bootstrap.servers": bootstrap}
    client = client_config(properties, role="producer")
    settings = producer_config(client, DeliveryGuarantee.AT_LEAST_ONCE)
    shown = {k: v for k, v in settings.items() if k != "bootstrap.servers"}
    eos_settings = producer_config(client, DeliveryGuarantee.EXACTLY_ONCE)
    eos_shown = {k: v for k, v in eos_settings.items() if k != "bootstrap.servers"}
    eos_timeout_ms = transaction_timeout_ms(
        client, broker_max_transaction_timeout_ms(KafkaAdmin(properties))
    )
    common.log(f"producer settings (raw loop and at-least-once sink): {shown}")
    spark_options = spark_kafka_options(settings) if common.SPARK_KAFKA else {}
    if common.SPARK_KAFKA:
        common.log(f"Spark's Kafka sink options: {spark_options}")

    def new_topic(kind: str, count: int | None = None) -> str:
        name = f"dkf-write-bench-{kind}-{uuid.uuid4().hex[:8]}"
        topics.append(name)
        return common.create_topic(bootstrap, name, count or partitions)

    common.log("spark: starting local session (not timed)...")
    driver_memory = os.environ.get("BENCH_DRIVER_MEMORY", "").strip() or DRIVER_MEMORY
    spark = start_spark(driver_memory)
    slots = spark.sparkContext.defaultParallelism
    spark_package = spark.conf.get("spark.jars.packages", "")
    spark_partitions = common.env_int(
        "BENCH_SPARK_PARTITIONS", max(slots, records // RECORDS_PER_SPARK_PARTITION)
    )
    began = time.monotonic()
    df = build_frame(spark, records, spark_partitions).cache()
    built = df.count()
    if built != records:
        raise RuntimeError(f"the generated DataFrame has {built} rows, expected {records}")
    common.log(
        f"spark: {records:,} orders generated and cached in {spark_partitions} partitions "
        f"({time.monotonic() - began:.1f}s, not timed); {slots} task slots"
    )

    warm_records = max(WARM_RECORDS, records // WARM_SHARE)
    warm = build_frame(spark, warm_records, slots).cache()
    warm.count()

    sources: dict[int, str] = {}

    def split_source(tasks: int) -> str:
        """The empty topic whose partitions the split transactions record progress for."""
        if tasks not in sources:
            sources[tasks] = new_topic(f"split-source-{tasks}", tasks)
        return sources[tasks]

    def check_and_drop(topic: str, expected: int, committed: bool) -> None:
        """Verify ``topic``, then delete it: at 5M records each topic holds over a gigabyte,
        and fifteen of them at once can fill a small disk."""
        verify(bootstrap, topic, partitions, expected, committed)
        delete_topics(bootstrap, [topic])
        topics.remove(topic)

    def warm_up(kind: str) -> None:
        """A small untimed write through the sink about to be timed, checked.

        Spark stops Python workers idle for a minute (the raw loop can take longer), and a new
        worker spends seconds importing the library: that belongs to no throughput figure.
        """
        topic = new_topic(f"warm-{kind}")
        if kind == "spark":
            timed_spark(warm, topic, bootstrap, spark_options)
        elif kind == "eos_split":
            timed_eos_split(warm, topic, client, split_source(slots), bootstrap)
        else:
            (timed_alo if kind == "alo" else timed_eos)(warm, topic, client)
        check_and_drop(topic, warm_records, committed=kind.startswith("eos"))

    # The broker's JVM compiles its produce path over the first millions of records: without
    # this, the first raw loop mostly measures the broker's JIT compiler.
    broker_warm = max(WARM_RECORDS, records // BROKER_WARM_SHARE)
    meter = common.CpuMeter()
    topic = new_topic("warm-broker")
    seconds, _, _, _ = raw_loop(settings, topic, broker_warm)
    check_and_drop(topic, broker_warm, committed=False)
    common.log(
        f"broker: warmed up by an untimed raw loop of {broker_warm:,} records "
        f"({broker_warm / seconds:,.0f} records/s, JIT "
        f"{meter.jit()['kafka-broker']:.1f} CPU s)"
    )

    # Per measurement: (records/s, seconds, CPU seconds) of every repeat.
    runs: dict[str, list[tuple[float, float, Cpu]]] = {
        "raw": [],
        "alo": [],
        "eos": [],
        "eos_split": [],
        **({"spark": []} if common.SPARK_KAFKA else {}),
    }
    raw_rss = 0.0
    eos_stats: dict[str, Any] = {}
    heap_before = jvm_heap_used_mb(spark)
    heap_after: list[float] = []

    def record(name: str, label: str, seconds: float, cpu: Cpu) -> None:
        runs[name].append((records / seconds, seconds, cpu))
        parts = ", ".join(
            f"{kind} {used / records * 1e6:.2f}" for kind, used in cpu.by_kind.items()
        )
        jit = ", ".join(f"{kind} {used / records * 1e6:.2f}" for kind, used in cpu.jit.items())
        common.log(
            f"{label}: {records / seconds:,.0f} records/s ({seconds:.1f}s, "
            f"{cpu.sink() / records * 1e6:.2f} CPU µs/record; by process: {parts}; "
            f"of which JIT compilers: {jit}; stolen by the host: "
            f"{stolen_share(cpu, seconds):.1%} of the CPUs)"
        )

    for attempt in range(1, repeats + 1):
        tag = f" (run {attempt}/{repeats})" if repeats > 1 else ""

        topic = new_topic("raw")
        meter = common.CpuMeter()
        seconds, loop_cpu, loop_rss, stolen = raw_loop(settings, topic, records)
        broker = Cpu.of(meter)
        raw_rss = max(raw_rss, loop_rss)
        check_and_drop(topic, records, committed=False)
        raw_cpu = {"raw-loop": loop_cpu, "kafka-broker": broker.by_kind["kafka-broker"]}
        record("raw", f"raw loop, 1 process{tag}", seconds, Cpu(raw_cpu, broker.jit, stolen))

        warm_up("alo")
        topic = new_topic("alo")
        seconds, cpu, result = timed_alo(df, topic, client)
        if result.records != records or result.failed:
            raise RuntimeError(
                f"at-least-once sink reported {result.records} records, {result.failed} failed"
            )
        check_and_drop(topic, records, committed=False)
        record("alo", f"at-least-once sink, {spark_partitions} tasks{tag}", seconds, cpu)

        warm_up("eos")
        topic = new_topic("eos")
        seconds, cpu, result = timed_eos(df, topic, client)
        if result.records != records:
            raise RuntimeError(f"exactly-once sink reported {result.records} records")
        check_and_drop(topic, records, committed=True)
        eos_stats = {
            "transaction_ms": result.transaction_ms,
            "begin_ms": round(seconds * 1000 - result.transaction_ms, 1),  # fence + timeout check
            "commit_attempts": result.commit_attempts,
        }
        record("eos", f"exactly-once sink, 1 transaction{tag}", seconds, cpu)
        heap_after.append(jvm_heap_used_mb(spark))
        common.log(
            f"driver JVM heap after a full GC: {heap_before:,.0f} MiB before the first "
            f"exactly-once write, {heap_after[-1]:,.0f} MiB after this one"
        )

        warm_up("eos_split")
        topic = new_topic("eos-split")
        seconds, cpu, result = timed_eos_split(
            df, topic, client, split_source(spark_partitions), bootstrap
        )
        if result.records != records:
            raise RuntimeError(f"exactly-once split sink reported {result.records} records")
        check_and_drop(topic, records, committed=True)
        record(
            "eos_split",
            f"exactly-once sink, a transaction per split ({spark_partitions}){tag}",
            seconds,
            cpu,
        )

        if common.SPARK_KAFKA:
            warm_up("spark")
            topic = new_topic("spark")
            seconds, cpu = timed_spark(df, topic, bootstrap, spark_options)
            check_and_drop(topic, records, committed=False)
            record("spark", f"Spark's Kafka sink, {spark_partitions} tasks{tag}", seconds, cpu)

    df.unpersist()
    warm.unpersist()
    sampler.stop()
    spark.stop()
    kinds = sampler.by_kind()
    rss: dict[str, float] = {
        "driver": round(common.self_peak_rss_mb(), 1),
        "spark_jvm": kinds.get("spark-jvm", 0.0),
        "spark_python_workers": kinds.get("spark-python", 0.0),
        "raw_loop_process": round(raw_rss, 1),
    }
    if "kafka-broker" in kinds:
        rss["kafka_broker"] = kinds["kafka-broker"]
    common.log("peak RSS (MiB): " + ", ".join(f"{kind} {mb:,.0f}" for kind, mb in rss.items()))
    best = {name: max(r[0] for r in results) for name, results in runs.items()}
    cpu_us = {
        name: round(min(r[2].sink() for r in results) / records * 1e6, 2)
        for name, results in runs.items()
    }
    # Of the fastest repeat of each: where its CPU went, the broker's included.
    fastest = {name: max(results, key=lambda r: r[0])[2] for name, results in runs.items()}
    by_process = {
        name: {kind: round(used / records * 1e6, 2) for kind, used in cpu.by_kind.items()}
        for name, cpu in fastest.items()
    }
    jit = {
        name: {kind: round(used / records * 1e6, 2) for kind, used in cpu.jit.items()}
        for name, cpu in fastest.items()
    }
    # Each round's measurements ran one after the other: their ratios are paired samples,
    # steadier than the ratio of bests when the whole machine speeds up or slows down.
    rps = {name: [r[0] for r in results] for name, results in runs.items()}
    paired = {
        key: common.paired_ratios(rps[top], rps[bottom])
        for key, top, bottom in (
            ("alo_raw", "alo", "raw"),
            ("eos_alo", "eos", "alo"),
            ("eos_split_alo", "eos_split", "alo"),
            ("alo_spark", "alo", "spark"),
        )
        if bottom in rps
    }
    medians = {key: middle for key, (_, middle) in paired.items()}
    anchor: dict[str, Any] = {}
    if "spark" in runs:
        anchor = {
            "spark_rps": round(best["spark"]),
            "ratio_alo_vs_spark": medians["alo_spark"],
            "spark_kafka_package": spark_package,
            "spark_producer_options": spark_options,
        }
    return {
        "raw_rps": round(best["raw"]),
        "alo_rps": round(best["alo"]),
        "eos_rps": round(best["eos"]),
        "eos_split_rps": round(best["eos_split"]),
        **anchor,
        "ratio_eos_vs_alo": medians["eos_alo"],
        "ratio_eos_split_vs_alo": medians["eos_split_alo"],
        "ratio_alo_raw": round(best["alo"] / best["raw"], 3),
        "ratio_eos_alo": round(best["eos"] / best["alo"], 3),
        "ratio_eos_raw": round(best["eos"] / best["raw"], 3),
        "target_alo_raw_met": best["alo"] >= 0.8 * best["raw"],
        "target_eos_alo_met": best["eos"] >= 0.7 * best["alo"],
        "cpu_us_per_record": cpu_us,
        "cpu_us_per_record_by_process": by_process,
        "jit_us_per_record": jit,
        "rps_per_run": {name: [round(r[0]) for r in results] for name, results in runs.items()},
        # Of each repeat's elapsed CPU time (all CPUs), the share the host ran something else
        # while this machine's processes were ready: slow rounds with a high share were starved.
        "stolen_share_per_run": {
            name: [round(stolen_share(r[2], r[1]), 3) for r in results]
            for name, results in runs.items()
        },
        "ratios_per_run": {key: per_round for key, (per_round, _) in paired.items()},
        "ratio_alo_raw_median": medians["alo_raw"],
        "ratio_eos_alo_median": medians["eos_alo"],
        "peak_rss_mb": max(rss["driver"], rss["spark_jvm"], rss["spark_python_workers"]),
        "rss_mb": rss,
        "producer_settings": shown,
        "eos_producer_settings": {**eos_shown, "transaction.timeout.ms": eos_timeout_ms},
        "eos_transaction": eos_stats,
        "driver_jvm_heap_mb": {"before_eos": heap_before, "after_eos": heap_after},
        "eos_heap_growth_mb": round(heap_after[-1] - heap_before, 1),
        "raw_poll_every": RAW_POLL_EVERY,
        "spark_partitions": spark_partitions,
        "spark_driver_memory": driver_memory,
        "task_slots": slots,
        "repeats": repeats,
        "load_avg_1m_end": round(os.getloadavg()[0], 2),
    }


def headline(summary: dict[str, Any]) -> str:
    """The summary's readable line."""
    anchor = ""
    if "ratio_alo_vs_spark" in summary:
        anchor = f", {summary['ratio_alo_vs_spark']:.2f}x Spark's Kafka sink (median)"
    return (
        f"summary: at-least-once sink {summary['ratio_alo_raw']:.2f}x the raw loop (target 0.8; "
        f"median of the rounds {summary['ratio_alo_raw_median']:.2f}x){anchor}, exactly-once "
        f"{summary['ratio_eos_alo']:.2f}x at-least-once (target 0.7; median "
        f"{summary['ratio_eos_vs_alo']:.2f}x), with a transaction per split "
        f"{summary['ratio_eos_split_vs_alo']:.2f}x (median); "
        f"peak RSS {summary['peak_rss_mb']:.0f} MiB"
    )


if __name__ == "__main__":
    common.run_and_print(run, headline)
