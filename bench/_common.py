"""Shared benchmark helpers: a broker for one run, a topic filled fast, peak memory figures.

The read and write benchmarks use these so that both start the same way
(``$KAFKA_BOOTSTRAP_SERVERS`` or an embedded broker in a temporary directory that is removed
afterwards), produce the same order-like records, and report memory the same way (peak RSS per
process kind).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # running ``python bench/x.py`` from anywhere
    sys.path.insert(0, str(ROOT))

#: Producer settings for filling a benchmark topic: large batches, some linger, no compression.
FAST_PRODUCER = {
    "acks": "1",
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "compression.type": "none",
    "enable.idempotence": False,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 512 * 1024,
    "message.max.bytes": 2_000_000,
}


def log(text: str) -> None:
    """Print one progress line at once (benchmarks run for minutes; show where they are)."""
    print(text, flush=True)


#: Each measurement is repeated this many times (``BENCH_REPEATS``; records/s are the best run,
#: ratios the median of the rounds' own ratios, :func:`paired_ratios`): the
#: Spark JVM and the broker's JVM keep compiling over the first full-size runs (the broker's CPU
#: per record fell from 3.2 to 0.9 µs over three runs of the raw loop), so a single run mostly
#: measures how warm each JVM happened to be. The write benchmark repeats more
#: (``write_bench.REPEATS``).
DEFAULT_REPEATS = 3


def env_int(name: str, default: int) -> int:
    """An integer from the environment (``_`` allowed as in Python literals), else ``default``."""
    raw = os.environ.get(name, "").strip().replace("_", "")
    return int(raw) if raw else default


def exit_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit`` so ``finally`` blocks stop the broker and clean up."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def run_and_print(
    run: Callable[[], dict[str, Any]], headline: Callable[[dict[str, Any]], str]
) -> None:
    """A benchmark's ``main``: run it (SIGTERM still cleans up), log ``headline(summary)`` and
    print the summary, with its total seconds, as the last line (JSON)."""
    exit_on_sigterm()
    began = time.monotonic()
    summary = run()
    summary["total_s"] = round(time.monotonic() - began, 1)
    log(headline(summary))
    print(json.dumps(summary), flush=True)


#: ``BENCH_SPARK_KAFKA=0`` leaves Spark's own Kafka connector (the anchor each benchmark measures
#: side by side with ours) out.
SPARK_KAFKA = os.environ.get("BENCH_SPARK_KAFKA", "1").strip() != "0"
#: Whether Spark's own protobuf functions (``spark-protobuf``, ``from_protobuf``) could be
#: fetched for the session (:func:`with_spark_kafka` finds out).
SPARK_PROTOBUF = False


def spark_kafka_package(artifact: str = "spark-sql-kafka-0-10_2.13") -> str:
    """``spark-sql-kafka-0-10`` (or another of Spark's own packages) of this Spark release, as
    Maven coordinates: the patch release if the Maven repository has it, else the minor
    version's first release."""
    import urllib.request

    import pyspark

    from dagster_kafka_flinklike.local.fetch import maven_repository

    version = pyspark.__version__.split("+")[0]
    for candidate in dict.fromkeys((version, ".".join(version.split(".")[:2]) + ".0")):
        folder = f"{maven_repository()}/org/apache/spark/{artifact}/{candidate}"
        url = f"{folder}/{artifact}-{candidate}.pom"
        try:
            with urllib.request.urlopen(url, timeout=30):
                return f"org.apache.spark:{artifact}:{candidate}"
        except OSError:
            continue
    raise RuntimeError(f"{artifact} {version} is not on Maven Central; set BENCH_SPARK_KAFKA=0")


def start_spark(
    app_name: str, settings: Mapping[str, Any], *, spark_avro: bool = False
) -> SparkSession:
    """The Spark session a benchmark measures in: the library's (``local[2]``, or the cluster
    ``$SPARK_MASTER`` names, with the package shipped to its executors as ``SparkResource``
    ships it), ``settings`` over it, Spark's own Kafka connector beside it (the anchor)."""
    from dagster_kafka_flinklike._spark_session import build_session
    from dagster_kafka_flinklike.spark import (
        default_spark_config,
        prepare_spark_environment,
        session_config,
    )

    config = {**default_spark_config(app_name), "spark.ui.showConsoleProgress": "false"}
    executor_memory = os.environ.get("BENCH_EXECUTOR_MEMORY", "").strip()
    if executor_memory:
        config["spark.executor.memory"] = executor_memory
    config = session_config(with_spark_kafka({**config, **settings}), spark_avro=spark_avro)
    prepare_spark_environment(config["spark.master"])
    spark = build_session(config)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def with_spark_kafka(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with Spark's own Kafka connector and protobuf functions (``from_protobuf``) of
    this Spark release added to ``spark.jars.packages`` (Ivy fetches them and their
    dependencies once), unless ``BENCH_SPARK_KAFKA=0``. A Maven mirror set in
    ``$DKF_MAVEN_REPOSITORY`` is also Ivy's."""
    out = dict(config)
    if not SPARK_KAFKA:
        return out
    packages = [spark_kafka_package()]
    global SPARK_PROTOBUF
    try:
        packages.append(spark_kafka_package("spark-protobuf_2.13"))
        SPARK_PROTOBUF = True
    except RuntimeError as exc:  # Spark's own protobuf anchor left out, the rest goes on
        log(f"no from_protobuf anchor: {exc}")
        SPARK_PROTOBUF = False
    given = out.get("spark.jars.packages")
    out["spark.jars.packages"] = ",".join(p for p in (given, *packages) if p)
    if os.environ.get("DKF_MAVEN_REPOSITORY", "").strip():
        from dagster_kafka_flinklike.local.fetch import maven_repository

        out["spark.jars.repositories"] = ",".join(
            r for r in (out.get("spark.jars.repositories"), maven_repository()) if r
        )
    return out


def paired_ratios(
    numerators: Sequence[float], denominators: Sequence[float]
) -> tuple[list[float], float]:
    """The per-round ratios ``numerators[i] / denominators[i]`` and their median, each rounded
    to three places.

    Each round measures every path once, in turn, so a round's figures share the machine's
    state of that minute; on a shared machine the median of their ratios is steadier than the
    ratio of the best figures, which may come from different rounds.

    Example:
        >>> paired_ratios([2.0, 3.0, 10.0], [1.0, 2.0, 2.0])
        ([2.0, 1.5, 5.0], 2.0)
    """
    ratios = [round(n / d, 3) for n, d in zip(numerators, denominators, strict=True)]
    return ratios, round(statistics.median(ratios), 3)


#: Disk a benchmark order record takes in the broker's log (key, ~220-byte value, overhead),
#: rounded up.
RECORD_DISK_BYTES = 300


@contextmanager
def bench_kafka(disk_bytes: int = 0) -> Iterator[str]:
    """Bootstrap servers for one benchmark run.

    ``$KAFKA_BOOTSTRAP_SERVERS`` when set (nothing is started or stopped); otherwise an embedded
    broker in a fresh temporary directory, stopped and deleted on exit, also on errors. The
    embedded broker needs ``disk_bytes`` free there: a broker whose disk fills up stops, and
    the run would hang on it rather than fail.
    """
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        log(f"broker: $KAFKA_BOOTSTRAP_SERVERS = {env}")
        yield env
        return
    from dagster_kafka_flinklike.local import EmbeddedKafka

    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < disk_bytes:
        raise SystemExit(
            f"The embedded broker needs about {disk_bytes / 2**30:.1f} GiB free in "
            f"{tempfile.gettempdir()}, which has {free / 2**30:.1f} GiB: free some space, set "
            f"TMPDIR to a larger disk, or lower BENCH_RECORDS."
        )
    tmp = Path(tempfile.mkdtemp(prefix="dkf-bench-"))
    # Deleted topics free their disk after a second instead of a minute: a benchmark writes
    # gigabytes per topic and deletes each as soon as it is checked.
    broker = EmbeddedKafka(tmp / "kafka", extra_properties={"log.segment.delete.delay.ms": "1000"})
    try:
        began = time.monotonic()
        bootstrap = broker.start(timeout=180)
        log(f"broker: embedded Kafka at {bootstrap} in {tmp} ({time.monotonic() - began:.1f}s)")
        yield bootstrap
    finally:
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"broker: stopped, {tmp} deleted")


def create_topic(
    bootstrap: str, name: str, partitions: int, config: Mapping[str, str] | None = None
) -> str:
    """Create ``name`` with ``partitions`` partitions and wait until every one has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1, config=dict(config or {}))], operation_timeout=30
    )
    futures[name].result(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if (
            info is not None
            and len(info.partitions) == partitions
            and all(p.leader >= 0 and p.error is None for p in info.partitions.values())
        ):
            return name
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leader for all {partitions} partitions after 60s")


def delete_topic(bootstrap: str, name: str) -> None:
    """Delete ``name`` (a benchmark's topic on a broker that outlives the run); errors ignored."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)
    except Exception as exc:  # cleanup only: report and go on
        log(f"could not delete topic {name}: {exc}")


#: Stands for a record's 19-digit id in a template value (:func:`cut_json`).
ID_MARKER = "@@ID@@"


def cut_json(value: Any) -> tuple[bytes, ...]:
    """``value`` as compact JSON (non-ASCII as ``\\u`` escapes) cut at every :data:`ID_MARKER`:
    the parts a record's id joins (``id.join(parts)``), so each record is unique and cheap."""
    return tuple(json.dumps(value, separators=(",", ":")).encode().split(ID_MARKER.encode()))


def order_templates(count: int = 1000) -> list[tuple[bytes, ...]]:
    """JSON order values cut around their order id: ``(before, after)`` byte pairs.

    Record ``i`` is ``before + <19-digit id i> + after``: ~200-byte orders as the demo's
    (``dagster_kafka_flinklike.local.orders``) with unique ids, at a few hundred ns each.
    """
    from dagster_kafka_flinklike.local.orders import generate_orders

    return [cut_json({**order, "order_id": ID_MARKER}) for order in generate_orders(0, count)]


def avro_order_templates(count: int = 1000) -> list[tuple[bytes, bytes]]:
    """:func:`order_templates` as Avro datums of the schema Flink derives from the order
    columns (format ``avro``); a 19-character id keeps each record's length prefix fixed."""
    import datetime as dt
    import io

    import fastavro

    from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS, generate_orders
    from dagster_kafka_flinklike.options import Column, avro_schema

    schema = fastavro.parse_schema(json.loads(avro_schema([Column(**c) for c in ORDER_COLUMNS])))
    marker = "@" * 19
    templates = []
    for order in generate_orders(0, count):
        when = dt.datetime.strptime(order["order_time"], "%Y-%m-%d %H:%M:%S")
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, {**order, "order_id": marker, "order_time": when})
        before, after = out.getvalue().split(marker.encode())
        templates.append((before, after))
    return templates


#: The orders as protobuf messages (format ``protobuf``): the order columns, the order time as
#: epoch milliseconds (protobuf has no timestamp scalar; Timestamp is a message).
PROTOBUF_ORDER_COLUMNS = [
    {"name": "order_id", "type": "STRING"},
    {"name": "order_channel", "type": "STRING"},
    {"name": "order_time", "type": "BIGINT"},
    {"name": "pay_amount", "type": "DOUBLE"},
    {"name": "real_pay", "type": "DOUBLE"},
    {"name": "pay_time", "type": "STRING"},
    {"name": "user_id", "type": "STRING"},
    {"name": "user_name", "type": "STRING"},
    {"name": "area_id", "type": "STRING"},
]
PROTOBUF_ORDER_MESSAGE = "bench.Order"


def protobuf_order_descriptor() -> bytes:
    """The FileDescriptorSet of ``bench/orders.proto`` (proto3): message ``bench.Order`` with
    :data:`PROTOBUF_ORDER_COLUMNS` as fields 1 to 9, as ``protoc --descriptor_set_out`` writes
    it."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.descriptor import FieldDescriptor as FD

    kinds = {"STRING": FD.TYPE_STRING, "BIGINT": FD.TYPE_INT64, "DOUBLE": FD.TYPE_DOUBLE}
    f = descriptor_pb2.FileDescriptorProto(name="bench/orders.proto", package="bench")
    f.syntax = "proto3"
    order = f.message_type.add(name="Order")
    for number, column in enumerate(PROTOBUF_ORDER_COLUMNS, start=1):
        order.field.add(
            name=column["name"], number=number, type=kinds[column["type"]],
            label=FD.LABEL_OPTIONAL,
        )  # fmt: skip
    return descriptor_pb2.FileDescriptorSet(file=[f]).SerializeToString()


def protobuf_order_templates(count: int = 1000) -> list[tuple[bytes, bytes]]:
    """:func:`order_templates` as serialized ``bench.Order`` messages; a 19-character id keeps
    each record's length prefix fixed."""
    import datetime as dt

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from dagster_kafka_flinklike.local.orders import generate_orders

    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(protobuf_order_descriptor()).file:
        pool.Add(file)
    Order = message_factory.GetMessageClass(pool.FindMessageTypeByName(PROTOBUF_ORDER_MESSAGE))
    marker = "@" * 19
    templates = []
    for order in generate_orders(0, count):
        when = dt.datetime.strptime(order["order_time"], "%Y-%m-%d %H:%M:%S")
        millis = int(when.replace(tzinfo=dt.UTC).timestamp() * 1000)
        message = Order(**{**order, "order_id": marker, "order_time": millis})
        before, after = message.SerializeToString().split(marker.encode())
        templates.append((before, after))
    return templates


def _produce_share(
    bootstrap: str,
    topic: str,
    partitions: list[int],
    lo: int,
    hi: int,
    compression: str,
    errors: Any,
    templates: Callable[[], Sequence[tuple[bytes, ...]]],
) -> None:
    """Produce records ``lo..hi-1`` round-robin over ``partitions`` (a producer process): record
    ``i`` is the parts of template ``i`` (of ``templates()``, cyclically) joined by its id."""
    from confluent_kafka import Producer

    parts = templates()
    width = len(parts)
    failed = [0]

    def on_error(err: Any) -> None:
        failed[0] += 1
        if failed[0] <= 3:
            log(f"producer error: {err}")

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **FAST_PRODUCER,
            "compression.type": compression,
            "error_cb": on_error,
        }
    )
    produce = producer.produce
    nparts = len(partitions)
    for i in range(lo, hi):
        key = b"%019d" % i
        value = key.join(parts[i % width])
        while True:
            try:
                produce(topic, value, key, partition=partitions[i % nparts])
                break
            except BufferError:
                producer.poll(0.05)
        if i % 50_000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    errors.put(failed[0] + left)


def produce_orders(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    *,
    processes: int = 2,
    compression: str = "none",
    value_format: str = "json",
) -> float:
    """Fill ``topic`` with ``records`` orders (``value_format`` json, avro or protobuf) as fast
    as a raw producer loop can (:func:`produce_records`); records per second of the whole
    fill."""
    templates = {
        "avro": avro_order_templates, "protobuf": protobuf_order_templates,
    }.get(value_format, order_templates)  # fmt: skip
    return produce_records(
        bootstrap, topic, records, partitions, templates,
        processes=processes, compression=compression,
    )  # fmt: skip


def produce_records(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    templates: Callable[[], Sequence[tuple[bytes, ...]]],
    *,
    processes: int = 2,
    compression: str = "none",
) -> float:
    """Fill ``topic`` with ``records`` values of ``templates`` (a module-level function, as the
    producer processes call it; see :func:`_produce_share`) as fast as a raw producer loop can.

    ``processes`` producer processes share the partitions; each uses large batches with 50 ms
    linger and ``compression`` (``none`` by default). The end offsets are checked afterwards.

    Returns:
        Records per second of the whole fill.
    """
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    processes = max(1, min(processes, partitions))
    shares = [list(range(partitions))[i::processes] for i in range(processes)]
    bounds = [records * i // processes for i in range(processes + 1)]
    began = time.monotonic()
    procs = [
        ctx.Process(
            target=_produce_share,
            args=(
                bootstrap,
                topic,
                shares[i],
                bounds[i],
                bounds[i + 1],
                compression,
                errors,
                templates,
            ),
        )
        for i in range(processes)
    ]
    for proc in procs:
        proc.start()
    failures = sum(errors.get(timeout=3600) for _ in procs)
    for proc in procs:
        proc.join()
    elapsed = time.monotonic() - began
    if failures or any(p.exitcode for p in procs):
        raise RuntimeError(f"producing to {topic} failed ({failures} errors)")
    total = sum(end_offsets(bootstrap, topic, partitions).values())
    if total != records:
        raise RuntimeError(f"{topic} holds {total} records after producing {records}")
    return records / elapsed


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """The high watermark of every partition of ``topic``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dkf-bench-offsets"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


# ----------------------------------------------------------------------------- memory


def self_peak_rss_mb() -> float:
    """Peak resident memory of this process (``getrusage`` reports KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def proc_status_mb(pid: int, key: str = "VmHWM") -> float | None:
    """``VmHWM`` (peak RSS) or another ``/proc/<pid>/status`` size in MiB; ``None`` if gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                # The command may contain spaces and parentheses: fields follow the last ')'.
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``."""
    children = _children_map()
    found: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, ()))
    return found


def process_kind(pid: int) -> str:
    """``spark-jvm``, ``spark-python`` (daemon and workers), ``kafka-broker`` or ``other``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            text = cmdline.read().replace(b"\0", b" ")
    except OSError:
        return "gone"
    if b"kafka.Kafka" in text:
        return "kafka-broker"
    if b"org.apache.spark" in text:
        return "spark-jvm"
    if b"pyspark.daemon" in text or b"pyspark.worker" in text:
        return "spark-python"
    return "other"


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds ``pid`` has used (all its threads); ``None`` if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # Fields after the command: state is index 0, utime 11, stime 12 (man 5 proc).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_by_pid(kinds: tuple[str, ...]) -> dict[int, float]:
    """CPU seconds of every descendant of this process whose :func:`process_kind` is listed."""
    result: dict[int, float] = {}
    for pid in descendants(os.getpid()):
        if process_kind(pid) in kinds:
            used = cpu_seconds(pid)
            if used is not None:
                result[pid] = used
    return result


#: The process kinds :class:`CpuMeter` follows besides this (the driver's) process.
METERED_KINDS = ("spark-jvm", "spark-python", "kafka-broker")
#: The JVM kinds whose JIT compilers :class:`CpuMeter` also counts apart.
JVM_KINDS = ("spark-jvm", "kafka-broker")
#: Thread names (as ``/proc/<pid>/task/*/stat`` shows them, cut to 15 characters) of a JVM's
#: JIT compilers.
JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")


def jit_cpu(pid: int) -> float:
    """CPU seconds the JIT compiler threads of JVM ``pid`` have used (0 if it is gone)."""
    used = 0.0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue
        name, fields = text[text.index("(") + 1 : text.rindex(")")], text.rsplit(")", 1)[1].split()
        if name.startswith(JIT_THREADS):  # utime and stime, as in cpu_seconds
            used += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


def _jvm_pids() -> dict[int, str]:
    return {
        pid: kind for pid in descendants(os.getpid()) if (kind := process_kind(pid)) in JVM_KINDS
    }


def steal_seconds() -> float:
    """CPU seconds the hypervisor gave to others while this machine's CPUs wanted to run, summed
    over CPUs since boot (``steal`` in ``/proc/stat``; 0 where it is not reported)."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


@dataclass
class CpuMeter:
    """CPU seconds used since it was made, per process kind: this process (``driver``), the
    Spark JVM, the Spark Python workers and the embedded broker.

    A process started meanwhile counts from zero; one that exited meanwhile is lost, so
    Python workers that Spark stops during a run are undercounted.
    """

    driver: float = field(default_factory=time.process_time)
    before: dict[int, float] = field(default_factory=lambda: cpu_by_pid(METERED_KINDS))
    jit_before: dict[int, float] = field(
        default_factory=lambda: {pid: jit_cpu(pid) for pid in _jvm_pids()}
    )
    steal_before: float = field(default_factory=steal_seconds)

    def used(self) -> dict[str, float]:
        """Seconds per kind (``driver``, ``spark-jvm``, ``spark-python``, ``kafka-broker``)."""
        result = {"driver": time.process_time() - self.driver}
        result.update({kind: 0.0 for kind in METERED_KINDS})
        for pid, seconds in cpu_by_pid(METERED_KINDS).items():
            kind = process_kind(pid)
            if kind in result:
                result[kind] += seconds - self.before.get(pid, 0.0)
        return result

    def jit(self) -> dict[str, float]:
        """Of :meth:`used`, the seconds the JVMs' JIT compilers took, per kind
        (``spark-jvm``, ``kafka-broker``): compilation that competes with the measured work."""
        result = dict.fromkeys(JVM_KINDS, 0.0)
        for pid, kind in _jvm_pids().items():
            result[kind] += jit_cpu(pid) - self.jit_before.get(pid, 0.0)
        return result

    def stolen(self) -> float:
        """CPU seconds stolen from this virtual machine since the meter was made: time its
        processes were ready to run but the host ran something else."""
        return steal_seconds() - self.steal_before


@dataclass
class RssSampler:
    """Samples ``VmHWM`` of every descendant of this process in a background thread.

    ``VmHWM`` is each process's own peak, so sampling every ``interval`` seconds loses only
    the growth of a process in its last interval before it exits.
    """

    interval: float = 0.25
    peaks: dict[int, tuple[str, float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        """Record the current peak of every descendant."""
        for pid in descendants(os.getpid()):
            hwm = proc_status_mb(pid)
            if hwm is None:
                continue
            kind = self.peaks[pid][0] if pid in self.peaks else "other"
            if kind == "other":  # a JVM is first seen as spark-submit: look again
                kind = process_kind(pid)
            old = self.peaks.get(pid, (kind, 0.0))[1]
            self.peaks[pid] = (kind, max(old, hwm))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> RssSampler:
        """Start sampling in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Take a last sample and stop the thread; the figures stay as they are from the first
        call on (what runs afterwards is not counted)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def by_kind(self) -> dict[str, float]:
        """The largest peak per process kind, in MiB."""
        result: dict[str, float] = {}
        for kind, peak in self.peaks.values():
            result[kind] = round(max(result.get(kind, 0.0), peak), 1)
        return result
