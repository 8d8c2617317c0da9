"""Apache Flink as the test oracle: run a Flink SQL script on real Flink over the same topics.

Where a result must equal Flink's, the expected output is what Flink itself writes, not our
reading of its documentation. PyFlink (``apache-flink`` from PyPI) runs in its own virtual
environment (it pulls Apache Beam and pandas, ~800 MB) under the project's cache, with Flink's
Kafka SQL connector jar from Maven Central; both are fetched once, on first use, like the
embedded broker.

Example:
    >>> oracle = flink_oracle()  # doctest: +SKIP
    >>> oracle.run(script_text, bootstrap="127.0.0.1:9092")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster_kafka_flinklike.local.fetch import default_cache_dir, fetch_maven_jar, fetch_once

#: The Flink release the oracle runs, and its Kafka SQL connector (no connector for later
#: Flink releases yet).
FLINK_VERSION = "2.2.1"
KAFKA_CONNECTOR = ("org.apache.flink", "flink-sql-connector-kafka", "5.0.0-2.2")
_JOB = Path(__file__).with_name("flink_job.py")


class FlinkOracleError(RuntimeError):
    """Flink refused or failed a script (its message holds the end of Flink's output)."""


@dataclass(frozen=True)
class FlinkOracle:
    """A PyFlink installation and the Kafka connector jar: runs scripts to completion."""

    python: Path
    connector: Path

    def run(self, script: str, *, bootstrap: str, timeout_s: float = 600) -> str:
        """Run ``script`` (``${BOOTSTRAP}`` replaced by ``bootstrap``) on Flink; return its
        output.

        Raises:
            FlinkOracleError: Flink refused the script or the job failed.
        """
        with tempfile.TemporaryDirectory(prefix="flink-oracle-") as tmp:
            path = Path(tmp) / "job.sql"
            path.write_text(script.replace("${BOOTSTRAP}", bootstrap), encoding="utf-8")
            done = subprocess.run(
                [str(self.python), str(_JOB), str(path), str(self.connector)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=self._env(tmp),
                cwd=tmp,
            )
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise FlinkOracleError(f"Flink failed the script (exit {done.returncode}):\n{tail}")
        return done.stdout

    def evaluate(self, expressions: list[str], *, timeout_s: float = 600) -> list[dict[str, Any]]:
        """Flink's result of each expression (``SELECT <expression>``): ``{"value": v}`` (as
        JSON, dates and decimals as text) or ``{"error": "..."}`` where Flink fails it."""
        with tempfile.TemporaryDirectory(prefix="flink-oracle-") as tmp:
            path = Path(tmp) / "expressions.txt"
            path.write_text("\n".join(expressions) + "\n", encoding="utf-8")
            done = subprocess.run(
                [str(self.python), str(_JOB), "--evaluate", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=self._env(tmp),
                cwd=tmp,
            )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or len(lines) != len(expressions):
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise FlinkOracleError(
                f"Flink failed the expressions (exit {done.returncode}):\n{tail}"
            )
        return [json.loads(line) for line in lines]

    def reserved(self, words: list[str], *, timeout_s: float = 600) -> list[str]:
        """The ``words`` Flink's parser refuses as an unquoted table name (and takes quoted)."""
        with tempfile.TemporaryDirectory(prefix="flink-oracle-") as tmp:
            path = Path(tmp) / "words.txt"
            path.write_text("\n".join(words) + "\n", encoding="utf-8")
            done = subprocess.run(
                [str(self.python), str(_JOB), "--reserved", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=self._env(tmp),
                cwd=tmp,
            )
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise FlinkOracleError(f"Flink failed the words (exit {done.returncode}):\n{tail}")
        return [line.strip() for line in done.stdout.splitlines() if line.strip().isupper()]

    def parser_keywords(self) -> list[str]:
        """Every keyword of Flink's SQL parser (the token names its planner jar declares)."""
        import io
        import re
        import zipfile

        lib = self.python.parent.parent.glob("lib/python*/site-packages/pyflink/lib")
        [jar] = [j for d in lib for j in d.glob("flink-table-planner-loader-*.jar")]
        with zipfile.ZipFile(jar) as loader:
            inner = next(n for n in loader.namelist() if n.endswith(".jar"))
            with zipfile.ZipFile(io.BytesIO(loader.read(inner))) as planner:
                constants = next(
                    n for n in planner.namelist() if n.endswith("FlinkSqlParserImplConstants.class")
                )
                data = planner.read(constants)
        return sorted({w.decode() for w in re.findall(rb'"([A-Z][A-Z0-9_]*)"', data)})

    @staticmethod
    def _env(tmp: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "FLINK_LOG_DIR": tmp}
        env.pop("PYTHONPATH", None)
        return env


def _install(tmp: Path) -> dict[str, object]:
    """Create the oracle's virtual environment in ``tmp`` with PyFlink."""
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True)
    python = tmp / "venv" / "bin" / "python"
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv:
        command = [uv, "pip", "install", "--quiet", "--python", str(python)]
    else:
        command = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*command, f"apache-flink=={FLINK_VERSION}"], check=True)
    return {"apache-flink": FLINK_VERSION}


def flink_oracle(cache_dir: Path | None = None) -> FlinkOracle:
    """The oracle, installed on first use into ``<cache>/flink-oracle-<version>/``.

    Raises:
        subprocess.CalledProcessError: PyFlink could not be installed.
    """
    root = cache_dir or default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = fetch_once(
        root / f"flink-oracle-{FLINK_VERSION}", f"PyFlink {FLINK_VERSION}", _install, "minutes"
    )
    return FlinkOracle(folder / "venv" / "bin" / "python", fetch_maven_jar(*KAFKA_CONNECTOR))
