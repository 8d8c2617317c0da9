"""Flink SQL data types: parsing type strings and mapping them to Spark types in one place."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import KafkaOptionsError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.types import DataType, StructType


@dataclass(frozen=True)
class FlinkType:
    """A parsed Flink SQL type: a root name, its parameters and its children.

    Example:
        >>> parse_flink_type("DECIMAL(10, 2) NOT NULL")
        FlinkType(name='DECIMAL', params=(10, 2), children=(), field_names=(), nullable=False)
    """

    name: str
    params: tuple[int, ...] = ()
    children: tuple[FlinkType, ...] = ()
    field_names: tuple[str, ...] = ()
    nullable: bool = True

    @classmethod
    def row(cls, names: Iterable[str], types: Iterable[FlinkType]) -> FlinkType:
        """The ROW type of fields ``names`` typed ``types`` (e.g. a table's columns as one
        record)."""
        return cls("ROW", children=tuple(types), field_names=tuple(names))

    def __str__(self) -> str:
        text = self.name
        if self.name == "ROW":
            inner = ", ".join(
                f"`{n}` {c}" for n, c in zip(self.field_names, self.children, strict=False)
            )
            text = f"ROW<{inner}>"
        elif self.children:
            text = f"{self.name}<{', '.join(str(c) for c in self.children)}>"
        elif self.params:
            text = f"{self.name}({', '.join(str(p) for p in self.params)})"
        return text if self.nullable else f"{text} NOT NULL"


_ALIASES = {"INTEGER": "INT", "DEC": "DECIMAL", "NUMERIC": "DECIMAL", "REAL": "FLOAT"}
_MAX_LEN = 2**31 - 1
# name -> allowed parameter ranges (one (low, high) per optional parameter)
_PARAMS: dict[str, tuple[tuple[int, int], ...]] = {
    "STRING": (), "BOOLEAN": (), "TINYINT": (), "SMALLINT": (), "INT": (), "BIGINT": (),
    "FLOAT": (), "DOUBLE": (), "DATE": (), "BYTES": (),
    "VARCHAR": ((1, _MAX_LEN),), "CHAR": ((1, _MAX_LEN),),
    "VARBINARY": ((1, _MAX_LEN),), "BINARY": ((1, _MAX_LEN),),
    "DECIMAL": ((1, 38), (0, 38)),
    "TIME": ((0, 9),), "TIMESTAMP": ((0, 9),), "TIMESTAMP_LTZ": ((0, 9),),
}  # fmt: skip
_TOKEN = re.compile(
    r"\s*(?:(?P<ident>`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_$]*)|(?P<num>[0-9]+)"
    r"|(?P<str>'(?:[^']|'')*')|(?P<sym>[<>(),]))"
)
_MAX_DEPTH = 32


class FlinkTypeError(KafkaOptionsError):
    """A string is not a Flink SQL type; ``reason`` says why without repeating the text."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class _TypeParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos, end = 0, len(text.rstrip())
        while pos < end:
            m = _TOKEN.match(text, pos)
            if not m:
                raise self.error(f"unexpected character {text[pos:].strip()[:1]!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.depth = 0

    def error(self, why: str) -> FlinkTypeError:
        return FlinkTypeError(f"Invalid Flink SQL type {self.text[:200]!r}: {why}.", why)

    def peek(self, ahead: int = 0) -> tuple[str, str] | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end")
        self.i += 1
        return tok

    def expect(self, sym: str) -> None:
        kind, value = self.take()
        if kind != "sym" or value != sym:
            raise self.error(f"expected {sym!r} but found {value[:20]!r}")

    def accept_word(self, *words: str) -> bool:
        toks = [self.peek(k) for k in range(len(words))]
        if all(
            t is not None and t[0] == "ident" and t[1].upper() == w
            for t, w in zip(toks, words, strict=True)
        ):
            self.i += len(words)
            return True
        return False

    def parse(self) -> FlinkType:
        result = self.parse_type()
        tok = self.peek()
        if tok is not None:
            raise self.error(f"unexpected {tok[1][:20]!r}")
        return result

    def ints(self) -> tuple[int, ...]:
        if self.peek() != ("sym", "("):
            return ()
        self.take()
        values = []
        while True:
            kind, value = self.take()
            if kind != "num":
                raise self.error(f"expected a number but found {value[:20]!r}")
            if len(value) > 10:
                raise self.error(f"number {value[:20]}... is too large")
            values.append(int(value))
            kind, value = self.take()
            if value == ")":
                return tuple(values)
            if value != ",":
                raise self.error(f"expected ',' or ')' but found {value[:20]!r}")

    def parse_type(self) -> FlinkType:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error(f"types nest deeper than {_MAX_DEPTH} levels")
        try:
            return self._parse_type()
        finally:
            self.depth -= 1

    def _parse_type(self) -> FlinkType:
        kind, word = self.take()
        if kind != "ident" or word.startswith("`"):
            raise self.error(f"expected a type name but found {word[:20]!r}")
        name = _ALIASES.get(word.upper(), word.upper())
        if name == "DOUBLE":
            self.accept_word("PRECISION")
        elif name in ("CHARACTER", "BINARY") and self.accept_word("VARYING"):
            name = "VARCHAR" if name == "CHARACTER" else "VARBINARY"
        elif name == "CHARACTER":
            name = "CHAR"
        if name in ("TIMESTAMP", "TIME"):
            params = self.checked(name, self.ints())
            if self.accept_word("WITH", "LOCAL", "TIME", "ZONE"):
                name = "TIMESTAMP_LTZ"
            elif self.accept_word("WITH", "TIME", "ZONE"):
                raise self.error("TIMESTAMP WITH TIME ZONE is not supported by Flink")
            else:
                self.accept_word("WITHOUT", "TIME", "ZONE")
            return self.finish(FlinkType(name, params))
        if name in ("ARRAY", "MULTISET"):
            self.expect("<")
            child = self.parse_type()
            self.expect(">")
            return self.finish(FlinkType(name, children=(child,)))
        if name == "MAP":
            self.expect("<")
            key = self.parse_type()
            self.expect(",")
            value = self.parse_type()
            self.expect(">")
            return self.finish(FlinkType(name, children=(key, value)))
        if name == "ROW":
            return self.finish(self.row())
        if name not in _PARAMS:
            raise self.error(f"unknown type {word[:40]!r}")
        return self.finish(FlinkType(name, self.checked(name, self.ints())))

    def row(self) -> FlinkType:
        tok = self.take()
        if tok not in (("sym", "<"), ("sym", "(")):
            raise self.error(f"expected '<' or '(' after ROW but found {tok[1][:20]!r}")
        close = ">" if tok[1] == "<" else ")"
        names: list[str] = []
        children: list[FlinkType] = []
        if self.peek() == ("sym", close):
            self.take()
            return FlinkType("ROW")
        while True:
            kind, fname = self.take()
            if kind != "ident":
                raise self.error(f"expected a field name but found {fname[:20]!r}")
            names.append(_unquote(fname))
            children.append(self.parse_type())
            if self.peek() is not None and self.peek()[0] == "str":  # type: ignore[index]
                self.take()  # field description
            kind, value = self.take()
            if value == close:
                break
            if value != ",":
                raise self.error(f"expected ',' or {close!r} but found {value[:20]!r}")
        if len(set(names)) != len(names):
            raise self.error("ROW field names must be unique")
        return FlinkType.row(names, children)

    def checked(self, name: str, params: tuple[int, ...]) -> tuple[int, ...]:
        ranges = _PARAMS[name]
        if len(params) > len(ranges):
            raise self.error(f"{name} takes at most {len(ranges)} parameter(s)")
        for value, (low, high) in zip(params, ranges, strict=False):
            if not low <= value <= high:
                raise self.error(f"{name} parameter {value} is outside [{low}, {high}]")
        if name == "DECIMAL" and len(params) == 2 and params[1] > params[0]:
            raise self.error("DECIMAL scale must not exceed its precision")
        return params

    def finish(self, t: FlinkType) -> FlinkType:
        if self.accept_word("NOT", "NULL"):
            return FlinkType(t.name, t.params, t.children, t.field_names, nullable=False)
        self.accept_word("NULL")
        return t


def _unquote(ident: str) -> str:
    if ident.startswith("`") and ident.endswith("`"):
        return ident[1:-1].replace("``", "`")
    return ident


def parse_flink_type(text: str) -> FlinkType:
    """Parse a Flink SQL type string such as ``ROW<a INT, b ARRAY<STRING>>``.

    Aliases (INTEGER, DEC, NUMERIC, REAL, DOUBLE PRECISION, CHARACTER VARYING, TIMESTAMP(p)
    WITH LOCAL TIME ZONE) are normalised; precisions and lengths are range-checked.

    Raises:
        KafkaOptionsError: the text is not a Flink SQL type.
    """
    if not isinstance(text, str):
        raise KafkaOptionsError(f"A Flink SQL type must be a string, got {type(text).__name__}.")
    return _TypeParser(text).parse()


def spark_type(t: FlinkType | str) -> DataType:
    """Map a Flink SQL type to the Spark SQL type that holds the same values.

    TIME has no Spark counterpart and is carried as STRING; TIMESTAMP_LTZ maps to Spark's
    session-time-zone TIMESTAMP and TIMESTAMP to TIMESTAMP_NTZ; MULTISET maps to an ARRAY.

    Example:
        >>> spark_type("ARRAY<INT>").simpleString()
        'array<int>'
    """
    from pyspark.sql import types as T

    if isinstance(t, str):
        t = parse_flink_type(t)
    simple: dict[str, Any] = {
        "STRING": T.StringType,
        "VARCHAR": T.StringType,
        "CHAR": T.StringType,
        "TIME": T.StringType,
        "BOOLEAN": T.BooleanType,
        "TINYINT": T.ByteType,
        "SMALLINT": T.ShortType,
        "INT": T.IntegerType,
        "BIGINT": T.LongType,
        "FLOAT": T.FloatType,
        "DOUBLE": T.DoubleType,
        "DATE": T.DateType,
        "TIMESTAMP": T.TimestampNTZType,
        "TIMESTAMP_LTZ": T.TimestampType,
        "BYTES": T.BinaryType,
        "VARBINARY": T.BinaryType,
        "BINARY": T.BinaryType,
    }
    if t.name in simple:
        return simple[t.name]()
    if t.name == "DECIMAL":
        precision = t.params[0] if t.params else 10
        scale = t.params[1] if len(t.params) > 1 else 0
        return T.DecimalType(precision, scale)
    if t.name in ("ARRAY", "MULTISET"):
        return T.ArrayType(spark_type(t.children[0]), containsNull=t.children[0].nullable)
    if t.name == "MAP":
        key, value = t.children
        return T.MapType(spark_type(key), spark_type(value), valueContainsNull=value.nullable)
    if t.name == "ROW":
        return T.StructType(
            [
                T.StructField(n, spark_type(c), nullable=c.nullable)
                for n, c in zip(t.field_names, t.children, strict=False)
            ]
        )
    raise KafkaOptionsError(f"Flink SQL type {t} has no Spark mapping.")


def flink_type_of(t: DataType) -> FlinkType:
    """The Flink SQL type whose values a Spark SQL type holds (the inverse of
    :func:`spark_type`; Spark's TIMESTAMP is TIMESTAMP_LTZ, TIMESTAMP_NTZ is TIMESTAMP).

    Example:
        >>> from pyspark.sql import types as T
        >>> str(flink_type_of(T.ArrayType(T.DecimalType(10, 2))))
        'ARRAY<DECIMAL(10, 2)>'
    """
    from pyspark.sql import types as T

    simple = {
        T.StringType: "STRING", T.BooleanType: "BOOLEAN", T.ByteType: "TINYINT",
        T.ShortType: "SMALLINT", T.IntegerType: "INT", T.LongType: "BIGINT",
        T.FloatType: "FLOAT", T.DoubleType: "DOUBLE", T.DateType: "DATE",
        T.TimestampNTZType: "TIMESTAMP", T.TimestampType: "TIMESTAMP_LTZ",
        T.BinaryType: "BYTES",
    }  # fmt: skip
    for kind, name in simple.items():
        if isinstance(t, kind):
            return FlinkType(name, (6,) if name.startswith("TIMESTAMP") else ())
    if isinstance(t, T.DecimalType):
        return FlinkType("DECIMAL", (t.precision, t.scale))
    if isinstance(t, T.ArrayType):
        return FlinkType("ARRAY", children=(flink_type_of(t.elementType),))
    if isinstance(t, T.MapType):
        return FlinkType("MAP", children=(flink_type_of(t.keyType), flink_type_of(t.valueType)))
    if isinstance(t, T.StructType):
        return FlinkType.row(t.names, (flink_type_of(f.dataType) for f in t.fields))
    return FlinkType("STRING")


_COLUMN_KEYS = ("name", "type", "metadata_key", "virtual", "expression", "comment")


@dataclass(frozen=True)
class Column:
    """A column of a Kafka table: physical, metadata (``METADATA FROM 'key'``) or computed.

    A computed column (``expression``) has no declared type; ``flink_type`` is then STRING.

    Example:
        >>> Column("ts", "TIMESTAMP_LTZ(3)", metadata_key="timestamp").is_metadata
        True
    """

    name: str
    type: str = "STRING"
    metadata_key: str | None = None
    virtual: bool = False
    expression: str | None = None
    comment: str | None = None
    flink_type: FlinkType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise KafkaOptionsError(f"A column name must be a non-empty string, got {self.name!r}.")
        if self.virtual and self.metadata_key is None:
            raise KafkaOptionsError(
                f"Column '{self.name}' is VIRTUAL but not a metadata column; only METADATA "
                f"columns can be VIRTUAL."
            )
        if self.expression is not None and self.metadata_key is not None:
            raise KafkaOptionsError(
                f"Column '{self.name}' cannot be both computed and a metadata column."
            )
        try:
            flink_type = (
                parse_flink_type(self.type) if self.expression is None else FlinkType("STRING")
            )
        except KafkaOptionsError as exc:
            raise KafkaOptionsError(f"Column '{self.name}': {exc}") from None
        object.__setattr__(self, "flink_type", flink_type)

    @property
    def is_physical(self) -> bool:
        """True for a column carried in the record's key or value."""
        return self.metadata_key is None and self.expression is None

    @property
    def is_metadata(self) -> bool:
        """True for a column read from (or written to) the record's metadata."""
        return self.metadata_key is not None

    @property
    def is_computed(self) -> bool:
        """True for a computed column (``name AS expression``)."""
        return self.expression is not None

    @classmethod
    def coerce(cls, value: Column | dict[str, Any]) -> Column:
        """Accept a Column or a dict with the same field names (``name`` and ``type`` at least).

        Raises:
            KafkaOptionsError: the value is neither, or the dict has unknown keys.
        """
        if isinstance(value, Column):
            return value
        if not isinstance(value, dict) or "name" not in value:
            raise KafkaOptionsError(
                f"A column must be a Column or a dict with 'name' and 'type', got "
                f"{type(value).__name__}."
            )
        unknown = sorted(str(k) for k in value if k not in _COLUMN_KEYS)
        if unknown:
            raise KafkaOptionsError(
                f"Unknown column field(s) {', '.join(unknown)}; allowed: {', '.join(_COLUMN_KEYS)}."
            )
        return cls(
            name=str(value["name"]),
            type=str(value.get("type", "STRING")),
            metadata_key=value.get("metadata_key"),
            virtual=bool(value.get("virtual", False)),
            expression=value.get("expression"),
            comment=value.get("comment"),
        )


def struct_type(columns: tuple[Column, ...] | list[Column]) -> StructType:
    """The Spark schema of the given columns, in order.

    Example:
        >>> struct_type([Column("id", "BIGINT NOT NULL")]).simpleString()
        'struct<id:bigint>'
    """
    from pyspark.sql import types as T

    return T.StructType(
        [T.StructField(c.name, spark_type(c.flink_type), c.flink_type.nullable) for c in columns]
    )


def row_type(columns: Sequence[Column]) -> FlinkType:
    """The ROW type holding ``columns`` (what a record of the table decodes to)."""
    return FlinkType.row((c.name for c in columns), (c.flink_type for c in columns))
