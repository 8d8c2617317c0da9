"""A Schema Registry that does not answer fails the run; it never makes records dirty.

The registry is the real embedded one, reached through a small local HTTP endpoint the tests
control (:class:`RegistryGate`): it forwards every request, answers a status of the test's choice
(500, 401) or is stopped (its port refuses connections). Each case fails a materialization that
tolerates dirty data, then checks that nothing moved — no materialization, no committed group
offset, nothing in the sink — and that the next run, with the registry answering, reads every
record.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient, record_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from dagster import AssetKey, DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.errors import SchemaRegistryClientError, SchemaRegistryErrorKind
from dagster_kafka_flinklike.local._service import free_port
from dagster_kafka_flinklike.source.records import ERROR
from dagster_kafka_flinklike.spark import local_spark_config
from tests.integration.test_decoding import rows, send, table
from tests.integration.test_dirty_data import read_topic

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "channel", "type": "string"}],
}
COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "channel", "type": "STRING"}]


class RegistryGate:
    """An HTTP endpoint in front of a registry: it forwards requests (after ``delay(path)``
    seconds), or answers ``fail(path)``'s status where that returns one; :meth:`stop` closes
    its port."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.path = parts.path
        self.port = free_port()
        self.fail: Callable[[str], int | None] = lambda _path: None
        self.delay: Callable[[str], float] = lambda _path: 0.0
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> None:
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                gate.requests.append(f"{self.command} {self.path}")
                time.sleep(gate.delay(self.path))
                status = gate.fail(self.path)
                if status is not None:
                    body = json.dumps({"error_code": status, "message": f"gate says {status}"})
                    self._answer(status, body.encode(), "application/json")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                forward = urllib.request.Request(
                    gate.base + self.path, data=data, method=self.command,
                    headers={k: v for k, v in self.headers.items()
                             if k.lower() in ("content-type", "accept")},
                )  # fmt: skip
                try:
                    with urllib.request.urlopen(forward, timeout=30) as answer:
                        self._answer(answer.status, answer.read(), answer.headers["Content-Type"])
                except urllib.error.HTTPError as refused:
                    self._answer(refused.code, refused.read(), refused.headers["Content-Type"])

            def _answer(self, status: int, body: bytes, kind: str | None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def gate(schema_registry_url: str) -> Iterator[RegistryGate]:
    gate = RegistryGate(schema_registry_url)
    try:
        yield gate
    finally:
        gate.stop()


@pytest.fixture
def resources(kafka_bootstrap, spark):
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def _orders(registry: SchemaRegistryClient, bootstrap: str, topic: str, strategy: Any = None):
    """Five orders written by Confluent's serializer (under ``strategy``'s subject)."""
    conf = {"subject.name.strategy": strategy} if strategy else None
    serializer = AvroSerializer(registry, json.dumps(ORDER), conf=conf)
    ctx = SerializationContext(topic, MessageField.VALUE)
    orders = [{"id": i, "channel": "web" if i % 2 else "app"} for i in range(5)]
    send(bootstrap, topic, [{"value": serializer(o, ctx)} for o in orders])


def _copy(source_topic: str, sink_topic: str, url: str, **sink: str):
    """A streaming asset copying the orders (registry Avro, dirty records tolerated) as JSON."""
    source = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": source_topic, "scan.startup.mode": "earliest-offset",
         "properties.group.id": f"g-{source_topic}", "format": "avro-confluent",
         "avro-confluent.url": url, "avro-confluent.properties.max.retries": "0",
         "ingestion.ignore-errors": "true"},
        columns=COLUMNS, role="source",
    )  # fmt: skip
    sink_spec = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": sink_topic, "format": "json", **sink},
        columns=COLUMNS, role="sink",
    )  # fmt: skip

    @kafka_streaming_asset(sources={"orders": source}, sink=sink_spec, name="copy_orders")
    def copy_orders(context, orders):
        return orders

    return copy_orders


def _committed(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}"})
    try:
        (found,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return found.offset
    finally:
        consumer.close()


def _assert_nothing_moved(instance, bootstrap: str, source: str, sink: str) -> None:
    assert instance.get_latest_materialization_event(AssetKey("copy_orders")) is None
    assert _committed(bootstrap, source) < 0  # no offset committed for the group
    assert read_topic(bootstrap, sink) == []


def _failure(result) -> str:
    assert not result.success
    return result.failure_data_for_node("copy_orders").error.to_string()


def _raised(result, cls_name: str) -> Any:
    """The error of type ``cls_name`` in the run's failure (Dagster wraps what the asset
    raised)."""
    info = result.failure_data_for_node("copy_orders").error
    while info is not None:
        if info.cls_name == cls_name:
            return info
        info = info.cause
    raise AssertionError(f"no {cls_name} in {_failure(result)}")


def test_registry_down_fails_the_run_and_the_next_run_reads_every_record(
    kafka_bootstrap, new_topic, schema_registry_url, gate, resources
) -> None:
    """Stopped registry (the planning's lookup of the subject's versions fails on the driver):
    the run fails naming the registry and what failed, nothing is counted dirty or moves."""
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    _orders(SchemaRegistryClient({"url": schema_registry_url}), kafka_bootstrap, source)
    instance = DagsterInstance.ephemeral()
    asset = _copy(source, sink, gate.url)  # the gate is not started: connection refused

    failed = materialize([asset], resources=resources, instance=instance, raise_on_error=False)
    error = _raised(failed, "SchemaRegistryClientError")
    assert error.message.startswith(f"dagster_kafka_flinklike.errors.SchemaRegistryClientError: "
                                    f"Schema Registry {gate.url} (unavailable): ")  # fmt: skip
    assert f"listing the versions of subject '{source}-value' failed: ConnectError" in error.message
    _assert_nothing_moved(instance, kafka_bootstrap, source, sink)

    gate.start()
    again = materialize([asset], resources=resources, instance=instance)
    metadata = again.asset_materializations_for_node("copy_orders")[0].metadata
    assert (metadata["numRecordsIn"].value, metadata["dirtyRecords"].value) == (5, 0)
    assert sorted(json.loads(m.value())["id"] for m in read_topic(kafka_bootstrap, sink)) == [
        0, 1, 2, 3, 4,
    ]  # fmt: skip


def test_registry_5xx_in_the_workers_fails_an_exactly_once_run(
    kafka_bootstrap, new_topic, schema_registry_url, gate, resources
) -> None:
    """Records under RecordNameStrategy subjects are decoded in the Python workers; a registry
    answering 500 to their schema lookups fails the task, and the run with our error (not
    Spark's): the transaction is aborted and the next run reads every record."""
    source, sink = new_topic(partitions=1), new_topic(partitions=1)
    registry = SchemaRegistryClient({"url": schema_registry_url})
    _orders(registry, kafka_bootstrap, source, record_subject_name_strategy)
    gate.fail = lambda path: 500 if "/schemas/ids/" in path else None
    gate.start()
    instance = DagsterInstance.ephemeral()
    sink_options = {
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": f"t-{sink}",
    }
    asset = _copy(source, sink, gate.url, **sink_options)

    failed = materialize([asset], resources=resources, instance=instance, raise_on_error=False)
    error = _raised(failed, "SchemaRegistryClientError")
    assert f"Schema Registry {gate.url} (unavailable): fetching writer schema" in error.message
    assert "gate says 500 (HTTP status code 500" in error.message
    assert any("/schemas/ids/" in r for r in gate.requests)
    _assert_nothing_moved(instance, kafka_bootstrap, source, sink)

    gate.fail = lambda _path: None
    again = materialize([asset], resources=resources, instance=instance)
    metadata = again.asset_materializations_for_node("copy_orders")[0].metadata
    assert (metadata["numRecordsIn"].value, metadata["dirtyRecords"].value) == (5, 0)
    assert len(read_topic(kafka_bootstrap, sink)) == 5


@pytest.mark.parametrize("answer", ["401", "timeout"])
def test_refused_credentials_and_timeouts_fail_decoding(
    kafka_bootstrap, new_topic, spark, schema_registry_url, gate, answer
) -> None:
    """A worker's lookup answered 401, or not within the client's timeout, fails the task; the
    error names the registry with the URL's credentials hidden."""
    topic = new_topic(partitions=1)
    registry = SchemaRegistryClient({"url": schema_registry_url})
    _orders(registry, kafka_bootstrap, topic, record_subject_name_strategy)
    if answer == "401":
        gate.fail = lambda path: 401 if "/schemas/ids/" in path else None
    else:
        gate.delay = lambda path: 3.0 if "/schemas/ids/" in path else 0.0
    gate.start()
    url = f"http://reader:s3cret@127.0.0.1:{gate.port}{gate.path}"
    options = {"format": "avro-confluent", "avro-confluent.url": url,
               "avro-confluent.properties.max.retries": "0",
               "avro-confluent.properties.timeout": "1"}  # fmt: skip
    with pytest.raises(Exception) as info:
        rows(spark, table(topic, kafka_bootstrap, options, COLUMNS))
    found = SchemaRegistryClientError.raised_in_task(info.value)
    assert found is not None, str(info.value)[-2000:]
    expected = {"401": SchemaRegistryErrorKind.UNAUTHORIZED,
                "timeout": SchemaRegistryErrorKind.UNAVAILABLE}  # fmt: skip
    assert found.kind is expected[answer]
    assert found.url == f"http://***@127.0.0.1:{gate.port}{gate.path}"
    assert ("ReadTimeout" in str(found)) == (answer == "timeout")
    assert "s3cret" not in str(info.value)


def test_an_unknown_schema_id_stays_dirty_data(
    kafka_bootstrap, new_topic, spark, schema_registry_url
) -> None:
    """404 for a record's schema id is the record's own fault: dirty, the run goes on."""
    topic = new_topic(partitions=1)
    registry = SchemaRegistryClient({"url": schema_registry_url})
    _orders(registry, kafka_bootstrap, topic, record_subject_name_strategy)
    send(kafka_bootstrap, topic, [{"value": b"\x00" + (10**6).to_bytes(4, "big") + b"\x02"}])
    options = {"format": "avro-confluent", "avro-confluent.url": schema_registry_url}
    got = rows(spark, table(topic, kafka_bootstrap, options, COLUMNS))
    assert [r[ERROR] for r in got[:5]] == [None] * 5
    assert "writer schema 1000000 could not be fetched" in got[5][ERROR]
    assert "SchemaNotFound" in got[5][ERROR] or "404" in got[5][ERROR]


def test_registry_5xx_fails_an_asset_without_a_sink_with_our_error(
    kafka_bootstrap, new_topic, schema_registry_url, gate, resources
) -> None:
    """An asset whose rows go to its IO manager: the decoding's pass of its own (the dirty-data
    statistics) meets the 500 in the workers, and the run fails with our error type, not
    Spark's, having recorded nothing."""
    source = new_topic(partitions=1)
    _orders(SchemaRegistryClient({"url": schema_registry_url}), kafka_bootstrap, source,
            record_subject_name_strategy)  # fmt: skip
    gate.fail = lambda path: 500 if "/schemas/ids/" in path else None
    gate.start()
    spec = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": source, "scan.startup.mode": "earliest-offset",
         "properties.group.id": f"g-{source}", "format": "avro-confluent",
         "avro-confluent.url": gate.url, "avro-confluent.properties.max.retries": "0",
         "ingestion.ignore-errors": "true"},
        columns=COLUMNS, role="source",
    )  # fmt: skip

    @kafka_streaming_asset(sources={"orders": spec}, name="copy_orders")
    def copy_orders(context, orders):
        return orders

    instance = DagsterInstance.ephemeral()
    failed = materialize(
        [copy_orders], resources=resources, instance=instance, raise_on_error=False
    )
    error = _raised(failed, "SchemaRegistryClientError")
    assert f"Schema Registry {gate.url} (unavailable)" in error.message
    assert instance.get_latest_materialization_event(AssetKey("copy_orders")) is None
    assert _committed(kafka_bootstrap, source) < 0
