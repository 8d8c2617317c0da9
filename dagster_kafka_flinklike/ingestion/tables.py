"""Table ids and the rules that select, route and map them, as Flink CDC pipelines read them.

- :class:`TableId`: one to three parts (``[namespace.]schema.table``, or a table alone),
  written joined with ``.``.
- :class:`Selectors` (``transform`` ``source-table``, ``sink.tableId-to-topic.mapping``):
  comma-separated selectors, each split on unescaped dots into one to three parts; each part is
  a regular expression matched in full, ignoring case; ``\\.`` is a regular-expression dot. A
  selector of n parts matches table ids of n parts.
- :class:`Route` (``route``): ``source-table`` becomes one regular expression over the whole
  table id (commas are alternatives, unescaped dots match a dot, ``\\.`` any character), matched
  in full; the sink table is ``sink-table`` with the ``replace-symbol`` replaced by the source
  table's name, or with the expression's groups (``$1``) substituted. Every route that matches
  applies; a table no route matches keeps its id.
- :class:`TopicMapping` (``sink.tableId-to-topic.mapping``): ``<selectors>:<topic>`` rules
  separated by ``;``; the first that matches names the topic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import KafkaOptionsError

__all__ = ["Route", "Selectors", "TableId", "TopicMapping", "route_table"]


@dataclass(frozen=True, order=True)
class TableId:
    """A table id: ``(table,)``, ``(schema, table)`` or ``(namespace, schema, table)``.

    Example:
        >>> t = TableId.parse("mydb.orders")
        >>> (str(t), t.schema_name, t.table_name)
        ('mydb.orders', 'mydb', 'orders')
    """

    parts: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> TableId:
        """``a``, ``a.b`` or ``a.b.c`` as a table id.

        Raises:
            KafkaOptionsError: more than three parts, or an empty one.
        """
        parts = tuple(text.split("."))
        if not 1 <= len(parts) <= 3 or not all(parts):
            raise KafkaOptionsError(
                f"{text!r} is not a table id: write 'table', 'schema.table' or "
                f"'namespace.schema.table'."
            )
        return cls(parts)

    @property
    def table_name(self) -> str:
        """The last part."""
        return self.parts[-1]

    @property
    def schema_name(self) -> str | None:
        """The part before the table name (the database of a MySQL table), if any."""
        return self.parts[-2] if len(self.parts) > 1 else None

    @property
    def namespace(self) -> str | None:
        """The first of three parts, if any."""
        return self.parts[0] if len(self.parts) == 3 else None

    def __str__(self) -> str:
        return ".".join(self.parts)


def _split_escaped(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator`` where no backslash escapes it (escapes kept)."""
    parts, current, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if ch == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _compile(pattern: str, key: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise KafkaOptionsError(
            f"'{key}' holds {pattern!r}, which is not a regular expression: {exc}.", keys=(key,)
        ) from None


@dataclass(frozen=True)
class Selectors:
    """Comma-separated table selectors (Flink CDC's ``Selectors``).

    Example:
        >>> s = Selectors.parse("mydb.order_\\\\.*, other.t")
        >>> s.matches(TableId.parse("MYDB.order_1")), s.matches(TableId.parse("mydb"))
        (True, False)
    """

    text: str
    selectors: tuple[tuple[re.Pattern[str], ...], ...] = field(compare=False)

    @classmethod
    def parse(cls, text: str, key: str = "source-table") -> Selectors:
        """Parse selectors written in option ``key`` (named in errors).

        Raises:
            KafkaOptionsError: empty, more than three parts, or a part that is not a regular
                expression.
        """
        selectors = []
        for item in _split_escaped(text, ","):
            item = item.strip().replace("\\,", ",")
            if not item:
                continue
            parts = [p.strip().replace("\\.", ".") for p in _split_escaped(item, ".") if p.strip()]
            if not 1 <= len(parts) <= 3:
                raise KafkaOptionsError(
                    f"'{key}' selector {item!r} has {len(parts)} parts; a table selector has "
                    f"1 to 3 ('[namespace.]schema.table'; write '\\.' for a regular-expression "
                    f"dot).",
                    keys=(key,),
                )
            selectors.append(tuple(_compile(p, key, re.IGNORECASE) for p in parts))
        if not selectors:
            raise KafkaOptionsError(f"'{key}' selects no table.", keys=(key,))
        return cls(text, tuple(selectors))

    def matches(self, table: TableId) -> bool:
        """Whether a selector of as many parts as ``table`` matches each part in full."""
        return any(
            len(parts) == len(table.parts)
            and all(p.fullmatch(v) for p, v in zip(parts, table.parts, strict=True))
            for parts in self.selectors
        )


_DOT = "\x00dot\x00"


def route_pattern(source_table: str) -> str:
    """A route's ``source-table`` as one regular expression over whole table ids.

    Example:
        >>> route_pattern("mydb.t1, mydb.t\\\\.*")
        'mydb\\\\.t1|mydb\\\\.t.*'
    """
    joined = "|".join(p.strip() for p in source_table.split(","))
    return joined.replace("\\.", _DOT).replace(".", "\\.").replace(_DOT, ".")


def _java_replacement(text: str) -> str:
    """A Java ``replaceAll`` replacement (``$1``, ``${name}``, ``\\$``) for ``re.sub``."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1].replace("\\", "\\\\"))
            i += 2
        elif ch == "$" and i + 1 < len(text) and text[i + 1] == "{":
            end = text.index("}", i)
            out.append(f"\\g<{text[i + 2 : end]}>")
            i = end + 1
        elif ch == "$" and i + 1 < len(text) and text[i + 1].isdigit():
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(f"\\g<{text[i + 1 : j]}>")
            i = j
        else:
            out.append("\\\\" if ch == "\\" else ch)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Route:
    """One ``route`` entry.

    Example:
        >>> r = Route.parse("mydb.\\\\.*", "ods_db.ods_<>", replace_symbol="<>")
        >>> str(r.sink_of(TableId.parse("mydb.orders")))
        'ods_db.ods_orders'
    """

    source_table: str
    sink_table: str
    replace_symbol: str | None = None
    description: str | None = None
    pattern: re.Pattern[str] = field(default=re.compile(""), compare=False)

    @classmethod
    def parse(
        cls,
        source_table: str,
        sink_table: str,
        *,
        replace_symbol: str | None = None,
        description: str | None = None,
    ) -> Route:
        """Validate a route (the pattern compiles; the sink table is a table id).

        Raises:
            KafkaOptionsError: naming 'source-table' or 'sink-table'.
        """
        pattern = _compile(route_pattern(source_table), "source-table")
        if replace_symbol is None and "$" not in sink_table:
            TableId.parse(sink_table)  # a fixed sink table must be a table id
        route = cls(source_table, sink_table, replace_symbol, description, pattern)
        return route

    def matches(self, table: TableId) -> bool:
        """Whether ``source-table`` matches the whole table id."""
        return self.pattern.fullmatch(str(table)) is not None

    def sink_of(self, table: TableId) -> TableId:
        """The sink table of a table this route matches.

        Raises:
            KafkaOptionsError: the substituted sink table is not a table id.
        """
        if self.replace_symbol:
            text = self.sink_table.replace(self.replace_symbol, table.table_name)
        else:
            try:
                text = self.pattern.sub(_java_replacement(self.sink_table), str(table))
            except (re.error, IndexError) as exc:
                raise KafkaOptionsError(
                    f"Route {self.source_table!r} -> {self.sink_table!r}: {exc}.",
                    keys=("sink-table",),
                ) from None
        try:
            return TableId.parse(text)
        except KafkaOptionsError as exc:
            raise KafkaOptionsError(
                f"Route {self.source_table!r} -> {self.sink_table!r} gives table "
                f"{str(table)!r} the sink table {text!r}: {exc}",
                keys=("sink-table",),
            ) from None


def route_table(table: TableId, routes: Sequence[Route]) -> list[TableId]:
    """The sink tables of ``table``: one per matching route (in order, without repeats), or
    the table itself when none matches.

    Example:
        >>> route_table(TableId.parse("a.b"), [])
        [TableId(parts=('a', 'b'))]
    """
    sinks = [r.sink_of(table) for r in routes if r.matches(table)]
    return list(dict.fromkeys(sinks)) or [table]


@dataclass(frozen=True)
class TopicMapping:
    """``sink.tableId-to-topic.mapping``: selectors to topics, first match wins.

    Example:
        >>> m = TopicMapping.parse("mydb.mytable1,mydb.mytable2:mytable;mydb\\\\.*:rest")
        >>> m.topic_of(TableId.parse("mydb.mytable2")), m.topic_of(TableId.parse("x.y"))
        ('mytable', None)
    """

    rules: tuple[tuple[Selectors, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> TopicMapping:
        """Parse the option's value (None or empty: no rules).

        Raises:
            KafkaOptionsError: a rule is not ``<tables>:<topic>``.
        """
        key = "sink.tableId-to-topic.mapping"
        if not text:
            return cls()
        rules = []
        for rule in text.split(";"):
            if not rule.strip():
                continue
            parts = rule.split(":")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise KafkaOptionsError(
                    f"'{key}' rule {rule!r} is not '<tables>:<topic>' (rules are separated by "
                    f"';', tables by ',').",
                    keys=(key,),
                )
            rules.append((Selectors.parse(parts[0], key), parts[1].strip()))
        return cls(tuple(rules))

    def topic_of(self, table: TableId) -> str | None:
        """The topic of the first rule that matches ``table``, or None."""
        return next((topic for s, topic in self.rules if s.matches(table)), None)
