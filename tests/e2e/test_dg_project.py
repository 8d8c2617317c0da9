"""The example as a ``dg`` project, and a new project scaffolded with the component, through the
``dg`` command line (no broker: loading definitions contacts no cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def dg(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(
        {
            "VIRTUAL_ENV": str(BIN.parent),  # the project's environment, active
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "DAGSTER_HOME": str(home),
            "NO_COLOR": "1",
        }
    )
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [str(BIN / "dg"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_dg_check_defs_validates_the_example(tmp_path: Path) -> None:
    out = dg("check", "defs", cwd=ROOT, home=tmp_path / "home")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "All component YAML validated successfully" in out.stdout + out.stderr
    assert "All definitions loaded successfully" in out.stdout + out.stderr


def test_dg_list_defs_shows_the_python_and_the_yaml_assets(tmp_path: Path) -> None:
    out = dg("list", "defs", "--json", cwd=ROOT, home=tmp_path / "home")
    assert out.returncode == 0, out.stdout + out.stderr
    listed = json.loads(out.stdout)
    assets = {a["asset_key"]: a for a in listed["assets"]}
    assert set(assets) == {
        "orders",
        "channel_revenue",
        "channel_revenue_hourly",
        "large_orders",
        "channel_revenue_10min",
        "orders_avro",
    }
    assert assets["orders_avro"]["dependency_keys"] == ["orders"]
    assert assets["channel_revenue_10min"]["dependency_keys"] == ["orders"]
    assert assets["large_orders"]["dependency_keys"] == ["orders"]
    assert assets["large_orders"]["group_name"] == "orders"
    checks = {c["key"] for c in listed["asset_checks"]}
    assert {"large_orders:kafka_dirty_data", "large_orders:kafka_consumer_lag"} <= checks
    sensors = {s["name"] for s in listed["sensors"]}
    assert "large_orders_new_data" in sensors


def test_dg_scaffolds_a_pipeline_that_loads(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "kafka_project" / "defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""\
            [project]
            name = "kafka-project"
            version = "0.1.0"

            [tool.dg]
            directory_type = "project"

            [tool.dg.project]
            root_module = "kafka_project"
        """)
    )
    (project / "kafka_project" / "__init__.py").write_text("")
    (project / "kafka_project" / "defs" / "__init__.py").write_text("")
    (project / "kafka_project" / "definitions.py").write_text(
        textwrap.dedent("""\
            from pathlib import Path

            from dagster import definitions, load_from_defs_folder


            @definitions
            def defs():
                return load_from_defs_folder(path_within_project=Path(__file__).parent)
        """)
    )
    home = tmp_path / "home"

    listed = dg("list", "components", "--json", cwd=project, home=home)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    keys = {c["key"] for c in json.loads(listed.stdout)["items"]}
    assert "dagster_kafka_flinklike.KafkaPipelineComponent" in keys

    params = json.dumps({"source_topic": "clicks", "sink_topic": "clicks-clean"})
    scaffold = dg(
        "scaffold",
        "defs",
        "dagster_kafka_flinklike.KafkaPipelineComponent",
        "clicks",
        "--json-params",
        params,
        cwd=project,
        home=home,
    )
    assert scaffold.returncode == 0, scaffold.stdout + scaffold.stderr
    defs_yaml = (project / "kafka_project" / "defs" / "clicks" / "defs.yaml").read_text()
    assert "type: dagster_kafka_flinklike.KafkaPipelineComponent" in defs_yaml
    assert "topic: clicks-clean" in defs_yaml

    check = dg("check", "defs", cwd=project, home=home)
    assert check.returncode == 0, check.stdout + check.stderr
    out = dg("list", "defs", "--json", cwd=project, home=home)
    assert out.returncode == 0, out.stdout + out.stderr
    assert {a["asset_key"] for a in json.loads(out.stdout)["assets"]} == {"clicks", "clicks_clean"}


def test_dg_dev_serves_the_example(tmp_path: Path) -> None:
    """``dg dev`` starts the webserver on the example project and its assets load."""
    from tests.e2e.test_ui import GRAPH, LOADED, Webserver, _free_port, _stop

    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ)
    env.update(
        {
            "VIRTUAL_ENV": str(BIN.parent),
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "DAGSTER_HOME": str(home),
            "NO_COLOR": "1",
        }
    )
    port = _free_port()
    log = (tmp_path / "dg-dev.log").open("w")
    dev = subprocess.Popen(
        [str(BIN / "dg"), "dev", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        ui = Webserver(port)

        def loaded() -> bool:
            entries = ui.gql(LOADED)["workspaceOrError"]["locationEntries"]
            states = [e["locationOrLoadError"] for e in entries]
            return bool(states) and all(
                s and s["__typename"] == "RepositoryLocation" for s in states
            )

        ui.wait("the code location to load", loaded, timeout=240)
        keys = {tuple(n["assetKey"]["path"]) for n in ui.gql(GRAPH)["assetNodes"]}
        assert {("channel_revenue_10min",), ("large_orders",), ("orders",)} <= keys
    finally:
        _stop(dev)
        log.close()
