"""The ``raw`` format: the record bytes as one physical column, as Flink's raw format defines it.

- STRING / VARCHAR / CHAR: the bytes as text in ``raw.charset`` (UTF-8 by default; Spark knows
  UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE and UTF-32). Bytes that are not valid
  in a strict charset (US-ASCII, UTF-16*, UTF-32) make the record dirty; UTF-8 bytes are taken
  as they are, as Flink does.
- BYTES / VARBINARY / BINARY: the bytes unchanged.
- BOOLEAN (1 byte, non-zero is true), TINYINT (1), SMALLINT (2), INT (4), BIGINT (8), FLOAT (4)
  and DOUBLE (8, IEEE 754): two's complement / IEEE bits in ``raw.endianness`` byte order
  (big-endian by default). A value of another size is dirty, as in Flink.
- A null value is a row whose column is null (the raw format keeps tombstones); the format has
  no ``ignore-parse-errors``, so its dirty records are never tolerated.

Encoding is the inverse; text characters the charset cannot hold are written as ``?`` (as Java
does), and a NaN is written with Java's canonical NaN bits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import KafkaOptionsError
from ..options import Column, spark_charset, spark_type
from .base import Decoded, Fields, Options, StagedFormat, Stager

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

_STRING = ("STRING", "VARCHAR", "CHAR")
_BINARY = ("BYTES", "VARBINARY", "BINARY")
#: Fixed-size types and their size in bytes.
SIZES = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "BIGINT": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
}
_HEX = "[0-9A-F]"
_BMP_BE = f"(?:[0-9A-CE-F]{_HEX}{{3}}|D[0-7]{_HEX}{{2}})"
_PAIR_BE = f"D[89AB]{_HEX}{{2}}D[C-F]{_HEX}{{2}}"
_BMP_LE = f"{_HEX}{{2}}(?:[0-9A-CE-F]{_HEX}|D[0-7])"
_PAIR_LE = f"{_HEX}{{2}}D[89AB]{_HEX}{{2}}D[C-F]"
#: Hex text of one valid character for the strict charsets (valid text is a run of them).
_VALID_UNIT = {
    "UTF-16BE": f"{_BMP_BE}|{_PAIR_BE}",
    "UTF-16LE": f"{_BMP_LE}|{_PAIR_LE}",
    "UTF-32": f"0000{_BMP_BE}|000[1-9A-F]{_HEX}{{4}}|0010{_HEX}{{4}}",
}
_UNMAPPABLE = {"US-ASCII": "[^\\x00-\\x7F]", "ISO-8859-1": "[^\\x00-\\xFF]"}


def _single(columns: Sequence[Column]) -> Column:
    if len(columns) != 1:
        raise KafkaOptionsError(
            f"The 'raw' format holds exactly one physical column, got {len(columns)}: "
            f"{', '.join(c.name for c in columns) or '(none)'}.",
            keys=("format",),
        )
    column = columns[0]
    name = column.flink_type.name
    if name not in _STRING and name not in _BINARY and name not in SIZES:
        supported = ", ".join([*_STRING, *_BINARY, *SIZES])
        raise KafkaOptionsError(
            f"The 'raw' format cannot hold column '{column.name}' of type {column.flink_type}; "
            f"it supports {supported}.",
            keys=("format",),
        )
    return column


def _valid(raw: SparkColumn, charset: str) -> SparkColumn | None:
    """True when ``raw`` is valid in a strict ``charset`` (None for lenient charsets)."""
    from pyspark.sql import functions as F

    if charset == "US-ASCII":
        return F.decode(raw, "ISO-8859-1").rlike("^[\\x00-\\x7F]*$")
    hex_text = F.hex(raw)
    if charset == "UTF-16":
        rest = F.substring(hex_text, 5, 1 << 30)
        return F.when(hex_text.startswith("FFFE"), _units(rest, "UTF-16LE")).otherwise(
            _units(hex_text, "UTF-16BE")
        )
    if charset in _VALID_UNIT:
        return _units(hex_text, charset)
    return None


def _units(hex_text: SparkColumn, charset: str) -> SparkColumn:
    """True when ``hex_text`` is a run of valid characters of ``charset`` from start to end: the
    characters found one after the other, joined again, are the whole text. (Not one pattern
    over the whole text, ``^(?:a|b)*$``: Java's regex engine recurses once per character
    there, and a value of a few kilobytes overflowed the task's stack.)"""
    from pyspark.sql import functions as F

    found = F.regexp_extract_all(hex_text, F.lit(_VALID_UNIT[charset]), 0)
    return F.array_join(found, "") == hex_text


def _reversed_bytes(hex_text: SparkColumn, size: int) -> SparkColumn:
    from pyspark.sql import functions as F

    return F.concat(*[F.substring(hex_text, 2 * i + 1, 2) for i in reversed(range(size))])


def _bits(raw: SparkColumn, size: int, little: bool, signed: bool) -> SparkColumn:
    """The bytes as a BIGINT: two's complement when ``signed``, else unsigned (size < 8)."""
    from pyspark.sql import functions as F

    hex_text = F.hex(raw)
    if little:
        hex_text = _reversed_bytes(hex_text, size)
    if size == 8:
        return F.conv(hex_text, 16, -10).cast("bigint")
    unsigned = F.conv(hex_text, 16, 10).cast("bigint")
    if not signed:
        return unsigned
    half = 1 << (8 * size - 1)
    return F.when(unsigned >= F.lit(half), unsigned - F.lit(2 * half)).otherwise(unsigned)


def _float_from_bits(bits: SparkColumn, t: str) -> SparkColumn:
    """IEEE 754 bits (BIGINT) as a DOUBLE value, exactly (powers of two are exact)."""
    from pyspark.sql import functions as F

    mantissa_bits, exponent_mask, bias = (52, 0x7FF, 1075) if t == "DOUBLE" else (23, 0xFF, 150)
    sign = (bits < 0) if t == "DOUBLE" else (bits >= F.lit(1 << 31))
    exponent = F.shiftright(bits, mantissa_bits).bitwiseAND(F.lit(exponent_mask))
    mantissa = bits.bitwiseAND(F.lit((1 << mantissa_bits) - 1)).cast("double")
    magnitude = (
        F.when(exponent == 0, mantissa * F.pow(F.lit(2.0), F.lit(1 - bias)))
        .when(
            exponent == F.lit(exponent_mask),
            F.when(mantissa == 0, F.lit(float("inf"))).otherwise(F.lit(float("nan"))),
        )
        .otherwise(
            (mantissa + F.lit(float(1 << mantissa_bits)))
            * F.pow(F.lit(2.0), exponent.cast("double") - F.lit(float(bias)))
        )
    )
    return F.when(sign, -magnitude).otherwise(magnitude)


def _decode_value(
    raw: SparkColumn, column: Column, settings: Mapping[str, Any]
) -> tuple[SparkColumn, SparkColumn | None]:
    from pyspark.sql import functions as F

    name = column.flink_type.name
    if name in _BINARY:
        return raw, None
    if name in _STRING:
        charset = spark_charset(settings["charset"])
        if charset == "UTF-8":
            return raw.cast("string"), None
        valid = _valid(raw, charset)
        if valid is None:
            return F.decode(raw, charset), None
        error = F.when(
            raw.isNotNull() & ~valid,
            F.lit(f"column '{column.name}': the bytes are not valid {charset} text"),
        )
        return F.when(valid, F.decode(raw, charset)), error
    size = SIZES[name]
    fits = F.length(raw) == F.lit(size)
    error = F.when(
        raw.isNotNull() & ~fits,
        F.concat(
            F.lit(f"column '{column.name}': {name} takes {size} byte(s), got "),
            F.length(raw).cast("string"),
        ),
    )
    little = settings["endianness"] == "little-endian"
    if name == "BOOLEAN":
        value = raw != F.lit(bytearray(1))
    elif name in ("FLOAT", "DOUBLE"):
        value = _float_from_bits(_bits(raw, size, little, signed=name == "DOUBLE"), name)
    else:
        value = _bits(raw, size, little, signed=True)
    return F.when(fits, value.cast(spark_type(column.flink_type))), error


def _hex_of(bits: SparkColumn, size: int, little: bool) -> SparkColumn:
    from pyspark.sql import functions as F

    if size < 8:
        bits = bits.bitwiseAND(F.lit((1 << (8 * size)) - 1))
    hex_text = F.lpad(F.hex(bits), 2 * size, "0")
    if little:
        hex_text = _reversed_bytes(hex_text, size)
    return F.unhex(hex_text)


def _float_to_bits(value: SparkColumn, t: str) -> SparkColumn:
    """IEEE 754 bits (BIGINT) of a FLOAT/DOUBLE value; NaN as Java's canonical NaN."""
    from pyspark.sql import functions as F

    if t == "DOUBLE":
        mantissa_bits, bias, emax, sign_bit, nan = 52, 1023, 2047, -(1 << 63), 0x7FF8000000000000
    else:
        mantissa_bits, bias, emax, sign_bit, nan = 23, 127, 255, 1 << 31, 0x7FC00000
    x = value.cast("double")
    a = F.abs(x)
    two = F.lit(2.0)
    finite = ~F.isnan(x) & (a != F.lit(float("inf"))) & (a > F.lit(0.0))
    guess = F.floor(F.log2(F.when(finite, a).otherwise(F.lit(1.0))))
    exponent = (
        F.when(F.pow(two, guess) > a, guess - 1)
        .when(F.pow(two, guess + 1) <= a, guess + 1)
        .otherwise(guess)
    )
    scale = F.lit(float(1 << mantissa_bits))
    normal = F.shiftleft((exponent + F.lit(bias)).cast("bigint"), mantissa_bits).bitwiseOR(
        ((a / F.pow(two, exponent) - F.lit(1.0)) * scale).cast("bigint")
    )
    subnormal = (a * F.pow(two, F.lit(float(bias - 1))) * scale).cast("bigint")
    magnitude = (
        F.when(F.isnan(x), F.lit(nan))
        .when(a == F.lit(float("inf")), F.lit(emax << mantissa_bits))
        .when(a == F.lit(0.0), F.lit(0))
        .when(exponent < F.lit(1 - bias), subnormal)
        .otherwise(normal)
        .cast("bigint")
    )
    # -0.0 compares equal to 0.0 (and Spark's atan2 normalises it); its text keeps the sign.
    negative = ~F.isnan(x) & ((x < 0) | ((x == 0) & x.cast("string").startswith("-")))
    return F.when(negative, magnitude.bitwiseOR(F.lit(sign_bit))).otherwise(magnitude)


def _encode(fields: Fields, settings: Mapping[str, Any]) -> SparkColumn:
    from pyspark.sql import functions as F

    column = _single([c for _, c in fields])
    source = fields[0][0]
    name = column.flink_type.name
    if name in _BINARY:
        return source.cast("binary")
    if name in _STRING:
        charset = spark_charset(settings["charset"])
        text = source.cast("string")
        if charset == "UTF-8":
            return text.cast("binary")
        if charset in _UNMAPPABLE:
            text = F.regexp_replace(text, _UNMAPPABLE[charset], "?")
        return F.encode(text, charset)
    little = settings["endianness"] == "little-endian"
    if name == "BOOLEAN":
        flag = source.cast("boolean")
        return F.when(flag, F.lit(bytearray(b"\x01"))).when(~flag, F.lit(bytearray(1)))
    size = SIZES[name]
    floating = name in ("FLOAT", "DOUBLE")
    bits = _float_to_bits(source, name) if floating else source.cast("bigint")
    return F.when(source.isNotNull(), _hex_of(bits, size, little))


class Raw(StagedFormat):
    """The ``raw`` format (see the module's docstring): its expressions are cheap, so it
    stages nothing."""

    name = "raw"
    levels = 0

    def skipped(self, raw: SparkColumn, options: Options) -> SparkColumn:
        """The raw format yields a row for every record (a null value is a null column)."""
        from pyspark.sql import functions as F

        return F.lit(False)

    def decode_with(
        self, raw: SparkColumn, columns: Sequence[Column], options: Options, stager: Stager
    ) -> Decoded:
        """The bytes as the table's single column; an error for bytes the type cannot hold.

        Example:
            >>> columns = [Column("v", "INT")]
            >>> struct, error, ok = FORMAT.decode(F.col("value"), columns, {})  # doctest: +SKIP
        """
        from pyspark.sql import functions as F

        column = _single(columns)
        value, error = _decode_value(raw, column, self.settings(options))
        error = error if error is not None else F.lit(None).cast("string")
        return F.struct(value.alias(column.name)), error, F.lit(False)

    def encode(self, fields: Fields, options: Options) -> SparkColumn:
        """The single column as bytes (text in ``raw.charset``, numbers in
        ``raw.endianness``).

        Example:
            >>> value = FORMAT.encode([(F.col("v"), Column("v", "STRING"))], {})  # doctest: +SKIP
        """
        return _encode(fields, self.settings(options))


FORMAT = Raw()

__all__ = ["FORMAT", "SIZES", "Raw"]
