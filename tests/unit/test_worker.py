"""Garbage-collector hygiene of the connector's Spark tasks (``_worker``)."""

from __future__ import annotations

import gc

from dagster_kafka_flinklike._worker import collector_paused

from .test_package import fresh_python


def test_the_worker_heap_is_frozen_again_only_after_an_import() -> None:
    # In a fresh interpreter: the first call freezes what is alive; without a new module the
    # next call freezes nothing (objects made meanwhile stay collectable); after an import
    # (a task's lazy imports) it freezes the module's objects too.
    code = (
        "import gc\n"
        "from dagster_kafka_flinklike._worker import settle_worker_heap\n"
        "before = gc.get_freeze_count()\n"
        "settle_worker_heap()\n"
        "frozen = gc.get_freeze_count()\n"
        "kept = [[i] for i in range(1000)]\n"
        "settle_worker_heap()\n"
        "same = gc.get_freeze_count() == frozen\n"
        "del kept\n"
        "import imaplib, mailbox\n"
        "settle_worker_heap()\n"
        "after_import = gc.get_freeze_count() - frozen\n"
        "settle_worker_heap()\n"
        "print(before, frozen > 1000, same, after_import > 1000, "
        "gc.get_freeze_count() - frozen == after_import)"
    )
    assert fresh_python(code).split() == ["0", "True", "True", "True", "True"]


def test_the_collector_is_paused_for_the_block_and_restored() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:  # a collector already off stays off
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
