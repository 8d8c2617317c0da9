"""Garbage-collector hygiene for the connector's code in Spark's Python workers.

Spark's Python worker runs a full garbage collection after every task, and Python's collector
also runs whenever enough container objects were allocated. Tasks that turn Arrow batches into
Kafka records (or records into batches) allocate many short-lived objects without reference
cycles: collecting meanwhile scans them, and the whole heap, for nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_heap_settled = False


def settle_worker_heap() -> None:
    """Once per process: collect, then freeze the objects alive now.

    The objects alive when a worker first runs a connector task are modules, classes and
    functions that live as long as the worker, so the collector after each task need not scan
    them again.
    """
    global _heap_settled
    if _heap_settled:
        return
    _heap_settled = True
    gc.collect()
    gc.freeze()


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
