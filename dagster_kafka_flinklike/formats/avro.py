"""The ``avro`` format: each record is one Avro datum of the schema Flink derives from the columns.

As Flink's ``avro`` format: the writer's schema is the table's (see ``options.avro_schema``), so a
producer must write exactly that schema; ``avro.encoding`` chooses Avro's binary or JSON
encoding. Records are decoded and encoded with fastavro in the executors' Python workers (see
:mod:`._python`); a record that does not decode is dirty, with fastavro's reason. A flat table's
binary datums are first decoded natively in the reading tasks (the record scanner, see
:mod:`._scanners`), then by Spark's ``from_avro`` where the session has it (see
:mod:`._spark_avro`); each later decoding reads only the records the earlier ones left.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, avro_schema
from . import _spark_avro
from .base import (
    Decoded,
    NativeDecoder,
    Options,
    PythonFormat,
    RecordDecoder,
    RecordEncoder,
    Stages,
    values_only,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "avro"


def datum_reader(schema: str, encoding: str = "binary") -> Callable[[bytes], Any]:
    """A function reading one Avro datum of ``schema``.

    Example:
        >>> schema = avro_schema([Column("v", "INT")])
        >>> datum_reader(schema)(datum_writer(schema)({"v": 7}))
        {'v': 7}
    """
    import fastavro

    parsed = fastavro.parse_schema(json.loads(schema))
    if encoding == "json":

        def read_json(data: bytes) -> Any:
            records = fastavro.json_reader(io.StringIO(data.decode("utf-8")), parsed)
            return next(iter(records))

        return read_json

    def read(data: bytes) -> Any:
        try:
            return fastavro.schemaless_reader(io.BytesIO(data), parsed)
        except Exception as exc:  # fastavro raises many types on corrupt bytes: all are dirty
            raise ValueError(
                f"not an Avro datum of the schema ({type(exc).__name__}: {exc})"
            ) from None

    return read


def datum_writer(schema: str, encoding: str = "binary") -> Callable[[dict[str, Any]], bytes]:
    """A function writing one record as an Avro datum of ``schema``.

    Example:
        >>> datum_writer(avro_schema([Column("v", "INT NOT NULL")]))({"v": 1})
        b'\\x02'
    """
    import fastavro

    parsed = fastavro.parse_schema(json.loads(schema))
    if encoding == "json":

        def write_json(record: dict[str, Any]) -> bytes:
            out = io.StringIO()
            fastavro.json_writer(out, parsed, [record])
            return out.getvalue().strip().encode("utf-8")

        return write_json

    def write(record: dict[str, Any]) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        return out.getvalue()

    return write


def _schema(columns: Sequence[Column], settings: Mapping[str, Any]) -> str:
    """The table's Avro schema, which records are read with and written with."""
    return avro_schema(columns, legacy=settings["timestamp_mapping.legacy"], fmt=NAME)


class Avro(PythonFormat):
    """The ``avro`` format (see the module's docstring); ``avro-confluent`` is its datum in
    Confluent's framing (:class:`.avro_confluent.AvroConfluent`)."""

    name = NAME
    stage = "avro"

    def native_decoder(self, columns: Sequence[Column], options: Options) -> NativeDecoder | None:
        """A decoder of whole Arrow batches of binary datums (the record scanner, C) that the
        reader's tasks run where the bytes are, for a flat table of scalar, text, bytes,
        DECIMAL, DATE, TIME and TIMESTAMP columns; None otherwise (``avro.encoding`` json, a
        nested column: see :mod:`._scanners`). A record it leaves null is decoded per record."""
        from ._scanners import avro_decoder

        settings = self.checked_settings(columns, options)
        if settings["encoding"] != "binary":
            return None
        return avro_decoder(columns, _schema(columns, settings))

    def record_decoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any], side: str
    ) -> RecordDecoder:
        """A fastavro reader of the table's schema, per worker."""
        schema, encoding = _schema(columns, settings), settings["encoding"]
        return values_only(lambda: datum_reader(schema, encoding))

    def record_encoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any]
    ) -> RecordEncoder:
        """A fastavro writer of the columns' schema, per worker."""
        schema, encoding = _schema(columns, settings), settings["encoding"]
        return lambda: datum_writer(schema, encoding)

    def from_avro(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        settings: Mapping[str, Any],
        headers: SparkColumn | None,
        side: str,
    ) -> SparkColumn | None:
        """Each record decoded by Spark's ``from_avro`` (see :mod:`._spark_avro`), or None where
        the session or the table leaves it to the Python stage (``avro.encoding`` JSON)."""
        if settings["encoding"] != "binary" or not _spark_avro.from_avro_reads(columns):
            return None
        return _spark_avro.decode_plain(raw, _schema(columns, settings))

    def jvm_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        settings: Mapping[str, Any],
        prefix: str,
        headers: SparkColumn | None,
        side: str,
    ) -> tuple[Stages, Decoded] | None:
        """:meth:`from_avro` first where it reads the records, the Python stage for those it
        leaves."""
        fast = self.from_avro(raw, columns, settings, headers, side)
        if fast is None:
            return None
        slow = self.python_decoder(columns, settings, side)
        legacy = settings["timestamp_mapping.legacy"]
        return _spark_avro.staged(prefix, fast, raw, slow, headers, columns, legacy)


FORMAT = Avro()

__all__ = ["FORMAT", "Avro", "datum_reader", "datum_writer"]
