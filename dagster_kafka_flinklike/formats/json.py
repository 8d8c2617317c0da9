"""The ``json`` format: decoded and encoded by Spark's own JSON functions (JVM speed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..options import Column, struct_type

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

_CORRUPT = "__dkf_corrupt_record"


def decode(
    raw: SparkColumn, columns: Sequence[Column], options: Mapping[str, str]
) -> tuple[SparkColumn, SparkColumn]:
    """Decode ``raw`` bytes into a struct of ``columns``; also a column naming the error.

    The error column is null for a clean record and says why a record is dirty otherwise.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = struct_type(list(columns))
    schema = T.StructType([*schema.fields, T.StructField(_CORRUPT, T.StringType())])
    spark_options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}
    parsed = F.from_json(raw.cast("string"), schema, spark_options)
    error = F.when(raw.isNotNull() & parsed[_CORRUPT].isNotNull(), F.lit("json: malformed record"))
    fields = [parsed[c.name].alias(c.name) for c in columns]
    return F.when(raw.isNull(), F.lit(None)).otherwise(F.struct(*fields)), error


def encode(fields: Sequence[tuple[SparkColumn, Column]], options: Mapping[str, str]) -> SparkColumn:
    """The fields as one JSON object per row (named by each ``Column``), in UTF-8 bytes."""
    from pyspark.sql import functions as F

    spark_options = {"ignoreNullFields": options.get("encode.ignore-null-fields", "false")}
    value = F.to_json(F.struct(*[source.alias(c.name) for source, c in fields]), spark_options)
    return F.encode(value, "UTF-8")
