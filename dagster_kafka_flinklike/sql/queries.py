"""Which tables a query reads: the names after FROM, JOIN and TABLE (a best-effort scan).

Queries stay text that Spark runs; this only tells the Dagster layer which declared tables an
``INSERT INTO`` or view depends on.
"""

from __future__ import annotations

from .lexer import IDENT, QIDENT, SYMBOL, Token

_NOT_ALIAS = {
    "WHERE",
    "GROUP",
    "ORDER",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "FULL",
    "CROSS",
    "ON",
    "UNION",
    "LIMIT",
    "HAVING",
    "WINDOW",
    "FOR",
    "NATURAL",
    "EXCEPT",
    "INTERSECT",
    "MINUS",
    "OUTER",
    "USING",
    "MATCH_RECOGNIZE",
    "TABLESAMPLE",
    "QUALIFY",
    "LATERAL",
    "UNNEST",
    "TABLE",
    "SELECT",
    "FROM",
}


def _symbol(tok: Token, value: str) -> bool:
    return tok.kind == SYMBOL and tok.value == value


def _name_at(tokens: list[Token], i: int) -> tuple[str, int]:
    """The qualified name starting at ``i`` ('' when none) and the index after it."""
    parts: list[str] = []
    j = i
    while j < len(tokens) and tokens[j].kind in (IDENT, QIDENT):
        if tokens[j].kind == IDENT and tokens[j].value.upper() in _NOT_ALIAS:
            break
        parts.append(tokens[j].value)
        if j + 1 < len(tokens) and _symbol(tokens[j + 1], "."):
            j += 2
            continue
        j += 1
        break
    return ".".join(parts), j


def query_sources(tokens: list[Token]) -> tuple[str, ...]:
    """Names read by a query: the qualified names after FROM, JOIN and TABLE (and FROM lists).

    FROM inside a function call (``EXTRACT(YEAR FROM ts)``, ``TRIM(x FROM y)``) is skipped: only
    the top level and parenthesised subqueries count.
    """
    return tuple(dict.fromkeys(name for name, _, _ in table_references(tokens)))


def table_references(tokens: list[Token]) -> list[tuple[str, int, int]]:
    """Each table name a query reads, as ``(qualified name, first token, token after it)``."""
    found: list[tuple[str, int, int]] = []
    # per open parenthesis: is it a subquery (true) or a function call / expression (false)?
    contexts: list[bool] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        in_query = not contexts or contexts[-1]
        if _symbol(tok, "("):
            nxt = tokens[i + 1] if i + 1 < len(tokens) else tok
            contexts.append(nxt.is_word("SELECT", "WITH", "VALUES") or _symbol(nxt, "("))
        elif _symbol(tok, ")"):
            if contexts:
                contexts.pop()
        elif tok.is_word("TABLE") or (
            in_query
            and (tok.is_word("FROM", "JOIN") or (_symbol(tok, ",") and _in_from_list(tokens, i)))
        ):
            name, j = _name_at(tokens, i + 1)
            if name:
                found.append((name, i + 1, j))
            i = max(j, i + 1)
            continue
        i += 1
    return found


def joins_without_join(tokens: list[Token]) -> list[Token]:
    """Joins not written with ``JOIN``: each ``,`` between the tables of a ``FROM`` list (a
    comma join, e.g. Flink's interval join ``FROM a, b WHERE a.ts BETWEEN ...``) and each
    ``IN`` / ``EXISTS`` over a subquery (a semi-join). Like ``JOIN``, they keep both sides."""

    def semi_join(i: int) -> bool:
        return (
            tokens[i].is_word("IN", "EXISTS")
            and i + 2 < len(tokens)
            and _symbol(tokens[i + 1], "(")
            and tokens[i + 2].is_word("SELECT", "WITH")
        )

    return [
        tok
        for i, tok in enumerate(tokens)
        if (_symbol(tok, ",") and _in_from_list(tokens, i)) or semi_join(i)
    ]


#: The words before ``JOIN`` that name its kind (``OUTER`` only follows one of them).
_JOIN_KINDS = ("LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "INNER")


def join_kinds(tokens: list[Token], without_join: list[Token]) -> list[str]:
    """The kind of each join of a query, in order: ``INNER`` (``[INNER] JOIN``, a comma join),
    ``LEFT``, ``RIGHT``, ``FULL``, ``CROSS``, ``NATURAL``, ``SEMI`` (``IN``/``EXISTS`` over a
    subquery) or ``ANTI`` (``NOT IN``/``NOT EXISTS``); ``without_join`` is
    :func:`joins_without_join` of the same tokens."""
    kinds: list[str] = []
    others = {id(tok) for tok in without_join}
    for i, tok in enumerate(tokens):
        if tok.is_word("JOIN"):
            before = [t.value.upper() for t in tokens[max(i - 2, 0) : i] if t.kind == IDENT]
            named = [w for w in before if w in _JOIN_KINDS]
            kinds.append(named[-1] if named else "INNER")
        elif id(tok) in others:
            if _symbol(tok, ","):
                kinds.append("INNER")
            else:
                kinds.append("ANTI" if i > 0 and tokens[i - 1].is_word("NOT") else "SEMI")
    return kinds


def _in_from_list(tokens: list[Token], comma: int) -> bool:
    """True when the ',' at ``comma`` separates tables of a FROM clause (same nesting level)."""
    depth = 0
    for k in range(comma - 1, -1, -1):
        tok = tokens[k]
        if _symbol(tok, ")"):
            depth += 1
        elif _symbol(tok, "("):
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and tok.is_word("FROM"):
            return True
        elif depth == 0 and tok.is_word("SELECT", "WHERE", "ON", "GROUP", "ORDER", "HAVING"):
            return False
    return False
