"""Every CREATE TABLE / INSERT INTO statement of the seed documents parses (read at test time).

The seed documents (``../shared/seeds/*.txt`` beside the repository) are public web pages
turned into text. Two things that conversion did to their SQL are repaired before parsing,
and nothing else:

* one document lost its line breaks, so a ``--`` comment swallows the SQL after it on the
  same line; the comment is ended before the next quote or closing parenthesis, where the
  original line ended;
* ``...`` elides parts of an example; it is removed (with its comma) and the statement marked
  ``elided``: it must parse, but its options are incomplete, so its spec is not checked.

Statements that are invalid as written are listed below with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from dagster_kafka_flinklike.sql import CreateTable, FlinkSqlError, InsertInto, parse_flink_sql

SEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds"
_START = re.compile(r"(?i)\b(create\s+(?:temporary\s+)?table|insert\s+into)\s+")
_NAME_THEN = re.compile(
    r"(?is)(?:if\s+not\s+exists\s+)?[`\w.]+(?:`[^`]*`)?[`\w.]*\s*(\(|with\b|select\b|\bas\b)"
)


@dataclass(frozen=True)
class SeedStatement:
    """One statement of a seed document: its file, line, repaired text and whether elided."""

    file: str
    line: int
    text: str
    elided: bool

    @property
    def ident(self) -> str:
        return f"{self.file}:{self.line}"


def _end_flattened_comments(line: str) -> str:
    out, i, quoted = [], 0, False
    while i < len(line):
        ch = line[i]
        if ch == "'":
            quoted = not quoted
        if not quoted and line.startswith("--", i):
            m = re.compile(r"['\)]").search(line, i + 2)
            if m is None:
                out.append(line[i:])
                break
            out.append(line[i : m.start()] + "\n")
            i = m.start()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _statement_end(text: str, start: int) -> int:
    """Index after the statement starting at ``start``: its ';', or the end of its last clause."""
    i, depth, n = start, 0, len(text)
    saw_with = False
    while i < n:
        ch = text[i]
        if text.startswith("--", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if text.startswith("/*", i):
            i = text.find("*/", i) + 2
            continue
        if ch == "'":
            close = i + 1
            while True:
                close = text.find("'", close)
                if close < 0 or not text.startswith("''", close):
                    break
                close += 2
            i = n if close < 0 else close + 1
            continue
        if ch == "`":
            i = text.find("`", i + 1) + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and saw_with:
                rest = text[i + 1 :].lstrip()
                if not re.match(r"(?i)(as|like|;)", rest):
                    return i + 1
        elif ch == ";":
            return i + 1
        elif depth == 0 and re.match(r"(?i)with\s*\(", text[i:]) and text[i - 1].isspace():
            saw_with = True
        elif ch == "\n" and depth <= 0 and text.startswith("\n\n", i):
            return i
        i += 1
    return n


def _remove_elisions(text: str) -> str:
    text = re.sub(r",\s*\.\.\.\s*(?=\))", "", text)
    return re.sub(r"\.\.\.\s*,?", "", text)


def seed_statements() -> list[SeedStatement]:
    """Every CREATE TABLE / INSERT INTO statement of the seed documents, repaired."""
    found: list[SeedStatement] = []
    for path in sorted(SEEDS.glob("*.txt")):
        raw_lines = path.read_text(encoding="utf-8").split("\n")
        repaired = [_end_flattened_comments(line) for line in raw_lines]
        text = "\n".join(repaired)
        line_of: list[int] = []  # raw line number of each repaired line
        for number, line in enumerate(repaired, start=1):
            line_of += [number] * (line.count("\n") + 1)
        for m in _START.finditer(text):
            if not _NAME_THEN.match(text, m.end()):
                continue  # prose such as "The CREATE TABLE statement must match ..."
            end = _statement_end(text, m.start())
            body = text[m.start() : end]
            elided = "..." in body
            line = line_of[text.count("\n", 0, m.start())]
            found.append(SeedStatement(path.name, line, _remove_elisions(body), elided))
    return found


# Statements that are not SQL as written: a syntax template and a statement with a stray "(".
MALFORMED = {
    "attr_name attr_type": (1, 37),  # the grammar template "create table kafkaSource( ..."
    "`sync_kafka`(\nWITH": (2, 1),  # "CREATE TABLE ... `sync_kafka`(" then WITH, a reserved word
}
# Kafka tables that parse but are invalid per the connector's rules: (file, table, first key).
INVALID_TABLES = {
    # schema inference with a PRIMARY KEY on a plain 'kafka' table (the vendor's own extension)
    ("001", "kafkaTable", "connector"),
    # 'key.fields-prefix' with the default 'value.fields-include' = 'ALL'
    ("001", "kafkaTable", "key.fields-prefix"),
    # vendor secret-manager options ('dew.*') are not connector options
    ("003", "ordersSource", "dew.endpoint"),
    # vendor Kerberos switches are not Kafka client settings
    ("003", "ordersSource", "properties.connector.auth.open"),
}


def _seeds() -> list[SeedStatement]:
    if not SEEDS.is_dir():
        pytest.skip(f"seed documents not found at {SEEDS.resolve()} (shared/ beside the repo)")
    found = seed_statements()
    assert len(found) >= 30, "the extractor found suspiciously few statements"
    return found


def _malformed(statement: SeedStatement) -> tuple[int, int] | None:
    return next((pos for mark, pos in MALFORMED.items() if mark in statement.text), None)


def test_every_seed_statement_parses() -> None:
    parsed = 0
    for statement in _seeds():
        where = _malformed(statement)
        if where is not None:
            with pytest.raises(FlinkSqlError) as info:
                parse_flink_sql(statement.text, strict=False)
            assert (info.value.line, info.value.column) == where, statement.ident
            continue
        statements = parse_flink_sql(statement.text, strict=False)
        assert statements, statement.ident
        assert all(isinstance(s, CreateTable | InsertInto) for s in statements)
        parsed += len(statements)
    assert parsed >= 40


def test_seed_kafka_tables_are_valid_or_known_invalid() -> None:
    seen_invalid = set()
    valid = 0
    for statement in _seeds():
        if _malformed(statement) is not None or statement.elided:
            continue
        for table in parse_flink_sql(statement.text, strict=False):
            if not isinstance(table, CreateTable) or not table.supported:
                continue
            if table.error is None:
                assert table.spec is not None
                valid += 1
                continue
            entry = (statement.file[:3], table.name, table.error.keys[0])
            assert entry in INVALID_TABLES, f"{statement.ident}: {table.error}"
            seen_invalid.add(entry)
    assert seen_invalid == INVALID_TABLES
    assert valid >= 8


def test_seed_statements_without_elisions_parse_strictly_when_valid() -> None:
    for statement in _seeds():
        if _malformed(statement) is not None or statement.elided:
            continue
        statements = parse_flink_sql(statement.text, strict=False)
        if any(isinstance(s, CreateTable) and s.error for s in statements):
            continue
        assert parse_flink_sql(statement.text) == statements, statement.ident


def test_seed_csv_control_character_delimiter() -> None:
    """The vendor example writes '\\u0001' as a plain literal; the csv format unescapes it."""
    tables = [
        t
        for s in _seeds()
        if "csv.field-delimiter" in s.text and _malformed(s) is None
        for t in parse_flink_sql(s.text, strict=False)
        if isinstance(t, CreateTable) and t.spec is not None and t.spec.value_format.name == "csv"
    ]
    assert tables
    for table in tables:
        assert table.spec is not None
        assert table.spec.value_format.settings["field-delimiter"] == "\x01"
        assert table.spec.value_format.settings["quote-character"] == "'"
