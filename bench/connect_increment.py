"""One small increment over Spark Connect, as a Dagster run process would do it.

Run it twice: first ``--prepare`` (creates the topics and produces ``--records`` orders), then
without it, timed from outside, as a fresh Python process:

    .venv/bin/dkf local-kafka start && .venv/bin/dkf local-spark start
    .venv/bin/python bench/connect_increment.py --prepare --records 500
    time .venv/bin/python bench/connect_increment.py
    time .venv/bin/python bench/connect_increment.py --session-id <a uuid, the same each time>

The timed process imports the library, connects to the running Spark Connect server
(``$SPARK_REMOTE``, else ``dkf local-spark``'s), and materializes ``channel_revenue`` (orders →
revenue per channel, exactly-once, so the checkpoint lives in Kafka and every process resumes
where the last one stopped) over the records produced since. It prints where its time went and,
as its last line, the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

STARTED = time.perf_counter()

from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ORDERS, REVENUE = "connect_increment_orders", "connect_increment_revenue"


def _prepare(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from dagster_kafka_flinklike.local.orders import encode_order, generate_orders

    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=10).topics
    wanted = [NewTopic(t, 2, 1) for t in (ORDERS, REVENUE) if t not in existing]
    for future in admin.create_topics(wanted).values() if wanted else ():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    batch = int(time.time()) % 50_000  # order ids differ between runs (the batch is in them)
    for order in generate_orders(batch, records):
        key, value = encode_order(order)
        producer.produce(ORDERS, value, key)
    producer.flush(30)
    print(f"produced {records} orders into {ORDERS}")


def _increment(bootstrap: str, remote: str) -> dict[str, float]:
    marks: dict[str, float] = {}
    from dagster import DagsterInstance, materialize
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike import (
        KafkaResource,
        KafkaTableSpec,
        SparkResource,
        kafka_streaming_asset,
    )
    from dagster_kafka_flinklike.local.orders import ORDER_COLUMNS

    marks["imports_s"] = time.perf_counter() - STARTED
    orders = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": ORDERS,
            "properties.group.id": "connect-increment",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
        },
        columns=ORDER_COLUMNS,
        role="source",
    )
    revenue = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": REVENUE,
            "key.format": "raw",
            "key.fields": "order_channel",
            "value.format": "json",
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": "connect-increment",
        },
        columns=[
            {"name": "order_channel", "type": "STRING"},
            {"name": "order_count", "type": "BIGINT"},
            {"name": "revenue", "type": "DOUBLE"},
        ],
        role="sink",
    )

    @kafka_streaming_asset(sources={"orders": orders}, sink=revenue)
    def channel_revenue(context, orders):  # type: ignore[no-untyped-def]
        return orders.groupBy("order_channel").agg(
            F.count(F.lit(1)).alias("order_count"), F.sum("real_pay").alias("revenue")
        )

    spark = SparkResource(remote=remote)
    result = materialize(
        [channel_revenue],
        resources={"kafka": KafkaResource(bootstrap_servers=bootstrap), "pyspark": spark},
        instance=DagsterInstance.ephemeral(),
    )
    meta = result.asset_materializations_for_node("channel_revenue")[0].metadata
    marks["materialize_s"] = time.perf_counter() - STARTED
    marks["run_duration_s"] = float(meta["duration_s"].value)
    marks["records_in"] = float(meta["numRecordsIn"].value)
    marks["records_out"] = float(meta["numRecordsOut"].value)
    return marks


def main() -> int:
    from dagster_kafka_flinklike.local import resolve_bootstrap_servers, resolve_spark_remote

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepare", action="store_true", help="create topics, produce orders")
    parser.add_argument("--records", type=int, default=500, help="orders to produce (500)")
    parser.add_argument(
        "--session-id",
        help="share this server-side session between processes (the URL's ;session_id=): "
        "its Python workers stay warm from one process to the next",
    )
    args = parser.parse_args()
    bootstrap = resolve_bootstrap_servers()
    if bootstrap is None:
        print("no Kafka: start one with `dkf local-kafka start`", file=sys.stderr)
        return 1
    if args.prepare:
        _prepare(bootstrap, args.records)
        return 0
    remote = resolve_spark_remote()
    if remote is None:
        print("no Spark Connect server: start one with `dkf local-spark start`", file=sys.stderr)
        return 1
    if args.session_id:
        remote = f"{remote}/;session_id={args.session_id}"
    marks = _increment(bootstrap, remote)
    print(
        f"read {marks['records_in']:.0f} records, wrote {marks['records_out']:.0f}; "
        f"imports done at {marks['imports_s']:.2f} s, run {marks['run_duration_s']:.2f} s, "
        f"materialized at {marks['materialize_s']:.2f} s (since the script started)"
    )
    print(json.dumps(marks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
