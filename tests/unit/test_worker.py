"""Garbage-collector hygiene of the connector's Spark tasks (``_worker``)."""

from __future__ import annotations

import gc

from dagster_kafka_flinklike._worker import collector_paused

from .test_package import fresh_python


def test_the_worker_heap_is_frozen_once_per_process() -> None:
    # In a fresh interpreter: the first call freezes what is alive, the second does nothing.
    code = (
        "import gc\n"
        "from dagster_kafka_flinklike._worker import settle_worker_heap\n"
        "before = gc.get_freeze_count()\n"
        "settle_worker_heap()\n"
        "frozen = gc.get_freeze_count()\n"
        "kept = [[i] for i in range(1000)]\n"
        "settle_worker_heap()\n"
        "print(before, frozen > 1000, gc.get_freeze_count() == frozen)"
    )
    assert fresh_python(code).split() == ["0", "True", "True"]


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
