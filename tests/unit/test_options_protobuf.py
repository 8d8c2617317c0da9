"""The ``protobuf`` format's options: the descriptor file, the message lookup and Flink's type
mapping, all checked when the table is declared (exact messages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dagster_kafka_flinklike.errors import KafkaOptionsError
from dagster_kafka_flinklike.options import Column, KafkaTableSpec
from tests.protobuf_defs import orders_file, readings_file, write_descriptor_set

pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)

ORDER_FIELDS = (
    "id, customer, note, status, items, counters, payload, express, weight, small_unsigned, "
    "big_unsigned, delta, checksum, tags, created, email, phone, lines, address, history, rank, "
    "scores"
)
#: Every type Flink maps, as columns of shop.Order.
ORDER_COLUMNS = [
    Column("id", "BIGINT"),
    Column("customer", "VARCHAR(40)"),
    Column("note", "STRING"),
    Column("status", "STRING"),
    Column("rank", "INT"),
    Column("items", "ARRAY<ROW<sku STRING, quantity INT, price DOUBLE>>"),
    Column("counters", "MAP<STRING, BIGINT>"),
    Column("payload", "BYTES"),
    Column("express", "BOOLEAN"),
    Column("weight", "FLOAT"),
    Column("small_unsigned", "INT"),
    Column("big_unsigned", "BIGINT"),
    Column("delta", "INT"),
    Column("checksum", "BIGINT"),
    Column("tags", "ARRAY<STRING>"),
    Column("created", "ROW<seconds BIGINT, nanos INT>"),
    Column("email", "STRING"),
    Column("phone", "CHAR(12)"),
    Column("lines", "MAP<INT, ROW<sku STRING, quantity INT>>"),
    Column("address", "ROW<city STRING, zip STRING>"),
    Column("history", "ARRAY<STRING>"),
    Column("scores", "ARRAY<INT>"),
]


@pytest.fixture
def desc(tmp_path: Path) -> str:
    return write_descriptor_set(tmp_path)


def spec(options: dict[str, Any], columns: Any = ORDER_COLUMNS, **kw: Any) -> KafkaTableSpec:
    """A table of topic 'orders' in format 'protobuf' with ``options`` (None removes a key)."""
    base = {"connector": "kafka", "topic": "orders", "format": "protobuf"}
    merged = {k: v for k, v in {**base, **options}.items() if v is not None}
    return KafkaTableSpec.from_options(merged, columns=columns, **kw)


def refused(options: dict[str, Any], columns: Any = ORDER_COLUMNS, **kw: Any) -> KafkaOptionsError:
    with pytest.raises(KafkaOptionsError) as info:
        spec(options, columns, **kw)
    return info.value


def order(desc: str, **more: Any) -> dict[str, Any]:
    return {"protobuf.message-class-name": "shop.Order", "protobuf.descriptor-file": desc, **more}


def test_every_mapped_type_is_accepted_and_the_settings_carry_the_definitions(desc: str) -> None:
    fmt = spec(order(desc)).value_format
    assert fmt.settings["message"] == "shop.Order"
    assert fmt.settings["descriptor-set"] == Path(desc).read_bytes()
    assert fmt.settings["ignore-parse-errors"] is False
    assert fmt.settings["read-default-values"] is False
    assert fmt.settings["write-null-string-literal"] == ""
    assert fmt.ignore_parse_errors is False
    assert spec(order(desc, **{"protobuf.ignore-parse-errors": "true"})).value_format.settings[
        "ignore-parse-errors"
    ]


def test_the_two_definition_options_are_required(desc: str) -> None:
    error = refused({"protobuf.descriptor-file": desc})
    assert str(error) == (
        "Format 'protobuf' requires 'protobuf.message-class-name': the message to read and "
        "write (e.g. 'shop.Order')."
    )
    assert error.keys == ("protobuf.message-class-name",)
    error = refused({"value.protobuf.message-class-name": "shop.Order"})
    assert str(error) == (
        "Format 'protobuf' requires 'protobuf.descriptor-file': the FileDescriptorSet that "
        "defines it (protoc --descriptor_set_out)."
    )
    keyed = {"format": "json", "key.format": "protobuf", "key.fields": "id"}
    error = refused({**keyed, "key.protobuf.descriptor-file": desc})
    assert str(error).startswith("Format 'protobuf' requires 'key.protobuf.message-class-name'")
    assert error.keys == ("key.protobuf.message-class-name",)


def test_a_proto_source_file_is_refused_with_the_way_to_compile_it() -> None:
    error = refused(order("defs/shop/orders.proto"))
    assert str(error) == (
        "Option 'protobuf.descriptor-file' = 'defs/shop/orders.proto' is not supported: a .proto "
        "source file needs the protobuf compiler, which the Python protobuf package does not "
        "include; compile it once into a descriptor set with `protoc --include_imports "
        "--descriptor_set_out=<file>.desc <file>.proto` and name that file."
    )
    assert error.keys == ("protobuf.descriptor-file",)


def test_unreadable_or_invalid_descriptor_files(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.desc")
    assert str(refused(order(missing))) == (
        f"Option 'protobuf.descriptor-file': cannot read {missing!r} (No such file or directory)."
    )
    not_a_set = tmp_path / "text.desc"
    for content in (b'syntax = "proto3";\nmessage Order { int64 id = 1; }\n', b""):
        not_a_set.write_bytes(content)
        assert str(refused(order(str(not_a_set)))) == (
            f"Option 'protobuf.descriptor-file': {str(not_a_set)!r} is not a FileDescriptorSet "
            "(write one with `protoc --include_imports --descriptor_set_out=<file>.desc "
            "<file>.proto`)."
        )
    without_imports = write_descriptor_set(tmp_path, orders_file())
    assert str(refused(order(without_imports))) == (
        f"Option 'protobuf.descriptor-file': {without_imports!r} lacks "
        "'google/protobuf/timestamp.proto', which 'shop/orders.proto' imports (run protoc with "
        "--include_imports)."
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("shop.Order", "shop.Order"),
        (".shop.Order", "shop.Order"),
        ("shop.Order.Address", "shop.Order.Address"),
        # The Java classes protoc generates: outer class OrderProtos, nested classes with $ or .
        ("com.example.shop.OrderProtos$Order", "shop.Order"),
        ("com.example.shop.OrderProtos.Order", "shop.Order"),
        ("com.example.shop.OrderProtos$Order$Address", "shop.Order.Address"),
        ("com.example.shop.OrderProtos$Item", "shop.Item"),
        ("org.legacy.Reading", "legacy.Reading"),  # java_multiple_files: no outer class
        ("org.legacy.Item", "legacy.Item"),
        # Otherwise the last segment, when exactly one message has that simple name.
        ("com.acme.Reading", "legacy.Reading"),
        ("Address", "shop.Order.Address"),
    ],
)
def test_message_class_name_lookup(desc: str, name: str, message: str) -> None:
    options = {"protobuf.message-class-name": name, "protobuf.descriptor-file": desc}
    assert spec(options, columns=None).value_format.settings["message"] == message


def test_a_name_matching_no_message_or_several_fails_listing_the_messages(desc: str) -> None:
    error = refused({**order(desc), "protobuf.message-class-name": "com.example.Status"})
    assert str(error) == (
        "Option 'protobuf.message-class-name' = 'com.example.Status' names no message of "
        f"{desc!r} ('protobuf.descriptor-file'); its messages: google.protobuf.Timestamp, "
        "legacy.Item, legacy.Reading, shop.Item, shop.Order, shop.Order.Address."
    )
    assert error.keys == ("protobuf.message-class-name",)
    error = refused({**order(desc), "protobuf.message-class-name": "com.acme.Item"})
    assert str(error) == (
        "Option 'protobuf.message-class-name' = 'com.acme.Item' matches several messages of "
        f"{desc!r} ('protobuf.descriptor-file'): shop.Item, legacy.Item; give the message's full "
        "name."
    )


P = "Format 'protobuf' ('format'): "


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (
            Column("idx", "BIGINT"),
            f"column 'idx' does not exist in protobuf message 'shop.Order' (its fields: "
            f"{ORDER_FIELDS}).",
        ),
        (
            Column("id", "INT"),
            "column 'id' (INT) cannot hold protobuf field 'shop.Order.id' (int64): an int64 "
            "field maps to BIGINT.",
        ),
        (
            Column("id", "DECIMAL(20, 0)"),
            "column 'id' (DECIMAL(20, 0)) cannot hold protobuf field 'shop.Order.id' (int64): an "
            "int64 field maps to BIGINT.",
        ),
        (
            Column("weight", "DOUBLE"),
            "column 'weight' (DOUBLE) cannot hold protobuf field 'shop.Order.weight' (float): a "
            "float field maps to FLOAT.",
        ),
        (
            Column("small_unsigned", "BIGINT"),
            "column 'small_unsigned' (BIGINT) cannot hold protobuf field "
            "'shop.Order.small_unsigned' (uint32): a uint32 field maps to INT.",
        ),
        (
            Column("status", "DOUBLE"),
            "column 'status' (DOUBLE) cannot hold protobuf field 'shop.Order.status' (enum "
            "shop.Status): an enum maps to CHAR / VARCHAR / STRING / TINYINT / SMALLINT / INT / "
            "BIGINT.",
        ),
        (
            Column("payload", "STRING"),
            "column 'payload' (STRING) cannot hold protobuf field 'shop.Order.payload' (bytes): a "
            "bytes field maps to BINARY / VARBINARY / BYTES.",
        ),
        (
            Column("customer", "BYTES"),
            "column 'customer' (BYTES) cannot hold protobuf field 'shop.Order.customer' (string): "
            "a string field maps to CHAR / VARCHAR / STRING.",
        ),
        (
            Column("tags", "STRING"),
            "column 'tags' (STRING) cannot hold protobuf field 'shop.Order.tags' (repeated "
            "string): a repeated field maps to ARRAY.",
        ),
        (
            Column("counters", "ARRAY<STRING>"),
            "column 'counters' (ARRAY<STRING>) cannot hold protobuf field 'shop.Order.counters' "
            "(map<string, int64>): a map field maps to MAP.",
        ),
        (
            Column("counters", "MAP<STRING, INT>"),
            "column 'counters{value}' (INT) cannot hold protobuf field "
            "'shop.Order.CountersEntry.value' (int64): an int64 field maps to BIGINT.",
        ),
        (
            Column("lines", "MAP<BIGINT, ROW<sku STRING>>"),
            "column 'lines{key}' (BIGINT) cannot hold protobuf field 'shop.Order.LinesEntry.key' "
            "(int32): an int32 field maps to INT.",
        ),
        (
            Column("lines", "MAP<INT, ROW<sku INT>>"),
            "column 'lines{value}.sku' (INT) cannot hold protobuf field 'shop.Item.sku' (string): "
            "a string field maps to CHAR / VARCHAR / STRING.",
        ),
        (
            Column("items", "ARRAY<STRING>"),
            "column 'items[]' (STRING) cannot hold protobuf field 'shop.Order.items' (repeated "
            "shop.Item): a message maps to ROW.",
        ),
        (
            Column("items", "ARRAY<ROW<sku STRING, qty INT>>"),
            "column 'items[].qty' does not exist in protobuf message 'shop.Item' (its fields: "
            "sku, quantity, price).",
        ),
        (
            Column("address", "ROW<town STRING>"),
            "column 'address.town' does not exist in protobuf message 'shop.Order.Address' (its "
            "fields: city, zip).",
        ),
        (
            Column("created", "TIMESTAMP_LTZ(3)"),
            "column 'created' (TIMESTAMP_LTZ(3)) cannot hold protobuf field 'shop.Order.created' "
            "(google.protobuf.Timestamp): a message maps to ROW.",
        ),
        (
            Column("created", "ROW<seconds INT, nanos INT>"),
            "column 'created.seconds' (INT) cannot hold protobuf field "
            "'google.protobuf.Timestamp.seconds' (int64): an int64 field maps to BIGINT.",
        ),
    ],
)
def test_columns_the_message_cannot_hold_fail_at_declaration(
    desc: str, column: Column, message: str
) -> None:
    # A valid column first: the check goes on past it.
    first = Column("express", "BOOLEAN")
    error = refused(order(desc), columns=[first, column])
    assert str(error) == P + message
    assert error.keys == ("format",)


def test_the_option_naming_the_format_is_the_one_at_fault(desc: str) -> None:
    wrong = [Column("id", "STRING"), Column("customer", "STRING")]
    error = refused({"format": None, "value.format": "protobuf", **order(desc)}, columns=wrong)
    assert error.keys == ("value.format",)
    assert str(error).startswith("Format 'protobuf' ('value.format'): column 'id' (STRING)")
    keyed = {
        "format": "json",
        "key.format": "protobuf",
        "key.fields": "customer",
        "key.protobuf.message-class-name": "legacy.Reading",
        "key.protobuf.descriptor-file": desc,
    }
    error = refused(keyed, columns=wrong)
    assert error.keys == ("key.format",)
    assert str(error) == (
        "Format 'protobuf' ('key.format'): column 'customer' does not exist in protobuf message "
        "'legacy.Reading' (its fields: sensor, level, unit, samples, kind, flag)."
    )


def test_field_prefixes_are_removed_before_matching(desc: str) -> None:
    keyed = {
        **order(desc),
        "key.format": "protobuf",
        "key.fields": "k_sensor",
        "key.fields-prefix": "k_",
        "value.fields-include": "EXCEPT_KEY",
        "key.protobuf.message-class-name": "org.legacy.Reading",
        "key.protobuf.descriptor-file": desc,
    }
    columns = [Column("k_sensor", "STRING"), Column("id", "BIGINT")]
    built = spec(keyed, columns=columns)
    assert built.key_format is not None and built.key_format.settings["message"] == "legacy.Reading"
    error = refused({**keyed, "key.fields-prefix": None}, columns=columns)
    assert str(error) == (
        "Format 'protobuf' ('key.format'): column 'k_sensor' does not exist in protobuf message "
        "'legacy.Reading' (its fields: sensor, level, unit, samples, kind, flag)."
    )
    prefixed = spec(
        {**order(desc), "value.fields-prefix": "v_"}, columns=[Column("v_id", "BIGINT")]
    )
    assert prefixed.value_format.settings["message"] == "shop.Order"


def test_a_descriptor_set_with_only_the_needed_files_is_enough(tmp_path: Path) -> None:
    path = write_descriptor_set(tmp_path, readings_file())
    options = {"protobuf.message-class-name": "Reading", "protobuf.descriptor-file": path}
    built = spec(options, columns=[Column("sensor", "STRING"), Column("kind", "TINYINT")])
    assert built.value_format.settings["message"] == "legacy.Reading"
