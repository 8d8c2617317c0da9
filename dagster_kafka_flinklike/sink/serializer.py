"""Serialization: a DataFrame of the sink table's columns → Kafka key/value bytes (and metadata)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import KafkaOptionsError
from ..formats import format_module
from ..options import Column, FormatSpec, KafkaTableSpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

#: Metadata keys a sink writes (the rest are read-only and ignored when VIRTUAL).
WRITABLE_METADATA = ("timestamp", "headers")


def _encode(columns: tuple[Column, ...], prefix: str, fmt: FormatSpec) -> SparkColumn:
    from pyspark.sql import functions as F

    fields = []
    for c in columns:
        name = c.name[len(prefix) :] if prefix and c.name.startswith(prefix) else c.name
        fields.append((F.col(f"`{c.name}`"), Column(name, c.type)))
    return format_module(fmt.name).encode(fields, fmt.options)


def serialize(spec: KafkaTableSpec, df: DataFrame) -> DataFrame:
    """Encode ``df`` (the sink table's columns) into ``key``, ``value`` [, timestamp, headers].

    Raises:
        KafkaOptionsError: the DataFrame has columns the sink table does not declare.
    """
    from pyspark.sql import functions as F

    if spec.columns:
        declared = {c.name for c in spec.columns}
        extra = [c for c in df.columns if c not in declared]
        if extra:
            raise KafkaOptionsError(
                f"The query returns column(s) the sink table does not declare: {', '.join(extra)}."
            )
        for c in spec.physical_columns:
            if c.name not in df.columns:
                df = df.withColumn(c.name, F.lit(None))
        physical = spec.physical_columns
    else:
        physical = tuple(Column(c) for c in df.columns)
    value_columns = tuple(
        c for c in physical if not (c.name in spec.key_fields and spec.key_format is not None)
    ) if spec.value_fields_include.value == "EXCEPT_KEY" else physical  # fmt: skip
    value = _encode(value_columns, spec.value_fields_prefix, spec.value_format)
    if spec.key_format is not None and spec.key_columns:
        key = _encode(spec.key_columns, spec.key_fields_prefix, spec.key_format)
    else:
        key = F.lit(None).cast("binary")
    extras = []
    for column in spec.metadata_columns:
        if column.metadata_key in WRITABLE_METADATA and not column.virtual:
            source = F.col(f"`{column.name}`")
            if column.metadata_key == "headers":
                extras.append(F.map_entries(source).alias("headers"))
            else:
                extras.append(source.cast("timestamp").alias("timestamp"))
    return df.select(key.alias("key"), value.alias("value"), *extras)
