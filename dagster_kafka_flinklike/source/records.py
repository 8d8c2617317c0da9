"""From raw Kafka records to the table's rows: header filter, key/value decoding, metadata and
computed columns.

The result carries the table's columns in declaration order, then (for a changelog table: a
changelog value format, or ``upsert-kafka``) :data:`ROW_KIND`, then ``__dkf_error`` (null when
the record decoded cleanly, else why it is dirty), ``__dkf_tolerated`` (true for a dirty record
its format's ``ignore-parse-errors`` tolerates) and the record's provenance (:data:`PROVENANCE`:
topic, partition, offset, raw key, raw value, timestamp, and whether the row is the first its
record yields) so dirty records can be reported and collected with their bytes.

Records the ``scan.header-filter`` rejects are dropped before decoding, and so are records a
format yields no row for (a null JSON/CSV value, as in Flink; an ``upsert-kafka`` table keeps
them, a null value being a deletion: row kind ``-D``, every other row ``+I``). A changelog
format's record becomes 0..n rows (an update: ``-U`` then ``+U``); a dirty record stays one row.
"""

from __future__ import annotations

import operator
import pickle
from collections.abc import Callable, Collection
from functools import reduce
from typing import TYPE_CHECKING, Any

from .._sessions import per_session
from ..formats import (
    ChangelogFormat,
    exact_pass,
    get_format,
    is_changelog,
    native_decoder,
    needs_headers,
)
from ..formats.base import StagedFormat
from ..options import (
    ROW_KIND,
    Column,
    FormatSpec,
    KafkaTableSpec,
    parse_header_filter,
    spark_type,
)
from .reader import TIMESTAMP_ERROR, DerivedColumn, Shedding, column_name

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

ERROR = "__dkf_error"
TOLERATED = "__dkf_tolerated"
#: True for a tolerated dirty record that stays a row, the fields that failed null (a format
#: that :attr:`~..formats.base.Format.keeps_rows`); it still counts and is collected as dirty.
PARTIAL = "__dkf_partial"
#: The columns that say whether and how a record is dirty.
DIRTY_COLUMNS = (ERROR, TOLERATED, PARTIAL)
PROVENANCE = (
    "__dkf_topic",
    "__dkf_partition",
    "__dkf_offset",
    "__dkf_key",
    "__dkf_value",
    "__dkf_timestamp",
    "__dkf_value_bytes",
    "__dkf_record_start",
)
#: Provenance column: the size of the record's value in bytes (0 without a value). The raw
#: value itself (``__dkf_value``) is kept for the records that did not decode natively only.
VALUE_BYTES = PROVENANCE[-2]
#: Provenance column: true on the first row a record yields (a changelog record may yield
#: several), so counts of records and bytes count each record once.
RECORD_START = PROVENANCE[-1]
_PROVENANCE_FIELDS = (
    "topic", "partition", "offset", "key", "value", "timestamp", VALUE_BYTES, RECORD_START
)  # fmt: skip
_VALUE_ROW = "__dkf_value_row"
_VALUE_META = "__dkf_value_meta"

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

    Always the provenance fields (key, value, topic, partition, offset, timestamp) and the
    reader's ``timestamp-error`` (a record whose timestamp Spark cannot hold is dirty);
    ``headers`` when the table filters on them; and the fields of its metadata columns.

    Example:
        >>> record_fields(spec)  # doctest: +SKIP
        ('key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestamp-error')
    """
    wanted = ["key", "value", "topic", "partition", "offset", "timestamp", TIMESTAMP_ERROR]
    formats = [f for f in (spec.value_format, spec.key_format) if f is not None]
    if spec.header_filter or any(needs_headers(f.name) for f in formats):
        wanted.append("headers")
    for column in spec.metadata_columns:
        field = METADATA_FIELDS.get(column.metadata_key or column.name)
        if field is not None and field not in wanted:  # else the value format's own metadata
            wanted.append(field)
    return tuple(wanted)


def native_columns(spec: KafkaTableSpec) -> tuple[DerivedColumn, ...]:
    """The columns the reader's tasks decode natively, batch by batch, for ``spec``: one per
    side (key, value) whose format has a native decoder for its columns (see
    :func:`..formats.native_decoder`). :func:`decode_records` uses them where present.

    Example:
        >>> [c.name for c in native_columns(orders)]  # doctest: +SKIP
        ['__dkf_value_native']
    """
    derived = []
    meta = format_metadata_keys(spec)
    for side, fmt, columns, prefix in _sides(spec):
        if is_changelog(fmt.name) and meta:  # an envelope natively: without metadata fields
            continue
        decoder = native_decoder(fmt.name, _unprefixed(columns, prefix), fmt)
        if decoder is not None:
            derived.append(DerivedColumn(_native(side), side, decoder.spark_type, decoder))
    return tuple(derived)


#: Raw fields that matter only to records decoded per record (their bytes, their provenance):
#: a reader that decoded every side of a record natively leaves them null.
_PER_RECORD_FIELDS = ("key", "value", "topic")


def native_reading(spec: KafkaTableSpec) -> tuple[tuple[DerivedColumn, ...], Shedding | None]:
    """What the reader's tasks compute for ``spec`` besides the raw fields: the natively decoded
    sides (:func:`native_columns`) and, when every decoded side has one, the value's size
    (:data:`VALUE_BYTES`) and the :class:`Shedding` of the raw fields that then only the records
    decoded per record need (key, value, topic; those the table shows as metadata stay).

    Example:
        >>> derived, shedding = native_reading(orders)  # doctest: +SKIP
        >>> raw = read_splits(spark, splits, config, record_fields(orders), derived=derived,
        ...                   shedding=shedding)  # doctest: +SKIP
    """
    from pyspark.sql import types as T

    derived = native_columns(spec)
    exact = exact_columns(spec, {d.name for d in derived})
    sides = {_native(side) for side, *_ in _sides(spec)}
    if not derived or {d.name for d in derived} != sides:
        return (*derived, *exact), None
    shown = {METADATA_FIELDS.get(c.metadata_key or c.name) for c in spec.metadata_columns}
    shed = tuple(f for f in _PER_RECORD_FIELDS if f not in shown)
    size = DerivedColumn(VALUE_BYTES, "value", T.IntegerType(), _value_bytes)
    return (*derived, *exact, size), Shedding(shed, tuple(d.name for d in derived))


def exact_columns(spec: KafkaTableSpec, natives: Collection[str] = ()) -> tuple[DerivedColumn, ...]:
    """The sides' records rewritten for the per-record decoding where its format has such a
    pass (see :func:`..formats.exact_pass`), computed for the records the native decoding left
    (``natives``: the names of the native columns read beside them)."""
    from pyspark.sql import types as T

    meta = format_metadata_keys(spec)
    derived = []
    for side, fmt, columns, prefix in _sides(spec):
        own = _unprefixed(columns, prefix)
        rewrite = exact_pass(fmt.name, own, fmt, meta if side == "value" else [])
        if rewrite is not None:
            after = _native(side) if _native(side) in natives else None
            derived.append(DerivedColumn(_exact(side), side, T.BinaryType(), rewrite, after))
    return tuple(derived)


def _value_bytes(values: pa.Array) -> pa.Array:
    """Each value's size in bytes, 0 without a value (as :data:`VALUE_BYTES` counts it)."""
    import pyarrow.compute as pc

    return pc.binary_length(values).fill_null(0)


def _native(side: str) -> str:
    return f"__dkf_{side}_native"


def _exact(side: str) -> str:
    return f"__dkf_{side}_exact"


def _sides(spec: KafkaTableSpec) -> list[tuple[str, FormatSpec, tuple[Column, ...], str]]:
    """The decoded sides of a record: (side, format, columns, field prefix)."""
    sides = [("value", spec.value_format, spec.value_columns, spec.value_fields_prefix)]
    if spec.key_format is not None and spec.key_columns:
        sides.append(("key", spec.key_format, spec.key_columns, spec.key_fields_prefix))
    return sides


def format_metadata_keys(spec: KafkaTableSpec) -> list[str]:
    """The value format's own metadata keys (``value.<key>``) the table's columns read, in
    order, each once."""
    keys: list[str] = []
    for column in spec.metadata_columns:
        key = column.metadata_key or column.name
        if key not in METADATA_FIELDS and key.startswith("value.") and key[6:] not in keys:
            keys.append(key[6:])
    return keys


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


def _metadata(column: Column, format_keys: list[str]) -> SparkColumn:
    from pyspark.sql import functions as F

    key = column.metadata_key or column.name
    if key not in METADATA_FIELDS:  # the value format's own metadata
        value = F.col(_VALUE_META)[f"m{format_keys.index(key[6:])}"]
        return value.cast(spark_type(column.flink_type)).alias(column.name)
    field = METADATA_FIELDS[key]
    value = F.col(column_name(field))
    if field == "headers":
        value = headers_map(value)
    return value.cast(spark_type(column.flink_type)).alias(column.name)


def _decode(
    fmt: FormatSpec,
    columns: tuple[Column, ...],
    prefix: str,
    side: str,
    meta: list[str],
    native: bool = False,
    exact: bool = False,
) -> tuple[list[dict[str, SparkColumn]], dict[str, SparkColumn], SparkColumn, SparkColumn]:
    """Decode the record ``side`` (key or value): its projection stages, its parts (``struct``
    — for a changelog format ``rows`` and ``meta`` instead —, ``error`` with context,
    ``tolerated``), whether a dirty side is kept as a row (of the parts' columns, see
    :func:`_part`) and whether the format yields no row for the record.

    With ``native``, the reader decoded the side batch by batch (:func:`native_columns`): the
    per-record decoding sees only the records that decoding left null. With ``exact``, it reads
    the records the reader rewrote for it (:func:`_exact_columns`) as rewritten."""
    from pyspark.sql import functions as F

    raw = F.coalesce(F.col(_exact(side)), F.col(side)) if exact else F.col(side)
    format_ = get_format(fmt.name)
    skipped = format_.skipped(raw, fmt)
    if native:
        raw = F.when(F.col(_native(side)).isNull(), raw)
        # The value of a natively decoded record may be shed (see _shed_native_values): such a
        # record is an object, never one that yields no row.
        skipped = F.col(_native(side)).isNull() & skipped
    columns_in_format = _unprefixed(columns, prefix)
    parts: dict[str, SparkColumn]
    if isinstance(format_, ChangelogFormat):
        stages, (rows, meta_struct, error, tolerated) = format_.decode_changelog_stages(
            raw,
            columns_in_format,
            meta,
            fmt,
            f"__dkf_{side}_",
            F.col(_native(side)) if native else None,
        )
        parts = {"rows": rows, **({"meta": meta_struct} if meta_struct is not None else {})}
    else:
        headers = F.col(column_name("headers")) if format_.needs_headers else None
        stages, (struct, error, tolerated) = format_.decode_stages(
            raw, columns_in_format, fmt, f"__dkf_{side}_", headers, side
        )
        if native and isinstance(format_, StagedFormat):  # (Spark's expressions only)
            stages = _where_undecoded(stages, F.col(_native(side)).isNull())
        parts = {"struct": F.coalesce(F.col(_native(side)), struct) if native else struct}
    error = F.concat(F.lit(f"{side} ({fmt.name}): "), error)
    # Of the parts' columns, not of their expressions: repeated, a decoding's expressions make
    # Spark's analysis, optimization and generated code of every run the larger.
    if not format_.keeps_rows:
        kept = F.lit(False)
    elif "rows" in parts:  # a changelog record is kept when it has a row to keep
        kept = F.coalesce(F.size(F.col(_part(side, "rows"))) > 0, F.lit(False))
    else:
        kept = F.col(_part(side, "struct")).isNotNull()
    return stages, {**parts, "error": error, "tolerated": tolerated}, kept, skipped


def _part(side: str, part: str) -> str:
    """The column of a part of a side's decoding (see :func:`_decode`)."""
    return f"__dkf_{side}_{part}"


def _where_undecoded(
    stages: list[dict[str, SparkColumn]], undecoded: SparkColumn
) -> list[dict[str, SparkColumn]]:
    """The per-record decoding's stages null where the record was decoded natively (where they
    are null anyway, its value being null): the projections that hold them, which Spark cannot
    compile into whole-stage code, then evaluate none of their expressions for those records."""
    from pyspark.sql import functions as F

    return [{name: F.when(undecoded, expr) for name, expr in stage.items()} for stage in stages]


def _merged(
    first: list[dict[str, SparkColumn]], second: list[dict[str, SparkColumn]]
) -> list[dict[str, SparkColumn]]:
    """Two lists of projection stages as one (same level, same projection)."""
    levels = max(len(first), len(second))
    padded = [[*s, *([{}] * (levels - len(s)))] for s in (first, second)]
    return [{**a, **b} for a, b in zip(padded[0], padded[1], strict=True)]


class _Transformations:
    """DataFrame transformations written down instead of applied: the decoding of a table is
    built once per session (:func:`per_session`) and replayed on each frame of raw records
    (building it anew asked the JVM about 2,500 times per run, a quarter of a second of a warm
    session's run)."""

    def __init__(self, columns: tuple[str, ...]) -> None:
        self.columns = list(columns)
        self.steps: list[tuple[str, tuple[Any, ...]]] = []

    def select(self, *columns: Any) -> _Transformations:
        self.steps.append(("select", columns))
        return self

    def filter(self, condition: Any) -> _Transformations:
        self.steps.append(("filter", (condition,)))
        return self

    def withColumn(self, name: str, column: Any) -> _Transformations:
        self.steps.append(("withColumn", (name, column)))
        return self

    def observed(self) -> _Transformations:
        """Where :meth:`apply` hands the frame to its ``observe``."""
        self.steps.append((_OBSERVED, ()))
        return self

    def apply(self, frame: DataFrame, observe: Observe | None = None) -> DataFrame:
        for method, args in self.steps:
            if method != _OBSERVED:
                frame = getattr(frame, method)(*args)
            elif observe is not None:
                frame = observe(frame)
        return frame


_OBSERVED = "observed"
#: A pass-through of the decoded records that watches them (an observation of their input
#: statistics, see :func:`decode_records`).
Observe = Callable[["DataFrame"], "DataFrame"]
#: What the provenance columns are called where :func:`decode_records` hands a decoded record
#: to its ``observe`` (their record fields: the result renames them); the other columns have
#: their result's names there.
OBSERVED_COLUMNS = dict(zip(PROVENANCE, _PROVENANCE_FIELDS, strict=True))


def decode_records(
    spec: KafkaTableSpec, raw: DataFrame, observe: Observe | None = None
) -> DataFrame:
    """Decode raw records (columns from :func:`record_fields`) into the table's columns.

    Returns the table's columns in declaration order, then :data:`ROW_KIND` (changelog tables
    only), :data:`DIRTY_COLUMNS` and :data:`PROVENANCE`.

    ``observe`` watches every decoded record (one row per changelog row) where the plan holds
    it as a row already, before its columns are laid out: :data:`OBSERVED_COLUMNS` says what
    the result's columns are called there. A wide table's rows would otherwise be written out
    once more for it (an observation is a boundary of Spark's generated code).

    Example:
        >>> raw = read_splits(spark, splits, config, record_fields(spec))  # doctest: +SKIP
        >>> decoded = decode_records(spec, raw)  # doctest: +SKIP
        >>> rows = decoded.filter(yields_row())  # doctest: +SKIP
    """
    columns = tuple(raw.columns)
    try:  # the whole table (its repr leaves out what it need not show)
        key = ("decode_records", pickle.dumps(spec), columns)
    except (pickle.PicklingError, TypeError, AttributeError):
        return _decoding(spec, columns).apply(raw, observe)
    return per_session(raw.sparkSession, key, lambda: _decoding(spec, columns)).apply(raw, observe)


def _decoding(spec: KafkaTableSpec, raw_columns: tuple[str, ...]) -> _Transformations:
    """The transformations that decode a raw frame with ``raw_columns`` (see
    :func:`decode_records`)."""
    from pyspark.sql import functions as F

    decoding = _Transformations(raw_columns)
    raw: Any = decoding
    if spec.header_filter:
        raw = raw.filter(parse_header_filter(spec.header_filter).to_column(F.col("headers")))
    meta = format_metadata_keys(spec)
    natives = set(raw.columns) & {_native("key"), _native("value")}
    exacts = set(raw.columns) & {_exact("key"), _exact("value")}
    raw = _shed_native_values(spec, raw, natives)
    stages: list[dict[str, SparkColumn]] = []
    sides: dict[str, dict[str, SparkColumn]] = {}
    kept: dict[str, SparkColumn] = {}
    for side, fmt, columns, prefix in _sides(spec):
        side_stages, sides[side], kept[side], side_no_row = _decode(
            fmt,
            columns,
            prefix,
            side,
            meta if side == "value" else [],
            _native(side) in natives,
            _exact(side) in exacts,
        )
        stages = _merged(stages, side_stages)
        if side == "value":
            no_row = side_no_row
    if spec.is_upsert:  # a null value is a deletion of its key: kept
        no_row = no_row & _has_value(natives)
    raw = raw.filter(~no_row)
    for stage in stages:
        if stage:
            raw = raw.select("*", *[expr.alias(name) for name, expr in stage.items()])

    # Each side's parts (struct, error, tolerated flag) become columns first: the table's
    # columns, the error and the tolerated flag then read them instead of repeating the decoding.
    decoded = raw.select(
        "*",
        *[expr.alias(_part(name, part)) for name, side in sides.items()
          for part, expr in side.items()],
    )  # fmt: skip
    side_errors = [F.col(_part(name, "error")) for name in ("key", "value") if name in sides]
    tolerated = F.col(ERROR).isNotNull()
    stamp_error = column_name(TIMESTAMP_ERROR)
    if stamp_error in raw_columns:  # a timestamp Spark cannot hold: no format tolerates it
        side_errors.insert(0, F.col(stamp_error))
        tolerated = tolerated & F.col(stamp_error).isNull()
    error = F.coalesce(*side_errors) if len(side_errors) > 1 else side_errors[0]
    partial = F.lit(True)  # every dirty side kept as a row
    for name in sides:
        side_error = F.col(_part(name, "error"))
        tolerated = tolerated & (side_error.isNull() | F.col(_part(name, "tolerated")))
        partial = partial & (side_error.isNull() | kept[name])
    decoded = (
        decoded.withColumn(ERROR, error)
        .withColumn(TOLERATED, tolerated)
        .withColumn(PARTIAL, tolerated & partial)
    )

    changelog = "rows" in sides["value"]
    if changelog:
        decoded, value_struct, kind, start = _changelog_rows(decoded)
    else:
        value_struct, start = F.col(_part("value", "struct")), F.lit(True)
        kind = F.when(yields_row(), F.when(_has_value(natives), "+I").otherwise("-D"))
    decoded = decoded.withColumn(RECORD_START, start).observed()

    in_value = {c.name for c in spec.value_columns}
    in_key = {c.name for c in spec.key_columns} if "key" in sides else set()
    key_struct = F.col(_part("key", "struct"))
    selected: list[SparkColumn] = []
    for column in spec.columns:
        if column.is_metadata:
            selected.append(_metadata(column, meta))
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
    kinds = [kind.alias(ROW_KIND)] if spec.is_changelog else []
    provenance = [
        F.col(field).alias(alias)
        for field, alias in zip(_PROVENANCE_FIELDS, PROVENANCE, strict=True)
    ]
    table = decoded.select(*selected, *kinds, *DIRTY_COLUMNS, *provenance)
    if any(c.expression is not None for c in spec.columns):
        keep = (ROW_KIND,) if spec.is_changelog else ()
        table = with_computed_columns(spec, table, *keep, *DIRTY_COLUMNS, *PROVENANCE)
    return decoding


def yields_row() -> SparkColumn:
    """Whether a decoded record is a row of the table: clean, or dirty and kept
    (:data:`PARTIAL`)."""
    from pyspark.sql import functions as F

    return F.col(ERROR).isNull() | F.coalesce(F.col(PARTIAL), F.lit(False))


def _shed_native_values(spec: KafkaTableSpec, raw: Any, natives: set[str]) -> Any:
    """``raw`` without the value bytes of the records every decoded side of which the reader
    decoded natively (and whose timestamp it read), and with :data:`VALUE_BYTES` (the value's
    size, counted before).

    Those records are clean, so nothing reads their raw value again (the dirty records' samples
    and dead letters keep theirs). Carrying ~200 bytes per record through every projection of
    the decoding costs more than the decoding itself. A table that shows the raw value
    (``__raw_value__``) keeps it. A reader that shed the value itself (:func:`native_reading`)
    has counted the sizes already, and then ``raw`` is returned as it is.
    """
    from pyspark.sql import functions as F

    if VALUE_BYTES in raw.columns:
        return raw
    value = F.col("value")
    sides = [side for side, *_ in _sides(spec)]
    shown = any(
        METADATA_FIELDS.get(c.metadata_key or c.name) == "value" for c in spec.metadata_columns
    )
    if not shown and sides and all(_native(side) in natives for side in sides):
        decoded = [F.col(_native(side)).isNotNull() for side in sides]
        if column_name(TIMESTAMP_ERROR) in raw.columns:  # a dirty record keeps its bytes
            decoded.append(F.col(column_name(TIMESTAMP_ERROR)).isNull())
        value = F.when(~reduce(operator.and_, decoded), value)
    others = [_quoted(c) for c in raw.columns if c != "value"]
    size = F.coalesce(F.length("value"), F.lit(0))
    return raw.select(*others, value.alias("value"), size.alias(VALUE_BYTES))


def _has_value(natives: set[str]) -> SparkColumn:
    """Whether a record has a value (a natively decoded one has, shed or not)."""
    from pyspark.sql import functions as F

    has_value = F.col("value").isNotNull()
    if _native("value") in natives:
        has_value = has_value | F.col(_native("value")).isNotNull()
    return has_value


def _changelog_rows(decoded: Any) -> tuple[Any, SparkColumn, SparkColumn, SparkColumn]:
    """One row per changelog row of each record (none for a record that yields none, one for a
    dirty record, unless it is kept: :data:`PARTIAL`): the frame, then the row's value struct,
    row kind and record-start flag."""
    from pyspark.sql import functions as F

    rows = F.col(_part("value", "rows"))
    position = "__dkf_value_position"
    exploded = decoded.select(
        "*", F.posexplode_outer(F.when(yields_row(), rows)).alias(position, _VALUE_ROW)
    )
    row = F.col(_VALUE_ROW)
    # Filtered after the explode (a record without rows leaves one null row): a filter before
    # it would reach down to the decoding's projections, and Spark would then repeat the whole
    # decoding's error and rows inside that filter's code.
    exploded = exploded.filter(F.col(ERROR).isNotNull() | row.isNotNull())
    start = F.coalesce(F.col(position) == 0, F.lit(True))
    return exploded, row["r"], row["k"], start


def with_computed_columns(spec: KafkaTableSpec, frame: Any, *keep: str) -> Any:
    """``frame`` (the table's stored columns) with its computed columns, in declared order,
    followed by the ``keep`` columns."""
    from pyspark.sql import functions as F

    computed = [F.expr(c.expression or "").alias(c.name) for c in spec.columns if c.expression]
    table = frame.select("*", *computed)
    return table.select(*[_quoted(c.name) for c in spec.columns], *keep)


__all__ = [
    "DIRTY_COLUMNS",
    "ERROR",
    "METADATA_FIELDS",
    "OBSERVED_COLUMNS",
    "PARTIAL",
    "PROVENANCE",
    "RECORD_START",
    "TOLERATED",
    "VALUE_BYTES",
    "Observe",
    "decode_records",
    "exact_columns",
    "format_metadata_keys",
    "headers_map",
    "native_reading",
    "record_fields",
    "with_computed_columns",
    "yields_row",
]
