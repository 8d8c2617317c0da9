"""Apache Flink as the oracle: a corpus script run by Flink and by us over the same topics
writes the same records (tests/oracle: PyFlink in its own environment, fetched on first use)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from dagster import DagsterInstance

from dagster_kafka_flinklike import KafkaResource, SparkResource
from dagster_kafka_flinklike.components import build_flink_sql_definitions
from dagster_kafka_flinklike.spark import local_spark_config
from tests.integration.test_flink_sql import at, run, script, send, values
from tests.oracle import FlinkOracleError

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.fixture
def resources(kafka_bootstrap: str, spark: Any) -> dict[str, Any]:
    return {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }


def for_flink(text: str) -> str:
    """The script as the oracle runs it: every Kafka table on the test broker, its sources
    bounded at the end of the log as it is when the job starts, watermarks per record."""
    extra = (
        "'connector' = 'kafka',\n  'properties.bootstrap.servers' = '${BOOTSTRAP}',\n"
        "  'scan.bounded.mode' = 'latest-offset',\n  'scan.watermark.emit.strategy' = 'on-event',"
    )
    upsert = (
        "'connector' = 'upsert-kafka',\n  'properties.bootstrap.servers' = '${BOOTSTRAP}',\n"
        "  'scan.bounded.mode' = 'latest-offset',"
    )
    text = re.sub(r"'connector'\s*=\s*'upsert-kafka',", upsert, text)
    return re.sub(r"'connector'\s*=\s*'kafka',", extra, text)


def test_the_oracle_reports_a_script_flink_refuses(kafka_bootstrap: str, oracle: Any) -> None:
    with pytest.raises(FlinkOracleError, match=r"(?i)views"):
        oracle.run(
            "CREATE TABLE views (a INT) WITH ('connector' = 'datagen');",
            bootstrap=kafka_bootstrap,
        )


def test_stateless_enrichment_writes_what_flink_writes(
    kafka_bootstrap: str,
    new_topic: Any,
    resources: dict,
    oracle: Any,
) -> None:
    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    send(
        kafka_bootstrap,
        source,
        [
            ({"order_id": 1, "channel": "web", "price": 2.5,
              "payload": '{"coupon": "X1", "tags": "a,b"}'}, at(61)),
            ({"order_id": 2, "channel": "app", "price": 0, "payload": "{}"}, at(62)),
            (b"not json", at(63)),
            ({"order_id": 3, "channel": "shop", "price": 10.01, "payload": "bad"}, at(185)),
            ({"order_id": 4, "channel": None, "price": 1, "payload": '{"tags": "x"}'}, at(186)),
        ],
    )  # fmt: skip
    oracle.run(for_flink(script("enrich_json.sql", source, theirs)), bootstrap=kafka_bootstrap)
    run(build_flink_sql_definitions(script("enrich_json.sql", source, ours)), resources,
        DagsterInstance.ephemeral())  # fmt: skip
    expected = values(kafka_bootstrap, theirs)
    assert [r["order_id"] for r in expected] == [1, 3, 4]  # Flink ran the job
    assert values(kafka_bootstrap, ours) == expected


POSITIONAL = """
CREATE TABLE amounts (s STRING) WITH (
  'connector' = 'kafka',
  'topic' = '{source}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);
CREATE TABLE parsed (text STRING, whole INT, doubled BIGINT, again STRING) WITH (
  'connector' = 'kafka',
  'topic' = '{sink}',
  'format' = 'json'
);
INSERT INTO parsed SELECT s, CAST(s AS INT), CAST(s AS BIGINT) * 2, CAST(s AS STRING) FROM amounts;
"""


def test_an_insert_maps_columns_by_position_and_casts_as_flink(
    kafka_bootstrap: str, new_topic: Any, resources: dict, oracle: Any
) -> None:
    source, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    send(kafka_bootstrap, source, [({"s": s}, at(1)) for s in ["7.5", " 12 ", "-3.99", ".5"]])
    text = POSITIONAL.replace("{source}", source)
    oracle.run(for_flink(text.replace("{sink}", theirs)), bootstrap=kafka_bootstrap)
    run(build_flink_sql_definitions(text.replace("{sink}", ours)), resources,
        DagsterInstance.ephemeral())  # fmt: skip
    expected = values(kafka_bootstrap, theirs)
    assert [r["whole"] for r in expected] == [7, 12, -3, 0]  # Flink ran the job
    assert values(kafka_bootstrap, ours) == expected


def test_the_reserved_words_are_flinks(oracle: Any) -> None:
    from dagster_kafka_flinklike.sql.reserved import RESERVED_WORDS

    keywords = oracle.parser_keywords()
    assert len(keywords) > 500
    assert set(oracle.reserved(keywords)) == RESERVED_WORDS
