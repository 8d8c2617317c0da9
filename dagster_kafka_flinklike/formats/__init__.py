"""Formats: one module per Flink format, decoding to and encoding from Spark columns.

Each module defines one :class:`~.base.Format` (its ``FORMAT``), and this registry finds it by
the format's name: :func:`get_format`. The contract every format keeps, and the base classes
that hold what formats share, are in :mod:`.base`; the changelog formats' in
:mod:`._changelog`. Binary formats (``avro``, ``avro-confluent``, ``debezium-avro-confluent``,
``protobuf``, ``protobuf-confluent``) decode and encode in the executors' Python workers (see
:mod:`._python`; the Avro ones with Spark's ``from_avro`` first where the session has it).

The format modules never import this registry: it imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from ._changelog import ChangelogFormat
from .base import Format, NativeDecoder, format_settings

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

_FORMATS: dict[str, Format] = {
    module.FORMAT.name: module.FORMAT
    for module in (csv, json, raw, avro, avro_confluent, protobuf, protobuf_confluent, debezium,
                   debezium_avro, canal, maxwell, ogg)
}  # fmt: skip


def get_format(name: str) -> Format:
    """The :class:`~.base.Format` implementing the Flink format ``name``.

    Example:
        >>> get_format("json").name
        'json'

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
    return get_format(name).changelog


def needs_headers(name: str) -> bool:
    """Whether format ``name`` reads the records' headers.

    Example:
        >>> needs_headers("avro-confluent"), needs_headers("json")
        (True, False)
    """
    return get_format(name).needs_headers


def native_decoder(
    name: str, columns: Sequence[Column], options: FormatSpec | Mapping[str, Any]
) -> NativeDecoder | None:
    """Format ``name``'s decoder of whole Arrow batches for ``columns``, if it has one.

    Example:
        >>> native_decoder("raw", [], {}) is None
        True
    """
    return get_format(name).native_decoder(columns, options)


def exact_pass(
    name: str,
    columns: Sequence[Column],
    options: FormatSpec | Mapping[str, Any],
    metadata: Sequence[str] = (),
) -> Callable[[pa.Array], pa.Array] | None:
    """Format ``name``'s rewrite of the records its per-record decoding reads, if it has one
    (see :meth:`~.base.Format.exact_pass`).

    Example:
        >>> exact_pass("raw", [], {}) is None
        True
    """
    return get_format(name).exact_pass(columns, options, metadata)


__all__ = [
    "ChangelogFormat",
    "Format",
    "NativeDecoder",
    "exact_pass",
    "format_settings",
    "get_format",
    "is_changelog",
    "native_decoder",
    "needs_headers",
]
