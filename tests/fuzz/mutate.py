"""A fast, hand-written mutator of bytes and text (no hypothesis: a million inputs per target
must take minutes).

Each input is built from its own :class:`random.Random` (see :func:`case_random`), so an input
depends on the seed, the target and its index alone and any one can be generated again. An
input is random bytes or text, a soup of the target's interesting tokens, or, most often, a
valid seed after 1 to 4 (sometimes up to 16) edits: bit and byte flips, truncation, deletion,
insertion of random bytes or of a token, duplication or repetition of a range, and splices
with another seed.

Imports nothing of the package: the sanitized C modules' worker process uses it too.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Sequence

#: Bytes that mean something to JSON, CSV, YAML or SQL, and some that mean trouble.
INTERESTING_BYTES = b"\x00\x01\x7f\x80\xff\xc0\xc3\xed\xf0\xf4\"\\{}[],:;'\n\r\t #-+.eE0129aZ"
#: Tokens worth inserting anywhere in a text input.
TEXT_TOKENS = (
    '"', "'", "\\", "\\u0000", "\\ud800", "\\udc00", "{", "}", "[", "]", ",", ":", ";", "\n",
    "\r\n", "\t", " ", "-", "--", "/*", "*/", "#", "&a ", "*a", "!!binary ", "!!python/int ",
    "<<: ", "? ", "| ", "> ", "- ", "...", "---", "%YAML 1.1\n", "${x}", "{{ x }}", "0", "-1",
    "1e309", "NaN", "Infinity", "9223372036854775808", "-0", "0x1F", "1_000", "null", "~", "true",
    "false", "yes", "\u0085", "\u2028", "\ufeff", "\udcff", "é", "\U0001f600", "\x00", "=", "(",
    ")", "<", ">", "`", "''", "U&'\\0041'", "INTERVAL '1' SECOND", "ROW<a INT>", "ARRAY<",
    "MAP<STRING, INT>", "DECIMAL(38, 38)", "TIMESTAMP(9)", "SELECT", "FROM", "WHERE", "GROUP BY",
    "WITH (", "CREATE TABLE t (", "INSERT INTO", "AS", "NOT NULL", "METADATA", "WATERMARK FOR",
    "PRIMARY KEY", "EXECUTE STATEMENT SET BEGIN", "END;", "SET 'a' = 'b';",
)  # fmt: skip

_INT_EDGES = (
    0, 1, -1, 127, 128, -128, 255, 256, 32767, -32768, 65535, 2**31 - 1, -(2**31), 2**32, 2**53,
    2**63 - 1, -(2**63), 2**63, 2**64, 10**38, -(10**38),
)  # fmt: skip


#: How many times a repeated range is written again (deep nesting, long runs).
_REPEATS = (
    2, 3, 10, 10, 50, 100, 100, 1000,
)  # fmt: skip


def case_random(seed: int, target: str, index: int) -> random.Random:
    """The random source of input ``index`` of ``target`` under ``seed``."""
    return random.Random((seed << 72) ^ (zlib.crc32(target.encode()) << 40) ^ index)


def edge_integer(rng: random.Random) -> int:
    """An integer at an edge of 8, 16, 32 or 64 bits (or beyond), nudged by at most one."""
    return rng.choice(_INT_EDGES) + rng.choice((-1, 0, 0, 1))


def random_bytes(rng: random.Random, limit: int = 64) -> bytes:
    """Random bytes, their length skewed short."""
    size = min(rng.randrange(limit + 1), rng.randrange(limit + 1))
    if rng.random() < 0.5:
        return rng.randbytes(size)
    return bytes(rng.choice(INTERESTING_BYTES) for _ in range(size))


def random_text(rng: random.Random, limit: int = 64) -> str:
    """Random text: ASCII, punctuation, any code point (lone surrogates included)."""
    size = min(rng.randrange(limit + 1), rng.randrange(limit + 1))
    kind = rng.randrange(3)
    if kind == 0:
        return "".join(chr(rng.randrange(32, 127)) for _ in range(size))
    if kind == 1:
        return "".join(chr(rng.choice(INTERESTING_BYTES[9:])) for _ in range(size))
    return "".join(
        chr(rng.choice((rng.randrange(0x80), rng.randrange(0x110000)))) for _ in range(size)
    )


def soup(rng: random.Random, tokens: Sequence[str], limit: int = 40) -> str:
    """A sequence of up to ``limit`` of ``tokens`` and random words."""
    parts = []
    for _ in range(rng.randrange(limit + 1)):
        parts.append(rng.choice(tokens) if rng.random() < 0.85 else random_text(rng, 6))
        if rng.random() < 0.5:
            parts.append(" ")
    return "".join(parts)


def _span(rng: random.Random, size: int) -> tuple[int, int]:
    start = rng.randrange(size + 1)
    return start, min(size, start + rng.choice((0, 1, 1, 2, 3, 4, 8, 16, 64)))


def mutate_bytes(
    rng: random.Random, data: bytes, tokens: Sequence[bytes] = (), others: Sequence[bytes] = ()
) -> bytes:
    """``data`` after 1 to 4 (rarely up to 16) random edits; ``tokens`` are inserted whole,
    ``others`` (other seeds) are spliced in."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4, 16))):
        op = rng.randrange(12)
        size = len(out)
        if op == 0 and size:  # flip a bit
            i = rng.randrange(size)
            out[i] ^= 1 << rng.randrange(8)
        elif op == 1 and size:  # set a byte
            out[rng.randrange(size)] = (
                rng.choice(INTERESTING_BYTES) if rng.random() < 0.7 else rng.randrange(256)
            )
        elif op == 2:  # truncate
            del out[rng.randrange(size + 1) :]
        elif op == 3:  # delete a range
            start, end = _span(rng, size)
            del out[start:end]
        elif op == 4:  # insert random bytes
            i = rng.randrange(size + 1)
            out[i:i] = random_bytes(rng, 8)
        elif op in (5, 6) and tokens:  # insert or overwrite with a token
            token = rng.choice(tokens)
            start, end = _span(rng, size) if op == 6 else (rng.randrange(size + 1),) * 2
            out[start:end] = token
        elif op == 7 and size:  # duplicate a range
            start, end = _span(rng, size)
            out[end:end] = out[start:end]
        elif op == 8 and size:  # repeat a range many times (deep nesting, long runs)
            start, end = _span(rng, size)
            out[end:end] = bytes(out[start:end]) * rng.choice(_REPEATS)
        elif op == 9 and others:  # splice: our head, another seed's tail
            other = rng.choice(others)
            out = out[: rng.randrange(size + 1)] + other[rng.randrange(len(other) + 1) :]
        elif op == 10 and size:  # swap two bytes
            i, j = rng.randrange(size), rng.randrange(size)
            out[i], out[j] = out[j], out[i]
        elif op == 11:  # an integer at an edge, as text
            i = rng.randrange(size + 1)
            out[i:i] = str(edge_integer(rng)).encode()
    return bytes(out)


def mutate_text(
    rng: random.Random,
    text: str,
    tokens: Sequence[str] = TEXT_TOKENS,
    others: Sequence[str] = (),
    protect: re.Pattern[str] | None = None,
) -> str:
    """``text`` after 1 to 4 (rarely up to 16) random edits, none of them inside a match of
    ``protect`` (the planted secrets keep their characters)."""
    pieces: list[tuple[str, bool]] = []
    if protect is None:
        pieces = [(text, False)]
    else:
        position = 0
        for found in protect.finditer(text):
            pieces += [(text[position : found.start()], False), (found.group(), True)]
            position = found.end()
        pieces.append((text[position:], False))
    free = [i for i, (_, fixed) in enumerate(pieces) if not fixed]
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4, 16))):
        index = rng.choice(free)
        part = list(pieces[index][0])
        op = rng.randrange(10)
        size = len(part)
        if op == 0 and size:  # replace a character
            part[rng.randrange(size)] = (
                rng.choice(tokens) if rng.random() < 0.5 else random_text(rng, 1)
            )
        elif op == 1:  # truncate
            del part[rng.randrange(size + 1) :]
        elif op == 2:  # delete a range
            start, end = _span(rng, size)
            del part[start:end]
        elif op == 3:  # insert random text
            i = rng.randrange(size + 1)
            part[i:i] = random_text(rng, 8)
        elif op in (4, 5):  # insert or overwrite with a token
            start, end = _span(rng, size) if op == 5 else (rng.randrange(size + 1),) * 2
            part[start:end] = rng.choice(tokens)
        elif op == 6 and size:  # duplicate a range
            start, end = _span(rng, size)
            part[end:end] = part[start:end]
        elif op == 7 and size:  # repeat a range many times
            start, end = _span(rng, size)
            part[end:end] = part[start:end] * rng.choice(_REPEATS)
        elif op == 8 and others:  # splice with another seed (its protected text left out)
            other = rng.choice(others)
            tail = other[rng.randrange(len(other) + 1) :]
            if protect is not None:
                tail = protect.sub("p", tail)
            part = part[: rng.randrange(size + 1)] + list(tail)
        elif op == 9:  # an integer at an edge
            i = rng.randrange(size + 1)
            part[i:i] = str(edge_integer(rng))
        pieces[index] = ("".join(part), False)
    return "".join(p for p, _ in pieces)


__all__ = [
    "INTERESTING_BYTES",
    "TEXT_TOKENS",
    "case_random",
    "edge_integer",
    "mutate_bytes",
    "mutate_text",
    "random_bytes",
    "random_text",
    "soup",
]
