"""Formats: one module per Flink format, decoding to and encoding from Spark columns.

A format module has ``decode(raw, columns, options) -> (struct, error)`` and
``encode(fields, options) -> bytes`` over (Spark column, Column) pairs.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import KafkaOptionsError
from . import json, raw

_FORMATS: dict[str, ModuleType] = {"json": json, "raw": raw}


def format_module(name: str) -> ModuleType:
    """The module implementing the Flink format ``name``."""
    try:
        return _FORMATS[name]
    except KeyError:
        raise KafkaOptionsError(
            f"Format {name!r} is not implemented; available: {', '.join(sorted(_FORMATS))}.",
            keys=("format",),
        ) from None


__all__ = ["format_module"]
