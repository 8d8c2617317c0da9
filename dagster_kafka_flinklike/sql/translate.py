"""Flink SQL queries as Spark SQL: the functions, types, literals and windows that differ.

Spark SQL already reads most of Flink's query syntax (backquoted names, ``CAST``/``TRY_CAST``,
``SUBSTRING(s FROM i FOR n)``, ``POSITION(a IN b)``, ``||``, ``INTERVAL '5' SECOND``,
``TIMESTAMPADD``, ``DATE_FORMAT``). What differs is rewritten token by token, each rewrite one
entry of :data:`FUNCTIONS` or a handler below:

- string literals (Flink keeps backslashes, Spark reads them as escapes);
- types in ``CAST``: Flink's ``TIMESTAMP(3)`` is Spark's ``TIMESTAMP_NTZ``, ``TIMESTAMP_LTZ``
  Spark's ``TIMESTAMP`` (the same mapping the decoders use);
- ``TIMESTAMP '...'`` literals (without time zone in Flink);
- ``arr[i]`` (1-based in Flink, NULL when out of range) and ``ARRAY[...]``/``MAP[...]``;
- ``PROCTIME()``, ``ROW(...)``, ``JSON_VALUE``/``JSON_QUERY``/``JSON_EXISTS``/``JSON_OBJECT``,
  ``SPLIT_INDEX``, ``TO_TIMESTAMP`` (NULL on bad input in Flink), ``TO_TIMESTAMP_LTZ``,
  ``REGEXP_EXTRACT``'s default group;
- the window table-valued functions ``TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(ts), ...))``
  and the legacy group windows (``GROUP BY TUMBLE(ts, INTERVAL ...)``, ``TUMBLE_START``, ...).

A construct with no faithful Spark translation (``MATCH_RECOGNIZE``, ``FOR SYSTEM_TIME AS OF``,
``SESSION`` windows, ...) raises :class:`~..errors.FlinkSqlError` with its line and column.

The result also says which stateful operations the query uses (aggregations, joins, OVER, ...),
so the pipeline can decide how bounded runs give Flink's results (:mod:`.pipeline`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import FlinkSqlError, KafkaOptionsError
from ..options import parse_flink_type, top_level_spans
from .lexer import EOF, IDENT, NUMBER, QIDENT, STRING, SYMBOL, Token, tokenize
from .queries import join_kinds, joins_without_join, table_references

__all__ = [
    "WINDOW_BOUNDS",
    "WINDOW_COLUMN",
    "FirstRow",
    "SessionCall",
    "SparkQuery",
    "TopN",
    "WindowCall",
    "having_as_row_kind",
    "legacy_session_as_tvf",
    "spark_string",
    "translate_expression",
    "translate_query",
    "watermark_delay_ms",
    "with_row_kind",
]

#: Aggregate functions: a query calling one outside OVER keeps per-group state.
AGGREGATES = frozenset(
    [
        "COUNT",
        "SUM",
        "AVG",
        "MIN",
        "MAX",
        "COLLECT",
        "LISTAGG",
        "STDDEV_POP",
        "STDDEV_SAMP",
        "VAR_POP",
        "VAR_SAMP",
        "STDDEV",
        "VARIANCE",
        "FIRST_VALUE",
        "LAST_VALUE",
        "ARRAY_AGG",
        "JSON_OBJECTAGG",
        "JSON_ARRAYAGG",
        "BOOL_AND",
        "BOOL_OR",
        "APPROX_COUNT_DISTINCT",
    ]
)

#: Constructs refused outright: the reason a bounded Spark run cannot give Flink's result.
_REFUSED = {
    "MATCH_RECOGNIZE": "MATCH_RECOGNIZE (complex event processing) has no Spark SQL counterpart",
    "SESSION": "a SESSION group window (GROUP BY SESSION(...)) runs over one table named without "
    "an alias; otherwise write the SESSION window table function, which runs: "
    "TABLE(SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(ts), gap))",
    "LATERAL": "LATERAL TABLE (table functions) has no translation here",
}

_UNITS_MS = {
    "MILLISECOND": 1,
    "SECOND": 1000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
}


@dataclass(frozen=True)
class WindowCall:
    """One window of a query: ``kind`` TUMBLE, HOP or CUMULATE, its sizes and time column.

    ``size_ms`` is the window's (largest) length; ``step_ms`` the slide (HOP) or step
    (CUMULATE), equal to the size for TUMBLE. ``bounded`` is true for a window table function
    whose windows the query keeps only when they end inside the run's time bounds (see
    :data:`WINDOW_BOUNDS`).
    """

    kind: str
    time_column: str
    size_ms: int
    step_ms: int
    offset_ms: int
    line: int
    column: int
    bounded: bool = False


@dataclass(frozen=True)
class TopN:
    """A Top-N subquery (``ROW_NUMBER() OVER (PARTITION BY keys ORDER BY orders) AS alias``),
    read for Structured Streaming as ``view``: the changes of each key's top rows of ``text``
    (the subquery without its ranking column), each ``orders`` entry ``(column,
    descending)``."""

    view: str
    text: str
    alias: str
    keys: tuple[str, ...]
    orders: tuple[tuple[str, bool], ...]
    line: int
    column: int
    #: How many rows per key the query keeps (its filter on ``alias``), once planned.
    limit: int = 0


@dataclass(frozen=True)
class SessionCall:
    """A ``SESSION`` window table function: the view the query reads instead (the rows of
    ``data``, a Spark SQL relation, each with its closed session's ``window_start``,
    ``window_end`` and ``window_time``), its time column, gap and ``PARTITION BY`` keys."""

    view: str
    data: str
    time_column: str
    gap_ms: int
    keys: tuple[str, ...]
    line: int
    column: int


#: The named parameters (epoch milliseconds, or NULL for no bound) of a translated query that
#: has hopping windows: only windows ending in ``(start, end]`` are kept, so a run over a time
#: partition emits the windows that end in it, though it reads records from before its start.
WINDOW_BOUNDS = ("dkf_window_start", "dkf_window_end")
#: The window column of a window table function translated for Structured Streaming.
WINDOW_COLUMN = "__dkf_w"


@dataclass(frozen=True)
class FirstRow:
    """A ``ROW_NUMBER() OVER (PARTITION BY keys ORDER BY order)`` column named ``alias``: the
    ranking half of Flink's deduplication (the query keeps the rows where it is 1)."""

    alias: str
    keys: tuple[str, ...]
    order: str
    line: int
    column: int


@dataclass(frozen=True)
class SparkQuery:
    """A Flink SQL query translated to Spark SQL.

    Attributes:
        text: the Spark SQL text.
        stateful: the stateful operations found, each ``(what, line, column)``: e.g.
            ``("GROUP BY", 3, 1)``, ``("JOIN", 2, 18)``, ``("COUNT", 1, 8)``.
        windows: the window functions (table-valued or group windows) the query uses.
        joins: the kind of each join, in order (``INNER``, ``LEFT``, ``SEMI``, ...; see
            :func:`.queries.join_kinds`).
        first_rows: the ``ROW_NUMBER()`` rankings of deduplication subqueries.
        deduplicated: for Structured Streaming, ``(view, Spark SQL, keys)`` of each ranked
            subquery: the view the query reads instead, rows of the SQL without duplicates by
            ``keys``; register them in order before running the query.
        sessions: the ``SESSION`` window table functions, each read as a view of the rows of
            closed sessions: the query then runs over each micro-batch of that view.
        top_n: translated with ``top_n``, the ranked subqueries read as views of their Top-N
            changes.
    """

    text: str
    stateful: tuple[tuple[str, int, int], ...] = ()
    windows: tuple[WindowCall, ...] = ()
    joins: tuple[str, ...] = ()
    first_rows: tuple[FirstRow, ...] = ()
    deduplicated: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    sessions: tuple[SessionCall, ...] = ()
    top_n: tuple[TopN, ...] = ()


def spark_string(value: str) -> str:
    """A Spark SQL string literal holding ``value`` (Spark reads backslash escapes).

    Example:
        >>> spark_string("it's a\\\\b")
        "'it\\\\'s a\\\\\\\\b'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _spark_type(text: str) -> str:
    from ..options import spark_type

    return spark_type(parse_flink_type(text)).simpleString()


#: Spark's integral types, which Flink casts a decimal string to by truncation ('7.5' → 7).
_INTEGRAL = frozenset(["tinyint", "smallint", "int", "bigint"])
#: A decimal number as Flink's string-to-integer cast reads it (no exponent).
_DECIMAL_TEXT = r"'^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)$'"
#: JSON paths both Spark's ``get_json_object`` and its variant functions read the same way.
_PLAIN_JSON_PATH = re.compile(r"\$(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\['[^'\\]*'\])*")


def integral_cast(function: str, value: str, spark: str) -> str:
    """``CAST``/``TRY_CAST(value AS spark)`` to an integral type as Flink casts: a string
    holding a decimal number is truncated toward zero (``'7.5'`` → 7, ``'-7.5'`` → -7); one
    holding anything else (an exponent, letters) or a number out of range fails (``CAST``) or
    is NULL (``TRY_CAST``), as Spark's own cast of it does. Other operands cast as in Spark."""
    trimmed = f"trim({value})"
    as_decimal = f"{function}({function}({trimmed} AS decimal(38,18)) AS {spark})"
    return (
        f"(CASE WHEN typeof({value}) = 'string' AND {trimmed} RLIKE {_DECIMAL_TEXT} "
        f"THEN {as_decimal} ELSE {function}({value} AS {spark}) END)"
    )


def json_scalar(text: str, path: str) -> str:
    """``JSON_VALUE(text, path)``: the scalar at ``path``, NULL where it is an object or an
    array (Flink's JSON_VALUE returns scalars only; ``get_json_object`` returns their JSON)."""
    value = f"get_json_object({text}, {path})"
    at = f"try_variant_get(try_parse_json({text}), {path})"
    return (
        f"(CASE WHEN left({value}, 1) IN ('{{', '[') AND (schema_of_variant({at}) LIKE "
        f"'OBJECT%' OR schema_of_variant({at}) LIKE 'ARRAY%') THEN NULL ELSE {value} END)"
    )


#: A range of tokens: ``(start, stop)``, as a slice takes them.
Span = tuple[int, int]


def _role(tok: Token, separator: Callable[[Token], bool]) -> str:
    """What a token is to :func:`top_level_spans`: a bracket that opens (``(``) or closes
    (``)``), a ``separator`` (``,``), or part of a span (empty)."""
    if tok.kind == SYMBOL and tok.value in "([":
        return "("
    if tok.kind == SYMBOL and tok.value in ")]":
        return ")"
    return "," if separator(tok) else ""


def _comma(tok: Token) -> bool:
    return tok.kind == SYMBOL and tok.value == ","


def _as(tok: Token) -> bool:
    return tok.is_word("AS")


class _QueryRewriter:
    """Rewrites ranges of a Flink SQL query's tokens as Spark SQL text, token by token.

    Positions are indexes into :attr:`tokens`; a range runs from ``start`` to ``stop``
    (excluded), as a slice does, and a call's arguments are such :data:`Span` s. While it
    rewrites, it records the stateful operations (:attr:`stateful`) and the windows
    (:attr:`windows`) it meets.
    """

    def __init__(self, tokens: list[Token], streaming: bool = False, top_n: bool = False) -> None:
        self.tokens = tokens
        #: read ranked subqueries as Top-N views (:attr:`top_n`), not as deduplications
        self.as_top_n = top_n
        #: Spark Structured Streaming: group windows by the window itself (see :meth:`group_by`)
        self.streaming = streaming
        self.stateful: list[tuple[str, int, int]] = []
        self.windows: list[WindowCall] = []
        self.first_rows: list[FirstRow] = []
        #: ``(name, Spark SQL, keys)``: views whose rows Structured Streaming deduplicates
        self.deduplicated: list[tuple[str, str, tuple[str, ...]]] = []
        self.sessions: list[SessionCall] = []
        self.top_n: list[TopN] = []
        # qualified table names (catalog.database.table): Spark reads the table's view by name
        self.qualified = {
            start: stop for _, start, stop in table_references(tokens) if stop - start > 1
        }

    # -- helpers ---------------------------------------------------------------------------
    def error(self, message: str, tok: Token) -> FlinkSqlError:
        """A :class:`FlinkSqlError` at ``tok``'s line and column."""
        return FlinkSqlError(message, line=tok.line, column=tok.column)

    def is_symbol(self, at: int, value: str) -> bool:
        """Whether the token at ``at`` is the symbol ``value``."""
        return (
            at < len(self.tokens)
            and self.tokens[at].kind == SYMBOL
            and (self.tokens[at].value == value)
        )

    def closing(self, open_at: int) -> int:
        """The position of the bracket closing the one at ``open_at``."""
        opening = self.tokens[open_at].value
        expected = {"(": ")", "[": "]"}[opening]
        depth = 0
        for at in range(open_at, len(self.tokens)):
            tok = self.tokens[at]
            if tok.kind == SYMBOL and tok.value in "([":
                depth += 1
            elif tok.kind == SYMBOL and tok.value in ")]":
                depth -= 1
                if depth == 0:
                    if tok.value != expected:
                        raise self.error(f"'{opening}' closed by '{tok.value}'", tok)
                    return at
        raise self.error(f"'{opening}' is never closed", self.tokens[open_at])

    def is_word(self, at: int, *words: str) -> bool:
        """Whether the token at ``at`` is one of the keywords ``words``."""
        return at < len(self.tokens) and self.tokens[at].is_word(*words)

    def first_row(self, open_at: int, close_at: int) -> str | None:
        """A subquery ``(SELECT ..., ROW_NUMBER() OVER (PARTITION BY k ORDER BY t [ASC]) AS rn
        FROM ...)`` (the first half of Flink's deduplication) is recorded in
        :attr:`first_rows`; for Structured Streaming it becomes a view of the other columns
        whose duplicates by ``k`` are dropped (the first to arrive is kept, as Flink keeps the
        first by processing time) and that subquery over it, with ``rn`` 1. None otherwise."""
        spans = top_level_spans(
            self.tokens, lambda t: _role(t, lambda u: u.is_word("FROM")), open_at + 2, close_at
        )
        if len(spans) < 2:
            return None
        from_at = spans[0][1]  # the select list ends at the first top-level FROM
        items = self.arguments(open_at + 2, from_at)
        for index, (start, stop) in enumerate(items):
            if self.as_top_n:
                top = self._top_n_item(start, stop)
                if top is not None:
                    return self._top_n_view(top, items, index, from_at, close_at)
                continue
            ranked = self._ranked_item(start, stop)
            if ranked is None:
                continue
            alias, keys, order = ranked
            named = {
                "*" if self.is_symbol(stop - 1, "*") else self.tokens[stop - 1].value.lower()
                for n, (_, stop) in enumerate(items)
                if n != index
            }
            if "*" not in named and not {k.lower() for k in keys} <= named:
                return None  # the keys are not columns of the deduplicated rows
            tok = self.tokens[start]
            self.first_rows.append(FirstRow(alias, keys, order, tok.line, tok.column))
            if not self.streaming:
                return None
            others = [self.sql(*item) for n, item in enumerate(items) if n != index]
            name = f"__dkf_first_{len(self.deduplicated)}"
            text = f"SELECT {', '.join(others)} {self.sql(from_at, close_at)}"
            self.deduplicated.append((name, text, keys))
            return f"(SELECT *, 1 AS {alias} FROM {name})"
        return None

    def _top_n_view(
        self, top: tuple[str, tuple[str, ...], tuple[tuple[str, bool], ...]], items: list[Span],
        index: int, from_at: int, close_at: int,
    ) -> str:  # fmt: skip
        """The ranked subquery as the view of its Top-N's changes (:attr:`top_n`)."""
        alias, keys, orders = top
        others = [self.sql(*item) for n, item in enumerate(items) if n != index]
        name = f"__dkf_top_{len(self.top_n)}"
        text = f"SELECT {', '.join(others)} {self.sql(from_at, close_at)}"
        tok = self.tokens[items[index][0]]
        self.top_n.append(TopN(name, text, alias, keys, orders, tok.line, tok.column))
        return f"(SELECT *, 1 AS {alias} FROM {name})"

    def _top_n_item(
        self, start: int, stop: int
    ) -> tuple[str, tuple[str, ...], tuple[tuple[str, bool], ...]] | None:
        """``(alias, partition keys, ((order column, descending), ...))`` of a select item
        ``ROW_NUMBER() OVER (PARTITION BY k, ... ORDER BY c [ASC|DESC], ...) [AS] alias`` over
        plain columns, else None."""
        toks = self.tokens
        if not (
            toks[start].is_word("ROW_NUMBER")
            and self.is_symbol(start + 1, "(")
            and self.is_symbol(start + 2, ")")
            and self.is_word(start + 3, "OVER")
            and self.is_symbol(start + 4, "(")
        ):
            return None
        over_close = self.closing(start + 4)
        rest = [t for t in toks[over_close + 1 : stop] if not t.is_word("AS")]
        if len(rest) != 1 or rest[0].kind not in (IDENT, QIDENT):
            return None
        inside = toks[start + 5 : over_close]
        words = [t.value.upper() if t.kind == IDENT else "" for t in inside]
        if words[:2] != ["PARTITION", "BY"] or "ORDER" not in words:
            return None
        order_at = words.index("ORDER")
        keys = self._plain_columns(inside[2:order_at])
        if not keys or words[order_at + 1 : order_at + 2] != ["BY"]:
            return None
        orders: list[tuple[str, bool]] = []
        item: list[Token] = []
        for tok in [*inside[order_at + 2 :], None]:
            if tok is not None and not (tok.kind == SYMBOL and tok.value == ","):
                item.append(tok)
                continue
            descending = bool(item) and item[-1].is_word("DESC")
            column = self._plain_columns(item, trailing=("ASC", "DESC"))
            if len(column) != 1:
                return None
            orders.append((column[0], descending))
            item = []
        return rest[0].value, keys, tuple(orders)

    def _ranked_item(self, start: int, stop: int) -> tuple[str, tuple[str, ...], str] | None:
        """``(alias, partition keys, order column)`` of a select item ``ROW_NUMBER() OVER
        (PARTITION BY k, ... ORDER BY t [ASC]) [AS] alias`` over plain columns, else None."""
        ranked = self._top_n_item(start, stop)
        if ranked is None or len(ranked[2]) != 1 or ranked[2][0][1]:
            return None
        alias, keys, ((order, _),) = ranked
        return alias, keys, order

    @staticmethod
    def _plain_columns(toks: list[Token], trailing: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The column names of a list of plain (maybe qualified) columns, else ``()``."""
        if toks and trailing and toks[-1].is_word(*trailing):
            toks = toks[:-1]
        names: list[str] = []
        expect_name = True
        for tok in toks:
            if expect_name and tok.kind in (IDENT, QIDENT):
                names.append(tok.value)
                expect_name = False
            elif not expect_name and tok.kind == SYMBOL and tok.value == ".":
                names.pop()
                expect_name = True
            elif not expect_name and tok.kind == SYMBOL and tok.value == ",":
                expect_name = True
            else:
                return ()
        return tuple(names) if names and not expect_name else ()

    def arguments(self, start: int, stop: int) -> list[Span]:
        """The comma-separated arguments of tokens[start:stop] (a trailing empty one left out)."""
        spans = top_level_spans(self.tokens, lambda t: _role(t, _comma), start, stop)
        return spans if spans[-1][0] < stop else spans[:-1]

    # -- the walk --------------------------------------------------------------------------
    def sql(self, start: int, stop: int) -> str:
        """Spark SQL for tokens[start:stop]."""
        out: list[str] = []
        at = start
        while at < stop:
            piece, at = self.term(at, stop)
            while self.is_symbol(at, "[") and at < stop:
                close_at = self.closing(at)
                piece = f"try_element_at({piece}, {self.sql(at + 1, close_at)})"
                at = close_at + 1
            out.append(piece)
        return " ".join(p for p in out if p)

    def term(self, at: int, stop: int) -> tuple[str, int]:
        """Spark SQL for the term starting at ``at`` (a token, a bracketed group, a call, a
        literal), and the position after it."""
        tok = self.tokens[at]
        if tok.kind == STRING:
            return spark_string(tok.value), at + 1
        if tok.kind == EOF:
            return "", at + 1
        if tok.kind == SYMBOL and tok.value == "(":
            close_at = self.closing(at)
            ranked = self.first_row(at, close_at) if self.is_word(at + 1, "SELECT") else None
            if ranked is not None:
                return ranked, close_at + 1
            return f"({self.sql(at + 1, close_at)})", close_at + 1
        if at in self.qualified:
            last = self.qualified[at] - 1
            return self.tokens[last].text, last + 1
        if tok.kind != IDENT:
            return tok.text, at + 1
        word = tok.value.upper()
        if word in _REFUSED:
            raise self.error(_REFUSED[word], tok)
        follows = self.tokens[at + 1] if at + 1 < stop else None
        if word == "FOR" and follows is not None and follows.is_word("SYSTEM_TIME"):
            raise self.error(
                "FOR SYSTEM_TIME AS OF (temporal joins) needs versioned state across runs; not "
                "supported on bounded runs",
                tok,
            )
        if word in ("GROUP", "ORDER") and follows is not None and follows.is_word("BY"):
            self.stateful.append((f"{word} BY", tok.line, tok.column))
            if word == "GROUP" and self.streaming:
                return self.group_by(at, stop)
        elif word in ("JOIN", "OVER", "LIMIT", "INTERSECT", "EXCEPT", "MINUS") or (
            word == "DISTINCT" and at > 0 and self.tokens[at - 1].is_word("SELECT")
        ):  # COUNT(DISTINCT x) is an aggregate's own state, counted with the aggregate
            self.stateful.append((word, tok.line, tok.column))
        elif word == "UNION" and not (follows is not None and follows.is_word("ALL")):
            self.stateful.append(("UNION", tok.line, tok.column))
        if word == "TABLE" and self.is_symbol(at + 1, "("):
            return self.window_tvf(at)
        if word == "TIMESTAMP" and follows is not None and follows.kind == STRING:
            return f"TIMESTAMP_NTZ {spark_string(follows.value)}", at + 2
        if word in ("ARRAY", "MAP") and self.is_symbol(at + 1, "["):
            close_at = self.closing(at + 1)
            return f"{word.lower()}({self.sql(at + 2, close_at)})", close_at + 1
        if self.is_symbol(at + 1, "("):
            close_at = self.closing(at + 1)
            if self.is_word(at + 2, "SELECT"):  # FROM (SELECT ...), JOIN (SELECT ...)
                ranked = self.first_row(at + 1, close_at)
                if ranked is not None:
                    return f"{tok.text} {ranked}", close_at + 1
            return self.call(at, close_at), close_at + 1
        return tok.text, at + 1

    def group_by(self, at: int, stop: int) -> tuple[str, int]:
        """``GROUP BY`` for Structured Streaming: a list naming ``window_start`` or
        ``window_end`` of a window table function also groups by that window itself (the
        column that carries the watermark, which Spark's append mode needs), and the position
        after the list."""
        end = at + 2
        depth = 0
        clauses = ("HAVING", "ORDER", "LIMIT", "UNION", "WINDOW", "QUALIFY", "EXCEPT", "INTERSECT")
        while end < stop:
            tok = self.tokens[end]
            if tok.kind == SYMBOL and tok.value in "([":
                depth += 1
            elif tok.kind == SYMBOL and tok.value in ")]":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and tok.kind == IDENT and tok.value.upper() in clauses:
                break
            end += 1
        listed = self.sql(at + 2, end)
        names = {t.value.upper() for t in self.tokens[at + 2 : end] if t.kind in (IDENT, QIDENT)}
        if self.sessions:
            self.session_keys(at, end)
        elif names & {"WINDOW_START", "WINDOW_END"}:
            listed = f"{listed} , {WINDOW_COLUMN}"
        return f"GROUP BY {listed}", end

    def session_keys(self, at: int, end: int) -> None:
        """A ``SESSION`` window aggregation groups by ``window_start``, ``window_end`` and the
        ``PARTITION BY`` columns, nothing else, as Flink requires (its sessions are per
        partition key)."""
        session = self.sessions[-1]
        names = []
        for start, stop in self.arguments(at + 2, end):
            plain = self._plain_columns(self.tokens[start:stop])
            if len(plain) != 1:
                names.append(self.sql(start, stop))
            else:
                names.append(plain[0])
        upper = {n.upper() for n in names}
        wanted = {"WINDOW_START", "WINDOW_END", *(k.upper() for k in session.keys)}
        if upper - {"WINDOW_TIME"} != wanted or len(self.sessions) > 1:
            keys = ", ".join(session.keys) or "none"
            raise self.error(
                f"a SESSION window aggregation groups by window_start, window_end and its "
                f"PARTITION BY columns ({keys}), as Flink requires; this one groups by "
                f"{', '.join(names)}",
                self.tokens[at],
            )

    def call(self, name_at: int, close_at: int) -> str:
        """Spark SQL for the call of the function named at ``name_at``, whose argument list
        closes at ``close_at``."""
        name = self.tokens[name_at].value.upper()
        args = self.arguments(name_at + 2, close_at)
        if name in AGGREGATES:
            self.stateful.append((name, self.tokens[name_at].line, self.tokens[name_at].column))
        if (
            name == "COUNT"
            and self.streaming
            and args
            and self.tokens[args[0][0]].is_word("DISTINCT")
        ):
            return self.count_distinct(args)
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, name_at, args)
        rename = FUNCTIONS.get(name, self.tokens[name_at].text)
        return f"{rename}({', '.join(self.sql(*arg) for arg in args)})"

    def count_distinct(self, args: list[Span]) -> str:
        """``COUNT(DISTINCT a[, b ...])`` for Structured Streaming, which has no distinct
        aggregate: the size of the set of the non-NULL values (or of the rows of values none of
        which is NULL), which is what Flink counts. The set is the group's state, as in Flink."""
        first = (args[0][0] + 1, args[0][1])
        values = [self.sql(*arg) for arg in (first, *args[1:])]
        if len(values) == 1:
            return f"size(collect_set({values[0]}))"
        present = " AND ".join(f"({v}) IS NOT NULL" for v in values)
        return f"size(collect_set(CASE WHEN {present} THEN struct({', '.join(values)}) END))"

    # -- rewrites: each takes the position of the function's name and its arguments --------
    def cast(self, name_at: int, args: list[Span]) -> str:
        """``CAST``/``TRY_CAST(value AS type)`` with Flink's type as Spark's."""
        if len(args) != 1:
            raise self.error("expected CAST(value AS type)", self.tokens[name_at])
        start, stop = args[0]
        around_as = top_level_spans(self.tokens, lambda t: _role(t, _as), start, stop)
        if len(around_as) < 2:
            raise self.error("expected CAST(value AS type)", self.tokens[name_at])
        as_at = around_as[-1][0] - 1  # the last AS outside brackets
        type_text = " ".join(t.text for t in self.tokens[as_at + 1 : stop])
        try:
            spark = _spark_type(type_text)
        except KafkaOptionsError as exc:
            raise self.error(str(exc), self.tokens[as_at + 1]) from None
        function, value = self.tokens[name_at].value.upper(), self.sql(start, as_at)
        if spark in _INTEGRAL:
            return integral_cast(function, value, spark)
        return f"{function}({value} AS {spark})"

    def interval_ms(self, start: int, stop: int) -> int:
        """The milliseconds of ``INTERVAL 'n' UNIT`` in tokens[start:stop]."""
        toks = self.tokens[start:stop]
        if (
            len(toks) == 3
            and toks[0].is_word("INTERVAL")
            and toks[1].kind in (STRING, NUMBER)
            and toks[2].kind == IDENT
        ):
            unit = toks[2].value.upper().rstrip("S")
            if unit in _UNITS_MS:
                try:
                    amount = float(toks[1].value)
                except ValueError:
                    amount = -1
                ms = int(amount * _UNITS_MS[unit])
                if ms > 0:
                    return ms
        raise self.error(
            "expected a window length as INTERVAL 'n' SECOND|MINUTE|HOUR|DAY",
            self.tokens[start] if start < stop else self.tokens[max(start - 1, 0)],
        )

    def window_tvf(self, table_at: int) -> tuple[str, int]:
        """``TABLE(TUMBLE|HOP|CUMULATE(...))`` at ``table_at`` as a subquery adding the window
        columns, and the position after it."""
        outer_close = self.closing(table_at + 1)
        fn = self.tokens[table_at + 2]
        if not (fn.kind == IDENT and self.is_symbol(table_at + 3, "(")):
            raise self.error(
                "expected a window function (TUMBLE, HOP, CUMULATE, SESSION) in TABLE(...)", fn
            )
        kind = fn.value.upper()
        if kind not in ("TUMBLE", "HOP", "CUMULATE", "SESSION"):
            raise self.error(
                f"table function {fn.value} has no translation; the window functions TUMBLE, "
                f"HOP, CUMULATE and SESSION do",
                fn,
            )
        inner_close = self.closing(table_at + 3)
        if inner_close + 1 != outer_close:
            raise self.error("expected ')' after the window function", self.tokens[inner_close + 1])
        named: dict[str, Span] = {}
        positional: list[Span] = []
        for start, stop in self.arguments(table_at + 4, inner_close):
            named_arg = self.tokens[start].kind == IDENT and self.is_symbol(start + 1, "=")
            if stop - start > 2 and named_arg and self.is_symbol(start + 2, ">"):
                named[self.tokens[start].value.upper()] = (start + 3, stop)
                continue
            positional.append((start, stop))
        order = {
            "TUMBLE": ["DATA", "TIMECOL", "SIZE", "OFFSET"],
            "HOP": ["DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"],
            "CUMULATE": ["DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"],
            "SESSION": ["DATA", "TIMECOL", "GAP", ""],
        }[kind]
        for name, span in zip(order, positional, strict=False):
            named.setdefault(name, span)
        missing = [n for n in order[:-1] if n not in named]
        if missing:
            raise self.error(f"{kind} needs {', '.join(missing)}", fn)
        start, stop = named["DATA"]
        if not self.tokens[start].is_word("TABLE"):
            raise self.error(f"{kind}'s first argument is TABLE <name>", self.tokens[start])
        partition = next(
            (at for at in range(start + 1, stop) if self.is_word(at, "PARTITION")), stop
        )
        data = self.sql(start + 1, partition)
        start, stop = named["TIMECOL"]
        if not (self.tokens[start].is_word("DESCRIPTOR") and self.is_symbol(start + 1, "(")):
            raise self.error(f"{kind}'s time column is DESCRIPTOR(<column>)", self.tokens[start])
        column = self.sql(start + 2, self.closing(start + 1))
        if kind == "SESSION":
            after = [t for t in self.tokens[outer_close + 1 : outer_close + 4] if t.kind == IDENT]
            where = next((t for t in after if t.is_word("WHERE")), None)
            if where is not None:
                raise self.error(
                    "a WHERE over a SESSION window's rows would filter them after their sessions "
                    "are formed here; filter in a view the SESSION reads instead (CREATE VIEW v "
                    "AS SELECT ... WHERE ...; TABLE(SESSION(TABLE v, ...)))",
                    where,
                )
            return self.session_tvf(fn, data, column, named, partition), outer_close + 1
        if partition < named["DATA"][1]:
            raise self.error(f"{kind} takes no PARTITION BY", self.tokens[partition])
        size = self.interval_ms(*named["SIZE"])
        step = self.interval_ms(*named[{"TUMBLE": "SIZE", "HOP": "SLIDE"}.get(kind, "STEP")])
        offset = self.interval_ms(*named["OFFSET"]) if "OFFSET" in named else 0
        if kind == "CUMULATE" and size % step:
            raise self.error("CUMULATE's size must be a multiple of its step", fn)
        bounded = kind == "HOP" and step != size
        self.windows.append(
            WindowCall(kind, column, size, step, offset, fn.line, fn.column, bounded)
        )
        subquery = _window_subquery(kind, data, column, size, step, offset, self.streaming)
        return subquery, outer_close + 1

    def session_tvf(
        self, fn: Token, data: str, column: str, named: dict[str, Span], partition: int
    ) -> str:
        """``SESSION(TABLE data [PARTITION BY k, ...], DESCRIPTOR(ts), gap)``: recorded in
        :attr:`sessions`, and read as the view of its rows in closed sessions."""
        _, data_stop = named["DATA"]
        keys: tuple[str, ...] = ()
        if partition < data_stop:
            at = partition + 1
            if not self.is_word(at, "BY"):
                raise self.error("expected PARTITION BY <columns>", self.tokens[partition])
            listed = self.tokens[at + 1 : data_stop]
            if listed and listed[0].kind == SYMBOL and listed[0].value == "(":
                listed = listed[1:-1]
            keys = self._plain_columns(listed)
            if not keys:
                raise self.error(
                    "SESSION's PARTITION BY takes column names", self.tokens[partition]
                )
        gap = self.interval_ms(*named["GAP"])
        if gap <= 0:
            raise self.error("SESSION's gap must be positive", fn)
        view = f"__dkf_session_{len(self.sessions)}"
        self.sessions.append(SessionCall(view, data, column, gap, keys, fn.line, fn.column))
        self.windows.append(WindowCall("SESSION", column, gap, gap, 0, fn.line, fn.column))
        return f"(SELECT * FROM {view})"

    def group_window(self, name_at: int, args: list[Span]) -> str:
        """Legacy group windows: ``TUMBLE(ts, size)``, ``HOP(ts, slide, size)`` and helpers."""
        name = self.tokens[name_at].value.upper()
        kind, _, part = name.partition("_")
        if kind == "SESSION":
            raise self.error(_REFUSED["SESSION"], self.tokens[name_at])
        want = 2 if kind == "TUMBLE" else 3
        if len(args) not in (want, want + 1):
            raise self.error(
                f"{kind} takes the time column and {want - 1} interval(s)", self.tokens[name_at]
            )
        column = self.sql(*args[0])
        first = self.interval_ms(*args[1])
        size, slide = (first, first) if kind == "TUMBLE" else (self.interval_ms(*args[2]), first)
        offset = self.interval_ms(*args[want]) if len(args) > want else 0
        if not part:
            tok = self.tokens[name_at]
            self.windows.append(WindowCall(kind, column, size, slide, offset, tok.line, tok.column))
        window = _spark_window(column, size, slide, offset)
        return {
            "": window,
            "START": f"{window}.start",
            "END": f"{window}.end",
            "ROWTIME": f"({window}.end - INTERVAL '0.001' SECOND)",
            "PROCTIME": "current_timestamp()",
        }[part]

    def row(self, name_at: int, args: list[Span]) -> str:
        """``ROW(a, b)`` as a struct."""
        return f"struct({', '.join(self.sql(*arg) for arg in args)})"

    def json_value(self, name_at: int, args: list[Span]) -> str:
        """``JSON_VALUE``/``JSON_QUERY``/``JSON_EXISTS(text, path ...)``."""
        name = self.tokens[name_at].value.upper()
        if len(args) != 2:
            raise self.error(f"{name} takes a JSON string and a path", self.tokens[name_at])
        path_at, stop = args[1]
        if self.tokens[path_at].kind != STRING:
            raise self.error(f"{name}'s path must be a string literal", self.tokens[path_at])
        path = spark_string(self.tokens[path_at].value)
        value = f"get_json_object({self.sql(*args[0])}, {path})"
        if name == "JSON_VALUE":
            if not _PLAIN_JSON_PATH.fullmatch(self.tokens[path_at].value):
                raise self.error(
                    f"JSON_VALUE's path {self.tokens[path_at].value!r} has no faithful "
                    f"translation (paths of names, ['names'] and [indexes] only)",
                    self.tokens[path_at],
                )
            value = json_scalar(self.sql(*args[0]), path)
        rest = self.tokens[path_at + 1 : stop]
        if name == "JSON_EXISTS":
            if rest:
                raise self.error("JSON_EXISTS's ON ERROR clause has no translation", rest[0])
            return f"({value} IS NOT NULL)"
        if rest and rest[0].is_word("RETURNING") and name == "JSON_VALUE":
            clause = next(
                (n for n, t in enumerate(rest) if t.is_word("NULL", "DEFAULT", "ERROR")),
                len(rest),
            )
            try:
                spark = _spark_type(" ".join(t.text for t in rest[1:clause]))
            except KafkaOptionsError as exc:
                raise self.error(str(exc), rest[0]) from None
            value, rest = f"try_cast({value} AS {spark})", rest[clause:]
        words = " ".join(t.value.upper() for t in rest)
        if words not in ("", "NULL ON EMPTY", "NULL ON ERROR", "NULL ON EMPTY NULL ON ERROR"):
            raise self.error(
                f"{name}'s clause '{words}' has no translation (only NULL ON EMPTY/ERROR, "
                f"Flink's default)",
                rest[0],
            )
        return value

    def json_object(self, name_at: int, args: list[Span]) -> str:
        """``JSON_OBJECT(KEY k VALUE v, ... [ABSENT|NULL ON NULL])`` as ``to_json``, its keys in
        Flink's order (sorted, where they are literals)."""
        entries: list[tuple[str | None, str, str]] = []
        keep_nulls = True
        for start, stop in args:
            toks = self.tokens[start:stop]
            if toks and toks[0].is_word("KEY"):
                start += 1
                toks = toks[1:]
            words = [t.value.upper() for t in toks if t.kind == IDENT]
            if words[-3:] == ["ABSENT", "ON", "NULL"]:
                keep_nulls = False
                stop -= 3
            elif words[-3:] == ["NULL", "ON", "NULL"] and toks[-3].is_word("NULL"):
                stop -= 3
            value_at = next(
                (at for at in range(start, stop) if self.tokens[at].is_word("VALUE")), -1
            )
            if value_at < 0:
                raise self.error("expected KEY 'name' VALUE expression", self.tokens[start])
            key = self.tokens[start] if value_at == start + 1 else None
            literal = key.value if key is not None and key.kind == STRING else None
            entries.append((literal, self.sql(start, value_at), self.sql(value_at + 1, stop)))
        if all(literal is not None for literal, _, _ in entries):  # Flink orders the keys
            entries.sort(key=lambda entry: entry[0] or "")
        pairs = [part for _, key_sql, value_sql in entries for part in (key_sql, value_sql)]
        options = "" if not keep_nulls else ", map('ignoreNullFields', 'false')"
        return f"to_json(named_struct({', '.join(pairs)}){options})"

    def split_index(self, name_at: int, args: list[Span]) -> str:
        """``SPLIT_INDEX(text, separator, index)``: NULL out of range, as in Flink."""
        if len(args) != 3:
            raise self.error(
                "SPLIT_INDEX takes a string, a separator and an index", self.tokens[name_at]
            )
        text, sep, index = (self.sql(*arg) for arg in args)
        return (
            f"(CASE WHEN ({index}) < 0 THEN NULL ELSE try_element_at(split({text}, "
            f"concat('\\\\Q', {sep}, '\\\\E'), -1), ({index}) + 1) END)"
        )

    def to_timestamp(self, name_at: int, args: list[Span]) -> str:
        """``TO_TIMESTAMP(text[, format])``: NULL on bad input, as in Flink."""
        texts = [self.sql(*arg) for arg in args]
        if len(texts) == 1:
            texts.append("'yyyy-MM-dd HH:mm:ss'")
        return f"CAST(try_to_timestamp({', '.join(texts)}) AS TIMESTAMP_NTZ)"

    def to_timestamp_ltz(self, name_at: int, args: list[Span]) -> str:
        """``TO_TIMESTAMP_LTZ(number[, 0|3])``: epoch seconds or milliseconds."""
        texts = [self.sql(*arg) for arg in args]
        precision = texts[1].strip() if len(texts) > 1 else "3"
        fn = {"0": "timestamp_seconds", "3": "timestamp_millis"}.get(precision)
        if fn is None or len(texts) > 2:
            raise self.error(
                "TO_TIMESTAMP_LTZ takes a number and precision 0 or 3", self.tokens[name_at]
            )
        return f"{fn}({texts[0]})"

    def regexp_extract(self, name_at: int, args: list[Span]) -> str:
        """``REGEXP_EXTRACT(text, regex[, group])``: the whole match by default, NULL when
        nothing matches."""
        texts = [self.sql(*arg) for arg in args]
        if len(texts) == 2:
            texts.append("0")  # Flink's default group: the whole match
        # Flink returns NULL when nothing matches; Spark an empty string
        return (
            f"(CASE WHEN {texts[0]} RLIKE {texts[1]} THEN regexp_extract({', '.join(texts)}) END)"
        )


def _duration(ms: int) -> str:
    return f"{ms} milliseconds"


def _spark_window(column: str, size: int, slide: int, offset: int) -> str:
    parts = [column, spark_string(_duration(size))]
    if slide != size or offset:
        parts.append(spark_string(_duration(slide)))
    if offset:
        parts.append(spark_string(_duration(offset)))
    return f"window({', '.join(parts)})"


def _window_subquery(
    kind: str, data: str, column: str, size: int, step: int, offset: int, streaming: bool = False
) -> str:
    """Rows of ``data`` with Flink's ``window_start``, ``window_end`` and ``window_time``.

    Each row is kept whole in a struct (``__dkf_r``) so ``SELECT *`` over the result sees the
    table's columns and the three window columns, nothing else; for Structured Streaming also
    the window itself (:data:`WINDOW_COLUMN`), which its aggregation groups by.
    """
    time = "window_end - INTERVAL '0.001' SECOND AS window_time"
    if kind in ("TUMBLE", "HOP"):
        w = _spark_window(column, size, step, offset)
        where = ""
        if streaming:
            return (
                f"(SELECT __dkf_r.*, window_start, window_end, {time}, {WINDOW_COLUMN} FROM "
                f"(SELECT __dkf_r, {WINDOW_COLUMN}, {WINDOW_COLUMN}.start AS window_start, "
                f"{WINDOW_COLUMN}.end AS window_end FROM (SELECT struct(*) AS __dkf_r, {w} AS "
                f"{WINDOW_COLUMN} FROM {data})))"
            )
        if step != size:  # hopping: keep the windows that end within the run's bounds
            end = "unix_millis(CAST(window_end AS TIMESTAMP))"
            lo, hi = (f"CAST(:{p} AS BIGINT)" for p in WINDOW_BOUNDS)
            where = f" WHERE ({lo} IS NULL OR {end} > {lo}) AND ({hi} IS NULL OR {end} <= {hi})"
        return (
            f"(SELECT __dkf_r.*, window_start, window_end, {time} FROM (SELECT __dkf_r, "
            f"__dkf_w.start AS window_start, __dkf_w.end AS window_end FROM (SELECT struct(*) "
            f"AS __dkf_r, {w} AS __dkf_w FROM {data})){where})"
        )
    if streaming:
        return _cumulate_streaming(data, column, size, step, offset)
    # CUMULATE: windows [start, start + k * step) for every k whose end is past the row's time.
    w = _spark_window(column, size, size, offset)
    return (
        f"(SELECT __dkf_r.*, window_start, window_end, {time} FROM (SELECT __dkf_r, "
        f"__dkf_ws AS window_start, __dkf_ws + make_dt_interval(0, 0, 0, __dkf_k * {step / 1000}) "
        f"AS window_end FROM (SELECT struct(*) AS __dkf_r, {w}.start AS __dkf_ws FROM {data}) "
        f"LATERAL VIEW explode(sequence(CAST(floor(timestampdiff(MICROSECOND, __dkf_ws, "
        f"__dkf_r.{column}) / {step * 1000}) AS INT) + 1, {size // step})) __dkf_s AS __dkf_k))"
    )


def _cumulate_streaming(data: str, column: str, size: int, step: int, offset: int) -> str:
    """``CUMULATE`` for Structured Streaming, whose time column is an instant (``TIMESTAMP``).

    Each cumulating window ``[start, start + k * step)`` is the hopping window of the full size
    that ends where it ends, ``[start + k * step - size, start + k * step)``: Spark's sliding
    ``window`` (which carries the watermark, so that each step is emitted once the watermark
    passes its end, as Flink fires it) generates those, and a row keeps the ones whose
    cumulating period (the ``size``-aligned instant inside the hopping window) began at or
    before its time. The period's start is ``window_start``.
    """
    w = _spark_window(column, size, step, offset % step)
    size_us, offset_us = size * 1000, offset * 1000
    start_us = f"unix_micros({WINDOW_COLUMN}.start)"
    to_period = f"pmod({offset_us} - {start_us}, {size_us})"
    time = "window_end - INTERVAL '0.001' SECOND AS window_time"
    return (
        f"(SELECT __dkf_r.*, window_start, window_end, {time}, {WINDOW_COLUMN} FROM "
        f"(SELECT __dkf_r, {WINDOW_COLUMN}, timestamp_micros({start_us} + {to_period}) AS "
        f"window_start, {WINDOW_COLUMN}.end AS window_end FROM (SELECT struct(*) AS __dkf_r, "
        f"{w} AS {WINDOW_COLUMN} FROM {data}) WHERE {to_period} <= "
        f"timestampdiff(MICROSECOND, {WINDOW_COLUMN}.start, __dkf_r.{column})))"
    )


FUNCTIONS: dict[str, str] = {
    "CURRENT_ROW_TIMESTAMP": "current_timestamp",
    "PROCTIME": "current_timestamp",
}
"""Flink functions that Spark spells differently (same arguments, same result)."""

_Handler = Callable[[_QueryRewriter, int, list[Span]], str]
_HANDLERS: dict[str, _Handler] = {
    "CAST": _QueryRewriter.cast,
    "TRY_CAST": _QueryRewriter.cast,
    "ROW": _QueryRewriter.row,
    "JSON_VALUE": _QueryRewriter.json_value,
    "JSON_QUERY": _QueryRewriter.json_value,
    "JSON_EXISTS": _QueryRewriter.json_value,
    "JSON_OBJECT": _QueryRewriter.json_object,
    "SPLIT_INDEX": _QueryRewriter.split_index,
    "TO_TIMESTAMP": _QueryRewriter.to_timestamp,
    "TO_TIMESTAMP_LTZ": _QueryRewriter.to_timestamp_ltz,
    "REGEXP_EXTRACT": _QueryRewriter.regexp_extract,
    **{
        f"{w}{p}": _QueryRewriter.group_window
        for w in ("TUMBLE", "HOP", "SESSION")
        for p in ("", "_START", "_END", "_ROWTIME", "_PROCTIME")
    },
}


@functools.lru_cache(maxsize=8)
def _script_tokens(text: str) -> tuple[Token, ...]:
    """A script's tokens, once per script (each query and computed column is a slice)."""
    return tuple(tokenize(text))


def _tokens(text: str, start: int, end: int) -> list[Token]:
    return [t for t in _script_tokens(text) if start <= t.start < end and t.kind != EOF]


def translate_query(
    text: str,
    start: int = 0,
    end: int | None = None,
    *,
    streaming: bool = False,
    top_n: bool = False,
) -> SparkQuery:
    """Translate the Flink SQL query at ``text[start:end]`` (a whole script is fine: positions
    in errors are the script's lines and columns); with ``streaming``, for Spark Structured
    Streaming (window aggregations group by the window column that carries the watermark);
    with ``top_n``, ranked subqueries are read as views of their Top-N changes (:class:`TopN`).

    Raises:
        FlinkSqlError: a construct with no faithful translation, with its line and column.

    Example:
        >>> translate_query("SELECT PROCTIME() AS t, ROW(a, b) AS r FROM s").text
        'SELECT current_timestamp() AS t , struct(a, b) AS r FROM s'
    """
    end = len(text) if end is None else end
    rewriter = _QueryRewriter(_tokens(text, start, end), streaming, top_n)
    spark = rewriter.sql(0, len(rewriter.tokens))
    without_join = joins_without_join(rewriter.tokens)
    joins = [("JOIN", t.line, t.column) for t in without_join]
    stateful = sorted([*rewriter.stateful, *joins], key=lambda s: (s[1], s[2]))
    kinds = tuple(join_kinds(rewriter.tokens, without_join))
    return SparkQuery(
        spark,
        tuple(stateful),
        tuple(rewriter.windows),
        kinds,
        tuple(rewriter.first_rows),
        tuple(rewriter.deduplicated),
        tuple(rewriter.sessions),
        tuple(rewriter.top_n),
    )


def watermark_delay_ms(column: str, expression: str) -> int | None:
    """The delay of a ``WATERMARK FOR column AS expression``: 0 for ``column``, n ms for
    ``column - INTERVAL 'n' UNIT``; None for any other expression.

    Example:
        >>> watermark_delay_ms("ts", "ts - INTERVAL '5' SECOND")
        5000
    """
    tokens = [t for t in tokenize(expression) if t.kind != EOF]
    name = column.split(".")[-1].strip("`").upper()
    if not tokens or tokens[0].kind not in (IDENT, QIDENT) or tokens[0].value.upper() != name:
        return None
    if len(tokens) == 1:
        return 0
    if not (tokens[1].kind == SYMBOL and tokens[1].value == "-"):
        return None
    try:
        return _QueryRewriter(tokens).interval_ms(2, len(tokens))
    except FlinkSqlError:
        return None


def having_as_row_kind(text: str, start: int = 0, end: int | None = None) -> str:
    """The aggregate query at ``text[start:end]`` with its top-level ``HAVING`` turned into a
    last column, :data:`~..options.ROW_KIND`: ``'+U'`` for a group that passes it, ``'-D'``
    for one that does not. Run in update mode, a group whose aggregate changes so that it
    leaves the result is then deleted from an upsert sink, as Flink retracts it. Without a
    ``HAVING``, the query as it is.

    Example:
        >>> having_as_row_kind("SELECT k FROM t GROUP BY k HAVING COUNT(*) > 1")[:50]
        "SELECT k , CASE WHEN (COUNT(*) > 1) THEN '+U' ELSE"
    """
    from ..options import ROW_KIND

    end = len(text) if end is None else end
    tokens = _tokens(text, start, end)
    depth = 0
    found: dict[str, int] = {}
    stop = len(tokens)
    for at, tok in enumerate(tokens):
        if tok.kind == SYMBOL and tok.value in "([":
            depth += 1
        elif tok.kind == SYMBOL and tok.value in ")]":
            depth -= 1
        elif depth == 0 and tok.is_word("FROM", "HAVING") and tok.value.upper() not in found:
            found[tok.value.upper()] = at
        elif depth == 0 and "HAVING" in found and tok.is_word("ORDER", "LIMIT", "UNION"):
            stop = at
            break
    if "HAVING" not in found or "FROM" not in found:
        return text[start:end]
    having, source = found["HAVING"], found["FROM"]
    condition = text[tokens[having + 1].start : tokens[stop - 1].end]
    tail = text[tokens[stop].start : end] if stop < len(tokens) else ""
    return (
        f"{text[start : tokens[source].start]}, CASE WHEN ({condition}) THEN '+U' ELSE '-D' "
        f"END AS `{ROW_KIND}` {text[tokens[source].start : tokens[having].start]}{tail}"
    )


def legacy_session_as_tvf(text: str, start: int = 0, end: int | None = None) -> str | None:
    """The query at ``text[start:end]`` that groups by a legacy ``SESSION(ts, gap)`` group
    window, written with the ``SESSION`` window table function as Flink runs it (sessions per
    the other ``GROUP BY`` columns, the ``WHERE`` applied before the sessions form), or None for
    any other query (or a form this rewrite does not take: a join, an alias, a subquery).

    Example:
        >>> legacy_session_as_tvf("SELECT k, SESSION_END(ts, INTERVAL '1' MINUTE), COUNT(*) "
        ...     "FROM t GROUP BY k, SESSION(ts, INTERVAL '1' MINUTE)")[:60]
        'SELECT k, window_end, COUNT(*) FROM TABLE(SESSION(TABLE t PA'
    """
    end = len(text) if end is None else end
    tokens = _tokens(text, start, end)
    depth = 0
    at: dict[str, int] = {}
    for n, tok in enumerate(tokens):
        if tok.kind == SYMBOL and tok.value in "([":
            depth += 1
        elif tok.kind == SYMBOL and tok.value in ")]":
            depth -= 1
        elif depth == 0 and tok.is_word("FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT"):
            at.setdefault(tok.value.upper(), n)
    if "FROM" not in at or "GROUP" not in at or at["GROUP"] + 1 == len(tokens):
        return None
    if not tokens[at["GROUP"] + 1].is_word("BY"):
        return None
    after_from = min(at.get(w, len(tokens)) for w in ("WHERE", "GROUP", "HAVING", "ORDER"))
    table = tokens[at["FROM"] + 1 : after_from]
    dotted = all(
        (t.kind in (IDENT, QIDENT)) if i % 2 == 0 else (t.kind == SYMBOL and t.value == ".")
        for i, t in enumerate(table)
    )
    if not table or len(table) % 2 == 0 or not dotted:
        return None  # a join, an alias or a subquery: not rewritten
    group_stop = min(at.get(w, len(tokens)) for w in ("HAVING", "ORDER", "LIMIT"))
    items = top_level_spans(tokens, lambda t: _role(t, _comma), at["GROUP"] + 2, group_stop)
    windows = [
        (a, b)
        for a, b in items
        if a + 1 < b and tokens[a].is_word("SESSION") and tokens[a + 1].value == "("
    ]
    if len(windows) != 1:
        return None
    (w_start, w_stop) = windows[0]

    def piece(a: int, b: int) -> str:
        return text[tokens[a].start : tokens[b - 1].end] if a < b else ""

    arguments = top_level_spans(tokens, lambda t: _role(t, _comma), w_start + 2, w_stop - 1)
    if len(arguments) != 2:
        return None
    time_column, gap = (piece(a, b) for a, b in arguments)
    keys = [piece(a, b) for a, b in items if (a, b) != windows[0]]
    partition = f" PARTITION BY {', '.join(keys)}" if keys else ""
    where = piece(at["WHERE"], at["GROUP"]) if "WHERE" in at else ""
    data = (
        f"(SELECT * FROM {piece(at['FROM'] + 1, after_from)} {where})"
        if where
        else (piece(at["FROM"] + 1, after_from))
    )
    helpers = {"SESSION_START": "window_start", "SESSION_END": "window_end",
               "SESSION_ROWTIME": "window_time"}  # fmt: skip
    out: list[str] = []
    cursor = start
    n = 0
    rowtime = False  # SESSION_ROWTIME selected: window_time is grouped by too
    walker = _QueryRewriter(tokens)
    while n < at["FROM"]:  # the select list: the helpers as the window columns
        tok = tokens[n]
        helper = helpers.get(tok.value.upper()) if tok.kind == IDENT else None
        if helper and n + 1 < len(tokens) and tokens[n + 1].value == "(":
            close = walker.closing(n + 1)
            out.append(text[cursor : tok.start] + helper)
            rowtime = rowtime or helper == "window_time"
            cursor = tokens[close].end
            n = close + 1
            continue
        if tok.kind == IDENT and tok.value.upper().startswith("SESSION_"):
            return None  # SESSION_PROCTIME: not rewritten
        n += 1
    out.append(text[cursor : tokens[at["FROM"]].start])
    columns = "window_start, window_end" + (", window_time" if rowtime else "")
    group = [piece(a, b) if (a, b) != windows[0] else columns for a, b in items]
    tail = text[tokens[group_stop].start : end] if group_stop < len(tokens) else ""
    return (
        f"{''.join(out)}FROM TABLE(SESSION(TABLE {data}{partition}, DESCRIPTOR({time_column}), "
        f"{gap})) GROUP BY {', '.join(group)} {tail}"
    ).rstrip()


def with_row_kind(text: str, start: int = 0, end: int | None = None) -> str:
    """The query at ``text[start:end]`` with :data:`~..options.ROW_KIND` as its last column
    (before its top-level ``FROM``): a changelog the query reads passes its row kinds on."""
    from ..options import ROW_KIND

    end = len(text) if end is None else end
    tokens = _tokens(text, start, end)
    spans = top_level_spans(tokens, lambda t: _role(t, lambda u: u.is_word("FROM")), 0, len(tokens))
    if len(spans) < 2:
        return text[start:end]
    source = tokens[spans[0][1]].start
    return f"{text[start:source]}, `{ROW_KIND}` {text[source:end]}"


def translate_expression(text: str) -> str:
    """Translate one Flink SQL expression (a computed column, a filter) to Spark SQL."""
    return translate_query(text).text
