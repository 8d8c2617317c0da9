"""KafkaResource: how table and resource client properties combine."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import KafkaOptionsError, KafkaResource, KafkaTableSpec

BASE = {"connector": "kafka", "topic": "t", "format": "json"}


def test_table_properties_win_over_resource_defaults() -> None:
    spec = KafkaTableSpec.from_options({**BASE, "properties.client.id": "table"})
    resource = KafkaResource(bootstrap_servers="a:1", properties={"client.id": "r", "x.y": "1"})
    assert resource.client_properties(spec) == {
        "bootstrap.servers": "a:1",
        "client.id": "table",
        "x.y": "1",
    }


def test_missing_bootstrap_servers_names_the_option(monkeypatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    with pytest.raises(KafkaOptionsError, match=r"properties\.bootstrap\.servers") as exc:
        KafkaResource().client_properties(KafkaTableSpec.from_options(BASE))
    assert exc.value.keys == ("properties.bootstrap.servers",)


def test_environment_supplies_bootstrap_servers_at_run_time(monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "env:9092")
    props = KafkaResource().client_properties(KafkaTableSpec.from_options(BASE))
    assert props["bootstrap.servers"] == "env:9092"


def test_repr_redacts_secrets() -> None:
    resource = KafkaResource(properties={"sasl.password": "hunter2", "sasl.username": "me"})
    assert "hunter2" not in repr(resource)
