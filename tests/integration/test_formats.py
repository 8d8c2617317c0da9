"""The json, csv and raw formats against the real broker: records in, rows (or errors) out, and
encoded bytes that decode back to the same rows."""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from decimal import Decimal
from typing import Any

import pytest

from dagster_kafka_flinklike.errors import KafkaOptionsError
from dagster_kafka_flinklike.formats import csv as csv_format
from dagster_kafka_flinklike.formats import get_format
from dagster_kafka_flinklike.formats import json as json_format
from dagster_kafka_flinklike.formats import raw as raw_format
from dagster_kafka_flinklike.options import Column, struct_type
from dagster_kafka_flinklike.source.records import ERROR, TOLERATED
from tests.integration.test_decoding import rows, send, table

UTC = dt.UTC


def local(value: dt.datetime) -> dt.datetime:
    """An instant as PySpark returns a TIMESTAMP_LTZ value: naive, in the local time zone."""
    return value.astimezone().replace(tzinfo=None)


def values(got: list[dict[str, Any]], names: list[str]) -> list[tuple[Any, ...]]:
    return [tuple(r[n] for n in names) for r in got]


def errors(got: list[dict[str, Any]]) -> list[str | None]:
    return [r[ERROR] for r in got]


def encoded(spark: Any, columns: list[Column], data: list[tuple], fmt: str, options: dict) -> list:
    """``format.encode`` of rows ``data`` (Spark types of ``columns``) as bytes per row."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(data, struct_type(columns))
    fields = [(F.col(f"`{c.name}`"), c) for c in columns]
    out = frame.select(get_format(fmt).encode(fields, options).alias("b")).collect()
    return [None if r["b"] is None else bytes(r["b"]) for r in out]


# --------------------------------------------------------------------------------------------
# json

ORDER_COLUMNS = [
    {"name": "order_id", "type": "STRING"},
    {"name": "order_channel", "type": "STRING"},
    {"name": "order_time", "type": "TIMESTAMP(3)"},
    {"name": "pay_amount", "type": "DOUBLE"},
    {"name": "real_pay", "type": "DOUBLE"},
    {"name": "user_id", "type": "STRING"},
]


def test_json_decodes_the_seed_orders_with_numbers_as_strings(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    orders = [
        '{"order_id":"202103241000000001", "order_channel":"webShop", "order_time":"2021-03-24 '
        '10:00:00", "pay_amount":"100.00", "real_pay":"100.00", "user_id":"0001"}',
        '{"order_id":"202103241606060001","order_channel":"appShop","order_time":"2021-03-24 '
        '16:06:06","pay_amount":200.0,"real_pay":180.0,"user_id":"0001"}',
    ]
    send(kafka_bootstrap, topic, [{"value": o.encode()} for o in orders])
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "json"}, ORDER_COLUMNS))
    assert values(got, [c["name"] for c in ORDER_COLUMNS]) == [
        ("202103241000000001", "webShop", dt.datetime(2021, 3, 24, 10), 100.0, 100.0, "0001"),
        ("202103241606060001", "appShop", dt.datetime(2021, 3, 24, 16, 6, 6), 200.0, 180.0, "0001"),
    ]
    assert errors(got) == [None, None]


SCALARS = [
    {"name": "i", "type": "INT"},
    {"name": "b", "type": "BIGINT"},
    {"name": "d", "type": "DOUBLE"},
    {"name": "dec", "type": "DECIMAL(10, 2)"},
    {"name": "flag", "type": "BOOLEAN"},
    {"name": "day", "type": "DATE"},
    {"name": "bin", "type": "BYTES"},
    {"name": "s", "type": "STRING"},
]


def test_json_scalars_lenient_numbers_and_dirty_fields(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    records = [
        # numbers written as strings decode (integers as Java parses them, trimmed); a JSON
        # number with an exponent or a fraction into BIGINT or INT is truncated, as in Flink
        {"i": " 100 ", "b": 1e3, "d": "100.00", "dec": "100.005", "flag": "TRUE", "s": 12.5},
        {"i": 7, "b": 9007199254740993, "d": 1.5, "dec": 0.1, "flag": False, "day": "2024-02-29"},
        {"i": None, "dec": 123456789012.5, "flag": "yes", "bin": "AQID", "s": {"a": [1]}},
        {"i": "abc"},
        {"d": "12,5"},
        {"b": "1.5"},
        {"i": 2147483648},
        {"day": "2023-02-29"},
        {"dec": "abc"},
        {"bin": "!!"},
        {"i": "100.00"},
        {"i": 2147483647.5},
    ]
    send(kafka_bootstrap, topic, [{"value": json.dumps(r).encode()} for r in records])
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "json"}, SCALARS))
    names = [c["name"] for c in SCALARS]
    assert values(got[:3], names) == [
        (100, 1000, 100.0, Decimal("100.01"), True, None, None, "12.5"),
        (7, 9007199254740993, 1.5, Decimal("0.10"), False, dt.date(2024, 2, 29), None, None),
        # too large for DECIMAL(10, 2): null, as in Flink; BOOLEAN is true only for 'true'
        (None, None, None, None, False, None, b"\x01\x02\x03", '{"a":[1]}'),
    ]
    assert errors(got) == [
        None,
        None,
        None,
        "value (json): field 'i': 'abc' is not a valid INT",
        "value (json): field 'd': '12,5' is not a valid DOUBLE",
        "value (json): field 'b': '1.5' is not a valid BIGINT",
        "value (json): field 'i': '2147483648' is not a valid INT",
        "value (json): field 'day': '2023-02-29' is not a valid DATE",
        "value (json): field 'dec': 'abc' does not match DECIMAL(10, 2)",
        "value (json): field 'bin': '!!' is not a valid BYTES",
        "value (json): field 'i': '100.00' is not a valid INT",
        "value (json): field 'i': '2.1474836475E9' is not a valid INT",
    ]
    assert [r[TOLERATED] for r in got] == [False] * len(records)


def test_json_malformed_records_and_records_without_rows(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    raw = [b'{"i": 1', b"[1, 2]", b'"text"', b"{'i': 1}", b"null", b"", b"  ", None, b'{"i": 2}']
    send(kafka_bootstrap, topic, [{"value": v} for v in raw])
    spec = table(topic, kafka_bootstrap, {"format": "json", "json.ignore-parse-errors": "true"},
                 [{"name": "i", "type": "INT"}])  # fmt: skip
    got = rows(spark, spec)
    # null, empty and blank values and the JSON literal null yield no row, as in Flink.
    assert [r["__dkf_offset"] for r in got] == [0, 1, 2, 3, 8]
    assert errors(got) == [
        'value (json): malformed JSON: {"i": 1',
        "value (json): expected a JSON object, got: [1, 2]",
        'value (json): expected a JSON object, got: "text"',
        "value (json): malformed JSON: {'i': 1}",
        None,
    ]
    assert [r[TOLERATED] for r in got] == [True, True, True, True, False]
    assert got[-1]["i"] == 2


NATIVE_COLUMNS = [
    {"name": "id", "type": "BIGINT"},
    {"name": "t", "type": "TINYINT"},
    {"name": "s", "type": "SMALLINT"},
    {"name": "i", "type": "INT"},
    {"name": "name", "type": "STRING"},
    {"name": "amount", "type": "DOUBLE"},
    {"name": "f", "type": "FLOAT"},
    {"name": "price", "type": "DECIMAL(6, 2)"},
    {"name": "ok", "type": "BOOLEAN"},
    {"name": "at", "type": "TIMESTAMP(3)"},
    {"name": "ltz", "type": "TIMESTAMP_LTZ(3)"},
    {"name": "day", "type": "DATE"},
    {"name": "clock", "type": "TIME"},
    {"name": "tags", "type": "ARRAY<STRING>"},
    {"name": "props", "type": "ROW<owner STRING, engine ROW<name STRING, version INT>>"},
    {"name": "points", "type": "ARRAY<ROW<x DOUBLE, y DOUBLE>>"},
]
#: Records the native batch decoding takes: each must decode exactly as the per-record way.
NATIVE_RECORDS = [
    '{"id": 9223372036854775807, "t": -128, "s": 32767, "i": -2147483648, "name": "Ada"}',
    '{"id": -0, "name": "\\u00e9\\ud83d\\ude00 \\"quoted\\" back\\\\slash \\/", "ok": false}',
    '{"amount": 1e300, "f": 0.1, "price": 12.5, "ok": null}',
    '{"amount": -1.5E-7, "price": "99.99", "at": "2021-03-24 10:00:00.123456"}',
    '{"amount": 3, "price": 1e2, "ltz": "2021-03-24 10:00:00.5Z", "day": "2021-03-24"}',
    '{"clock": "10:00:00.5", "tags": [], "props": {}, "points": [{"x": 1, "y": null}, null]}',
    '{"tags": ["a", null, ""], "props": {"owner": "o", "engine": {"name": "v8"}}}',
    '{"props": null, "points": null, "unknown": {"deep": [1, {"x": [true]}]}, "name": ""}',
    '{ "id" : 5 ,\n "name" :\t"tabbed" }',
    "{}",
]


def test_json_native_batches_decode_as_the_per_record_way(kafka_bootstrap, new_topic, spark):
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.source.records import native_columns
    from tests.integration.test_decoding import read_table

    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"value": r.encode()} for r in NATIVE_RECORDS])
    spec = table(topic, kafka_bootstrap, {"format": "json"}, NATIVE_COLUMNS)
    assert [c.name for c in native_columns(spec)] == ["__dkf_value_native"]
    native = rows(spark, spec)
    per_record = rows(spark, spec, native=False)
    # The same rows; a natively decoded record is clean and does not carry its raw value on.
    assert [{**r, "__dkf_value": None} for r in per_record] == native
    assert [r["__dkf_value"] for r in per_record] == [r.encode() for r in NATIVE_RECORDS]
    assert [r["__dkf_value_bytes"] for r in native] == [len(r.encode()) for r in NATIVE_RECORDS]
    assert errors(native) == [None] * len(NATIVE_RECORDS)
    assert native[1]["name"] == '\u00e9\U0001f600 "quoted" back\\slash /'
    assert native[3]["price"] == Decimal("99.99")
    # Every record was decoded natively: none went through the per-record decoding.
    decoded = read_table(spark, spec).agg(F.count("__dkf_offset").alias("n")).collect()[0]["n"]
    assert decoded == len(NATIVE_RECORDS)
    from dagster_kafka_flinklike.source.reader import read_splits

    raw = read_splits(
        spark, [_split(kafka_bootstrap, topic)], {"bootstrap.servers": kafka_bootstrap},
        ("value",), derived=native_columns(spec),
    )  # fmt: skip
    assert raw.filter(F.col("__dkf_value_native").isNull()).count() == 0


def _split(bootstrap: str, topic: str) -> Any:
    from confluent_kafka import Consumer, TopicPartition

    from dagster_kafka_flinklike.source.enumerator import KafkaSplit

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "native"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    return KafkaSplit(topic, 0, low, high)


NESTED = [
    {"name": "id", "type": "INT"},
    {"name": "props", "type": "ROW<owner STRING, engine ROW<name STRING, version INT>>"},
    {"name": "tags", "type": "ARRAY<ROW<k STRING, n DOUBLE>>"},
    {"name": "counts", "type": "MAP<INT, BIGINT>"},
    {"name": "attrs", "type": "MAP<STRING, ARRAY<STRING>>"},
]


def test_json_nested_rows_arrays_and_maps(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    texts = [
        '{"id": 101, "props": {"owner": "Alibaba Cloud", "engine": {"name": "Flink", '
        '"version": "2"}}, "tags": [{"k": "a", "n": "1.5"}, {"k": "b"}, null], '
        '"counts": {"1": 10, "01": 11, "2": "20"}, "attrs": {"x": ["p", "q"], "x": ["r"]}}',
        '{"id": 102, "props": null, "tags": [], "counts": {}, "attrs": {"y": null}}',
        '{"id": 103, "tags": [{"k": "a", "n": "one"}]}',
        '{"id": 104, "counts": {"one": 1}}',
        '{"id": 105, "props": "flat"}',
    ]
    send(kafka_bootstrap, topic, [{"value": t.encode()} for t in texts])
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "json"}, NESTED))
    names = [c["name"] for c in NESTED]
    assert values(got[:2], names) == [
        (
            101,
            {"owner": "Alibaba Cloud", "engine": {"name": "Flink", "version": 2}},
            [{"k": "a", "n": 1.5}, {"k": "b", "n": None}, None],
            {1: 11, 2: 20},  # "1" and "01" are both key 1: the last one wins
            {"x": ["r"]},  # repeated JSON key: the last one wins
        ),
        (102, None, [], {}, {"y": None}),
    ]
    assert errors(got) == [
        None,
        None,
        "value (json): field 'tags[*].n': 'one' is not a valid DOUBLE",
        "value (json): field 'counts key': 'one' is not a valid INT",
        "value (json): field 'props': 'flat' does not match ROW<`owner` STRING, `engine` "
        "ROW<`name` STRING, `version` INT>>",
    ]


def test_json_fail_on_missing_field(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    texts = [
        '{"id": 1, "props": {"owner": "o", "engine": {"name": "n", "version": 1}}, '
        '"tags": [{"k": "a", "n": 1}], "counts": {}, "attrs": {}}',
        '{"id": null, "props": null, "tags": null, "counts": null, "attrs": null}',
        '{"id": 3, "props": null, "tags": null, "counts": null}',
        '{"id": 4, "props": {"owner": "o", "engine": {"name": "n"}}, "tags": null, '
        '"counts": null, "attrs": null}',
        '{"id": 5, "props": null, "tags": [{"k": "a", "n": 1}, {"k": "b"}], "counts": null, '
        '"attrs": null}',
    ]
    send(kafka_bootstrap, topic, [{"value": t.encode()} for t in texts])
    options = {"format": "json", "json.fail-on-missing-field": "true"}
    got = rows(spark, table(topic, kafka_bootstrap, options, NESTED))
    assert errors(got) == [
        None,
        None,  # present with null is not missing
        "value (json): field 'attrs' is missing",
        "value (json): field 'props.engine.version' is missing",
        "value (json): field 'tags[*].n' is missing",
    ]
    lenient = rows(spark, table(topic, kafka_bootstrap, {"format": "json"}, NESTED))
    assert errors(lenient) == [None] * 5
    assert lenient[3]["props"] == {"owner": "o", "engine": {"name": "n", "version": None}}


STAMPS = [
    {"name": "ts", "type": "TIMESTAMP(3)"},
    {"name": "ltz", "type": "TIMESTAMP_LTZ(3)"},
]


@pytest.mark.parametrize(
    ("standard", "good", "bad"),
    [
        (
            "SQL",
            '{"ts": "2020-12-30 12:13:14.123", "ltz": "2020-12-30 12:13:14.123Z"}',
            '{"ts": "2020-12-30T12:13:14.123"}',
        ),
        (
            "ISO-8601",
            '{"ts": "2020-12-30T12:13:14.123", "ltz": "2020-12-30T12:13:14.123Z"}',
            '{"ltz": "2020-12-30 12:13:14.123Z"}',
        ),
    ],
)
def test_json_timestamp_format_standard(kafka_bootstrap, new_topic, spark, standard, good, bad):
    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"value": good.encode()}, {"value": bad.encode()}])
    options = {"format": "json", "json.timestamp-format.standard": standard}
    got = rows(spark, table(topic, kafka_bootstrap, options, STAMPS))
    expected = dt.datetime(2020, 12, 30, 12, 13, 14, 123000)
    assert (got[0]["ts"], got[0]["ltz"]) == (expected, local(expected.replace(tzinfo=UTC)))
    field, text = ("ts", "2020-12-30T12:13:14.123") if standard == "SQL" else (
        "ltz", "2020-12-30 12:13:14.123Z")  # fmt: skip
    kind = "TIMESTAMP(3)" if field == "ts" else "TIMESTAMP_LTZ(3)"
    assert got[1][ERROR] == f"value (json): field '{field}': '{text}' is not a valid {kind}"


ENCODED = [
    Column("id", "INT"),
    Column("name", "STRING"),
    Column("price", "DECIMAL(12, 8)"),
    Column("ts", "TIMESTAMP(3)"),
    Column("ltz", "TIMESTAMP_LTZ(3)"),
    Column("tags", "ARRAY<STRING>"),
    Column("attrs", "MAP<STRING, DOUBLE>"),
    Column("props", "ROW<owner STRING, at TIMESTAMP(3)>"),
]
ENCODED_ROWS = [
    (
        1,
        'say "hi"',
        Decimal("0.00000001"),
        dt.datetime(2020, 12, 30, 12, 13, 14, 123000),
        dt.datetime(2020, 12, 30, 12, 13, 14, 500000, tzinfo=UTC),
        ["a", None],
        {"x": 1.5},
        (None, dt.datetime(2021, 1, 1)),
    ),
    (2, None, Decimal("1234.5"), None, None, None, None, None),
]


def _java_text(text: str) -> str:
    """Java's ``new BigDecimal(text).stripTrailingZeros().toString()``, from its definition."""
    number = Decimal(text).normalize()
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    if not any(digits):
        return "0"
    coefficient, scale = "".join(map(str, digits)), -exponent
    adjusted = len(coefficient) - 1 - scale
    minus = "-" if sign else ""
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return minus + coefficient
        padded = coefficient.rjust(scale + 1, "0")
        return f"{minus}{padded[:-scale]}.{padded[-scale:]}"
    tail = "." + coefficient[1:] if len(coefficient) > 1 else ""
    return f"{minus}{coefficient[0]}{tail}E{'+' if adjusted > 0 else ''}{adjusted}"


def test_a_decimal_is_written_as_javas_stripped_text(spark):
    """The text Flink's JSON formats write for a DECIMAL by default, for every precision and
    scale shape (DECIMAL(38, 38) keeps its sign), nulls null."""
    import random

    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.formats.json import java_decimal_text

    rng = random.Random(9)
    for precision, scale in [(38, 38), (20, 5), (38, 0), (10, 2), (5, 0), (1, 0), (2, 1)]:
        texts: list[str | None] = ["0", "-0.0", None]
        for _ in range(300):
            unscaled = int("".join(rng.choices("0123456789", k=rng.randrange(1, precision + 1))))
            unscaled = unscaled * rng.choice([1, 10, 1000]) % 10**precision
            texts.append(str(Decimal(unscaled).scaleb(-scale) * rng.choice([1, -1])))
        frame = spark.createDataFrame([(t,) for t in texts], "t string")
        typed = frame.select(F.col("t").cast(f"decimal({precision},{scale})").alias("d"))
        for plain, written in typed.select(
            F.col("d").cast("string"), java_decimal_text(F.col("d"))
        ).collect():
            assert written == (None if plain is None else _java_text(plain)), plain


def test_json_encode_options_and_round_trip(kafka_bootstrap, new_topic, spark):
    default = encoded(spark, ENCODED, ENCODED_ROWS, "json", {})
    assert [json.loads(b) for b in default] == [
        {
            "id": 1,
            "name": 'say "hi"',
            "price": 1e-08,
            "ts": "2020-12-30 12:13:14.123",
            "ltz": "2020-12-30 12:13:14.5Z",
            "tags": ["a", None],
            "attrs": {"x": 1.5},
            "props": {"owner": None, "at": "2021-01-01 00:00:00"},
        },
        {"id": 2, "name": None, "price": 1234.5, "ts": None, "ltz": None, "tags": None,
         "attrs": None, "props": None},
    ]  # fmt: skip
    # BigDecimal.stripTrailingZeros() text, as Flink writes it by default (its oracle test:
    # test_json_exactness.py)
    assert b'"price":1E-8' in default[0]
    assert b'"price":1234.5,' in default[1]

    options = {
        "encode.decimal-as-plain-number": "true",
        "encode.ignore-null-fields": "true",
        "timestamp-format.standard": "ISO-8601",
        "map-null-key.mode": "LITERAL",
    }
    plain = encoded(spark, ENCODED, ENCODED_ROWS, "json", options)
    assert plain[1] == b'{"id":2,"price":1234.50000000}'
    assert plain[0] == (
        b'{"id":1,"name":"say \\"hi\\"","price":0.00000001,"ts":"2020-12-30T12:13:14.123",'
        b'"ltz":"2020-12-30T12:13:14.5Z","tags":["a",null],"attrs":{"x":1.5},'
        b'"props":{"at":"2021-01-01T00:00:00"}}'
    )
    nulls_kept = encoded(spark, ENCODED[:2], [(3, None)], "json", {})
    assert nulls_kept == [b'{"id":3,"name":null}']

    # What the format writes, it reads back.
    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"value": v} for v in default + plain])
    spec_columns = [{"name": c.name, "type": c.type} for c in ENCODED]
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "json"}, spec_columns))
    iso = {"format": "json", "json.timestamp-format.standard": "ISO-8601"}
    got_iso = rows(spark, table(topic, kafka_bootstrap, iso, spec_columns))
    names = [c.name for c in ENCODED]
    expected = [tuple(_as_read(v) for v in row) for row in ENCODED_ROWS]
    assert values(got[:2], names) == expected
    assert values(got_iso[2:], names) == expected
    assert errors(got[:2]) == [None, None] and errors(got_iso[2:]) == [None, None]


def _as_read(value: Any) -> Any:
    """A Python value as a decoded row shows it (ROW values are dicts)."""
    if isinstance(value, tuple):
        return {"owner": value[0], "at": value[1]}
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return local(value)
    return value


# --------------------------------------------------------------------------------------------
# csv


def test_csv_seed_example_with_metadata(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    message = '{"order_id":"1", "pay_amount":"60.00"}'
    send(
        kafka_bootstrap,
        topic,
        [
            {"value": f"'{message}'\u0001x".encode(), "timestamp": 1_700_000_000_369},
            {"value": "'it''s'\u0001'a\u0001b'".encode()},
        ],
    )
    columns = [
        {"name": "topic", "type": "STRING", "metadata_key": "topic", "virtual": True},
        {"name": "offset", "type": "BIGINT", "metadata_key": "offset", "virtual": True},
        {"name": "event_time", "type": "TIMESTAMP(3)", "metadata_key": "timestamp"},
        {"name": "message", "type": "STRING"},
        {"name": "other", "type": "STRING"},
    ]
    options = {"format": "csv", "csv.field-delimiter": "\\u0001", "csv.quote-character": "'"}
    got = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert values(got, ["topic", "offset", "message", "other"]) == [
        (topic, 0, message, "x"),
        (topic, 1, "it's", "a\u0001b"),
    ]
    assert got[0]["event_time"] == dt.datetime(2023, 11, 14, 22, 13, 20, 369000)


CSV_COLUMNS = [
    {"name": "id", "type": "INT"},
    {"name": "name", "type": "STRING"},
    {"name": "price", "type": "DECIMAL(10, 2)"},
    {"name": "tags", "type": "ARRAY<INT>"},
    {"name": "pos", "type": "ROW<x DOUBLE, y DOUBLE>"},
    {"name": "ts", "type": "TIMESTAMP(3)"},
]


def test_csv_decoding_rows_fields_and_errors(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    lines = [
        '1,"Smith, ""J""",9.99,1;2;3,1.5;-2,2020-12-30 12:13:14.123',  # quoted, doubled quote
        "2,,0,,,",  # empty STRING is '', empty array; empty ROW/TIMESTAMP fields are dirty
        "3,x,1,7,1;2,2020-12-30 12:13:14\n",  # one trailing line break is ignored
        "4,x,1,7,1;2",  # a field short
        "5,x,1,7,1;2,2020-12-30 12:13:14,extra",  # a field too many
        "six,x,1,7,1;2,2020-12-30 12:13:14",
        "7,x,1,7;z,1;2,2020-12-30 12:13:14",
        "8,x,1,7,1;2;3,2020-12-30 12:13:14",
        "",
        "# a comment line is a record like any other by default",
    ]
    send(kafka_bootstrap, topic, [{"value": line.encode()} for line in lines])
    got = rows(spark, table(topic, kafka_bootstrap, {"format": "csv"}, CSV_COLUMNS))
    names = [c["name"] for c in CSV_COLUMNS]
    assert values([got[0], got[2]], names) == [
        (1, 'Smith, "J"', Decimal("9.99"), [1, 2, 3], {"x": 1.5, "y": -2.0},
         dt.datetime(2020, 12, 30, 12, 13, 14, 123000)),
        (3, "x", Decimal("1.00"), [7], {"x": 1.0, "y": 2.0}, dt.datetime(2020, 12, 30, 12, 13, 14)),
    ]  # fmt: skip
    assert [r["__dkf_offset"] for r in got] == [0, 1, 2, 3, 4, 5, 6, 7, 9]  # '' yields no row
    assert errors(got) == [
        None,
        "value (csv): field 'pos': row length mismatch, 2 fields expected but was 0",
        None,
        "value (csv): row length mismatch: 6 fields expected but got fewer: 4,x,1,7,1;2",
        "value (csv): row length mismatch: 6 fields expected but got more: "
        "5,x,1,7,1;2,2020-12-30 12:13:14,extra",
        "value (csv): field 'id': 'six' is not a valid INT",
        "value (csv): field 'tags[*]': 'z' is not a valid INT",
        "value (csv): field 'pos': row length mismatch, 2 fields expected but was 3",
        "value (csv): row length mismatch: 6 fields expected but got fewer: "
        "# a comment line is a record like any other by default",
    ]
    assert got[1]["name"] == "" and got[1]["tags"] == []


def test_csv_options(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    lines = [
        "# skipped when comments are allowed",
        "1|N/A|a\\|b",
        '2|"q"|x',
        "3||N/A",
        "bad|x|y",
    ]
    send(kafka_bootstrap, topic, [{"value": line.encode()} for line in lines])
    columns = [
        {"name": "id", "type": "INT"},
        {"name": "a", "type": "STRING"},
        {"name": "b", "type": "STRING"},
    ]
    options = {
        "format": "csv",
        "csv.field-delimiter": "|",
        "csv.allow-comments": "true",
        "csv.null-literal": "N/A",
        "csv.disable-quote-character": "true",
        "csv.ignore-parse-errors": "true",
    }
    got = rows(spark, table(topic, kafka_bootstrap, options, columns))
    assert [r["__dkf_offset"] for r in got] == [1, 2, 3, 4]  # the comment yields no row
    by_offset = {r["__dkf_offset"]: r for r in got}
    # Without quoting, quotes are data; '\\|' is not an escape without 'escape-character'.
    assert values([by_offset[2], by_offset[3]], ["id", "a", "b"]) == [
        (2, '"q"', "x"),
        (3, "", None),
    ]
    assert by_offset[1][ERROR] == (
        "value (csv): row length mismatch: 3 fields expected but got more: 1|N/A|a\\|b"
    )
    assert by_offset[4][ERROR] == "value (csv): field 'id': 'bad' is not a valid INT"
    assert by_offset[4][TOLERATED] is True

    escaped = {
        "format": "csv",
        "csv.field-delimiter": "|",
        "csv.escape-character": "\\",
        "csv.null-literal": "N/A",
    }
    topic2 = new_topic(partitions=1)
    send(kafka_bootstrap, topic2, [{"value": b'1|N/A|"a\\"b"'}, {"value": b'2|"N/A"|"x|y"'}])
    got2 = rows(spark, table(topic2, kafka_bootstrap, escaped, columns))
    assert values(got2, ["id", "a", "b"]) == [(1, None, 'a"b'), (2, None, "x|y")]
    assert got2[0][TOLERATED] is False


CSV_ENCODED = [
    Column("id", "INT"),
    Column("name", "STRING"),
    Column("price", "DECIMAL(12, 8)"),
    Column("tags", "ARRAY<INT>"),
    Column("pos", "ROW<x DOUBLE, y STRING>"),
    Column("ts", "TIMESTAMP(3)"),
    Column("bin", "BYTES"),
]
CSV_ROWS = [
    (1, 'a,"b"', Decimal("0.00000001"), [1, None, 3], (1.5, "p"),
     dt.datetime(2020, 12, 30, 12, 13, 14, 100000), b"\x00\x01"),
    (2, "", Decimal("12.5"), [], (None, None), None, None),
    (3, None, None, None, None, dt.datetime(2020, 1, 1), b""),
]  # fmt: skip


def test_csv_encode_and_round_trip(kafka_bootstrap, new_topic, spark):
    default = encoded(spark, CSV_ENCODED, CSV_ROWS, "csv", {})
    assert default == [
        b'1,"a,""b""",1E-8,1;;3,1.5;p,2020-12-30 12:13:14.1,AAE=',
        b"2,,12.50000000,,;,,",
        b"3,,,,,2020-01-01 00:00:00,",
    ]
    options = {
        "field-delimiter": "\\t",
        "null-literal": "\\N",
        "write-bigdecimal-in-scientific-notation": "false",
        "array-element-delimiter": "|",
    }
    tabbed = encoded(spark, CSV_ENCODED, CSV_ROWS, "csv", options)
    assert tabbed[0] == b'1\t"a,""b"""\t0.00000001\t1|\\N|3\t1.5|p\t2020-12-30 12:13:14.1\tAAE='
    assert tabbed[2] == b"3\t\\N\t\\N\t\\N\t\\N\t2020-01-01 00:00:00\t"
    unquoted = encoded(
        spark, CSV_ENCODED[:2], [(1, "a,b")], "csv", {"disable-quote-character": "true"}
    )
    assert unquoted == [b"1,a,b"]

    topic = new_topic(partitions=1)
    send(kafka_bootstrap, topic, [{"value": v} for v in tabbed])
    spec_columns = [{"name": c.name, "type": c.type} for c in CSV_ENCODED]
    read_options = {"format": "csv", **{f"csv.{k}": v for k, v in options.items()}}
    got = rows(spark, table(topic, kafka_bootstrap, read_options, spec_columns))
    names = [c.name for c in CSV_ENCODED]
    assert errors(got) == [None, None, None]
    assert values(got, names)[0] == (
        1, 'a,"b"', Decimal("1E-8"), [1, None, 3], {"x": 1.5, "y": "p"},
        dt.datetime(2020, 12, 30, 12, 13, 14, 100000), b"\x00\x01")  # fmt: skip
    assert values(got, names)[2] == (3, None, None, None, None, dt.datetime(2020, 1, 1), b"")


def test_csv_rejects_nested_types_it_cannot_hold() -> None:
    from pyspark.sql import functions as F

    for type_ in ("MAP<STRING, INT>", "ARRAY<ARRAY<INT>>", "ROW<a ROW<b INT>>", "MULTISET<INT>"):
        with pytest.raises(KafkaOptionsError, match="cannot hold column 'c'"):
            csv_format.FORMAT.decode(F.col("value"), [Column("c", type_)], {})


# --------------------------------------------------------------------------------------------
# raw

NUMBERS = [
    ("BOOLEAN", "?", [True, False]),
    ("TINYINT", "b", [-128, 127, -1]),
    ("SMALLINT", "h", [-32768, 32767, 258, -2]),
    ("INT", "i", [-(2**31), 2**31 - 1, 16909060, -5]),
    ("BIGINT", "q", [-(2**63), 2**63 - 1, 72623859790382856, -7]),
    ("FLOAT", "f", [1.5, -0.0, float("inf"), 1e-45, 3.4028234663852886e38, float("nan")]),
    ("DOUBLE", "d", [0.1, -2.5e-308, 5e-324, -math.inf, 1.7976931348623157e308, math.nan]),
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return a == b


@pytest.mark.parametrize("endianness", ["big-endian", "little-endian"])
def test_raw_numbers_in_both_byte_orders(kafka_bootstrap, new_topic, spark, endianness):
    order = ">" if endianness == "big-endian" else "<"
    topic = new_topic(partitions=len(NUMBERS))
    records = []
    for p, (_, code, numbers) in enumerate(NUMBERS):
        records += [{"value": struct.pack(order + code, n), "partition": p} for n in numbers]
        records += [{"value": b"\x01" * (struct.calcsize(code) + 1), "partition": p}]
        records += [{"value": None, "partition": p}]
    send(kafka_bootstrap, topic, records)
    for p, (type_, code, numbers) in enumerate(NUMBERS):
        spec = table(
            topic,
            kafka_bootstrap,
            {"format": "raw", "raw.endianness": endianness},
            [{"name": "n", "type": type_}],
        )
        got = [r for r in rows(spark, spec) if r["__dkf_partition"] == p]
        decoded = [r["n"] for r in got]
        # FLOAT holds float32 values: what Python's struct reads back from the same bytes.
        exact = [struct.unpack(code, struct.pack(code, n))[0] for n in numbers]
        expected = [*exact, None, None]
        assert all(_same(a, b) for a, b in zip(decoded, expected, strict=True)), (type_, decoded)
        size = struct.calcsize(code)
        assert errors(got) == [None] * len(numbers) + [
            f"value (raw): column 'n': {type_} takes {size} byte(s), got {size + 1}",
            None,  # a null value is a row with a null column
        ]

        # Encoding writes the same bytes as Java (and Python's struct) would.
        column = Column("n", type_)
        out = encoded(spark, [column], [(n,) for n in numbers] + [(None,)], "raw",
                      {"endianness": endianness})  # fmt: skip
        assert out == [struct.pack(order + code, n) for n in numbers] + [None], type_


def test_raw_strings_charsets_and_bytes(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)
    text = "Grüße €"
    send(
        kafka_bootstrap,
        topic,
        [
            {"value": text.encode("utf-16-le")},
            {"value": b"\x00\xd8"},  # a lone surrogate: not UTF-16LE text
            {"value": b"\x41"},  # odd length
            {"value": None},
        ],
    )
    cases = {
        "UTF-16LE": [text, None, None, None],
        "ISO-8859-1": [
            text.encode("utf-16-le").decode("latin-1"),
            "\x00Ø",
            "A",
            None,
        ],
    }
    for charset, expected in cases.items():
        options = {"format": "raw", "raw.charset": charset}
        got = rows(spark, table(topic, kafka_bootstrap, options, [{"name": "s", "type": "STRING"}]))
        assert [r["s"] for r in got] == expected
    utf16 = rows(spark, table(topic, kafka_bootstrap, {"format": "raw", "raw.charset": "utf-16le"},
                              [{"name": "s", "type": "STRING"}]))  # fmt: skip
    assert errors(utf16) == [
        None,
        "value (raw): column 's': the bytes are not valid UTF-16LE text",
        "value (raw): column 's': the bytes are not valid UTF-16LE text",
        None,
    ]
    as_bytes = rows(spark, table(topic, kafka_bootstrap, {"format": "raw"},
                                 [{"name": "b", "type": "BYTES"}]))  # fmt: skip
    assert [r["b"] for r in as_bytes] == [text.encode("utf-16-le"), b"\x00\xd8", b"A", None]

    column = Column("s", "STRING")
    data = [(text,), ("plain",), (None,)]
    assert encoded(spark, [column], data, "raw", {}) == [text.encode(), b"plain", None]
    assert encoded(spark, [column], data, "raw", {"charset": "US-ASCII"}) == [
        b"Gr??e ?", b"plain", None]  # fmt: skip
    assert encoded(spark, [column], data, "raw", {"charset": "UTF-16BE"})[0] == text.encode(
        "utf-16-be"
    )
    ascii_topic = new_topic(partitions=1)
    send(kafka_bootstrap, ascii_topic, [{"value": b"ok"}, {"value": "é".encode()}])
    ascii_rows = rows(spark, table(ascii_topic, kafka_bootstrap, {"format": "raw",
        "raw.charset": "US-ASCII"}, [{"name": "s", "type": "STRING"}]))  # fmt: skip
    assert [r["s"] for r in ascii_rows] == ["ok", None]
    assert ascii_rows[1][ERROR] == "value (raw): column 's': the bytes are not valid US-ASCII text"


def test_raw_rejects_what_spark_or_the_format_cannot_hold() -> None:
    from pyspark.sql import functions as F

    with pytest.raises(KafkaOptionsError, match=r"'raw\.charset' = 'gbk' is not supported"):
        raw_format.FORMAT.decode(F.col("value"), [Column("s", "STRING")], {"charset": "gbk"})
    with pytest.raises(KafkaOptionsError, match="cannot hold column 'd' of type DATE"):
        raw_format.FORMAT.decode(F.col("value"), [Column("d", "DATE")], {})
    with pytest.raises(KafkaOptionsError, match="exactly one physical column"):
        raw_format.FORMAT.encode([], {})


def test_json_module_exports_staged_decoding_that_agrees_with_decode(spark) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(b'{"i": "5", "s": 1}',), (b'{"i": "x"}',)], "value binary")
    columns = [Column("i", "INT"), Column("s", "STRING")]
    names = ("v", "e", "t")
    result = json_format.FORMAT.decode(F.col("value"), columns, {})
    direct = frame.select(*[c.alias(n) for c, n in zip(result, names, strict=True)])
    stages, result = json_format.FORMAT.decode_stages(F.col("value"), columns, {}, "__t_")
    staged = frame
    for stage in stages:
        staged = staged.select("*", *[e.alias(n) for n, e in stage.items()])
    staged = staged.select(*[c.alias(n) for c, n in zip(result, names, strict=True)])
    assert direct.collect() == staged.collect()
    assert [r["e"] for r in direct.collect()] == [None, "field 'i': 'x' is not a valid INT"]
