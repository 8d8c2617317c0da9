"""The ``json`` format's exactness pass: records rewritten where Spark's JSON reader would not
give Flink's result, before it reads them.

Spark's reader gives a JSON number read into a STRING column through a double (``1.50`` becomes
``1.5``, ``1e2`` becomes ``100.0``), while Flink keeps the number as written; it fails a record
with a number beyond DECIMAL(38), where Flink gives null; it reads a DECIMAL string with commas
(dropping them) or spaces around it (failing it), where Flink fails the first and trims the
second; it fails a number with a fraction or an exponent in an INT or BIGINT column, where
Flink truncates it; it reads a number beyond a double's range as a text it cannot convert, where
Flink gives infinity for a FLOAT or DOUBLE; and rescaling a DECIMAL with an exponent of millions
costs its task seconds or more (growing with the exponent). The reader's tasks run this pass on
the records that the native decoding left (see :mod:`._arrow_json`), where the bytes are.
Along the table's type tree (nested rows, arrays and maps too):

- a number in a STRING position is quoted;
- a DECIMAL of 10^(38 - scale) or more becomes ``null``, and one with a huge negative exponent
  that rounds to zero becomes ``0``;
- a DECIMAL string is written trimmed and unescaped, or, with a comma, put in an array, so
  that Spark's reader fails the record as Flink does;
- in an INT or BIGINT position, a number with a fraction or an exponent becomes its double's
  value truncated toward zero when that is in range (Jackson's conversion, which Flink's
  readings use), and stays as it is (dirty) when not;
- in a FLOAT or DOUBLE position, a number beyond a double's range is quoted (infinity).

In node mode (Flink's node-based reading, which its changelog formats' envelopes go through) a
number in a STRING position is quoted as that reading gives it: an integer as written, any other
number as Java's ``BigDecimal.stripTrailingZeros()`` text when the table has a DECIMAL anywhere
(Jackson then reads floats as BigDecimal: :data:`NODE_DECIMALS`), else as Java's
``Double.toString()`` of its double (:data:`NODE_DOUBLES`: ``1e2`` becomes ``100.0``, ``1e-7``
``1.0E-7``); and a DECIMAL string is not trimmed.

Only records that change are given (the rest are null), and only to the per-record decoding:
the record's own bytes stay what errors and samples show.

The pass is C (``_text_scan.exact``) where the package was built with a compiler, Python
otherwise, with the same results. Its maps mode (C only) prepares records for Arrow's parser
instead: :meth:`ExactJson.for_arrow`.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FlinkType
from ._scanners import TEXT_TYPES, scanner

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

#: The kinds of the scalar positions the pass rewrites: STRING, DECIMAL, INT, BIGINT, FLOAT and
#: DOUBLE.
_LEAVES = "SDILF"
#: INT's and BIGINT's ranges as Jackson checks a double before truncating it (``(double)
#: Long.MAX_VALUE`` is 2^63, which truncates to Long.MAX_VALUE).
_RANGES = {"I": (-(2.0**31), 2.0**31 - 1), "L": (-(2.0**63), 2.0**63)}
#: A DECIMAL's exponent from which a value that rounds to zero is written as 0.
EXPONENT_LIMIT = 1000
_NODE = struct.Struct("<BBHIII")
#: What Java's String.trim() removes around a text.
_JAVA_SPACE = "".join(map(chr, range(0x21)))
#: A decimal's text as Java's BigDecimal reads it (one of the digit runs may be empty).
_DECIMAL = re.compile(r"[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")


#: Node mode: how Flink's node-based reading reads a number with a fraction or an exponent.
NODE_DECIMALS = 1  # the table has a DECIMAL: as a BigDecimal
NODE_DOUBLES = 2  # it has none: as a double


def _kind(t: FlinkType) -> str:
    if t.name in TEXT_TYPES:
        return "S"
    if t.name == "DECIMAL":
        return "D"
    if t.name == "INT":
        return "I"
    if t.name == "BIGINT":
        return "L"
    if t.name in ("FLOAT", "DOUBLE"):
        return "F"
    if t.name == "ROW":
        return "R"
    if t.name in ("ARRAY", "MULTISET"):
        return "A"
    if t.name == "MAP":
        return "M"
    return "X"


def _matters(t: FlinkType) -> bool:
    """Whether a value of type ``t`` has a position the pass rewrites (see :data:`_LEAVES`)."""
    kind = _kind(t)
    if kind in _LEAVES:
        return True
    children = t.children[1:] if kind == "M" else t.children
    return any(_matters(c) for c in children)


def _scale(t: FlinkType) -> int:
    return t.params[1] if len(t.params) > 1 else 0


class ExactJson:
    """The exactness pass over a batch of JSON values for a table's columns: a binary array,
    the rewritten record where one changed, null elsewhere (picklable: built on the driver, run
    in the tasks)."""

    def __init__(self, columns: Sequence[Column], node: int = 0) -> None:
        root = FlinkType(
            "ROW", (), tuple(c.flink_type for c in columns), tuple(c.name for c in columns)
        )
        self.root = root
        self.nodes, self.names = _pack(root)
        #: Flink's node-based reading (the changelog formats' envelopes: :data:`NODE_DECIMALS`
        #: or :data:`NODE_DOUBLES`) instead of its parser-based one (the ``json`` format: 0).
        self.node = node

    def __call__(self, values: pa.Array) -> pa.Array:
        import pyarrow as pa

        module = scanner()
        if module is None:
            rewritten = [_exact_python(v, self.root, self.node) for v in values.to_pylist()]
            return pa.array(rewritten, pa.binary())
        validity, offsets, data = values.buffers()
        assert offsets is not None and data is not None
        changed, out_offsets, out_data = module.exact(
            validity, offsets, data, values.offset, len(values), self.nodes, self.names, self.node
        )
        buffers = [pa.py_buffer(changed), pa.py_buffer(out_offsets), pa.py_buffer(out_data)]
        return pa.Array.from_buffers(pa.binary(), len(values), buffers)

    def for_arrow(self, values: pa.Array) -> pa.Array:
        """The pass for Arrow's parser, which reads no maps and no boolean as text (C only):
        every record it takes, rewritten as for Spark's reader and each MAP written as the array
        of its entries (``[{"key": k, "value": v}, ...]``, the last of a repeated key alone, as
        Flink keeps it), true and false in text positions quoted; null for a record it leaves (a
        map that is no object, a map key with an escape, malformed JSON)."""
        import pyarrow as pa

        validity, offsets, data = values.buffers()
        assert offsets is not None and data is not None
        taken, out_offsets, out_data = scanner().exact(
            validity, offsets, data, values.offset, len(values), self.nodes, self.names, self.node,
            True,
        )  # fmt: skip
        buffers = [pa.py_buffer(taken), pa.py_buffer(out_offsets), pa.py_buffer(out_data)]
        return pa.Array.from_buffers(pa.binary(), len(values), buffers)


def exact_json(columns: Sequence[Column], node: bool = False) -> ExactJson | None:
    """The pass for ``columns`` (``node``: as Flink's node-based reading of a table of these
    columns); None when they have no position it rewrites."""
    if not any(_matters(c.flink_type) for c in columns):
        return None
    return ExactJson(columns, node_mode(columns) if node else 0)


def node_mode(columns: Sequence[Column]) -> int:
    """How Flink's node-based reading of a table of ``columns`` reads a number with a fraction
    or an exponent: :data:`NODE_DECIMALS` when a DECIMAL is anywhere in them, else
    :data:`NODE_DOUBLES`."""
    return NODE_DECIMALS if any(_has_decimal(c.flink_type) for c in columns) else NODE_DOUBLES


def _has_decimal(t: FlinkType) -> bool:
    return t.name == "DECIMAL" or any(_has_decimal(c) for c in t.children)


def _pack(root: FlinkType) -> tuple[bytes, bytes]:
    """The type tree as the C pass reads it: 16-byte nodes, root first, each parent's children
    together; and the row fields' names."""
    nodes: list[list[Any]] = []
    names = bytearray()

    def add(t: FlinkType, name: str) -> int:
        encoded = name.encode("utf-8", "surrogatepass")
        nodes.append([_kind(t), _scale(t) if t.name == "DECIMAL" else 0, 0, 0, len(names)])
        names.extend(encoded)
        nodes[-1].append(len(encoded))
        return len(nodes) - 1

    def children(index: int, t: FlinkType) -> None:
        kind = nodes[index][0]
        if kind not in "RAM":
            return
        kids = list(zip(t.field_names, t.children, strict=True)) if kind == "R" else []
        if kind == "A":
            kids = [("", t.children[0])]
        if kind == "M":
            kids = [("", t.children[1])]
        first = len(nodes)
        nodes[index][2], nodes[index][3] = len(kids), first
        for name, child in kids:
            add(child, name)
        for offset, (_, child) in enumerate(kids):
            children(first + offset, child)

    children(add(root, ""), root)
    packed = b"".join(_NODE.pack(ord(k), s, n, f, at, size) for k, s, n, f, at, size in nodes)
    return packed, bytes(names)


class _Number(str):
    """A JSON number as written."""


class _Object(list):  # type: ignore[type-arg]
    """A JSON object's members in order, duplicates kept."""


def _reject(token: str) -> Any:
    raise ValueError(token)


_DECODER = json.JSONDecoder(
    strict=False,  # raw control characters in strings, as Flink's reader takes them
    object_pairs_hook=_Object,
    parse_float=_Number,
    parse_int=_Number,
    parse_constant=_reject,
)


def _exact_python(value: bytes | None, root: FlinkType, node: int = 0) -> bytes | None:
    """The pass over one record (see the module's docstring): None when it does not change."""
    if value is None:
        return None
    try:
        document = _DECODER.decode(value.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, _Object):
        return None
    changed = [False]
    try:
        rewritten = _rewrite(document, root, changed, node)
        if not changed[0]:
            return None
        return _dumps(rewritten).encode("utf-8", "surrogatepass")
    except RecursionError:
        return None


def _decimal_replacement(text: str, scale: int) -> Any:
    """What a DECIMAL of ``scale`` becomes for a number's text: ``text`` itself, None or 0."""
    found = _DECIMAL.fullmatch(text)
    if found is None or not (found.group(1) or found.group(2)):
        return text
    whole, fraction = found.group(1), found.group(2) or ""
    exponent = int(found.group(3) or 0)
    significant = whole.lstrip("0")
    if not (significant or fraction.strip("0")):
        return text  # zero
    if significant:
        lead = len(significant) - 1 + exponent
    else:
        lead = -(len(fraction) - len(fraction.lstrip("0")) + 1) + exponent
    if lead >= 38 - scale:
        return None
    if exponent <= -EXPONENT_LIMIT and lead < -scale - 1:
        return _Number("0")
    return text


def _node_text(number: str) -> str | None:
    """A number's text as Flink's node-based reading gives it for a STRING: an integer as
    written (a zero as ``0``), any other number as Java's
    ``BigDecimal.stripTrailingZeros().toString()`` (the same notation as Python's ``Decimal``);
    None for an exponent of 100000 or more in magnitude (left as it is, as the C pass does)."""
    from decimal import Decimal

    found = _DECIMAL.fullmatch(number)
    if found is None or abs(int(found.group(3) or 0)) >= 100000:
        return None
    sign, digits, exponent = Decimal(number).as_tuple()
    if not any(digits):
        return "0"
    if found.group(2) is None and found.group(3) is None:
        return str(number)
    assert isinstance(exponent, int)
    while digits[-1] == 0:
        digits, exponent = digits[:-1], exponent + 1
    return str(Decimal((sign, digits, exponent)))


def _node_double_text(number: str) -> str:
    """A number's text as Flink's node-based reading gives it for a STRING of a table without a
    DECIMAL: an integer as :func:`_node_text` gives it, any other number as Java's
    ``Double.toString()`` of its double (Java 19's: the shortest digits that read back as it,
    plain from 10^-3 to 10^7, else ``d.dddE<n>``; Java 17 prints more digits for a few)."""
    from decimal import Decimal

    found = _DECIMAL.fullmatch(number)
    if found is not None and found.group(2) is None and found.group(3) is None:
        return _node_text(number) or number
    value = float(number)
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    # Java's choice (as the C pass makes it): of the decimals that read back as the double,
    # those of the least length (but 2 when that is 1), and of those the nearest.
    shortest = next(t for p in range(1, 17) if float(t := f"{value:.{p}e}") == value)
    sign, digits, exponent = Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    while len(digits) > 1 and digits[-1] == 0:
        digits, exponent = digits[:-1], exponent + 1
    text = "".join(map(str, digits))
    power = len(digits) - 1 + exponent  # of the first digit
    if -3 <= power < 7:
        if power < 0:
            body = "0." + "0" * (-power - 1) + text
        else:
            body = f"{text[: power + 1].ljust(power + 1, '0')}.{text[power + 1 :] or '0'}"
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{power}"
    return ("-" if sign else "") + body


def _truncated(number: str, kind: str) -> str | None:
    """What Flink gives an INT (``kind`` I) or BIGINT (L) for a JSON number with a fraction or
    an exponent: the double's value truncated toward zero; None when it is out of range (as it
    is, the record is dirty, as in Flink)."""
    value = float(number)
    low, high = _RANGES[kind]
    if not low <= value <= high:  # also infinity
        return None
    return str(min(int(value), 2**63 - 1))


def _rewrite(value: Any, t: FlinkType, changed: list[bool], node: int) -> Any:
    kind = _kind(t)
    if kind == "R" and isinstance(value, _Object):
        fields = dict(zip(t.field_names, t.children, strict=True))
        return _Object(
            (k, _rewrite(v, fields[k], changed, node) if k in fields else v) for k, v in value
        )
    if kind == "M" and isinstance(value, _Object):
        return _Object((k, _rewrite(v, t.children[1], changed, node)) for k, v in value)
    if kind == "A" and isinstance(value, list) and not isinstance(value, _Object):
        return [_rewrite(v, t.children[0], changed, node) for v in value]
    if kind == "S" and isinstance(value, _Number):
        if node == NODE_DOUBLES:
            text: str | None = _node_double_text(value)
        else:
            text = _node_text(value) if node else str(value)
        if text is None:
            return value
        changed[0] = True
        return text
    if kind in "IL" and isinstance(value, _Number) and not value.lstrip("-").isdigit():
        truncated = _truncated(value, kind)
        if truncated is None:
            return value
        changed[0] = True
        return _Number(truncated)
    if kind == "F" and isinstance(value, _Number) and math.isinf(float(value)):
        changed[0] = True
        return str(value)  # its text, which Spark's reader gives as infinity, as Flink does
    if kind == "D" and isinstance(value, _Number):
        replaced = _decimal_replacement(value, _scale(t))
        changed[0] = changed[0] or replaced is not value
        return replaced
    if kind == "D" and isinstance(value, str) and value:
        trimmed = value if node else value.strip(_JAVA_SPACE)
        found = _DECIMAL.fullmatch(trimmed)
        if not (found and (found.group(1) or found.group(2))):
            if "," not in trimmed:
                return value
            changed[0] = True
            return [value]  # Spark's reader would drop the commas: it fails an array, as Flink
        replaced = _decimal_replacement(trimmed, _scale(t))
        if replaced is trimmed and trimmed == value:
            return value
        changed[0] = True
        return replaced
    return value


def _dumps(value: Any) -> str:
    if isinstance(value, _Object):
        return "{" + ",".join(f"{json.dumps(k)}:{_dumps(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps(v) for v in value) + "]"
    if isinstance(value, _Number):
        return str(value)
    return json.dumps(value)


__all__ = ["EXPONENT_LIMIT", "ExactJson", "exact_json"]
