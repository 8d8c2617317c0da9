"""The secured pipeline of the security test, and a code location over it for the GraphQL
scan: its tables connect with the ``properties.*`` in ``DKF_SECURITY_LOCATION`` (JSON:
``properties``, ``source``, ``eos``, ``alo``, ``tag``) when loaded as a code location."""

from __future__ import annotations

import json
import os
from typing import Any

from dagster import Definitions

from dagster_kafka_flinklike import (
    ConsumerLagCheck,
    DirtyDataCheck,
    HangingTransactionsCheck,
    KafkaResource,
    KafkaTableSpec,
    SparkResource,
    TransactionTimeoutCheck,
    build_kafka_new_data_sensor,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.spark import local_spark_config

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "payload", "type": "STRING"}]


def table(topic: str, props: dict[str, str], role: str, **options: str) -> KafkaTableSpec:
    """A JSON table of ``topic`` connecting with ``props``."""
    base = {"connector": "kafka", "topic": topic, "format": "json", **props}
    if role == "source":
        base |= {"properties.group.id": f"sec-{topic}", "scan.startup.mode": "earliest-offset"}
    base.update(options)
    return KafkaTableSpec.from_options(base, columns=COLUMNS, role=role)


def copy(name: str, source: KafkaTableSpec, sink: KafkaTableSpec, checks: list) -> Any:
    """The copy asset: every source record becomes one sink record."""

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name=name, checks=checks)
    def _asset(context, events):  # type: ignore[no-untyped-def]
        return events

    return _asset


def resources() -> dict[str, Any]:
    """No bootstrap servers in the resource: each table connects with its own properties."""
    return {
        "kafka": KafkaResource(),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def pipeline(
    properties: dict[str, str], source: str, eos: str, alo: str, tag: str
) -> tuple[Any, Any, Any]:
    """An exactly-once copy (with every kind of check) and an at-least-once copy of
    ``source``, and the new-data sensor of the first."""
    props = properties
    checks = [
        DirtyDataCheck(),
        ConsumerLagCheck(max_pending_records=1_000),
        HangingTransactionsCheck(),
        TransactionTimeoutCheck(),
    ]
    eos_sink = table(
        eos,
        props,
        "sink",
        **{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": f"s-{tag}"},
    )
    alo_sink = table(alo, props, "sink", **{"sink.delivery-guarantee": "at-least-once"})
    exactly = copy("copy_eos", table(source, props, "source"), eos_sink, checks)
    alo_source = table(source, props, "source", **{"properties.group.id": f"alo-{tag}"})
    least = copy("copy_alo", alo_source, alo_sink, [])
    return exactly, least, build_kafka_new_data_sensor(exactly, min_pending_records=5)


def location(**setup: Any) -> Definitions:
    """The pipeline as a code location."""
    exactly, least, sensor = pipeline(**setup)
    return Definitions(assets=[exactly, least], sensors=[sensor], resources=resources())


if "DKF_SECURITY_LOCATION" in os.environ:
    _setup = json.loads(os.environ["DKF_SECURITY_LOCATION"])
    defs = location(**_setup)
