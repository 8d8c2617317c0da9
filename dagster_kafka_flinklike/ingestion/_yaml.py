"""A data-ingestion pipeline's YAML text, read safely and with the position of every value.

PyYAML's safe loader follows a self-referencing anchor (``a: &x [*x]``) into a structure that
has no end, nests as deep as the text does (Python's recursion limit ends it), expands aliases
of aliases into exponentially many values, and its errors quote the offending line, a password
included. This reader refuses the first three with the file, the line and the key, and words
every YAML error as ``file:line:column: what is wrong`` without quoting the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

from ..errors import KafkaOptionsError, KafkaYamlError

#: Deepest nesting of mappings and lists a pipeline may have (its own is 3 or 4 levels).
MAX_DEPTH = 32
#: Most values the document may hold once its aliases are expanded.
MAX_VALUES = 100_000

KeyPath = tuple[str | int, ...]
#: What yaml quotes that is not the document's text: token names (``'<scalar>'``), a single
#: punctuation character of the grammar (``','``), an escaped control character (``'\t'``).
_SAFE_QUOTE = re.compile(r"'(<[a-z ]+>|[^\w\s'\\]|\\[a-z0-9]+)'")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _problem(text: str | None) -> str:
    """yaml's description of a problem without the document's text it quotes (an alias or tag
    name, a character: a value may be a secret)."""
    if not text:
        return ""
    kept: list[str] = []
    position = 0
    for found in _QUOTED.finditer(text):
        kept.append(text[position : found.start()])
        if _SAFE_QUOTE.fullmatch(found.group()):
            kept.append(found.group())
        position = found.end()
    kept.append(text[position:])
    return re.sub(r"\s+", " ", "".join(kept)).strip().replace(" ;", ";")


def path_text(path: KeyPath) -> str:
    """``source.topic`` / ``transform[1].projection``: how messages name a place (the first
    levels of a deep one)."""
    out = ""
    for part in path[:6]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out + ("…" if len(path) > 6 else "")


class _Loader(yaml.SafeLoader):
    """The safe loader, with the key path, depth, open anchors and expanded size tracked while
    nodes are composed."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.path: list[str | int] = []
        self.open_anchors: list[str | None] = []
        self.sizes: dict[int, int] = {}
        self.counts: list[int] = []
        self.positions: dict[KeyPath, tuple[int, int]] = {}
        self.refused: tuple[str, KeyPath, Any] | None = None
        #: The key path of each value by its position, and where composing stopped.
        self.paths: dict[tuple[int, int], KeyPath] = {}
        self.failed_at: KeyPath | None = None

    def _refuse(self, message: str, mark: Any) -> None:
        self.refused = (message, tuple(self.path), mark)
        raise yaml.YAMLError(message)

    def _count(self, size: int, mark: Any) -> None:
        if self.counts:
            self.counts[-1] += size
        if size > MAX_VALUES or (self.counts and self.counts[-1] > MAX_VALUES):
            self._refuse(
                f"its aliases expand it to more than {MAX_VALUES} values; write the values out "
                f"instead of referencing anchors that reference anchors",
                mark,
            )

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if isinstance(parent, MappingNode) and index is None:
            segment: str | int | None = "(a key)"
        elif isinstance(index, ScalarNode):
            segment = str(index.value)
        elif isinstance(index, int):
            segment = index
        else:
            segment = None
        event = self.peek_event()
        if segment is not None:
            self.path.append(segment)
            mark = index.start_mark if isinstance(index, ScalarNode) else event.start_mark
            self.positions.setdefault(tuple(self.path), (mark.line + 1, mark.column + 1))
        self.paths.setdefault((event.start_mark.line, event.start_mark.column), tuple(self.path))
        try:
            if isinstance(event, AliasEvent):
                if event.anchor in self.open_anchors:
                    self._refuse(
                        "an alias ('*') refers to the value that holds it (a self-referencing "
                        "anchor): such a value has no end; write it out instead",
                        event.start_mark,
                    )
                node: Node = super().compose_node(parent, index)
                self._count(self.sizes.get(id(node), 1), event.start_mark)
                return node
            if len(self.path) > MAX_DEPTH:
                self._refuse(
                    f"values nest more than {MAX_DEPTH} levels deep; a pipeline's sections "
                    f"are mappings of options, lists of routes and transforms",
                    event.start_mark,
                )
            self.open_anchors.append(event.anchor)
            self.counts.append(0)
            try:
                node = super().compose_node(parent, index)
            finally:
                self.open_anchors.pop()
            size = 1 + self.counts.pop()
            self.sizes[id(node)] = size
            self._count(size, event.start_mark)
            return node
        except yaml.YAMLError:
            if self.failed_at is None:
                self.failed_at = tuple(self.path)
            raise
        finally:
            if segment is not None:
                self.path.pop()

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception:  # a tagged or implicit value Python cannot build (2026-13-45, !!int x)
            raise yaml.constructor.ConstructorError(
                None, None, f"the value cannot be read as {_tag_name(node.tag)}", node.start_mark
            ) from None


def _tag_name(tag: str) -> str:
    name = tag.rsplit(":", 1)[-1] if tag.startswith("tag:yaml.org,2002:") else "its tag"
    return {"int": "an integer", "float": "a number", "bool": "true or false"}.get(
        name, f"a {name}" if name != "its tag" else "the type its tag names"
    )


@dataclass
class YamlDocument:
    """A loaded YAML document: its data and where each value is (``file``, 1-based lines and
    columns by key path)."""

    data: Any
    file: str | None = None
    positions: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: KeyPath) -> tuple[int, int] | None:
        """``(line, column)`` of ``path``, else of its nearest enclosing value."""
        for end in range(len(path), -1, -1):
            found = self.positions.get(path[:end])
            if found is not None:
                return found
        return None

    def find(self, path: KeyPath, keys: tuple[str, ...]) -> tuple[int, int] | None:
        """The position of the first of ``keys`` under ``path`` (a dotted key also as nested
        keys), else of ``path``."""
        for key in keys:
            for candidate in ((*path, key), (*path, *key.split("."))):
                if candidate in self.positions:
                    return self.positions[candidate]
        return self.position(path)

    def error(self, message: str, path: KeyPath, keys: tuple[str, ...] = ()) -> KafkaOptionsError:
        """The error to raise for ``message`` about ``path``: located when positions are known."""
        found = self.find(path, keys) if self.positions else None
        if found is None:
            return KafkaOptionsError(message, keys=keys)
        return KafkaYamlError(message, file=self.file, line=found[0], column=found[1], keys=keys)

    @contextmanager
    def blame(self, path: KeyPath) -> Iterator[None]:
        """Locate a :class:`KafkaOptionsError` raised inside at ``path`` (or the key it names)."""
        try:
            yield
        except KafkaYamlError:
            raise
        except KafkaOptionsError as exc:
            raise self.error(str(exc), path, exc.keys) from None


def _where(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def load_yaml(text: str, file: str | None = None) -> YamlDocument:
    """Load YAML ``text`` (from ``file``, named in messages) as a :class:`YamlDocument`.

    Raises:
        KafkaYamlError: the text is not one YAML document, an anchor references itself, values
            nest deeper than :data:`MAX_DEPTH` or aliases expand past :data:`MAX_VALUES`; the
            message gives the line, the column and the key, never the document's text.
    """
    loader: _Loader | None = None
    try:
        loader = _Loader(text)  # (the reader checks the characters here)
        return YamlDocument(loader.get_single_data(), file, loader.positions)
    except yaml.YAMLError as exc:
        # raised outside this block: yaml's error, which quotes the line, is not its context
        failure = _failure(exc, loader, text, file)
    finally:
        if loader is not None:
            loader.dispose()
    raise failure


def _failure(
    exc: yaml.YAMLError, loader: _Loader | None, text: str, file: str | None
) -> KafkaYamlError:
    """Our error for yaml's ``exc``: where, and what is wrong, without the document's text."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = _problem(exc.problem) or _problem(exc.context) or "malformed"
        if exc.context and exc.problem and exc.context_mark is not None:
            what += f" ({_problem(exc.context)} at line {exc.context_mark.line + 1})"
        at = getattr(loader, "failed_at", None)
        if at is None and mark is not None:
            at = getattr(loader, "paths", {}).get((mark.line, mark.column))
        where = f" in '{path_text(at)}'" if at else ""
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        return KafkaYamlError(
            f"not valid YAML{where}: {what}.", file=file, line=line, column=column
        )
    if isinstance(exc, yaml.reader.ReaderError):
        line, column = _where(text, exc.position)
        return KafkaYamlError(
            f"not valid YAML: {exc.reason} (a control character or an unpaired surrogate).",
            file=file,
            line=line,
            column=column,
        )
    refused = getattr(loader, "refused", None)
    if refused is None:
        return KafkaYamlError("not valid YAML.", file=file, line=1, column=1)
    message, path, mark = refused
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return KafkaYamlError(
        f"'{path_text(path)}': {message}." if path else f"{message}.",
        file=file,
        line=line,
        column=column,
        keys=(path_text(path),) if path else (),
    )
