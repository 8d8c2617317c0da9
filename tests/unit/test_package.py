"""The public surface: small, documented, and cheap to import."""

from __future__ import annotations

import subprocess
import sys

import dagster_kafka_flinklike as dkf


def test_every_exported_symbol_has_a_docstring() -> None:
    symbols = [name for name in dkf.__all__ if name != "__version__"]
    missing = [name for name in symbols if not (getattr(dkf, name).__doc__ or "").strip()]
    assert missing == []


def test_importing_the_package_does_not_import_pyspark() -> None:
    code = "import sys, dagster_kafka_flinklike; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_spark_resource_is_loaded_lazily() -> None:
    from dagster_pyspark import PySparkResource

    assert issubclass(dkf.SparkResource, PySparkResource)
