"""``python -m tests.fuzz [TARGET[=N] ...] [--inputs N] [--seed S] [--replay FILE]``

Runs the fuzz targets (all by default; see :data:`tests.fuzz.TARGETS`) for ``--inputs`` inputs
each (a slow target's own cap applies unless ``--uncapped``; ``TARGET=N`` sets one target's
count), prints per target its inputs, refusals, failures and seconds, then as the last line a
JSON object of those figures. Exits 1 on any failure. ``--replay FILE`` checks a failing input
that a run wrote again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import DECODERS, TARGETS, make_target
from .harness import Counts, read_failure, replay, run_target

DEFAULT_FAILURES = Path(".local") / "fuzz-failures"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("targets", nargs="*", help=f"targets, of {', '.join(TARGETS)}; NAME=N")
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--uncapped", action="store_true", help="ignore the slow targets' caps")
    parser.add_argument(
        "--failures", type=Path, default=DEFAULT_FAILURES, help="where failing inputs are written"
    )
    parser.add_argument("--batch", type=int, help="inputs per check (default: each target's own)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        help="stop a target after the batch that passes this many seconds",
    )
    parser.add_argument(
        "--no-spark",
        action="store_true",
        help="the decoders without Spark: the reader's batch and the Python codecs",
    )
    parser.add_argument("--replay", type=Path, help="a failing input's file, checked again")
    parser.add_argument(
        "--progress", type=float, default=60.0, help="seconds between progress lines"
    )
    return parser.parse_args(argv)


def _replay(path: Path) -> int:
    name, seed, index, case = read_failure(path)
    target = make_target(name)
    try:
        findings = replay(target, seed, index, case)
    finally:
        target.close()
    for finding in findings:
        print(f"FAILURE {name} #{index} ({finding.kind}): {finding.message}")
    if not findings:
        print(f"{name} #{index}: no failure now")
    return 1 if findings else 0


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.replay is not None:
        return _replay(args.replay)
    chosen: dict[str, int | None] = {}
    for word in args.targets or list(TARGETS):
        name, _, count = word.partition("=")
        if name not in TARGETS:
            print(f"unknown target {name!r}; targets: {', '.join(TARGETS)}", file=sys.stderr)
            return 2
        chosen[name] = int(count) if count else None
    started = time.monotonic()
    figures: dict[str, dict[str, object]] = {}
    failed = False
    for name, count in chosen.items():
        target = (
            make_target(name, spark=False)
            if args.no_spark and name in DECODERS
            else make_target(name)
        )
        if args.batch:
            target.batch = args.batch
        inputs = count if count is not None else args.inputs
        capped = count is None and target.cap is not None and not args.uncapped
        if capped and target.cap is not None and target.cap < inputs:
            inputs = target.cap
        else:
            capped = False
        print(f"{name}: {inputs} inputs, seed {args.seed}", flush=True)
        try:
            counts = run_target(
                target,
                inputs,
                args.seed,
                args.failures,
                args.progress,
                max_seconds=args.max_seconds,
            )
        finally:
            target.close()
        failed = failed or counts.failures > 0
        figures[name] = counts.figures()
        print(_line(name, target.refused_as, counts, capped, inputs), flush=True)
    total = time.monotonic() - started
    print(json.dumps({"targets": figures, "seed": args.seed, "total_seconds": round(total, 1)}))
    return 1 if failed else 0


def _line(name: str, refused_as: str, counts: Counts, capped: bool, asked: int) -> str:
    rate = counts.inputs / counts.seconds if counts.seconds else 0.0
    extra = "".join(f", {k} {v}" for k, v in sorted(counts.extra.items()))
    note = " (capped: a slow target)" if capped else ""
    if counts.inputs < asked:
        note += f" (stopped by --max-seconds, of {asked})"
    return (
        f"{name}: {counts.inputs} inputs{note}, {refused_as} {counts.refused}, failures "
        f"{counts.failures}{extra}, {counts.seconds:.1f} s ({rate:.0f}/s)"
    )


if __name__ == "__main__":
    sys.exit(main())
