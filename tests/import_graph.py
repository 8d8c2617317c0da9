"""The import graph of a Python package, read statically: its cycles and its private imports.

    python tests/import_graph.py [PACKAGE_DIR]

Every ``*.py`` under the package is parsed with :mod:`ast` (nothing is imported) and every
``import`` and ``from ... import`` statement is an edge wherever it stands: at module level,
inside functions and classes, under ``if TYPE_CHECKING:`` or ``try:``, since each of them ties
the two modules together as much as a top-level one does. An edge goes to the module of the
package it names: ``from X import n`` goes to ``X.n`` when that is a module (so
``from . import sub`` names the submodule), else to ``X``; names outside the package are not
edges. Importing ``pkg.sub`` runs ``pkg/__init__.py`` first, but that is not counted as an edge
to ``pkg``: only an explicit import is.

The graph's cycles are its strongly connected components of more than one module. A private
import is a module importing a private module (its name starting with ``_``) of another package:
one that is neither its own package nor a package enclosing it (a package's private modules serve
its subpackages too).

Independent of the package it reads, so a test and ``make lint`` run it alike.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ImportGraph:
    """Modules (dotted names → file) and, for each, the modules of the package it imports."""

    files: Mapping[str, Path]
    edges: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def is_package(self, name: str) -> bool:
        """Whether module ``name`` is a package (its file is an ``__init__.py``)."""
        return self.files[name].name == "__init__.py"

    def package_of(self, name: str) -> str:
        """The package module ``name`` belongs to (a package belongs to itself)."""
        return name if self.is_package(name) else name.rpartition(".")[0]


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name → file of every module under the package directory ``root``: each
    ``.py`` file, and each compiled extension known by its ``.pyi`` stub (a leaf: it imports
    nothing of the package)."""
    out: dict[str, Path] = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyi")]):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        if path.suffix == ".py" or ".".join(parts) not in out:
            out[".".join(parts)] = path
    return out


def _module_named(name: str, files: Mapping[str, Path]) -> str | None:
    """``name`` or its longest dotted prefix that is a module of the package."""
    parts = name.split(".")
    while parts:
        if (candidate := ".".join(parts)) in files:
            return candidate
        parts.pop()
    return None


def _imported(name: str, tree: ast.AST, files: Mapping[str, Path], package: str) -> set[str]:
    """The modules of the package that the statements of ``tree`` (module ``name``) import."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(t for a in node.names if (t := _module_named(a.name, files)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                target = f"{source}.{alias.name}"
                found = target if target in files else _module_named(source, files)
                if found:
                    out.add(found)
    out.discard(name)
    return out


def read_graph(root: Path) -> ImportGraph:
    """The import graph of the package directory ``root``."""
    files = module_files(root)
    graph = ImportGraph(files)
    edges: dict[str, frozenset[str]] = {}
    for name, path in files.items():
        if path.suffix != ".py":
            edges[name] = frozenset()
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges[name] = frozenset(_imported(name, tree, files, graph.package_of(name)))
    return ImportGraph(files, edges)


def cycles(graph: ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, written
    iteratively), each sorted, in the order of their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.files):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.edges.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph.edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_cycle(graph: ImportGraph, component: Iterable[str]) -> list[str]:
    """One shortest cycle through the first module of ``component`` (a cycle), as a path that
    ends where it starts: the evidence to show."""
    members = sorted(component)
    start, inside = members[0], set(members)
    previous: dict[str, str] = {}
    queue = [start]
    for node in queue:
        for child in sorted(graph.edges.get(node, ())):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child in inside and child not in previous:
                previous[child] = node
                queue.append(child)
    return [start]


def private_imports(graph: ImportGraph) -> list[tuple[str, str]]:
    """(importer, imported) where ``imported`` is a private module of a package that neither is
    nor encloses the importer's."""
    out = []
    for name, targets in sorted(graph.edges.items()):
        for target in sorted(targets):
            owner, _, last = target.rpartition(".")
            private = last.startswith("_") and not graph.is_package(target)
            own = graph.package_of(name)
            if private and own != owner and not own.startswith(owner + "."):
                out.append((name, target))
    return out


def report(graph: ImportGraph) -> list[str]:
    """Lines describing every cycle and every private import (empty: none)."""
    lines = []
    for n, component in enumerate(cycles(graph), 1):
        lines.append(f"cycle {n}: {', '.join(component)}")
        lines.append("   e.g. " + " -> ".join(shortest_cycle(graph, component)))
    lines.extend(f"private import: {a} -> {b}" for a, b in private_imports(graph))
    return lines


def main(argv: list[str]) -> int:
    """Print the report of the package directory ``argv[0]``; exit 1 when it is not empty."""
    root = Path(argv[0] if argv else "dagster_kafka_flinklike")
    graph = read_graph(root)
    lines = report(graph)
    for line in lines:
        print(line)
    print(f"{len(graph.files)} modules, {sum(map(len, graph.edges.values()))} import edges")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
