"""Inputs the fuzz targets (``make fuzz``) found failing, kept as regression tests."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike.options import KafkaOptionsError, KafkaTableSpec

REGISTRY = {
    "connector": "kafka",
    "topic": "t",
    "format": "avro-confluent",
    "avro-confluent.url": "http://registry:8081",
}


def test_a_map_option_without_an_entry_key_is_refused_naming_it() -> None:
    # It was taken as the map itself, a string, and failed later with a ValueError.
    with pytest.raises(KafkaOptionsError, match="'avro-confluent.properties' is a map") as info:
        KafkaTableSpec.from_options({**REGISTRY, "avro-confluent.properties": "csv"})
    assert info.value.keys == ("avro-confluent.properties",)
    spec = KafkaTableSpec.from_options({**REGISTRY, "avro-confluent.properties.timeout": "5"})
    assert spec.value_format is not None
    assert spec.value_format.settings["properties"] == {"timeout": "5"}


_TABLES = """CREATE TABLE s (a INT) WITH ('connector' = 'kafka', 'topic' = 's', 'format' = 'csv');
CREATE TABLE k (a INT, n BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
  'topic' = 'k', 'key.format' = 'json', 'value.format' = 'json');
"""


@pytest.mark.parametrize("tail", ["GROUP", "GROUP BY", "GROUP BY a,", "GROUP BY a, SESSION"])
def test_a_query_that_ends_in_its_group_by_is_planned_or_refused(tail: str) -> None:
    # The rewriting of legacy SESSION windows read past the last token (an IndexError).
    from dagster_kafka_flinklike.sql import FlinkSqlError
    from dagster_kafka_flinklike.sql.pipeline import plan_flink_sql

    try:
        plan_flink_sql(f"{_TABLES}INSERT INTO k SELECT a, COUNT(*) FROM s {tail};")
    except FlinkSqlError:
        pass
