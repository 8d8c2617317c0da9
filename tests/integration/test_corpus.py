"""A CI-sized part of the Flink SQL corpus (``make corpus`` runs all of it): each job run twice
here, with late data between, and once on Apache Flink, with the same result."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike import KafkaResource, SparkResource
from dagster_kafka_flinklike.spark import local_spark_config
from tests.corpus.harness import JOBS, run_job

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

#: A stream join and a streaming deduplication (test_stateful_sql.py runs windows, sessions,
#: Top-N and an unbounded aggregate against Flink).
CI_JOBS = ("j01_join_into_append", "d02_dedup_first_proctime")


@pytest.mark.parametrize("job", CI_JOBS)
def test_a_corpus_job_gives_flinks_result_or_is_refused_as_flink_refuses(
    job: str, kafka_bootstrap: str, new_topic: Any, spark: Any, oracle: Any
) -> None:
    resources = {
        "kafka": KafkaResource(bootstrap_servers=kafka_bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("tests")),
    }
    outcome = run_job(JOBS / f"{job}.sql", kafka_bootstrap, oracle, resources, new_topic)
    assert outcome.status in ("same", "refused"), outcome.detail
