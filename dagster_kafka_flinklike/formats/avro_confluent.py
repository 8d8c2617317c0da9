"""The ``avro-confluent`` format: Avro in Confluent's wire format, schemas in a Schema Registry.

Reading, as Flink does: each record names its writer schema (magic byte and schema id, or the
id in a ``__value_schema_id`` / ``__key_schema_id`` header); the schema is fetched from the
registry once per worker and the datum is resolved into the table's reader schema (the one
derived from the columns, or ``avro-confluent.schema``) with Avro's schema-resolution rules:
fields the writer lacks take their defaults, fields the reader lacks are skipped, numbers
widen. Record names need not match (Avro's Java resolver, which Flink uses, ignores them).
A wrong magic byte, an unknown id, an unreachable registry or an incompatible writer schema
make the record dirty, with the reason.

Writing: the table's schema is registered under ``avro-confluent.subject`` (by default
``<topic>-value`` / ``<topic>-key``) on first use, which the registry's compatibility level may
refuse (the run then fails, saying why), and each row is framed with the returned id.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FormatSpec, avro_schema
from . import _registry, _spark_avro
from ._python import decode_udf, encode_udf, one_expression, python_stage

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "avro-confluent"
#: The format reads the records' headers (schema ids in headers).
NEEDS_HEADERS = True
_RETRY_FAILED_FETCH_S = 10.0


def _settings(options: FormatSpec | Mapping[str, Any]) -> Mapping[str, Any]:
    from . import format_settings

    return format_settings(NAME, options)


def reader_schema(columns: Sequence[Column], settings: Mapping[str, Any]) -> str:
    """The schema records are read into and written with: ``avro-confluent.schema`` or the
    one derived from the columns."""
    given = settings.get("schema")
    if given:
        return str(given)
    return avro_schema(columns, legacy=settings["timestamp_mapping.legacy"], fmt=NAME)


def _branches(schema: Any) -> list[Any]:
    return schema if isinstance(schema, list) else [schema]


def _only(schema: Any, kind: str) -> Any:
    found = [s for s in _branches(schema) if isinstance(s, dict) and s.get("type") == kind]
    return found[0] if len(found) == 1 else None


def aligned(reader: Any, writer: Any) -> Any:
    """``reader`` with its record names set to ``writer``'s where the two line up.

    Avro's Java resolver (Flink's) matches records by position, not name; fastavro checks the
    names, so the reader takes the writer's.

    Example:
        >>> aligned({"type": "record", "name": "record", "fields": []},
        ...         {"type": "record", "name": "Order", "namespace": "shop", "fields": []})
        {'type': 'record', 'name': 'Order', 'fields': [], 'namespace': 'shop'}
    """
    if isinstance(reader, list):
        return [aligned(branch, writer) for branch in reader]
    if not isinstance(reader, dict):
        return reader
    kind = reader.get("type")
    if kind == "record":
        counterpart = _only(writer, "record")
        if counterpart is None:
            return reader
        by_name = {f["name"]: f for f in counterpart.get("fields", [])}
        fields = [
            {**f, "type": aligned(f["type"], by_name[f["name"]]["type"])}
            if f["name"] in by_name
            else f
            for f in reader.get("fields", [])
        ]
        out = {**reader, "name": counterpart["name"], "fields": fields}
        out.pop("namespace", None)
        if "namespace" in counterpart:
            out["namespace"] = counterpart["namespace"]
        return out
    if kind == "array" and (items := _only(writer, "array")) is not None:
        return {**reader, "items": aligned(reader["items"], items["items"])}
    if kind == "map" and (values := _only(writer, "map")) is not None:
        return {**reader, "values": aligned(reader["values"], values["values"])}
    return reader


class _Schemas:
    """A worker's writer schemas by id, each with the reader schema aligned to it."""

    def __init__(self, conf: Mapping[str, Any], reader: str) -> None:
        self.conf = conf
        self.reader = json.loads(reader)
        self.found: dict[int | str, tuple[Any, Any]] = {}
        self.failed: dict[int | str, tuple[float, str]] = {}

    def get(self, schema: int | str) -> tuple[Any, Any]:
        import fastavro

        if schema in self.found:
            return self.found[schema]
        failed = self.failed.get(schema)
        if failed is not None and time.monotonic() - failed[0] < _RETRY_FAILED_FETCH_S:
            raise LookupError(failed[1])
        try:
            registered = _registry.fetch_schema(_registry.client(self.conf), schema)
            writer = json.loads(registered.schema_str)
        except Exception as exc:  # not found, registry down, not JSON: the record is dirty
            why = (
                f"writer schema {schema} could not be fetched from the Schema Registry at "
                f"{self.conf.get('url')}: {type(exc).__name__}: {exc}"
            )
            self.failed[schema] = (time.monotonic(), why)
            raise LookupError(why) from None
        if getattr(registered, "schema_type", "AVRO") not in (None, "AVRO"):
            why = f"schema {schema} is a {registered.schema_type} schema, not Avro"
            self.failed[schema] = (float("inf"), why)
            raise LookupError(why)
        pair = (
            fastavro.parse_schema(writer),
            fastavro.parse_schema(aligned(self.reader, writer)),
        )
        self.found[schema] = pair
        return pair


def skipped(raw: SparkColumn, options: FormatSpec | Mapping[str, Any]) -> SparkColumn:
    """Records without a value yield no row (as Flink's Avro formats read a null)."""
    return raw.isNull()


def _python_decoder(columns: Sequence[Column], settings: Mapping[str, Any], side: str) -> Any:
    """The per-record decoder (writer schema by id from the registry, resolved into the
    table's), as a Spark function of the raw bytes (and headers)."""
    conf = dict(settings["registry"])
    reader = reader_schema(columns, settings)

    def make_decoder() -> Callable[[bytes, Any], Any]:
        import fastavro
        from fastavro.read import SchemaResolutionError

        schemas = _Schemas(conf, reader)

        def decode(data: bytes, record_headers: Any) -> Any:
            schema, offset = _registry.writer_id(data, record_headers, side)
            writer, resolved = schemas.get(schema)
            try:
                return fastavro.schemaless_reader(io.BytesIO(data[offset:]), writer, resolved)
            except SchemaResolutionError as exc:
                raise ValueError(
                    f"writer schema {schema} cannot be read as the table's schema: {str(exc)[:200]}"
                ) from None

        return decode

    return decode_udf(make_decoder, columns)


def decode_stages(
    raw: SparkColumn,
    columns: Sequence[Column],
    options: FormatSpec | Mapping[str, Any],
    prefix: str,
    headers: SparkColumn | None = None,
    side: str = "value",
) -> tuple[list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn, SparkColumn]]:
    """Decode once per record into a staged column, then read the row and error from it.

    ``headers`` (the records' headers) let a record carry its schema id in a header. Where the
    session has Spark's Avro package, records written with a version of the table's subject are
    decoded by ``from_avro`` first (see :mod:`._spark_avro`).
    """

    settings = _settings(options)
    decoder = _python_decoder(columns, settings, side)
    legacy = settings["timestamp_mapping.legacy"]
    if _spark_avro.usable(columns):
        writers = _spark_avro.subject_writers(settings["registry"], settings.get("subject"))
        if writers:
            fast = _spark_avro.decode_confluent(
                raw, headers, writers, reader_schema(columns, settings),
                _registry.header_name(side),
            )  # fmt: skip
            return _spark_avro.staged(prefix, fast, raw, decoder, headers, columns, legacy)
    return python_stage(f"{prefix}avro", decoder(raw, headers), False)


def decode(
    raw: SparkColumn, columns: Sequence[Column], options: FormatSpec | Mapping[str, Any]
) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
    """(row struct, error, tolerated) of each record as one expression, decoded in Python
    (:func:`decode_stages` is the pipeline's path).

    Example:
        >>> struct, error, _ = decode(F.col("value"), columns, spec.value_format)  # doctest: +SKIP
    """
    decoder = _python_decoder(columns, _settings(options), "value")
    return one_expression(python_stage("avro", decoder(raw), False))


def encode(
    fields: Sequence[tuple[SparkColumn, Column]], options: FormatSpec | Mapping[str, Any]
) -> SparkColumn:
    """Each row as Confluent-framed Avro, its schema registered under the table's subject.

    Example:
        >>> value = encode([(F.col("v"), Column("v", "INT"))], spec.value_format)  # doctest: +SKIP

    Raises:
        KafkaOptionsError: no subject is known (a table of several topics needs
            ``avro-confluent.subject``).
    """
    settings = _settings(options)
    subject = _registry.required_subject(NAME, settings)
    conf = dict(settings["registry"])
    schema = reader_schema([c for _, c in fields], settings)

    def make_encoder() -> Callable[[dict[str, Any]], bytes]:
        from confluent_kafka.schema_registry import Schema

        from .avro import datum_writer

        schema_id = _registry.client(conf).register_schema(subject, Schema(schema, "AVRO"))
        write = datum_writer(schema)
        return lambda record: _registry.frame(schema_id, write(record))

    return encode_udf(make_encoder, fields)


__all__ = ["aligned", "decode", "decode_stages", "encode", "reader_schema", "skipped"]
