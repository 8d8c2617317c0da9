"""The C modules (``formats/_text_scan.c``, ``source/_messages.c``) built with gcc's
AddressSanitizer and UndefinedBehaviorSanitizer and driven over arbitrary arguments by a property
test (``sanitized_driver.py``) in a process with the sanitizer runtime preloaded: no call reads
or writes outside its buffers or runs into undefined behaviour; a bad argument is a Python
exception.

gcc and its libasan are required wherever the package builds its C modules (a machine without
them fails here, it does not skip)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import dagster_kafka_flinklike

PACKAGE = Path(dagster_kafka_flinklike.__file__).parent
SOURCES = {
    "_text_scan": PACKAGE / "formats" / "_text_scan.c",
    "_messages": PACKAGE / "source" / "_messages.c",
}
DRIVER = Path(__file__).with_name("sanitized_driver.py")
#: Examples per property (seven properties); the whole test takes tens of seconds.
EXAMPLES = 300
SANITIZERS = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:", "LeakSanitizer")


def _gcc() -> tuple[str, str]:
    """gcc and the path of its ASan runtime."""
    gcc = shutil.which("gcc")
    assert gcc is not None, "gcc is required to build the C modules with sanitizers"
    found = subprocess.run(
        [gcc, "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert os.path.isabs(found) and Path(found).exists(), (
        f"gcc's AddressSanitizer runtime is missing ({found!r}); install libasan for gcc"
    )
    return gcc, found


def _build(gcc: str, directory: Path) -> None:
    """Both modules, sanitized, into ``directory`` (compiled side by side)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    flags = [
        "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
        "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
        "-Wall", f"-I{sysconfig.get_paths()['include']}",
    ]  # fmt: skip
    builds = [
        subprocess.Popen(
            [gcc, *flags, str(source), "-o", str(directory / f"{name}{suffix}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, source in SOURCES.items()
    ]
    for build in builds:
        output, _ = build.communicate(timeout=300)
        assert build.returncode == 0, output


def test_the_c_modules_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    gcc, libasan = _gcc()
    _build(gcc, tmp_path)
    env = {
        **os.environ,
        "LD_PRELOAD": libasan,
        "ASAN_OPTIONS": "detect_leaks=0",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        # Every Python object from malloc, so ASan sees the bounds of small bytes objects too.
        "PYTHONMALLOC": "malloc",
    }
    run = subprocess.run(
        [sys.executable, str(DRIVER), str(tmp_path), str(EXAMPLES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    last = tmp_path / "last-call.txt"
    report = (
        f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-8000:]}\nlast call: "
        f"{last.read_text()[:4000] if last.exists() else '-'}"
    )
    assert run.returncode == 0, report
    assert not any(s in run.stderr for s in SANITIZERS), report
    assert run.stdout.count("examples") == 7, report
