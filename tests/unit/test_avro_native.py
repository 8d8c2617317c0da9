"""The Avro record scanner (``_text_scan.scan_avro``, ``formats/_scanners.py``): the rows it gives
are the per-record decoding's (fastavro's reading and the Python stage's conversion to Spark's
types), over datums fastavro writes with edge values of every covered type, seeded corpora of
random and damaged datums, and datums the scanner must leave (truncated, trailing bytes, a bad
union branch, invalid UTF-8, a value out of its column's range); a record that decoding finds
dirty is never decoded natively."""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import random
import struct
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from dagster_kafka_flinklike.formats import native_decoder
from dagster_kafka_flinklike.formats._python import to_spark
from dagster_kafka_flinklike.formats._scanners import NativeAvro, avro_decoder, scanner
from dagster_kafka_flinklike.formats.avro import datum_reader
from dagster_kafka_flinklike.options import Column, avro_schema, row_type

pytestmark = pytest.mark.skipif(scanner() is None, reason="the C scanners are not built")

#: Every column type the scanner reads, nullable, and a few NOT NULL ones.
COLUMNS = [
    Column("s", "STRING"), Column("v", "VARCHAR(5)"), Column("c", "CHAR(3)"),
    Column("y", "BYTES"), Column("vb", "VARBINARY(4)"), Column("ok", "BOOLEAN"),
    Column("t", "TINYINT"), Column("sm", "SMALLINT"), Column("i", "INT"), Column("l", "BIGINT"),
    Column("f", "FLOAT"), Column("d", "DOUBLE"), Column("m", "DECIMAL(10, 2)"),
    Column("big", "DECIMAL(38, 0)"), Column("frac", "DECIMAL(5, 5)"), Column("day", "DATE"),
    Column("clock", "TIME"), Column("at", "TIMESTAMP(3)"), Column("at6", "TIMESTAMP(6)"),
    Column("ltz", "TIMESTAMP_LTZ(3)"), Column("ltz6", "TIMESTAMP_LTZ"),
    Column("n", "BIGINT NOT NULL"), Column("ns", "STRING NOT NULL"),
    Column("nd", "DECIMAL(4, 1) NOT NULL"), Column("nat", "TIMESTAMP(3) NOT NULL"),
]  # fmt: skip
UTC = dt.UTC
#: Edge values of each column (by name); None where the column is nullable.
EDGES: dict[str, list[Any]] = {
    "s": ["", "a", "é ü", "😀𝄞", "\x00", "x" * 300, "\u2028"],
    "v": ["", "abcde", "ab"],
    "c": ["abc", ""],
    "y": [b"", b"\x00\xff", bytes(range(256))],
    "vb": [b"", b"\x01\x02\x03\x04"],
    "ok": [True, False],
    "t": [0, -128, 127, -1],
    "sm": [0, -32768, 32767],
    "i": [0, 1, -1, 2**31 - 1, -(2**31), 63, 64, -64, -65],
    "l": [0, 1, -1, 2**63 - 1, -(2**63), 2**31, -(2**31) - 1],
    "f": [0.0, -0.0, 1.5, -2.25, 3.4028234663852886e38, 1e-45, math.inf, -math.inf, math.nan],
    "d": [0.0, -0.0, 0.1, 5e-324, 1.7976931348623157e308, -math.inf, math.inf, math.nan],
    "m": [Decimal("0"), Decimal("0.01"), Decimal("-0.01"), Decimal("99999999.99"),
          Decimal("-99999999.99"), Decimal("-128.00"), Decimal("1.28"), Decimal("-1.29")],
    "big": [Decimal(10**38 - 1), Decimal(-(10**38) + 1), Decimal(2**63), Decimal(-(2**64))],
    "frac": [Decimal("0.99999"), Decimal("-0.99999"), Decimal("0.00001")],
    "day": [dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1582, 10, 4),
            dt.date(1969, 12, 31), dt.date(2024, 2, 29)],
    "clock": [dt.time(0, 0), dt.time(23, 59, 59, 999000), dt.time(12, 0, 0, 500000),
              dt.time(10, 11, 12, 345000), dt.time(0, 0, 0, 1000)],
    "at": [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC),
           dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
           dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
           dt.datetime(2026, 12, 2, 10, 11, 12, 345000, tzinfo=UTC)],
    "at6": [dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC)],
    "ltz": [dt.datetime(2000, 2, 29, 12, tzinfo=UTC), dt.datetime(1900, 1, 1, tzinfo=UTC)],
    "ltz6": [dt.datetime(2000, 2, 29, 12, 0, 0, 123456, tzinfo=UTC)],
    "n": [0, 2**63 - 1, -(2**63)],
    "ns": ["", "not null"],
    "nd": [Decimal("999.9"), Decimal("-999.9"), Decimal("0.0")],
    "nat": [dt.datetime(2026, 12, 2, tzinfo=UTC)],
}  # fmt: skip


def _schema(columns: list[Column] = COLUMNS, legacy: bool = True) -> str:
    return avro_schema(columns, legacy=legacy)


def _writer(schema: str) -> Any:
    parsed = fastavro.parse_schema(json.loads(schema))

    def write(record: dict[str, Any]) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        return out.getvalue()

    return write


def _record(rng: random.Random, columns: list[Column] = COLUMNS) -> dict[str, Any]:
    """A record of edge values, a nullable column null one time in five."""
    return {
        c.name: None if c.flink_type.nullable and rng.random() < 0.2 else rng.choice(EDGES[c.name])
        for c in columns
    }


def per_record(columns: list[Column], schema: str, datums: list[bytes | None]) -> list[Any]:
    """Each datum as the per-record decoding gives it: the row (as Arrow gives it back), or
    ``"dirty"``."""
    from pyspark.sql.pandas.types import to_arrow_type

    from dagster_kafka_flinklike.options import spark_type

    read = datum_reader(schema)
    convert = to_spark(row_type(columns))
    arrow_row = to_arrow_type(spark_type(row_type(columns)), timezone="UTC")
    out: list[Any] = []
    for data in datums:
        if data is None:
            out.append(None)
            continue
        try:
            out.append(pa.array([convert(read(data))], type=arrow_row).to_pylist()[0])
        except Exception:  # any failure: the record is dirty, as the UDF has it
            out.append("dirty")
    return out


def _same(a: Any, b: Any) -> bool:
    """Rows equal, NaN equal to NaN, types too (a Decimal's scale, a datetime's zone)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, Decimal):
        return isinstance(b, Decimal) and a.as_tuple() == b.as_tuple()
    return type(a) is type(b) and a == b and repr(a) == repr(b)


def check(
    columns: list[Column], datums: list[bytes | None], legacy: bool = True
) -> tuple[int, int]:
    """Decode ``datums`` natively and per record: every record decoded natively is clean per
    record and gives exactly its row. (decoded natively, left)."""
    schema = _schema(columns, legacy)
    decoder = avro_decoder(columns, schema)
    assert isinstance(decoder, NativeAvro)
    native = decoder(pa.array(datums, pa.binary()))
    assert native.type == decoder.arrow_type
    expected = per_record(columns, schema, datums)
    decoded = left = 0
    for data, mine, theirs in zip(datums, native.to_pylist(), expected, strict=True):
        if mine is None:
            left += data is not None
            continue
        decoded += 1
        assert theirs != "dirty", data
        assert _same(mine, theirs), (data, mine, theirs)
    return decoded, left


def test_edge_values_of_every_covered_type_decode_as_per_record() -> None:
    rng = random.Random(5)
    write = _writer(_schema())
    datums: list[bytes | None] = [write(_record(rng)) for _ in range(3000)]
    datums += [None, write({c.name: rng.choice(EDGES[c.name]) for c in COLUMNS})]
    decoded, left = check(COLUMNS, datums)
    assert left == 0 and decoded == len(datums) - 1


def test_each_edge_value_alone() -> None:
    """One column at a time, every edge value and null: all decoded natively."""
    for column in COLUMNS:
        write = _writer(_schema([column]))
        values = [*EDGES[column.name], *([None] if column.flink_type.nullable else [])]
        decoded, left = check([column], [write({column.name: v}) for v in values])
        assert (decoded, left) == (len(values), 0), column


def test_local_timestamps_without_the_legacy_mapping() -> None:
    columns = [Column("at", "TIMESTAMP(3)"), Column("at6", "TIMESTAMP(6)"),
               Column("ltz", "TIMESTAMP_LTZ(3)")]  # fmt: skip
    schema = _schema(columns, legacy=False)
    assert "local-timestamp-millis" in schema and "local-timestamp-micros" in schema
    write = _writer(schema)
    values = [
        {"at": dt.datetime(2024, 1, 2, 3, 4, 5, 6000), "at6": dt.datetime(1, 1, 1),
         "ltz": dt.datetime(2024, 1, 2, tzinfo=UTC)},
        {"at": dt.datetime(9999, 12, 31, 23, 59, 59, 999000), "at6": None, "ltz": None},
    ]  # fmt: skip
    assert check(columns, [write(v) for v in values], legacy=False) == (2, 0)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63) if value < 0 else value << 1)


def _left(columns: list[Column], datums: list[bytes]) -> None:
    """None of ``datums`` is decoded natively."""
    decoder = avro_decoder(columns, _schema(columns))
    assert decoder is not None
    assert decoder(pa.array(datums, pa.binary())).null_count == len(datums)
    check(columns, datums)  # (and what the per-record decoding gives is its own)


def test_truncated_datums_and_trailing_bytes_are_left() -> None:
    rng = random.Random(7)
    write = _writer(_schema())
    for _ in range(40):
        data = write(_record(rng))
        _left(COLUMNS, [data[:cut] for cut in range(len(data))])
        _left(COLUMNS, [data + b"\x00", data + b"\x02a"])


def test_malformed_datums_are_left() -> None:
    text = [Column("s", "STRING")]
    _left(text, [b"\x04", b"\x01\x02a", b"\x03", b"\x02\x01", b"\x02\x03a"])  # branch, length
    invalid = [b"\xc0\x80", b"\xed\xa0\x80", b"\x80", b"\xf4\x90\x80\x80", b"\xff", b"\xe2\x82"]
    _left(text, [b"\x02" + _zigzag(len(b)) + b for b in invalid])
    _left(text, [b"\x02\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00"])  # an 11-byte length
    _left([Column("ok", "BOOLEAN NOT NULL")], [b"\x02", b"\xff", b""])
    as_int = [Column("i", "INT NOT NULL")]
    _left(as_int, [b"\x80\x80\x80\x80\x80\x00", b"\xff\xff\xff\xff\x1f", _zigzag(2**31)])
    _left([Column("t", "TINYINT NOT NULL")], [_zigzag(128), _zigzag(-129)])
    _left([Column("sm", "SMALLINT NOT NULL")], [_zigzag(32768), _zigzag(-32769)])
    _left([Column("l", "BIGINT NOT NULL")], [b"\xff" * 9 + b"\x02", b"\x80" * 10 + b"\x00"])
    _left([Column("f", "FLOAT NOT NULL")], [b"\x00\x00\x00"])
    _left([Column("d", "DOUBLE NOT NULL")], [b"\x00" * 7])
    decimal = [Column("m", "DECIMAL(4, 2) NOT NULL")]
    _left(decimal, [b"\x00", b"\x04\x27\x10", b"\x04\xd8\xf0", b"\x22" + b"\x01" * 17])
    _left([Column("day", "DATE NOT NULL")], [_zigzag(2932897), _zigzag(-719163)])
    _left([Column("clock", "TIME NOT NULL")], [_zigzag(86400000), _zigzag(-1)])
    stamp = [Column("at", "TIMESTAMP(3) NOT NULL")]
    _left(stamp, [_zigzag(253402300800000), _zigzag(-62135596800001), _zigzag(2**62)])
    _left([Column("at", "TIMESTAMP(6) NOT NULL")], [_zigzag(253402300800000000)])


def test_redundant_bytes_and_varints_decode_as_per_record() -> None:
    """Sign extension in a decimal's bytes, longer varints than needed: both decodings read
    them the same way."""
    decimal = [Column("m", "DECIMAL(4, 2) NOT NULL")]
    datums = [b"\x06\x00\x00\x01", b"\x06\xff\xff\xff", b"\x04\xff\x80", b"\x02\x7f"]
    assert check(decimal, datums) == (4, 0)
    varints = [b"\x82\x80\x80\x80\x00", b"\xfe\xff\xff\xff\x0f"]
    assert check([Column("i", "INT NOT NULL")], varints) == (2, 0)
    assert check([Column("s", "STRING")], [b"\x80\x00", b"\x02\x82\x00a"]) == (2, 0)


def _damaged(rng: random.Random, data: bytes) -> bytes:
    roll = rng.random()
    if roll < 0.3:
        i = rng.randrange(len(data) or 1)
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]
    if roll < 0.5:
        return data[: rng.randrange(len(data) + 1)]
    if roll < 0.6:
        return data + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
    return bytes(rng.randrange(256) for _ in range(rng.randrange(40)))


def test_random_and_damaged_datums() -> None:
    """Seeded corpora: clean datums and damaged ones (a byte changed, cut, bytes added, noise);
    whatever the scanner decodes is the per-record decoding's clean row."""
    for seed in range(4):
        rng = random.Random(seed)
        columns = rng.sample(COLUMNS, rng.randrange(1, 8))
        write = _writer(_schema(columns))
        datums: list[bytes | None] = []
        for _ in range(1500):
            data = write(_record(rng, columns))
            datums.append(_damaged(rng, data) if rng.random() < 0.4 else data)
        decoded, left = check(columns, datums)
        assert decoded > 900 and left > 100, (seed, decoded, left)


def test_which_tables_the_scanner_reads() -> None:
    assert isinstance(native_decoder("avro", COLUMNS, {}), NativeAvro)
    flat = [Column("id", "BIGINT"), Column("at", "TIMESTAMP(3)")]
    assert native_decoder("avro", flat, {"encoding": "json"}) is None
    for nested in ("ARRAY<STRING>", "MAP<STRING, INT>", "ROW<a INT>"):
        assert native_decoder("avro", [*flat, Column("x", nested)], {}) is None
    assert native_decoder("avro-confluent", flat, {"url": "http://registry:8081"}) is None
    decoder = native_decoder("avro", flat, {"timestamp_mapping.legacy": "false"})
    assert isinstance(decoder, NativeAvro) and decoder.columns[1][1] == "t"
    too_many = [Column(f"c{i}", "INT") for i in range(65)]
    assert native_decoder("avro", too_many, {}) is None


def test_a_batch_with_an_offset_and_nulls() -> None:
    write = _writer(_schema())
    rng = random.Random(11)
    datums: list[bytes | None] = [write(_record(rng)) for _ in range(20)]
    datums[3] = None
    array = pa.array(datums, pa.binary()).slice(2, 15)
    decoder = avro_decoder(COLUMNS, _schema())
    assert decoder is not None
    got = decoder(array)
    assert len(got) == 15 and got.null_count == 1 and not got[1].is_valid
    assert _same(got.to_pylist()[5], per_record(COLUMNS, _schema(), [datums[7]])[0])


def test_float_bits_are_kept() -> None:
    """A FLOAT's four bytes as they are (a NaN's payload included), as Arrow holds them."""
    column = [Column("f", "FLOAT NOT NULL")]
    nan = struct.pack("<I", 0x7FC00001)
    decoder = avro_decoder(column, _schema(column))
    assert decoder is not None
    got = decoder(pa.array([nan], pa.binary())).field(0)
    assert got.buffers()[1].to_pybytes()[:4] == nan
