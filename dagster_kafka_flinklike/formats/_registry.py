"""The Confluent Schema Registry as the registry formats use it: client settings, framing, cache.

The formats talk to the registry only through confluent-kafka's ``SchemaRegistryClient``, with
the settings the options layer derived from Flink's options (``registry_config``). Each Python
worker keeps one client per configuration, so schemas are fetched once per worker, not per
record.

A record names its writer schema with Confluent's framing: magic byte ``0`` and a 4-byte schema
id before the payload, magic byte ``1`` and a 16-byte schema GUID, or (newer Confluent clients)
the same id bytes in the ``__value_schema_id`` / ``__key_schema_id`` header, the payload then
being the whole record.

Every request goes through :func:`request`, which decides with
:func:`~dagster_kafka_flinklike.errors.classify_registry_error` what a failure is: a schema,
subject or version the registry does not have (404) is :class:`SchemaNotFound`, which makes the
record naming it dirty; anything else (unreachable, timed out, 5xx, credentials refused) is a
:class:`~dagster_kafka_flinklike.errors.SchemaRegistryClientError` that fails the run. Confluent's
own deserializer raises one ``SerializationException`` for all of these, and Flink's
``avro-confluent`` fails the job on any of them (it has no option to skip a record); here an
unknown id is the record's own fault (it can never be read, whatever the registry's health),
counted dirty and failing the run unless errors are ignored, while a registry that does not
answer never costs a record.
"""

from __future__ import annotations

import json
import struct
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import (
    SchemaRegistryClientError,
    SchemaRegistryErrorKind,
    classify_registry_error,
    redacted_url,
)

T = TypeVar("T")

MAGIC_ID = 0
MAGIC_GUID = 1
_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


class FramingError(ValueError):
    """A record that does not carry Confluent's schema framing."""


class SchemaNotFound(LookupError):
    """The registry has no such schema, subject or version (HTTP 404): a record naming it is
    dirty."""


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or "no details"
    return redacted_url(f"{type(exc).__name__}: {text}")[:300]


def request(conf: Mapping[str, Any], what: str, call: Callable[[], T]) -> T:
    """``call()``, a request to the registry of ``conf`` doing ``what`` (for the messages).

    Raises:
        SchemaNotFound: the registry answered that the schema, subject or version does not
            exist.
        SchemaRegistryClientError: any other failure (unreachable, timed out, 5xx, credentials
            refused): the run fails, naming the registry (credentials hidden) and ``what``.
    """
    try:
        return call()
    except Exception as exc:
        kind = classify_registry_error(exc)
        if kind is SchemaRegistryErrorKind.NOT_FOUND:
            raise SchemaNotFound(f"{what}: {_reason(exc)}") from None
        raise SchemaRegistryClientError(
            f"{what} failed: {_reason(exc)}. Nothing was committed; the next run reads the same "
            "records.",
            url=conf.get("url"),
            kind=kind,
        ) from exc


def referenced(conf: Mapping[str, Any], registry: Any, schema: Any) -> list[Any]:
    """The schemas ``schema`` references, recursively, each once, every one after those it
    references (as Confluent's clients resolve them): ``Schema`` objects.

    Raises:
        SchemaNotFound: a referenced subject or version does not exist.
        SchemaRegistryClientError: the registry did not answer.
    """
    found: dict[tuple[str, int], Any] = {}

    def visit(references: Sequence[Any]) -> None:
        for ref in references or ():
            key = (str(ref.subject), int(ref.version))
            if key in found:
                continue
            what = f"fetching reference {ref.name!r} ({ref.subject!r} version {ref.version})"
            version = request(conf, what, version_of(registry, ref.subject, ref.version))
            found[key] = None
            visit(version.schema.references)
            found[key] = version.schema

    visit(getattr(schema, "references", None) or ())
    return list(found.values())


def version_of(registry: Any, subject: str, version: int) -> Callable[[], Any]:
    """A request for version ``version`` of ``subject`` (a ``RegisteredSchema``), for
    :func:`request`."""
    return lambda: registry.get_version(subject, version)


def compatibility_level(registry: Any, subject: str) -> str:
    """The compatibility level the registry applies to ``subject`` (its own, else the global
    one); ``unknown`` when the registry does not say."""
    for call in (lambda: registry.get_compatibility(subject), registry.get_compatibility):
        try:
            level = call()
        except Exception:  # no level of the subject's own: the global one applies
            continue
        if level:
            return str(level)
    return "unknown"


def registered(conf: Mapping[str, Any], fmt: str, subject: str, register: Callable[[], T]) -> T:
    """``register()``: the table's schema registered under ``subject`` (on the driver, before any
    task writes).

    Raises:
        SchemaRegistryClientError: the registry refused the schema (the message names the
            subject, its compatibility level and the registry's reason), or did not answer.
    """
    try:
        return register()
    except Exception as exc:
        kind = classify_registry_error(exc)
        if kind is SchemaRegistryErrorKind.INCOMPATIBLE:
            level = compatibility_level(client(conf), subject)
            reason = getattr(exc, "error_message", None) or str(exc)
            raise SchemaRegistryClientError(
                f"subject {subject!r} refused the schema of format '{fmt}': its compatibility "
                f"level is {level} and the registry says: {redacted_url(reason)[:400]}. Nothing "
                "was written. Make the change compatible, or change the subject's level.",
                url=conf.get("url"),
                kind=kind,
            ) from None
        raise SchemaRegistryClientError(
            f"registering the schema of format '{fmt}' under subject {subject!r} failed: "
            f"{_reason(exc)}. Nothing was written.",
            url=conf.get("url"),
            kind=kind,
        ) from exc


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
    "SchemaNotFound",
    "client",
    "compatibility_level",
    "fetch_schema",
    "frame",
    "header_name",
    "referenced",
    "registered",
    "request",
    "required_subject",
    "schema_framing",
    "version_of",
    "writer_id",
]
