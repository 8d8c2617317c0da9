"""``python -m tests.corpus [NAME ...]``: the whole corpus (or the named jobs) here and on Flink.

Starts an embedded broker (or uses ``$KAFKA_BOOTSTRAP_SERVERS``), runs every job
(:func:`.harness.run_job`), prints one line per job, and last the figures as JSON: the pass rate
(``same`` or ``refused`` where Flink refuses too, over all jobs) and the silently different
count, which must be 0.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path


def main(names: list[str]) -> int:
    from confluent_kafka.admin import AdminClient, NewTopic

    from dagster_kafka_flinklike import KafkaResource, SparkResource
    from dagster_kafka_flinklike.local import EmbeddedKafka
    from dagster_kafka_flinklike.spark import local_spark_config
    from tests.conftest import KEEP_EVERYTHING
    from tests.corpus.harness import jobs, run_job
    from tests.oracle import flink_oracle

    selected = [p for p in jobs() if not names or p.stem in names]
    oracle = flink_oracle()
    oracle.start()
    broker = None
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if not bootstrap:
        broker = EmbeddedKafka(
            Path(tempfile.mkdtemp(prefix="dkf-corpus-kafka-")), extra_properties=KEEP_EVERYTHING
        )
        bootstrap = broker.start(timeout=180)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def new_topic(partitions: int = 1) -> str:
        name = f"corpus-{uuid.uuid4().hex[:10]}"
        # Fixed event times: keep every record, whatever the calendar says.
        topic = NewTopic(name, partitions, 1, config={"retention.ms": "-1"})
        admin.create_topics([topic])[name].result(30)
        return name

    resources = {
        "kafka": KafkaResource(bootstrap_servers=bootstrap),
        "pyspark": SparkResource(spark_config=local_spark_config("corpus")),
    }
    counts: Counter[str] = Counter()
    outcomes = []
    try:
        for path in selected:
            outcome = run_job(path, bootstrap, oracle, resources, new_topic)
            counts[outcome.status] += 1
            outcomes.append(outcome)
            shown = outcome.detail if outcome.status == "different" else outcome.detail[:160]
            print(f"{outcome.job}: {outcome.status} {shown}", flush=True)
    finally:
        oracle.close()
        if broker is not None:
            broker.stop()
    passed = counts["same"] + counts["refused"]
    summary = {
        "jobs": len(outcomes),
        "pass_rate": round(passed / len(outcomes), 3) if outcomes else 0.0,
        "silently_different": counts["different"],
        **{
            status: counts[status]
            for status in (
                "same",
                "refused",
                "refused-ours",
                "flink-refuses",
                "different",
                "failed",
            )
        },
        "outcomes": {o.job: o.status for o in outcomes},
    }
    print(json.dumps(summary), flush=True)
    return 1 if counts["different"] or counts["failed"] or counts["flink-refuses"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
