"""From raw Kafka records to the table's rows: header filter, key/value decoding, metadata and
computed columns.

The result carries the table's columns in declaration order, then ``__dkf_error`` (null when the
record decoded cleanly, else why it is dirty), ``__dkf_tolerated`` (true for a dirty record its
format's ``ignore-parse-errors`` tolerates) and the record's provenance (:data:`PROVENANCE`:
topic, partition, offset, raw key, raw value and timestamp) so dirty records can be reported and
collected with their bytes.

Records the ``scan.header-filter`` rejects are dropped before decoding, and so are records a
format yields no row for (a null JSON/CSV value, as in Flink; an ``upsert-kafka`` table keeps
them, a null value being a deletion).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..formats import format_module
from ..options import Column, FormatSpec, KafkaTableSpec, parse_header_filter, spark_type
from .reader import column_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

ERROR = "__dkf_error"
TOLERATED = "__dkf_tolerated"
PROVENANCE = (
    "__dkf_topic",
    "__dkf_partition",
    "__dkf_offset",
    "__dkf_key",
    "__dkf_value",
    "__dkf_timestamp",
)
_PROVENANCE_FIELDS = ("topic", "partition", "offset", "key", "value", "timestamp")

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
    """The raw record fields that decoding ``spec`` needs (the reader extracts only these).

    Always the provenance fields (key, value, topic, partition, offset, timestamp); ``headers``
    when the table filters on them; and the fields of its metadata columns.

    Example:
        >>> record_fields(spec)  # doctest: +SKIP
        ('key', 'value', 'topic', 'partition', 'offset', 'timestamp')
    """
    wanted = ["key", "value", "topic", "partition", "offset", "timestamp"]
    if spec.header_filter:
        wanted.append("headers")
    for column in spec.metadata_columns:
        field = METADATA_FIELDS[column.metadata_key or column.name]
        if field not in wanted:
            wanted.append(field)
    return tuple(wanted)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _unprefixed(columns: tuple[Column, ...], prefix: str) -> list[Column]:
    return [
        Column(c.name[len(prefix) :] if prefix and c.name.startswith(prefix) else c.name, c.type)
        for c in columns
    ]


def headers_map(headers: SparkColumn) -> SparkColumn:
    """Headers ``array<struct<key, value>>`` as a map where the last header of a key wins.

    Built without ``map_from_entries`` failing on repeated keys (and without changing the
    session's ``spark.sql.mapKeyDedupPolicy``): earlier entries of a repeated key are dropped.
    """
    from pyspark.sql import functions as F

    from ..formats.json import last_wins

    entries = F.coalesce(headers, F.array().cast("array<struct<key:string,value:binary>>"))
    return F.map_from_entries(last_wins(entries, "key"))


def _metadata(column: Column) -> SparkColumn:
    from pyspark.sql import functions as F

    field = METADATA_FIELDS[column.metadata_key or column.name]
    value = F.col(column_name(field))
    if field == "headers":
        value = headers_map(value)
    return value.cast(spark_type(column.flink_type)).alias(column.name)


def _decode(
    fmt: FormatSpec, columns: tuple[Column, ...], prefix: str, side: str
) -> tuple[list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn, SparkColumn, SparkColumn]]:
    """Decode the record ``side`` (key or value): its projection stages, then struct, error with
    context, tolerated and skipped."""
    from pyspark.sql import functions as F

    raw = F.col(side)
    module = format_module(fmt.name)
    columns_in_format = _unprefixed(columns, prefix)
    stages, (struct, error, tolerated) = module.decode_stages(
        raw, columns_in_format, fmt, f"__dkf_{side}_"
    )
    error = F.concat(F.lit(f"{side} ({fmt.name}): "), error)
    return stages, (struct, error, tolerated, module.skipped(raw, fmt))


def _merged(
    first: list[dict[str, SparkColumn]], second: list[dict[str, SparkColumn]]
) -> list[dict[str, SparkColumn]]:
    """Two lists of projection stages as one (same level, same projection)."""
    levels = max(len(first), len(second))
    padded = [[*s, *([{}] * (levels - len(s)))] for s in (first, second)]
    return [{**a, **b} for a, b in zip(padded[0], padded[1], strict=True)]


def decode_records(spec: KafkaTableSpec, raw: DataFrame) -> DataFrame:
    """Decode raw records (columns from :func:`record_fields`) into the table's columns.

    Returns the table's columns in declaration order, then :data:`ERROR`, :data:`TOLERATED`
    and :data:`PROVENANCE`.

    Example:
        >>> raw = read_splits(spark, splits, config, record_fields(spec))  # doctest: +SKIP
        >>> decoded = decode_records(spec, raw)  # doctest: +SKIP
        >>> clean = decoded.filter(decoded[ERROR].isNull())  # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    if spec.header_filter:
        raw = raw.filter(parse_header_filter(spec.header_filter).to_column(F.col("headers")))
    stages, value = _decode(
        spec.value_format, spec.value_columns, spec.value_fields_prefix, "value"
    )
    key = None
    if spec.key_format is not None and spec.key_columns:
        key_stages, key = _decode(spec.key_format, spec.key_columns, spec.key_fields_prefix, "key")
        stages = _merged(stages, key_stages)
    no_row = value[3]
    if spec.is_upsert:  # a null value is a deletion of its key: kept
        no_row = no_row & F.col("value").isNotNull()
    raw = raw.filter(~no_row)
    for stage in stages:
        if stage:
            raw = raw.select("*", *[expr.alias(name) for name, expr in stage.items()])

    # Each side's struct, error and tolerated flag become columns first: the table's columns,
    # the error and the tolerated flag then read them instead of repeating the decoding.
    sides = {"value": value, **({"key": key} if key is not None else {})}
    decoded = raw.select(
        "*",
        *[
            expr.alias(f"__dkf_{name}_{part}")
            for name, side in sides.items()
            for part, expr in zip(("struct", "error", "tolerated"), side[:3], strict=True)
        ],
    )
    side_errors = [F.col(f"__dkf_{name}_error") for name in ("key", "value") if name in sides]
    error = F.coalesce(*side_errors) if len(side_errors) > 1 else side_errors[0]
    tolerated = F.col(ERROR).isNotNull()
    for name in sides:
        side_error = F.col(f"__dkf_{name}_error")
        tolerated = tolerated & (side_error.isNull() | F.col(f"__dkf_{name}_tolerated"))
    decoded = decoded.withColumn(ERROR, error).withColumn(TOLERATED, tolerated)

    in_value = {c.name for c in spec.value_columns}
    in_key = {c.name for c in spec.key_columns} if key is not None else set()
    value_struct, key_struct = F.col("__dkf_value_struct"), F.col("__dkf_key_struct")
    selected: list[SparkColumn] = []
    for column in spec.columns:
        if column.is_metadata:
            selected.append(_metadata(column))
        elif column.is_physical:
            from_key = key_struct[_unprefixed((column,), spec.key_fields_prefix)[0].name]
            from_value = value_struct[_unprefixed((column,), spec.value_fields_prefix)[0].name]
            if column.name in in_value and column.name in in_key:
                # As Flink: the value's field, unless there is no value row (a deletion).
                field = F.when(value_struct.isNull(), from_key).otherwise(from_value)
            elif column.name in in_value:
                field = from_value
            else:
                field = from_key
            selected.append(field.alias(column.name))
    provenance = [
        F.col(field).alias(alias)
        for field, alias in zip(_PROVENANCE_FIELDS, PROVENANCE, strict=True)
    ]
    table = decoded.select(*selected, F.col(ERROR), F.col(TOLERATED), *provenance)
    if any(c.expression is not None for c in spec.columns):
        table = with_computed_columns(spec, table, ERROR, TOLERATED, *PROVENANCE)
    return table


def with_computed_columns(spec: KafkaTableSpec, frame: DataFrame, *keep: str) -> DataFrame:
    """``frame`` (the table's stored columns) with its computed columns, in declared order,
    followed by the ``keep`` columns."""
    from pyspark.sql import functions as F

    computed = [F.expr(c.expression or "").alias(c.name) for c in spec.columns if c.expression]
    table = frame.select("*", *computed)
    return table.select(*[_quoted(c.name) for c in spec.columns], *keep)


__all__ = [
    "ERROR",
    "METADATA_FIELDS",
    "PROVENANCE",
    "TOLERATED",
    "decode_records",
    "headers_map",
    "record_fields",
    "with_computed_columns",
]
