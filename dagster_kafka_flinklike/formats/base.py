"""The contract of a format: one small base class each format module subclasses once.

A :class:`Format` decodes a record's key or value bytes into Spark columns and encodes columns
into bytes. What the reader and the sink call:

- ``decode_stages(raw, columns, options, prefix) -> (stages, (struct, error, tolerated))``:
  ``raw`` is the record's key or value bytes; ``struct`` holds the ``columns`` (a null struct
  means the format yields no row for the record, as Flink's formats do for a null value);
  ``error`` is null for a clean record and says why a record is dirty otherwise; ``tolerated``
  is true for a dirty record the format's ``ignore-parse-errors`` tolerates (collected
  instead of failing the run, and skipped unless the format :attr:`~Format.keeps_rows` and
  its struct is not null). ``stages`` are projections (dicts of new column name →
  expression, added in order before the result's expressions are used), so the parse runs
  once per record where Spark would otherwise repeat it inside conditional and higher-order
  expressions. A format with :attr:`~Format.needs_headers` (schema ids in headers) also gets
  the records' headers and which side of the record it decodes (``headers=``, ``side=``).
- ``decode(raw, columns, options)``: the same as plain expressions of ``raw``.
- ``skipped(raw, options) -> bool column``: records the format yields no row for (cheap to
  evaluate, so callers can drop them without decoding twice).
- ``native_decoder(columns, options) -> callable | None``: a decoder of a whole Arrow batch of
  raw bytes into a struct of the ``columns`` (null where a record needs ``decode_stages``),
  which the reader's tasks run where the bytes already are (``json``, ``csv``).
- ``encode(fields, options) -> bytes column``: ``fields`` are (Spark column, :class:`Column`)
  pairs.

What differs between formats is small, so the base classes below hold the rest:
:class:`StagedFormat` (decoded by Spark expressions, staged by a :class:`Stager`: ``json``,
``csv``, ``raw``), :class:`PythonFormat` (records decoded one by one in the executors' Python
workers: the Avro and protobuf formats); the changelog formats (``debezium-json``,
``canal-json``, ...: 0..n rows per record, each with a Flink row kind) subclass
:class:`._changelog.ChangelogFormat`.

``options`` is either the table's :class:`FormatSpec` or the format's options as written
(``{"ignore-parse-errors": "true"}``), defaults applied either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..options import Column, FormatSpec, resolve_format

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql.types import DataType

#: The options a format is given: the table's :class:`FormatSpec`, or its options as written.
Options = FormatSpec | Mapping[str, Any]
#: A record decoded: (row struct, error, tolerated).
Decoded = tuple["SparkColumn", "SparkColumn", "SparkColumn"]
#: Projections to add in order (new column name → expression), then what reads them.
Stages = list[dict[str, "SparkColumn"]]
Fields = Sequence[tuple["SparkColumn", Column]]


def format_settings(name: str, options: Options) -> Mapping[str, Any]:
    """Every option of format ``name`` parsed, defaults applied.

    ``options`` is a :class:`FormatSpec` (its parsed ``settings`` are used) or the format's own
    options as written, without prefix (parsed and checked as the options layer does).

    Example:
        >>> format_settings("json", {"ignore-parse-errors": "true"})["ignore-parse-errors"]
        True

    Raises:
        KafkaOptionsError: an option is unknown to the format or has an invalid value.
    """
    if isinstance(options, FormatSpec):
        if options.settings or not options.options:
            return options.settings or resolve_format({}, name, "format").settings
        options = options.options
    written = {f"{name}.{key}": _text(value) for key, value in options.items()}
    return resolve_format(written, name, "format").settings


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class NativeDecoder(Protocol):
    """Decodes an Arrow array of raw bytes into an array of ``spark_type`` (same length, null
    where a record needs the per-record decoding): a struct of the row, or a changelog format's
    rows (see :mod:`._changelog`). Every record it decodes is clean, so the reader may shed
    its raw bytes; a dirty one is left null, to be decoded and reported per record."""

    spark_type: DataType

    def __call__(self, values: pa.Array) -> pa.Array: ...


class Stager:
    """Intermediate columns of a decode, computed once in their own projections.

    Spark evaluates an expression again wherever it is repeated inside conditional or
    higher-order expressions; naming the parse result (and the converted values) as columns of
    earlier projections makes every later reference a plain column read. Without a ``prefix``
    nothing is staged and :meth:`put` returns the expression itself.

    Example:
        >>> stager = Stager("__dkf_value_", 2)
        >>> parsed = stager.put(0, "parsed", F.from_json(text, schema))  # doctest: +SKIP
    """

    def __init__(self, prefix: str | None, levels: int) -> None:
        self.prefix = prefix
        self.stages: Stages = [{} for _ in range(levels)]

    def put(self, level: int, name: str, expr: SparkColumn) -> SparkColumn:
        """The column for ``expr``, staged at ``level`` (0 first) when staging."""
        from pyspark.sql import functions as F

        if self.prefix is None:
            return expr
        full = f"{self.prefix}{name}"
        self.stages[level][full] = expr
        return F.col(full)


class Format:
    """A Flink format (see the module's docstring for the contract). Subclasses set
    :attr:`name` and define what is their own; the defaults serve most formats.

    Example:
        >>> class Text(StagedFormat):
        ...     name = "text"
        ...     def decode_with(self, raw, columns, options, stager): ...
        ...     def encode(self, fields, options): ...
    """

    #: The format's name, as ``format`` / ``value.format`` write it.
    name: ClassVar[str] = ""
    #: Whether the format reads records as changelog rows with row kinds.
    changelog: ClassVar[bool] = False
    #: Whether a tolerated dirty record whose ``struct`` is not null stays a row, the fields
    #: that failed null (Flink's JSON formats under ``ignore-parse-errors``); otherwise every
    #: tolerated dirty record is skipped, as Flink's other formats skip it.
    keeps_rows: ClassVar[bool] = False
    #: Whether the format reads the records' headers (schema ids in headers).
    needs_headers: ClassVar[bool] = False

    def settings(self, options: Options) -> Mapping[str, Any]:
        """Every option of the format parsed, defaults applied (:func:`format_settings`)."""
        return format_settings(self.name, options)

    def skipped(self, raw: SparkColumn, options: Options) -> SparkColumn:
        """Records that yield no row: by default those without a value."""
        return raw.isNull()

    def native_decoder(self, columns: Sequence[Column], options: Options) -> NativeDecoder | None:
        """A decoder of whole Arrow batches for ``columns``: by default none."""
        return None

    def exact_pass(
        self, columns: Sequence[Column], options: Options, metadata: Sequence[str] = ()
    ) -> Callable[[pa.Array], pa.Array] | None:
        """A rewrite of the records the per-record decoding of ``columns`` (and of the format's
        ``metadata`` keys) reads, batch by batch in the reading tasks, where it would not give
        Flink's result (null where a record stays as it is): by default none."""
        return None

    def decode_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        options: Options,
        prefix: str,
        headers: SparkColumn | None = None,
        side: str = "value",
    ) -> tuple[Stages, Decoded]:
        """Decode ``raw`` into a struct of ``columns`` as projection stages, then the result."""
        raise NotImplementedError(f"format '{self.name}' decodes changelog rows")

    def decode(self, raw: SparkColumn, columns: Sequence[Column], options: Options) -> Decoded:
        """(row struct, error, tolerated) of each record as expressions of ``raw`` alone."""
        raise NotImplementedError(f"format '{self.name}' decodes changelog rows")

    def encode(self, fields: Fields, options: Options) -> SparkColumn:
        """Each row of ``fields`` as the bytes of one record."""
        raise NotImplementedError


class StagedFormat(Format):
    """A format decoded by Spark's own expressions: it defines :meth:`decode_with`, which puts
    what it computes once per record on the :class:`Stager` it is given."""

    #: How many projections the decoding stages at most.
    levels: ClassVar[int] = 2

    def decode_with(
        self, raw: SparkColumn, columns: Sequence[Column], options: Options, stager: Stager
    ) -> Decoded:
        """(row struct, error, tolerated) of ``raw``, staging through ``stager``."""
        raise NotImplementedError

    def decode_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        options: Options,
        prefix: str,
        headers: SparkColumn | None = None,
        side: str = "value",
    ) -> tuple[Stages, Decoded]:
        """:meth:`decode_with` with a staging :class:`Stager`: its stages, then the result."""
        stager = Stager(prefix, self.levels)
        result = self.decode_with(raw, columns, options, stager)
        return stager.stages, result

    def decode(self, raw: SparkColumn, columns: Sequence[Column], options: Options) -> Decoded:
        """:meth:`decode_with` without staging."""
        return self.decode_with(raw, columns, options, Stager(None, 0))


#: What a Python format's workers build once to decode one record: ``decode(data, headers)``.
RecordDecoder = Callable[[], Callable[[bytes, Any], Any]]
#: What a Python format's workers build once to encode one row: ``encode(row) -> bytes``.
RecordEncoder = Callable[[], Callable[[dict[str, Any]], bytes]]


def values_only(make_read: Callable[[], Callable[[bytes], Any]]) -> RecordDecoder:
    """The :data:`RecordDecoder` of a format that reads a record's bytes alone (not its
    headers): ``make_read()`` builds, once per worker, the function reading one record."""

    def make_decoder() -> Callable[[bytes, Any], Any]:
        read = make_read()
        return lambda data, _headers: read(data)

    return make_decoder


class PythonFormat(Format):
    """A binary format whose records are decoded and encoded one at a time in the executors'
    Python workers (see :mod:`._python`): it defines :meth:`record_decoder` and
    :meth:`record_encoder`; the stage, the UDFs and the dirty-record handling are the base's."""

    #: The name of the staged column (after the caller's prefix).
    stage: ClassVar[str] = ""

    def check(self, columns: Sequence[Column], settings: Mapping[str, Any]) -> None:
        """Refuse ``columns`` the format cannot hold (before any record is read or written)."""

    def checked_settings(self, columns: Sequence[Column], options: Options) -> Mapping[str, Any]:
        """The format's settings (:meth:`settings`), once :meth:`check` accepts ``columns``.

        Raises:
            KafkaOptionsError: the format cannot hold a column.
        """
        settings = self.settings(options)
        self.check(columns, settings)
        return settings

    def record_decoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any], side: str
    ) -> RecordDecoder:
        """What each worker builds once: ``decode(data, headers)`` → the record's fields as a
        dict (None: no row), raising for a dirty record."""
        raise NotImplementedError

    def record_encoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any]
    ) -> RecordEncoder:
        """What each worker builds once: ``encode(row)`` → the record's bytes (on the driver
        first, whatever must happen once per write, such as registering a schema)."""
        raise NotImplementedError

    def tolerated(self, settings: Mapping[str, Any]) -> bool:
        """Whether a dirty record is tolerated (``ignore-parse-errors``, where the format has
        it)."""
        return bool(settings.get("ignore-parse-errors", False))

    def python_decoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any], side: str = "value"
    ) -> Callable[..., SparkColumn]:
        """The per-record decoding as a Spark function ``(raw, headers=None)`` giving
        ``struct<row, error>`` (see :func:`._python.decode_udf`)."""
        from ._python import decode_udf

        return decode_udf(self.record_decoder(columns, settings, side), columns)

    def python_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        settings: Mapping[str, Any],
        prefix: str,
        headers: SparkColumn | None = None,
        side: str = "value",
    ) -> tuple[Stages, Decoded]:
        """The decoding by one Python stage, evaluated once per record."""
        from ._python import python_stage

        decoder = self.python_decoder(columns, settings, side)
        return python_stage(
            f"{prefix}{self.stage}", decoder(raw, headers), self.tolerated(settings)
        )

    def jvm_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        settings: Mapping[str, Any],
        prefix: str,
        headers: SparkColumn | None,
        side: str,
    ) -> tuple[Stages, Decoded] | None:
        """A decoding that reads what it can in Spark's JVM first (the Python stage reading
        only the records it leaves), where the session allows one: by default none."""
        return None

    def decode_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        options: Options,
        prefix: str,
        headers: SparkColumn | None = None,
        side: str = "value",
    ) -> tuple[Stages, Decoded]:
        """Decode once per record into a staged column, then read the row and error from it
        (with :meth:`jvm_stages` where the format has them).

        Raises:
            KafkaOptionsError: the format cannot hold a column.
        """
        settings = self.checked_settings(columns, options)
        jvm = self.jvm_stages(raw, columns, settings, prefix, headers, side)
        return (
            jvm
            if jvm is not None
            else self.python_stages(raw, columns, settings, prefix, headers, side)
        )

    def decode(self, raw: SparkColumn, columns: Sequence[Column], options: Options) -> Decoded:
        """The Python decoding as one expression of ``raw`` (:meth:`decode_stages` is the
        pipeline's path)."""
        from ._python import one_expression

        settings = self.checked_settings(columns, options)
        return one_expression(self.python_stages(raw, columns, settings, ""))

    def encode(self, fields: Fields, options: Options) -> SparkColumn:
        """Each row encoded in the Python workers.

        Raises:
            KafkaOptionsError: the format cannot hold a column.
        """
        from ._python import encode_udf

        columns = [c for _, c in fields]
        settings = self.checked_settings(columns, options)
        return encode_udf(self.record_encoder(columns, settings), fields)


__all__ = [
    "Decoded",
    "Fields",
    "Format",
    "NativeDecoder",
    "Options",
    "PythonFormat",
    "RecordDecoder",
    "RecordEncoder",
    "StagedFormat",
    "Stager",
    "Stages",
    "format_settings",
    "values_only",
]
