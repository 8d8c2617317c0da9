"""The fuzz runner: targets, their counts, failing inputs written to files, and replays.

A :class:`Target` makes one input from a random source (:meth:`Target.case`) and checks a
batch of inputs (:meth:`Target.check`), returning a :class:`Finding` for each input that broke
a property. The runner (:func:`run_target`) generates input ``i`` from
:func:`~.mutate.case_random` ``(seed, target, i)``, so a run is the same for the same seed, and
writes each failing input to a JSON file (:func:`write_failure`) that ``--replay`` reads back.
"""

from __future__ import annotations

import base64
import json
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .mutate import case_random

#: Failing inputs written per target at most (the rest are counted).
MAX_REPORTS = 5


@dataclass(frozen=True)
class Finding:
    """Input ``index`` of a checked batch broke a property: ``kind`` says which, ``message``
    how."""

    index: int
    kind: str
    message: str
    #: What to write as the input, when not the checked input itself (a call made elsewhere).
    case: Any = None


@dataclass
class Counts:
    """What a target saw: inputs, how many were refused (an error of the project's own, or
    dirty data), failures, and figures of its own (``extra``)."""

    inputs: int = 0
    refused: int = 0
    failures: int = 0
    seconds: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, amount: int = 1) -> None:
        self.extra[name] = self.extra.get(name, 0) + amount

    def figures(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "refused": self.refused,
            "failures": self.failures,
            "seconds": round(self.seconds, 1),
            **self.extra,
        }


class Target:
    """One fuzz target. Subclasses set :attr:`name`, :attr:`batch` and define :meth:`case` and
    :meth:`check`."""

    name = ""
    #: Inputs per :meth:`check` call.
    batch = 1000
    #: Inputs of a full run when fewer than asked (a slow target), else None.
    cap: int | None = None
    #: What :attr:`Counts.refused` counts, as printed.
    refused_as = "refused"
    #: Whether the target makes its inputs itself, from the seed and their indices
    #: (:meth:`check_indices` instead of :meth:`case` and :meth:`check`).
    generates = False

    def case(self, rng: Any, index: int = 0) -> Any:
        """Input ``index``, made from ``rng`` (its own): JSON-like data (dicts, lists, text,
        numbers, bytes)."""
        raise NotImplementedError

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        """Run ``cases``, count them into ``counts`` and return what broke a property."""
        raise NotImplementedError

    def check_indices(self, seed: int, indices: range, counts: Counts) -> list[Finding]:
        """Make and check inputs ``indices`` of ``seed`` (targets that :attr:`generates`)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the target holds (a process, a session)."""


def foreign(error: BaseException) -> str:
    """``error`` as a finding's message: its type, text and where it was raised."""
    frames = traceback.extract_tb(error.__traceback__)[-3:]
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    return f"{type(error).__module__}.{type(error).__qualname__}: {str(error)[:400]} [{where}]"


# -- input files ---------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """``value`` as JSON data (bytes as ``{"$bytes": base64}``, tuples as lists)."""
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not _lone(k) and not k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$map": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, str) and _lone(value):  # lone surrogates: JSON text cannot hold them
        return {"$text": base64.b64encode(value.encode("utf-8", "surrogatepass")).decode()}
    return value


def _lone(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(value, dict):
        if "$bytes" in value:
            return base64.b64decode(value["$bytes"])
        if "$text" in value:
            return base64.b64decode(value["$text"]).decode("utf-8", "surrogatepass")
        if "$map" in value:
            return {decode(k): decode(v) for k, v in value["$map"]}
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def write_failure(
    directory: Path, target: Target, seed: int, index: int, case: Any, finding: Finding
) -> Path:
    """The failing input as a file ``--replay`` reads (its target, seed, index and data)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{target.name}-{seed}-{index}.json"
    data = {"target": target.name, "seed": seed, "index": index, "kind": finding.kind}
    data.update(message=finding.message, case=encode(case))
    path.write_text(json.dumps(data, indent=1, ensure_ascii=True) + "\n")
    return path


def read_failure(path: Path) -> tuple[str, int, int, Any]:
    """(target, seed, index, input) of a file :func:`write_failure` wrote."""
    data = json.loads(path.read_text())
    return data["target"], int(data["seed"]), int(data["index"]), decode(data["case"])


# -- running -------------------------------------------------------------------------------------


def _batches(inputs: int, batch: int) -> Iterator[range]:
    for start in range(0, inputs, batch):
        yield range(start, min(inputs, start + batch))


def run_target(
    target: Target,
    inputs: int,
    seed: int,
    failures: Path,
    progress: float = 60.0,
    out: Any = sys.stdout,
    max_seconds: float | None = None,
) -> Counts:
    """Run ``inputs`` inputs of ``target``; failing inputs go to files under ``failures``
    (:data:`MAX_REPORTS` per target) and are printed. A line of progress every ``progress``
    seconds; with ``max_seconds``, no batch starts after so many seconds."""
    counts = Counts()
    started = last = time.monotonic()
    reported = 0
    for indices in _batches(inputs, target.batch):
        if max_seconds is not None and time.monotonic() - started >= max_seconds:
            break
        if target.generates:
            cases: list[Any] = []
            findings = target.check_indices(seed, indices, counts)
        else:
            cases = [target.case(case_random(seed, target.name, i), i) for i in indices]
            findings = target.check(cases, counts)
        counts.inputs += len(indices)
        counts.failures += len(findings)
        for finding in findings:
            index = indices[finding.index]
            if reported < MAX_REPORTS:
                reported += 1
                case = finding.case if finding.case is not None else cases[finding.index]
                path = write_failure(failures, target, seed, index, case, finding)
                print(
                    f"FAILURE {target.name} #{index} ({finding.kind}): {finding.message}\n"
                    f"  input: {_shown(case)}\n  replay: python -m tests.fuzz --replay {path}",
                    file=out,
                    flush=True,
                )
        now = time.monotonic()
        if now - last >= progress:
            last = now
            rate = counts.inputs / (now - started)
            print(f"  {target.name}: {counts.inputs}/{inputs} ({rate:.0f}/s)", file=out, flush=True)
    counts.seconds = time.monotonic() - started
    return counts


def _shown(case: Any, limit: int = 300) -> str:
    text = repr(case)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def replay(target: Target, seed: int, index: int, case: Any) -> list[Finding]:
    """Check the one input ``case`` (input ``index`` of ``seed``) again."""
    if target.generates:
        return target.check_indices(seed, range(index, index + 1), Counts())
    return target.check([case], Counts())


__all__ = [
    "MAX_REPORTS",
    "Counts",
    "Finding",
    "Target",
    "decode",
    "encode",
    "foreign",
    "read_failure",
    "replay",
    "run_target",
    "write_failure",
]
