"""Shared helpers of the option tests (the basic valid options map, ways to change it)."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.options import Column, KafkaOptionsError, KafkaTableSpec

# Shared option maps carry source options into sink tables too: those options are accepted with
# a KafkaOptionsWarning (as Flink ignores them), which these tests do not look at.
pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)

BASE: dict[str, str] = {
    "connector": "kafka",
    "topic": "orders",
    "properties.bootstrap.servers": "localhost:9092",
    "properties.group.id": "revenue",
    "scan.startup.mode": "earliest-offset",
    "format": "json",
}
COLUMNS = (
    Column("id", "BIGINT"),
    Column("name", "STRING"),
    Column("amount", "DECIMAL(10, 2)"),
    Column("ts", "TIMESTAMP_LTZ(3)", metadata_key="timestamp", virtual=True),
)
UPSERT: dict[str, str] = {
    "connector": "upsert-kafka",
    "topic": "totals",
    "properties.bootstrap.servers": "localhost:9092",
    "key.format": "json",
    "value.format": "json",
}

DROP = object()  # a value in a change map that removes the key


def changed(base: dict[str, str], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` applied (a ``DROP`` value removes the key)."""
    out = dict(base)
    for key, value in changes.items():
        if value is DROP:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def build(
    changes: dict[str, Any],
    *,
    base: dict[str, str] = BASE,
    columns: Any = COLUMNS,
    primary_key: Any = None,
    role: str | None = None,
) -> KafkaTableSpec:
    """The spec of ``base`` with ``changes``."""
    return KafkaTableSpec.from_options(
        changed(base, changes), columns=columns, primary_key=primary_key, role=role, name="t"
    )


def expect_error(
    changes: dict[str, Any], keys: tuple[str, ...], fragment: str, **kwargs: Any
) -> KafkaOptionsError:
    """Building fails naming exactly ``keys``, with ``fragment`` in the message."""
    with pytest.raises(KafkaOptionsError) as info:
        build(changes, **kwargs)
    assert info.value.keys == keys, str(info.value)
    assert fragment in str(info.value), str(info.value)
    return info.value


def test_changed_applies_and_drops() -> None:
    assert changed({"a": "1", "b": "2"}, {"a": DROP, "c": "3"}) == {"b": "2", "c": "3"}


def test_base_options_are_valid_for_source_and_sink() -> None:
    build({}, role="source")
    build({}, role="sink")
    build(
        {}, base=UPSERT, columns=(Column("k", "STRING"), Column("v", "BIGINT")), primary_key=("k",)
    )
