"""Drives the C modules (``_text_scan``, ``_messages``) as built with AddressSanitizer and
UndefinedBehaviorSanitizer, over arbitrary arguments: random and valid JSON / CSV records,
buffers cut short, misaligned or made up, offsets and lengths out of range, huge values, wrong
types, and message lists that change while their fields are read.

Run by ``test_native_sanitized.py`` in a process with the sanitizer runtime preloaded:
``python sanitized_driver.py <directory of the built modules> <examples>``. Any read or write
outside a buffer, or any undefined behaviour, ends the process with the sanitizer's report; a
bad argument must be a Python exception. Before each call the call is written to
``<directory>/last-call.txt``, so a crash names the arguments that caused it. The driver
imports neither the package nor pyarrow (buffers are built by hand), only the modules under
test and hypothesis.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: Exceptions a bad argument may raise (anything else fails the driver).
ARGUMENT_ERRORS = (ValueError, TypeError, OverflowError, BufferError)
INT64 = (-(2**63), 2**63 - 1)
#: Integers at the edges of what the modules compute with.
EDGES = [
    0, 1, -1, 2, 7, 8, 9, 2**31 - 1, -(2**31), 2**31, 2**32, 2**61, 2**62, 2**63 - 1, -(2**63),
    (2**63 - 1) // 4, (2**63 - 1) // 8, 9223372036854775, 9223372036854776, -9223372036854775,
    -9223372036854776, 2**64, -(2**64), 2**70,
]  # fmt: skip
KINDS = "sCDbBHILfdmtTzZ"


def load(name: str, directory: Path) -> ModuleType:
    """The extension module ``name`` built into ``directory``."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    path = str(directory / f"{name}{suffix}")
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


DIRECTORY = Path(sys.argv[1])
EXAMPLES = int(sys.argv[2])
text_scan = load("_text_scan", DIRECTORY)
messages_module = load("_messages", DIRECTORY)
LAST_CALL = (DIRECTORY / "last-call.txt").open("w")
#: Each property's settings: examples from the command line, none saved between runs.
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def note(name: str, *arguments: Any) -> None:
    """Write the call about to be made, for the report of a crash."""
    LAST_CALL.seek(0)
    LAST_CALL.write(f"{name}{arguments!r}\n")
    LAST_CALL.truncate()
    LAST_CALL.flush()


# --- records and the buffers of an Arrow binary array -------------------------------------------

_integers = st.one_of(st.sampled_from(EDGES), st.integers(*INT64), st.integers(-300, 300))
_numbers = st.one_of(
    _integers.map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-0", "1.5e-7", "1E400", "0.1e-400", "123456789012345678901234567890.5",
                     "12.50", "-00", "1.", ".5", "1e", "--1", "0x10"]),
)  # fmt: skip
_two = st.integers(0, 99).map("{:02d}".format)
_clocks = st.builds(
    lambda h, m, s, fraction: f"{h}:{m}" + (f":{s}{fraction}" if s else ""),
    _two,
    _two,
    st.one_of(st.none(), _two),
    st.sampled_from(["", ".", ".5", ".123456789", ".1234567890", "x"]),
)
_dates = st.builds(
    "{:04d}-{}-{}".format, st.integers(0, 10000), st.integers(0, 13).map("{:02d}".format), _two
)
_temporal = st.one_of(
    _dates,
    _clocks,
    st.builds(lambda d, sep, c, z: f"{d}{sep}{c}{z}", _dates, st.sampled_from(" T"), _clocks,
              st.sampled_from(["", "Z"])),
    st.sampled_from(["99:99:99", "24:00:00", "23:59:60", "00:00:00.", "2021-02-29", "0000-01-01"]),
)  # fmt: skip
_texts = st.one_of(st.text(max_size=12), _temporal, _numbers)
_json_tokens = st.one_of(
    _numbers,
    _texts.map(json.dumps),
    _texts.map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.sampled_from(["true", "false", "null", "{}", "[]", '{"a": [1, {"b": null}]}', '"\\ud800"']),
)


_NAMES = [b"a", b"b", b"id", b"x", b""]
_column = st.tuples(
    st.sampled_from(_NAMES),
    st.sampled_from(KINDS),
    st.one_of(st.integers(1, 38), st.sampled_from([0, -1, 39, 2**31 - 1])),  # DECIMAL precision
    st.one_of(st.integers(0, 38), st.sampled_from([-1, 2**31 - 1])),  # and scale
)
_columns = st.lists(_column, max_size=6).map(tuple)
_json_field = st.tuples(st.sampled_from([n.decode() for n in _NAMES] + ["other"]), _json_tokens)
_json_record = st.lists(_json_field, max_size=7).map(
    lambda fields: ("{" + ",".join(json.dumps(n) + ":" + v for n, v in fields) + "}").encode(
        "utf-8", "surrogatepass"
    )
)


def _csv_text(text: str, quoted: bool) -> str:
    return '"' + text.replace('"', '""') + '"' if quoted or '"' in text or "," in text else text


_csv_field = st.builds(_csv_text, st.one_of(_texts, st.sampled_from(["", "n/a", "true"])),
                       st.booleans())  # fmt: skip
_csv_record = st.builds(
    lambda fields, ending: (",".join(fields) + ending).encode("utf-8", "surrogatepass"),
    st.lists(_csv_field, max_size=7),
    st.sampled_from(["", "", "\n", "\r\n"]),
)
_BAD_COLUMNS = [
    [], (b"a",), ((b"a", "s"),), (("a", "s", 0, 0),), ((b"a", "", 0, 0),), ((b"a", "q", 0, 0),),
    ((b"a", "ss", 0, 0),), ((b"a", "m", 10, 2**40),), (5,),
    tuple((b"c%d" % i, "I", 0, 0) for i in range(65)),
]  # fmt: skip


def arrow_buffers(records: list[bytes | None]) -> tuple[bytes | None, bytes, bytes]:
    """Validity (None without nulls), int32 offsets and data of a binary array of ``records``."""
    offsets, bits, data, used = [0], bytearray((len(records) + 7) // 8), [], 0
    for i, record in enumerate(records):
        if record is not None:
            bits[i >> 3] |= 1 << (i & 7)
            data.append(record)
            used += len(record)
        offsets.append(used)
    validity = None if all(r is not None for r in records) else bytes(bits)
    return validity, struct.pack(f"<{len(offsets)}i", *offsets), b"".join(data)


_made_up_offsets = st.lists(st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-3, 40))).map(
    lambda values: struct.pack(f"<{len(values)}i", *values)
)
_other_buffers = st.one_of(
    st.binary(max_size=64), _made_up_offsets, st.sampled_from([None, 5, "x"])
)


def _reshaped(draw: Any, buffer: bytes) -> Any:
    """``buffer`` as it is, cut, misaligned (a view one byte in), made up, or not a buffer."""
    how = draw(st.integers(0, 9))
    if how <= 3:
        return buffer
    if how == 4:
        return buffer[: draw(st.integers(0, max(len(buffer) - 1, 0)))]
    if how == 5:
        return memoryview(b"\0" + buffer)[1:]
    if how == 6:
        return bytearray(buffer)
    if how == 7:
        return memoryview(buffer)[::2]
    return draw(_other_buffers)


_placement = st.one_of(_integers, st.integers(-2, 14))


def _framed(draw: Any, records: list[Any]) -> tuple[tuple[Any, ...], bool]:
    """``records`` as an Arrow binary array's buffers and a slice of it, the buffers sometimes
    damaged and the slice sometimes out of range: ((validity, offsets, data, start, length),
    whether they are valid)."""
    validity, offsets, data = arrow_buffers(records)
    start = draw(st.integers(0, len(records)))
    length, valid = len(records) - start, True
    if draw(st.integers(0, 3)) == 0:
        valid = False
        validity = draw(st.one_of(st.none(), st.binary(max_size=4)))
        offsets, data = _reshaped(draw, offsets), _reshaped(draw, data)
    if draw(st.integers(0, 3)) == 0:
        valid = False
        start, length = draw(_placement), draw(_placement)
    return (validity, offsets, data, start, length), valid


@st.composite
def batches(draw: Any, csv: bool) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan`` (or the first six of ``scan_csv``), and whether they are valid."""
    columns = draw(_columns)
    record = st.one_of(_csv_record if csv else _json_record, st.binary(max_size=40), st.none())
    records = draw(st.lists(record, max_size=10))
    (validity, offsets, data, start, length), framed = _framed(draw, records)
    valid = framed and all(k != "m" or (1 <= p <= 38 and 0 <= s <= p) for _, k, p, s in columns)
    if draw(st.integers(0, 15)) == 0:
        valid = False
        columns = draw(st.sampled_from(_BAD_COLUMNS))
    return (validity, offsets, data, start, length, columns), valid


def check_scanned(result: Any, length: int, columns: tuple[Any, ...]) -> None:
    """The shape of a scan's result: a bitmap per record, each column's Arrow buffers."""
    bitmap, buffers = result
    size = (length + 7) // 8
    assert len(bitmap) == size and len(buffers) == len(columns)
    for column, parts in zip(columns, buffers, strict=True):
        kind = column[1]
        assert len(parts[0]) == size
        if kind in "sCy":
            _, offsets, data = parts
            ends = struct.unpack(f"<{length + 1}i", offsets)
            assert ends[0] == 0 and list(ends) == sorted(ends) and ends[-1] == len(data)


def check_exact(result: Any, length: int) -> None:
    """The shape of the exactness pass's result: a bitmap per record, a binary array's
    offsets and data."""
    changed, out_offsets, out_data = result
    assert len(changed) == (length + 7) // 8
    ends = struct.unpack(f"<{length + 1}i", out_offsets)
    assert ends[0] == 0 and list(ends) == sorted(ends) and ends[-1] == len(out_data)


def scan_checked(function: Any, call: tuple[Any, ...], valid: bool) -> None:
    """``function(*call)``: a result of the right shape, or (only if not ``valid``) an argument
    error."""
    note(function.__name__, *call)
    try:
        result = function(*call)
    except ARGUMENT_ERRORS:
        assert not valid, call
        return
    check_scanned(result, call[4], call[5])


@PROPERTY
@given(arguments=batches(csv=False))
def test_scan(arguments: tuple[tuple[Any, ...], bool]) -> None:
    scan_checked(text_scan.scan, *arguments)


_WIDTHS = {"D": 4, "t": 8, "T": 8, "z": 8, "Z": 8, "B": 1, "H": 2, "I": 4, "f": 4, "L": 8,
           "d": 8, "m": 16}  # fmt: skip
_valid_scalar = st.tuples(
    st.sampled_from(_NAMES), st.sampled_from(KINDS), st.integers(1, 38), st.integers(0, 38)
).map(lambda c: (c[0], c[1], c[2], min(c[3], c[2])))
_TEXT_KEY = (b"", "s", 0, 0)
_nested_column = st.recursive(
    _valid_scalar,
    lambda inner: st.one_of(
        st.builds(lambda n, fields: (n, "R", 0, 0, tuple(fields)), st.sampled_from(_NAMES),
                  st.lists(inner, min_size=1, max_size=4)),
        st.builds(lambda n, e: (n, "A", 0, 0, (e,)), st.sampled_from(_NAMES), inner),
        st.builds(lambda n, v: (n, "M", 0, 0, (_TEXT_KEY, v)), st.sampled_from(_NAMES), inner),
    ),
    max_leaves=8,
)  # fmt: skip
_BAD_NESTED = [
    ((b"a", "R", 0, 0, ()),), ((b"a", "A", 0, 0, ()),), ((b"a", "M", 0, 0, (_TEXT_KEY,)),),
    ((b"a", "M", 0, 0, ((b"", "I", 0, 0), _TEXT_KEY)),), ((b"a", "X", 0, 0, ()),),
    ((b"a", "R", 0, 0, [_TEXT_KEY]),), ((b"a", "s", 0, 0, ()),), ((b"a", "R", 0, 0, (5,)),),
    ((b"a", "R", 0, 0, tuple((b"c%d" % i, "I", 0, 0) for i in range(65))),),
    (_TEXT_KEY,) * 65,
]  # fmt: skip
_json_values = st.recursive(
    _json_tokens,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(st.sampled_from(["a", "b", "id", "x", "", "a\\u0062", "ab"]), inner),
                 max_size=4).map(lambda members: "{" + ",".join(
                     f'"{k}":{v}' for k, v in members) + "}"),
    ),
    max_leaves=12,
)  # fmt: skip
_nested_record = _json_values.map(lambda v: v.encode("utf-8", "surrogatepass"))


@st.composite
def nested_batches(draw: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan_nested``, and whether they are valid."""
    columns = tuple(draw(st.lists(_nested_column, max_size=4)))
    record = st.one_of(_nested_record, _json_record, st.binary(max_size=40), st.none())
    records = draw(st.lists(record, max_size=10))
    (validity, offsets, data, start, length), valid = _framed(draw, records)
    if draw(st.integers(0, 15)) == 0:
        valid = False
        columns = draw(st.sampled_from(_BAD_NESTED))
    return (validity, offsets, data, start, length, columns, draw(st.booleans())), valid


def _check_node(result: Any, column: tuple[Any, ...], count: int) -> None:
    slots, buffers, children = result
    kind = column[1]
    assert slots == count and len(buffers[0]) == (count + 7) // 8
    if kind in "sCAM":
        ends = struct.unpack(f"<{count + 1}i", buffers[1])
        assert ends[0] == 0 and list(ends) == sorted(ends)
        if kind in "sC":
            assert ends[-1] == len(buffers[2]) and not children
        else:
            for child, described in zip(children, column[4], strict=True):
                _check_node(child, described, ends[-1])
    elif kind == "R":
        for child, described in zip(children, column[4], strict=True):
            _check_node(child, described, count)
    else:
        width = _WIDTHS.get(kind)
        assert len(buffers[1]) == ((count + 7) // 8 if width is None else width * count)


def check_nested(result: Any, length: int, columns: tuple[Any, ...]) -> None:
    """The shape of a nested scan's result: a bitmap per record, each column's tree of Arrow
    buffers, every child as long as its parent's offsets say."""
    bitmap, results = result
    assert len(bitmap) == (length + 7) // 8 and len(results) == len(columns)
    for node, column in zip(results, columns, strict=True):
        _check_node(node, column, length)


@PROPERTY
@given(arguments=nested_batches())
def test_scan_nested(arguments: tuple[tuple[Any, ...], bool]) -> None:
    call, valid = arguments
    note("scan_nested", *call)
    try:
        result = text_scan.scan_nested(*call)
    except ARGUMENT_ERRORS:
        assert not valid, call
        return
    check_nested(result, call[4], call[5])


def _varint(value: int) -> bytes:
    value &= 2**64 - 1
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


_wire_value = st.one_of(
    st.builds(lambda v: (0, _varint(v)), _integers),
    st.builds(lambda b: (1, b), st.binary(min_size=8, max_size=8)),
    st.builds(lambda b: (5, b), st.binary(min_size=4, max_size=4)),
    st.builds(lambda b: (2, _varint(len(b)) + b), st.one_of(st.binary(max_size=12),
                                                            st.text(max_size=6).map(str.encode))),
    st.builds(lambda w, b: (w, b), st.sampled_from([3, 4, 6, 7]), st.binary(max_size=3)),
)  # fmt: skip
_message = st.lists(st.tuples(st.integers(0, 40), _wire_value), max_size=8).map(
    lambda parts: b"".join(_varint(n << 3 | w) + v for n, (w, v) in parts)
)
_proto_column = st.tuples(
    st.sampled_from(_NAMES),
    st.sampled_from("ILfdbsy"),
    st.booleans(),
    st.one_of(st.none(), st.lists(st.tuples(st.integers(-3, 5), st.sampled_from(_NAMES)),
                                  max_size=4).map(tuple)),
)  # fmt: skip


@st.composite
def proto_batches(draw: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan_protobuf``, and whether they are valid."""
    columns = tuple(draw(st.lists(_proto_column, max_size=6)))
    numbers = sorted(draw(st.sets(st.integers(1, 40), max_size=8)))
    fields = tuple(
        (
            n,
            draw(st.integers(1, 18)),
            draw(st.integers(-1, len(columns) - 1)),
            draw(st.integers(0, 3)),
        )
        for n in numbers
    )
    record = st.one_of(_message, st.binary(max_size=40), st.none())
    records = draw(st.lists(record, max_size=10))
    (validity, offsets, data, start, length), valid = _framed(draw, records)
    if draw(st.integers(0, 7)) == 0:
        valid = False
        fields = draw(st.sampled_from([((0, 3, -1, 0),), ((1, 19, -1, 0),), ((2, 3, -1, 0),
                      (1, 3, -1, 0)), ((1, 3, 99, 0),), ((1,),), (5,), "x"]))  # fmt: skip
    return (validity, offsets, data, start, length, columns, fields), valid


@PROPERTY
@given(arguments=proto_batches())
def test_scan_protobuf(arguments: tuple[tuple[Any, ...], bool]) -> None:
    scan_checked(text_scan.scan_protobuf, *arguments)


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63))


_avro_part = st.one_of(
    st.builds(_zigzag, _integers),  # ints, longs, dates, times, timestamps, lengths, branches
    st.binary(max_size=9),  # floats, doubles, booleans, noise
    st.builds(lambda b: _zigzag(len(b)) + b, st.one_of(st.binary(max_size=20),
                                                      st.text(max_size=6).map(str.encode))),
    st.sampled_from([b"\x00", b"\x02", b"\x01", b"\x04"]),  # union branches
)  # fmt: skip
_avro_column = st.tuples(
    st.sampled_from(_NAMES), st.sampled_from("sybBHILfdmDCtT"), st.booleans(),
    st.integers(-1, 40), st.integers(-1, 40),
)  # fmt: skip


@st.composite
def avro_batches(draw: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan_avro``, and whether they are valid."""
    columns = tuple(draw(st.lists(_avro_column, max_size=6)))
    datum = st.lists(_avro_part, max_size=10).map(b"".join)
    records = draw(st.lists(st.one_of(datum, st.binary(max_size=40), st.none()), max_size=10))
    (validity, offsets, data, start, length), framed = _framed(draw, records)
    valid = framed and all(k != "m" or (1 <= p <= 38 and 0 <= s <= p) for _, k, _, p, s in columns)
    if draw(st.integers(0, 15)) == 0:
        valid = False
        columns = draw(st.sampled_from([((b"a", "q", True, 0, 0),), ((b"a", "s"),), ("x",), 5]))
    return (validity, offsets, data, start, length, columns), valid


@PROPERTY
@given(arguments=avro_batches())
def test_scan_avro(arguments: tuple[tuple[Any, ...], bool]) -> None:
    scan_checked(text_scan.scan_avro, *arguments)


def pack_tree(tree: tuple[Any, ...]) -> tuple[bytes, bytes]:
    """A type tree ``(kind, scale, name, children)`` as ``exact`` reads it: 16-byte nodes, root
    first, each parent's children together; and the names."""
    nodes: list[list[Any]] = []
    names = bytearray()

    def add(node: tuple[Any, ...]) -> int:
        kind, scale, name, _ = node
        nodes.append([ord(kind), scale, 0, 0, len(names), len(name)])
        names.extend(name)
        return len(nodes) - 1

    def children(index: int, node: tuple[Any, ...]) -> None:
        kids = node[3]
        nodes[index][2:4] = [len(kids), len(nodes)]
        first = len(nodes)
        for kid in kids:
            add(kid)
        for offset, kid in enumerate(kids):
            children(first + offset, kid)

    children(add(tree), tree)
    return b"".join(struct.pack("<BBHIII", *n) for n in nodes), bytes(names)


_leaf = st.tuples(
    st.sampled_from("SDILFX"), st.integers(0, 38), st.sampled_from(_NAMES), st.just(())
)
_tree = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.tuples(st.just("R"), st.just(0), st.sampled_from(_NAMES),
                  st.lists(inner, max_size=4).map(tuple)),
        st.tuples(st.sampled_from("AM"), st.just(0), st.sampled_from(_NAMES),
                  inner.map(lambda kid: (kid,))),
    ),
    max_leaves=8,
)  # fmt: skip


@PROPERTY
@given(
    arguments=batches(csv=False),
    tree=_tree,
    how=st.integers(0, 15),
    made_up=st.binary(max_size=80),
    modes=st.tuples(st.integers(0, 2), st.booleans()),
)
def test_exact(
    arguments: tuple[tuple[Any, ...], bool],
    tree: Any,
    how: int,
    made_up: bytes,
    modes: tuple[int, bool],
) -> None:
    (validity, offsets, data, start, length, _), valid = arguments
    nodes, names = pack_tree(tree)
    if how == 0:
        nodes, valid = made_up, False
    elif how == 1:
        names, valid = names[: len(names) // 2], False
    call = (validity, offsets, data, start, length, nodes, names, *modes)  # node mode, maps
    note("exact", *call)
    try:
        result = text_scan.exact(*call)
    except ARGUMENT_ERRORS:
        assert not valid, call
        return
    check_exact(result, length)


_BYTE = st.one_of(st.sampled_from([44, 59, 34, 39, 92, 9, 35, -1, 0, 127]), st.integers(-300, 300))


@PROPERTY
@given(
    arguments=batches(csv=True),
    delimiter=_BYTE,
    quote=_BYTE,
    escape=_BYTE,
    null_literal=st.one_of(st.none(), st.sampled_from([b"", b"n/a", b"null"]), st.just("n/a")),
    comments=st.booleans(),
)
def test_scan_csv(
    arguments: tuple[tuple[Any, ...], bool],
    delimiter: int,
    quote: int,
    escape: int,
    null_literal: Any,
    comments: bool,
) -> None:
    call, valid = arguments
    valid = valid and 0 <= delimiter <= 127 and min(quote, escape) >= -1
    valid = valid and max(quote, escape) <= 127 and not isinstance(null_literal, str)
    scan_checked(
        text_scan.scan_csv, (*call, delimiter, quote, escape, null_literal, comments), valid
    )


# --- message fields -----------------------------------------------------------------------------


class Message:
    """A consumed message as the extraction calls it: a method per field."""

    def __init__(self, value: Any, stamp: Any) -> None:
        self._value, self._stamp = value, stamp

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> Any:
        return self._stamp

    def __repr__(self) -> str:
        return f"Message({self._value!r}, {self._stamp!r})"


_stamps = st.one_of(
    st.tuples(st.integers(0, 2), st.one_of(_integers, st.integers(-(10**13), 10**13))),
    st.tuples(_integers, _integers),
    st.sampled_from([None, (1,), (1, 2, 3), [1, 2], (1, "2"), ("1", 2), (1, 2.5)]),
)
_values = st.one_of(st.none(), st.binary(max_size=24), st.sampled_from(["text", 5, bytearray()]))
_messages = st.lists(st.builds(Message, _values, _stamps), max_size=12)
#: What a field method may do to the list of messages while it is read.
_CHANGES = ["none", "clear", "pop", "append", "shrink", "replace", "grow"]


def _method(field: str, messages: list[Any], change: str, when: int) -> Any:
    calls = [0]

    def method(message: Any) -> Any:
        calls[0] += 1
        if calls[0] == when:
            if change == "clear":
                messages.clear()
            elif change == "pop" and messages:
                messages.pop()
            elif change == "append":
                messages.append(Message(b"late", (1, 1)))
            elif change == "shrink":
                del messages[len(messages) // 2 :]
            elif change == "replace":
                messages[:] = [Message(b"other", (1, 2)) for _ in messages]
            elif change == "grow":
                messages.extend(Message(b"x" * 100, (1, 3)) for _ in range(1000))
        return getattr(message, field)()

    return method


@PROPERTY
@given(
    messages=_messages,
    change=st.sampled_from(_CHANGES),
    when=st.integers(1, 12),
    field=st.sampled_from(["value", "timestamp"]),
    foreign=st.booleans(),
)
def test_message_fields(
    messages: list[Any], change: str, when: int, field: str, foreign: bool
) -> None:
    if foreign:  # other objects in the list
        messages = [*messages, 5]
    method = _method(field, messages, change, when)
    function = messages_module.binaries if field == "value" else messages_module.timestamps
    note(function.__name__, messages, change, when)
    n = len(messages)
    try:
        result = function(messages, method)
    except (*ARGUMENT_ERRORS, AttributeError):
        return
    if field == "value":
        validity, offsets, data = result
        ends = struct.unpack(f"<{n + 1}i", offsets)
        assert ends[0] == 0 and list(ends) == sorted(ends) and ends[-1] == len(data)
    else:
        validity, micros, out_of_range = result
        assert len(micros) == 8 * n and all(0 <= i < n for i, *_ in out_of_range)
    assert validity is None or len(validity) == (n + 7) // 8


if __name__ == "__main__":
    tests = (test_scan, test_scan_nested, test_scan_csv, test_scan_protobuf, test_scan_avro,
             test_exact, test_message_fields)  # fmt: skip
    for test in tests:
        test()
        print(f"{test.__name__}: {EXAMPLES} examples", flush=True)
