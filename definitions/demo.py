"""The demo behind ``make demo``: a new batch of orders in Kafka → ``channel_revenue`` via Dagster.

``make demo`` runs this file as a script (``python definitions/demo.py``; ``python -m
definitions.demo`` works too): then nothing of the example's package is imported before
:func:`main` has started Spark in the background.

Each run starts the embedded broker unless ``KAFKA_BOOTSTRAP_SERVERS`` names a cluster, produces
the next deterministic batch of orders, materializes ``channel_revenue`` on the persistent Dagster
instance under ``.local/dagster_home`` (so the UI shows the same history) and prints what
happened. Only the new orders are read: the offsets checkpoint of the last run says where to
resume.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

BATCH_SIZE = int(os.environ.get("DEMO_BATCH_SIZE", "500"))
#: Malformed orders in every batch: the source skips and counts them (dirty data).
DIRTY_PER_BATCH = 3
TOPICS = {
    "orders": 3,
    "channel_revenue": 3,
    "channel_revenue_hourly": 3,
    "channel_revenue_10min": 3,
    "large_orders": 3,
}


def _ensure_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=30).topics
    wanted = [NewTopic(t, n, 1) for t, n in TOPICS.items() if t not in existing]
    for topic, future in admin.create_topics(wanted).items() if wanted else []:
        future.result(timeout=60)
        print(f"created topic {topic} ({TOPICS[topic]} partitions)")
    deadline = time.monotonic() + 60
    while True:  # a new topic's partitions need a leader before offsets can be asked
        topics = admin.list_topics(timeout=30).topics
        ready = all(
            t in topics
            and len(topics[t].partitions) == n
            and all(p.leader >= 0 and p.error is None for p in topics[t].partitions.values())
            for t, n in TOPICS.items()
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"topics {sorted(TOPICS)} have no leader after 60 s")
        time.sleep(0.1)


def _high_watermark(probe: Any, partition: Any) -> int:
    """The partition's end offset, waiting out a leader that is still being elected."""
    from confluent_kafka import KafkaError, KafkaException

    electing = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}
    deadline = time.monotonic() + 60
    while True:
        try:
            return int(probe.get_watermark_offsets(partition, timeout=10)[1])
        except KafkaException as exc:  # a just-created topic: NOT_LEADER_FOR_PARTITION for a while
            if exc.args[0].code() not in electing or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _produce_batch(bootstrap: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from dagster_kafka_flinklike.local.orders import encode_order, generate_orders

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-probe"})
    try:
        existing = sum(
            _high_watermark(probe, TopicPartition("orders", p)) for p in range(TOPICS["orders"])
        )
    finally:
        probe.close()
    batch = existing // (BATCH_SIZE + DIRTY_PER_BATCH)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for order in generate_orders(batch, BATCH_SIZE):
        key, value = encode_order(order)
        producer.produce("orders", value, key)
    for n in range(DIRTY_PER_BATCH):
        producer.produce("orders", b'{"order_id": "broken', f"dirty-{batch}-{n}".encode())
    if producer.flush(60):
        raise SystemExit("could not deliver the demo orders to Kafka")
    return batch, BATCH_SIZE


def _spark_config() -> dict[str, Any]:
    """The example's Spark settings (``definitions.spark_config``, with Spark's Avro package as
    its ``SparkResource`` adds it), computed without importing Dagster."""
    from dagster_kafka_flinklike._spark_session import default_spark_config

    return default_spark_config("channel_revenue", short_runs=True)


def main() -> int:
    """Run the demo once; returns the process exit code."""
    project = Path(__file__).resolve().parents[1]
    os.chdir(project)
    if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
        sys.path[0] = str(project)  # run as a script: import the example as a package below
    started = time.monotonic()
    # The Spark session starts first, in the background: its JVM comes up (and then its Python
    # workers) while Dagster is imported and the broker and the orders are prepared.
    # With a Spark Connect server running (`dkf local-spark start`, or $SPARK_REMOTE) the run is
    # its client instead, and no JVM starts here.
    from dagster_kafka_flinklike._spark_session import session_config, start_session_in_background
    from dagster_kafka_flinklike.local import resolve_spark_remote

    early_config = _spark_config()
    remote = resolve_spark_remote()
    early = None if remote else start_session_in_background(session_config(early_config))
    from dagster_kafka_flinklike.local import default_home, ensure_local_kafka

    home = default_home().resolve() / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").touch()
    os.environ["DAGSTER_HOME"] = str(home)

    bootstrap = ensure_local_kafka()
    embedded = not os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    print(f"Kafka: {bootstrap} ({'embedded broker' if embedded else 'KAFKA_BOOTSTRAP_SERVERS'})")
    if remote:
        print(f"Spark: the Spark Connect server at {remote}")
    _ensure_topics(bootstrap)
    batch, produced = _produce_batch(bootstrap)
    print(
        f"produced batch {batch}: {produced} orders and {DIRTY_PER_BATCH} malformed records to "
        f"topic 'orders'"
    )

    from dagster import DagsterInstance, materialize

    from definitions import channel_revenue, defs

    if early is not None and defs.resources["pyspark"].spark_config != early_config:
        session = early.result()  # the example changed its settings: it starts its own
        if session is not None:
            session.stop()
    with DagsterInstance.get() as instance:
        result = materialize(
            [channel_revenue], resources=defs.resources, instance=instance, raise_on_error=False
        )
    if not result.success:
        print("channel_revenue failed; see the run in the Dagster UI for the error.")
        return 1
    metadata = {
        k: getattr(v, "value", v)
        for k, v in result.asset_materializations_for_node("channel_revenue")[0].metadata.items()
    }
    print(f"channel_revenue materialized (run {result.run_id}):")
    print(f"  orders read      {metadata['numRecordsIn'] - metadata['dirtyRecords']}")
    print(f"  records written  {metadata['numRecordsOut']} (one per order channel, topic "
          f"'channel_revenue')")  # fmt: skip
    print(f"  dirty records    {metadata['dirtyRecords']} (skipped: 'ingestion.ignore-errors')")
    for check in result.get_asset_check_evaluations():
        outcome = "passed" if check.passed else f"failed ({check.severity.value})"
        print(f"  check {check.check_name:<26} {outcome}: {check.description}")
    for name, offsets in metadata["offsets"].items():
        print(f"  offsets {name}: {offsets['start']} -> {offsets['end']}")
    print(f"  checkpoint       {json.dumps(metadata['kafka_checkpoint']['sources'])}")
    print(f"done in {time.monotonic() - started:.1f}s")
    print()
    print("Open the Dagster UI on the same instance:")
    print(f"  DAGSTER_HOME={home} .venv/bin/dagster dev -w workspace.yaml")
    print("Run `make demo` again to produce and process the next batch.")
    if embedded:
        print(
            "The embedded Kafka broker keeps running; stop it with: .venv/bin/dkf local-kafka stop"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
