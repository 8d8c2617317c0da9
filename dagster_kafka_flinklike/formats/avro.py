"""The ``avro`` format: each record is one Avro datum of the schema Flink derives from the columns.

As Flink's ``avro`` format: the writer's schema is the table's (see ``options.avro_schema``), so a
producer must write exactly that schema; ``avro.encoding`` chooses Avro's binary or JSON
encoding. Records are decoded and encoded with fastavro in the executors' Python workers (see
:mod:`._python`); a record that does not decode is dirty, with fastavro's reason.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FormatSpec, avro_schema
from . import _spark_avro
from ._python import decode_udf, encode_udf, one_expression, python_stage

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "avro"


def _settings(options: FormatSpec | Mapping[str, Any]) -> Mapping[str, Any]:
    from . import format_settings

    return format_settings(NAME, options)


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


def skipped(raw: SparkColumn, options: FormatSpec | Mapping[str, Any]) -> SparkColumn:
    """Records without a value yield no row (as Flink's Avro formats read a null)."""
    return raw.isNull()


def _python_decoder(columns: Sequence[Column], settings: Mapping[str, Any]) -> Any:
    """The per-record fastavro decoder of the table's schema, as a Spark function."""
    schema = avro_schema(columns, legacy=settings["timestamp_mapping.legacy"], fmt=NAME)
    encoding = settings["encoding"]

    def make_decoder() -> Callable[[bytes, Any], Any]:
        read = datum_reader(schema, encoding)
        return lambda data, _headers: read(data)

    return decode_udf(make_decoder, columns)


def decode_stages(
    raw: SparkColumn,
    columns: Sequence[Column],
    options: FormatSpec | Mapping[str, Any],
    prefix: str,
) -> tuple[list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn, SparkColumn]]:
    """Decode once per record into a staged column, then read the row and error from it
    (with Spark's ``from_avro`` first where the session has it: see :mod:`._spark_avro`)."""

    settings = _settings(options)
    decoder = _python_decoder(columns, settings)
    legacy = settings["timestamp_mapping.legacy"]
    if settings["encoding"] == "binary" and _spark_avro.usable(columns):
        schema = avro_schema(columns, legacy=legacy, fmt=NAME)
        fast = _spark_avro.decode_plain(raw, schema)
        return _spark_avro.staged(prefix, fast, raw, decoder, None, columns, legacy)
    return python_stage(f"{prefix}avro", decoder(raw), False)


def decode(
    raw: SparkColumn, columns: Sequence[Column], options: FormatSpec | Mapping[str, Any]
) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
    """(row struct, error, tolerated) of each record as one expression, decoded in Python
    (:func:`decode_stages` is the pipeline's path).

    Example:
        >>> struct, error, _ = decode(F.col("value"), [Column("v", "INT")], {})  # doctest: +SKIP
    """
    return one_expression(
        python_stage("avro", _python_decoder(columns, _settings(options))(raw), False)
    )


def encode(
    fields: Sequence[tuple[SparkColumn, Column]], options: FormatSpec | Mapping[str, Any]
) -> SparkColumn:
    """Each row as one Avro datum of the columns' schema.

    Example:
        >>> value = encode([(F.col("v"), Column("v", "INT"))], {})  # doctest: +SKIP
    """
    settings = _settings(options)
    columns = [c for _, c in fields]
    schema = avro_schema(columns, legacy=settings["timestamp_mapping.legacy"], fmt=NAME)
    encoding = settings["encoding"]
    return encode_udf(lambda: datum_writer(schema, encoding), fields)


__all__ = ["datum_reader", "datum_writer", "decode", "decode_stages", "encode", "skipped"]
