"""The Confluent Schema Registry as the registry formats use it: client settings, framing, cache.

The formats talk to the registry only through confluent-kafka's ``SchemaRegistryClient``, with
the settings the options layer derived from Flink's options (``registry_config``). Each Python
worker keeps one client per configuration, so schemas are fetched once per worker, not per
record.

A record names its writer schema with Confluent's framing: magic byte ``0`` and a 4-byte schema
id before the payload, magic byte ``1`` and a 16-byte schema GUID, or (newer Confluent clients)
the same id bytes in the ``__value_schema_id`` / ``__key_schema_id`` header, the payload then
being the whole record.
"""

from __future__ import annotations

import json
import struct
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

MAGIC_ID = 0
MAGIC_GUID = 1
_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


class FramingError(ValueError):
    """A record that does not carry Confluent's schema framing."""


def client(conf: Mapping[str, Any]) -> Any:
    """This worker's ``SchemaRegistryClient`` for ``conf`` (one per configuration)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    key = json.dumps(conf, sort_keys=True, default=str)
    with _LOCK:
        found = _CLIENTS.get(key)
        if found is None:
            found = _CLIENTS[key] = SchemaRegistryClient(dict(conf))
        return found


def header_name(side: str) -> str:
    """The header newer Confluent serializers put the schema id in: ``__value_schema_id``."""
    return f"__{side}_schema_id"


def schema_framing(
    data: bytes, headers: Sequence[Mapping[str, Any]] | None, side: str
) -> tuple[int | str, bytes | None, int]:
    """(schema id or GUID text, the header value carrying it — None when the record does —,
    offset just after the id in the bytes that carry it).

    Protobuf serializers write the message indexes right after the id, wherever it is.

    Raises:
        FramingError: the record has no magic byte Confluent writes, or is too short.
    """
    for header in reversed(headers or ()):
        if header.get("key") == header_name(side) and header.get("value"):
            value = bytes(header["value"])
            schema, end = _parse_id(value, "header " + header_name(side))
            return schema, value, end
    schema, end = _parse_id(data, "record")
    return schema, None, end


def writer_id(
    data: bytes, headers: Sequence[Mapping[str, Any]] | None, side: str
) -> tuple[int | str, int]:
    """(schema id or GUID text, payload offset) of a record in Confluent's framing.

    Raises:
        FramingError: the record has no magic byte Confluent writes, or is too short.
    """
    schema, header, end = schema_framing(data, headers, side)
    return schema, 0 if header is not None else end


def _parse_id(data: bytes, where: str) -> tuple[int | str, int]:
    if not data:
        raise FramingError(f"empty {where}: no Schema Registry framing")
    magic = data[0]
    if magic == MAGIC_ID and len(data) >= 5:
        return struct.unpack(">I", data[1:5])[0], 5
    if magic == MAGIC_GUID and len(data) >= 17:
        return str(uuid.UUID(bytes=bytes(data[1:17]))), 17
    if magic in (MAGIC_ID, MAGIC_GUID):
        raise FramingError(f"{where} of {len(data)} bytes is too short for its schema id")
    raise FramingError(
        f"unknown magic byte {magic} in {where}: not written by a Confluent Schema Registry "
        "serializer"
    )


def required_subject(fmt: str, settings: Mapping[str, Any]) -> str:
    """The subject a registry format's writes register their schema under.

    Raises:
        KafkaOptionsError: no subject is known (a table of several topics needs
            ``<fmt>.subject``).
    """
    from ..errors import KafkaOptionsError

    subject = settings.get("subject")
    if not subject:
        raise KafkaOptionsError(
            f"Format '{fmt}' writes need a subject to register the schema under: set "
            f"'{fmt}.subject' (the default '<topic>-value' needs a table of one topic).",
            keys=(f"{fmt}.subject",),
        )
    return str(subject)


def fetch_schema(registry: Any, schema: int | str) -> Any:
    """The registered schema with id (int) or GUID (text): a ``Schema``."""
    if isinstance(schema, int):
        return registry.get_schema(schema)
    return registry.get_schema_by_guid(schema)


def frame(schema_id: int, payload: bytes) -> bytes:
    """Confluent's framing of ``payload`` written with schema ``schema_id``.

    Example:
        >>> frame(7, b"x")
        b'\\x00\\x00\\x00\\x00\\x07x'
    """
    return struct.pack(">bI", MAGIC_ID, schema_id) + payload


__all__ = [
    "FramingError",
    "client",
    "fetch_schema",
    "frame",
    "header_name",
    "required_subject",
    "schema_framing",
    "writer_id",
]
