"""The options reference page is generated from the option tables and must be current."""

from __future__ import annotations

import inspect
from pathlib import Path

import dagster_kafka_flinklike.options as options_pkg
from dagster_kafka_flinklike.options import (
    FORMAT_OPTIONS,
    METADATA,
    OPTIONS,
    render_options_reference,
)
from dagster_kafka_flinklike.options._docs import DOC_PATH, write_options_reference

REPO = Path(__file__).resolve().parents[2]


def test_reference_page_is_current() -> None:
    page = REPO / "docs" / "options.md"
    assert page == DOC_PATH
    assert page.read_text(encoding="utf-8") == render_options_reference(), (
        "docs/options.md is stale: run `python -m dagster_kafka_flinklike.options`"
    )


def test_reference_page_lists_every_option_format_option_and_metadata_key() -> None:
    page = render_options_reference()
    for option in OPTIONS:
        assert f"`{option.key}" in page
    for name, format_options in FORMAT_OPTIONS.items():
        for option in format_options:
            assert f"`{name}.{option.key}`" in page
    for key in METADATA:
        assert f"`{key}`" in page
    assert "## Departures from Flink" in page


def test_write_options_reference(tmp_path: Path) -> None:
    target = write_options_reference(tmp_path / "docs" / "options.md")
    assert target.read_text(encoding="utf-8") == render_options_reference()


def test_every_exported_symbol_has_a_docstring() -> None:
    for name in options_pkg.__all__:
        symbol = getattr(options_pkg, name)
        if inspect.isclass(symbol) or inspect.isfunction(symbol):
            doc = inspect.getdoc(symbol) or ""
            assert doc.strip(), f"{name} has no docstring"
            for member_name, member in vars(symbol).items() if inspect.isclass(symbol) else ():
                if member_name.startswith("_") or not callable(getattr(member, "__get__", None)):
                    continue
                if isinstance(member, property | classmethod) or inspect.isfunction(member):
                    target = member.fget if isinstance(member, property) else member
                    assert inspect.getdoc(target), f"{name}.{member_name} has no docstring"


def test_docstring_examples_run() -> None:
    import doctest
    import importlib
    import pkgutil

    import dagster_kafka_flinklike.sql as sql_pkg

    failed = 0
    for package in (options_pkg, sql_pkg):
        for info in pkgutil.iter_modules(package.__path__):
            if info.name == "__main__":
                continue
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            failed += doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed
    assert failed == 0
