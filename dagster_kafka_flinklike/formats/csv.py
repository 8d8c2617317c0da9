"""The ``csv`` format: one CSV row per record, read with ``from_csv``, written with ``to_csv``;
the reading tasks decode the records of a flat table with a record scanner where the bytes are
(:mod:`._scanners`), and ``from_csv`` reads only those it leaves.

Decoding follows Flink's CSV format:

- ``field-delimiter``, ``quote-character`` (a doubled quote inside a quoted field is a literal
  quote), ``disable-quote-character``, ``escape-character`` (escapes inside quoted fields; none
  by default), ``allow-comments`` (a record starting with ``#`` yields no row).
- A row whose number of fields differs from the table's is dirty (one trailing empty field
  beyond them is allowed, as Flink's parser allows a trailing delimiter), as is a value that
  does not convert to its column's type (an empty field is an empty STRING and is dirty for
  numbers, dates and timestamps, as in Flink), and a row whose quoting is broken (a quoted field
  not closed, or text after its closing quote other than spaces; a quote inside an unquoted
  field is text), which Flink's parser fails and Spark's would read leniently.
- ``null-literal``: a field with exactly this text is NULL (no literal by default).
- ``array-element-delimiter`` separates the elements of an ARRAY column and the fields of a
  ROW column. Elements and nested fields are scalars; MAP and MULTISET are not supported.
- Scalars convert as in the ``json`` format; TIMESTAMP is ``2020-12-30 12:13:14.123`` and
  TIMESTAMP_LTZ the same in UTC, with or without a trailing ``Z`` (written with it).
- ``ignore-parse-errors``: a failing record is still dirty (counted and collected) but
  tolerated, as Flink tolerates it: a record whose fields fail or are missing keeps its row,
  with null in those fields; one with too many fields or broken quoting is skipped.
- A null or empty value yields no row; one trailing line break is ignored.

Encoding writes the same shape; ``write-bigdecimal-in-scientific-notation`` = false writes
DECIMAL as plain digits. With quoting disabled fields are joined as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import CSV_NESTED, Column, FlinkType, csv_column_types
from .base import Decoded, Fields, Options, StagedFormat, Stager
from .json import first_error, leaf, leaf_error, leaf_value, timestamp_text

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

    from ._scanners import NativeCsv

CORRUPT = "__dkf_corrupt_record"
#: Text Spark reads as NULL; never written by a user, so only empty fields read as Spark NULL.
_NO_NULL = "\u0000dkf-no-null-literal\u0000"


def _spark_options(settings: Mapping[str, Any]) -> dict[str, str]:
    """Spark CSV options equivalent to the format's settings (shared by reading and writing)."""
    quote = settings.get("quote-character")
    escape = settings.get("escape-character")
    options = {
        "sep": settings["field-delimiter"],
        "quote": quote if quote is not None else "",
        "escape": escape or quote or "\u0000",
        "ignoreLeadingWhiteSpace": "false",
        "ignoreTrailingWhiteSpace": "false",
        "emptyValue": "",
    }
    if settings["allow-comments"]:
        options["comment"] = "#"
    return options


def _delimiter_regex(settings: Mapping[str, Any]) -> str:
    return "\\Q" + str(settings["array-element-delimiter"]) + "\\E"


def _nullable(text: SparkColumn, literal: str | None) -> SparkColumn:
    from pyspark.sql import functions as F

    return text if literal is None else F.when(text != F.lit(literal), text)


def _scalar_text(text: SparkColumn, t: FlinkType) -> SparkColumn:
    """The text as the JSON converters read it (TIMESTAMP_LTZ with its ``Z``)."""
    from pyspark.sql import functions as F

    if t.name == "TIMESTAMP_LTZ":
        return F.when(text.endswith("Z"), text).otherwise(F.concat(text, F.lit("Z")))
    return text


def _scalar(text: SparkColumn, t: FlinkType, path: str) -> tuple[SparkColumn, SparkColumn | None]:
    return leaf(_scalar_text(text, t), t, path, "SQL")


def _convert(
    text: SparkColumn, t: FlinkType, path: str, settings: Mapping[str, Any]
) -> tuple[SparkColumn, SparkColumn | None]:
    """One field's text (null for NULL) converted to ``t``; also its error column."""
    from pyspark.sql import functions as F

    literal = settings.get("null-literal")
    if t.name not in CSV_NESTED:
        return _scalar(text, t, path)
    parts = F.when(text == F.lit(""), F.array().cast("array<string>")).otherwise(
        F.split(text, _delimiter_regex(settings), -1)
    )
    if t.name == "ARRAY":
        child, where = t.children[0], f"{path}[*]"

        def element(x: SparkColumn) -> SparkColumn:
            value, error = _scalar(_nullable(x, literal), child, where)
            return F.struct(value.alias("v"), _error_or_null(error).alias("e"))

        pairs = F.transform(parts, element)
        errors = F.aggregate(pairs, F.lit(None).cast("string"), lambda a, p: F.coalesce(a, p["e"]))
        return F.when(text.isNotNull(), F.transform(pairs, lambda p: p["v"])), errors
    n = len(t.children)
    values, errors_list = [], []
    for i, (name, child) in enumerate(zip(t.field_names, t.children, strict=True)):
        value, error = _scalar(_nullable(F.get(parts, i), literal), child, f"{path}.{name}")
        values.append(value.alias(name))
        errors_list.append(error)
    arity = F.when(
        text.isNotNull() & (F.size(parts) != F.lit(n)),
        F.concat(
            F.lit(f"field '{path}': row length mismatch, {n} fields expected but was "),
            F.size(parts).cast("string"),
        ),
    )
    return F.when(text.isNotNull(), F.struct(*values)), first_error([arity, *errors_list])


def _error_or_null(error: SparkColumn | None) -> SparkColumn:
    from pyspark.sql import functions as F

    return error if error is not None else F.lit(None).cast("string")


def _text(raw: SparkColumn) -> SparkColumn:
    """The record as text without one trailing line break."""
    from pyspark.sql import functions as F

    text = raw.cast("string")
    return F.when(text.endswith("\n"), F.regexp_replace(text, "\\r?\\n\\z", "")).otherwise(text)


def _skipped(raw: SparkColumn, settings: Mapping[str, Any]) -> SparkColumn:
    from pyspark.sql import functions as F

    out = raw.isNull() | ((F.length(raw) <= F.lit(2)) & (_text(raw) == F.lit("")))
    if settings["allow-comments"]:
        out = out | (raw.substr(1, 1) == F.lit(bytearray(b"#")))
    return out


def _rx(char: str) -> str:
    """One character as a literal in a Java regular expression (inside a class too)."""
    return char if char.isalnum() else "\\" + char


def _structure(text: SparkColumn, settings: Mapping[str, Any]) -> tuple[SparkColumn, SparkColumn]:
    """How Flink's CSV parser (Jackson's) splits a record: whether its quoting is broken (a
    quoted field not closed, or text other than spaces after its closing quote; a quote inside
    an unquoted field is text), and how many fields it has (delimiters outside quoted fields).

    Spark's CSV parser reads both kinds of broken quoting leniently, as text; Flink fails the
    record."""
    from pyspark.sql import functions as F

    delimiter = _rx(str(settings["field-delimiter"]))
    quote = settings.get("quote-character")
    if quote is None:
        return F.lit(False), F.size(F.split(text, delimiter, -1))
    q = _rx(str(quote))
    escape = settings.get("escape-character")
    e = _rx(str(escape)) if escape else ""
    body = f"[^{q}{e}]++|{q}{q}" + (f"|{e}[\\s\\S]" if e else "")
    quoted = f"{q}(?:{body})*+{q}"
    field = f"(?:{quoted} *+|(?!{q})[^{delimiter}]*+)"
    well_formed = text.rlike(f"^{field}(?:{delimiter}{field})*+$")
    unquoted = F.regexp_replace(text, quoted, "")
    return ~well_formed, F.size(F.split(unquoted, delimiter, -1))


def _decode(
    raw: SparkColumn,
    columns: Sequence[Column],
    options: Options,
    stager: Stager,
) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
    from pyspark.sql import functions as F

    csv_column_types("csv", columns, "format")
    settings = FORMAT.settings(options)
    n = len(columns)
    if n == 0:
        return _finish(raw, F.struct(F.lit(True).alias("__dkf_row")), None, settings)
    text = _text(raw)
    spark_options = {
        **_spark_options(settings),
        "mode": "PERMISSIVE",
        "columnNameOfCorruptRecord": CORRUPT,
        "nullValue": _NO_NULL,
    }

    def schema(count: int) -> str:
        return ", ".join([*(f"_c{i} STRING" for i in range(count)), f"{CORRUPT} STRING"])

    parsed = stager.put(0, "parsed", F.from_csv(text, schema(n), spark_options))
    broken, count = _structure(text, settings)
    broken = stager.put(0, "broken", broken)
    count = stager.put(0, "count", count)
    literal = settings.get("null-literal")
    values, errors = [], []
    for i, column in enumerate(columns):
        t = column.flink_type
        # An empty field is an empty text, a missing one (a record with fewer fields) null; a
        # record not parsed here (none to decode, or one the reader decoded natively) has no
        # fields at all, and converts nothing.
        present = parsed.isNotNull() & (F.lit(i) < count)
        field = F.when(present, F.coalesce(parsed[f"_c{i}"], F.lit("")))
        field = _nullable(field, literal)
        if t.name in CSV_NESTED:
            value, error = _convert(field, t, column.name, settings)
            value = stager.put(1, f"v{i}", value)
            if error is not None:
                error = stager.put(1, f"e{i}", error)
        else:
            text_i = _scalar_text(field, t)
            value = stager.put(1, f"v{i}", leaf_value(text_i, t, column.name, "SQL"))
            error = leaf_error(text_i, value, t, column.name)
        values.append(value.alias(column.name))
        errors.append(error)
    # Jackson's CSV parser takes one trailing empty field beyond the declared ones.
    trailing = (count == F.lit(n + 1)) & text.endswith(str(settings["field-delimiter"]))
    more = (count > F.lit(n)) & ~trailing
    mismatch = F.lit(f"row length mismatch: {n} fields expected but got ")
    shape = (
        F.when(broken, F.concat(F.lit("malformed CSV quoting: "), F.substring(text, 1, 60)))
        .when(more, F.concat(mismatch, F.lit("more: "), F.substring(text, 1, 60)))
        .when(count < F.lit(n), F.concat(mismatch, F.lit("fewer: "), F.substring(text, 1, 60)))
    )
    field_error = first_error(errors)
    error = shape if field_error is None else F.coalesce(shape, field_error)
    # Under 'ignore-parse-errors' Flink keeps the row of a record whose fields fail or are
    # missing (those fields null) and skips one it cannot split.
    struct = F.when(~(broken | more), F.struct(*values))
    return _finish(raw, struct, error, settings)


def _finish(
    raw: SparkColumn,
    struct: SparkColumn,
    error: SparkColumn | None,
    settings: Mapping[str, Any],
) -> Decoded:
    from pyspark.sql import functions as F

    out = _skipped(raw, settings)
    error = F.when(~out, error if error is not None else F.lit(None).cast("string"))
    tolerated = error.isNotNull() & F.lit(bool(settings["ignore-parse-errors"]))
    return F.when(~out, struct), error, tolerated


def _field_text(value: SparkColumn, t: FlinkType, settings: Mapping[str, Any]) -> SparkColumn:
    """The text Flink's CSV format writes for one scalar (null stays null)."""
    from pyspark.sql import functions as F

    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return timestamp_text(value, t, "SQL")
    if t.name in ("BYTES", "VARBINARY", "BINARY"):
        return F.base64(value)
    if t.name == "DECIMAL" and settings["write-bigdecimal-in-scientific-notation"]:
        # Spark's CSV writer prints a decimal as Java's BigDecimal.toString(), as Flink does.
        return F.when(value.isNotNull(), F.to_csv(F.struct(value.alias("d"))))
    return value.cast("string")


def _encodable(value: SparkColumn, t: FlinkType, settings: Mapping[str, Any]) -> SparkColumn:
    """The text of one column: nested values joined by the array element delimiter."""
    from pyspark.sql import functions as F

    literal = settings.get("null-literal") or ""
    delimiter = str(settings["array-element-delimiter"])
    if t.name == "ARRAY":
        child = t.children[0]
        items = F.transform(value, lambda x: _field_text(x, child, settings))
        return F.array_join(items, delimiter, literal)
    if t.name == "ROW":
        items = F.array(
            *[
                _field_text(value[n], c, settings)
                for n, c in zip(t.field_names, t.children, strict=True)
            ]
        )
        return F.when(value.isNotNull(), F.array_join(items, delimiter, literal))
    return _field_text(value, t, settings)


def _encode(fields: Fields, options: Options) -> SparkColumn:
    from pyspark.sql import functions as F

    settings = FORMAT.settings(options)
    csv_column_types("csv", [column for _, column in fields], "format")
    prepared = [(_encodable(source, c.flink_type, settings), c) for source, c in fields]
    literal = settings.get("null-literal") or ""
    if settings.get("quote-character") is None:
        texts = [F.coalesce(v, F.lit(literal)) for v, _ in prepared]
        text = F.concat_ws(str(settings["field-delimiter"]), *texts)
    else:
        options_ = {**_spark_options(settings), "nullValue": literal}
        text = F.to_csv(F.struct(*[v.alias(c.name) for v, c in prepared]), options_)
    return text.cast("binary")


class Csv(StagedFormat):
    """The ``csv`` format (see the module's docstring)."""

    name = "csv"
    keeps_rows = True

    def skipped(self, raw: SparkColumn, options: Options) -> SparkColumn:
        """Records that yield no row: a null or empty value, or a comment when comments are
        allowed."""
        return _skipped(raw, self.settings(options))

    def decode_with(
        self, raw: SparkColumn, columns: Sequence[Column], options: Options, stager: Stager
    ) -> Decoded:
        """Decode ``raw`` CSV rows into a struct of ``columns``, an error and a tolerated flag.

        Example:
            >>> struct, error, ok = FORMAT.decode(F.col("value"), columns, {})  # doctest: +SKIP
        """
        return _decode(raw, columns, options, stager)

    def native_decoder(self, columns: Sequence[Column], options: Options) -> NativeCsv | None:
        """A decoder of whole Arrow batches of values (the record scanner, C) that the reader's
        tasks run where the bytes are; None when ``columns`` need the per-record decoding only
        (see :mod:`._scanners`). A record it leaves null goes through :meth:`decode_stages`."""
        from ._scanners import csv_decoder

        return csv_decoder(columns, self.settings(options))

    def encode(self, fields: Fields, options: Options) -> SparkColumn:
        """The fields as one CSV row per record (no line break), in UTF-8 bytes.

        Example:
            >>> value = FORMAT.encode([(F.col("id"), Column("id", "INT"))], {})  # doctest: +SKIP
        """
        return _encode(fields, options)


FORMAT = Csv()

__all__ = ["FORMAT", "Csv"]
