"""Avro schemas as the registry formats read them: references inlined, logical types applied as
the reader's schema says.

A schema registered with references (a record type registered under its own subject, as
Confluent's clients register it) names types it does not define; :func:`inlined` puts each
definition at its first use, so the schema parses alone — in fastavro and in Spark's
``from_avro`` alike.

Avro's Java resolver (Flink's and Spark's ``from_avro``) reads a datum with the writer's and the
reader's schema and applies the *reader's* logical types: a writer's ``uuid`` string read as a
``string`` is text, a ``timestamp-millis`` long read as a ``long`` is a number. fastavro applies
the *writer's*. The Python path therefore reads with both schemas' logical types removed
(:func:`without_logical_types`) and then applies the reader's (:func:`logical_values`), so both
paths give the same row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from . import _registry

Convert = Callable[[Any], Any]

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = ("record", "error", "enum", "fixed")
#: Python types of the values fastavro reads for each Avro type (to find a union's branch).
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),), "boolean": (bool,), "int": (int,), "long": (int,),
    "float": (float,), "double": (float,), "bytes": (bytes,), "fixed": (bytes,),
    "string": (str,), "enum": (str,), "record": (dict,), "error": (dict,), "map": (dict,),
    "array": (list,),
}  # fmt: skip


def fullname(name: str, namespace: str) -> str:
    """The full name of a named type ``name`` defined in ``namespace``.

    Example:
        >>> fullname("Address", "shop"), fullname("geo.Point", "shop"), fullname("Id", "")
        ('shop.Address', 'geo.Point', 'Id')
    """
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _space(full: str) -> str:
    return full.rpartition(".")[0]


def named_types(schema: Any, namespace: str = "") -> dict[str, Any]:
    """Every named type (record, enum, fixed) ``schema`` defines, by full name.

    Example:
        >>> sorted(named_types({"type": "record", "name": "A", "namespace": "s", "fields": [
        ...     {"name": "b", "type": {"type": "fixed", "name": "B", "size": 2}}]}))
        ['s.A', 's.B']
    """
    found: dict[str, Any] = {}

    def walk(node: Any, space: str) -> None:
        if isinstance(node, list):
            for branch in node:
                walk(branch, space)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind in _NAMED:
            full = fullname(str(node["name"]), str(node.get("namespace", space)))
            found.setdefault(full, node)
            for field in node.get("fields", ()):
                walk(field.get("type"), _space(full))
        elif kind == "array":
            walk(node.get("items"), space)
        elif kind == "map":
            walk(node.get("values"), space)
        elif isinstance(kind, (dict, list)):
            walk(kind, space)

    walk(schema, namespace)
    return found


def _defined_in(definition: Any, full: str) -> Any:
    """``definition`` written so that it defines ``full`` wherever it is placed."""
    short = full.rpartition(".")[2]
    return {**definition, "name": short, "namespace": _space(full)}


def inlined(schema: Any, named: Mapping[str, Any]) -> Any:
    """``schema`` with each name it uses but does not define replaced, at its first use, by the
    definition ``named`` holds for it (later uses stay names).

    Example:
        >>> address = {"type": "record", "name": "Address", "namespace": "shop",
        ...            "fields": [{"name": "city", "type": "string"}]}
        >>> order = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        ...     {"name": "ship", "type": "Address"}, {"name": "bill", "type": "shop.Address"}]}
        >>> [f["type"] for f in inlined(order, {"shop.Address": address})["fields"]][1]
        'shop.Address'
    """
    defined: set[str] = set()

    def walk(node: Any, space: str) -> Any:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return node
            full = fullname(node, space)
            if full in defined or node in defined:
                return node
            definition = named.get(full, named.get(node))
            if definition is None:  # unknown: left for the parser to name
                return node
            target = full if full in named else node
            return walk(_defined_in(definition, target), space)
        if isinstance(node, list):
            return [walk(branch, space) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in _NAMED:
            full = fullname(str(node["name"]), str(node.get("namespace", space)))
            if full in defined:
                return full
            defined.add(full)
            if kind in ("record", "error"):
                inner = _space(full)
                fields = [{**f, "type": walk(f["type"], inner)} for f in node.get("fields", ())]
                return {**node, "fields": fields}
            return node
        if kind == "array":
            return {**node, "items": walk(node["items"], space)}
        if kind == "map":
            return {**node, "values": walk(node["values"], space)}
        if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in PRIMITIVES):
            return {**node, "type": walk(kind, space)}
        return node

    return walk(schema, "")


def self_contained(conf: Mapping[str, Any], registry: Any, schema: Any) -> Any:
    """The JSON of the registered Avro ``schema`` (a ``Schema``) with the types it references
    (fetched recursively from the registry) inlined.

    Raises:
        SchemaNotFound: a referenced subject or version does not exist.
        SchemaRegistryClientError: the registry did not answer.
        ValueError: a schema is not JSON.
    """
    parsed = json.loads(schema.schema_str)
    references = _registry.referenced(conf, registry, schema)
    if not references:
        return parsed
    named: dict[str, Any] = {}
    for reference in references:
        named.update(named_types(json.loads(reference.schema_str)))
    return inlined(parsed, named)


def without_logical_types(schema: Any) -> Any:
    """``schema`` with every ``logicalType`` removed (the datum's plain Avro values).

    Example:
        >>> without_logical_types({"type": "string", "logicalType": "uuid"})
        {'type': 'string'}
    """
    if isinstance(schema, list):
        return [without_logical_types(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "logicalType"}
    if "fields" in out:
        out["fields"] = [{**f, "type": without_logical_types(f["type"])} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = without_logical_types(out[key])
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = without_logical_types(out["type"])
    return out


def _kind(node: Any, named: Mapping[str, Any]) -> str:
    if isinstance(node, str):
        return node if node in PRIMITIVES else str(named.get(node, {}).get("type", "record"))
    if isinstance(node, dict):
        kind = node.get("type")
        return kind if isinstance(kind, str) else _kind(kind, named)
    return "union"


def logical_values(schema: Any) -> Convert | None:
    """A function giving the values of a datum read without logical types (see
    :func:`without_logical_types`) as ``schema``'s logical types make them: decimals, dates,
    times, timestamps. None when ``schema`` has no logical type fastavro knows.

    Example:
        >>> convert = logical_values({"type": "record", "name": "r", "fields": [
        ...     {"name": "d", "type": {"type": "int", "logicalType": "date"}}]})
        >>> convert({"d": 1})
        {'d': datetime.date(1970, 1, 2)}
    """
    from fastavro.logical_readers import LOGICAL_READERS

    named: dict[str, Any] = {}
    built: dict[str, Convert | None] = {}

    def build(node: Any, space: str) -> Convert | None:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return None
            full = fullname(node, space)
            return built.get(full, built.get(node))
        if isinstance(node, list):
            return union(node, space)
        if not isinstance(node, dict):
            return None
        kind = node.get("type")
        if isinstance(kind, (dict, list)) or kind not in (*PRIMITIVES, *_NAMED, "array", "map"):
            return build(kind, space)  # {"type": <a schema or a name>}
        logical = node.get("logicalType")
        if logical is not None:
            read = LOGICAL_READERS.get(f"{kind}-{logical}")
            if read is not None:
                return lambda value: None if value is None else read(value, node, node)
        if kind in ("record", "error"):
            full = fullname(str(node["name"]), str(node.get("namespace", space)))
            named[full] = node
            built[full] = None  # a recursive use reads its own values as they are
            converter = record(node, _space(full))
            built[full] = converter
            return converter
        if kind in ("enum", "fixed"):
            named[fullname(str(node["name"]), str(node.get("namespace", space)))] = node
            return None
        if kind == "array":
            item = build(node["items"], space)
            return None if item is None else (lambda v: None if v is None else [item(x) for x in v])
        if kind == "map":
            value = build(node["values"], space)
            if value is None:
                return None
            return lambda v: None if v is None else {k: value(x) for k, x in v.items()}
        return None

    def record(node: Mapping[str, Any], space: str) -> Convert | None:
        fields = [(f["name"], build(f["type"], space)) for f in node.get("fields", ())]
        convert = [(name, c) for name, c in fields if c is not None]
        if not convert:
            return None

        def apply(datum: Any) -> Any:
            if datum is None:
                return None
            out = dict(datum)
            for name, c in convert:
                if name in out:
                    out[name] = c(out[name])
            return out

        return apply

    def union(branches: list[Any], space: str) -> Convert | None:
        converters = [(_kind(b, named), build(b, space)) for b in branches]
        if all(c is None for _, c in converters):
            return None

        def apply(value: Any) -> Any:
            if value is None:
                return None
            for kind, c in converters:
                if isinstance(value, _PYTHON_TYPES.get(kind, ())) and not (
                    isinstance(value, bool) and kind in ("int", "long")
                ):
                    return value if c is None else c(value)
            return value

        return apply

    return build(schema, "")


__all__ = [
    "PRIMITIVES",
    "fullname",
    "inlined",
    "logical_values",
    "named_types",
    "self_contained",
    "without_logical_types",
]
