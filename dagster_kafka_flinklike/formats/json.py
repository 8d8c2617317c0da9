"""The ``json`` format, decoded and encoded by Spark's own JSON functions (JVM speed).

Decoding follows Flink's JSON format:

- Every scalar is read as its JSON text and converted like Flink does, so numbers written as
  JSON strings (``"100.00"``) decode into numeric columns, while a non-numeric string in a
  numeric column makes the record dirty with an error naming the field. BOOLEAN is true only
  for ``true`` (any case), as Flink's parsing of text. Integer columns take what Flink takes: a
  JSON integer in range; for INT and BIGINT also a JSON number with a fraction or an exponent,
  truncated toward zero as a double (``1.9`` is 1, ``1e2`` is 100; TINYINT and SMALLINT refuse
  it); a string holding a sign and digits, trimmed (``"100.00"`` and ``"1e2"`` are dirty).
  FLOAT and DOUBLE take a number beyond a double's range as infinity, as Flink does. DECIMAL
  keeps every digit and becomes null when it does not fit the declared precision, as in Flink.
- ``timestamp-format.standard``: ``SQL`` reads TIMESTAMP as ``2020-12-30 12:13:14.123`` and
  TIMESTAMP_LTZ as ``2020-12-30 12:13:14.123Z``; ``ISO-8601`` as ``2020-12-30T12:13:14.123`` and
  ``2020-12-30T12:13:14.123Z`` (UTC). Encoding writes the same shapes.
- ``fail-on-missing-field``: a record lacking a declared field (at any nesting level) is dirty;
  otherwise the field is null. A field present with ``null`` is never missing.
- ``ignore-parse-errors``: a record that fails is still dirty (counted and collected) but
  tolerated, as Flink tolerates it: a record that is not a JSON object (malformed JSON, an
  array, a number) is skipped; any other keeps its row, with null in each field that failed
  (a nested row's field, an array's element, a map's value) and the other fields as read.
- A null value, an empty one or the JSON literal ``null`` yields no row, as in Flink.
- Nested ROW, ARRAY (and MULTISET, read as an array) and MAP (keys converted from their text,
  the last of duplicate keys winning) are supported at any depth.

Encoding honours ``encode.ignore-null-fields`` and ``encode.decimal-as-plain-number``: a DECIMAL
is written as Flink writes it, by default as Java's ``BigDecimal.stripTrailingZeros()`` text
(``1.50`` as ``1.5``, ``100`` as ``1E+2``, zero as ``0``), with the option as plain digits at the
column's scale.
``map-null-key.mode``/``map-null-key.literal`` are accepted but have nothing to act on: a Spark
map cannot hold a null key.
"""

from __future__ import annotations

import json as _json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..options import Column, FlinkType, row_type, spark_type
from ._patterns import DATE, INTEGER, NUMBER, TIME, TIMESTAMP
from .base import Decoded, Fields, Options, StagedFormat, Stager

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql.types import DataType

    from ._arrow_json import NativeJson
    from ._exact_json import ExactJson

CORRUPT = "__dkf_corrupt_record"
SNIPPET = 60
_SHORT = 64
_STRING = {"STRING", "VARCHAR", "CHAR"}
_BINARY = {"BYTES", "VARBINARY", "BINARY"}
_INTEGRAL = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
_FLOATING = {"FLOAT", "DOUBLE"}
_NESTED = {"ROW", "ARRAY", "MULTISET", "MAP"}
#: Spark's JSON reader, made to read what Flink's does: no NaN tokens, no single quotes (Jackson's
#: defaults), raw control characters inside strings (Flink enables them).
PARSE_OPTIONS = {
    "mode": "PERMISSIVE",
    "columnNameOfCorruptRecord": CORRUPT,
    "allowNonNumericNumbers": "false",
    "allowSingleQuotes": "false",
    "allowUnquotedControlChars": "true",
}
#: The same reader for texts that are known to be JSON objects (no corrupt-record column).
TEXT_OPTIONS = {k: v for k, v in PARSE_OPTIONS.items() if k != "columnNameOfCorruptRecord"}


def _none() -> SparkColumn:
    from pyspark.sql import functions as F

    return F.lit(None).cast("string")


def first_error(errors: Sequence[SparkColumn | None]) -> SparkColumn | None:
    """The first non-null of the error columns (None when no column can ever hold an error)."""
    from pyspark.sql import functions as F

    present = [e for e in errors if e is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else F.coalesce(*present)


def snippet(text: SparkColumn) -> SparkColumn:
    """The start of a text, for error messages."""
    from pyspark.sql import functions as F

    return F.substring(text, 1, SNIPPET)


def invalid(text: SparkColumn, path: str, t: FlinkType) -> SparkColumn:
    """``field 'path': 'text' is not a valid TYPE`` (for a value that failed to convert)."""
    from pyspark.sql import functions as F

    return F.concat(
        F.lit(f"field '{path}': '"), snippet(text), F.lit(f"' is not a valid {_type_name(t)}")
    )


def _type_name(t: FlinkType) -> str:
    return str(FlinkType(t.name, t.params, t.children, t.field_names))


def _decimal(t: FlinkType) -> tuple[int, int]:
    precision = t.params[0] if t.params else 10
    scale = t.params[1] if len(t.params) > 1 else 0
    return precision, scale


def _integral(text: SparkColumn, t: FlinkType) -> SparkColumn:
    """An integer from its text as Flink parses it: a sign and digits, trimmed (``100.00`` and
    ``1e2`` are not integers; a JSON number with a fraction reaches here truncated, see
    :mod:`._exact_json`)."""
    from pyspark.sql import functions as F

    return F.when(text.rlike(INTEGER), text.try_cast(spark_type(t)))


def timestamp_value(text: SparkColumn, t: FlinkType, standard: str) -> SparkColumn:
    """A TIMESTAMP (wall clock) or TIMESTAMP_LTZ (``...Z``, UTC) from Flink's text, else null."""
    from pyspark.sql import functions as F

    pattern = TIMESTAMP[standard]
    if t.name == "TIMESTAMP_LTZ":
        return F.when(text.rlike(pattern + "Z$"), text.try_cast("timestamp"))
    return F.when(text.rlike(pattern + "$"), text.try_cast("timestamp_ntz"))


def leaf_value(text: SparkColumn, t: FlinkType, path: str, standard: str) -> SparkColumn:
    """Convert a scalar's text to a value of Flink type ``t`` (null when it cannot be)."""
    from pyspark.sql import functions as F

    name = t.name
    if name in _STRING:
        return text
    if name == "BOOLEAN":
        return F.when(text.isNotNull(), F.lower(F.trim(text)) == F.lit("true"))
    if name in _INTEGRAL:
        return _integral(text, t)
    if name in _FLOATING:
        return F.trim(text).try_cast(spark_type(t))
    if name == "DECIMAL":
        precision, scale = _decimal(t)
        return F.when(text.rlike(NUMBER), F.trim(text).try_cast(f"decimal({precision},{scale})"))
    if name in _BINARY:
        return F.try_to_binary(text, F.lit("base64"))
    if name == "DATE":
        return F.when(text.rlike(DATE), text.try_cast("date"))
    if name == "TIME":
        return F.when(text.rlike(TIME), text)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return timestamp_value(text, t, standard)
    from ..errors import KafkaOptionsError

    raise KafkaOptionsError(f"Column '{path}': type {t} cannot be decoded from text.")


def leaf_error(
    text: SparkColumn, value: SparkColumn, t: FlinkType, path: str
) -> SparkColumn | None:
    """The error of a scalar whose ``text`` converted to ``value`` (None: it never fails).

    STRING and BOOLEAN never fail; DECIMAL fails on text that is not a number (a number too
    large for the column is null, as in Flink); other types fail when the value is null.
    """
    from pyspark.sql import functions as F

    if t.name in _STRING or t.name == "BOOLEAN":
        return None
    if t.name == "DECIMAL":
        return F.when(text.isNotNull() & ~text.rlike(NUMBER), invalid(text, path, t))
    return F.when(text.isNotNull() & value.isNull(), invalid(text, path, t))


def leaf(
    text: SparkColumn, t: FlinkType, path: str, standard: str
) -> tuple[SparkColumn, SparkColumn | None]:
    """:func:`leaf_value` and :func:`leaf_error` of one scalar."""
    value = leaf_value(text, t, path, standard)
    return value, leaf_error(text, value, t, path)


def can_fail(t: FlinkType) -> bool:
    """Whether converting a value of type ``t`` from JSON can make a record dirty."""
    if t.name in ("ROW",):
        return any(can_fail(c) for c in t.children)
    if t.name in ("ARRAY", "MULTISET"):
        return can_fail(t.children[0])
    if t.name == "MAP":
        return t.children[0].name not in _STRING or can_fail(t.children[1])
    return t.name not in _STRING and t.name not in ("BOOLEAN", "DECIMAL")


def _parse_type(t: FlinkType) -> DataType:
    """The type Spark parses a value as: text for scalars, DECIMAL exact, structure kept."""
    from pyspark.sql import types as T

    if t.name == "ROW":
        return T.StructType(
            [
                T.StructField(n, _parse_type(c))
                for n, c in zip(t.field_names, t.children, strict=True)
            ]
        )
    if t.name in ("ARRAY", "MULTISET"):
        return T.ArrayType(_parse_type(t.children[0]))
    if t.name == "MAP":
        return T.MapType(T.StringType(), _parse_type(t.children[1]))
    if t.name == "DECIMAL":
        return T.DecimalType(38, _decimal(t)[1])
    return T.StringType()


def bound(value: SparkColumn, body: Callable[[SparkColumn], SparkColumn]) -> SparkColumn:
    """``body(value)`` with ``value`` computed once, as a lambda's argument: an expression that a
    lambda inside ``body`` refers to is otherwise computed again for every element."""
    from pyspark.sql import functions as F

    return F.get(F.transform(F.array(value), body), 0)


def last_wins(entries: SparkColumn, key: str = "key") -> SparkColumn:
    """Entries without those whose ``key`` appears again later (the last entry of a key wins),
    in their order. The keys are sorted with their positions, so it costs n log n, not each
    entry against every later one."""
    from pyspark.sql import functions as F

    def kept(es: SparkColumn) -> SparkColumn:
        def winners(order: SparkColumn) -> SparkColumn:
            last = F.filter(
                order,
                lambda x, j: (
                    (j + 1 == F.size(order)) | ~F.get(order, j + 1)["k"].eqNullSafe(x["k"])
                ),
            )
            positions = F.array_sort(F.transform(last, lambda x: x["i"]))
            return F.transform(positions, lambda i: F.get(es, i))

        keys = F.transform(es, lambda e, i: F.struct(e[key].alias("k"), i.alias("i")))
        return bound(F.array_sort(keys), winners)

    # Null for null entries, without evaluating the lambdas (a row decoded natively has none).
    return F.when(entries.isNotNull(), bound(entries, kept))


def _collect(pairs: SparkColumn) -> SparkColumn:
    from pyspark.sql import functions as F

    return F.aggregate(pairs, _none(), lambda acc, p: F.coalesce(acc, p["e"]))


def convert(
    parsed: SparkColumn, t: FlinkType, path: str, standard: str
) -> tuple[SparkColumn, SparkColumn | None]:
    """Convert a parsed value (scalars as text) to Flink type ``t``; also its error column."""
    from pyspark.sql import functions as F

    if t.name == "ROW":
        values, errors = [], []
        for name, child in zip(t.field_names, t.children, strict=True):
            value, error = convert(parsed[name], child, f"{path}.{name}", standard)
            values.append(value.alias(name))
            errors.append(error)
        return F.when(parsed.isNotNull(), F.struct(*values)), first_error(errors)
    if t.name in ("ARRAY", "MULTISET"):
        child, where = t.children[0], f"{path}[*]"
        if not can_fail(child):
            return F.transform(parsed, lambda x: convert(x, child, where, standard)[0]), None

        def element(x: SparkColumn) -> SparkColumn:
            value, error = convert(x, child, where, standard)
            return F.struct(value.alias("v"), (error if error is not None else _none()).alias("e"))

        pairs = F.transform(parsed, element)
        return F.transform(pairs, lambda p: p["v"]), _collect(pairs)
    if t.name == "MAP":
        key_t, value_t = t.children

        def entry(e: SparkColumn) -> SparkColumn:
            key, key_error = leaf(e["key"], key_t, f"{path} key", standard)
            value, value_error = convert(e["value"], value_t, f"{path}[*]", standard)
            error = first_error([key_error, value_error])
            return F.struct(
                key.alias("key"),
                value.alias("value"),
                (error if error is not None else _none()).alias("e"),
            )

        pairs = F.transform(F.map_entries(parsed), entry)
        kept = last_wins(F.filter(pairs, lambda p: p["key"].isNotNull()))
        value = F.map_from_entries(F.transform(kept, lambda p: F.struct(p["key"], p["value"])))
        return value, (_collect(pairs) if can_fail(t) else None)
    if t.name == "DECIMAL":
        precision, scale = _decimal(t)
        return parsed.try_cast(f"decimal({precision},{scale})"), None
    return leaf(parsed, t, path, standard)


def _text_type(t: FlinkType) -> DataType:
    """Structure down to each ROW, which stays JSON text (to look at its keys)."""
    from pyspark.sql import types as T

    if t.name in ("ARRAY", "MULTISET"):
        return T.ArrayType(_text_type(t.children[0]))
    if t.name == "MAP":
        return T.MapType(T.StringType(), _text_type(t.children[1]))
    return T.StringType()


def _has_row(t: FlinkType) -> bool:
    return t.name == "ROW" or any(_has_row(c) for c in t.children)


def _missing(
    text: SparkColumn,
    names: Sequence[str],
    types: Sequence[FlinkType],
    path: str,
    stager: Stager | None = None,
) -> SparkColumn | None:
    """Error naming the first declared field the JSON object ``text`` lacks, at any depth."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    absent = F.array_except(F.array(*[F.lit(n) for n in names]), F.json_object_keys(text))
    if stager is not None:
        absent = stager.put(0, "absent", absent)
    first = F.get(absent, 0)
    errors: list[SparkColumn | None] = [
        F.when(first.isNotNull(), F.concat(F.lit(f"field '{path}"), first, F.lit("' is missing")))
    ]
    nested = [(n, c) for n, c in zip(names, types, strict=True) if _has_row(c)]
    if nested:
        schema = T.StructType([T.StructField(n, _text_type(c)) for n, c in nested])
        texts = F.from_json(text, schema, TEXT_OPTIONS)
        if stager is not None:
            texts = stager.put(0, "texts", texts)
        for n, c in nested:
            errors.append(_missing_in(texts[n], c, f"{path}{n}"))
    return first_error(errors)


def _missing_in(text: SparkColumn, t: FlinkType, path: str) -> SparkColumn | None:
    from pyspark.sql import functions as F

    if t.name == "ROW":
        return _missing(text, t.field_names, t.children, f"{path}.")
    child = t.children[-1]
    items = text if t.name in ("ARRAY", "MULTISET") else F.map_values(text)

    def one(x: SparkColumn) -> SparkColumn:
        error = _missing_in(x, child, f"{path}[*]")
        return error if error is not None else _none()

    return F.aggregate(F.transform(items, one), _none(), lambda acc, e: F.coalesce(acc, e))


def _not_an_object(text: SparkColumn) -> tuple[SparkColumn, SparkColumn]:
    """Whether a text is malformed JSON, and whether it is not a JSON object (both a record's
    own failure, not a field's)."""
    from pyspark.sql import functions as F

    # Any JSON value is an element of an array: a text that is not one is malformed JSON.
    as_element = F.from_json(F.concat(F.lit("["), text, F.lit("]")), "array<string>", TEXT_OPTIONS)
    return as_element.isNull(), F.substring(F.ltrim(text), 1, 1) != F.lit("{")


def _record_error(text: SparkColumn, columns: Sequence[Column]) -> SparkColumn:
    """Why Spark could not parse a record: malformed JSON, not an object, or a bad field."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    checks = [c for c in columns if c.flink_type.name in _NESTED | {"DECIMAL"}]
    reason: SparkColumn = F.concat(
        F.lit("the record does not match the table's columns: "), snippet(text)
    )
    if checks:
        texts = F.from_json(
            text,
            T.StructType([T.StructField(c.name, T.StringType()) for c in checks]),
            TEXT_OPTIONS,
        )
        for c in reversed(checks):
            field = texts[c.name]
            wrapped = F.concat(F.lit('{"x":'), field, F.lit("}"))
            schema = T.StructType(
                [
                    T.StructField("x", _parse_type(c.flink_type)),
                    T.StructField(CORRUPT, T.StringType()),
                ]
            )
            bad = F.from_json(wrapped, schema, PARSE_OPTIONS)[CORRUPT].isNotNull()
            reason = F.when(
                field.isNotNull() & bad,
                F.concat(
                    F.lit(f"field '{c.name}': '"),
                    snippet(field),
                    F.lit(f"' does not match {_type_name(c.flink_type)}"),
                ),
            ).otherwise(reason)
    malformed, not_object = _not_an_object(text)
    return (
        F.when(malformed, F.concat(F.lit("malformed JSON: "), snippet(text)))
        .when(not_object, F.concat(F.lit("expected a JSON object, got: "), snippet(text)))
        .otherwise(reason)
    )


def _skipped(raw: SparkColumn) -> SparkColumn:
    """Records that yield no row: a null value, an empty one, or the JSON literal ``null``."""
    from pyspark.sql import functions as F

    short = F.length(raw) <= F.lit(_SHORT)  # only short values can be blank or 'null'
    return raw.isNull() | (short & F.trim(raw.cast("string")).isin("", "null"))


def _decode(
    raw: SparkColumn,
    columns: Sequence[Column],
    options: Options,
    stager: Stager,
) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    settings = FORMAT.settings(options)
    standard = settings["timestamp-format.standard"]
    text = raw.cast("string")
    schema = T.StructType(
        [T.StructField(c.name, _parse_type(c.flink_type)) for c in columns]
        + [T.StructField(CORRUPT, T.StringType())]
    )
    parsed = stager.put(0, "parsed", F.from_json(text, schema, PARSE_OPTIONS))
    values, errors = [], []
    for i, column in enumerate(columns):
        t, field = column.flink_type, parsed[column.name]
        if t.name in _NESTED:
            value, error = convert(field, t, column.name, standard)
            value = stager.put(1, f"v{i}", value)
            if error is not None:
                error = stager.put(1, f"e{i}", error)
        elif t.name == "DECIMAL":
            value, error = stager.put(1, f"v{i}", convert(field, t, column.name, standard)[0]), None
        else:
            value = stager.put(1, f"v{i}", leaf_value(field, t, column.name, standard))
            error = leaf_error(field, value, t, column.name)
        values.append(value.alias(column.name))
        errors.append(error)
    if settings["fail-on-missing-field"] and columns:
        names, types = [c.name for c in columns], [c.flink_type for c in columns]
        errors.insert(0, _missing(text, names, types, "", stager))
    corrupt = parsed[CORRUPT].isNotNull()
    field_error = first_error(errors)
    # Why a record did not parse is asked of Spark's JSON reader again (a function Spark cannot
    # compile into its generated code): staged next to the parse, where the record's parse is
    # at hand, only later stages fuse into one generated stage.
    unparsed = F.from_json(text, schema, PARSE_OPTIONS)[CORRUPT].isNotNull()
    reason = stager.put(0, "reason", F.when(unparsed, _record_error(text, columns)))
    error = F.when(corrupt, reason)
    if field_error is not None:
        error = error.otherwise(field_error)
    out = _skipped(raw)
    struct = F.struct(*values) if values else F.struct(F.lit(True).alias("__dkf_row"))
    error = F.when(~out, error)
    tolerated = error.isNotNull() & F.lit(bool(settings["ignore-parse-errors"]))
    if settings["ignore-parse-errors"]:
        # A record that is not an object yields no row. Spark's reader keeps the fields it could
        # read of one whose field failed (its partial results), and the failed field is null.
        malformed, not_object = _not_an_object(text)
        whole = stager.put(0, "whole", F.when(unparsed, malformed | not_object))
        out = out | F.coalesce(whole, F.lit(False))
    return F.when(~out, struct), error, tolerated


def timestamp_text(value: SparkColumn, t: FlinkType, standard: str) -> SparkColumn:
    """Flink's text of a TIMESTAMP / TIMESTAMP_LTZ (``Z`` suffix, UTC) in ``standard``."""
    from pyspark.sql import functions as F

    if t.name == "TIMESTAMP_LTZ":
        epoch = F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")
        wall = F.timestamp_add("MICROSECOND", F.unix_micros(value.cast("timestamp")), epoch)
        text = F.concat(wall.cast("string"), F.lit("Z"))
    else:
        text = value.cast("timestamp_ntz").cast("string")
    return F.regexp_replace(text, " ", "T") if standard == "ISO-8601" else text


def _has(t: FlinkType, names: set[str]) -> bool:
    return t.name in names or any(_has(c, names) for c in t.children)


def map_leaves(
    value: SparkColumn,
    t: FlinkType,
    names: set[str],
    fn: Callable[[SparkColumn, FlinkType], SparkColumn],
) -> SparkColumn:
    """``value`` with ``fn`` applied to every nested leaf whose type is one of ``names``."""
    from pyspark.sql import functions as F

    if t.name in names:
        return fn(value, t)
    if not _has(t, names):
        return value
    if t.name == "ROW":
        fields = [
            map_leaves(value[n], c, names, fn).alias(n)
            for n, c in zip(t.field_names, t.children, strict=True)
        ]
        return F.when(value.isNotNull(), F.struct(*fields))
    if t.name in ("ARRAY", "MULTISET"):
        child = t.children[0]
        return F.transform(value, lambda x: map_leaves(x, child, names, fn))
    key_t, value_t = t.children
    entries = F.transform(
        F.map_entries(value),
        lambda e: F.struct(
            map_leaves(e["key"], key_t, names, fn).alias("key"),
            map_leaves(e["value"], value_t, names, fn).alias("value"),
        ),
    )
    return F.map_from_entries(entries)


def _scalar_json(value: SparkColumn) -> SparkColumn:
    from pyspark.sql import functions as F

    return F.when(value.isNotNull(), F.regexp_extract(F.to_json(F.array(value)), r"^\[(.*)\]$", 1))


def java_decimal_text(value: SparkColumn) -> SparkColumn:
    """A DECIMAL as Java's ``BigDecimal.stripTrailingZeros().toString()`` writes it, which is
    how Flink's JSON formats write a DECIMAL by default (Jackson's number node): ``1.50`` is
    ``1.5``, ``100`` is ``1E+2``, ``0.00`` is ``0``, ``0.00000010`` is ``1E-7``. String
    functions only (no regular expression: they cost a JSON write most of its speed)."""
    from pyspark.sql import functions as F

    def strip(text: SparkColumn, chars: str) -> tuple[SparkColumn, SparkColumn]:
        return F.ltrim(text, F.lit(chars)), F.rtrim(text, F.lit(chars))

    plain = value.cast("string")  # [-]digits[.digits], the column's scale
    negative = plain.startswith("-")  # (comparing with 0 would round a DECIMAL(38, 38))
    body = F.when(negative, F.substring(plain, 2, 1 << 30)).otherwise(plain)
    whole = F.substring_index(body, ".", 1)
    fraction = F.when(body.contains("."), F.substring_index(body, ".", -1)).otherwise(F.lit(""))
    kept = strip(fraction, "0")[1]  # the fraction without its trailing zeros
    whole_digits, whole_core = strip(whole, "0")
    # The significant digits, and the exponent of the first (BigDecimal's "adjusted exponent").
    digits = F.when(kept == "", whole_core).otherwise(strip(F.concat(whole, kept), "0")[0])
    unscaled = F.when(kept == "", whole_digits).otherwise(digits)  # scale len(kept)
    adjusted = F.length(unscaled) - 1 - F.length(kept)
    scientific = F.concat(
        F.substring(digits, 1, 1),
        F.when(
            F.length(digits) > 1, F.concat(F.lit("."), F.substring(digits, 2, 1 << 30))
        ).otherwise(F.lit("")),
        F.lit("E"),
        F.when(adjusted > 0, F.lit("+")).otherwise(F.lit("")),
        adjusted.cast("string"),
    )
    # An integer is plain unless it ends in zeros; a fraction unless below 10^-6.
    shown = (
        F.when(kept == "", F.when(whole_core == whole_digits, whole_digits).otherwise(scientific))
        .when(adjusted >= -6, F.concat(whole, F.lit("."), kept))
        .otherwise(scientific)
    )
    sign = F.when(negative, F.lit("-")).otherwise(F.lit(""))
    zero = (whole_digits == "") & (kept == "")
    return F.when(zero, F.lit("0")).otherwise(F.concat(sign, shown))


def _json_text(
    value: SparkColumn, t: FlinkType, ignore_nulls: bool, plain: bool = True
) -> SparkColumn:
    """JSON text of ``value`` built field by field, DECIMAL written as plain digits or (not
    ``plain``) as Flink writes it by default (:func:`java_decimal_text`)."""
    from pyspark.sql import functions as F

    if t.name == "ROW":
        parts = []
        for n, c in zip(t.field_names, t.children, strict=True):
            name = F.lit(_json.dumps(n) + ":")
            inner = _json_text(value[n], c, ignore_nulls, plain)
            parts.append(
                F.concat(name, inner)
                if ignore_nulls
                else F.concat(name, F.coalesce(inner, F.lit("null")))
            )
        return F.when(value.isNotNull(), F.concat(F.lit("{"), F.concat_ws(",", *parts), F.lit("}")))
    if t.name in ("ARRAY", "MULTISET"):
        child = t.children[0]
        items = F.transform(
            value, lambda x: F.coalesce(_json_text(x, child, ignore_nulls, plain), F.lit("null"))
        )
        return F.when(value.isNotNull(), F.concat(F.lit("["), F.array_join(items, ","), F.lit("]")))
    if t.name == "MAP":
        value_t = t.children[1]
        items = F.transform(
            F.map_entries(value),
            lambda e: F.concat(
                _scalar_json(e["key"].cast("string")),
                F.lit(":"),
                F.coalesce(_json_text(e["value"], value_t, ignore_nulls, plain), F.lit("null")),
            ),
        )
        return F.when(value.isNotNull(), F.concat(F.lit("{"), F.array_join(items, ","), F.lit("}")))
    if t.name == "DECIMAL":
        return value.cast("string") if plain else java_decimal_text(value)
    return _scalar_json(value)


def _encode(fields: Fields, options: Options) -> SparkColumn:
    from pyspark.sql import functions as F

    settings = FORMAT.settings(options)
    standard = settings["timestamp-format.standard"]
    ignore_nulls = bool(settings["encode.ignore-null-fields"])
    stamps = {"TIMESTAMP", "TIMESTAMP_LTZ"}
    prepared = [
        (map_leaves(source, c.flink_type, stamps, lambda v, t: timestamp_text(v, t, standard)), c)
        for source, c in fields
    ]
    row = row_type([c for _, c in prepared])
    if _has(row, {"DECIMAL"}):  # Spark's writer has neither of Flink's two DECIMAL notations
        plain = bool(settings["encode.decimal-as-plain-number"])
        struct = F.struct(*[source.alias(c.name) for source, c in prepared])
        text = F.coalesce(_json_text(struct, _as_text(row), ignore_nulls, plain), F.lit("{}"))
    else:
        text = F.to_json(
            F.struct(*[source.alias(c.name) for source, c in prepared]),
            {"ignoreNullFields": "true" if ignore_nulls else "false"},
        )
    return text.cast("binary")


def _as_text(t: FlinkType) -> FlinkType:
    """``t`` with timestamps as STRING (they are already text when JSON is built)."""
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return FlinkType("STRING")
    return FlinkType(t.name, t.params, tuple(_as_text(c) for c in t.children), t.field_names)


class Json(StagedFormat):
    """The ``json`` format (see the module's docstring)."""

    name = "json"
    keeps_rows = True

    def skipped(self, raw: SparkColumn, options: Options) -> SparkColumn:
        """Records that yield no row: a null value, an empty one, or the JSON literal
        ``null``."""
        return _skipped(raw)

    def decode_with(
        self, raw: SparkColumn, columns: Sequence[Column], options: Options, stager: Stager
    ) -> Decoded:
        """Decode ``raw`` JSON bytes into a struct of ``columns``, an error and a tolerated
        flag; the changelog formats decode their envelopes with it too.

        Example:
            >>> columns = [Column("id", "INT")]
            >>> struct, error, ok = FORMAT.decode(F.col("value"), columns, {})  # doctest: +SKIP
        """
        return _decode(raw, columns, options, stager)

    def native_decoder(self, columns: Sequence[Column], options: Options) -> NativeJson | None:
        """A decoder of whole Arrow batches of values (Arrow's C++ JSON parser) that the
        reader's tasks run where the bytes are; None when ``columns`` need the per-record
        decoding only (see :mod:`._arrow_json`). A record it leaves null goes through
        :meth:`decode_stages`."""
        from ._arrow_json import native_decoder as arrow_decoder

        return arrow_decoder(columns, self.settings(options))

    def exact_pass(
        self, columns: Sequence[Column], options: Options, metadata: Sequence[str] = ()
    ) -> ExactJson | None:
        """The records Spark's JSON reader would not decode as Flink does, rewritten so that it
        does: a number in a STRING position quoted (Flink keeps it as written), a DECIMAL beyond
        any precision null (see :mod:`._exact_json`)."""
        from ._exact_json import exact_json

        return exact_json(columns)

    def encode(self, fields: Fields, options: Options) -> SparkColumn:
        """The fields as one JSON object per row (named by each ``Column``), in UTF-8 bytes.

        Example:
            >>> value = FORMAT.encode([(F.col("id"), Column("id", "INT"))], {})  # doctest: +SKIP
        """
        return _encode(fields, options)


FORMAT = Json()

__all__ = [
    "FORMAT",
    "Json",
    "first_error",
    "java_decimal_text",
    "leaf",
    "leaf_error",
    "leaf_value",
    "snippet",
    "timestamp_text",
]
