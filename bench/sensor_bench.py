"""Sensor benchmark: one tick over a topic pattern matching 50 topics x 20 partitions.

Creates ``BENCH_SENSOR_TOPICS`` topics of ``BENCH_SENSOR_PARTITIONS`` partitions (default 50 x 20
= 1000 partitions) matching one ``topic-pattern``, writes a few records to every partition,
records a checkpoint halfway, then times ticks of the two sensors a streaming asset over that
pattern gets: partition discovery and new data (plan of the next run, lag observation, run
request). The first tick of each is the code server's first (a new admin client); the others
reuse it, as a code server does between ticks. Target: every tick <= 1 s.

The last line is JSON: ``discovery_tick_s`` and ``new_data_tick_s`` (median of the warm ticks),
``max_tick_s`` (the slowest tick, first ones included), ``first_tick_s`` per sensor,
``partitions`` and ``target_met``.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
import uuid
from typing import Any

import _common as common

TOPICS = common.env_int("BENCH_SENSOR_TOPICS", 50)
PARTITIONS = common.env_int("BENCH_SENSOR_PARTITIONS", 20)
TICKS = common.env_int("BENCH_SENSOR_TICKS", 20)
RECORDS_PER_PARTITION = 10
TARGET_S = 1.0


def _fill(bootstrap: str, topics: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for topic in topics:
        for partition in range(PARTITIONS):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce(topic, json.dumps({"id": i}).encode(), partition=partition)
        producer.poll(0)
    remaining = producer.flush(300)
    if remaining:
        raise SystemExit(f"{remaining} benchmark record(s) were not delivered")


def _timed(sensor: Any, instance: Any, resources: dict[str, Any], cursor: str | None) -> Any:
    from dagster import SensorResult, build_sensor_context

    began = time.perf_counter()
    result = sensor(build_sensor_context(instance=instance, cursor=cursor, resources=resources))
    seconds = time.perf_counter() - began
    if not isinstance(result, SensorResult):
        raise SystemExit(f"tick skipped: {result.skip_message}")
    return seconds, result


def run() -> dict[str, Any]:
    from dagster import AssetMaterialization, DagsterInstance, MetadataValue

    from dagster_kafka_flinklike import (
        KafkaResource,
        KafkaTableSpec,
        OffsetsCheckpoint,
        build_kafka_discovery_sensor,
        build_kafka_new_data_sensor,
        kafka_streaming_asset,
        sensors,
    )
    from dagster_kafka_flinklike.state import CHECKPOINT_METADATA_KEY

    stem = f"dkf-sensor-bench-{uuid.uuid4().hex[:6]}"
    topics = [f"{stem}-{n:02d}" for n in range(TOPICS)]
    with common.bench_kafka() as bootstrap:
        began = time.monotonic()
        for topic in topics:
            common.create_topic(bootstrap, topic, PARTITIONS)
        _fill(bootstrap, topics)
        common.log(
            f"{TOPICS} topics x {PARTITIONS} partitions created and filled in "
            f"{time.monotonic() - began:.1f}s"
        )
        source = KafkaTableSpec.from_options(
            {
                "connector": "kafka",
                "topic-pattern": f"{stem}-.*",
                "properties.group.id": stem,
                "scan.startup.mode": "earliest-offset",
                "format": "json",
            },
            columns=[{"name": "id", "type": "BIGINT"}],
            role="source",
            name="events",
        )
        sink = KafkaTableSpec.from_options(
            {"connector": "kafka", "topic": f"{stem}-out", "format": "json"},
            columns=[{"name": "id", "type": "BIGINT"}],
            role="sink",
        )

        @kafka_streaming_asset(sources={"events": source}, sink=sink, checks=[])
        def bench_asset(context, events):  # type: ignore[no-untyped-def]
            return events

        instance = DagsterInstance.ephemeral()
        half = RECORDS_PER_PARTITION // 2
        checkpoint = OffsetsCheckpoint(
            {"events": {(t, p): half for t in topics for p in range(PARTITIONS)}}
        )
        instance.report_runless_asset_event(
            AssetMaterialization(
                "bench_asset",
                metadata={CHECKPOINT_METADATA_KEY: MetadataValue.json(checkpoint.to_json())},
            )
        )
        resources = {"kafka": KafkaResource(bootstrap_servers=bootstrap)}
        discovery = build_kafka_discovery_sensor(source, [bench_asset])
        new_data = build_kafka_new_data_sensor(bench_asset, min_pending_records=1)
        figures: dict[str, list[float]] = {"discovery": [], "new_data": []}
        cursors: dict[str, str | None] = {"discovery": None, "new_data": None}
        expected = TOPICS * PARTITIONS * (RECORDS_PER_PARTITION - half)
        for n in range(TICKS + 1):
            for name, sensor in (("discovery", discovery), ("new_data", new_data)):
                seconds, result = _timed(sensor, instance, resources, cursors[name])
                cursors[name] = result.cursor
                figures[name].append(seconds)
                if name == "new_data":
                    pending = result.asset_events[0].metadata["pendingRecords"].value
                    if pending != expected or len(result.run_requests) != 1:
                        raise SystemExit(f"new-data tick saw {pending} pending, not {expected}")
            if n == 0:
                common.log(
                    f"first ticks: discovery {figures['discovery'][0]:.3f}s, new data "
                    f"{figures['new_data'][0]:.3f}s"
                )
        sensors._CLIENTS.clear()  # the code server's kept clients go before the broker does
        gc.collect()
    warm = {name: values[1:] for name, values in figures.items()}
    slowest = max(max(values) for values in figures.values())
    common.log(
        "warm ticks: "
        + ", ".join(
            f"{name} median {statistics.median(v):.3f}s max {max(v):.3f}s"
            for name, v in warm.items()
        )
    )
    return {
        "partitions": TOPICS * PARTITIONS,
        "topics": TOPICS,
        "ticks": TICKS,
        "discovery_tick_s": round(statistics.median(warm["discovery"]), 4),
        "new_data_tick_s": round(statistics.median(warm["new_data"]), 4),
        "first_tick_s": {name: round(values[0], 4) for name, values in figures.items()},
        "max_tick_s": round(slowest, 4),
        "target_s": TARGET_S,
        "target_met": slowest <= TARGET_S,
    }


if __name__ == "__main__":
    common.run_and_print(
        run,
        lambda s: (
            f"sensor ticks over {s['partitions']} partitions: discovery "
            f"{s['discovery_tick_s']}s, new data {s['new_data_tick_s']}s (median), slowest "
            f"{s['max_tick_s']}s; target <= {s['target_s']}s met: {s['target_met']}"
        ),
    )
