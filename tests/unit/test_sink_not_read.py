"""A sink topic that the asset's own sources read is refused when the definitions load."""

from __future__ import annotations

import re

import pytest

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaTableSpec,
    build_flink_sql_definitions,
    kafka_streaming_asset,
)

COLUMNS = [{"name": "id", "type": "BIGINT"}]


def table(role: str, name: str, **options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {"connector": "kafka", "format": "json", **options}, columns=COLUMNS, role=role, name=name
    )


def declare(source: KafkaTableSpec, sink: KafkaTableSpec) -> None:
    @kafka_streaming_asset(sources={"events": source}, sink=sink)
    def copy(context, events):  # type: ignore[no-untyped-def]
        return events


def test_a_sink_listed_in_the_sources_topics_is_refused() -> None:
    source = table("source", "events", topic="orders;refunds")
    with pytest.raises(KafkaOptionsError) as caught:
        declare(source, table("sink", "copied", topic="refunds"))
    message = str(caught.value)
    assert "Sink table 'copied' writes topic 'refunds'" in message
    assert "source table 'events' reads (its 'topic' lists 'refunds')" in message
    assert caught.value.keys == ("topic", "topic-pattern")


def test_a_sink_matched_by_the_sources_pattern_is_refused() -> None:
    source = table("source", "events", **{"topic-pattern": "orders.*"})
    expected = re.escape("its 'topic-pattern' 'orders.*' matches 'orders_out'")
    with pytest.raises(KafkaOptionsError, match=expected):
        declare(source, table("sink", "out", topic="orders_out"))


def test_a_pattern_matches_whole_names_and_other_clusters_do_not_meet() -> None:
    partial = table("source", "events", **{"topic-pattern": "orders"})
    declare(partial, table("sink", "out", topic="orders_out"))  # no whole match: accepted
    here = table("source", "events", topic="orders", **{"properties.bootstrap.servers": "a:9092"})
    there = table("sink", "out", topic="orders", **{"properties.bootstrap.servers": "b:9092"})
    declare(here, there)  # another cluster's topic of the same name
    with pytest.raises(KafkaOptionsError, match="read its own output"):
        declare(here, table("sink", "out", topic="orders"))  # the resource's cluster: same


def test_a_flink_sql_insert_into_a_topic_it_reads_is_refused() -> None:
    script = """
    CREATE TABLE src (id BIGINT) WITH ('connector' = 'kafka', 'topic-pattern' = 'events.*',
      'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
    CREATE TABLE dst (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'events_copy',
      'format' = 'json');
    INSERT INTO dst SELECT id FROM src;
    """
    with pytest.raises(KafkaOptionsError, match="Sink table 'dst' writes topic 'events_copy'"):
        build_flink_sql_definitions(script)
