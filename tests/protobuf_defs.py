"""Protobuf definitions for the ``protobuf`` format tests, built with descriptor_pb2 (no protoc).

``shop/orders.proto`` (proto3, Java classes ``com.example.shop.OrderProtos$...``) holds every
type Flink maps; ``legacy/readings.proto`` (proto2) has declared defaults and a required field.
:func:`write_descriptor_set` writes both, with ``google/protobuf/timestamp.proto``, as
``protoc --include_imports --descriptor_set_out`` would; :func:`message_class` builds message
classes from that file with the protobuf package alone (independently of the code under test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor as FD

OPTIONAL, REPEATED, REQUIRED = FD.LABEL_OPTIONAL, FD.LABEL_REPEATED, FD.LABEL_REQUIRED


def _field(message: Any, name: str, number: int, kind: int, label: int = OPTIONAL, **kw: Any):
    return message.field.add(name=name, number=number, type=kind, label=label, **kw)


def _map_entry(message: Any, entry: str, key: int, value: int, type_name: str = "") -> None:
    nested = message.nested_type.add(name=entry)
    nested.options.map_entry = True
    _field(nested, "key", 1, key)
    _field(nested, "value", 2, value, **({"type_name": type_name} if type_name else {}))


def orders_file() -> descriptor_pb2.FileDescriptorProto:
    """``shop/orders.proto``: enum Status, messages Item, Order (with nested Address)."""
    f = descriptor_pb2.FileDescriptorProto(
        name="shop/orders.proto",
        package="shop",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )
    f.options.java_package = "com.example.shop"
    f.options.java_outer_classname = "OrderProtos"
    status = f.enum_type.add(name="Status")
    for number, name in enumerate(["STATUS_UNKNOWN", "PAID", "SHIPPED"]):
        status.value.add(name=name, number=number)
    item = f.message_type.add(name="Item")
    _field(item, "sku", 1, FD.TYPE_STRING)
    _field(item, "quantity", 2, FD.TYPE_INT32)
    _field(item, "price", 3, FD.TYPE_DOUBLE)

    order = f.message_type.add(name="Order")
    address = order.nested_type.add(name="Address")
    _field(address, "city", 1, FD.TYPE_STRING)
    _field(address, "zip", 2, FD.TYPE_STRING)
    _map_entry(order, "CountersEntry", FD.TYPE_STRING, FD.TYPE_INT64)
    _map_entry(order, "LinesEntry", FD.TYPE_INT32, FD.TYPE_MESSAGE, ".shop.Item")
    order.oneof_decl.add(name="contact")
    order.oneof_decl.add(name="_note")  # proto3 'optional': a synthetic oneof, after the real ones
    _field(order, "id", 1, FD.TYPE_INT64)
    _field(order, "customer", 2, FD.TYPE_STRING)
    _field(order, "note", 3, FD.TYPE_STRING, proto3_optional=True, oneof_index=1)
    _field(order, "status", 4, FD.TYPE_ENUM, type_name=".shop.Status")
    _field(order, "items", 5, FD.TYPE_MESSAGE, REPEATED, type_name=".shop.Item")
    _field(order, "counters", 6, FD.TYPE_MESSAGE, REPEATED, type_name=".shop.Order.CountersEntry")
    _field(order, "payload", 7, FD.TYPE_BYTES)
    _field(order, "express", 8, FD.TYPE_BOOL)
    _field(order, "weight", 9, FD.TYPE_FLOAT)
    _field(order, "small_unsigned", 10, FD.TYPE_UINT32)
    _field(order, "big_unsigned", 11, FD.TYPE_UINT64)
    _field(order, "delta", 12, FD.TYPE_SINT32)
    _field(order, "checksum", 13, FD.TYPE_FIXED64)
    _field(order, "tags", 14, FD.TYPE_STRING, REPEATED)
    _field(order, "created", 15, FD.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    _field(order, "email", 16, FD.TYPE_STRING, oneof_index=0)
    _field(order, "phone", 17, FD.TYPE_STRING, oneof_index=0)
    _field(order, "lines", 18, FD.TYPE_MESSAGE, REPEATED, type_name=".shop.Order.LinesEntry")
    _field(order, "address", 19, FD.TYPE_MESSAGE, type_name=".shop.Order.Address")
    _field(order, "history", 20, FD.TYPE_ENUM, REPEATED, type_name=".shop.Status")
    _field(order, "rank", 21, FD.TYPE_ENUM, type_name=".shop.Status")
    _field(order, "scores", 22, FD.TYPE_SFIXED32, REPEATED)
    return f


def readings_file() -> descriptor_pb2.FileDescriptorProto:
    """``legacy/readings.proto`` (proto2): ``legacy.Reading`` with defaults and a required field;
    its Java classes are generated one per message (``java_multiple_files``)."""
    f = descriptor_pb2.FileDescriptorProto(name="legacy/readings.proto", package="legacy")
    f.options.java_package = "org.legacy"
    f.options.java_multiple_files = True
    reading = f.message_type.add(name="Reading")
    kind = reading.enum_type.add(name="Kind")
    kind.value.add(name="RAW", number=1)
    kind.value.add(name="AVG", number=2)
    _field(reading, "sensor", 1, FD.TYPE_STRING, REQUIRED)
    _field(reading, "level", 2, FD.TYPE_INT32, default_value="42")
    _field(reading, "unit", 3, FD.TYPE_STRING, default_value="C")
    _field(reading, "samples", 4, FD.TYPE_DOUBLE, REPEATED)
    _field(reading, "kind", 5, FD.TYPE_ENUM, type_name=".legacy.Reading.Kind")
    _field(reading, "flag", 6, FD.TYPE_BOOL)
    # A second message named Item, so the simple name 'Item' is ambiguous across the files.
    item = f.message_type.add(name="Item")
    _field(item, "code", 1, FD.TYPE_STRING)
    return f


def timestamp_file() -> descriptor_pb2.FileDescriptorProto:
    out = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(out)
    return out


def descriptor_set(*files: descriptor_pb2.FileDescriptorProto) -> bytes:
    """The serialized FileDescriptorSet of ``files`` (default: every file above)."""
    chosen = files or (timestamp_file(), orders_file(), readings_file())
    return descriptor_pb2.FileDescriptorSet(file=list(chosen)).SerializeToString()


def write_descriptor_set(directory: Path, *files: descriptor_pb2.FileDescriptorProto) -> str:
    """Write :func:`descriptor_set` to ``directory/shop.desc`` and return its path."""
    path = directory / "shop.desc"
    path.write_bytes(descriptor_set(*files))
    return str(path)


def message_class(path: str, full_name: str) -> Any:
    """The message class of ``full_name`` built from the descriptor set at ``path``."""
    files = descriptor_pb2.FileDescriptorSet.FromString(Path(path).read_bytes()).file
    pool = descriptor_pool.DescriptorPool()
    for f in files:  # dependencies first, as protoc writes them
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))
