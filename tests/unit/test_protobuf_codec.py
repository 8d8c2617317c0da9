"""The ``protobuf`` format's codecs through Spark (no broker): every mapped type decoded from
messages the protobuf package serializes, encoded rows parsed back by it, nulls and defaults as
Flink reads and writes them, and corrupt records as dirty data with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dagster_kafka_flinklike.formats import get_format
from dagster_kafka_flinklike.options import Column, struct_type
from tests.protobuf_defs import message_class, write_descriptor_set
from tests.unit.test_options_protobuf import ORDER_COLUMNS

READING_COLUMNS = [
    Column("sensor", "STRING"),
    Column("level", "INT"),
    Column("unit", "STRING"),
    Column("samples", "ARRAY<DOUBLE>"),
    Column("kind", "STRING"),
    Column("flag", "BOOLEAN"),
]


@pytest.fixture(scope="module")
def desc(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_descriptor_set(Path(tmp_path_factory.mktemp("protobuf")))


@pytest.fixture(scope="module")
def Order(desc: str) -> Any:
    return message_class(desc, "shop.Order")


@pytest.fixture(scope="module")
def Reading(desc: str) -> Any:
    return message_class(desc, "legacy.Reading")


def options(desc: str, message: str = "shop.Order", **more: str) -> dict[str, str]:
    return {"message-class-name": message, "descriptor-file": desc, **more}


def plain(value: Any) -> Any:
    """Spark's values as plain Python: Rows as dicts, bytearrays as bytes."""
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def decoded(spark: Any, values: list[bytes | None], columns: list[Column], opts: dict) -> list:
    """(row, error, tolerated) of each value, through ``protobuf.decode`` in Spark."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(v,) for v in values], "value binary")
    row, error, tolerated = get_format("protobuf").decode(F.col("value"), columns, opts)
    out = frame.select(row.alias("r"), error.alias("e"), tolerated.alias("t")).collect()
    return [(plain(r["r"]), r["e"], r["t"]) for r in out]


def encoded(spark: Any, frame: Any, columns: list[Column], opts: dict) -> list[bytes | None]:
    """``protobuf.encode`` of ``frame``'s ``columns``, one value per row."""
    from pyspark.sql import functions as F

    fields = [(F.col(f"`{c.name}`"), c) for c in columns]
    out = frame.select(get_format("protobuf").encode(fields, opts).alias("b")).collect()
    return [None if r["b"] is None else bytes(r["b"]) for r in out]


def full_order(Order: Any) -> Any:
    order = Order(id=-5, customer="Ann", note="gift", status=2, rank=1, payload=b"\x00\xff",
                  express=True, weight=2.5, small_unsigned=2**32 - 1, big_unsigned=2**64 - 1,
                  delta=-7, checksum=2**63, phone="555-0100")  # fmt: skip
    order.items.add(sku="a", quantity=2, price=9.5)
    order.items.add(sku="b")
    order.counters["x"] = 3
    order.counters["y"] = -4
    order.tags.extend(["t1", ""])
    order.created.seconds, order.created.nanos = 1_700_000_000, 5
    order.lines[1].sku, order.lines[1].quantity = "a", 2
    order.lines[7].sku = "z"
    order.address.city = "Oslo"
    order.history.extend([1, 2, 9])  # 9: a number the enum lacks (proto3 enums are open)
    order.scores.extend([-1, 2])
    return order


FULL_ROW = {
    "id": -5, "customer": "Ann", "note": "gift", "status": "SHIPPED", "rank": 1,
    "items": [{"sku": "a", "quantity": 2, "price": 9.5}, {"sku": "b", "quantity": 0, "price": 0.0}],
    "counters": {"x": 3, "y": -4}, "payload": b"\x00\xff", "express": True, "weight": 2.5,
    # uint32 / uint64 / fixed64 hold the same bits as Java's int / long: read signed
    "small_unsigned": -1, "big_unsigned": -1, "delta": -7, "checksum": -(2**63),
    "tags": ["t1", ""], "created": {"seconds": 1_700_000_000, "nanos": 5},
    "email": None, "phone": "555-0100",
    "lines": {1: {"sku": "a", "quantity": 2}, 7: {"sku": "z", "quantity": 0}},
    "address": {"city": "Oslo", "zip": ""}, "history": ["PAID", "SHIPPED", "UNRECOGNIZED"],
    "scores": [-1, 2],
}  # fmt: skip


def test_every_mapped_type_decodes(spark, desc, Order) -> None:
    [(row, error, tolerated)] = decoded(
        spark, [full_order(Order).SerializeToString()], ORDER_COLUMNS, options(desc)
    )
    assert (error, tolerated) == (None, False)
    assert row == FULL_ROW


def test_an_enum_number_the_enum_lacks_reads_as_the_number_into_an_integer_column(
    spark, desc, Order
) -> None:
    columns = [
        Column("status", "STRING"),
        Column("rank", "BIGINT"),
        Column("history", "ARRAY<INT>"),
    ]
    value = Order(status=9, rank=9, history=[9, 1]).SerializeToString()
    [(row, error, _)] = decoded(spark, [value], columns, options(desc))
    assert error is None
    assert row == {"status": "UNRECOGNIZED", "rank": 9, "history": [9, 1]}
    # A number too large for the declared integer type is dirty data.
    [(row, error, _)] = decoded(
        spark, [Order(rank=300).SerializeToString()], [Column("rank", "TINYINT")], options(desc)
    )
    assert row is None and error == "ValueError: 300 is out of range for TINYINT"


PRESENCE_NULLS = {
    # proto3 scalars without presence read their value; fields with presence and empty
    # repeated / map fields read NULL
    "id": 0, "customer": "", "note": None, "status": "STATUS_UNKNOWN", "rank": 0,
    "items": None, "counters": None, "payload": b"", "express": False, "weight": 0.0,
    "small_unsigned": 0, "big_unsigned": 0, "delta": 0, "checksum": 0, "tags": None,
    "created": None, "email": None, "phone": None, "lines": None, "address": None,
    "history": None, "scores": None,
}  # fmt: skip
DEFAULTS = {
    **PRESENCE_NULLS, "note": "", "items": [], "counters": {}, "tags": [],
    "created": {"seconds": 0, "nanos": 0}, "email": "", "phone": "", "lines": {},
    "address": {"city": "", "zip": ""}, "history": [], "scores": [],
}  # fmt: skip


@pytest.mark.parametrize(
    ("read_defaults", "expected"), [("false", PRESENCE_NULLS), ("true", DEFAULTS)]
)
def test_unset_proto3_fields_and_read_default_values(spark, desc, read_defaults, expected) -> None:
    # An empty value is a message with no field set (a null value yields no row: skipped).
    [(row, error, _)] = decoded(
        spark, [b""], ORDER_COLUMNS, options(desc, **{"read-default-values": read_defaults})
    )
    assert error is None
    assert row == expected


def test_proto2_fields_read_null_or_their_declared_defaults(spark, desc, Reading) -> None:
    values = [
        Reading(sensor="s1").SerializeToString(),
        Reading(sensor="s2", level=0, kind=2, samples=[0.5]).SerializeToString(),
    ]
    without = decoded(spark, values, READING_COLUMNS, options(desc, "legacy.Reading"))
    assert [r for r, _, _ in without] == [
        {"sensor": "s1", "level": None, "unit": None, "samples": None, "kind": None, "flag": None},
        {"sensor": "s2", "level": 0, "unit": None, "samples": [0.5], "kind": "AVG", "flag": None},
    ]
    with_defaults = decoded(
        spark,
        values,
        READING_COLUMNS,
        options(desc, "legacy.Reading", **{"read-default-values": "true"}),
    )
    assert [r for r, _, _ in with_defaults] == [
        {"sensor": "s1", "level": 42, "unit": "C", "samples": [], "kind": "RAW", "flag": False},
        {"sensor": "s2", "level": 0, "unit": "C", "samples": [0.5], "kind": "AVG", "flag": False},
    ]


@pytest.mark.parametrize("ignore", ["false", "true"])
def test_corrupt_records_are_dirty_with_the_reason(spark, desc, Order, ignore) -> None:
    values = [
        b"\x0a\xff",  # a length-delimited field longer than the record
        b"\x12\x02\xff\xfe",  # 'customer' holding bytes that are not UTF-8
        b"\x07",  # field number 0, wire type 7
        Order(id=1).SerializeToString(),
    ]
    got = decoded(
        spark, values, ORDER_COLUMNS[:1], options(desc, **{"ignore-parse-errors": ignore})
    )
    reason = "ValueError: not a serialized shop.Order message: Error parsing message with type "
    assert [e for _, e, _ in got] == [reason + "'shop.Order'"] * 3 + [None]
    assert [r for r, _, _ in got] == [None, None, None, {"id": 1}]
    assert {t for _, _, t in got} == {ignore == "true"}


def test_a_record_lacking_a_required_field_is_dirty(spark, desc, Reading) -> None:
    value = Reading(level=1).SerializePartialToString()
    [(row, error, _)] = decoded(spark, [value], READING_COLUMNS, options(desc, "legacy.Reading"))
    assert row is None
    assert error == "ValueError: legacy.Reading message is missing required fields: sensor"


def test_null_values_yield_no_row(spark) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(None,), (b"",)], "value binary")
    flags = frame.select(get_format("protobuf").skipped(F.col("value"), {}).alias("s"))
    assert [r["s"] for r in flags.collect()] == [True, False]


def test_every_mapped_type_round_trips_and_the_bytes_are_the_message(spark, desc, Order) -> None:
    frame = spark.createDataFrame(
        [tuple(FULL_ROW[c.name] for c in ORDER_COLUMNS)], struct_type(ORDER_COLUMNS)
    )
    [value] = encoded(spark, frame, ORDER_COLUMNS, options(desc))
    parsed = Order.FromString(value)
    expected = full_order(Order)
    del expected.history[:]
    expected.history.extend([1, 2, 0])  # 'UNRECOGNIZED' is no name of the enum: its first value
    assert parsed == expected
    assert (parsed.small_unsigned, parsed.big_unsigned, parsed.checksum) == (
        2**32 - 1,
        2**64 - 1,
        2**63,
    )
    [(row, error, _)] = decoded(spark, [value], ORDER_COLUMNS, options(desc))
    assert error is None
    assert row == {**FULL_ROW, "history": ["PAID", "SHIPPED", "STATUS_UNKNOWN"]}


def test_nulls_and_unknown_enum_values_are_written_as_flink_writes_them(spark, desc, Order) -> None:
    columns = [Column(n, t) for n, t in [
        ("note", "STRING"), ("address", "ROW<city STRING>"), ("customer", "STRING"),
        ("tags", "ARRAY<STRING>"), ("history", "ARRAY<STRING>"), ("scores", "ARRAY<INT>"),
        ("items", "ARRAY<ROW<sku STRING>>"), ("counters", "MAP<STRING, BIGINT>"),
        ("lines", "MAP<INT, ROW<sku STRING>>"), ("rank", "INT"), ("status", "STRING"),
        ("email", "STRING"), ("phone", "STRING"),
    ]]  # fmt: skip
    rows = [
        (None, None, None, ["a", None], [None, "PAID", "NOPE"], [None, 3], [None, ("s",)],
         {"k": None}, {3: None}, 2, "NOPE", "e@x", "555"),
        ("", ("",), "", [], [], [], [], {}, {}, 7, "PAID", "e@x", None),
    ]  # fmt: skip
    frame = spark.createDataFrame(rows, struct_type(columns))
    with_literal = options(desc, **{"write-null-string-literal": "N/A"})
    first, second = (Order.FromString(v) for v in encoded(spark, frame, columns, with_literal))
    # A null column leaves its field unset; null elements become their type's default.
    assert not first.HasField("note") and not first.HasField("address")
    assert list(first.tags) == ["a", "N/A"]
    assert list(first.history) == [0, 1, 0]  # the enum's first value for null and unknown names
    assert list(first.scores) == [0, 3]
    assert [i.sku for i in first.items] == ["", "s"]
    assert dict(first.counters) == {"k": 0}
    assert list(first.lines) == [3] and first.lines[3].sku == ""
    assert (first.rank, first.status) == (2, 0)
    assert first.WhichOneof("contact") == "phone"  # set in column order: the last one wins
    # Set values are written even when they equal the default (fields with presence).
    assert second.HasField("note") and second.note == ""
    assert second.HasField("address") and second.address.city == ""
    assert (second.rank, second.status) == (0, 1)  # 7 is no number of the enum
    assert second.WhichOneof("contact") == "email"
    [default_literal] = encoded(spark, frame.limit(1), columns[3:4], options(desc))
    assert list(Order.FromString(default_literal).tags) == ["a", ""]


def test_proto2_enum_default_and_missing_required_field_on_write(spark, desc, Reading) -> None:
    columns = [Column("sensor", "STRING"), Column("kind", "STRING")]
    frame = spark.createDataFrame([("s", "NOPE")], struct_type(columns))
    opts = options(desc, "legacy.Reading")
    [value] = encoded(spark, frame, columns, opts)
    parsed = Reading.FromString(value)
    assert parsed.HasField("kind") and parsed.kind == 1  # RAW, the enum's first value
    missing = spark.createDataFrame([(None, "AVG")], struct_type(columns))
    with pytest.raises(Exception, match="missing required fields: sensor"):
        encoded(spark, missing, columns, opts)
