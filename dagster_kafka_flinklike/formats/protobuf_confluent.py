"""The ``protobuf-confluent`` format: protobuf in Confluent's wire format, with a Schema Registry.

Flink has no such format yet (FLINK-34440 proposes it under this name); it reads what
Confluent's ``KafkaProtobufSerializer`` writes and writes what its deserializer reads. The
message, its columns and its conversions are those of the ``protobuf`` format (see
:mod:`.protobuf`): ``protobuf-confluent.message-class-name`` and ``.descriptor-file``.

Reading: each record carries magic byte ``0`` and a schema id (or ``1`` and a GUID; or either in
a ``__value_schema_id`` / ``__key_schema_id`` header), then the message indexes naming the
message within its ``.proto`` file, then the message. Protobuf decodes by field number, so the
record is read as the table's message without fetching the writer's schema (any writer
compatible with it reads correctly). A record without that framing is dirty, with the reason.

Writing: the message's file is registered (as a serialized ``FileDescriptorProto``, schema type
``PROTOBUF``) under ``protobuf-confluent.subject`` (by default ``<topic>-value`` /
``<topic>-key``), each file it imports under its own name as a reference, on the driver before
any task writes (a refusal fails the run with the subject, its compatibility level and the
registry's reason; nothing is written), and every record is framed with the returned id and the
message's indexes.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column
from ..options.protobuf_descriptors import file_protos, message_descriptor
from . import _registry
from .base import Options, RecordDecoder, RecordEncoder
from .protobuf import Protobuf, record_reader, record_writer

if TYPE_CHECKING:  # pragma: no cover
    pass

NAME = "protobuf-confluent"


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """A zigzag varint at ``offset``: (value, offset after it)."""
    value, shift = 0, 0
    while True:
        if offset >= len(data):
            raise _registry.FramingError("the record ends inside its message indexes")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), offset
        if shift > 63:
            raise _registry.FramingError("a message index is not a varint")


def read_indexes(data: bytes, offset: int) -> tuple[list[int], int]:
    """The message indexes at ``offset`` (Confluent's framing) and the offset after them.

    Example:
        >>> read_indexes(b"\\x04\\x02\\x00rest", 0)
        ([1, 0], 3)

    Raises:
        FramingError: the indexes are truncated or malformed.
    """
    count, offset = _varint(data, offset)
    if count == 0:
        return [0], offset
    if not 0 < count <= 1000:
        raise _registry.FramingError(f"invalid message index count {count}")
    indexes = []
    for _ in range(count):
        index, offset = _varint(data, offset)
        indexes.append(index)
    return indexes, offset


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def indexes_bytes(indexes: Sequence[int]) -> bytes:
    """Message indexes in Confluent's framing (``[0]``, the first message, is one zero byte).

    Example:
        >>> indexes_bytes([0]), indexes_bytes([1, 0])
        (b'\\x00', b'\\x04\\x02\\x00')
    """
    if list(indexes) == [0]:
        return b"\x00"
    return _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)


def message_indexes(descriptor: Any) -> list[int]:
    """The path of a message within its file: its index among the file's messages, then among
    each enclosing message's nested messages (Confluent's message indexes).

    Example:
        >>> message_indexes(pool.FindMessageTypeByName("shop.Order.Address"))  # doctest: +SKIP
        [1, 0]
    """
    path = []
    while descriptor.containing_type is not None:
        parent = descriptor.containing_type
        path.append([m.full_name for m in parent.nested_types].index(descriptor.full_name))
        descriptor = parent
    top = [m.full_name for m in descriptor.file.message_types_by_name.values()]
    path.append(top.index(descriptor.full_name))
    return path[::-1]


def register(client: Any, subject: str, data: bytes, file_name: str) -> int:
    """Register file ``file_name`` of the descriptor set ``data`` under ``subject``, each file it
    imports first under its own name (its reference); the schema id.

    Example:
        >>> register(client, "orders-value", data, "shop/orders.proto")  # doctest: +SKIP
        4
    """
    from confluent_kafka.schema_registry import Schema, SchemaReference

    files = {f.name: f for f in file_protos(data)}

    def schema(name: str) -> Any:
        references = []
        for dependency in files[name].dependency:
            imported = schema(dependency)
            client.register_schema(dependency, imported)
            version = client.lookup_schema(dependency, imported).version
            references.append(SchemaReference(dependency, dependency, version))
        text = base64.b64encode(files[name].SerializeToString()).decode("ascii")
        return Schema(text, "PROTOBUF", references)

    return int(client.register_schema(subject, schema(file_name)))


class ProtobufConfluent(Protobuf):
    """The ``protobuf-confluent`` format: the ``protobuf`` format's messages in Confluent's
    framing (see the module's docstring)."""

    name = NAME
    needs_headers = True

    def native_decoder(self, columns: Sequence[Column], options: Options) -> None:
        """None: a record starts with the registry's framing, so each is decoded per record."""
        return None

    def record_decoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any], side: str
    ) -> RecordDecoder:
        """Per worker: the framing (schema id, in the record or a header, then the message
        indexes) skipped, then the message parsed as the ``protobuf`` format parses it."""
        conf = dict(settings)

        def make_decoder() -> Callable[[bytes, Any], Any]:
            read = record_reader(columns, conf)

            def decode(data: bytes, record_headers: Any) -> Any:
                _, header, end = _registry.schema_framing(data, record_headers, side)
                _, end = read_indexes(header if header is not None else data, end)
                return read(data if header is not None else data[end:])

            return decode

        return make_decoder

    def record_encoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any]
    ) -> RecordEncoder:
        """The message's file registered under the table's subject (on the driver, once per
        write), then each row serialized and framed with its id and the message's indexes.

        Raises:
            KafkaOptionsError: no subject is known (a table of several topics needs
                ``protobuf-confluent.subject``).
            SchemaRegistryClientError: the registry refused the schema or did not answer.
        """
        subject = _registry.required_subject(NAME, settings)
        conf = dict(settings)
        registry = dict(settings["registry"])
        descriptor = message_descriptor(conf["descriptor-set"], conf["message"])
        schema_id = _registry.registered(
            registry, NAME, subject,
            lambda: register(_registry.client(registry), subject, conf["descriptor-set"],
                             descriptor.file.name),
        )  # fmt: skip
        framing = indexes_bytes(message_indexes(descriptor))

        def make_encoder() -> Callable[[dict[str, Any]], bytes]:
            write = record_writer(columns, conf)
            return lambda row: _registry.frame(schema_id, framing + write(row))

        return make_encoder


FORMAT = ProtobufConfluent()

__all__ = [
    "FORMAT",
    "ProtobufConfluent",
    "indexes_bytes",
    "message_indexes",
    "read_indexes",
    "register",
]
