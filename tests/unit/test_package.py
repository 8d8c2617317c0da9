"""The public surface: small, documented, and cheap to import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dagster_kafka_flinklike as dkf


def fresh_python(code: str) -> str:
    """What ``code`` prints in a new interpreter (nothing imported yet)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_every_exported_symbol_has_a_docstring() -> None:
    symbols = [name for name in dkf.__all__ if name != "__version__"]
    missing = [name for name in symbols if not (getattr(dkf, name).__doc__ or "").strip()]
    assert missing == []


def test_importing_the_package_does_not_import_pyspark() -> None:
    code = "import sys, dagster_kafka_flinklike; print('pyspark' in sys.modules)"
    assert fresh_python(code) == "False"


def test_spark_resource_is_loaded_lazily() -> None:
    from dagster_pyspark import PySparkResource

    assert issubclass(dkf.SparkResource, PySparkResource)


def test_the_modules_spark_workers_import_do_not_import_dagster() -> None:
    # Every Spark Python worker unpickles the reader's and writers' task functions; Dagster
    # would cost each new worker about a CPU second and tens of MiB.
    code = (
        "import sys\n"
        "import dagster_kafka_flinklike.source.reader, dagster_kafka_flinklike.sink.writer\n"
        "import dagster_kafka_flinklike.sink.driver_stream, dagster_kafka_flinklike.formats\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dagster'))"
    )
    assert fresh_python(code) == "[]"


def test_public_names_load_on_first_use_and_are_listed() -> None:
    code = (
        "import sys, dagster_kafka_flinklike as d\n"
        "before = 'dagster' in sys.modules\n"
        "resource = d.KafkaResource\n"
        "print(before, 'dagster' in sys.modules, resource.__module__, 'KafkaResource' in dir(d))"
    )
    assert fresh_python(code).split() == [
        "False",
        "True",
        "dagster_kafka_flinklike.resources",
        "True",
    ]
    assert set(dkf.__all__) == {*dkf._EXPORTS, "__version__"}
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        dkf.Nope  # noqa: B018
