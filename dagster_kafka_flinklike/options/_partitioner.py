"""``sink.partitioner``: the grammar of its value and the loading of a user partitioner class.

``default``, ``fixed`` and ``round-robin`` name built-in partitioners; anything else is a dotted
class path (``package.module.Class``) whose class is imported and checked once, when the table is
declared, and kept on the :class:`~dagster_kafka_flinklike.options.KafkaTableSpec`.
"""

from __future__ import annotations

import importlib
import inspect
import re

from ..errors import KafkaOptionsError

_OPTION = "sink.partitioner"
_CLASS_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")

#: The ``sink.partitioner`` values that name a built-in partitioner.
BUILT_IN = ("default", "fixed", "round-robin")


def check_partitioner_option(value: str) -> str:
    """The stripped ``sink.partitioner`` value: a built-in name or a dotted class path.

    Example:
        >>> check_partitioner_option(" fixed ")
        'fixed'

    Raises:
        KafkaOptionsError: the value is empty or neither a built-in name nor a class path.
    """
    partitioner = value.strip()
    if not partitioner:
        raise KafkaOptionsError(
            "Option 'sink.partitioner' should be a non-empty string.", keys=(_OPTION,)
        )
    if partitioner not in BUILT_IN and not _CLASS_PATH.fullmatch(partitioner):
        raise KafkaOptionsError(
            f"Option 'sink.partitioner' must be 'default', 'fixed', 'round-robin' or a dotted "
            f"class path such as 'mypkg.partitioners.ByRegion', got {partitioner[:60]!r}.",
            keys=(_OPTION,),
        )
    return partitioner


def load_partitioner(path: str) -> type:
    """Import the partitioner class ``path`` (``package.module.Class``) and check its shape.

    Call it when a table is declared so a bad ``sink.partitioner`` fails early.

    Example:
        >>> load_partitioner("mypkg.partitioners.ByRegion")  # doctest: +SKIP
        <class 'mypkg.partitioners.ByRegion'>

    Raises:
        KafkaOptionsError: the module or class cannot be found, or the class cannot serve as a
            partitioner (no ``partition`` method, abstract, or its constructor needs arguments).
    """
    module_name, _, class_name = path.strip().rpartition(".")
    where = f"Option 'sink.partitioner' = {path!r}"
    if not module_name or not class_name:
        raise KafkaOptionsError(
            f"{where} is not a class path: write 'package.module.ClassName', or use one of "
            f"{', '.join(repr(b) for b in BUILT_IN)}.",
            keys=(_OPTION,),
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise KafkaOptionsError(
            f"{where}: module {module_name!r} cannot be imported ({exc}). Install it where the "
            f"Dagster code location and the Spark executors run.",
            keys=(_OPTION,),
        ) from None
    cls = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        raise KafkaOptionsError(
            f"{where}: module {module_name!r} has no class {class_name!r}.", keys=(_OPTION,)
        )
    if not callable(getattr(cls, "partition", None)) or inspect.isabstract(cls):
        raise KafkaOptionsError(
            f"{where}: {class_name} does not implement KafkaPartitioner: it needs a concrete "
            f"method partition(key, value, partitions) -> int.",
            keys=(_OPTION,),
        )
    opener = getattr(cls, "open", None)
    if opener is not None and not callable(opener):
        raise KafkaOptionsError(
            f"{where}: {class_name}.open must be a method open(task_index, num_tasks).",
            keys=(_OPTION,),
        )
    try:
        inspect.signature(cls).bind()
    except TypeError:
        raise KafkaOptionsError(
            f"{where}: {class_name} must be constructible without arguments (one instance is "
            f"built per writing task).",
            keys=(_OPTION,),
        ) from None
    except ValueError:  # no introspectable signature (a builtin): instantiation will tell
        pass
    return cls
