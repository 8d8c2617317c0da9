"""The avro format's native decoding (the record scanner in the reading tasks) against its
per-record decoding in Spark: Spark's ``from_avro`` where the session has it, fastavro in the
Python workers for what it leaves, and fastavro alone for a table ``from_avro`` does not read.
Seeded corpora of datums with edge values of every covered type, clean and damaged, decoded both
ways in one local Spark session, then through the real broker; every record decoded natively
must give exactly the per-record row (its types too), and a dirty record stays dirty with the
per-record reason."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from dagster_kafka_flinklike import KafkaTableSpec
from dagster_kafka_flinklike.formats import _spark_avro
from dagster_kafka_flinklike.formats._scanners import NativeAvro, scanner
from dagster_kafka_flinklike.options import Column
from dagster_kafka_flinklike.source.records import ERROR, native_columns
from tests.integration.test_decoding import read_table, send, table
from tests.integration.test_native_decoding import _raw
from tests.unit.test_avro_native import COLUMNS, _damaged, _record, _schema, _writer

pytestmark = pytest.mark.skipif(scanner() is None, reason="the C scanners are not built")

#: The columns of every type Spark's ``from_avro`` reads as declared (no TIME, TINYINT or
#: SMALLINT: a table with one of those is read by fastavro alone).
JVM_COLUMNS = [c for c in COLUMNS if c.flink_type.name not in ("TIME", "TINYINT", "SMALLINT")]


def _spec(columns: list[Column], topic: str = "t", **options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": "127.0.0.1:9",
            "scan.startup.mode": "earliest-offset",
            "format": "avro",
            **options,
        },
        columns=[{"name": c.name, "type": c.type} for c in columns],
        role="source",
    )


def corpus(columns: list[Column], count: int, seed: int, legacy: bool = True) -> list[Any]:
    """Datums of edge values; a quarter damaged (a byte changed, cut, bytes added, noise), a
    few null values."""
    rng = random.Random(seed)
    write = _writer(_schema(columns, legacy))
    out: list[bytes | None] = []
    for n in range(count):
        data = write(_record(rng, columns))
        out.append(None if n % 97 == 5 else _damaged(rng, data) if rng.random() < 0.25 else data)
    return out


def texts(frame: Any) -> list[dict[str, Any]]:
    """The rows of ``frame`` in offset order, every value as Spark's text of it (bytes as hex):
    exact for each type (a float's shortest digits, a DECIMAL at its scale), NaN equal to NaN,
    and a timestamp Python's datetime cannot hold (``from_avro`` reads a damaged datum's as it
    comes) collected all the same. An object's address in a reason (fastavro's may name one,
    which differs from run to run) is left out."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    as_text = frame.select(*[
        (F.hex(f.name) if isinstance(f.dataType, T.BinaryType) else F.col(f.name).cast("string"))
        .alias(f.name)
        for f in frame.schema.fields
    ])  # fmt: skip
    rows = [r.asDict() for r in as_text.collect()]
    for row in rows:
        if row[ERROR] is not None:
            row[ERROR] = re.sub(" at 0x[0-9a-f]+", "", row[ERROR])
    return sorted(rows, key=lambda r: int(r["__dkf_offset"]))


def same_rows(native: list[dict[str, Any]], per_record: list[dict[str, Any]]) -> int:
    """Every row the same both ways; a record decoded natively (its raw value not carried on)
    clean per record. How many were."""
    assert len(native) == len(per_record)
    decoded = 0
    for mine, theirs in zip(native, per_record, strict=True):
        if mine["__dkf_value"] is None:
            decoded += 1
            assert theirs[ERROR] is None, theirs
            mine = {**mine, "__dkf_value": theirs["__dkf_value"]}
        assert mine == theirs
    return decoded


def _compare(spark: Any, spec: KafkaTableSpec, values: list[bytes | None], dirty: int) -> int:
    """Decode ``values`` both ways (the frames the reader would give, in one local session):
    the same rows and types. How many were decoded natively; more than ``dirty`` records must
    be dirty."""
    from dagster_kafka_flinklike.source.records import decode_records

    frames = [decode_records(spec, _raw(spark, spec, values, n)) for n in (True, False)]
    assert frames[0].schema == frames[1].schema
    native, per_record = texts(frames[0]), texts(frames[1])
    assert len(per_record) == len([v for v in values if v is not None])
    assert len([r for r in per_record if r[ERROR] is not None]) > dirty
    return same_rows(native, per_record)


def test_native_avro_decoding_gives_the_per_record_rows(spark: Any) -> None:
    """Against ``from_avro`` (with fastavro for what it leaves), as a run decodes."""
    assert _spark_avro.from_avro_reads(JVM_COLUMNS)
    spec = _spec(JVM_COLUMNS)
    (derived,) = native_columns(spec)
    assert isinstance(derived.compute, NativeAvro)
    assert _compare(spark, spec, corpus(JVM_COLUMNS, 1500, 41), dirty=100) > 1000


def test_native_avro_decoding_gives_fastavros_rows(spark: Any, monkeypatch: Any) -> None:
    """Against fastavro alone: a table ``from_avro`` does not read (TIME, TINYINT, SMALLINT),
    and the same table as above in a session without Spark's Avro package."""
    assert not _spark_avro.from_avro_reads(COLUMNS)
    assert _compare(spark, _spec(COLUMNS), corpus(COLUMNS, 1500, 43), dirty=100) > 1000
    monkeypatch.setattr(_spark_avro, "from_avro_reads", lambda columns: False)
    spec = _spec(JVM_COLUMNS, topic="t-python")  # (its own decoding, not the session's cached)
    assert _compare(spark, spec, corpus(JVM_COLUMNS, 800, 47), dirty=50) > 500


def test_native_avro_local_timestamps(spark: Any) -> None:
    """``avro.timestamp_mapping.legacy`` false: TIMESTAMP as ``local-timestamp-*``."""
    columns = [c for c in JVM_COLUMNS if c.flink_type.name in ("TIMESTAMP", "TIMESTAMP_LTZ")]
    spec = _spec(columns, **{"avro.timestamp_mapping.legacy": "false"})
    values = corpus(columns, 600, 53, legacy=False)
    assert _compare(spark, spec, values, dirty=20) > 400


def test_native_avro_through_the_broker(kafka_bootstrap: str, new_topic: Any, spark: Any) -> None:
    """Clean, damaged and null records through the real broker: the native reading's rows are
    the per-record reading's (a natively decoded record without its raw value), and what is
    dirty stays dirty with the same reason."""
    topic = new_topic(partitions=1)
    values = corpus(JVM_COLUMNS, 400, 59)
    values[1] = b"\x02\x09"  # ends inside the first field: fastavro's reason
    send(kafka_bootstrap, topic, [{"value": v} for v in values])
    options = {"format": "avro"}
    columns = [{"name": c.name, "type": c.type} for c in JVM_COLUMNS]
    spec = table(topic, kafka_bootstrap, options, columns)
    assert [c.name for c in native_columns(spec)] == ["__dkf_value_native"]

    frames = [read_table(spark, spec, native) for native in (True, False)]
    assert frames[0].schema == frames[1].schema
    native, per_record = texts(frames[0]), texts(frames[1])
    assert len(native) == len([v for v in values if v is not None])
    assert same_rows(native, per_record) > 250
    assert len([r for r in native if r[ERROR] is not None]) > 20
    assert native[1][ERROR].startswith("value (avro): ValueError: not an Avro datum")
