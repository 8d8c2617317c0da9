"""The Dagster daemon itself ticks the new-data sensor, and the run it launches materializes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster import AssetKey, DagsterInstance
from dagster._core.instance.ref import InstanceRef

from dagster_kafka_flinklike.sensors import ATTEMPT_TAG, BATCH_TAG, SENSOR_TAG
from tests.conftest import consume_all, produce

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DAGSTER_YAML = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""
WORKSPACE = f"""\
load_from:
  - python_module:
      module_name: tests.e2e.daemon_location
      working_directory: {ROOT}
"""


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the daemon; then whatever of its process group (code server, run) is left."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def test_the_daemon_ticks_the_sensor_and_its_run_materializes(
    tmp_path, kafka_bootstrap, new_topic
) -> None:
    source, sink = new_topic(partitions=2), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [(None, json.dumps({"id": i}).encode()) for i in range(20)])
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    (tmp_path / "workspace.yaml").write_text(WORKSPACE)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "DKF_DAEMON_SOURCE": source,
        "DKF_DAEMON_SINK": sink,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    # Create the instance's storage first: the daemon and this test would race to create it.
    subprocess.run(
        [str(BIN / "dagster"), "instance", "migrate"], env=env, check=True, capture_output=True
    )
    log = (tmp_path / "daemon.log").open("w")
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", str(tmp_path / "workspace.yaml")],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    key = AssetKey("daemon_copy")
    try:
        deadline = time.monotonic() + 300
        event = None
        while event is None:
            assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()[-4000:]
            assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-4000:]
            time.sleep(2)
            event = instance.get_latest_materialization_event(key)
        run = instance.get_run_by_id(event.run_id)
        assert run is not None
        assert run.tags.get(SENSOR_TAG) == "daemon_copy_new_data"
        assert run.tags.get("dagster/sensor_name") == "daemon_copy_new_data"
        assert run.tags.get(ATTEMPT_TAG) == "1" and run.tags.get(BATCH_TAG)  # found by these
        metadata = event.asset_materialization.metadata
        assert metadata["numRecordsIn"].value == 20
        assert metadata["numRecordsOut"].value == 20
        observations = instance.fetch_observations(key, limit=20).records
        pending = [o.asset_observation.metadata["pendingRecords"].value for o in observations]
        assert 20 in pending  # the daemon stored the tick's lag observation
    finally:
        _stop(daemon)
        log.close()
    out = consume_all(kafka_bootstrap, sink, 1)
    assert sorted(json.loads(m.value())["id"] for m in out) == list(range(20))
