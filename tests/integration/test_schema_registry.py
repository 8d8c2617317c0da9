"""The embedded Schema Registry against confluent-kafka's own client and Avro serializers.

Every test talks to a real registry (Apicurio Registry serving Confluent's REST API): the
lifecycle and CLI tests start their own in ``tmp_path``, the others share the session's
(``schema_registry_url``) and use subjects of their own.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from dagster_kafka_flinklike.local import (
    SCHEMA_REGISTRY_VERSION,
    EmbeddedSchemaRegistry,
    EmbeddedSchemaRegistryError,
)
from tests.conftest import run_dkf

URL_RE = re.compile(r"^http://127\.0\.0\.1:\d+/apis/ccompat/v7$")
START_TIMEOUT = 180.0  # seconds; generous for a busy 2-core CI machine

ORDER_V1: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"}],
}
# BACKWARD compatible: a reader of v2 reads v1 data (the new field has a default).
ORDER_V2: dict[str, Any] = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
# Not BACKWARD compatible with v2: a v3 reader cannot read v2's long id as a string.
ORDER_ID_AS_STRING: dict[str, Any] = {
    **ORDER_V2,
    "fields": [{"name": "id", "type": "string"}, *ORDER_V2["fields"][1:]],
}
# Not BACKWARD compatible either: a new field without a default cannot be filled from old data.
ORDER_REQUIRED_FIELD: dict[str, Any] = {
    **ORDER_V2,
    "fields": [*ORDER_V2["fields"], {"name": "currency", "type": "string"}],
}


def _avro(schema: dict[str, Any]) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


def _subject(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}-value"


@pytest.fixture
def client(schema_registry_url: str) -> SchemaRegistryClient:
    """confluent-kafka's Schema Registry client on the session's registry."""
    return SchemaRegistryClient({"url": schema_registry_url})


# ------------------------------------------------------------------------------ the REST API


def test_register_and_fetch_by_id_version_and_subject(client: SchemaRegistryClient) -> None:
    subject = _subject("orders")
    schema_id = client.register_schema(subject, _avro(ORDER_V1))
    assert schema_id > 0
    assert client.register_schema(subject, _avro(ORDER_V1)) == schema_id  # same schema, same id

    fetched = client.get_schema(schema_id)
    assert fetched.schema_type == "AVRO"
    assert json.loads(fetched.schema_str) == ORDER_V1

    latest = client.get_latest_version(subject)
    assert (latest.subject, latest.version, latest.schema_id) == (subject, 1, schema_id)
    assert client.get_version(subject, 1).schema_id == schema_id
    assert client.lookup_schema(subject, _avro(ORDER_V1)).version == 1
    assert client.get_versions(subject) == [1]
    assert subject in client.get_subjects()

    # The same schema under another subject keeps its id, as in Confluent's registry.
    other = _subject("orders-copy")
    assert client.register_schema(other, _avro(ORDER_V1)) == schema_id


def test_unknown_schema_id_and_subject_are_not_found(client: SchemaRegistryClient) -> None:
    with pytest.raises(SchemaRegistryError) as by_id:
        client.get_schema(2_000_000_000)
    assert (by_id.value.http_status_code, by_id.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as by_subject:
        client.get_latest_version(_subject("never-registered"))
    assert by_subject.value.http_status_code == 404


def test_backward_evolution_accepted_incompatible_rejected(client: SchemaRegistryClient) -> None:
    subject = _subject("evolving")
    first = client.register_schema(subject, _avro(ORDER_V1))
    client.set_compatibility(subject, "BACKWARD")
    assert client.get_compatibility(subject) == "BACKWARD"

    assert client.test_compatibility(subject, _avro(ORDER_V2)) is True
    second = client.register_schema(subject, _avro(ORDER_V2))
    assert second != first
    assert client.get_versions(subject) == [1, 2]

    for incompatible in (ORDER_ID_AS_STRING, ORDER_REQUIRED_FIELD):
        assert client.test_compatibility(subject, _avro(incompatible)) is False
        with pytest.raises(SchemaRegistryError) as info:
            client.register_schema(subject, _avro(incompatible))
        assert (info.value.http_status_code, info.value.error_code) == (409, 409)
    assert client.get_versions(subject) == [1, 2]  # nothing was registered
    assert client.get_latest_version(subject).schema_id == second

    # The subject's level decides, over the global BACKWARD: a new field without a default is
    # FORWARD compatible, so under FORWARD it is accepted.
    client.set_compatibility(subject, "FORWARD")
    assert client.register_schema(subject, _avro(ORDER_REQUIRED_FIELD)) not in (first, second)
    assert client.get_versions(subject) == [1, 2, 3]


def test_forward_level_checks_the_other_direction(client: SchemaRegistryClient) -> None:
    subject = _subject("forward")
    client.register_schema(subject, _avro(ORDER_V2))
    client.set_compatibility(subject, "FORWARD")
    # FORWARD: old readers must read new data. Dropping `note` (it has a default) is fine;
    # a new field without a default is fine too (old readers ignore it) ...
    assert client.test_compatibility(subject, _avro(ORDER_REQUIRED_FIELD)) is True
    # ... but a type an old reader cannot read is not.
    assert client.test_compatibility(subject, _avro(ORDER_ID_AS_STRING)) is False


# ------------------------------------------------------------------------------ serializers


def test_avro_serializer_broker_deserializer_round_trip(
    client: SchemaRegistryClient, kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    ctx = SerializationContext(topic, MessageField.VALUE)
    write_v1 = AvroSerializer(client, json.dumps(ORDER_V1))  # auto-registers <topic>-value
    write_v2 = AvroSerializer(client, json.dumps(ORDER_V2))
    v1_rows = [{"id": i, "amount": i * 1.5} for i in range(5)]
    v2_rows = [{"id": 10 + i, "amount": 2.0, "note": f"n{i}"} for i in range(3)]

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})
    for row in v1_rows:
        producer.produce(topic, value=write_v1(row, ctx), key=str(row["id"]).encode())
    for row in v2_rows:
        producer.produce(topic, value=write_v2(row, ctx), key=str(row["id"]).encode())
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"registry-test-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    raw: list[bytes] = []
    while len(raw) < len(v1_rows) + len(v2_rows):
        message = consumer.poll(30)
        assert message is not None, f"only {len(raw)} records arrived"
        assert message.error() is None
        value = message.value()
        assert value is not None
        raw.append(value)
    consumer.close()

    # Confluent's wire format: magic byte 0, the registry's schema id, then the Avro body.
    versions = client.get_versions(f"{topic}-value")
    assert versions == [1, 2]
    ids = [client.get_version(f"{topic}-value", v).schema_id for v in versions]
    assert [b[0] for b in raw] == [0] * len(raw)
    assert [int.from_bytes(b[1:5], "big") for b in raw] == [ids[0]] * 5 + [ids[1]] * 3

    # Each record's writer schema is fetched by id ...
    read_as_written = AvroDeserializer(client)
    assert [read_as_written(b, ctx) for b in raw] == v1_rows + v2_rows
    # ... and resolved to a reader schema: v1 records read with v2 get the default.
    read_as_v2 = AvroDeserializer(client, json.dumps(ORDER_V2))
    assert [read_as_v2(b, ctx) for b in raw] == [{**r, "note": None} for r in v1_rows] + v2_rows


# ------------------------------------------------------------------------------ lifecycle


def test_start_status_idempotent_restart_keeps_schemas(tmp_path: Path) -> None:
    data_dir = tmp_path / "registry"
    registry = EmbeddedSchemaRegistry(data_dir)
    assert registry.status() is None
    try:
        url = registry.start(timeout=START_TIMEOUT)
        assert URL_RE.match(url)
        assert registry.status() == url == registry.url
        state = json.loads((data_dir / "state.json").read_text())
        assert state["url"] == url
        assert state["registry_version"] == SCHEMA_REGISTRY_VERSION
        pid = int(state["pid"])

        # Starting again, from this object or another one on the same directory, starts nothing.
        assert registry.start(timeout=START_TIMEOUT) == url
        assert EmbeddedSchemaRegistry(data_dir).start(timeout=START_TIMEOUT) == url
        assert int(json.loads((data_dir / "state.json").read_text())["pid"]) == pid

        client = SchemaRegistryClient({"url": url})
        assert client.get_compatibility() == "BACKWARD"  # Confluent's default, reported too
        subject = _subject("kept")
        schema_id = client.register_schema(subject, _avro(ORDER_V1))
        with pytest.raises(SchemaRegistryError):  # and enforced with no level set on the subject
            client.register_schema(subject, _avro(ORDER_ID_AS_STRING))
        client.set_compatibility(level="FULL")
    finally:
        stopped = registry.stop()
    assert stopped is True
    assert registry.status() is None
    assert not (data_dir / "state.json").exists()
    assert registry.stop() is False

    with EmbeddedSchemaRegistry(data_dir) as again:
        assert again.url == url  # the previous port is reused when free
        client = SchemaRegistryClient({"url": again.url})
        assert json.loads(client.get_schema(schema_id).schema_str) == ORDER_V1
        assert client.get_versions(subject) == [1]
        assert client.get_compatibility() == "FULL"  # a level set by the user is kept


def test_startup_failure_reports_the_registry_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "registry"
    registry = EmbeddedSchemaRegistry(data_dir, extra_properties={"apicurio.storage.kind": "nope"})
    with pytest.raises(EmbeddedSchemaRegistryError, match="exited during startup") as info:
        registry.start(timeout=START_TIMEOUT)
    assert "No Registry storage variant defined for value nope" in str(info.value)
    assert not (data_dir / "state.json").exists()
    assert registry.status() is None


# ------------------------------------------------------------------------------ CLI


def test_cli_local_registry_start_status_stop(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    try:
        # Two concurrent starts launch one registry and both print its URL alone on a line.
        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda _: run_dkf(home, "local-registry", "start"), range(2))
        assert first.returncode == 0, first.stderr
        assert second.returncode == 0, second.stderr
        assert URL_RE.match(first.stdout.strip())
        assert first.stdout == second.stdout == first.stdout.strip() + "\n"
        url = first.stdout.strip()

        # The registry outlived the `start` processes and is found from a new one.
        status = run_dkf(home, "local-registry", "status")
        assert status.returncode == 0, status.stderr
        assert status.stdout == f"{url}\n"
        assert EmbeddedSchemaRegistry(home / "schema-registry").status() == url
        assert SchemaRegistryClient({"url": url}).get_subjects() == []

        stop = run_dkf(home, "local-registry", "stop")
        assert stop.returncode == 0, stop.stderr
        assert "stopped the local Schema Registry" in stop.stdout

        after = run_dkf(home, "local-registry", "status")
        assert after.returncode == 1
        assert "not running" in after.stderr
        assert after.stdout == ""
    finally:
        EmbeddedSchemaRegistry(home / "schema-registry").stop()
