"""Flink SQL scripts → statements: CREATE TABLE / VIEW, INSERT INTO and SET.

Kafka tables are validated into a :class:`KafkaTableSpec` with their columns and primary key;
the target of an ``INSERT INTO`` is validated again as a sink. Queries are kept as text (Spark
runs them); only the tables they read are picked out.
"""

from __future__ import annotations

import dataclasses
import warnings

from ..errors import FlinkSqlError, KafkaOptionsError, KafkaOptionsWarning
from ..options import (
    CONNECTORS,
    Column,
    FlinkTypeError,
    KafkaTableSpec,
    is_secret,
    parse_flink_type,
)
from .lexer import EOF, IDENT, QIDENT, STRING, SYMBOL, Token, tokenize
from .queries import query_sources
from .reserved import RESERVED_WORDS
from .statements import CreateTable, CreateView, InsertInto, SetOption, Statement, Watermark
from .translate import translate_query

_COLUMN_STOP = ("METADATA", "COMMENT", "PRIMARY", "CONSTRAINT")
_QUERY_START = ("SELECT", "WITH", "VALUES", "TABLE")


class _Parser:
    def __init__(self, text: str, strict: bool) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.strict = strict
        self.soft_error: KafkaOptionsError | None = None
        self.first_tokens: list[Token] = []
        #: Inside a WITH list or SET after a secret option's key: messages quote no token (a
        #: password cut short by a stray quote reads as words).
        self.secret = False

    # -- token helpers ---------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def ahead(self, n: int) -> Token:
        return self.tokens[min(self.i + n, len(self.tokens) - 1)]

    def found(self, tok: Token | None = None) -> str:
        """How messages name ``tok`` (default: the current token)."""
        return (tok or self.tok).describe(quote=not self.secret)

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind != EOF:
            self.i += 1
        return tok

    def error(
        self, message: str, tok: Token | None = None, keys: tuple[str, ...] = ()
    ) -> Exception:
        tok = tok or self.tok
        return FlinkSqlError(message, line=tok.line, column=tok.column, keys=keys)

    def soft(self, exc: KafkaOptionsError | str, tok: Token, context: str = "") -> None:
        """A validation error: raised when strict, else remembered for the statement."""
        message = str(exc) if isinstance(exc, KafkaOptionsError) else exc
        keys = exc.keys if isinstance(exc, KafkaOptionsError) else ()
        err = FlinkSqlError(f"{context}{message}", line=tok.line, column=tok.column, keys=keys)
        if self.strict:
            raise err
        self.soft_error = self.soft_error or err

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence ``words`` if it comes next."""
        if all(self.ahead(k).is_word(w) for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)} but found {self.found()}")

    def accept_symbol(self, symbol: str) -> bool:
        if self.tok.kind == SYMBOL and self.tok.value == symbol:
            self.i += 1
            return True
        return False

    def expect_symbol(self, symbol: str) -> Token:
        tok = self.tok
        if not self.accept_symbol(symbol):
            raise self.error(f"expected '{symbol}' but found {self.found(tok)}")
        return tok

    def ident(self, what: str = "an identifier") -> str:
        if self.tok.kind not in (IDENT, QIDENT):
            raise self.error(f"expected {what} but found {self.found()}")
        if self.tok.kind == IDENT and self.tok.value.upper() in RESERVED_WORDS:
            word = self.tok.value
            raise self.error(
                f"expected {what} but found {word.upper()}, a reserved word of Flink SQL: "
                f"quote it (`{word}`), as Flink requires"
            )
        return self.advance().value

    def qualified_name(self) -> tuple[str, ...]:
        parts = [self.ident("a table name")]
        while self.tok.kind == SYMBOL and self.tok.value == "." and len(parts) < 3:
            self.advance()
            parts.append(self.ident("a name part"))
        return tuple(parts)

    def string(self, what: str) -> str:
        if self.tok.kind != STRING:
            raise self.error(f"expected {what} (a string literal) but found {self.found()}")
        return self.advance().value

    def ident_list(self) -> tuple[str, ...]:
        self.expect_symbol("(")
        names = [self.ident("a column name")]
        while self.accept_symbol(","):
            names.append(self.ident("a column name"))
        self.expect_symbol(")")
        return tuple(names)

    def until(self, *, angle: bool = False) -> list[Token]:
        """Tokens up to a depth-0 ',' or ')' (or ';' / end), tracking nested brackets."""
        out: list[Token] = []
        depth = 0
        while True:
            tok = self.tok
            if tok.kind == EOF or (tok.kind == SYMBOL and tok.value == ";"):
                return out
            opening = tok.kind == SYMBOL and (tok.value in "([" or (angle and "<" in tok.value))
            closing = tok.kind == SYMBOL and (tok.value in ")]" or (angle and ">" in tok.value))
            if depth == 0 and tok.kind == SYMBOL and tok.value in (",", ")"):
                return out
            if depth == 0 and angle and tok.kind == IDENT and tok.value.upper() in _COLUMN_STOP:
                return out
            if depth == 0 and not angle and tok.is_word("COMMENT"):
                return out
            if angle and tok.kind == SYMBOL and tok.value == "<>":
                pass
            elif opening:
                depth += 1
            elif closing:
                depth -= 1
            out.append(self.advance())

    def source_text(self, tokens: list[Token]) -> str:
        return self.text[tokens[0].start : tokens[-1].end] if tokens else ""

    @staticmethod
    def span(tokens: list[Token]) -> tuple[int, int]:
        """Where ``tokens`` lie in the script (character offsets), for the translator."""
        return (tokens[0].start, tokens[-1].end) if tokens else (0, 0)

    def rest(self, what: str) -> tuple[str, list[Token]]:
        """Everything up to ';' or the end: a query, kept as text."""
        start = self.i
        while self.tok.kind != EOF and not (self.tok.kind == SYMBOL and self.tok.value == ";"):
            self.advance()
        tokens = self.tokens[start : self.i]
        if not tokens:
            raise self.error(f"expected {what} but found {self.found()}")
        return self.source_text(tokens), tokens

    # -- statements ------------------------------------------------------------------------
    def script(self) -> list[Statement]:
        statements: list[Statement] = []
        sets = 0
        in_set: Token | None = None  # the BEGIN / EXECUTE of the open statement set
        while self.tok.kind != EOF:
            if self.accept_symbol(";"):
                continue
            first = self.tok
            if in_set is None and (
                self.accept("EXECUTE", "STATEMENT", "SET", "BEGIN")
                or (self.accept("BEGIN", "STATEMENT", "SET") and self.expect_symbol(";"))
            ):
                in_set, sets = first, sets + 1
                continue
            if in_set is not None and self.accept("END"):
                in_set = None
                continue
            self.soft_error = None
            self.first_tokens.append(self.tok)
            statement = self.statement()
            if in_set is not None:
                if not isinstance(statement, InsertInto):
                    raise self.error("a statement set holds only INSERT INTO statements", first)
                statement = dataclasses.replace(statement, statement_set=sets)
            statements.append(statement)
            if self.tok.kind != EOF:
                self.expect_symbol(";")
        if in_set is not None:
            raise self.error("the statement set is never closed with END", in_set)
        return statements

    def statement(self) -> Statement:
        first = self.tok
        if self.accept("CREATE"):
            temporary = self.accept("TEMPORARY")
            if self.accept("TABLE"):
                return self.create_table(first, temporary)
            if self.accept("VIEW"):
                return self.create_view(first, temporary)
            raise self.error(f"expected TABLE or VIEW after CREATE but found {self.found()}")
        if self.accept("INSERT"):
            return self.insert(first)
        if self.accept("SET"):
            key = self.string("an option key")
            self.secret = is_secret(key)
            self.expect_symbol("=")
            value = self.string("an option value")
            self.secret = False
            return SetOption(key, value, line=first.line)
        raise self.error(
            f"unsupported statement starting with {self.found(first)}; supported are CREATE "
            f"TABLE, CREATE VIEW, INSERT INTO and SET"
        )

    def create_table(self, first: Token, temporary: bool) -> CreateTable:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name_tok = self.tok
        qname = self.qualified_name()
        columns: list[Column] = []
        primary_key: tuple[str, ...] = ()
        watermark: Watermark | None = None
        if self.tok.kind == SYMBOL and self.tok.value == "(":
            columns, primary_key, watermark = self.table_elements()
        comment = self.string("a comment") if self.accept("COMMENT") else None
        partition_keys = self.ident_list() if self.accept("PARTITIONED", "BY") else ()
        with_tok = self.tok
        options = self.options() if self.accept("WITH") else {}
        if self.tok.is_word("LIKE"):
            raise self.error("CREATE TABLE ... LIKE is not supported; declare the table fully")
        as_query: str | None = None
        sources: tuple[str, ...] = ()
        span = (0, 0)
        if self.accept("AS"):
            as_query, tokens = self.rest("a query after AS")
            sources, span = query_sources(tokens), self.span(tokens)
        table = CreateTable(
            name=qname[-1],
            qualified_name=qname,
            columns=tuple(columns),
            primary_key=primary_key,
            watermark=watermark,
            options=options,
            spec=None,
            temporary=temporary,
            if_not_exists=if_not_exists,
            comment=comment,
            partition_keys=partition_keys,
            as_query=as_query,
            sources=sources,
            line=first.line,
            query_span=span,
        )
        return self.validate(table, with_tok if options else name_tok)

    def validate(self, table: CreateTable, tok: Token, role: str | None = None) -> CreateTable:
        target = " (the target of INSERT INTO)" if role == "sink" else ""
        context = f"table '{table.name}'{target}: "
        if table.watermark is not None:
            self.check_watermark(table, tok, context)
        if not table.supported:
            connector = (table.connector or "").strip().lower()
            if connector in CONNECTORS and table.connector not in CONNECTORS:
                self.soft(
                    KafkaOptionsError(
                        f"connector identifiers are case-sensitive: write '{connector}'.",
                        keys=("connector",),
                    ),
                    tok,
                    context,
                )
            return dataclasses.replace(table, error=self.soft_error)
        if table.partition_keys:
            self.soft("Kafka tables cannot be PARTITIONED BY.", tok, context)
        spec = None
        if self.soft_error is None:
            try:
                spec = KafkaTableSpec.from_options(
                    table.options,
                    columns=table.columns,
                    primary_key=table.primary_key,
                    role=role,
                    name=table.name,
                )
            except KafkaOptionsError as exc:
                self.soft(exc, tok, context)
        return dataclasses.replace(table, spec=spec, error=self.soft_error)

    def check_watermark(self, table: CreateTable, tok: Token, context: str) -> None:
        assert table.watermark is not None
        root = table.watermark.column.split(".")[0]
        column = next((c for c in table.columns if c.name == root), None)
        if column is None:
            self.soft(
                f"the rowtime attribute '{root}' of the WATERMARK is not a column.", tok, context
            )
        elif "." not in table.watermark.column and not column.is_computed:
            t = column.flink_type
            if t.name not in ("TIMESTAMP", "TIMESTAMP_LTZ") or (t.params and t.params[0] > 3):
                self.soft(
                    f"the rowtime attribute '{root}' must be of type TIMESTAMP(p) or "
                    f"TIMESTAMP_LTZ(p) with p from 0 to 3, not {t}.",
                    tok,
                    context,
                )

    def table_elements(self) -> tuple[list[Column], tuple[str, ...], Watermark | None]:
        self.expect_symbol("(")
        columns: list[Column] = []
        primary_key: tuple[str, ...] = ()
        watermark: Watermark | None = None
        if self.accept_symbol(")"):
            return columns, primary_key, watermark
        while True:
            tok = self.tok
            if tok.is_word("CONSTRAINT") or (
                tok.is_word("PRIMARY") and self.ahead(1).is_word("KEY")
            ):
                if self.accept("CONSTRAINT"):
                    self.ident("a constraint name")
                self.expect("PRIMARY", "KEY")
                names = self.ident_list()
                primary_key = self.set_primary_key(primary_key, names, tok)
            elif tok.is_word("WATERMARK") and self.ahead(1).is_word("FOR"):
                if watermark is not None:
                    raise self.error("a table can declare only one WATERMARK", tok)
                self.expect("WATERMARK", "FOR")
                parts = [self.ident("the rowtime column")]
                while self.accept_symbol("."):
                    parts.append(self.ident("a field name"))
                self.expect("AS")
                expression = self.source_text(self.until())
                if not expression:
                    raise self.error("expected the watermark expression after AS")
                watermark = Watermark(".".join(parts), expression)
            else:
                column, is_key = self.column()
                columns.append(column)
                if is_key:
                    primary_key = self.set_primary_key(primary_key, (column.name,), tok)
            if self.accept_symbol(")"):
                return columns, primary_key, watermark
            if not self.accept_symbol(","):
                raise self.error(f"expected ',' or ')' but found {self.found()}")

    def set_primary_key(
        self, current: tuple[str, ...], names: tuple[str, ...], tok: Token
    ) -> tuple[str, ...]:
        if current:
            raise self.error("a table can declare only one PRIMARY KEY", tok)
        if not self.accept("NOT", "ENFORCED"):
            raise self.error(
                "Flink doesn't support ENFORCED mode for PRIMARY KEY constraints: declare it "
                "PRIMARY KEY (...) NOT ENFORCED"
            )
        return names

    def column(self) -> tuple[Column, bool]:
        name = self.ident("a column name")
        if self.accept("AS"):
            tokens = self.until()
            if not tokens:
                raise self.error(f"expected an expression for computed column '{name}'")
            # the reader evaluates computed columns with Spark: keep the Spark SQL translation
            translated = translate_query(self.text, *self.span(tokens))
            if translated.stateful:
                what, at_line, at_column = translated.stateful[0]
                raise FlinkSqlError(
                    f"computed column '{name}' cannot use {what}", line=at_line, column=at_column
                )
            expression = translated.text
            comment = self.string("a comment") if self.accept("COMMENT") else None
            return Column(name, expression=expression, comment=comment), False
        type_tok = self.tok
        type_tokens = self.until(angle=True)
        if not type_tokens or type_tokens[0].kind != IDENT:
            raise self.error(
                f"expected the type of column '{name}' but found {self.found(type_tok)}", type_tok
            )
        try:
            parse_flink_type(" ".join(t.text for t in type_tokens))
        except FlinkTypeError as exc:
            raise self.error(
                f"column '{name}' has an invalid type: {exc.reason}", type_tok
            ) from None
        metadata_key, virtual, comment, is_key = None, False, None, False
        while True:
            if self.accept("METADATA"):
                metadata_key = self.string("a metadata key") if self.accept("FROM") else name
                virtual = self.accept("VIRTUAL")
            elif self.tok.is_word("PRIMARY", "CONSTRAINT"):
                if self.accept("CONSTRAINT"):
                    self.ident("a constraint name")
                self.expect("PRIMARY", "KEY")
                is_key = True
            elif self.accept("COMMENT"):
                comment = self.string("a comment")
            else:
                break
        type_text = " ".join(t.text for t in type_tokens)
        try:
            column = Column(
                name, type_text, metadata_key=metadata_key, virtual=virtual, comment=comment
            )
        except KafkaOptionsError as exc:
            raise self.error(str(exc), type_tokens[0]) from None
        return column, is_key

    def options(self) -> dict[str, str]:
        self.expect_symbol("(")
        options: dict[str, str] = {}
        if self.accept_symbol(")"):
            return options
        while True:
            key_tok = self.tok
            key = self.string("an option key such as 'connector'")
            self.secret = self.secret or is_secret(key)
            self.expect_symbol("=")
            value = self.string(f"the value of option '{key[:60]}'")
            if key in options:
                self.soft(KafkaOptionsError(f"option '{key}' is set twice.", keys=(key,)), key_tok)
            options[key] = value
            if self.accept_symbol(")"):
                self.secret = False
                return options
            if not self.accept_symbol(","):
                raise self.error(
                    f"expected ',' or ')' after the value of option '{key[:60]}' but found "
                    f"{self.found()} (a quote inside a value is written twice: '')"
                )

    def create_view(self, first: Token, temporary: bool) -> CreateView:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        qname = self.qualified_name()
        names: tuple[str, ...] = ()
        if self.tok.kind == SYMBOL and self.tok.value == "(":
            names = self.ident_list()
        if self.accept("COMMENT"):
            self.string("a comment")
        self.expect("AS")
        query, tokens = self.rest("the view's query")
        return CreateView(
            qname[-1],
            qname,
            query,
            temporary,
            if_not_exists,
            names,
            query_sources(tokens),
            first.line,
            self.span(tokens),
        )

    def insert(self, first: Token) -> InsertInto:
        overwrite = self.accept("OVERWRITE")
        if not overwrite:
            self.expect("INTO")
        qname = self.qualified_name()
        if self.accept("PARTITION"):
            self.expect_symbol("(")
            self.until()
            self.expect_symbol(")")
        names: tuple[str, ...] = ()
        if (
            self.tok.kind == SYMBOL
            and self.tok.value == "("
            and not (self.ahead(1).is_word(*_QUERY_START) or self.ahead(1).value == "(")
        ):
            names = self.ident_list()
        query_tok = self.tok
        query, tokens = self.rest("a query (SELECT, VALUES, ...)")
        if not (query_tok.is_word(*_QUERY_START) or query_tok.value == "("):
            raise self.error(f"expected a query but found {self.found(query_tok)}", query_tok)
        return InsertInto(
            ".".join(qname),
            qname,
            query,
            overwrite,
            names,
            query_sources(tokens),
            None,
            first.line,
            self.span(tokens),
        )


def parse_flink_sql(text: str, *, strict: bool = True) -> list[Statement]:
    """Parse a Flink SQL script into its statements, validating the Kafka tables it declares.

    Supported statements: ``CREATE [TEMPORARY] TABLE [IF NOT EXISTS] [catalog.db.]name
    (columns, PRIMARY KEY, WATERMARK) [COMMENT] [PARTITIONED BY] WITH (...) [AS query]``,
    ``CREATE [TEMPORARY] VIEW name AS query``, ``INSERT INTO|OVERWRITE name query`` and
    ``SET 'key' = 'value'``, separated by ';'. Tables of other connectors parse as
    :class:`CreateTable` with ``supported`` False. A table that is the target of an
    ``INSERT INTO`` is validated as a sink, and a table the queries only read as a source
    (options of the other use are accepted with a ``KafkaOptionsWarning``).

    Args:
        text: the script.
        strict: raise on an invalid Kafka table (default); with False, such a table comes back
            with ``spec`` None and the reason in ``error``. Syntax errors always raise.

    Raises:
        FlinkSqlError: with the line and column of the offending token.

    Example:
        >>> stmts = parse_flink_sql('''
        ...     CREATE TABLE orders (id BIGINT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp')
        ...     WITH ('connector' = 'kafka', 'topic' = 'orders', 'format' = 'json');
        ...     INSERT INTO totals SELECT id FROM orders;
        ... ''')
        >>> stmts[0].spec.topics, stmts[1].sources
        (('orders',), ('orders',))
    """
    if not isinstance(text, str):
        raise KafkaOptionsError(f"A Flink SQL script must be a string, got {type(text).__name__}.")
    parser = _Parser(text, strict)
    statements = parser.script()
    return _link(parser, statements)


def _resolve(tables: dict[tuple[str, ...], int], qname: tuple[str, ...]) -> int | None:
    if qname in tables:
        return tables[qname]
    matches = [i for q, i in tables.items() if q[-1] == qname[-1]]
    return matches[0] if len(matches) == 1 else None


def _link(parser: _Parser, statements: list[Statement]) -> list[Statement]:
    """Declare tables once, validate INSERT targets as sinks and tables only read as sources,
    and point inserts at their targets."""
    out = list(statements)
    tables: dict[tuple[str, ...], int] = {}
    for idx, st in enumerate(out):
        if not isinstance(st, CreateTable):
            continue
        if st.qualified_name in tables and not st.if_not_exists:
            earlier = out[tables[st.qualified_name]].line
            parser.soft_error = st.error
            parser.soft(
                f"table '{st.name}' is already declared at line {earlier}.",
                parser.first_tokens[idx],
            )
            out[idx] = dataclasses.replace(st, error=parser.soft_error)
        tables.setdefault(st.qualified_name, idx)
    read = {
        t_idx
        for st in out
        for name in getattr(st, "sources", ())
        if (t_idx := _resolve(tables, tuple(name.split(".")))) is not None
    }
    for idx, st in enumerate(out):
        if not isinstance(st, InsertInto):
            continue
        t_idx = _resolve(tables, st.qualified_name)
        table = out[t_idx] if t_idx is not None else None
        if isinstance(table, CreateTable) and table.spec is not None and table.spec.role != "sink":
            parser.soft_error = None
            tok = parser.first_tokens[idx]
            with warnings.catch_warnings():
                if t_idx in read:  # also read: its scan options do take effect
                    warnings.simplefilter("ignore", KafkaOptionsWarning)
                out[t_idx] = parser.validate(table, tok, role="sink")  # type: ignore[index]
    for t_idx in read:
        table = out[t_idx]
        if isinstance(table, CreateTable) and table.spec is not None and table.spec.role is None:
            out[t_idx] = dataclasses.replace(table, spec=table.spec.for_role("source"))
    for idx, st in enumerate(out):
        if isinstance(st, InsertInto):
            t_idx = _resolve(tables, st.qualified_name)
            if t_idx is not None:
                out[idx] = dataclasses.replace(st, table=out[t_idx])  # type: ignore[arg-type]
    return out
