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

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
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


class FlinkOracle:
    """A PyFlink installation and the Kafka connector jar: runs scripts to completion.

    One PyFlink process serves every request of the oracle (``flink_job.py --serve``): it is
    started on the first request (or by :meth:`start`, to boot while the caller works) and
    stopped by :meth:`close`; one that dies or hangs is replaced on the next request.
    """

    def __init__(self, python: Path, connector: Path) -> None:
        self.python = python
        self.connector = connector
        self._lock = threading.Lock()
        self._server: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._home = Path(tempfile.mkdtemp(prefix="flink-oracle-"))
        self._requests = 0
        self._background = ThreadPoolExecutor(1, thread_name_prefix="flink-oracle")

    def start(self) -> None:
        """Start the server unless it runs (returns at once: it boots in the background)."""
        with self._lock:
            self._ensure_server()

    def close(self) -> None:
        """Stop the server and remove its files."""
        self._background.shutdown(wait=True)
        with self._lock:
            self._stop_server()
        shutil.rmtree(self._home, ignore_errors=True)

    def run(self, script: str, *, bootstrap: str, timeout_s: float = 600) -> str:
        """Run ``script`` (``${BOOTSTRAP}`` replaced by ``bootstrap``) on Flink; return its
        output.

        Raises:
            FlinkOracleError: Flink refused the script or the job failed.
        """
        text = script.replace("${BOOTSTRAP}", bootstrap)
        code, output = self._call("run", text, [str(self.connector)], timeout_s)
        if code != 0:
            tail = "\n".join(output.splitlines()[-40:])
            raise FlinkOracleError(f"Flink failed the script (exit {code}):\n{tail}")
        return output

    def submit(self, script: str, *, bootstrap: str, timeout_s: float = 600) -> Future[str]:
        """:meth:`run` in the background: Flink works while the caller runs its own side over
        the same (complete) input; the future's result is :meth:`run`'s."""
        return self._background.submit(self.run, script, bootstrap=bootstrap, timeout_s=timeout_s)

    def evaluate(self, expressions: list[str], *, timeout_s: float = 600) -> list[dict[str, Any]]:
        """Flink's result of each expression (``SELECT <expression>``): ``{"value": v}`` (as
        JSON, dates and decimals as text) or ``{"error": "..."}`` where Flink fails it."""
        text = "\n".join(expressions) + "\n"
        code, output = self._call("evaluate", text, [], timeout_s)
        lines = [line for line in output.splitlines() if line.startswith("{")]
        if code != 0 or len(lines) != len(expressions):
            tail = "\n".join(output.splitlines()[-40:])
            raise FlinkOracleError(f"Flink failed the expressions (exit {code}):\n{tail}")
        return [json.loads(line) for line in lines]

    def reserved(self, words: list[str], *, timeout_s: float = 600) -> list[str]:
        """The ``words`` Flink's parser refuses as an unquoted table name (and takes quoted)."""
        code, output = self._call("reserved", "\n".join(words) + "\n", [], timeout_s)
        if code != 0:
            tail = "\n".join(output.splitlines()[-40:])
            raise FlinkOracleError(f"Flink failed the words (exit {code}):\n{tail}")
        return [line.strip() for line in output.splitlines() if line.strip().isupper()]

    def _call(self, op: str, text: str, args: list[str], timeout_s: float) -> tuple[int, str]:
        """Send one request with ``text`` as its input file; its exit code and its output."""
        with self._lock:
            self._requests += 1
            number = self._requests
            given = self._home / f"{number}.in"
            out = self._home / f"{number}.out"
            given.write_text(text, encoding="utf-8")
            server = self._ensure_server()
            assert server.stdin is not None
            request = {"id": number, "op": op, "args": [str(given), *args], "out": str(out)}
            try:
                server.stdin.write(json.dumps(request) + "\n")
                server.stdin.flush()
            except OSError:
                pass  # it died: said below, with its log
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    answer = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    self._stop_server()
                    raise FlinkOracleError(f"Flink did not finish in {timeout_s:.0f} s") from None
                if answer is None:  # the server's stdout closed: it died
                    log = self._log().read_text(errors="replace").splitlines()[-40:]
                    self._stop_server()
                    raise FlinkOracleError("The Flink oracle exited:\n" + "\n".join(log))
                fields = answer.split()
                if fields[:2] == ["@@done", str(number)]:
                    output = out.read_text(encoding="utf-8") if out.exists() else ""
                    given.unlink(missing_ok=True)
                    out.unlink(missing_ok=True)
                    return int(fields[2]), output

    def _log(self) -> Path:
        return self._home / "server.log"

    def _ensure_server(self) -> subprocess.Popen[str]:
        if self._server is not None and self._server.poll() is None:
            return self._server
        self._stop_server()
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "FLINK_LOG_DIR": str(self._home)}
        env.pop("PYTHONPATH", None)
        with self._log().open("a") as log:
            server = subprocess.Popen(
                [str(self.python), str(_JOB), "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
                cwd=self._home,
            )
        answers: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert server.stdout is not None
            for line in server.stdout:
                if line.startswith("@@done "):
                    answers.put(line.strip())
            answers.put(None)

        threading.Thread(target=read, name="flink-oracle-answers", daemon=True).start()
        self._server, self._answers = server, answers
        return server

    def _stop_server(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        with contextlib.suppress(OSError):
            assert server.stdin is not None
            server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

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
