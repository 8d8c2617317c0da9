"""The exactly-once sink's path from Spark tasks to the driver: each row once, attempts resolved."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from dagster_kafka_flinklike.sink.driver_stream import (
    _HEADER,
    _STREAM,
    BatchServer,
    TransferError,
    driver_batches,
    send_partition,
)


def _batches(start: int, stop: int, size: int = 100) -> list[pa.RecordBatch]:
    return [
        pa.RecordBatch.from_pydict({"n": list(range(i, min(i + size, stop)))})
        for i in range(start, stop, size)
    ]


def _collect(server: BatchServer, into: list[Any]) -> threading.Thread:
    def run() -> None:
        try:
            into.extend(server.batches())
        except BaseException as exc:
            into.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _rows(items: list[Any]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for partition, batch in items:
        found.setdefault(partition, []).extend(batch.column("n").to_pylist())
    return found


def test_partitions_arrive_whole_and_counted() -> None:
    server = BatchServer("127.0.0.1")
    got: list[Any] = []
    consumer = _collect(server, got)
    try:
        assert send_partition(server.address, server.token, 0, 0, iter(_batches(0, 1000))) == 1000
        assert send_partition(server.address, server.token, 1, 0, iter([])) == 0
        assert send_partition(server.address, server.token, 2, 0, iter(_batches(1000, 1250))) == 250
        server.finish({0: 1000, 1: 0, 2: 250})
        consumer.join(10)
    finally:
        server.close()
    assert _rows(got) == {0: list(range(1000)), 2: list(range(1000, 1250))}


def test_a_second_attempt_of_a_finished_partition_is_discarded() -> None:
    server = BatchServer("127.0.0.1")
    got: list[Any] = []
    consumer = _collect(server, got)
    try:
        send_partition(server.address, server.token, 0, 0, iter(_batches(0, 500)))
        # A speculative copy finishing later is acknowledged in full but not handed on.
        assert send_partition(server.address, server.token, 0, 1, iter(_batches(0, 500))) == 500
        server.finish({0: 500})
        consumer.join(10)
    finally:
        server.close()
    assert _rows(got) == {0: list(range(500))}


def _raw_stream(server: BatchServer, partition: int, batches: list[pa.RecordBatch]) -> None:
    """Send part of an Arrow stream, then drop the connection (a task killed mid-write)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    payload = sink.getvalue().to_pybytes()
    with socket.create_connection(server.address) as sock:
        sock.sendall(server.token + _HEADER.pack(partition, 0) + _STREAM + payload[:-200])


def test_a_stream_broken_after_rows_were_handed_on_fails_the_transfer() -> None:
    server = BatchServer("127.0.0.1")
    got: list[Any] = []
    consumer = _collect(server, got)
    try:
        _raw_stream(server, 0, _batches(0, 300))
        consumer.join(10)
    finally:
        server.close()
    assert isinstance(got[-1], TransferError)
    assert "partition 0 failed after sending" in str(got[-1])


def test_a_stream_broken_before_any_row_lets_the_retry_deliver() -> None:
    server = BatchServer("127.0.0.1")
    got: list[Any] = []
    consumer = _collect(server, got)
    try:
        with socket.create_connection(server.address) as sock:
            sock.sendall(server.token + _HEADER.pack(3, 0))  # killed before the first batch
        send_partition(server.address, server.token, 3, 1, iter(_batches(0, 200)))
        server.finish({3: 200})
        consumer.join(10)
    finally:
        server.close()
    assert _rows(got) == {3: list(range(200))}


def test_a_connection_without_the_token_is_refused() -> None:
    server = BatchServer("127.0.0.1")
    got: list[Any] = []
    consumer = _collect(server, got)
    try:
        with pytest.raises(ConnectionError):
            send_partition(server.address, b"x" * 16, 0, 0, iter(_batches(0, 10)))
        server.finish({})
        consumer.join(10)
    finally:
        server.close()
    assert got == []


def test_counts_that_disagree_fail_the_transfer() -> None:
    server = BatchServer("127.0.0.1")
    got: list[Any] = []
    consumer = _collect(server, got)
    try:
        send_partition(server.address, server.token, 0, 0, iter(_batches(0, 10)))
        server.finish({0: 10, 1: 5})  # the job saw a partition the driver never received
        consumer.join(10)
    finally:
        server.close()
    assert isinstance(got[-1], TransferError)


def test_spark_partitions_stream_to_the_driver(spark: Any) -> None:
    frame = spark.range(0, 50_000, numPartitions=7).withColumnRenamed("id", "n")
    seen: dict[int, list[int]] = {}
    for partition, batch in driver_batches(frame):
        seen.setdefault(partition, []).extend(batch.column("n").to_pylist())
    assert sorted(seen) == list(range(7))
    assert sorted(n for rows in seen.values() for n in rows) == list(range(50_000))
    for rows in seen.values():
        assert rows == sorted(rows)  # each partition in its own order


def test_a_task_failure_fails_the_iteration(spark: Any) -> None:
    def fail(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if pa.compute.max(batch.column(0)).as_py() >= 900:
                raise ValueError("boom in the task")
            yield batch

    frame = spark.range(0, 1000, numPartitions=2).mapInArrow(fail, "id long")
    with pytest.raises(Exception, match="boom in the task"):
        list(driver_batches(frame))


def test_closing_early_cancels_the_job(spark: Any) -> None:
    def slow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import time

        for batch in batches:
            time.sleep(0.2)  # 400 batches: about 40 s if nothing cancels it
            yield batch

    frame = spark.range(0, 4_000_000, numPartitions=4).mapInArrow(slow, "id long")
    tracker = spark.sparkContext.statusTracker()
    stream = driver_batches(frame)
    next(stream)
    assert tracker.getActiveJobsIds()  # the transfer's job is running
    stream.close()  # cancels the job group and closes the server
    deadline = time.monotonic() + 15
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.1)  # the status tracker hears of the cancellation asynchronously
    assert tracker.getActiveJobsIds() == []
    assert spark.range(10).count() == 10  # the session stays usable
