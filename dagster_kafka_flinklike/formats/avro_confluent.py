"""The ``avro-confluent`` format: Avro in Confluent's wire format, schemas in a Schema Registry.

Reading, as Flink does: each record names its writer schema (magic byte and schema id, or the
id in a ``__value_schema_id`` / ``__key_schema_id`` header); the schema is fetched from the
registry once per worker and the datum is resolved into the table's reader schema (the one
derived from the columns, or ``avro-confluent.schema``) with Avro's schema-resolution rules:
fields the writer lacks take their defaults, fields the reader lacks are skipped, numbers
widen. Record names need not match (Avro's Java resolver, which Flink uses, ignores them; the
Python path gives the reader's records the writer's names as aliases).
A writer schema registered with references (record types registered under subjects of their
own) is read with the referenced schemas, fetched recursively as Confluent's clients fetch them.
Logical types are those of the reader schema, as in Avro's Java resolver (see
:mod:`._avro_schema`): a writer's ``uuid`` read as a STRING column is its text, whichever path
decodes the record.

A wrong magic byte, an unknown id (the registry answers 404), corrupt bytes or an incompatible
writer schema make the record dirty, with the reason. A registry that cannot be reached, times
out, answers 5xx or refuses the credentials fails the run (see :mod:`._registry`): no record is
counted dirty for it, and the next run reads them.

Writing: the table's schema is registered under ``avro-confluent.subject`` (by default
``<topic>-value`` / ``<topic>-key``) on the driver before any task writes; a registry whose
compatibility level refuses it fails the run with the subject, the level and the registry's
reason, and nothing is written. Each row is framed with the returned id.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import redacted_url
from ..options import Column, avro_schema
from . import _registry, _spark_avro
from ._avro_schema import (
    PRIMITIVES,
    Convert,
    fullname,
    logical_values,
    named_types,
    self_contained,
    without_logical_types,
)
from .avro import Avro, datum_writer
from .base import Options, RecordDecoder, RecordEncoder

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "avro-confluent"
_RETRY_FAILED_FETCH_S = 10.0


def reader_schema(columns: Sequence[Column], settings: Mapping[str, Any]) -> str:
    """The schema records are read into and written with: ``avro-confluent.schema`` or the
    one derived from the columns."""
    given = settings.get("schema")
    if given:
        return str(given)
    return avro_schema(columns, legacy=settings["timestamp_mapping.legacy"], fmt=NAME)


def aligned(reader: Any, writer: Any) -> Any:
    """``reader`` with the name of the ``writer``'s record it lines up with added to each of its
    records as an alias, where the two line up (also where the writer uses a named type again
    by name).

    Avro's Java resolver (Flink's) matches records by position, not name; fastavro checks the
    names (or the reader's aliases), so the reader lists the writer's.

    Example:
        >>> aligned({"type": "record", "name": "record", "fields": []},
        ...         {"type": "record", "name": "Order", "namespace": "shop", "fields": []})
        {'type': 'record', 'name': 'record', 'fields': [], 'aliases': ['shop.Order', 'Order']}
    """
    named = named_types(writer)

    def resolve(node: Any, space: str) -> tuple[Any, str]:
        if isinstance(node, str) and node not in PRIMITIVES:
            full = fullname(node, space)
            found = named.get(full, named.get(node))
            if found is not None:
                return found, (full if full in named else node).rpartition(".")[0]
        return node, space

    def only(node: Any, kind: str, space: str) -> tuple[Any, str] | None:
        branches = node if isinstance(node, list) else [node]
        found = [resolve(b, space) for b in branches]
        of_kind = [(b, s) for b, s in found if isinstance(b, dict) and b.get("type") == kind]
        return of_kind[0] if len(of_kind) == 1 else None

    def walk(node: Any, other: Any, space: str) -> Any:
        if isinstance(node, list):
            return [walk(branch, other, space) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        counterpart = only(other, kind, space) if kind in ("record", "array", "map") else None
        if counterpart is None:
            return node
        match, match_space = counterpart
        if kind == "array":
            return {**node, "items": walk(node["items"], match["items"], match_space)}
        if kind == "map":
            return {**node, "values": walk(node["values"], match["values"], match_space)}
        full = fullname(str(match["name"]), str(match.get("namespace", match_space)))
        inner = full.rpartition(".")[0]
        by_name = {f["name"]: f for f in match.get("fields", [])}
        fields = [
            {**f, "type": walk(f["type"], by_name[f["name"]]["type"], inner)}
            if f["name"] in by_name
            else f
            for f in node.get("fields", [])
        ]
        aliases = [*node.get("aliases", ()), *dict.fromkeys((full, full.rpartition(".")[2]))]
        return {**node, "fields": fields, "aliases": aliases}

    return walk(reader, writer, "")


class _Schemas:
    """A worker's writer schemas by id, each with the reader schema aligned to it and the
    reader's logical types to apply."""

    def __init__(self, conf: Mapping[str, Any], reader: str) -> None:
        self.conf = conf
        self.reader = json.loads(reader)
        self.found: dict[int | str, tuple[Any, Any, Convert | None]] = {}
        self.failed: dict[int | str, tuple[float, str]] = {}

    def get(self, schema: int | str) -> tuple[Any, Any, Convert | None]:
        """(writer, reader, logical values) for writer schema ``schema``.

        Raises:
            LookupError: the registry has no such schema (the record is dirty).
            SchemaRegistryClientError: the registry did not answer (the run fails).
        """
        import fastavro

        if schema in self.found:
            return self.found[schema]
        failed = self.failed.get(schema)
        if failed is not None and time.monotonic() - failed[0] < _RETRY_FAILED_FETCH_S:
            raise LookupError(failed[1])
        registry = _registry.client(self.conf)
        try:
            registered = _registry.request(
                self.conf, f"fetching writer schema {schema}",
                lambda: _registry.fetch_schema(registry, schema),
            )  # fmt: skip
            kind = getattr(registered, "schema_type", None) or "AVRO"
            if kind != "AVRO":
                raise ValueError(f"it is a {kind} schema, not Avro")
            writer = self_contained(self.conf, registry, registered)
        except (_registry.SchemaNotFound, ValueError) as exc:  # the record's own schema
            why = (
                f"writer schema {schema} could not be fetched from the Schema Registry at "
                f"{redacted_url(self.conf.get('url'))}: {exc}"
            )
            self.failed[schema] = (time.monotonic(), why)
            raise LookupError(why) from None
        reader = aligned(self.reader, writer)
        found = (
            fastavro.parse_schema(without_logical_types(writer)),
            fastavro.parse_schema(without_logical_types(reader)),
            logical_values(reader),
        )
        self.found[schema] = found
        return found


class AvroConfluent(Avro):
    """The ``avro-confluent`` format: the ``avro`` format's datum in Confluent's framing, its
    writer schema from the registry (see the module's docstring)."""

    name = NAME
    needs_headers = True

    def __init__(self, written_as: str = NAME) -> None:
        #: The format the messages of writes name (``debezium-avro-confluent`` writes its
        #: envelope with this format).
        self.written_as = written_as

    def native_decoder(self, columns: Sequence[Column], options: Options) -> None:
        """None: a record's writer schema is the one its framing names in the registry, which
        may differ from the table's, so each is decoded per record."""
        return None

    def record_decoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any], side: str
    ) -> RecordDecoder:
        """Per worker: the writer schema by id from the registry, resolved into the table's."""
        conf = dict(settings["registry"])
        reader = reader_schema(columns, settings)

        def make_decoder() -> Callable[[bytes, Any], Any]:
            import fastavro
            from fastavro.read import SchemaResolutionError

            schemas = _Schemas(conf, reader)

            def decode(data: bytes, record_headers: Any) -> Any:
                schema, offset = _registry.writer_id(data, record_headers, side)
                writer, resolved, convert = schemas.get(schema)
                try:
                    datum = fastavro.schemaless_reader(io.BytesIO(data[offset:]), writer, resolved)
                except SchemaResolutionError as exc:
                    raise ValueError(
                        f"writer schema {schema} cannot be read as the table's schema: "
                        f"{str(exc)[:200]}"
                    ) from None
                return datum if convert is None else convert(datum)

            return decode

        return make_decoder

    def record_encoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any]
    ) -> RecordEncoder:
        """The table's schema registered under its subject (on the driver, once per write),
        then each row framed with its id.

        Raises:
            KafkaOptionsError: no subject is known (a table of several topics needs
                ``avro-confluent.subject``).
            SchemaRegistryClientError: the registry refused the schema or did not answer.
        """
        schema = reader_schema(columns, settings)
        schema_id = register(settings, self.written_as, schema)

        def make_encoder() -> Callable[[dict[str, Any]], bytes]:
            write = datum_writer(schema)
            return lambda record: _registry.frame(schema_id, write(record))

        return make_encoder

    def from_avro(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        settings: Mapping[str, Any],
        headers: SparkColumn | None,
        side: str,
    ) -> SparkColumn | None:
        """Where the session has Spark's Avro package, the records written with a version of the
        table's subject decoded by ``from_avro`` (see :mod:`._spark_avro`); a record may also
        carry its schema id in a header (``headers``), which leaves it to the Python stage."""
        if not _spark_avro.from_avro_reads(columns):
            return None
        writers = _spark_avro.subject_writers(settings["registry"], settings.get("subject"))
        if not writers:
            return None
        return _spark_avro.decode_confluent(
            raw, headers, writers, reader_schema(columns, settings), _registry.header_name(side)
        )


def register(settings: Mapping[str, Any], fmt: str, schema: str) -> int:
    """Register Avro ``schema`` under the subject of format ``fmt``'s ``settings``, here on the
    driver: its schema id.

    Raises:
        KafkaOptionsError: no subject is known.
        SchemaRegistryClientError: the registry refused the schema (subject, compatibility level
            and reason in the message) or did not answer.
    """
    from confluent_kafka.schema_registry import Schema

    subject = _registry.required_subject(fmt, settings)
    conf = dict(settings["registry"])
    return _registry.registered(
        conf, fmt, subject,
        lambda: int(_registry.client(conf).register_schema(subject, Schema(schema, "AVRO"))),
    )  # fmt: skip


FORMAT = AvroConfluent()

__all__ = ["FORMAT", "AvroConfluent", "aligned", "reader_schema", "register"]
