"""Serialization: a DataFrame of the sink table's columns → Kafka key/value bytes (and metadata).

The key is encoded from ``key.fields`` (the PRIMARY KEY for ``upsert-kafka``) with
``key.format``; the value from the physical columns (all, or all but the key's with
``value.fields-include`` = ``EXCEPT_KEY``) with ``value.format``; the writable metadata columns
``timestamp`` and ``headers`` become the record's timestamp and headers.

A changelog says what each row is with a :data:`ROW_KIND` column holding Flink's ``RowKind``
short strings: ``+I`` insert, ``-U`` update-before, ``+U`` update-after, ``-D`` delete. An
``upsert-kafka`` sink writes ``-D`` as a tombstone (the key with a null value) and drops ``-U``
rows; a DataFrame without the column is all upserts. A ``kafka`` sink with a changelog value
format (``debezium-json``, ...) writes every row kind as its format does; with any other format
it is append-only and accepts only ``+I`` rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import KafkaOptionsError
from ..formats import ChangelogFormat, get_format, is_changelog
from ..options import ACCUMULATIONS, ROW_KIND, ROW_KINDS, Column, FormatSpec, KafkaTableSpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

#: Metadata keys a sink writes (the rest are read-only and ignored when VIRTUAL).
WRITABLE_METADATA = ("timestamp", "headers")

#: Internal column of an ``upsert-kafka`` encoding: the rows' order in the written DataFrame,
#: so the writer keeps each key's changes in that order (it drops the column before producing).
SEQUENCE = "__dkf_seq"


def _encode(
    columns: tuple[Column, ...], prefix: str, fmt: FormatSpec, kind: SparkColumn | None = None
) -> SparkColumn:
    """Encode ``columns`` with ``fmt``; a changelog format also gets each row's ``kind``."""
    from pyspark.sql import functions as F

    fields = []
    for c in columns:
        name = c.name[len(prefix) :] if prefix and c.name.startswith(prefix) else c.name
        fields.append((F.col(f"`{c.name}`"), Column(name, c.type)))
    format_ = get_format(fmt.name)
    if isinstance(format_, ChangelogFormat):
        return format_.encode(fields, fmt, kind)
    return format_.encode(fields, fmt)


def _declared_columns(spec: KafkaTableSpec, df: DataFrame) -> DataFrame:
    """Check the DataFrame against the declared columns; add missing physical ones as nulls."""
    from pyspark.sql import functions as F

    declared = {c.name for c in spec.columns}
    extra = [c for c in df.columns if c not in declared and c != ROW_KIND]
    if extra:
        raise KafkaOptionsError(
            f"The query returns column(s) the sink table does not declare: {', '.join(extra)}. "
            f"Declared: {', '.join(c.name for c in spec.columns)}."
        )
    for c in spec.physical_columns:
        if c.name not in df.columns:
            df = df.withColumn(c.name, F.lit(None))
    return df


def _layout(spec: KafkaTableSpec, df: DataFrame) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """(key columns, value columns) of the table; from the DataFrame when none are declared."""
    if spec.columns:
        return spec.key_columns, spec.value_columns
    physical = tuple(Column(c) for c in df.columns if c != ROW_KIND)
    by_name = {c.name: c for c in physical}
    key = tuple(by_name[f] for f in spec.key_fields if f in by_name)
    if spec.value_fields_include.value == "EXCEPT_KEY":
        return key, tuple(c for c in physical if c.name not in spec.key_fields)
    return key, physical


def _row_kind_error(kind: SparkColumn, why: str) -> SparkColumn:
    """Fail the write on a row whose kind the sink cannot write (a Spark-side error)."""
    from pyspark.sql import functions as F

    return F.raise_error(
        F.concat(F.lit(f"Column '{ROW_KIND}' holds row kind '"), kind, F.lit(f"'; {why}"))
    )


def serialize(spec: KafkaTableSpec, df: DataFrame) -> DataFrame:
    """Encode ``df`` (the sink table's columns) into ``key``, ``value`` [, timestamp, headers].

    ``timestamp`` is a Spark TIMESTAMP (the record timestamp; null lets the producer stamp it),
    ``headers`` a ``map<string,binary>``. An ``upsert-kafka`` table also gets the
    :data:`SEQUENCE` column — except with ``sink.buffer-flush.max-rows`` and
    ``sink.buffer-flush.interval`` both > 0, where only the last row of each key is kept, as
    Flink's buffered upsert writer keeps it.

    Example:
        >>> encoded = serialize(spec, orders)  # doctest: +SKIP
        >>> write(encoded, spec.topics[0], properties)  # doctest: +SKIP

    Raises:
        KafkaOptionsError: the DataFrame has columns the sink table does not declare.
    """
    from pyspark.sql import functions as F

    if spec.columns:
        df = _declared_columns(spec, df)
    if spec.is_upsert:
        df = df.withColumn(SEQUENCE, F.monotonically_increasing_id())
    kind = F.col(f"`{ROW_KIND}`") if ROW_KIND in df.columns else None
    if kind is not None and spec.is_upsert:
        df = df.filter(~kind.eqNullSafe("-U"))

    key_columns, value_columns = _layout(spec, df)
    changelog = is_changelog(spec.value_format.name)
    value = _encode(value_columns, spec.value_fields_prefix, spec.value_format, kind)
    if kind is not None and changelog:
        value = F.when(kind.isNull() | kind.isin(*ROW_KINDS), value).otherwise(
            _row_kind_error(kind, "allowed are Flink's '+I', '-U', '+U' and '-D'.")
        )
    elif kind is not None and spec.is_upsert:
        value = (
            F.when(kind == "-D", F.lit(None).cast("binary"))
            .when(kind.isNull() | kind.isin(*ACCUMULATIONS), value)
            .otherwise(_row_kind_error(kind, "allowed are Flink's '+I', '-U', '+U' and '-D'."))
        )
    elif kind is not None:
        value = F.when(kind.isNull() | (kind == "+I"), value).otherwise(
            _row_kind_error(
                kind,
                "a 'kafka' sink is append-only and writes only '+I' rows. Write updates and "
                "deletes to an 'upsert-kafka' table, or with a changelog value format such as "
                "'debezium-json'.",
            )
        )
    if spec.key_format is not None and key_columns:
        key = _encode(key_columns, spec.key_fields_prefix, spec.key_format)
    else:
        key = F.lit(None).cast("binary")

    extras = []
    for column in spec.metadata_columns:
        key_name = column.metadata_key
        if key_name not in WRITABLE_METADATA or column.virtual or column.name not in df.columns:
            continue
        source = F.col(f"`{column.name}`")
        if key_name == "headers":
            extras.append(source.cast("map<string,binary>").alias("headers"))
        else:
            extras.append(source.cast("timestamp").alias("timestamp"))
    sequence = [F.col(SEQUENCE)] if spec.is_upsert else []
    encoded = df.select(key.alias("key"), value.alias("value"), *extras, *sequence)
    buffered = spec.sink_buffer_flush_max_rows > 0 and spec.sink_buffer_flush_interval_ms > 0
    if spec.is_upsert and buffered:  # one row per key left: no order to keep
        encoded = _last_per_key(encoded).drop(SEQUENCE)
    return encoded


def _last_per_key(encoded: DataFrame) -> DataFrame:
    """Keep each key's last row (by :data:`SEQUENCE`); rows with a null key are all kept."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rank = "__dkf_rank"
    window = Window.partitionBy("key").orderBy(F.col(SEQUENCE).desc())
    ranked = encoded.withColumn(rank, F.row_number().over(window))
    return ranked.filter((F.col(rank) == 1) | F.col("key").isNull()).drop(rank)
