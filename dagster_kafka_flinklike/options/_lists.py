"""Lists written as text or tokens: split at the separators that no bracket encloses.

Option values (``json.infer-schema.fixed-types``: ``id BIGINT, tags ARRAY<STRING>``), the
data-ingestion YAML's projections (``*, CONCAT(a, ',', b) AS ab``) and the arguments of Flink SQL
calls are all such lists; one walk splits them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

#: What :func:`top_level_spans` asks of each item: it opens a bracket, closes one, separates
#: two parts, or is part of one.
OPENS, CLOSES, SEPARATES, PART = "(", ")", ",", ""


def top_level_spans(
    items: Sequence[T], role: Callable[[T], str], start: int = 0, stop: int | None = None
) -> list[tuple[int, int]]:
    """The spans ``(begin, end)`` of ``items[start:stop]`` between the separators that no
    bracket encloses (the last span may be empty).

    ``role(item)`` is :data:`OPENS`, :data:`CLOSES`, :data:`SEPARATES` or :data:`PART`; it is
    called once per item, in order, so it may keep state (whether a quote is open).

    Example:
        >>> top_level_spans("f(a,b),c", lambda ch: ch if ch in "(),"  else "")
        [(0, 6), (7, 8)]
    """
    stop = len(items) if stop is None else stop
    spans, depth, begin = [], 0, start
    for at in range(start, stop):
        kind = role(items[at])
        if kind == OPENS:
            depth += 1
        elif kind == CLOSES:
            depth -= 1
        elif kind == SEPARATES and depth == 0:
            spans.append((begin, at))
            begin = at + 1
    spans.append((begin, stop))
    return spans


def split_top_level(
    text: str, opening: str = "([", closing: str = ")]", quotes: str = "'\"`"
) -> list[str]:
    """``text`` split at the commas that no bracket (``opening``/``closing``) and no quote
    (``quotes``) encloses; each part stripped, empty parts kept.

    Example:
        >>> split_top_level("*, CONCAT(a, ',', b) AS ab, `x,y`")
        ['*', "CONCAT(a, ',', b) AS ab", '`x,y`']
        >>> split_top_level("id BIGINT, m MAP<STRING, INT>", "(<", ")>", "")
        ['id BIGINT', 'm MAP<STRING, INT>']
    """
    open_quote = ""

    def role(ch: str) -> str:
        nonlocal open_quote
        if open_quote:
            if ch == open_quote:
                open_quote = ""
            return PART
        if ch in quotes:
            open_quote = ch
            return PART
        if ch in opening:
            return OPENS
        if ch in closing:
            return CLOSES
        return SEPARATES if ch == "," else PART

    return [text[begin:end].strip() for begin, end in top_level_spans(text, role)]


__all__ = ["CLOSES", "OPENS", "PART", "SEPARATES", "split_top_level", "top_level_spans"]
