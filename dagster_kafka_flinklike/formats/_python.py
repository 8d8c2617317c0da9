"""Record codecs that run in Python on the executors, inside Spark's Arrow UDFs.

Binary formats (Avro, Protobuf, the Schema Registry framings) decode one record at a time with
a Python library. :func:`decode_udf` wraps such a per-record function into a Spark column: each
Arrow batch of raw bytes becomes a batch of ``struct<row, error>``, ``row`` holding the table's
columns and ``error`` saying why a record is dirty (the exception, with its type), so a bad
record never fails the task and never disappears. A failure that is not the record's own (a
Schema Registry that does not answer: :class:`~dagster_kafka_flinklike.errors.
SchemaRegistryClientError`) fails the task, and so the run, instead. :func:`encode_udf` does the
reverse for sinks.

Values cross between the codec and Spark as Python objects; :func:`to_spark` and
:func:`from_spark` adapt the few that Arrow cannot take as they are (TIME carried as STRING,
narrow integers checked, MAP entries as dicts).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import SchemaRegistryClientError
from ..options import Column, FlinkType, row_type, spark_type

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

ROW = "row"
ERROR = "error"
_RANGES = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}

Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _needs_conversion(t: FlinkType) -> bool:
    return t.name in ("TIME", "TINYINT", "SMALLINT", "MAP") or any(
        _needs_conversion(c) for c in t.children
    )


def _time_text(value: Any) -> Any:
    if isinstance(value, dt.time):
        text = value.isoformat()
        return text[:-3] if value.microsecond else text  # TIME(3): milliseconds at most
    return value


def _checked_int(bound: int, name: str) -> Convert:
    def check(value: Any) -> Any:
        if value is not None and not -bound <= value < bound:
            raise ValueError(f"{value} is out of range for {name}")
        return value

    return check


def to_spark(t: FlinkType) -> Convert:
    """A function turning a codec's value of Flink type ``t`` into one Arrow builds as Spark's.

    Example:
        >>> to_spark(FlinkType("TIME"))(dt.time(12, 30, 1))
        '12:30:01'
    """
    if not _needs_conversion(t):
        return _identity
    if t.name == "TIME":
        return _time_text
    if t.name in _RANGES:
        return _checked_int(_RANGES[t.name], t.name)
    if t.name in ("ARRAY", "MULTISET"):
        item = to_spark(t.children[0])
        return lambda v: None if v is None else [item(x) for x in v]
    if t.name == "MAP":
        key, value = to_spark(t.children[0]), to_spark(t.children[1])
        return lambda v: None if v is None else {key(k): value(x) for k, x in v.items()}
    if t.name == "ROW":
        fields = [(n, to_spark(c)) for n, c in zip(t.field_names, t.children, strict=True)]
        return lambda v: None if v is None else {n: f(v.get(n)) for n, f in fields}
    return _identity


def _time_value(value: Any) -> Any:
    if isinstance(value, str):
        return dt.time.fromisoformat(value)
    return value


def from_spark(t: FlinkType) -> Convert:
    """A function turning Arrow's Python value of Flink type ``t`` into the codec's.

    Example:
        >>> from_spark(FlinkType("MAP", children=(FlinkType("STRING"), FlinkType("INT"))))(
        ...     [("a", 1)])
        {'a': 1}
    """
    if not _needs_conversion(t):
        return _identity
    if t.name == "TIME":
        return _time_value
    if t.name in ("ARRAY", "MULTISET"):
        item = from_spark(t.children[0])
        return lambda v: None if v is None else [item(x) for x in v]
    if t.name == "MAP":
        key, value = from_spark(t.children[0]), from_spark(t.children[1])
        return lambda v: None if v is None else {key(k): value(x) for k, x in v}
    if t.name == "ROW":
        fields = [(n, from_spark(c)) for n, c in zip(t.field_names, t.children, strict=True)]
        return lambda v: None if v is None else {n: f(v.get(n)) for n, f in fields}
    return _identity


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or "no details"
    return f"{type(exc).__name__}: {text}"[:500]


def decode_udf(
    make_decoder: Callable[[], Callable[[bytes, Any], Any]],
    columns: Sequence[Column],
) -> Callable[..., SparkColumn]:
    """A Spark function ``(raw, headers=None)`` of the raw bytes (and the records' headers, for
    formats that read them) giving ``struct<row, error>``.

    ``make_decoder()`` runs once per Python worker and returns ``decode(data, headers)``, which
    returns the record's fields as a dict (``None``: no row) or raises: any exception makes the
    record dirty, its type and message becoming the error, except a
    :class:`~dagster_kafka_flinklike.errors.SchemaRegistryClientError`, which fails the task.

    Example:
        >>> decode = decode_udf(lambda: lambda data, _: {"v": data.decode()},
        ...                     [Column("v", "STRING")])  # doctest: +SKIP
        >>> frame.select(decode(F.col("value")))  # doctest: +SKIP
    """
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    row = row_type(columns)
    spark_row = spark_type(row)
    result = T.StructType([T.StructField(ROW, spark_row), T.StructField(ERROR, T.StringType())])
    convert = to_spark(row)
    state: dict[str, Any] = {}

    def decode_batch(values: Any, headers: Any) -> Any:
        if "decode" not in state:
            from pyspark.sql.pandas.types import to_arrow_type

            state["decode"] = make_decoder()
            state["type"] = to_arrow_type(spark_row, timezone="UTC")
            state["result"] = to_arrow_type(result, timezone="UTC")
        if values.null_count == len(values):  # nothing to decode (another path read them all)
            return pa.nulls(len(values), type=state["result"])
        decode, arrow_row = state["decode"], state["type"]
        header_list = headers.to_pylist() if headers is not None else None
        rows: list[Any] = []
        errors: list[str | None] = []
        for i, data in enumerate(values.to_pylist()):
            if data is None:
                rows.append(None)
                errors.append(None)
                continue
            try:
                rows.append(convert(decode(data, header_list[i] if header_list else None)))
                errors.append(None)
            except SchemaRegistryClientError:  # not the record's fault: the run fails
                raise
            except Exception as exc:  # any other failure to decode one record makes it dirty
                rows.append(None)
                errors.append(_error_text(exc))
        try:
            built = pa.array(rows, type=arrow_row)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            built = _build_one_by_one(rows, errors, arrow_row)
        return pa.StructArray.from_arrays(
            [built, pa.array(errors, type=pa.string())], names=[ROW, ERROR]
        )

    def decode_values(values: Any) -> Any:
        return decode_batch(values, None)

    with_headers = F.arrow_udf(_arrow_hints(decode_batch, 2), result)  # type: ignore[call-overload]
    values_only = F.arrow_udf(_arrow_hints(decode_values, 1), result)  # type: ignore[call-overload]

    def apply(raw: SparkColumn, headers: SparkColumn | None = None) -> SparkColumn:
        return values_only(raw) if headers is None else with_headers(raw, headers)

    return apply


def python_stage(
    name: str, stage: SparkColumn, tolerated: bool
) -> tuple[list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn, SparkColumn]]:
    """A decoding by one Python stage as the formats return it: (stages, (row, error,
    tolerated)), the stage's ``struct<row, error>`` evaluated once per record as ``name``."""
    from pyspark.sql import functions as F

    col = F.col(name)
    return [{name: stage}], (col[ROW], col[ERROR], F.lit(tolerated))


def one_expression(
    staged: tuple[list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn, SparkColumn]],
) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
    """The (row, error, tolerated) of a :func:`python_stage` decoding as expressions of the raw
    columns alone (the formats' ``decode``)."""
    stages, (_, _, tolerated) = staged
    ((_, decoded),) = stages[0].items()
    return decoded[ROW], decoded[ERROR], tolerated


def _arrow_hints(function: Callable[..., Any], arity: int) -> Callable[..., Any]:
    """``function`` annotated ``pa.Array, ... -> pa.Array``, which is how Spark recognises a
    scalar Arrow UDF (string annotations would not resolve: pyarrow is imported lazily)."""
    import pyarrow as pa

    names = function.__code__.co_varnames[:arity]
    function.__annotations__ = {**{n: pa.Array for n in names}, "return": pa.Array}
    return function


def _build_one_by_one(rows: list[Any], errors: list[str | None], arrow_row: Any) -> Any:
    """Build the rows one at a time: a row Arrow cannot hold becomes a dirty record."""
    import pyarrow as pa

    for i, row in enumerate(rows):
        try:
            pa.array([row], type=arrow_row)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            rows[i] = None
            errors[i] = _error_text(exc)
    return pa.array(rows, type=arrow_row)


def encode_udf(
    make_encoder: Callable[[], Callable[[dict[str, Any]], bytes]],
    fields: Sequence[tuple[SparkColumn, Column]],
) -> SparkColumn:
    """A Spark column of the encoded bytes of ``fields`` (a null row encodes to null).

    ``make_encoder()`` runs once per Python worker and returns ``encode(row_dict) -> bytes``;
    an exception fails the write, naming the row's problem (a sink never drops a row).

    Example:
        >>> value = encode_udf(lambda: lambda row: row["v"].encode(),
        ...                    [(F.col("v"), Column("v", "STRING"))])  # doctest: +SKIP
    """
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    columns = [c for _, c in fields]
    convert = from_spark(row_type(columns))
    state: dict[str, Any] = {}

    def encode_batch(rows: Any) -> Any:
        if "encode" not in state:
            state["encode"] = make_encoder()
        encode = state["encode"]
        out = [None if row is None else encode(convert(row)) for row in rows.to_pylist()]
        return pa.array(out, type=pa.binary())

    udf = F.arrow_udf(_arrow_hints(encode_batch, 1), T.BinaryType())  # type: ignore[call-overload]
    return udf(F.struct(*[source.alias(c.name) for source, c in fields]))


__all__ = [
    "decode_udf",
    "encode_udf",
    "from_spark",
    "one_expression",
    "python_stage",
    "to_spark",
]
