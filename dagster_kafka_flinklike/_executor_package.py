"""This package as a cluster's executors import it: an archive that Spark ships with the
application and unpacks in each executor's working folder (``spark.archives``), first on the
executors' ``PYTHONPATH``.

The connector's reading and writing tasks run in the executors' Python workers, so they import
this package there. On one machine (local mode, the local Spark Connect server) they import the
driver's own installation. On a cluster the executors' Python usually has the dependencies
(pyarrow, pandas, confluent-kafka, ...) but not the application's code: Spark's own answer is
to ship it with the application. A zip of ``.py`` files on ``spark.submit.pyFiles`` would be
imported from the zip, where Python cannot load compiled modules; an archive is unpacked, so the
C scanners load too (when the executors' Python and platform match the driver's; else the
package uses its Python paths, with the same results).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["PACKAGE_FOLDER", "package_archive", "ships_package", "with_package_shipped"]

#: The folder each executor unpacks the archive into (``spark.archives``' ``#`` alias), relative
#: to its working folder, where its Python workers start.
PACKAGE_FOLDER = "dagster_kafka_flinklike_package"
_PACKAGE = Path(__file__).resolve().parent
_SKIPPED_DIRS = {"__pycache__"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo", ".o", ".c")


def _package_files() -> list[Path]:
    files = []
    for root, dirs, names in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        files += [Path(root, n) for n in sorted(names) if not n.endswith(_SKIPPED_SUFFIXES)]
    return files


def package_archive(directory: Path | None = None) -> Path:
    """A zip of this package's installed files (its compiled modules included, bytecode left
    out), named by its content's digest, written once into ``directory`` (default: a folder of
    the system's temporary directory) and reused while the package is unchanged.

    Example:
        >>> package_archive().name  # doctest: +SKIP
        'dagster_kafka_flinklike-0.1.0-3f2a9c1d7e4b.zip'
    """
    from .version import __version__

    files = _package_files()
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0")
        digest.update(path.read_bytes())
    folder = directory or Path(tempfile.gettempdir()) / "dagster_kafka_flinklike-executors"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"dagster_kafka_flinklike-{__version__}-{digest.hexdigest()[:12]}.zip"
    if target.is_file():
        return target
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    os.close(fd)
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                name = f"{_PACKAGE.name}/{path.relative_to(_PACKAGE)}"
                archive.writestr(zipfile.ZipInfo.from_file(path, name), path.read_bytes())
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return target


def ships_package(config: Mapping[str, Any]) -> bool:
    """Whether a classic session of ``config`` has executors of a cluster: ``spark.master``
    names one (not ``local``; unset, PySpark runs locally)."""
    master = str(config.get("spark.master") or "").strip()
    return bool(master) and not master.startswith("local")


def with_package_shipped(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with :func:`package_archive` added to ``spark.archives`` (unpacked as
    :data:`PACKAGE_FOLDER`) and that folder put first on the executors' ``PYTHONPATH``
    (``spark.executorEnv.PYTHONPATH``); the user's archives and path entries are kept.

    Example:
        >>> config = with_package_shipped({"spark.master": "spark://h:7077"})  # doctest: +SKIP
        >>> config["spark.executorEnv.PYTHONPATH"]  # doctest: +SKIP
        'dagster_kafka_flinklike_package'
    """
    out = dict(config)
    shipped = f"{package_archive()}#{PACKAGE_FOLDER}"
    archives = [a for a in str(out.get("spark.archives") or "").split(",") if a.strip()]
    if not any(a.strip().endswith(f"#{PACKAGE_FOLDER}") for a in archives):
        out["spark.archives"] = ",".join([*archives, shipped])
    path = [p for p in str(out.get("spark.executorEnv.PYTHONPATH") or "").split(":") if p]
    out["spark.executorEnv.PYTHONPATH"] = ":".join(dict.fromkeys([PACKAGE_FOLDER, *path]))
    return out
