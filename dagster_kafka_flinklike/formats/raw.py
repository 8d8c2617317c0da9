"""The ``raw`` format: the record bytes as one STRING or BYTES column."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import KafkaOptionsError
from ..options import Column

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

_BINARY = ("BYTES", "VARBINARY", "BINARY")


def _single(columns: Sequence[Column]) -> Column:
    if len(columns) != 1:
        raise KafkaOptionsError(
            f"The 'raw' format holds exactly one physical column, got {len(columns)}: "
            f"{', '.join(c.name for c in columns)}.",
            keys=("format",),
        )
    return columns[0]


def decode(
    raw: SparkColumn, columns: Sequence[Column], options: Mapping[str, str]
) -> tuple[SparkColumn, SparkColumn]:
    """The bytes as the table's single column (decoded as UTF-8 for STRING); never dirty."""
    from pyspark.sql import functions as F

    column = _single(columns)
    charset = options.get("charset", "UTF-8")
    value = raw if column.flink_type.name in _BINARY else F.decode(raw, charset)
    return F.struct(value.alias(column.name)), F.lit(None).cast("string")


def encode(fields: Sequence[tuple[SparkColumn, Column]], options: Mapping[str, str]) -> SparkColumn:
    """The single column as bytes (strings encoded with ``raw.charset``, UTF-8 by default)."""
    from pyspark.sql import functions as F

    column = _single([c for _, c in fields])
    source = fields[0][0]
    if column.flink_type.name in _BINARY:
        return source.cast("binary")
    return F.encode(source.cast("string"), options.get("charset", "UTF-8"))
