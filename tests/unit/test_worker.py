"""What the connector keeps in Spark's Python workers: garbage-collector hygiene (``_worker``)
and the Kafka clients kept between tasks (``_idle_clients``)."""

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


def test_an_idle_client_is_reused_and_only_a_new_one_is_prepared() -> None:
    from dagster_kafka_flinklike._idle_clients import IdleClients

    made: list[dict] = []
    prepared: list[object] = []
    clients = IdleClients(lambda s: made.append(s) or object(), lambda c: None, 60.0)
    first = clients.take({"a": 1}, prepared.append)
    assert prepared == [first] and len(made) == 1
    clients.put({"a": 1}, first)
    assert clients.take({"a": 1}, prepared.append) is first  # kept: not made nor prepared again
    other = clients.take({"a": 2}, prepared.append)
    assert prepared == [first, other] and len(made) == 2
