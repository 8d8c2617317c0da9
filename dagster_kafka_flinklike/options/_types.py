"""Flink SQL data types: parsing type strings and mapping them to Spark types in one place."""

from __future__ import annotations

import re
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


_ALIASES = {
    "INTEGER": "INT",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
    "DOUBLE PRECISION": "DOUBLE",
    "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
    "TIMESTAMP WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ",
    "TIME WITHOUT TIME ZONE": "TIME",
}
_SIMPLE = {
    "STRING",
    "VARCHAR",
    "CHAR",
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "BYTES",
    "VARBINARY",
    "BINARY",
}
_TOKEN = re.compile(
    r"\s*(?:(?P<ident>`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_$]*)|(?P<num>\d+)|(?P<sym>[<>(),]))"
)


class _TypeParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise self.error(f"unexpected character {text[pos:].strip()[:1]!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def error(self, why: str) -> KafkaOptionsError:
        return KafkaOptionsError(f"Invalid Flink SQL type {self.text!r}: {why}.")

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
            raise self.error(f"expected {sym!r} but found {value!r}")

    def accept_word(self, *words: str) -> bool:
        n = len(words)
        toks = [self.peek(k) for k in range(n)]
        if all(
            t is not None and t[0] == "ident" and t[1].upper() == w
            for t, w in zip(toks, words, strict=False)
        ):
            self.i += n
            return True
        return False

    def parse(self) -> FlinkType:
        result = self.parse_type()
        if self.peek() is not None:
            raise self.error(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return result

    def ints(self) -> tuple[int, ...]:
        if self.peek() != ("sym", "("):
            return ()
        self.take()
        values = []
        while True:
            kind, value = self.take()
            if kind != "num":
                raise self.error(f"expected a number but found {value!r}")
            values.append(int(value))
            kind, value = self.take()
            if value == ")":
                return tuple(values)
            if value != ",":
                raise self.error(f"expected ',' or ')' but found {value!r}")

    def parse_type(self) -> FlinkType:
        kind, word = self.take()
        if kind != "ident":
            raise self.error(f"expected a type name but found {word!r}")
        name = word.upper()
        if name == "DOUBLE" and self.accept_word("PRECISION"):
            pass
        if name in ("TIMESTAMP", "TIME"):
            params = self.ints()
            if self.accept_word("WITH", "LOCAL", "TIME", "ZONE"):
                name = "TIMESTAMP_LTZ"
            else:
                self.accept_word("WITHOUT", "TIME", "ZONE")
            return self.finish(FlinkType(name, params))
        name = _ALIASES.get(name, name)
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
            close = ">" if self.peek() == ("sym", "<") else ")"
            self.take()
            names: list[str] = []
            children: list[FlinkType] = []
            while True:
                kind, fname = self.take()
                if kind != "ident":
                    raise self.error(f"expected a field name but found {fname!r}")
                names.append(_unquote(fname))
                children.append(self.parse_type())
                kind, value = self.take()
                if value == close:
                    break
                if value != ",":
                    raise self.error(f"expected ',' or {close!r} but found {value!r}")
            return self.finish(FlinkType("ROW", children=tuple(children), field_names=tuple(names)))
        if name not in _SIMPLE:
            raise self.error(f"unknown type {word!r}")
        return self.finish(FlinkType(name, self.ints()))

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

    Raises:
        KafkaOptionsError: the text is not a Flink SQL type.
    """
    return _TypeParser(text).parse()


def spark_type(t: FlinkType | str) -> DataType:
    """Map a Flink SQL type to the Spark SQL type that holds the same values.

    TIME has no Spark counterpart and is carried as STRING; TIMESTAMP_LTZ maps to Spark's
    session-time-zone TIMESTAMP and TIMESTAMP to TIMESTAMP_NTZ.
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


@dataclass(frozen=True)
class Column:
    """A column of a Kafka table: physical, metadata (``METADATA FROM 'key'``) or computed.

    Example:
        >>> Column("ts", "TIMESTAMP_LTZ(3)", metadata_key="timestamp")
    """

    name: str
    type: str = "STRING"
    metadata_key: str | None = None
    virtual: bool = False
    expression: str | None = None
    flink_type: FlinkType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "flink_type",
            parse_flink_type(self.type) if self.expression is None else FlinkType("STRING"),
        )

    @property
    def is_physical(self) -> bool:
        """True for a column carried in the record's key or value."""
        return self.metadata_key is None and self.expression is None

    @property
    def is_metadata(self) -> bool:
        """True for a column read from (or written to) the record's metadata."""
        return self.metadata_key is not None

    @classmethod
    def coerce(cls, value: Column | dict[str, Any]) -> Column:
        """Accept a Column or a ``{"name": ..., "type": ...}`` dict."""
        if isinstance(value, Column):
            return value
        if not isinstance(value, dict) or "name" not in value:
            raise KafkaOptionsError(
                f"A column must be a Column or a dict with 'name' and 'type', got {value!r}."
            )
        return cls(
            name=str(value["name"]),
            type=str(value.get("type", "STRING")),
            metadata_key=value.get("metadata_key"),
            virtual=bool(value.get("virtual", False)),
            expression=value.get("expression"),
        )


def struct_type(columns: tuple[Column, ...] | list[Column]) -> StructType:
    """The Spark schema of the given columns, in order."""
    from pyspark.sql import types as T

    return T.StructType(
        [T.StructField(c.name, spark_type(c.flink_type), c.flink_type.nullable) for c in columns]
    )
