"""Stateful runs follow the increment, not the history: ``make bench-stateful``.

Two Flink SQL inserts over one growing topic of JSON readings (``BENCH_STATEFUL_RECORDS`` per
increment, default 10,000, in event-time order across ``PARTITIONS`` partitions):

- ``aggregate``: an unbounded ``GROUP BY`` into ``upsert-kafka`` (Structured Streaming, update
  mode: each run writes the groups that changed);
- ``windows``: a ``TUMBLE`` on the payload time column with a ``WATERMARK`` into ``kafka``
  (append mode: each run writes the windows the watermark closed);
- ``sessions`` (a ``SESSION`` per sensor) and ``top_n`` (each sensor's three largest readings
  into ``upsert-kafka``), which keep their state through Python processors
  (``transformWithState``): reported per asset, not in the headline figures.

After one untimed warm-up increment, ``BENCH_STATEFUL_INCREMENTS`` (default 10) equal
increments are produced one at a time and both assets materialized after each, in one process
(the Spark session stays up, as in a code server). Figures, per asset and overall:

- ``increment_s``: the median wall time of materializing one increment (of the aggregate and
  the windows);
- ``ratio_last_vs_first_increment``: the last increment's time over the first's (the median of
  the last three over the median of the first three, per asset; the larger of the aggregate's
  and the windows'):
  near 1 when a run's cost follows its increment, growing with the number of increments when it
  re-reads the topic's history.

The last printed line is one JSON object with these figures.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

PARTITIONS = 3
SCRIPT = """
CREATE TABLE readings (
  sensor STRING, reading INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'readings', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json');
CREATE TABLE sensor_totals (
  sensor STRING, readings BIGINT, total BIGINT, PRIMARY KEY (sensor) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = 'sensor_totals', 'key.format' = 'json',
  'value.format' = 'json');
CREATE TABLE sensor_minutes (
  window_start TIMESTAMP(3), sensor STRING, readings BIGINT, total BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'sensor_minutes', 'format' = 'json');
CREATE TABLE sensor_sessions (
  sensor STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), readings BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'sensor_sessions', 'format' = 'json');
CREATE TABLE sensor_top (
  sensor STRING, ts TIMESTAMP(3), reading INT, PRIMARY KEY (sensor, ts) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = 'sensor_top', 'key.format' = 'json',
  'value.format' = 'json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO sensor_totals
SELECT sensor, COUNT(*), SUM(CAST(reading AS BIGINT)) FROM readings GROUP BY sensor;
INSERT INTO sensor_minutes
SELECT window_start, sensor, COUNT(*), SUM(CAST(reading AS BIGINT))
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, sensor;
INSERT INTO sensor_sessions
SELECT sensor, window_start, window_end, COUNT(*)
FROM TABLE(SESSION(TABLE readings PARTITION BY sensor, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY sensor, window_start, window_end;
INSERT INTO sensor_top
SELECT sensor, ts, reading FROM (
  SELECT sensor, ts, reading,
    ROW_NUMBER() OVER (PARTITION BY sensor ORDER BY reading DESC) AS rn
  FROM readings)
WHERE rn <= 3;
END;
"""
ASSETS = {
    "aggregate": "sensor_totals",
    "windows": "sensor_minutes",
    "sessions": "sensor_sessions",
    "top_n": "sensor_top",
}
#: The assets the headline figures are of (the others are reported per asset).
HEADLINE = ("aggregate", "windows")
T0 = 1_795_000_000.0


def _produce(bootstrap: str, first: int, count: int) -> None:
    """Readings ``first .. first + count``: 20 a second of event time, 200 sensors."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **common.FAST_PRODUCER})
    for i in range(first, first + count):
        seconds = T0 + i / 20
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
        value = {"sensor": f"s{i % 200}", "reading": i % 97, "ts": f"{stamp}.{i % 20 * 50:03d}"}
        producer.produce("readings", json.dumps(value).encode(), partition=i % PARTITIONS)
    if producer.flush(60):
        raise RuntimeError("could not deliver the increment")


def run() -> dict[str, Any]:
    from dagster import DagsterInstance, materialize

    from dagster_kafka_flinklike import KafkaResource, SparkResource
    from dagster_kafka_flinklike.components import build_flink_sql_definitions
    from dagster_kafka_flinklike.spark import local_spark_config

    records = common.env_int("BENCH_STATEFUL_RECORDS", 10_000)
    increments = common.env_int("BENCH_STATEFUL_INCREMENTS", 10)
    with (
        common.bench_kafka(disk_bytes=2 * 2**30) as bootstrap,
        tempfile.TemporaryDirectory(prefix="dkf-bench-stateful-") as home,
    ):
        for topic in ("readings", *ASSETS.values()):
            common.create_topic(bootstrap, topic, PARTITIONS)
        defs = build_flink_sql_definitions(SCRIPT, include_source_assets=False)
        assets = {a.key.path[-1]: a for a in defs.assets}  # type: ignore[union-attr]
        resources = {
            "kafka": KafkaResource(bootstrap_servers=bootstrap),
            "pyspark": SparkResource(spark_config=local_spark_config("bench-stateful")),
        }
        times: dict[str, list[float]] = {name: [] for name in ASSETS}
        written: dict[str, int] = dict.fromkeys(ASSETS, 0)
        with DagsterInstance.local_temp(tempdir=home) as instance:
            for n in range(increments + 1):
                _produce(bootstrap, n * records, records)
                for name, asset in ASSETS.items():
                    began = time.monotonic()
                    result = materialize([assets[asset]], instance=instance, resources=resources)
                    elapsed = time.monotonic() - began
                    if not result.success:
                        raise RuntimeError(f"{asset} failed in increment {n}")
                    [event] = result.get_asset_materialization_events()
                    meta = event.step_materialization_data.materialization.metadata
                    read = meta["numRecordsIn"].value
                    if read != records:
                        raise RuntimeError(f"{asset} read {read} records of increment {n}")
                    written[name] += int(meta["numRecordsOut"].value)
                    if n:  # the first increment warms Spark up: untimed
                        times[name].append(elapsed)
                    common.log(f"increment {n}: {asset} {elapsed:.2f}s, read {read}")
    ratios = {
        name: statistics.median(t[-3:]) / statistics.median(t[:3]) for name, t in times.items()
    }
    return {
        "records_per_increment": records,
        "increments": increments,
        "increment_s": round(statistics.median(t for n in HEADLINE for t in times[n]), 3),
        "ratio_last_vs_first_increment": round(max(ratios[n] for n in HEADLINE), 3),
        "per_asset": {
            name: {
                "increment_s": round(statistics.median(t), 3),
                "first_s": [round(x, 3) for x in t[:3]],
                "last_s": [round(x, 3) for x in t[-3:]],
                "ratio_last_vs_first_increment": round(ratios[name], 3),
                "records_out": written[name],
            }
            for name, t in times.items()
        },
    }


if __name__ == "__main__":
    common.run_and_print(
        run,
        lambda s: (
            f"stateful: {s['increment_s']}s per {s['records_per_increment']}-record increment, "
            f"last/first {s['ratio_last_vs_first_increment']}"
        ),
    )
