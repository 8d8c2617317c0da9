"""Tables resolved once per run: merged properties, per-role client settings, client ids."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import KafkaOptionsError, KafkaResource, KafkaTableSpec
from dagster_kafka_flinklike.run import KafkaClients, resolve_table

BASE = {"connector": "kafka", "topic": "orders", "format": "json"}


def spec(**options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options({**BASE, **options}, name="orders")


def test_every_role_gets_the_client_id_prefix() -> None:
    table = resolve_table(
        spec(**{"properties.client.id.prefix": "revenue"}), {"bootstrap.servers": "b:1"}
    )
    assert table.consumer["client.id"] == "revenue-reader"
    assert table.producer["client.id"] == "revenue-writer"
    assert table.admin["client.id"] == "revenue-admin"


def test_without_a_prefix_the_client_id_is_the_users() -> None:
    table = resolve_table(spec(**{"properties.client.id": "mine"}), {"bootstrap.servers": "b:1"})
    assert {table.consumer["client.id"], table.producer["client.id"]} == {"mine"}
    bare = resolve_table(spec(), {"bootstrap.servers": "b:1"})
    assert "client.id" not in bare.consumer


def test_table_properties_win_and_roles_are_split() -> None:
    table = resolve_table(
        spec(**{"properties.linger.ms": "7", "properties.group.id": "g"}),
        {"bootstrap.servers": "b:1", "linger.ms": "1", "fetch.min.bytes": "5"},
    )
    assert table.properties["linger.ms"] == "7"
    assert table.producer["linger.ms"] == "7"
    assert "linger.ms" not in table.consumer and "fetch.min.bytes" not in table.producer
    assert table.consumer["fetch.min.bytes"] == "5"
    assert table.consumer["enable.auto.commit"] == "false"
    assert table.group_id == "g"
    assert set(table.admin) == {"bootstrap.servers"}


def test_default_group_id_is_flinks() -> None:
    table = resolve_table(spec(), {"bootstrap.servers": "b:1"})
    assert table.group_id == "KafkaSource-orders"


def test_resource_resolves_with_its_defaults(monkeypatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    table = KafkaResource(bootstrap_servers="a:1", properties={"acks": "all"}).resolve(spec())
    assert table.bootstrap_servers == "a:1"
    assert table.producer["acks"] == "-1"  # Java's 'all', as librdkafka spells it
    with pytest.raises(KafkaOptionsError) as exc:
        KafkaResource().resolve(spec())
    assert exc.value.keys == ("properties.bootstrap.servers",)


def test_tables_of_one_cluster_share_one_admin_client() -> None:
    clients = KafkaClients()
    orders = resolve_table(spec(**{"properties.group.id": "a"}), {"bootstrap.servers": "b:1"})
    other = KafkaTableSpec.from_options({**BASE, "topic": "x", "properties.group.id": "b"})
    second = resolve_table(other, {"bootstrap.servers": "b:1"})
    elsewhere = resolve_table(other, {"bootstrap.servers": "c:1"})
    first, again = clients.admin(orders), clients.admin(second)
    assert first.client is again.client
    assert (first.group_id, again.group_id) == ("a", "b")
    assert clients.admin(elsewhere).client is not first.client


def test_the_partitioner_class_is_loaded_once_when_declared(monkeypatch) -> None:
    from dagster_kafka_flinklike.options import _spec

    calls: list[str] = []
    real = _spec.load_partitioner

    def counting(path: str) -> type:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(_spec, "load_partitioner", counting)
    sink = KafkaTableSpec.from_options(
        {**BASE, "sink.partitioner": "tests.unit.test_partitioners.ByValueParity"}, role="sink"
    )
    table = resolve_table(sink, {"bootstrap.servers": "b:1"})
    assert calls == ["tests.unit.test_partitioners.ByValueParity"]
    assert table.partitioner_class is sink.partitioner_class
    assert table.partitioner_class.__name__ == "ByValueParity"
