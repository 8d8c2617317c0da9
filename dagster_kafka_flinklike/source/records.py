"""From raw Kafka records to the table's rows: key/value decoding, metadata and computed columns.

The result carries the table's columns in declaration order plus ``__dkf_error`` (null when the
record decoded cleanly) and the record's provenance (``__dkf_topic``/``__dkf_partition``/
``__dkf_offset``/``__dkf_value``) so dirty records can be reported and collected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..formats import format_module
from ..options import Column, KafkaTableSpec, spark_type
from .reader import column_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

ERROR = "__dkf_error"
PROVENANCE = ("__dkf_topic", "__dkf_partition", "__dkf_offset", "__dkf_value")

#: Flink metadata key → raw record field.
METADATA_FIELDS = {
    "topic": "topic",
    "partition": "partition",
    "offset": "offset",
    "timestamp": "timestamp",
    "timestamp-type": "timestamp-type",
    "headers": "headers",
    "leader-epoch": "leader-epoch",
    "__raw_key__": "key",
    "__raw_value__": "value",
}


def record_fields(spec: KafkaTableSpec) -> tuple[str, ...]:
    """The raw record fields that decoding ``spec`` needs (the reader extracts only these)."""
    wanted = ["value", "topic", "partition", "offset"]
    if spec.key_format is not None:
        wanted.append("key")
    for column in spec.metadata_columns:
        field = METADATA_FIELDS[column.metadata_key or column.name]
        if field not in wanted:
            wanted.append(field)
    return tuple(wanted)


def _unprefixed(columns: tuple[Column, ...], prefix: str) -> list[Column]:
    return [
        Column(c.name[len(prefix) :] if prefix and c.name.startswith(prefix) else c.name, c.type)
        for c in columns
    ]


def _metadata(column: Column) -> SparkColumn:
    from pyspark.sql import functions as F

    field = METADATA_FIELDS[column.metadata_key or column.name]
    value = F.col(column_name(field))
    if field == "headers":
        value = F.map_from_entries(value)
    return value.cast(spark_type(column.flink_type)).alias(column.name)


def decode_records(spec: KafkaTableSpec, raw: DataFrame) -> DataFrame:
    """Decode raw records (columns from :func:`record_fields`) into the table's columns."""
    from pyspark.sql import functions as F

    value_columns = spec.value_columns
    value_fmt = format_module(spec.value_format.name)
    value_struct, value_error = value_fmt.decode(
        F.col("value"),
        _unprefixed(value_columns, spec.value_fields_prefix),
        spec.value_format.options,
    )
    errors = [value_error]
    key_struct = None
    if spec.key_format is not None and spec.key_columns:
        key_fmt = format_module(spec.key_format.name)
        key_struct, key_error = key_fmt.decode(
            F.col("key"),
            _unprefixed(spec.key_columns, spec.key_fields_prefix),
            spec.key_format.options,
        )
        errors.insert(0, key_error)

    decoded = raw.select(
        "*",
        value_struct.alias("__dkf_v"),
        *([key_struct.alias("__dkf_k")] if key_struct is not None else []),
        F.coalesce(*errors).alias(ERROR),
    )
    in_value = {c.name for c in value_columns}
    selected: list[SparkColumn] = []
    for column in spec.columns:
        if column.is_metadata:
            selected.append(_metadata(column))
        elif column.is_physical:
            if column.name in in_value:
                name = _unprefixed((column,), spec.value_fields_prefix)[0].name
                selected.append(F.col("__dkf_v")[name].alias(column.name))
            else:
                name = _unprefixed((column,), spec.key_fields_prefix)[0].name
                selected.append(F.col("__dkf_k")[name].alias(column.name))
    provenance = [
        F.col("topic").alias("__dkf_topic"),
        F.col("partition").alias("__dkf_partition"),
        F.col("offset").alias("__dkf_offset"),
        F.col("value").alias("__dkf_value"),
    ]
    table = decoded.select(*selected, F.col(ERROR), *provenance)
    computed = [c for c in spec.columns if c.expression is not None]
    if computed:
        table = table.select("*", *[F.expr(c.expression or "").alias(c.name) for c in computed])
        order = [c.name for c in spec.columns]
        table = table.select(*order, ERROR, *PROVENANCE)
    return table
