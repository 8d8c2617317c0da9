"""The ``protobuf-confluent`` format without a registry: its options, Confluent's message
indexes, and framed records decoded through Spark (schema ids in the record or in a header)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from dagster_kafka_flinklike.errors import KafkaOptionsError
from dagster_kafka_flinklike.formats import get_format
from dagster_kafka_flinklike.formats._registry import FramingError
from dagster_kafka_flinklike.formats.protobuf_confluent import (
    indexes_bytes,
    message_indexes,
    read_indexes,
)
from dagster_kafka_flinklike.options import Column, KafkaTableSpec
from dagster_kafka_flinklike.options.protobuf_descriptors import pool
from tests.protobuf_defs import descriptor_set, message_class, write_descriptor_set

NAME = "protobuf-confluent"
COLUMNS = [Column("id", "BIGINT"), Column("status", "STRING")]


@pytest.fixture(scope="module")
def desc(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_descriptor_set(Path(tmp_path_factory.mktemp("protobuf")))


def options(desc: str, **more: str) -> dict[str, str]:
    return {
        "format": NAME,
        f"{NAME}.url": "http://registry:8081",
        f"{NAME}.message-class-name": "shop.Order",
        f"{NAME}.descriptor-file": desc,
        **more,
    }


def spec(opts: dict[str, Any], columns: Any = COLUMNS) -> KafkaTableSpec:
    given = {"connector": "kafka", "topic": "orders", **opts}
    merged = {k: v for k, v in given.items() if v is not None}
    return KafkaTableSpec.from_options(merged, columns=columns)


def refused(opts: dict[str, Any], columns: Any = COLUMNS) -> KafkaOptionsError:
    with pytest.raises(KafkaOptionsError) as info:
        spec(opts, columns)
    return info.value


def test_options_registry_settings_default_subjects_and_the_message(desc: str) -> None:
    keyed = {"key.format": NAME, "key.fields": "id"}
    keyed.update({f"key.{k}": v for k, v in options(desc).items() if k != "format"})
    built = spec({**options(desc), **keyed})
    assert built.value_format.settings["subject"] == "orders-value"
    assert built.value_format.settings["registry"] == {"url": "http://registry:8081"}
    assert built.value_format.settings["message"] == "shop.Order"
    assert built.key_format is not None and built.key_format.settings["subject"] == "orders-key"
    assert str(refused(options(desc, **{f"{NAME}.url": None}))) == (
        "Format 'protobuf-confluent' needs the Schema Registry's URL: set "
        "'protobuf-confluent.url' (or 'value.protobuf-confluent.url' / "
        "'key.protobuf-confluent.url')."
    )
    assert str(refused(options(desc, **{f"{NAME}.descriptor-file": None}))) == (
        "Format 'protobuf-confluent' requires 'protobuf-confluent.descriptor-file': the "
        "FileDescriptorSet that defines it (protoc --descriptor_set_out)."
    )
    error = refused(options(desc), columns=[Column("id", "INT")])
    assert str(error) == (
        "Format 'protobuf-confluent' ('format'): column 'id' (INT) cannot hold protobuf field "
        "'shop.Order.id' (int64): an int64 field maps to BIGINT."
    )
    error = refused(options(desc, **{f"{NAME}.ssl.keystore.location": "k.jks"}))
    assert str(error) == (
        "Option 'protobuf-confluent.ssl.keystore.location' is not supported: the Python Schema "
        "Registry client reads PEM files, not Java keystores; give the client certificate and "
        "key as 'protobuf-confluent.properties.ssl.certificate.location' and "
        "'protobuf-confluent.properties.ssl.key.location' (PEM)."
    )


@pytest.mark.parametrize(
    ("message", "indexes", "framed"),
    [
        ("shop.Item", [0], b"\x00"),
        ("shop.Order", [1], b"\x02\x02"),
        ("shop.Order.Address", [1, 0], b"\x04\x02\x00"),  # Address is Order's first nested type
        ("legacy.Item", [1], b"\x02\x02"),
    ],
)
def test_message_indexes(message: str, indexes: list[int], framed: bytes) -> None:
    descriptor = pool(descriptor_set()).FindMessageTypeByName(message)
    assert message_indexes(descriptor) == indexes
    assert indexes_bytes(indexes) == framed
    assert read_indexes(b"\x00\x00" + framed + b"payload", 2) == (indexes, 2 + len(framed))


def test_malformed_message_indexes_are_framing_errors() -> None:
    with pytest.raises(FramingError, match="ends inside its message indexes"):
        read_indexes(b"\x04\x02", 0)
    with pytest.raises(FramingError, match="invalid message index count -1"):
        read_indexes(b"\x01", 0)


def framed(schema_id: int, indexes: bytes, payload: bytes) -> bytes:
    return struct.pack(">bI", 0, schema_id) + indexes + payload


def test_framed_records_decode_through_spark(spark, desc: str) -> None:
    from pyspark.sql import functions as F

    Order = message_class(desc, "shop.Order")
    order = Order(id=7, status=2).SerializeToString()
    header = [{"key": "__value_schema_id", "value": framed(12, b"\x02\x02", b"")}]
    rows = [
        (framed(12, b"\x02\x02", order), None),  # id and indexes before the message
        (order, header),  # id and indexes in the header, the value is the message
        (b"\x05" + order, None),
        (framed(12, b"\x04\x02", b""), None),
        (framed(12, b"\x02\x02", b"\x0a\xff"), None),
    ]
    frame = spark.createDataFrame(
        rows, "value binary, headers array<struct<key: string, value: binary>>"
    )
    for ignore in ("false", "true"):
        opts = {"message-class-name": "shop.Order", "descriptor-file": desc,
                "url": "http://registry:8081", "ignore-parse-errors": ignore}  # fmt: skip
        stages, (row, error, tolerated) = get_format(NAME).decode_stages(
            F.col("value"), COLUMNS, opts, "__dkf_value_", headers=F.col("headers")
        )
        staged = frame.select("*", *[e.alias(n) for n, e in stages[0].items()])
        got = staged.select(row.alias("r"), error.alias("e"), tolerated.alias("t")).collect()
        shipped = {"id": 7, "status": "SHIPPED"}
        assert [None if r["r"] is None else r["r"].asDict() for r in got] == [
            shipped,
            shipped,
            None,
            None,
            None,
        ]
        assert [r["e"] for r in got] == [
            None,
            None,
            "FramingError: unknown magic byte 5 in record: not written by a Confluent Schema "
            "Registry serializer",
            "FramingError: the record ends inside its message indexes",
            "ValueError: not a serialized shop.Order message: Error parsing message with type "
            "'shop.Order'",
        ]
        assert {r["t"] for r in got} == {ignore == "true"}
