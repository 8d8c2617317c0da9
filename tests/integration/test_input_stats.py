"""A run's input statistics as the sink's action observes them, against the same statistics
counted in a Spark job of their own over every decoded record (``input_stats``): records (a
changelog record once, whatever rows it yields), value bytes, dirty and strictly dirty records,
the newest timestamp."""

from __future__ import annotations

import json
from typing import Any

from dagster_kafka_flinklike.run.decode import InputStats, decode_table, input_stats
from dagster_kafka_flinklike.run.tables import resolve_table
from tests.integration.test_decoding import raw_records, send, table

ROWS = [{"name": "id", "type": "INT"}, {"name": "name", "type": "STRING"}]


def observed(spark: Any, spec: Any) -> tuple[InputStats, InputStats, int]:
    """The statistics the write of the clean rows observed, those a job of their own counts over
    every decoded record, and the clean rows written."""
    decoded = decode_table(resolve_table(spec, {}), raw_records(spark, spec))
    assert not decoded.counts.counted
    rows = decoded.frame.count()
    assert decoded.counts.counted  # the action filled them: no second job
    return decoded.stats, input_stats(decoded.decoded), rows


def test_observed_statistics_of_a_json_table(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=2)
    values = [
        (b'{"id": 1, "name": "a"}', 1_000, 0),
        (b'{"id": 2, "name": "b"}', 7_000, 1),
        (b'{"id": "x", "name": "c"}', 9_000, 0),  # dirty, not tolerated
        (b'{"id": 3, "name": "d"}', 3_000, 1),
        (None, 12_000, 0),  # a null value yields no row and is not counted
    ]
    send(kafka_bootstrap, topic, [
        {"value": v, "timestamp": t, "partition": p} for v, t, p in values
    ])  # fmt: skip
    spec = table(topic, kafka_bootstrap, {"format": "json"}, ROWS)
    stats, counted, rows = observed(spark, spec)
    assert stats == counted
    assert (stats.records, stats.dirty, stats.strict, rows) == (4, 1, 1, 3)
    assert stats.bytes == sum(len(v) for v, _, _ in values if v is not None)
    assert stats.newest_timestamp_ms == 9_000

    tolerant = table(
        topic, kafka_bootstrap, {"format": "json", "json.ignore-parse-errors": "true"}, ROWS
    )
    stats, counted, rows = observed(spark, tolerant)
    assert stats == counted
    assert (stats.records, stats.dirty, stats.strict) == (4, 1, 0)


def test_observed_statistics_of_a_changelog_table(kafka_bootstrap, new_topic, spark):
    topic = new_topic(partitions=1)

    def event(op: str, before: Any, after: Any) -> bytes:
        return json.dumps({"before": before, "after": after, "op": op}).encode()

    a, b = {"id": 1, "name": "a"}, {"id": 1, "name": "b"}
    values = [event("c", None, a), event("u", a, b), event("d", b, None), b'{"op": "u"}']
    send(kafka_bootstrap, topic, [
        {"value": v, "timestamp": 1_000 * (i + 1)} for i, v in enumerate(values)
    ])  # fmt: skip
    spec = table(topic, kafka_bootstrap, {"format": "debezium-json"}, ROWS)
    stats, counted, rows = observed(spark, spec)
    assert stats == counted
    # +I, -U, +U, -D: four rows of three records; the update without images is dirty.
    assert (stats.records, stats.dirty, rows) == (4, 1, 4)
    assert stats.bytes == sum(map(len, values))
    assert stats.newest_timestamp_ms == 4_000
