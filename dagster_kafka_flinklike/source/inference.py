"""Schema inference for JSON values: the columns of a table that declares none.

Each JSON object's fields get a Flink type from their values, and the types of many records
merge into the smallest type that holds them all (the type tree below), as the data-ingestion
Kafka source infers and evolves its schema:

- ``true``/``false`` → BOOLEAN; an integer → BIGINT (DECIMAL(p, 0) past 64 bits, up to 38
  digits); any other number → DOUBLE; a string → STRING; ``null`` tells nothing (a field seen
  only as ``null`` is STRING).
- Objects and arrays are STRING (their JSON text), unless nested columns are flattened
  (``json.infer-schema.flatten-nested-columns.enable``): then an object's fields become columns
  named ``parent.child``, recursively; arrays stay STRING.
- ``json.infer-schema.primitive-as-string``: every value is STRING.
- ``json.infer-schema.fixed-types`` (``id BIGINT, name VARCHAR(10)``): those fields keep the
  given type whatever the data holds.

Merging two types (a field seen with both) takes the smaller common parent: equal types stay;
integers widen to the larger integer, integers and DECIMAL to a DECIMAL holding both, any
number and a floating type to DOUBLE; the same type with another precision to the larger
(DECIMAL, VARCHAR, CHAR, TIMESTAMP); DATE and TIMESTAMP to TIMESTAMP; anything else to STRING.
A field missing from later records stays (its value is null); a new one is appended, nullable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..options import FlinkType

__all__ = [
    "InferenceSettings",
    "Observed",
    "SchemaChange",
    "infer_json_fields",
    "json_value_type",
    "merge_fields",
    "merge_observed",
    "observe_field",
    "observe_json",
    "observe_record",
    "wider_type",
]

STRING = FlinkType("STRING")
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_FLOATS = ("FLOAT", "DOUBLE")
_SIZED = ("VARCHAR", "CHAR", "BINARY", "VARBINARY", "TIMESTAMP", "TIMESTAMP_LTZ", "TIME")
#: Decimal digits each integer type holds (DECIMAL precision with scale 0 that contains it).
_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_MAX_DECIMAL = 38


@dataclass(frozen=True)
class InferenceSettings:
    """How values map to types: the format's ``infer-schema.*`` options.

    Example:
        >>> InferenceSettings(primitive_as_string=True).type_of(1)
        FlinkType(name='STRING', params=(), children=(), field_names=(), nullable=True)
    """

    primitive_as_string: bool = False
    flatten_nested: bool = False
    #: Fields whose type is given, not inferred.
    fixed_types: Mapping[str, FlinkType] = field(default_factory=dict)

    def type_of(self, value: object) -> FlinkType | None:
        """The type of one JSON scalar (None for ``null``)."""
        found = json_value_type(value)
        if found is not None and self.primitive_as_string:
            return STRING
        return found


@dataclass(frozen=True)
class SchemaChange:
    """One change of an inferred schema: a column added or a column's type widened."""

    column: str
    before: FlinkType | None
    after: FlinkType

    def __str__(self) -> str:
        if self.before is None:
            return f"added column `{self.column}` {self.after}"
        return f"widened column `{self.column}` from {self.before} to {self.after}"


def json_value_type(value: object) -> FlinkType | None:
    """The Flink type of a decoded JSON value (``json.loads``), None for ``null``.

    Example:
        >>> [str(json_value_type(v)) for v in (True, 7, 2**70, 1.5, "x", {"a": 1}, [1])]
        ['BOOLEAN', 'BIGINT', 'DECIMAL(22, 0)', 'DOUBLE', 'STRING', 'STRING', 'STRING']
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return FlinkType("BOOLEAN")
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return FlinkType("BIGINT")
        digits = len(str(abs(value)))
        return FlinkType("DECIMAL", (digits, 0)) if digits <= _MAX_DECIMAL else STRING
    if isinstance(value, float):
        return FlinkType("DOUBLE")
    return STRING


def _decimal_of(t: FlinkType) -> tuple[int, int]:
    if t.name == "DECIMAL":
        precision = t.params[0] if t.params else 10
        return precision, t.params[1] if len(t.params) > 1 else 0
    return _INTEGER_DIGITS[t.name], 0


def wider_type(a: FlinkType, b: FlinkType) -> FlinkType:
    """The smallest type holding every value of ``a`` and of ``b`` (see the module docs).

    Example:
        >>> str(wider_type(FlinkType("INT"), FlinkType("DECIMAL", (10, 2))))
        'DECIMAL(12, 2)'
        >>> str(wider_type(FlinkType("BIGINT"), FlinkType("BOOLEAN")))
        'STRING'
    """
    a, b = _nullable(a), _nullable(b)
    if a == b:
        return a
    names = {a.name, b.name}
    if names <= set(_INTEGERS):
        return max(a, b, key=lambda t: _INTEGERS.index(t.name))
    if names <= {*_INTEGERS, "DECIMAL"}:
        (p1, s1), (p2, s2) = _decimal_of(a), _decimal_of(b)
        scale = max(s1, s2)
        precision = max(p1 - s1, p2 - s2) + scale
        if precision > _MAX_DECIMAL:
            return FlinkType("DOUBLE")
        return FlinkType("DECIMAL", (precision, scale))
    if names <= {*_INTEGERS, "DECIMAL", *_FLOATS}:
        return FlinkType("FLOAT") if names == {"FLOAT"} else FlinkType("DOUBLE")
    if a.name == b.name and a.name in _SIZED:
        return max(a, b, key=lambda t: t.params[0] if t.params else 0)
    if names == {"DATE", "TIMESTAMP"}:
        return a if a.name == "TIMESTAMP" else b
    return STRING


def _nullable(t: FlinkType) -> FlinkType:
    return t if t.nullable else FlinkType(t.name, t.params, t.children, t.field_names, True)


def _record_fields(
    record: Mapping[str, object], settings: InferenceSettings, prefix: str = ""
) -> Iterable[tuple[str, FlinkType | None]]:
    for name, value in record.items():
        column = f"{prefix}{name}"
        if column in settings.fixed_types:
            yield column, settings.fixed_types[column]
        elif isinstance(value, dict) and settings.flatten_nested:
            yield from _record_fields(value, settings, f"{column}.")
        else:
            yield column, settings.type_of(value)


#: Fields as observed: a type, or None for a field seen only as ``null`` (no information yet).
Observed = dict[str, FlinkType | None]


def observe_json(
    values: Iterable[bytes | str | None],
    settings: InferenceSettings | None = None,
    seen: Observed | None = None,
) -> tuple[Observed, int]:
    """Observe the fields of JSON object ``values`` into ``seen`` (a new dict by default).

    Returns ``seen`` and how many values were not JSON objects (skipped here: they are dirty
    data when read). Tombstones and empty values yield no row and are not counted.
    """
    settings = settings or InferenceSettings()
    seen = {} if seen is None else seen
    bad = 0
    for raw in values:
        if raw is None or raw in (b"", ""):
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            bad += 1
            continue
        if not isinstance(record, dict):
            bad += 1
            continue
        observe_record(record, settings, seen)
    return seen, bad


def observe_record(
    record: Mapping[str, object], settings: InferenceSettings, seen: Observed, prefix: str = ""
) -> Observed:
    """Observe the fields of one decoded JSON object into ``seen`` (column names prefixed
    with ``prefix``).

    Example:
        >>> {k: str(v) for k, v in observe_record({"id": 1}, InferenceSettings(), {}).items()}
        {'id': 'BIGINT'}
    """
    for column, found in _record_fields(record, settings, prefix):
        observe_field(seen, column, found)
    return seen


def observe_field(seen: Observed, column: str, found: FlinkType | None) -> None:
    """Merge one observation of ``column`` (None: a ``null``) into ``seen``."""
    known = seen.get(column)
    if found is None:
        seen.setdefault(column, None)
    else:
        seen[column] = found if known is None else wider_type(known, found)


def merge_observed(into: Observed, other: Mapping[str, FlinkType | None]) -> Observed:
    """``other``'s observations added to ``into`` (observations of another partition)."""
    for column, found in other.items():
        observe_field(into, column, found)
    return into


def infer_json_fields(
    values: Iterable[bytes | str | None], settings: InferenceSettings | None = None
) -> tuple[dict[str, FlinkType], int]:
    """The merged fields of JSON object ``values`` (in first-seen order; a field seen only as
    ``null`` is STRING) and how many values were not JSON objects.

    Example:
        >>> fields, bad = infer_json_fields([b'{"id": 1, "p": 2}', b'{"id": 2.5, "q": "x"}', b'[1'])
        >>> {k: str(v) for k, v in fields.items()}, bad
        ({'id': 'DOUBLE', 'p': 'BIGINT', 'q': 'STRING'}, 1)
    """
    seen, bad = observe_json(values, settings)
    return {name: t or STRING for name, t in seen.items()}, bad


def merge_fields(
    current: Mapping[str, FlinkType], found: Mapping[str, FlinkType | None]
) -> tuple[dict[str, FlinkType], list[SchemaChange]]:
    """``current`` evolved by ``found``: new columns appended (STRING when only ``null`` was
    seen), types widened; none dropped.

    Example:
        >>> merged, changes = merge_fields({"id": FlinkType("INT")},
        ...                                {"id": FlinkType("BIGINT"), "x": None})
        >>> [str(c) for c in changes]
        ['widened column `id` from INT to BIGINT', 'added column `x` STRING']
    """
    merged = dict(current)
    changes: list[SchemaChange] = []
    for name, t in found.items():
        before = merged.get(name)
        if t is None:
            if before is not None:
                continue
            t = STRING
        after = t if before is None else wider_type(before, t)
        if after != before:
            merged[name] = after
            changes.append(SchemaChange(name, before, after))
    return merged, changes
