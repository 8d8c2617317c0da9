"""The target of the C modules (``formats/_text_scan.c``, ``source/_messages.c``) under gcc's
AddressSanitizer and UndefinedBehaviorSanitizer.

The modules are built as ``tests/unit/test_native_sanitized.py`` builds them, once per run, and
driven by :mod:`.native_worker` in a process with the sanitizer runtime preloaded, a batch of
inputs per process. A sanitizer report (or any other death of the process) is a failure of the
input whose call the worker wrote last; the batch then goes on in a new process from the next
input. The worker reports calls that returned a result of the wrong shape, or refused valid
arguments, itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.unit.test_native_sanitized import SANITIZERS, SOURCES, _build, _gcc

from .harness import Counts, Finding, Target

#: A worker process that runs longer than this is stopped (and its input reported).
WORKER_TIMEOUT_S = 3600
#: New processes after crashes, per batch, before the rest of the batch is left unchecked.
MAX_CRASHES = 5
ROOT = Path(__file__).resolve().parents[2]


class Native(Target):
    """See the module's docstring; inputs are made in the worker (:attr:`generates`)."""

    name = "native"
    batch = 100_000
    generates = True

    def __init__(self, **_: Any) -> None:
        self._directory: Path | None = None
        self._env: dict[str, str] = {}

    def _built(self) -> Path:
        if self._directory is None:
            gcc, libasan = _gcc()
            built = _cached_build(gcc)
            self._directory = Path(tempfile.mkdtemp(prefix="dkf-fuzz-native-run-"))
            for module in built.glob("*.so"):  # (each run writes its own last-call.txt)
                (self._directory / module.name).symlink_to(module)
            self._env = {
                **os.environ,
                "LD_PRELOAD": libasan,
                "ASAN_OPTIONS": "detect_leaks=0",
                "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
                "PYTHONMALLOC": "malloc",  # every object from malloc: ASan sees small buffers too
            }
        return self._directory

    def close(self) -> None:
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    def check_indices(self, seed: int, indices: range, counts: Counts) -> list[Finding]:
        """Run inputs ``indices`` of ``seed`` in worker processes; findings index into
        ``indices``."""
        directory = self._built()
        findings: list[Finding] = []
        start, stop, crashes = indices.start, indices.stop, 0
        while start < stop:
            _, found, crashed_at, report = self._worker(
                directory, seed, start, stop - start, counts
            )
            findings += [
                Finding(i - indices.start, kind, message, case) for i, kind, message, case in found
            ]
            if crashed_at is None:
                break
            findings.append(
                Finding(
                    crashed_at[0] - indices.start,
                    "sanitizer report or crash",
                    report,
                    crashed_at[1],
                )
            )
            start = crashed_at[0] + 1
            crashes += 1
            if crashes >= MAX_CRASHES and start < stop:
                counts.add("unchecked", stop - start)
                break
        return findings

    def _worker(
        self, directory: Path, seed: int, start: int, count: int, counts: Counts
    ) -> tuple[int, list[tuple[int, str, str, Any]], tuple[int, Any] | None, str]:
        last = directory / "last-call.txt"
        last.unlink(missing_ok=True)
        command = [
            sys.executable,
            "-m",
            "tests.fuzz.native_worker",
            str(directory),
            str(seed),
            str(start),
            str(count),
        ]
        try:
            run = subprocess.run(
                command,
                cwd=ROOT,
                env=self._env,
                capture_output=True,
                text=True,
                timeout=WORKER_TIMEOUT_S,
                errors="replace",
            )
            returncode, stdout, stderr = run.returncode, run.stdout, run.stderr
        except subprocess.TimeoutExpired as exc:
            returncode, stdout, stderr = (
                -9,
                _text(exc.stdout),
                f"timed out after {WORKER_TIMEOUT_S} s",
            )
        found: list[tuple[int, str, str, Any]] = []
        done = 0
        for line in stdout.splitlines():
            data = json.loads(line)
            if "index" in data:
                found.append(
                    (
                        data["index"],
                        data["kind"],
                        data["message"],
                        {"seed": seed, "index": data["index"]},
                    )
                )
            else:
                done = data["done"]
                counts.refused += data["refused"]
                counts.add("scan_calls", data["scan"])
                counts.add("nested_scan_calls", data["nested"])
                counts.add("exact_calls", data["exact"])
                counts.add("message_calls", data["messages"])
        if returncode == 0 and not any(s in stderr for s in SANITIZERS):
            return done, found, None, ""
        number = last.read_text(errors="replace").strip().lstrip("#") if last.exists() else ""
        index = int(number) if number.isdigit() else start  # (died before its first call)
        report = _report(stderr, returncode)
        return done, found, (index, self._describe(directory, seed, index)), report

    def _describe(self, directory: Path, seed: int, index: int) -> dict[str, Any]:
        """Input ``index``'s call as text (made again in a worker that does not call it)."""
        command = [
            sys.executable,
            "-m",
            "tests.fuzz.native_worker",
            str(directory),
            str(seed),
            str(index),
            "-1",
        ]
        run = subprocess.run(
            command, cwd=ROOT, env=self._env, capture_output=True, text=True, errors="replace"
        )
        return {
            "seed": seed,
            "index": index,
            "call": (run.stdout.strip() or run.stderr[-2000:])[:4000],
        }


def _cached_build(gcc: str) -> Path:
    """The sanitized modules, built once per version of their sources (and of this
    interpreter) into a directory under the system's temporary directory."""
    digest = hashlib.sha256(sys.version.encode())
    for source in SOURCES.values():
        digest.update(source.read_bytes())
    directory = Path(tempfile.gettempdir()) / f"dkf-fuzz-native-{digest.hexdigest()[:16]}"
    if not (directory / "built").exists():
        building = Path(tempfile.mkdtemp(prefix="dkf-fuzz-native-"))
        _build(gcc, building)
        (building / "built").touch()
        try:
            building.rename(directory)
        except OSError:  # built meanwhile by another run
            shutil.rmtree(building, ignore_errors=True)
    return directory


def _text(data: Any) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else str(data)


def _report(stderr: str, returncode: int) -> str:
    """The lines of a sanitizer's report that say what happened and where."""
    lines = stderr.splitlines()
    telling = [
        line.strip()
        for line in lines
        if any(s in line for s in SANITIZERS)
        or line.lstrip().startswith(("#0", "#1", "#2", "SUMMARY"))
    ]
    return f"exit {returncode}: " + " | ".join(telling[:8] or lines[-5:])[:1500]


__all__ = ["Native"]
