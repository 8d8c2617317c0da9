"""Tokens of Flink SQL scripts: identifiers, `quoted identifiers`, 'strings', U&'unicode'.

Comments (``--`` to the end of the line, ``/* ... */``) are skipped. Every token carries its
1-based line and column so errors can point at it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import FlinkSqlError

IDENT, QIDENT, STRING, NUMBER, SYMBOL, EOF = "ident", "qident", "string", "number", "symbol", "eof"

_SPACE = re.compile(r"\s+")
_IDENT = re.compile(r"[^\W\d][\w$]*")
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SYMBOLS = ("<=", ">=", "<>", "!=", "||", "::")
_UNICODE_PREFIX = re.compile(r"[uU]&'")
_KINDS = {IDENT: "a word", QIDENT: "a `quoted identifier`", NUMBER: "a number", SYMBOL: "a symbol"}


@dataclass(frozen=True)
class Token:
    """One token: ``kind``, decoded ``value``, source ``text`` and position."""

    kind: str
    value: str
    text: str
    start: int
    end: int
    line: int
    column: int

    def is_word(self, *words: str) -> bool:
        """True for an unquoted identifier equal (ignoring case) to one of ``words``."""
        return self.kind == IDENT and self.value.upper() in words

    def describe(self, quote: bool = True) -> str:
        """How the token is named in messages; string literals are never quoted (secrets), nor
        any token when ``quote`` is false (it follows a secret option's key)."""
        if self.kind == STRING:
            return "a string literal"
        if self.kind == EOF:
            return "the end of the script"
        if not quote:
            return _KINDS[self.kind]
        return f"'{self.text[:40]}'"


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.tokens: list[Token] = []

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def error(self, message: str, offset: int) -> FlinkSqlError:
        line, column = self.position(offset)
        return FlinkSqlError(message, line=line, column=column)

    def add(self, kind: str, value: str, start: int, end: int) -> None:
        line, column = self.position(start)
        self.tokens.append(Token(kind, value, self.text[start:end], start, end, line, column))

    def run(self) -> list[Token]:
        text, pos, n = self.text, 0, len(self.text)
        while pos < n:
            m = _SPACE.match(text, pos)
            if m:
                pos = m.end()
                continue
            if text.startswith("--", pos):
                newline = text.find("\n", pos)
                pos = n if newline < 0 else newline + 1
            elif text.startswith("/*", pos):
                close = text.find("*/", pos + 2)
                if close < 0:
                    raise self.error("unterminated /* comment", pos)
                pos = close + 2
            elif text[pos] == "'":
                pos = self.string(pos, pos)
            elif _UNICODE_PREFIX.match(text, pos):
                pos = self.unicode_string(pos)
            elif text[pos] == "`":
                pos = self.quoted_ident(pos)
            elif m := _IDENT.match(text, pos):
                self.add(IDENT, m.group(), pos, m.end())
                pos = m.end()
            elif m := _NUMBER.match(text, pos):
                self.add(NUMBER, m.group(), pos, m.end())
                pos = m.end()
            else:
                width = 2 if text.startswith(_SYMBOLS, pos) else 1
                self.add(SYMBOL, text[pos : pos + width], pos, pos + width)
                pos += width
        self.add(EOF, "", n, n)
        return self.tokens

    def literal(self, quote_at: int) -> tuple[str, int]:
        """The body of the '...' literal whose opening quote is at ``quote_at``, and its end."""
        parts, pos = [], quote_at + 1
        while True:
            close = self.text.find("'", pos)
            if close < 0:
                raise self.error("unterminated string literal", quote_at)
            parts.append(self.text[pos:close])
            if self.text.startswith("''", close):
                parts.append("'")
                pos = close + 2
                continue
            return "".join(parts), close + 1

    def string(self, start: int, quote_at: int) -> int:
        value, end = self.literal(quote_at)
        self.add(STRING, value, start, end)
        return end

    def unicode_string(self, start: int) -> int:
        body, end = self.literal(start + 2)
        escape = "\\"
        m = re.compile(r"\s*UESCAPE\s*'(.)'", re.I).match(self.text, end)
        if m:
            escape, end = m.group(1), m.end()
            if escape in "0123456789abcdefABCDEF+'\" " or escape.isspace():
                raise self.error("invalid UESCAPE character", start)
        self.add(
            STRING, _decode_unicode(body, escape, lambda why: self.error(why, start)), start, end
        )
        return end

    def quoted_ident(self, start: int) -> int:
        parts, pos = [], start + 1
        while True:
            close = self.text.find("`", pos)
            if close < 0:
                raise self.error("unterminated `quoted identifier`", start)
            parts.append(self.text[pos:close])
            if self.text.startswith("``", close):
                parts.append("`")
                pos = close + 2
                continue
            value = "".join(parts)
            if not value:
                raise self.error("empty `quoted identifier`", start)
            self.add(QIDENT, value, start, close + 1)
            return close + 1


def _decode_unicode(body: str, escape: str, error: Callable[[str], FlinkSqlError]) -> str:
    out, i = [], 0
    pattern = re.compile(re.escape(escape) + r"(?:([0-9A-Fa-f]{4})|\+([0-9A-Fa-f]{6}))")
    while i < len(body):
        if body[i] != escape:
            out.append(body[i])
            i += 1
        elif body.startswith(escape * 2, i):
            out.append(escape)
            i += 2
        elif m := pattern.match(body, i):
            code = int(m.group(1) or m.group(2), 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise error("invalid code point in U&'...' literal")
            out.append(chr(code))
            i = m.end()
        else:
            raise error("invalid escape in U&'...' literal: use \\XXXX or \\+XXXXXX (hex)")
    return "".join(out)


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an EOF token.

    Raises:
        FlinkSqlError: an unterminated string, quoted identifier or comment, or a bad U& escape.
    """
    return _Lexer(text).run()
