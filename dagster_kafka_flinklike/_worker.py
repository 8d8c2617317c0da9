"""Garbage-collector hygiene for the connector's code in Spark's Python workers.

Spark's Python worker runs a full garbage collection after every task, and Python's collector
also runs whenever enough container objects were allocated. Tasks that turn Arrow batches into
Kafka records (or records into batches) allocate many short-lived objects without reference
cycles: collecting meanwhile scans them, and the whole heap, for nothing.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: ``len(sys.modules)`` when the heap was last frozen (-1: never).
_settled_modules = -1


def settle_worker_heap() -> None:
    """At a task's start, if the worker imported modules since the last time: collect, then
    freeze the objects alive now.

    Those objects are modules, classes and functions that live as long as the worker, so the
    collection Spark runs after each task need not scan them again. The first connector task
    imports what its code imports lazily (pyarrow.compute, confluent-kafka: tens of thousands
    of objects, about 15 ms per collection), so the second task freezes again; after that the
    module count holds and this costs one comparison.
    """
    global _settled_modules
    if len(sys.modules) == _settled_modules:
        return
    gc.collect()
    gc.freeze()
    _settled_modules = len(sys.modules)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block, if it is enabled.

    For blocks that allocate many objects without reference cycles (messages, batches' Python
    values): reference counting frees them as the block goes on, and any cycle made meanwhile
    is collected once the collector runs again.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
