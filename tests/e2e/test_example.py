"""The example code location and the demo, run as a user runs them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _env(tmp_path: Path, bootstrap: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DKF_HOME": str(tmp_path / "home"),
            "DAGSTER_HOME": str(tmp_path / "dagster_home"),
            "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "DEMO_BATCH_SIZE": "300",
        }
    )
    (tmp_path / "dagster_home").mkdir(exist_ok=True)
    return env


def test_workspace_loads_without_errors(tmp_path, kafka_bootstrap) -> None:
    out = subprocess.run(
        [str(BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        env=_env(tmp_path, kafka_bootstrap),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Validation successful" in out.stdout + out.stderr


def _demo(env: dict[str, str], *, as_script: bool = False) -> str:
    """The demo as a module, or as ``make demo`` runs it (``python definitions/demo.py``)."""
    command = ["definitions/demo.py"] if as_script else ["-m", "definitions.demo"]
    out = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    return out.stdout


def test_demo_processes_each_new_batch_once(tmp_path, kafka_bootstrap) -> None:
    """Against a fresh broker: each run reads exactly the batch it produced."""
    env = _env(tmp_path, kafka_bootstrap)
    first = _demo(env)
    assert re.search(r"orders read\s+300\b", first), first
    assert "dagster dev -w workspace.yaml" in first
    second = _demo(env, as_script=True)
    assert re.search(r"orders read\s+300\b", second), second
    assert re.search(r"produced batch (\d+)", second).group(1) != re.search(
        r"produced batch (\d+)", first
    ).group(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_webserver_serves_the_code_location(tmp_path, kafka_bootstrap) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [
            str(BIN / "dagster-webserver"),
            "-w",
            "workspace.yaml",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=ROOT,
        env=_env(tmp_path, kafka_bootstrap),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        query = b'{"query": "{ assetNodes { assetKey { path } } }"}'
        deadline = time.monotonic() + 180
        body = ""
        while time.monotonic() < deadline:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/graphql",
                    data=query,
                    headers={"Content-Type": "application/json"},
                )
                body = urllib.request.urlopen(request, timeout=5).read().decode()
                if "channel_revenue" in body:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert "channel_revenue" in body, body
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_partition_range_backfills_in_one_run_from_the_cli(tmp_path, kafka_bootstrap) -> None:
    from datetime import UTC, datetime, timedelta

    from dagster import AssetKey, DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    env = _env(tmp_path, kafka_bootstrap)
    subprocess.run(
        [sys.executable, "-c", "from definitions.demo import _ensure_topics as e; import os; "
         "e(os.environ['KAFKA_BOOTSTRAP_SERVERS'])"],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    first, last = (hour - timedelta(hours=2)), hour
    span = f"{first:%Y-%m-%d-%H:%M}...{last:%Y-%m-%d-%H:%M}"
    out = subprocess.run(
        [str(BIN / "dagster"), "asset", "materialize", "-m", "definitions",
         "--select", "channel_revenue_hourly", "--partition-range", span],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    instance = DagsterInstance.from_ref(InstanceRef.from_dir(env["DAGSTER_HOME"]))
    records = instance.fetch_materializations(AssetKey("channel_revenue_hourly"), limit=10).records
    partitions = sorted(r.asset_materialization.partition for r in records)
    assert partitions == [f"{hour - timedelta(hours=n):%Y-%m-%d-%H:%M}" for n in (2, 1, 0)]
    assert len({r.run_id for r in records}) == 1  # the range was one run


def test_orders_avro_writes_registry_avro_from_the_cli(
    tmp_path, kafka_bootstrap, schema_registry_url
) -> None:
    """The example's Avro-with-registry asset: the clean orders of a demo batch land in topic
    'orders_avro' as Confluent-framed Avro that confluent-kafka's deserializer reads."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from tests.integration.test_sink_partitioners import consume_all

    env = {**_env(tmp_path, kafka_bootstrap), "SCHEMA_REGISTRY_URL": schema_registry_url}
    produced = subprocess.run(
        [sys.executable, "-c", "from definitions.demo import _ensure_topics as e, _produce_batch "
         "as p; import os; b = os.environ['KAFKA_BOOTSTRAP_SERVERS']; e(b); print(p(b)[1])"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert int(produced.stdout.strip().splitlines()[-1]) > 0
    # channel_revenue runs too, so the batch is consumed by its group as the demo consumes
    # it: later tests that read the topic see only their own batches.
    out = subprocess.run(
        [str(BIN / "dagster"), "asset", "materialize", "-m", "definitions", "--select",
         "orders_avro,channel_revenue"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    registry = SchemaRegistryClient({"url": schema_registry_url})
    value = AvroDeserializer(registry)
    records = consume_all(kafka_bootstrap, "orders_avro")
    rows = [
        value(r.value, SerializationContext("orders_avro", MessageField.VALUE)) for r in records
    ]
    clean = [o for o in consume_all(kafka_bootstrap, "orders") if not o.key.startswith(b"dirty-")]
    assert len(rows) == len(clean)  # every clean order once; the malformed ones are skipped
    assert all(r.key == row["order_id"].encode() for r, row in zip(records, rows, strict=True))
    assert {"order_id", "order_channel", "real_pay"} <= set(rows[0])
    assert registry.get_latest_version("orders_avro-value").schema_id > 0
