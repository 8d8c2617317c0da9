"""The C modules' fuzz worker, run in a process with the sanitizer runtime preloaded (see
:mod:`.native`): ``python -m tests.fuzz.native_worker DIRECTORY SEED START COUNT``.

It loads the modules built with AddressSanitizer and UndefinedBehaviorSanitizer into ``DIRECTORY``
through ``tests/unit/sanitized_driver.py`` (whose helpers it reuses: the Arrow buffers of records,
the result checks, the messages whose list changes while it is read) and calls them on inputs
``START`` to ``START + COUNT - 1`` of ``SEED``: JSON, CSV, protobuf and Avro records (valid ones
edited), buffers cut, misaligned or made up, offsets and lengths out of range, column descriptions
of any kind, message lists. Before each call its input's number is written to
``DIRECTORY/last-call.txt`` (a crash names it; ``COUNT`` -1 prints the call of input ``START``
without making it). A call with valid arguments must return a result of the right shape; one with
invalid arguments may only raise the documented argument errors. Each finding is a JSON line on
stdout, and the last line the counts.

Like the driver, it imports neither the package nor pyarrow.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any

from .mutate import case_random, edge_integer, mutate_bytes, random_bytes

if __name__ == "__main__":  # the driver reads its directory from the command line at import
    sys.argv = [sys.argv[0], sys.argv[1], "1", *sys.argv[2:]]

from tests.unit import sanitized_driver as driver

_NAMES = [b"a", b"b", b"id", b"x", b""]
_NUMBERS = (
    "-0", "1.5e-7", "1E400", "0.1e-400", "123456789012345678901234567890.5", "12.50", "-00", "1.",
    ".5", "1e", "--1", "0x10", "NaN", "1e-7", "0.000001", "99999999999999999999",
)  # fmt: skip
_TEMPORAL = (
    "2021-03-24", "2021-03-24 10:00:00", "2021-03-24T10:00:00.123Z", "10:00", "23:59:60",
    "24:00:00", "99:99:99", "00:00:00.", "2021-02-29", "0000-01-01", "10000-01-01", "2021-13-01",
    "12:30:45.123456789", "12:30:45.1234567890", "2021-03-24 10:00:00.x",
)  # fmt: skip
_JSON_TOKENS = (
    b"true", b"false", b"null", b"{}", b"[]", b'{"a": [1, {"b": null}]}', b'"\\ud800"',
    b'"\\u00e9"', b'"\\\\"', b'"\\n"', b'{"a": 1, "a": "x", "b": {"a": true}, "x\\n": []}',
    b'{"id": 1e400, "x": [1.5, "2"], "b": {"b": {"b": -0.0}}}',
)  # fmt: skip
#: The input at which the worker crashes on purpose (the harness's own test), if any.
CRASH_AT = int(os.environ.get("FUZZ_NATIVE_CRASH_AT", "-1"))
_CSV_TOKENS = (
    b",", b'"', b'""', b"\n", b"\r", b"\\", b"#", b";",
)  # fmt: skip
_BYTE_ARGUMENTS = (
    44, 59, 34, 39, 92, 9, 35, -1, 0, 127, 128, 255, 256, -2, 2**31, -(2**31),
)  # fmt: skip


def _number(rng: Any) -> str:
    roll = rng.randrange(4)
    if roll == 0:
        return str(edge_integer(rng))
    if roll == 1:
        return repr(rng.uniform(-1e20, 1e20))
    if roll == 2:
        return str(rng.randrange(-1000, 1000))
    return rng.choice(_NUMBERS)


def _text(rng: Any) -> str:
    return (
        rng.choice(_TEMPORAL)
        if rng.random() < 0.5
        else "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(8)))
    )


def json_record(rng: Any) -> bytes:
    fields = []
    for _ in range(rng.randrange(8)):
        name = rng.choice(["a", "b", "id", "x", "", "other"])
        roll = rng.randrange(4)
        if roll == 0:
            value = _number(rng)
        elif roll == 1:
            value = json.dumps(_text(rng), ensure_ascii=rng.random() < 0.5)
        elif roll == 2:
            value = json.dumps(_number(rng))
        else:
            value = rng.choice(_JSON_TOKENS).decode()
        fields.append(json.dumps(name) + rng.choice((":", ": ", " :")) + value)
    text = "{" + rng.choice((",", ", ")).join(fields) + "}"
    return text.encode("utf-8", "surrogatepass")


def _nested_value(rng: Any, depth: int) -> str:
    roll = rng.randrange(6) if depth < 4 else 5
    if roll == 0:
        keys = [json.dumps(rng.choice(["a", "b", "id", "x", "", "ab"])) for _ in range(5)]
        members = [k + ":" + _nested_value(rng, depth + 1) for k in keys[: rng.randrange(5)]]
        if rng.random() < 0.1:
            members.append('"a\\u0062":' + _nested_value(rng, depth + 1))
        return "{" + ",".join(members) + "}"
    if roll == 1:
        return "[" + ",".join(_nested_value(rng, depth + 1) for _ in range(rng.randrange(5))) + "]"
    if roll == 2:
        return _number(rng)
    if roll == 3:
        return json.dumps(_text(rng), ensure_ascii=rng.random() < 0.5)
    return rng.choice(_JSON_TOKENS).decode()


def nested_record(rng: Any) -> bytes:
    """A JSON object with objects and arrays inside (what nested columns read)."""
    text = _nested_value(rng, 0)
    return ("{" + text[1:] if text.startswith("{") else '{"a": ' + text + "}").encode(
        "utf-8", "surrogatepass"
    )


def csv_record(rng: Any) -> bytes:
    fields = []
    for _ in range(rng.randrange(8)):
        text = rng.choice((_number(rng), _text(rng), "", "n/a", "true", "null"))
        if rng.random() < 0.3 or any(c in text for c in ',"\n'):
            text = '"' + text.replace('"', '""') + '"'
        fields.append(text)
    return (",".join(fields) + rng.choice(("", "", "\n", "\r\n"))).encode("utf-8", "surrogatepass")


class Pool:
    """Valid records and random values made once per worker from the seed (making them per
    call would cost most of a call's time in a sanitized process)."""

    def __init__(self, seed: int) -> None:
        rng = case_random(seed, "native pool", 0)
        self.json = [json_record(rng) for _ in range(1000)]
        self.csv = [csv_record(rng) for _ in range(1000)]
        self.nested = [nested_record(rng) for _ in range(1000)]
        self.bytes = [random_bytes(rng, 40) for _ in range(1000)]


POOL: Pool


def record(rng: Any, csv: bool) -> bytes | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.15:
        return rng.choice(POOL.bytes)
    made = rng.choice(POOL.csv if csv else POOL.json)
    return made if roll < 0.7 else mutate_bytes(rng, made, _CSV_TOKENS if csv else _JSON_TOKENS)


def columns(rng: Any) -> tuple[Any, ...]:
    out = []
    for _ in range(rng.randrange(7)):
        precision = (
            rng.randrange(1, 39) if rng.random() < 0.9 else rng.choice((0, -1, 39, 2**31 - 1))
        )
        scale = rng.randrange(0, 39) if rng.random() < 0.9 else rng.choice((-1, 2**31 - 1))
        out.append((rng.choice(_NAMES), rng.choice(driver.KINDS), precision, scale))
    return tuple(out)


def nested_column(rng: Any, depth: int = 0) -> tuple[Any, ...]:
    """A column description of ``scan_nested``: a scalar, a row, an array or a map."""
    roll = rng.randrange(6) if depth < 3 else 3
    name = rng.choice(_NAMES)
    if roll == 0:
        fields = tuple(nested_column(rng, depth + 1) for _ in range(rng.randrange(1, 4)))
        return (name, "R", 0, 0, fields)
    if roll == 1:
        return (name, "A", 0, 0, (nested_column(rng, depth + 1),))
    if roll == 2:
        return (name, "M", 0, 0, ((b"", "s", 0, 0), nested_column(rng, depth + 1)))
    precision = rng.randrange(1, 39)
    return (name, rng.choice(driver.KINDS), precision, rng.randrange(precision + 1))


def nested_arguments(rng: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan_nested``, and whether they are valid."""
    described = tuple(nested_column(rng) for _ in range(rng.randrange(5)))
    records = []
    for _ in range(rng.randrange(12)):
        roll = rng.random()
        made = rng.choice(POOL.nested)
        records.append(
            None if roll < 0.05
            else rng.choice(POOL.bytes) if roll < 0.1
            else made if roll < 0.6
            else mutate_bytes(rng, made, _JSON_TOKENS)
        )  # fmt: skip
    (validity, offsets, data, start, length), valid = framed_batch(rng, records)
    if rng.randrange(16) == 0:
        valid = False
        described = rng.choice(driver._BAD_NESTED)
    return (validity, offsets, data, start, length, described, rng.random() < 0.3), valid


def _made_up_offsets(rng: Any) -> bytes:
    values = [
        rng.randrange(-(2**31), 2**31) if rng.random() < 0.3 else rng.randrange(-3, 41)
        for _ in range(rng.randrange(12))
    ]
    return struct.pack(f"<{len(values)}i", *values)


def reshaped(rng: Any, buffer: bytes) -> Any:
    """``buffer`` as it is, cut, misaligned (a view one byte in), made up, or not a buffer."""
    how = rng.randrange(10)
    if how <= 3:
        return buffer
    if how == 4:
        return buffer[: rng.randrange(max(len(buffer), 1))]
    if how == 5:
        return memoryview(b"\0" + buffer)[1:]
    if how == 6:
        return bytearray(buffer)
    if how == 7:
        return memoryview(buffer)[::2]
    return rng.choice((random_bytes(rng, 64), _made_up_offsets(rng), None, 5, "x"))


def placement(rng: Any) -> int:
    return edge_integer(rng) if rng.random() < 0.5 else rng.randrange(-2, 15)


def framed_batch(rng: Any, records: list[Any]) -> tuple[tuple[Any, ...], bool]:
    """``records`` as an Arrow binary array's buffers and a slice of it, the buffers sometimes
    damaged and the slice sometimes out of range (the driver's ``_framed``): ((validity,
    offsets, data, start, length), whether they are valid)."""
    validity, offsets, data = driver.arrow_buffers(records)
    start = rng.randrange(len(records) + 1)
    length, valid = len(records) - start, True
    if rng.randrange(4) == 0:
        valid = False
        validity = rng.choice((None, random_bytes(rng, 4)))
        offsets, data = reshaped(rng, offsets), reshaped(rng, data)
    if rng.randrange(4) == 0:
        valid = False
        start, length = placement(rng), placement(rng)
    return (validity, offsets, data, start, length), valid


def scan_arguments(rng: Any, csv: bool) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan`` (or the first six of ``scan_csv``), and whether they are valid
    (the driver's ``batches``, with this module's records)."""
    described = columns(rng)
    records = [record(rng, csv) for _ in range(rng.randrange(12))]
    (validity, offsets, data, start, length), framed = framed_batch(rng, records)
    valid = framed and all(k != "m" or (1 <= p <= 38 and 0 <= s <= p) for _, k, p, s in described)
    if rng.randrange(16) == 0:
        valid = False
        described = rng.choice(driver._BAD_COLUMNS)
    return (validity, offsets, data, start, length, described), valid


_STAMPS = (
    None, (1,), (1, 2, 3), [1, 2], (1, "2"), ("1", 2), (1, 2.5),
)  # fmt: skip


def messages(rng: Any) -> list[Any]:
    out = []
    for _ in range(rng.randrange(13)):
        roll = rng.randrange(10)
        value = (
            None
            if roll == 0
            else rng.choice(("text", 5, bytearray()))
            if roll == 1
            else rng.choice(POOL.bytes)
        )
        roll = rng.randrange(10)
        if roll < 6:
            stamp: Any = (
                rng.randrange(3),
                edge_integer(rng) if rng.random() < 0.5 else rng.randrange(-(10**13), 10**13),
            )
        elif roll < 9:
            stamp = (edge_integer(rng), edge_integer(rng))
        else:
            stamp = rng.choice(_STAMPS)
        out.append(driver.Message(value, stamp))
    return out


def type_tree(rng: Any, depth: int = 3) -> tuple[Any, ...]:
    """A table's type tree as the exactness pass reads it (``driver.pack_tree``)."""
    name = rng.choice(_NAMES)
    if depth == 3 or (depth > 0 and rng.random() < 0.5):
        kind = "R" if depth == 3 else rng.choice("RAM")
        count = rng.randrange(5) if kind == "R" else 1
        return (kind, 0, name, tuple(type_tree(rng, depth - 1) for _ in range(count)))
    return (rng.choice("SDILFX"), rng.randrange(39), name, ())


def exact_arguments(rng: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``exact`` (every mode), and whether they are valid."""
    (validity, offsets, data, start, length, _), valid = scan_arguments(rng, False)
    nodes, names = driver.pack_tree(type_tree(rng))
    if rng.randrange(16) == 0:
        valid = False
        nodes = rng.choice((random_bytes(rng, 80), nodes[:-1], b""))
    modes = (rng.randrange(3), rng.random() < 0.5)  # node mode (0, 1, 2), maps
    return (validity, offsets, data, start, length, nodes, names, *modes), valid


def proto_record(rng: Any) -> bytes | None:
    """A serialized message of random fields (a tag and a value of any wire type), edited."""
    if rng.randrange(10) == 0:
        return None
    parts = []
    for _ in range(rng.randrange(8)):
        wire = rng.choice((0, 0, 1, 2, 2, 5, 3, 4, 6, 7))
        if wire == 0:
            value = driver._varint(edge_integer(rng))
        elif wire in (1, 5):
            value = random_bytes(rng, 8 if wire == 1 else 4)
        else:
            body = random_bytes(rng, 12) if rng.random() < 0.5 else "é😀x".encode()
            value = driver._varint(len(body)) + body if wire == 2 else body[:2]
        parts.append(driver._varint(rng.randrange(41) << 3 | wire) + value)
    data = b"".join(parts)
    return mutate_bytes(rng, data) if rng.random() < 0.2 else data


def proto_arguments(rng: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan_protobuf``, and whether they are valid (the driver's
    ``proto_batches``, with this module's records)."""
    described = tuple(
        (
            rng.choice(_NAMES),
            rng.choice("ILfdbsy"),
            rng.random() < 0.5,
            None
            if rng.random() < 0.5
            else tuple((rng.randrange(-3, 6), rng.choice(_NAMES)) for _ in range(rng.randrange(4))),
        )
        for _ in range(rng.randrange(7))
    )
    numbers = sorted(rng.sample(range(1, 41), rng.randrange(9)))
    fields: Any = tuple(
        (n, rng.randrange(1, 19), rng.randrange(-1, len(described)), rng.randrange(4))
        for n in numbers
    )
    records = [proto_record(rng) for _ in range(rng.randrange(12))]
    (validity, offsets, data, start, length), valid = framed_batch(rng, records)
    if rng.randrange(8) == 0:
        valid = False
        fields = rng.choice((((0, 3, -1, 0),), ((1, 19, -1, 0),), ((1, 3, 99, 0),), (5,), "x"))
    return (validity, offsets, data, start, length, described, fields), valid


_AVRO_KINDS = "sybBHILfdmDCtT"


def avro_value(rng: Any, kind: str) -> bytes:
    """A value of an Avro column of scanner kind ``kind`` (or, one time in eight, of another),
    its integers at the edges."""
    if rng.randrange(8) == 0:
        kind = rng.choice(_AVRO_KINDS)
    if kind in "fd":
        return random_bytes(rng, 4 if kind == "f" else 8)
    if kind == "b":
        return bytes([rng.choice((0, 1, 1, 2, 255))])
    if kind in "sym":
        body = random_bytes(rng, 20) if rng.random() < 0.5 else "é😀x".encode()
        if kind == "m" and rng.random() < 0.3:
            body = rng.choice((b"", b"\x00" * 17, b"\xff" * 16, b"\x7f" + b"\xff" * 15))
        return driver._zigzag(len(body)) + body
    return driver._zigzag(edge_integer(rng))


def avro_arguments(rng: Any) -> tuple[tuple[Any, ...], bool]:
    """Arguments of ``scan_avro``, and whether they are valid: datums of the columns'
    kinds (a null union's branch before a nullable column's value), edited."""
    described = tuple(
        (
            rng.choice(_NAMES),
            rng.choice(_AVRO_KINDS),
            rng.random() < 0.6,
            rng.choice((1, 4, 10, 18, 19, 38, rng.randrange(-1, 41))),
            rng.randrange(-1, 12),
        )
        for _ in range(rng.randrange(7))
    )
    valid = all(k != "m" or (1 <= p <= 38 and 0 <= s <= p) for _, k, _, p, s in described)
    records: list[bytes | None] = []
    for _ in range(rng.randrange(12)):
        parts = []
        for _, kind, nullable, _, _ in described:
            if nullable:
                parts.append(rng.choice((b"\x00", b"\x02", b"\x02", b"\x02", b"\x01", b"\x04")))
            parts.append(avro_value(rng, kind))
        data = b"".join(parts)
        records.append(None if rng.randrange(10) == 0 else
                       mutate_bytes(rng, data) if rng.random() < 0.3 else data)  # fmt: skip
    (validity, offsets, data, start, length), framed = framed_batch(rng, records)
    return (validity, offsets, data, start, length, described), framed and valid


def make_call(rng: Any) -> tuple[str, Any, tuple[Any, ...], bool, Any]:
    """Input of ``rng``: (kind, function, arguments, whether they are valid, detail)."""
    kind = rng.randrange(7)
    if kind == 6:
        arguments, valid = avro_arguments(rng)
        return "scan", driver.text_scan.scan_avro, arguments, valid, None
    if kind == 5:
        arguments, valid = nested_arguments(rng)
        return "nested", driver.text_scan.scan_nested, arguments, valid, None
    if kind == 3:
        arguments, valid = exact_arguments(rng)
        return "exact", driver.text_scan.exact, arguments, valid, None
    if kind == 4:
        arguments, valid = proto_arguments(rng)
        return "scan", driver.text_scan.scan_protobuf, arguments, valid, None
    if kind < 2:
        csv = kind == 1
        arguments, valid = scan_arguments(rng, csv)
        function = driver.text_scan.scan_csv if csv else driver.text_scan.scan
        if csv:
            delimiter, quote, escape = (
                rng.choice(_BYTE_ARGUMENTS) if rng.random() < 0.3 else rng.choice((44, 59, 9, 124))
                for _ in range(3)
            )
            null_literal = rng.choice((None, b"", b"n/a", b"null", "n/a"))
            arguments = (*arguments, delimiter, quote, escape, null_literal, rng.random() < 0.5)
            valid = valid and 0 <= delimiter <= 127 and min(quote, escape) >= -1
            valid = valid and max(quote, escape) <= 127 and not isinstance(null_literal, str)
        return "scan", function, arguments, valid, None
    listed = messages(rng)
    if rng.random() < 0.1:
        listed = [*listed, 5]
    change = rng.choice(driver._CHANGES if rng.random() < 0.2 else driver._CHANGES[:-1])
    field = rng.choice(("value", "timestamp"))
    method = driver._method(field, listed, change, rng.randrange(1, 13))
    function = (
        driver.messages_module.binaries if field == "value" else driver.messages_module.timestamps
    )
    return "messages", function, (listed, method), True, (field, change)


def describe(seed: int, index: int) -> str:
    """The call input ``index`` makes, as text (for the report of a crash)."""
    kind, function, arguments, valid, detail = make_call(case_random(seed, "native", index))
    if kind == "messages":
        arguments = (arguments[0], f"<a method that does {detail[1]!r} while reading {detail[0]}>")
    return f"{function.__name__}{arguments!r} (valid: {valid})"


def call(rng: Any, index: int, last: int) -> tuple[str, str, Any]:
    """Make and run input ``index`` (its number first written to the file ``last``): (kind,
    outcome, detail) where outcome is "ok", "refused" or "failure"."""
    kind, function, arguments, valid, detail = make_call(rng)
    os.pwrite(last, b"#%-20d" % index, 0)
    if index == CRASH_AT:  # a crash planted by the harness's own test
        import ctypes

        ctypes.string_at(0)
    if kind in ("scan", "exact", "nested"):
        try:
            result = function(*arguments)
        except driver.ARGUMENT_ERRORS as exc:
            if valid:
                return kind, "failure", f"valid arguments refused: {exc!r}"
            return kind, "refused", None
        try:
            if kind == "scan":
                driver.check_scanned(result, arguments[4], arguments[5])
            elif kind == "nested":
                driver.check_nested(result, arguments[4], arguments[5])
            else:
                driver.check_exact(result, arguments[4])
        except Exception as exc:
            return kind, "failure", f"a result of the wrong shape: {exc!r}"
        return kind, "ok", None
    listed = arguments[0]
    n = len(listed)
    try:
        result = function(*arguments)
    except (*driver.ARGUMENT_ERRORS, AttributeError):
        return "messages", "refused", None
    try:
        if detail[0] == "value":
            validity, offsets, data = result
            ends = struct.unpack(f"<{n + 1}i", offsets)
            assert ends[0] == 0 and list(ends) == sorted(ends) and ends[-1] == len(data)
        else:
            validity, micros, out_of_range = result
            assert len(micros) == 8 * n and all(0 <= i < n for i, *_ in out_of_range)
        assert validity is None or len(validity) == (n + 7) // 8
    except Exception as exc:
        return "messages", "failure", f"a result of the wrong shape: {exc!r}"
    return "messages", "ok", None


def main(seed: int, start: int, count: int) -> None:
    global POOL
    POOL = Pool(seed)
    if count < 0:  # describe input ``start`` instead of calling
        print(describe(seed, start))
        return
    counts = {"done": 0, "refused": 0, "scan": 0, "nested": 0, "exact": 0, "messages": 0}
    last = os.open(driver.DIRECTORY / "last-call.txt", os.O_WRONLY | os.O_CREAT, 0o644)
    for index in range(start, start + count):
        kind, outcome, detail = call(case_random(seed, "native", index), index, last)
        counts["done"] += 1
        counts[kind] += 1
        if outcome == "refused":
            counts["refused"] += 1
        elif outcome == "failure":
            print(
                json.dumps({"index": index, "kind": "wrong result", "message": detail}), flush=True
            )
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
