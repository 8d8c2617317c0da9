"""The standing fuzz targets (``make fuzz``; not part of CI: ``tests/unit/test_fuzz_targets.py``
runs each one CI-sized).

Targets, each in its own module: the decoders (``json``, ``csv``, ``raw``, ``avro``,
``protobuf``, ``changelog``: :mod:`.decoders`), the options layer (``options``), the Flink SQL
front end (``sql``), the data-ingestion and the Component's YAML loaders (``ingestion``,
``component``: :mod:`.loaders`) and the C modules under AddressSanitizer and
UndefinedBehaviorSanitizer (``native``: :mod:`.native`). ``python -m tests.fuzz --help`` says
how to run them; :mod:`.harness` how a run goes; :mod:`.mutate` how inputs are made.

Imports nothing at import time, so the sanitized worker process (which must not load the
package) can import :mod:`.mutate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .harness import Target

#: Target name → "module:class", in the order a full run goes.
TARGETS = {
    "options": "options:Options",
    "sql": "loaders:FlinkSql",
    "ingestion": "loaders:IngestionYaml",
    "component": "loaders:ComponentYaml",
    "native": "native:Native",
    "json": "decoders:Json",
    "csv": "decoders:Csv",
    "raw": "decoders:Raw",
    "avro": "decoders:Avro",
    "protobuf": "decoders:Protobuf",
    "changelog": "decoders:Changelog",
}

#: The decoder targets (``spark=False`` runs them without Spark).
DECODERS = ("json", "csv", "raw", "avro", "protobuf", "changelog")


def make_target(name: str, **kwargs: object) -> Target:
    """The target ``name`` (see :data:`TARGETS`), built with ``kwargs``."""
    import importlib

    module, _, cls = TARGETS[name].partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)(**kwargs)  # type: ignore[no-any-return]


__all__ = ["DECODERS", "TARGETS", "make_target"]
