"""The Dagster UI, proven: `dagster dev` on the example code location, a materialization and a
backfill launched through the webserver's GraphQL API, then the pages in headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: Flags that keep Chromium off the network (the machines' network is closed).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Webserver:
    """GraphQL calls to a running `dagster dev`."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"

    def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": query, "variables": variables}).encode(),
            headers={"Content-Type": "application/json"},
        )
        body = json.loads(urllib.request.urlopen(request, timeout=60).read())
        assert "errors" not in body, body
        return body["data"]

    def wait(self, what: str, probe: Any, timeout: float = 300) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = probe()
            except OSError:
                found = None
            if found:
                return found
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(2)


LOADED = """{ workspaceOrError { ... on Workspace { locationEntries { name
  locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""
BACKFILL = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
BACKFILL_STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status } } }"""
RUNS = """query($tags: [ExecutionTag!]) { runsOrError(filter: {tags: $tags}) {
  ... on Runs { results { runId status tags { key value } } } } }"""
GRAPH = """{ assetNodes { assetKey { path } kinds isObservable isPartitioned groupName
  dependencyKeys { path } assetChecksOrError { ... on AssetChecks { checks { name } } } } }"""
SENSORS = """{ sensorsOrError(repositorySelector: {repositoryLocationName: "definitions",
  repositoryName: "__repository__"}) { ... on Sensors { results { name } } } }"""
METADATA = """query($path: [String!]!) { assetOrError(assetKey: {path: $path}) { ... on Asset {
  assetMaterializations(limit: 5) { runId partition metadataEntries { label
  ... on IntMetadataEntry { intValue } ... on TextMetadataEntry { text } } } } } }"""


def _values(materialization: dict[str, Any]) -> dict[str, Any]:
    return {
        e["label"]: e.get("intValue", e.get("text")) for e in materialization["metadataEntries"]
    }


def _stop(proc: subprocess.Popen) -> None:
    """Interrupt `dagster dev` (it stops its webserver, daemon and code servers), then make
    sure nothing of its process group is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_dagster_dev_shows_lineage_checks_sensors_and_runs(tmp_path, kafka_bootstrap) -> None:
    chromium = shutil.which("chromium")
    assert chromium, "Chromium is missing: `make test` installs Debian's chromium package."
    from definitions.demo import _ensure_topics, _produce_batch

    _ensure_topics(kafka_bootstrap)
    _, produced = _produce_batch(kafka_bootstrap)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = _free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DKF_HOME": str(tmp_path / "dkf"),
        "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
    }
    log = (tmp_path / "dagster-dev.log").open("w")
    dev = subprocess.Popen(
        [str(BIN / "dagster"), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    ui = Webserver(port)
    try:
        entries = ui.wait(
            "the code location",
            lambda: ui.gql(LOADED)["workspaceOrError"]["locationEntries"] or None,
        )
        assert entries[0]["name"] == "definitions"
        assert entries[0]["locationOrLoadError"]["__typename"] == "RepositoryLocation", entries

        selector = {
            "repositoryLocationName": "definitions",
            "repositoryName": "__repository__",
            "jobName": "__ASSET_JOB",
        }
        launched = ui.gql(
            LAUNCH,
            p={
                "selector": {**selector, "assetSelection": [{"path": ["channel_revenue"]}]},
                "mode": "default",
                "executionMetadata": {"tags": []},
            },
        )["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        # the backfill runs beside the materialization (they read the topic independently)
        hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        keys = [(hour - timedelta(hours=n)).strftime("%Y-%m-%d-%H:%M") for n in (2, 1, 0)]
        backfill = ui.gql(
            BACKFILL,
            p={
                "partitionNames": keys,
                "assetSelection": [{"path": ["channel_revenue_hourly"]}],
                "fromFailure": False,
            },
        )["launchPartitionBackfill"]
        assert backfill["__typename"] == "LaunchBackfillSuccess", backfill
        backfill_id = backfill["backfillId"]
        status = ui.wait(
            "the materialization",
            lambda: (
                ui.gql(RUN, id=run_id)["runOrError"]["status"] in ("SUCCESS", "FAILURE", "CANCELED")
                and ui.gql(RUN, id=run_id)["runOrError"]["status"]
            ),
        )
        assert status == "SUCCESS", (tmp_path / "dagster-dev.log").read_text()[-5000:]

        done = ui.wait(
            "the backfill",
            lambda: (
                ui.gql(BACKFILL_STATUS, id=backfill_id)["partitionBackfillOrError"]["status"]
                in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED")
                and ui.gql(BACKFILL_STATUS, id=backfill_id)["partitionBackfillOrError"]["status"]
            ),
        )
        assert done in ("COMPLETED", "COMPLETED_SUCCESS"), done
        runs = ui.gql(RUNS, tags=[{"key": "dagster/backfill", "value": backfill_id}])
        [backfill_run] = runs["runsOrError"]["results"]  # single-run backfill: one run
        assert backfill_run["status"] == "SUCCESS"

        nodes = {tuple(n["assetKey"]["path"]): n for n in ui.gql(GRAPH)["assetNodes"]}
        assert set(nodes) == {
            ("orders",),
            ("channel_revenue",),
            ("channel_revenue_hourly",),
            ("channel_revenue_10min",),  # the Flink SQL component of definitions/defs/
            ("large_orders",),  # the YAML component of definitions/defs/
            ("orders_avro",),  # Avro with the Schema Registry
        }
        assert nodes[("large_orders",)]["dependencyKeys"] == [{"path": ["orders"]}]
        assert nodes[("channel_revenue_10min",)]["dependencyKeys"] == [{"path": ["orders"]}]
        topic = nodes[("orders",)]
        assert topic["kinds"] == ["kafka"] and topic["isObservable"]
        revenue = nodes[("channel_revenue",)]
        assert revenue["dependencyKeys"] == [{"path": ["orders"]}]
        assert sorted(revenue["kinds"]) == ["kafka", "spark"]
        assert {c["name"] for c in revenue["assetChecksOrError"]["checks"]} == {
            "kafka_dirty_data",
            "kafka_transaction_timeout",
            "kafka_hanging_transactions",
            "kafka_consumer_lag",
        }
        hourly = nodes[("channel_revenue_hourly",)]
        assert hourly["isPartitioned"]
        assert {c["name"] for c in hourly["assetChecksOrError"]["checks"]} == {
            "kafka_dirty_data",
            "kafka_late_data",
        }
        sensors = {s["name"] for s in ui.gql(SENSORS)["sensorsOrError"]["results"]}
        assert sensors == {
            "orders_partition_discovery",
            "channel_revenue_new_data",
            "large_orders_new_data",
        }

        asset = ui.gql(METADATA, path=["channel_revenue"])["assetOrError"]
        latest = _values(asset["assetMaterializations"][0])
        assert latest["numRecordsIn"] - latest["dirtyRecords"] == produced
        assert latest["numRecordsOut"] == latest["dagster/row_count"] == 4
        assert latest["transactionalId"] == "channel-revenue-channel_revenue-0"
        windows = ui.gql(METADATA, path=["channel_revenue_hourly"])["assetOrError"]
        by_partition = {m["partition"]: m for m in windows["assetMaterializations"]}
        assert set(by_partition) == set(keys)
        assert {m["runId"] for m in by_partition.values()} == {backfill_run["runId"]}
        assert _values(by_partition[keys[-1]])["windowState"] == "open"

        _browse(chromium, ui.url, tmp_path)
    finally:
        _stop(dev)
        log.close()


def _browse(chromium: str, url: str, shots: Path) -> None:
    """Load the asset graph and the asset's page in headless Chromium; assert on the DOM."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/asset-groups")
            with contextlib.suppress(Exception):  # the first visit may ask to join the community
                page.get_by_role("button", name="Skip").click(timeout=10_000)
            page.get_by_text("channel_revenue_hourly").first.wait_for(timeout=60_000)
            for name in ("orders", "channel_revenue", "channel_revenue_hourly"):
                assert page.get_by_text(name, exact=True).count() >= 1, name
            assert page.get_by_text("Kafka", exact=True).count() >= 3  # the kinds' tags
            _no_error(page)
            page.screenshot(path=str(shots / "asset-graph.png"))

            page.goto(f"{url}/assets/channel_revenue")
            page.get_by_text("numRecordsIn").first.wait_for(timeout=60_000)
            for text in ("Latest materialization", "order_channel", "kafka_checkpoint"):
                # sections of the page render one after another: wait for each
                page.get_by_text(text).first.wait_for(timeout=30_000)
            _no_error(page)
            page.screenshot(path=str(shots / "channel_revenue.png"))
        finally:
            browser.close()
    assert (shots / "asset-graph.png").stat().st_size > 10_000


def _no_error(page: Any) -> None:
    for text in ("Something went wrong", "Unexpected GraphQL error", "An error occurred"):
        assert page.get_by_text(text).count() == 0, text
