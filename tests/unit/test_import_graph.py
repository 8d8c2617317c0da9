"""The package's import graph: no import cycle, no module importing another package's private
module. Imports inside functions count (see :mod:`tests.import_graph`)."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import cycles, private_imports, read_graph, report, shortest_cycle

PACKAGE = Path(__file__).resolve().parents[2] / "dagster_kafka_flinklike"

#: The subpackages that must take part in no cycle. ``None`` means the whole package: no cycle
#: at all (the goal; set it to ``None`` once the Dagster side's own cycle is gone).
CYCLE_FREE: tuple[str, ...] | None = (
    "formats",
    "sink",
    "options",
    "sql",
    "ingestion",
    "source",
    "run",
)
#: The subpackages none of whose modules may import another package's private module (``None``:
#: every module of the package).
PRIVATE_IMPORT_FREE: tuple[str, ...] | None = None


def _in(module: str, packages: tuple[str, ...] | None) -> bool:
    if packages is None:
        return True
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in packages


def test_the_checker_counts_imports_inside_functions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .sub import _b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "_b.py").write_text("from .. import a\n")
    graph = read_graph(package)
    assert cycles(graph) == [["pkg.a", "pkg.sub._b"]]
    assert shortest_cycle(graph, ["pkg.a", "pkg.sub._b"]) == ["pkg.a", "pkg.sub._b", "pkg.a"]
    assert private_imports(graph) == [("pkg.a", "pkg.sub._b")]


def test_no_import_cycle() -> None:
    graph = read_graph(PACKAGE)
    found = [c for c in cycles(graph) if any(_in(m, CYCLE_FREE) for m in c)]
    assert not found, "\n".join(report(graph))


def test_no_module_imports_a_private_module_of_another_package() -> None:
    graph = read_graph(PACKAGE)
    found = [(a, b) for a, b in private_imports(graph) if _in(a, PRIVATE_IMPORT_FREE)]
    assert not found, "\n".join(report(graph))
