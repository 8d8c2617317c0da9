"""The vote of the split transactions, without Kafka or Spark: the driver's verdict server and
the holders that keep prepared transactions until its verdict (sockets and threads as in a run;
the producers are stand-ins that record what they were told)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from dagster_kafka_flinklike.sink import split_transactions as st


class Prepared:
    """A prepared transaction's producer: what the holder did with it."""

    def __init__(self, fail_commit: Exception | None = None) -> None:
        self.fail_commit = fail_commit
        self.calls: list[str] = []
        self.done = threading.Event()

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")
        self.done.set()
        if self.fail_commit is not None:
            raise self.fail_commit

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")
        self.done.set()


def hold(server: st.VerdictServer, split: int, producer: Prepared, deadline_s: float = 30.0):
    """What a writing task does once its split is prepared: register, then hand the producer
    to a holder thread."""
    conn = st._register(server.address, server.token, split, 0, 10 * (split + 1), 100)
    thread = threading.Thread(
        target=st._hold, args=(producer, conn, time.monotonic() + deadline_s, f"t-{split}")
    )
    thread.start()
    return conn, thread


@pytest.fixture
def server():
    verdicts = st.VerdictServer("127.0.0.1")
    yield verdicts
    verdicts.close()


def test_every_holder_commits_on_the_verdict(server) -> None:
    producers = [Prepared() for _ in range(3)]
    threads = [hold(server, i, p)[1] for i, p in enumerate(producers)]
    assert sorted(server.prepared()) == [0, 1, 2]
    assert [server.prepared()[i].records for i in range(3)] == [10, 20, 30]
    assert server.alive([0, 1, 2]) == {}
    assert server.commit([0, 1, 2], 10) == {}
    for thread in threads:
        thread.join(5)
    assert [p.calls for p in producers] == [["commit"]] * 3


def test_a_holder_that_is_gone_before_the_verdict_is_reported_lost(server) -> None:
    kept, gone = Prepared(), Prepared()
    hold(server, 0, kept)
    conn, thread = hold(server, 1, gone)
    conn.shutdown(socket.SHUT_RDWR)  # the worker's side of the connection ends (it died)
    thread.join(5)
    assert not thread.is_alive()
    lost = server.alive([0, 1, 2])
    assert set(lost) == {1, 2}
    assert "never registered" in lost[2]
    server.abort_all()
    assert kept.done.wait(5) and kept.calls == ["abort"]


def test_a_driver_that_goes_away_leaves_every_holder_aborting(server) -> None:
    producers = [Prepared() for _ in range(2)]
    threads = [hold(server, i, p)[1] for i, p in enumerate(producers)]
    server.close()
    for thread in threads:
        thread.join(5)
    assert [p.calls for p in producers] == [["abort"]] * 2


def test_a_holder_without_a_verdict_in_time_aborts(server) -> None:
    producer = Prepared()
    _, thread = hold(server, 0, producer, deadline_s=0.3)
    thread.join(5)
    assert producer.calls == ["abort"]
    assert set(server.alive([0])) == {0}


def test_a_second_registration_of_a_split_replaces_the_first(server) -> None:
    first, second = Prepared(), Prepared()
    _, first_thread = hold(server, 0, first)
    hold(server, 0, second)
    first_thread.join(5)
    assert first.calls == ["abort"]  # its connection was closed: it aborts
    assert server.commit([0], 10) == {}
    assert second.done.wait(5) and second.calls == ["commit"]


def test_a_commit_that_fails_is_reported_with_its_reason(server) -> None:
    from confluent_kafka import KafkaError, KafkaException

    fenced = KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance"))
    ok, bad = Prepared(), Prepared(fail_commit=fenced)
    hold(server, 0, ok)
    _, bad_thread = hold(server, 1, bad)
    failed = server.commit([0, 1], 10)
    assert list(failed) == [1]
    assert "fenced by a newer instance" in failed[1] and "'t-1'" in failed[1]
    assert ok.calls == ["commit"]
    bad_thread.join(5)
    assert bad.calls == ["commit", "abort"]  # never left open until it times out


def test_a_connection_without_the_token_is_refused(server) -> None:
    with pytest.raises(ConnectionError):
        st._register(server.address, b"x" * 16, 0, 0, 1, 1)
    assert server.prepared() == {}
