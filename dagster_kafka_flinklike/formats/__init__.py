"""Formats: one module per Flink format, decoding to and encoding from Spark columns.

A format module has

- ``decode(raw, columns, options) -> (struct, error, tolerated)``: ``raw`` is the record's key or
  value bytes; ``struct`` holds the ``columns`` (a null struct means the format yields no row for
  the record, as Flink's formats do for a null value); ``error`` is null for a clean record and
  says why a record is dirty otherwise; ``tolerated`` is true for a dirty record the format's
  ``ignore-parse-errors`` tolerates (skipped and collected instead of failing the run).
- ``decode_stages(raw, columns, options, prefix) -> (stages, (struct, error, tolerated))``: the
  same decoding split into projections (``stages``: dicts of new column name → expression, to
  add in order before the result's expressions are used), so the parse runs once per record
  where Spark would otherwise repeat it inside conditional and higher-order expressions.
- ``skipped(raw, options) -> bool column``: records the format yields no row for (cheap to
  evaluate, so callers can drop them without decoding twice).
- optionally ``native_decoder(columns, options) -> callable | None``: a decoder of a whole
  Arrow batch of raw bytes into a struct of the ``columns`` (null where a record needs
  ``decode_stages``), which the reader's tasks run where the bytes already are (``json``,
  ``csv``).
- ``encode(fields, options) -> bytes``: ``fields`` are (Spark column, :class:`Column`) pairs.

A changelog format (``CHANGELOG = True``: ``debezium-json``, ``debezium-avro-confluent``,
``canal-json``, ``maxwell-json``, ``ogg-json``) yields 0..n rows per record, each with a Flink
row kind: it has ``decode_changelog_stages`` instead of the two decoders (see
:mod:`._changelog`) and ``encode(fields, options, kind)`` writes each row as its row kind says.

A format whose module sets ``NEEDS_HEADERS = True`` (``avro-confluent``, ``protobuf-confluent``:
schema ids in headers) also gets the records' headers and which side of the record it decodes:
``decode_stages(..., headers=column, side="key" | "value")``.

Binary formats (``avro``, ``avro-confluent``, ``debezium-avro-confluent``, ``protobuf``,
``protobuf-confluent``) decode and encode in the executors' Python workers (see :mod:`._python`;
the Avro ones with Spark's ``from_avro`` first where the session has it).

``options`` is either the table's :class:`FormatSpec` or the format's options as written
(``{"ignore-parse-errors": "true"}``), defaults applied either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import KafkaOptionsError
from ..options import Column, FormatSpec
from . import (
    avro,
    avro_confluent,
    canal,
    csv,
    debezium,
    debezium_avro,
    json,
    maxwell,
    ogg,
    protobuf,
    protobuf_confluent,
    raw,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql.types import StructType

_FORMATS: dict[str, ModuleType] = {"csv": csv, "json": json, "raw": raw, "avro": avro,
                                   "avro-confluent": avro_confluent, "protobuf": protobuf,
                                   "protobuf-confluent": protobuf_confluent,
                                   "debezium-json": debezium,
                                   "debezium-avro-confluent": debezium_avro, "canal-json": canal,
                                   "maxwell-json": maxwell, "ogg-json": ogg}  # fmt: skip


def format_module(name: str) -> ModuleType:
    """The module implementing the Flink format ``name``.

    Example:
        >>> format_module("json").__name__
        'dagster_kafka_flinklike.formats.json'

    Raises:
        KafkaOptionsError: no module implements the format.
    """
    try:
        return _FORMATS[name]
    except KeyError:
        raise KafkaOptionsError(
            f"Format {name!r} is not implemented; available: {', '.join(sorted(_FORMATS))}.",
            keys=("format",),
        ) from None


def is_changelog(name: str) -> bool:
    """Whether format ``name`` reads records as changelog rows with row kinds.

    Example:
        >>> is_changelog("debezium-json"), is_changelog("json")
        (True, False)
    """
    return bool(getattr(format_module(name), "CHANGELOG", False))


def needs_headers(name: str) -> bool:
    """Whether format ``name`` reads the records' headers.

    Example:
        >>> needs_headers("avro-confluent"), needs_headers("json")
        (True, False)
    """
    return bool(getattr(format_module(name), "NEEDS_HEADERS", False))


def format_settings(name: str, options: FormatSpec | Mapping[str, Any]) -> Mapping[str, Any]:
    """Every option of format ``name`` parsed, defaults applied.

    ``options`` is a :class:`FormatSpec` (its parsed ``settings`` are used) or the format's own
    options as written, without prefix (parsed and checked as the options layer does).

    Example:
        >>> format_settings("json", {"ignore-parse-errors": "true"})["ignore-parse-errors"]
        True

    Raises:
        KafkaOptionsError: an option is unknown to the format or has an invalid value.
    """
    from ..options._formats import resolve_format

    if isinstance(options, FormatSpec):
        if options.settings or not options.options:
            return options.settings or resolve_format({}, name, "format").settings
        options = options.options
    written = {f"{name}.{key}": _text(value) for key, value in options.items()}
    return resolve_format(written, name, "format").settings


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class NativeDecoder(Protocol):
    """Decodes an Arrow array of raw bytes into a struct array of ``spark_type`` (same length,
    null where a record needs the per-record decoding)."""

    spark_type: StructType

    def __call__(self, values: pa.Array) -> pa.Array: ...


def native_decoder(
    name: str, columns: Sequence[Column], options: FormatSpec | Mapping[str, Any]
) -> NativeDecoder | None:
    """Format ``name``'s decoder of whole Arrow batches for ``columns``, if it has one.

    Example:
        >>> native_decoder("raw", [], {}) is None
        True
    """
    build = getattr(format_module(name), "native_decoder", None)
    return None if build is None else build(columns, options)


__all__ = [
    "NativeDecoder",
    "format_module",
    "format_settings",
    "is_changelog",
    "native_decoder",
    "needs_headers",
]
