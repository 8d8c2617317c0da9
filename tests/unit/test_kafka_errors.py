"""One classifier of Kafka client errors, by error code."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from dagster_kafka_flinklike.errors import (
    KafkaClientError,
    KafkaErrorKind,
    classify_kafka_error,
    kafka_error_of,
)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (KafkaError.PRODUCER_FENCED, KafkaErrorKind.FENCED),
        (KafkaError.INVALID_PRODUCER_EPOCH, KafkaErrorKind.FENCED),
        (KafkaError._FENCED, KafkaErrorKind.FENCED),
        (KafkaError.NOT_COORDINATOR, KafkaErrorKind.RETRIABLE),
        (KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaErrorKind.RETRIABLE),
        (KafkaError.UNSTABLE_OFFSET_COMMIT, KafkaErrorKind.RETRIABLE),
        (KafkaError._TRANSPORT, KafkaErrorKind.RETRIABLE),
        (KafkaError._TIMED_OUT, KafkaErrorKind.RETRIABLE),
        # a leader whose high watermark is not caught up yet, after a whole cluster restarted
        (KafkaError.OFFSET_NOT_AVAILABLE, KafkaErrorKind.RETRIABLE),
        (KafkaError.NOT_ENOUGH_REPLICAS, KafkaErrorKind.RETRIABLE),
        (KafkaError.FENCED_LEADER_EPOCH, KafkaErrorKind.RETRIABLE),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaErrorKind.PERMANENT),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaErrorKind.PERMANENT),
    ],
)
def test_codes_are_classified(code: int, kind: KafkaErrorKind) -> None:
    assert classify_kafka_error(KafkaError(code)) == kind
    assert classify_kafka_error(KafkaException(KafkaError(code))) == kind


def test_librdkafka_flags_decide_when_the_code_does_not() -> None:
    assert classify_kafka_error(KafkaError(KafkaError._STATE, fatal=True)) == KafkaErrorKind.FATAL
    abortable = KafkaError(KafkaError._STATE, txn_requires_abort=True)
    assert classify_kafka_error(abortable) == KafkaErrorKind.ABORTABLE
    retriable = KafkaError(KafkaError._STATE, retriable=True)
    assert classify_kafka_error(retriable) == KafkaErrorKind.RETRIABLE


def test_the_error_is_found_in_a_chain_of_causes_and_text_never_decides() -> None:
    try:
        try:
            raise KafkaException(KafkaError(KafkaError.PRODUCER_FENCED))
        except KafkaException as exc:
            raise RuntimeError("Spark task failed") from exc
    except RuntimeError as wrapped:
        assert classify_kafka_error(wrapped) == KafkaErrorKind.FENCED
    assert classify_kafka_error(RuntimeError("producer fenced, epoch bumped")) is None
    assert kafka_error_of(None) is None


def test_client_errors_carry_the_kind_and_the_original_error() -> None:
    cause = KafkaException(KafkaError(KafkaError._TRANSPORT))
    error = KafkaClientError("Could not read the cluster's metadata", cause)
    assert error.kind == KafkaErrorKind.RETRIABLE
    assert error.kafka_error.code() == KafkaError._TRANSPORT


def test_a_sink_closes_without_raising_when_its_clients_were_left_fatal() -> None:
    """A broker fault can leave the transactional producer fatal; releasing it must not turn
    the run's outcome (a commit, or the error that failed it) into a raw client error."""
    from dagster_kafka_flinklike.sink.partitioners import SinkPartitioner
    from dagster_kafka_flinklike.sink.transactional import TransactionalSink

    fatal = KafkaException(KafkaError(KafkaError.INVALID_TXN_STATE, "Failed to end", fatal=True))
    released: list[str] = []

    class Client:
        def __init__(self, name: str) -> None:
            self.name = name

        def flush(self, timeout: float) -> int:
            released.append(self.name)
            raise fatal

        def close(self) -> None:
            released.append(self.name)
            raise fatal

    sink = TransactionalSink(
        "out",
        {"bootstrap.servers": "127.0.0.1:1"},
        "tx",
        partitioner=SinkPartitioner("default", "out"),
    )
    sink._producer = Client("producer")
    sink._consumers["group"] = Client("consumer")
    sink.close()
    assert released == ["consumer", "producer"]
    assert sink._producer is None and not sink._consumers
    sink.close()  # twice is harmless
    assert released == ["consumer", "producer"]


def test_a_dead_cluster_fails_within_the_timeout_naming_its_bootstrap_servers() -> None:
    import time

    from dagster_kafka_flinklike.source.admin import KafkaAdmin

    admin = KafkaAdmin({"bootstrap.servers": "127.0.0.1:9"}, timeout_s=2)  # nothing listens
    began = time.monotonic()
    with pytest.raises(KafkaClientError, match=r"cluster at 127\.0\.0\.1:9 within 2 s"):
        admin.partitions(["orders"])
    assert time.monotonic() - began < 6
