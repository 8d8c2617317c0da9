"""``scan.header-filter``: keep only records whose headers satisfy an expression.

The expression is conditions joined by ``&`` (and) and ``|`` (or), e.g.
``depart:toy|depart:book&!env:test``:

- ``key:value`` holds when the record has a header named ``key`` whose value is exactly the UTF-8
  bytes of ``value``. A record may carry several headers with the same key: the condition holds
  when any of them matches. A header without a value (null) matches no condition.
- ``!key:value`` holds when ``key:value`` does not, so a record without the header passes it.
- Operators are applied strictly from left to right, with no precedence and no parentheses:
  ``a|b&!c`` means ``(a or b) and not c``.

Whitespace around a condition and around its key is ignored; the value is compared exactly as
written (after the condition's own surrounding whitespace is removed). The same parsed
:class:`HeaderFilter` evaluates in Python (:meth:`HeaderFilter.matches`) and builds the Spark
column that filters records before they are decoded (:meth:`HeaderFilter.to_column`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import KafkaOptionsError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

OPTION_KEY = "scan.header-filter"
_OPERATORS = "&|"
_FORBIDDEN_IN_KEY = "!()"
_FORBIDDEN_IN_VALUE = "()"
_EXAMPLE = "'depart:toy|depart:book&!env:test'"


@dataclass(frozen=True)
class HeaderCondition:
    """One ``[!]key:value`` condition of a header filter.

    Example:
        >>> HeaderCondition("env", "test", negated=True).matches([("env", b"prod")])
        True
    """

    key: str
    value: str
    negated: bool = False

    @property
    def value_bytes(self) -> bytes:
        """The header value the condition looks for, as the UTF-8 bytes compared."""
        return self.value.encode("utf-8")

    def matches(self, headers: Iterable[tuple[str, bytes | None]]) -> bool:
        """Whether the condition holds for a record with ``headers`` (``(key, value)`` pairs)."""
        wanted = self.value_bytes
        found = any(k == self.key and v is not None and bytes(v) == wanted for k, v in headers)
        return found != self.negated

    def to_column(self, headers: SparkColumn) -> SparkColumn:
        """The condition as a boolean Spark column over ``array<struct<key, value>>`` headers."""
        from pyspark.sql import functions as F

        key, value = F.lit(self.key), F.lit(bytearray(self.value_bytes))
        found = F.coalesce(
            F.exists(headers, lambda h: (h["key"] == key) & h["value"].eqNullSafe(value)),
            F.lit(False),
        )
        return ~found if self.negated else found

    def __str__(self) -> str:
        return f"{'!' if self.negated else ''}{self.key}:{self.value}"


@dataclass(frozen=True)
class HeaderFilter:
    """A parsed ``scan.header-filter``: a first condition, then ``(operator, condition)`` pairs.

    Example:
        >>> f = parse_header_filter("depart:toy|depart:book&!env:test")
        >>> f.matches([("depart", b"book")]), f.matches([("depart", b"book"), ("env", b"test")])
        (True, False)
    """

    first: HeaderCondition
    rest: tuple[tuple[str, HeaderCondition], ...] = ()

    @property
    def conditions(self) -> tuple[HeaderCondition, ...]:
        """Every condition, in the order written."""
        return (self.first, *(c for _, c in self.rest))

    def matches(self, headers: Iterable[tuple[str, bytes | None]]) -> bool:
        """Evaluate the filter for one record's headers, strictly left to right."""
        pairs = list(headers)
        result = self.first.matches(pairs)
        for op, condition in self.rest:
            if op == "&":
                result = result and condition.matches(pairs)
            else:
                result = result or condition.matches(pairs)
        return result

    def to_column(self, headers: SparkColumn) -> SparkColumn:
        """The filter as a boolean Spark column (never null), evaluated left to right."""
        result = self.first.to_column(headers)
        for op, condition in self.rest:
            other = condition.to_column(headers)
            result = (result & other) if op == "&" else (result | other)
        return result

    def __str__(self) -> str:
        return str(self.first) + "".join(f"{op}{c}" for op, c in self.rest)


def _error(why: str) -> KafkaOptionsError:
    return KafkaOptionsError(
        f"Option '{OPTION_KEY}' {why}. Write 'key:value' conditions joined by '&' or '|', each "
        f"optionally negated with '!', evaluated left to right without parentheses, e.g. "
        f"{_EXAMPLE}.",
        keys=(OPTION_KEY,),
    )


def _condition(term: str, position: int) -> HeaderCondition:
    text = term.strip()
    if not text:
        raise _error(f"has an empty condition (condition {position})")
    negated = text.startswith("!")
    body = text[1:] if negated else text
    key, colon, value = body.partition(":")
    key = key.strip()
    if not colon:
        raise _error(f"has a condition without ':' between header key and value: {text[:60]!r}")
    if not key:
        raise _error(f"has a condition without a header key: {text[:60]!r}")
    if any(c in _FORBIDDEN_IN_VALUE for c in key + value):
        raise _error(f"has an invalid condition {text[:60]!r} (parentheses are not supported)")
    if any(c in _FORBIDDEN_IN_KEY for c in key):
        raise _error(f"has an invalid condition {text[:60]!r} ('!' may only start a condition)")
    return HeaderCondition(key=key, value=value, negated=negated)


def parse_header_filter(text: str) -> HeaderFilter:
    """Parse a ``scan.header-filter`` expression.

    Example:
        >>> str(parse_header_filter(" depart:toy | !env:test "))
        'depart:toy|!env:test'

    Raises:
        KafkaOptionsError: the expression is empty, has an empty or malformed condition, or uses
            parentheses; the message names ``scan.header-filter``.
    """
    if not isinstance(text, str) or not text.strip():
        raise _error("is empty")
    terms: list[str] = []
    operators: list[str] = []
    start = 0
    for i, char in enumerate(text):
        if char in _OPERATORS:
            terms.append(text[start:i])
            operators.append(char)
            start = i + 1
    terms.append(text[start:])
    conditions = [_condition(term, n + 1) for n, term in enumerate(terms)]
    return HeaderFilter(conditions[0], tuple(zip(operators, conditions[1:], strict=True)))


__all__ = ["HeaderCondition", "HeaderFilter", "parse_header_filter"]
