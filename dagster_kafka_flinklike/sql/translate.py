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
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import FlinkSqlError, KafkaOptionsError
from ..options import parse_flink_type
from .lexer import EOF, IDENT, NUMBER, STRING, SYMBOL, Token, tokenize
from .queries import table_references

__all__ = [
    "WINDOW_BOUNDS",
    "SparkQuery",
    "WindowCall",
    "spark_string",
    "translate_expression",
    "translate_query",
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
    "SESSION": "SESSION windows close on gaps in event time across runs; use TUMBLE, HOP or "
    "CUMULATE",
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


#: The named parameters (epoch milliseconds, or NULL for no bound) of a translated query that
#: has hopping windows: only windows ending in ``(start, end]`` are kept, so a run over a time
#: partition emits the windows that end in it, though it reads records from before its start.
WINDOW_BOUNDS = ("dkf_window_start", "dkf_window_end")


@dataclass(frozen=True)
class SparkQuery:
    """A Flink SQL query translated to Spark SQL.

    Attributes:
        text: the Spark SQL text.
        stateful: the stateful operations found, each ``(what, line, column)``: e.g.
            ``("GROUP BY", 3, 1)``, ``("JOIN", 2, 18)``, ``("COUNT", 1, 8)``.
        windows: the window functions (table-valued or group windows) the query uses.
    """

    text: str
    stateful: tuple[tuple[str, int, int], ...] = ()
    windows: tuple[WindowCall, ...] = ()


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


class _Translator:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.stateful: list[tuple[str, int, int]] = []
        self.windows: list[WindowCall] = []
        # qualified table names (catalog.database.table): Spark reads the table's view by name
        self.qualified = {
            start: end for _, start, end in table_references(tokens) if end - start > 1
        }

    # -- helpers ---------------------------------------------------------------------------
    def error(self, message: str, tok: Token) -> FlinkSqlError:
        return FlinkSqlError(message, line=tok.line, column=tok.column)

    def sym(self, i: int, value: str) -> bool:
        return (
            i < len(self.tokens)
            and self.tokens[i].kind == SYMBOL
            and (self.tokens[i].value == value)
        )

    def close(self, i: int) -> int:
        """The index of the bracket closing the one at ``i``."""
        opening = self.tokens[i].value
        closing = {"(": ")", "[": "]"}[opening]
        depth = 0
        for j in range(i, len(self.tokens)):
            tok = self.tokens[j]
            if tok.kind == SYMBOL and tok.value in "([":
                depth += 1
            elif tok.kind == SYMBOL and tok.value in ")]":
                depth -= 1
                if depth == 0:
                    if tok.value != closing:
                        raise self.error(f"'{opening}' closed by '{tok.value}'", tok)
                    return j
        raise self.error(f"'{opening}' is never closed", self.tokens[i])

    def args(self, i: int, j: int) -> list[tuple[int, int]]:
        """Top-level comma-separated ranges of tokens[i:j]."""
        out, start, depth = [], i, 0
        for k in range(i, j):
            tok = self.tokens[k]
            if tok.kind == SYMBOL and tok.value in "([":
                depth += 1
            elif tok.kind == SYMBOL and tok.value in ")]":
                depth -= 1
            elif depth == 0 and tok.kind == SYMBOL and tok.value == ",":
                out.append((start, k))
                start = k + 1
        if start < j:
            out.append((start, j))
        return out

    # -- the walk --------------------------------------------------------------------------
    def seq(self, i: int, j: int) -> str:
        """Spark SQL for tokens[i:j]."""
        out: list[str] = []
        k = i
        while k < j:
            piece, k = self.primary(k, j)
            while self.sym(k, "[") and k < j:
                end = self.close(k)
                piece = f"try_element_at({piece}, {self.seq(k + 1, end)})"
                k = end + 1
            out.append(piece)
        return " ".join(p for p in out if p)

    def primary(self, k: int, j: int) -> tuple[str, int]:
        tok = self.tokens[k]
        if tok.kind == STRING:
            return spark_string(tok.value), k + 1
        if tok.kind == EOF:
            return "", k + 1
        if tok.kind == SYMBOL and tok.value == "(":
            end = self.close(k)
            return f"({self.seq(k + 1, end)})", end + 1
        if k in self.qualified:
            last = self.qualified[k] - 1
            return self.tokens[last].text, last + 1
        if tok.kind != IDENT:
            return tok.text, k + 1
        word = tok.value.upper()
        if word in _REFUSED:
            raise self.error(_REFUSED[word], tok)
        if word == "FOR" and k + 1 < j and self.tokens[k + 1].is_word("SYSTEM_TIME"):
            raise self.error(
                "FOR SYSTEM_TIME AS OF (temporal joins) needs versioned state across runs; not "
                "supported on bounded runs",
                tok,
            )
        if word in ("GROUP", "ORDER") and k + 1 < j and self.tokens[k + 1].is_word("BY"):
            self.stateful.append((f"{word} BY", tok.line, tok.column))
        elif word in ("JOIN", "OVER", "LIMIT", "INTERSECT", "EXCEPT", "MINUS") or (
            word == "DISTINCT" and k > 0 and self.tokens[k - 1].is_word("SELECT")
        ):  # COUNT(DISTINCT x) is an aggregate's own state, counted with the aggregate
            self.stateful.append((word, tok.line, tok.column))
        elif word == "UNION" and not (k + 1 < j and self.tokens[k + 1].is_word("ALL")):
            self.stateful.append(("UNION", tok.line, tok.column))
        if word == "TABLE" and self.sym(k + 1, "("):
            return self.window_tvf(k)
        if word == "TIMESTAMP" and k + 1 < j and self.tokens[k + 1].kind == STRING:
            return f"TIMESTAMP_NTZ {spark_string(self.tokens[k + 1].value)}", k + 2
        if word in ("ARRAY", "MAP") and self.sym(k + 1, "["):
            end = self.close(k + 1)
            return f"{word.lower()}({self.seq(k + 2, end)})", end + 1
        if self.sym(k + 1, "("):
            end = self.close(k + 1)
            return self.call(k, end), end + 1
        return tok.text, k + 1

    def call(self, k: int, end: int) -> str:
        name = self.tokens[k].value.upper()
        args = self.args(k + 2, end)
        if name in AGGREGATES:
            self.stateful.append((name, self.tokens[k].line, self.tokens[k].column))
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, k, args)
        rename = FUNCTIONS.get(name, self.tokens[k].text)
        return f"{rename}({', '.join(self.seq(a, b) for a, b in args)})"

    # -- rewrites --------------------------------------------------------------------------
    def cast(self, k: int, args: list[tuple[int, int]]) -> str:
        if len(args) != 1:
            raise self.error("expected CAST(value AS type)", self.tokens[k])
        a, b = args[0]
        depth, at = 0, -1
        for m in range(a, b):
            tok = self.tokens[m]
            if tok.kind == SYMBOL and tok.value in "([":
                depth += 1
            elif tok.kind == SYMBOL and tok.value in ")]":
                depth -= 1
            elif depth == 0 and tok.is_word("AS"):
                at = m
        if at < 0:
            raise self.error("expected CAST(value AS type)", self.tokens[k])
        type_text = " ".join(t.text for t in self.tokens[at + 1 : b])
        try:
            spark = _spark_type(type_text)
        except KafkaOptionsError as exc:
            raise self.error(str(exc), self.tokens[at + 1]) from None
        return f"{self.tokens[k].value.upper()}({self.seq(a, at)} AS {spark})"

    def interval_ms(self, a: int, b: int) -> int:
        """The milliseconds of ``INTERVAL 'n' UNIT`` in tokens[a:b]."""
        toks = self.tokens[a:b]
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
            self.tokens[a] if a < b else self.tokens[max(a - 1, 0)],
        )

    def window_tvf(self, k: int) -> tuple[str, int]:
        """``TABLE(TUMBLE|HOP|CUMULATE(...))`` as a subquery adding the window columns."""
        outer_end = self.close(k + 1)
        fn = self.tokens[k + 2]
        if not (fn.kind == IDENT and self.sym(k + 3, "(")):
            raise self.error("expected a window function (TUMBLE, HOP, CUMULATE) in TABLE(...)", fn)
        kind = fn.value.upper()
        if kind not in ("TUMBLE", "HOP", "CUMULATE"):
            raise self.error(
                f"table function {fn.value} has no translation; the window functions TUMBLE, "
                f"HOP and CUMULATE do",
                fn,
            )
        inner_end = self.close(k + 3)
        if inner_end + 1 != outer_end:
            raise self.error("expected ')' after the window function", self.tokens[inner_end + 1])
        named: dict[str, tuple[int, int]] = {}
        positional: list[tuple[int, int]] = []
        for a, b in self.args(k + 4, inner_end):
            named_arg = self.tokens[a].kind == IDENT and self.sym(a + 1, "=")
            if b - a > 2 and named_arg and self.sym(a + 2, ">"):
                named[self.tokens[a].value.upper()] = (a + 3, b)
                continue
            positional.append((a, b))
        order = {
            "TUMBLE": ["DATA", "TIMECOL", "SIZE", "OFFSET"],
            "HOP": ["DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"],
            "CUMULATE": ["DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"],
        }[kind]
        for name, rng in zip(order, positional, strict=False):
            named.setdefault(name, rng)
        missing = [n for n in order[:-1] if n not in named]
        if missing:
            raise self.error(f"{kind} needs {', '.join(missing)}", fn)
        a, b = named["DATA"]
        if not self.tokens[a].is_word("TABLE"):
            raise self.error(f"{kind}'s first argument is TABLE <name>", self.tokens[a])
        data = self.seq(a + 1, b)
        a, b = named["TIMECOL"]
        if not (self.tokens[a].is_word("DESCRIPTOR") and self.sym(a + 1, "(")):
            raise self.error(f"{kind}'s time column is DESCRIPTOR(<column>)", self.tokens[a])
        column = self.seq(a + 2, self.close(a + 1))
        size = self.interval_ms(*named["SIZE"])
        step = self.interval_ms(*named[{"TUMBLE": "SIZE", "HOP": "SLIDE"}.get(kind, "STEP")])
        offset = self.interval_ms(*named["OFFSET"]) if "OFFSET" in named else 0
        if kind == "CUMULATE" and size % step:
            raise self.error("CUMULATE's size must be a multiple of its step", fn)
        bounded = kind == "HOP" and step != size
        self.windows.append(
            WindowCall(kind, column, size, step, offset, fn.line, fn.column, bounded)
        )
        return _window_subquery(kind, data, column, size, step, offset), outer_end + 1

    def group_window(self, k: int, args: list[tuple[int, int]]) -> str:
        """Legacy group windows: ``TUMBLE(ts, size)``, ``HOP(ts, slide, size)`` and helpers."""
        name = self.tokens[k].value.upper()
        kind, _, part = name.partition("_")
        if kind == "SESSION":
            raise self.error(_REFUSED["SESSION"], self.tokens[k])
        want = 2 if kind == "TUMBLE" else 3
        if len(args) not in (want, want + 1):
            raise self.error(
                f"{kind} takes the time column and {want - 1} interval(s)", self.tokens[k]
            )
        column = self.seq(*args[0])
        first = self.interval_ms(*args[1])
        size, slide = (first, first) if kind == "TUMBLE" else (self.interval_ms(*args[2]), first)
        offset = self.interval_ms(*args[want]) if len(args) > want else 0
        if not part:
            tok = self.tokens[k]
            self.windows.append(WindowCall(kind, column, size, slide, offset, tok.line, tok.column))
        window = _spark_window(column, size, slide, offset)
        return {
            "": window,
            "START": f"{window}.start",
            "END": f"{window}.end",
            "ROWTIME": f"({window}.end - INTERVAL '0.001' SECOND)",
            "PROCTIME": "current_timestamp()",
        }[part]

    def row(self, k: int, args: list[tuple[int, int]]) -> str:
        return f"struct({', '.join(self.seq(a, b) for a, b in args)})"

    def json_value(self, k: int, args: list[tuple[int, int]]) -> str:
        name = self.tokens[k].value.upper()
        if len(args) != 2:
            raise self.error(f"{name} takes a JSON string and a path", self.tokens[k])
        a, b = args[1]
        path_end = a + 1
        if self.tokens[a].kind != STRING:
            raise self.error(f"{name}'s path must be a string literal", self.tokens[a])
        value = f"get_json_object({self.seq(*args[0])}, {spark_string(self.tokens[a].value)})"
        rest = self.tokens[path_end:b]
        if name == "JSON_EXISTS":
            if rest:
                raise self.error("JSON_EXISTS's ON ERROR clause has no translation", rest[0])
            return f"({value} IS NOT NULL)"
        if rest and rest[0].is_word("RETURNING") and name == "JSON_VALUE":
            stop = next(
                (i for i, t in enumerate(rest) if t.is_word("NULL", "DEFAULT", "ERROR")),
                len(rest),
            )
            try:
                spark = _spark_type(" ".join(t.text for t in rest[1:stop]))
            except KafkaOptionsError as exc:
                raise self.error(str(exc), rest[0]) from None
            value, rest = f"try_cast({value} AS {spark})", rest[stop:]
        words = " ".join(t.value.upper() for t in rest)
        if words not in ("", "NULL ON EMPTY", "NULL ON ERROR", "NULL ON EMPTY NULL ON ERROR"):
            raise self.error(
                f"{name}'s clause '{words}' has no translation (only NULL ON EMPTY/ERROR, "
                f"Flink's default)",
                rest[0],
            )
        return value

    def json_object(self, k: int, args: list[tuple[int, int]]) -> str:
        pairs: list[str] = []
        keep_nulls = True
        for a, b in args:
            toks = self.tokens[a:b]
            if toks and toks[0].is_word("KEY"):
                a += 1
                toks = toks[1:]
            words = [t.value.upper() for t in toks if t.kind == IDENT]
            if words[-3:] == ["ABSENT", "ON", "NULL"]:
                keep_nulls = False
                b -= 3
            elif words[-3:] == ["NULL", "ON", "NULL"] and toks[-3].is_word("NULL"):
                b -= 3
            at = next((m for m in range(a, b) if self.tokens[m].is_word("VALUE")), -1)
            if at < 0:
                raise self.error("expected KEY 'name' VALUE expression", self.tokens[a])
            pairs += [self.seq(a, at), self.seq(at + 1, b)]
        options = "" if not keep_nulls else ", map('ignoreNullFields', 'false')"
        return f"to_json(named_struct({', '.join(pairs)}){options})"

    def split_index(self, k: int, args: list[tuple[int, int]]) -> str:
        if len(args) != 3:
            raise self.error("SPLIT_INDEX takes a string, a separator and an index", self.tokens[k])
        text, sep, index = (self.seq(a, b) for a, b in args)
        return (
            f"(CASE WHEN ({index}) < 0 THEN NULL ELSE try_element_at(split({text}, "
            f"concat('\\\\Q', {sep}, '\\\\E'), -1), ({index}) + 1) END)"
        )

    def to_timestamp(self, k: int, args: list[tuple[int, int]]) -> str:
        texts = [self.seq(a, b) for a, b in args]
        if len(texts) == 1:
            texts.append("'yyyy-MM-dd HH:mm:ss'")
        return f"CAST(try_to_timestamp({', '.join(texts)}) AS TIMESTAMP_NTZ)"

    def to_timestamp_ltz(self, k: int, args: list[tuple[int, int]]) -> str:
        texts = [self.seq(a, b) for a, b in args]
        precision = texts[1].strip() if len(texts) > 1 else "3"
        fn = {"0": "timestamp_seconds", "3": "timestamp_millis"}.get(precision)
        if fn is None or len(texts) > 2:
            raise self.error("TO_TIMESTAMP_LTZ takes a number and precision 0 or 3", self.tokens[k])
        return f"{fn}({texts[0]})"

    def regexp_extract(self, k: int, args: list[tuple[int, int]]) -> str:
        texts = [self.seq(a, b) for a, b in args]
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


def _window_subquery(kind: str, data: str, column: str, size: int, step: int, offset: int) -> str:
    """Rows of ``data`` with Flink's ``window_start``, ``window_end`` and ``window_time``.

    Each row is kept whole in a struct (``__dkf_r``) so ``SELECT *`` over the result sees the
    table's columns and the three window columns, nothing else.
    """
    time = "window_end - INTERVAL '0.001' SECOND AS window_time"
    if kind in ("TUMBLE", "HOP"):
        w = _spark_window(column, size, step, offset)
        where = ""
        if step != size:  # hopping: keep the windows that end within the run's bounds
            end = "unix_millis(CAST(window_end AS TIMESTAMP))"
            lo, hi = (f"CAST(:{p} AS BIGINT)" for p in WINDOW_BOUNDS)
            where = f" WHERE ({lo} IS NULL OR {end} > {lo}) AND ({hi} IS NULL OR {end} <= {hi})"
        return (
            f"(SELECT __dkf_r.*, window_start, window_end, {time} FROM (SELECT __dkf_r, "
            f"__dkf_w.start AS window_start, __dkf_w.end AS window_end FROM (SELECT struct(*) "
            f"AS __dkf_r, {w} AS __dkf_w FROM {data})){where})"
        )
    # CUMULATE: windows [start, start + k * step) for every k whose end is past the row's time.
    w = _spark_window(column, size, size, offset)
    return (
        f"(SELECT __dkf_r.*, window_start, window_end, {time} FROM (SELECT __dkf_r, "
        f"__dkf_ws AS window_start, __dkf_ws + make_dt_interval(0, 0, 0, __dkf_k * {step / 1000}) "
        f"AS window_end FROM (SELECT struct(*) AS __dkf_r, {w}.start AS __dkf_ws FROM {data}) "
        f"LATERAL VIEW explode(sequence(CAST(floor(timestampdiff(MICROSECOND, __dkf_ws, "
        f"__dkf_r.{column}) / {step * 1000}) AS INT) + 1, {size // step})) __dkf_s AS __dkf_k))"
    )


FUNCTIONS: dict[str, str] = {
    "CURRENT_ROW_TIMESTAMP": "current_timestamp",
    "PROCTIME": "current_timestamp",
}
"""Flink functions that Spark spells differently (same arguments, same result)."""

_Handler = Callable[[_Translator, int, list[tuple[int, int]]], str]
_HANDLERS: dict[str, _Handler] = {
    "CAST": _Translator.cast,
    "TRY_CAST": _Translator.cast,
    "ROW": _Translator.row,
    "JSON_VALUE": _Translator.json_value,
    "JSON_QUERY": _Translator.json_value,
    "JSON_EXISTS": _Translator.json_value,
    "JSON_OBJECT": _Translator.json_object,
    "SPLIT_INDEX": _Translator.split_index,
    "TO_TIMESTAMP": _Translator.to_timestamp,
    "TO_TIMESTAMP_LTZ": _Translator.to_timestamp_ltz,
    "REGEXP_EXTRACT": _Translator.regexp_extract,
    **{
        f"{w}{p}": _Translator.group_window
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


def translate_query(text: str, start: int = 0, end: int | None = None) -> SparkQuery:
    """Translate the Flink SQL query at ``text[start:end]`` (a whole script is fine: positions
    in errors are the script's lines and columns).

    Raises:
        FlinkSqlError: a construct with no faithful translation, with its line and column.

    Example:
        >>> translate_query("SELECT PROCTIME() AS t, ROW(a, b) AS r FROM s").text
        'SELECT current_timestamp() AS t , struct(a, b) AS r FROM s'
    """
    end = len(text) if end is None else end
    tr = _Translator(_tokens(text, start, end))
    spark = tr.seq(0, len(tr.tokens))
    return SparkQuery(spark, tuple(tr.stateful), tuple(tr.windows))


def translate_expression(text: str) -> str:
    """Translate one Flink SQL expression (a computed column, a filter) to Spark SQL."""
    return translate_query(text).text
