"""The package's import graph: no import cycle, no module importing another package's private
module. Imports inside functions count (see :mod:`tests.import_graph`)."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import cycles, private_imports, read_graph, report, shortest_cycle

PACKAGE = Path(__file__).resolve().parents[2] / "dagster_kafka_flinklike"


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
    assert not cycles(graph), "\n".join(report(graph))


def test_no_module_imports_a_private_module_of_another_package() -> None:
    graph = read_graph(PACKAGE)
    assert not private_imports(graph), "\n".join(report(graph))
