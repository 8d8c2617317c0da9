"""Executor-side reading, as Flink's source reader: each Spark task reads its splits exactly.

A task assigns its ``[start, stop)`` range to a confluent-kafka consumer, consumes in large
batches and hands Arrow record batches to Spark through ``mapInArrow``. A range is finished when
the consumer reaches the stop offset, including when transaction markers follow the last record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import OffsetsError
from .enumerator import KafkaSplit

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

#: Every field a record has, in Flink's metadata names (raw key/value as ``key``/``value``).
RECORD_FIELDS = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestamp-type",
    "headers",
    "leader-epoch",
)
DEFAULT_BATCH_SIZE = 10_000
DEFAULT_IDLE_TIMEOUT_S = 120.0
_TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}


def column_name(field: str) -> str:
    """The raw DataFrame column of a record field (``timestamp-type`` → ``timestamp_type``)."""
    return field.replace("-", "_")


def arrow_schema(fields: Sequence[str]) -> pa.Schema:
    """The Arrow schema of the raw record columns for ``fields``."""
    import pyarrow as pa

    types: dict[str, pa.DataType] = {
        "key": pa.binary(),
        "value": pa.binary(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "timestamp": pa.timestamp("ms", tz="UTC"),
        "timestamp-type": pa.string(),
        "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
        "leader-epoch": pa.int32(),
    }
    return pa.schema([(column_name(f), types[f]) for f in fields])


def spark_schema(fields: Sequence[str]) -> str:
    """The Spark DDL schema of the raw record columns for ``fields``."""
    ddl = {
        "key": "binary",
        "value": "binary",
        "topic": "string",
        "partition": "int",
        "offset": "bigint",
        "timestamp": "timestamp",
        "timestamp-type": "string",
        "headers": "array<struct<key:string,value:binary>>",
        "leader-epoch": "int",
    }
    return ", ".join(f"{column_name(f)} {ddl[f]}" for f in fields)


def _extractor(fields: Sequence[str]) -> Callable[[Any, list[list[Any]]], None]:
    """One function that appends each wanted field of a message to its column list."""
    getters: dict[str, Callable[[Any], Any]] = {
        "key": lambda m: m.key(),
        "value": lambda m: m.value(),
        "topic": lambda m: m.topic(),
        "partition": lambda m: m.partition(),
        "offset": lambda m: m.offset(),
        "timestamp": lambda m: m.timestamp()[1] if m.timestamp()[0] else None,
        "timestamp-type": lambda m: _TIMESTAMP_TYPES.get(m.timestamp()[0]),
        "headers": lambda m: [(k, v) for k, v in (m.headers() or ())],
        "leader-epoch": lambda m: m.leader_epoch(),
    }
    chosen = [getters[f] for f in fields]

    def extract(message: Any, columns: list[list[Any]]) -> None:
        for getter, column in zip(chosen, columns, strict=True):
            column.append(getter(message))

    return extract


def read_split(
    split: KafkaSplit,
    consumer_config: Mapping[str, Any],
    fields: Sequence[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
) -> Iterator[pa.RecordBatch]:
    """Read exactly the offsets ``[split.start, split.stop)`` as Arrow batches of raw fields.

    Raises:
        OffsetsError: the stop offset was not reached within ``idle_timeout_s`` of no progress.
    """
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    if split.stop <= split.start:
        return
    schema = arrow_schema(fields)
    extract = _extractor(fields)
    config = {"group.id": "dagster-kafka-flinklike-reader", **consumer_config}
    config.update({"enable.partition.eof": True, "enable.auto.commit": False})
    consumer = Consumer(config)
    tp = TopicPartition(split.topic, split.partition, split.start)
    consumer.assign([tp])
    stop = split.stop
    last_progress = time.monotonic()
    done = False
    try:
        while not done:
            columns: list[list[Any]] = [[] for _ in fields]
            messages = consumer.consume(num_messages=batch_size, timeout=1.0)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        done = done or (message.offset() or 0) >= stop
                        continue
                    raise OffsetsError(
                        f"Reading {split.topic}-{split.partition} failed at offset "
                        f"{message.offset()}: {error.str()}"
                    )
                offset = message.offset() or 0
                if offset >= stop:
                    done = True
                    break
                extract(message, columns)
                if offset == stop - 1:
                    done = True
                    break
            if columns and columns[0]:
                last_progress = time.monotonic()
                yield pa.RecordBatch.from_arrays(
                    [pa.array(c, type=schema.field(i).type) for i, c in enumerate(columns)],
                    schema=schema,
                )
            if not done and not messages:
                position = consumer.position([tp])[0].offset
                if position >= stop:
                    done = True
                elif time.monotonic() - last_progress > idle_timeout_s:
                    raise OffsetsError(
                        f"Reading {split.topic}-{split.partition} made no progress for "
                        f"{idle_timeout_s:.0f}s at position {position}; stop offset is {stop}."
                    )
    finally:
        consumer.close()


def read_splits(
    spark: SparkSession,
    splits: Sequence[KafkaSplit],
    consumer_config: Mapping[str, Any],
    fields: Sequence[str] = ("key", "value", "topic", "partition", "offset", "timestamp"),
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> DataFrame:
    """A DataFrame of the raw records of ``splits``: one Spark task per split.

    Columns are the record ``fields`` (``timestamp-type`` becomes ``timestamp_type``).
    """
    fields = tuple(fields)
    split_list = list(splits)
    config = dict(consumer_config)
    if not split_list:
        return spark.createDataFrame([], spark_schema(fields))

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from read_split(split_list[index], config, fields, batch_size=batch_size)

    n = len(split_list)
    return spark.range(0, n, 1, n).mapInArrow(read_partition, spark_schema(fields))
