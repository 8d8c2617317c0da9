"""The protobuf record scanner (``_text_scan.scan_protobuf``, ``formats/_scanners.py``): the
rows it gives are the per-record decoding's (the protobuf package's parsing and the format's
reading), over seeded corpora of messages, merged messages (a field given twice), unknown
fields and damaged bytes; what it cannot give so it leaves to the per-record decoding, and a
record that decoding finds dirty is never decoded natively."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor as FD

from dagster_kafka_flinklike.formats._scanners import protobuf_decoder, scanner
from dagster_kafka_flinklike.formats.base import format_settings
from dagster_kafka_flinklike.formats.protobuf import record_reader
from dagster_kafka_flinklike.options import Column
from tests.protobuf_defs import (
    _field,
    message_class,
    orders_file,
    readings_file,
    timestamp_file,
    write_descriptor_set,
)

pytestmark = pytest.mark.skipif(scanner() is None, reason="the C scanners are not built")

#: The flat columns of shop.Order (proto3): every scalar kind, an optional field, an enum by
#: name and by number.
ORDER = [
    Column("id", "BIGINT"), Column("customer", "STRING"), Column("note", "STRING"),
    Column("status", "STRING"), Column("payload", "BYTES"), Column("express", "BOOLEAN"),
    Column("weight", "FLOAT"), Column("small_unsigned", "INT"), Column("big_unsigned", "BIGINT"),
    Column("delta", "INT"), Column("checksum", "BIGINT"), Column("rank", "INT"),
]  # fmt: skip
#: legacy.Flat (proto2, below): presence everywhere, a closed enum, signed encodings.
FLAT = [
    Column("code", "STRING"), Column("level", "INT"), Column("kind", "STRING"),
    Column("ratio", "DOUBLE"), Column("big", "BIGINT"), Column("small", "BIGINT"),
    Column("kind_number", "INT"),
]  # fmt: skip


def flat_file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="legacy/flat.proto", package="legacy")
    message = f.message_type.add(name="Flat")
    kind = message.enum_type.add(name="Kind")
    kind.value.add(name="RAW", number=1)
    kind.value.add(name="AVG", number=2)
    _field(message, "code", 1, FD.TYPE_STRING)
    _field(message, "level", 2, FD.TYPE_INT32)
    _field(message, "kind", 3, FD.TYPE_ENUM, type_name=".legacy.Flat.Kind")
    _field(message, "ratio", 4, FD.TYPE_DOUBLE)
    _field(message, "big", 5, FD.TYPE_SFIXED64)
    _field(message, "small", 6, FD.TYPE_SINT64)
    _field(message, "kind_number", 7, FD.TYPE_ENUM, type_name=".legacy.Flat.Kind")
    _field(message, "nested", 8, FD.TYPE_MESSAGE, type_name=".legacy.Flat")
    return f


@pytest.fixture(scope="module")
def desc(tmp_path_factory: pytest.TempPathFactory) -> str:
    files = (timestamp_file(), orders_file(), readings_file(), flat_file())
    return write_descriptor_set(Path(tmp_path_factory.mktemp("protobuf")), *files)


def settings(desc: str, message: str, **more: str) -> Any:
    return format_settings(
        "protobuf", {"message-class-name": message, "descriptor-file": desc, **more}
    )


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(["a", "é", "😀", "\x00", " ", "z"]) for _ in range(rng.randrange(6)))


def order_corpus(Order: Any, rng: random.Random, count: int) -> list[bytes]:
    out = []
    for _ in range(count):
        m = Order()
        if rng.random() < 0.8:
            m.id = rng.choice([0, 1, -1, 2**63 - 1, -(2**63), rng.randrange(-(2**40), 2**40)])
        if rng.random() < 0.7:
            m.customer = _text(rng)
        if rng.random() < 0.5:
            m.note = _text(rng)
        if rng.random() < 0.6:
            m.status = rng.choice([0, 1, 2, 7, -3])  # open enum: unknown numbers kept
        if rng.random() < 0.5:
            m.payload = bytes(rng.randrange(256) for _ in range(rng.randrange(5)))
        m.express = rng.random() < 0.5
        m.weight = rng.choice([0.0, 1.5, -2.25, 3.4e38, float("inf"), float("nan"), 1e-45])
        m.small_unsigned = rng.choice([0, 1, 2**31, 2**32 - 1])
        m.big_unsigned = rng.choice([0, 2**63, 2**64 - 1, 7])
        m.delta = rng.choice([0, -1, 1, -(2**31), 2**31 - 1])
        m.checksum = rng.choice([0, 2**64 - 1, 12345])
        if rng.random() < 0.5:
            m.rank = rng.choice([0, 1, 2, 99])
        if rng.random() < 0.2:
            m.tags.append("x")  # a repeated field: the record is left
        if rng.random() < 0.1:
            m.address.city = "c"  # a message field: the record is left
        data = m.SerializeToString()
        roll = rng.random()
        if roll < 0.1:  # merged: every field given again, the last value counts
            data += order_corpus(Order, rng, 1)[0]
        elif roll < 0.15:  # an unknown field of each wire type
            data += b"\xf8\x06\x05" + b"\xf9\x06" + b"x" * 8 + b"\xfa\x06\x02hi" + b"\xfd\x06abcd"
        elif roll < 0.25:  # damaged
            cut = rng.randrange(len(data) + 1)
            data = data[:cut] + bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
        out.append(data)
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def compare(desc: str, message: str, columns: list[Column], records: list[bytes], **more: str):
    """Both decodings of every record: natively decoded ones equal the per-record rows, and no
    record the per-record decoding finds dirty is decoded natively. How many were native."""
    conf = settings(desc, message, **more)
    decoder = protobuf_decoder(columns, conf)
    assert decoder is not None
    native = decoder(pa.array(records, pa.binary())).to_pylist()
    read = record_reader(columns, conf)
    count = 0
    for data, mine in zip(records, native, strict=True):
        try:
            theirs = read(data)
        except ValueError:
            assert mine is None, (data, mine)
            continue
        if mine is None:
            continue
        count += 1
        differ = {k: (mine[k], theirs[k]) for k in theirs if not _same(mine[k], theirs[k])}
        assert not differ, (data, differ)
    return count


def test_proto3_messages_decode_natively_as_per_record(desc: str) -> None:
    Order = message_class(desc, "shop.Order")
    records = order_corpus(Order, random.Random(5), 3000)
    natively = compare(desc, "shop.Order", ORDER, records)
    assert natively > 1500  # the corpus meets the scanner (a third is left on purpose)


def test_proto3_default_values_read_the_same_natively(desc: str) -> None:
    Order = message_class(desc, "shop.Order")
    records = order_corpus(Order, random.Random(6), 500)
    columns = [c for c in ORDER if c.name != "note"]  # presence: per record with defaults
    assert compare(desc, "shop.Order", columns, records, **{"read-default-values": "true"}) > 250


def test_proto2_presence_and_a_closed_enum(desc: str) -> None:
    Flat = message_class(desc, "legacy.Flat")
    rng = random.Random(7)
    records = []
    for _ in range(2000):
        m = Flat()
        for name, values in (
            ("code", ["", "x", "é"]), ("level", [0, -5, 2**31 - 1]), ("kind", [1, 2]),
            ("ratio", [0.0, -1.5, 1e308]), ("big", [-(2**63), 3]), ("small", [-1, 2**62]),
            ("kind_number", [1, 2]),
        ):  # fmt: skip
            if rng.random() < 0.6:
                setattr(m, name, rng.choice(values))
        data = m.SerializeToString()
        if rng.random() < 0.15:  # a closed enum's unknown number: parsed as an unknown field
            data += rng.choice([b"\x18\x07", b"\x38\x09"])
        if rng.random() < 0.1:
            data += b"\x42\x00"  # an empty nested message: left
        records.append(data)
    assert compare(desc, "legacy.Flat", FLAT, records) > 1200


def test_what_the_scanner_leaves_or_refuses(desc: str) -> None:
    Order = message_class(desc, "shop.Order")
    conf = settings(desc, "shop.Order")
    decoder = protobuf_decoder(ORDER[:2], conf)
    assert decoder is not None
    left = [
        b"\x0a\x01x",  # field 1 (int64) as length-delimited: another wire type
        b"\x12\x02\xff\xfe",  # invalid UTF-8 in a string
        b"\x08" + b"\xff" * 10 + b"\x01",  # a varint of 11 bytes
        b"\x00\x01",  # field number 0
        b"\x0b\x0c",  # a group
        b"\x12\x05ab",  # a length past the end
    ]
    clean = Order(id=3, customer="c").SerializeToString()
    rows = decoder(pa.array([clean, *left, None], pa.binary())).to_pylist()
    assert rows[0] == {"id": 3, "customer": "c"}
    assert rows[1:] == [None] * (len(left) + 1)
    # Tables the scanner does not take: nested columns, a oneof of several fields, required
    # fields, an enum into a small integer, default values with presence.
    assert protobuf_decoder([Column("items", "ARRAY<ROW<sku STRING>>")], conf) is None
    assert protobuf_decoder([Column("email", "STRING")], conf) is None
    assert protobuf_decoder([Column("status", "SMALLINT")], conf) is None
    reading = settings(desc, "legacy.Reading")
    assert protobuf_decoder([Column("unit", "STRING")], reading) is None
    flat = settings(desc, "legacy.Flat", **{"read-default-values": "true"})
    assert protobuf_decoder([Column("code", "STRING")], flat) is None


def test_the_scanner_checks_its_arguments(desc: str) -> None:
    scan = scanner().scan_protobuf
    values = pa.array([b"\x08\x01"], pa.binary())
    validity, offsets, data = values.buffers()
    column = (b"id", "L", False, None)
    malformed = [((0, 3, 0, 0),), ((1, 99, 0, 0),), ((1, 3, 5, 0),), ((2, 3, 0, 0), (1, 3, -1, 0))]
    for fields in malformed:  # field 0, no type, no column 5, out of order
        with pytest.raises(ValueError):
            scan(validity, offsets, data, 0, 1, (column,), fields)
    with pytest.raises(ValueError):
        scan(validity, offsets, data, 0, 1, ((b"id", "m", False, None),), ((1, 3, 0, 0),))
    with pytest.raises(TypeError):
        scan(validity, offsets, data, 0, 1, ((b"s", "s", False, ("x",)),), ((1, 14, 0, 0),))
    decoded, buffers = scan(validity, offsets, data, 0, 1, (column,), ((1, 3, 0, 0),))
    assert decoded == b"\x01" and len(buffers) == 1
