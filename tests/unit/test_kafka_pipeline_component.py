"""KafkaPipelineComponent loaded from a defs.yaml: assets, checks, sensors, partitions, errors."""

from __future__ import annotations

import importlib.metadata
import re
import textwrap
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, BackfillPolicy, Definitions, HourlyPartitionsDefinition
from dagster.components import build_defs_for_component
from dagster.components.testing import create_defs_folder_sandbox

from dagster_kafka_flinklike import (
    ConsumerLagCheck,
    DirtyDataCheck,
    KafkaComponentError,
    KafkaOptionsError,
    KafkaPipelineComponent,
    KafkaTableSpec,
    build_flink_sql_definitions,
)
from dagster_kafka_flinklike.components.kafka_pipeline.schema import AssetModel
from dagster_kafka_flinklike.materialization import streaming_tables

TYPE = "dagster_kafka_flinklike.KafkaPipelineComponent"

ORDERS = """\
    orders:
      options:
        connector: kafka
        topic: orders
        format: json
        scan.startup.mode: earliest-offset
        scan.topic-partition-discovery.interval: 1 min
        ingestion.ignore-errors: true
      columns:
        - {name: order_id, type: STRING}
        - {name: real_pay, type: DOUBLE}
        - {name: ts, type: TIMESTAMP_LTZ(3), metadata_key: timestamp}
"""

PIPELINE = f"""\
type: {TYPE}
attributes:
  tables:
{ORDERS}
    large_orders:
      ddl: |
        CREATE TABLE large_orders (order_id STRING, real_pay DOUBLE)
        WITH ('connector' = 'kafka', 'topic' = 'large_orders', 'format' = 'json')
    hourly:
      sql_file: hourly.sql
  assets:
    - query: SELECT order_id, real_pay FROM orders WHERE real_pay >= 100
      sources: [orders]
      sink: large_orders
      checks:
        dirty_data: {{max_ratio: 0.05, blocking: true}}
        consumer_lag: {{max_pending_records: 1000, max_pending_age: 30 min, severity: WARN}}
      new_data_sensor: {{min_pending_records: 500, max_pending_age: 5 min, max_retries: 5}}
    - sql_file: hourly_insert.sql
      partitions: {{type: hourly, start: "2026-11-20-00:00", end_offset: 1}}
      allowed_lateness: 5 min
      backfill_policy: {{type: multi_run, max_partitions_per_run: 4}}
  sensors:
    discovery: true
  translation:
    key_prefix: kafka
    group_name: orders
    tags: {{team: data}}
"""

FILES = {
    "hourly.sql": """\
        CREATE TABLE hourly (window_start TIMESTAMP(3), orders BIGINT)
        WITH ('connector' = 'kafka', 'topic' = 'hourly', 'format' = 'json');
    """,
    "hourly_insert.sql": """\
        INSERT INTO hourly
        SELECT window_start, COUNT(*)
        FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' HOUR))
        GROUP BY window_start, window_end;
    """,
}


@contextmanager
def loaded(defs_yaml: str, files: Mapping[str, str] | None = None) -> Iterator[Any]:
    """``(component, defs, defs.yaml path)`` of a component folder with that defs.yaml."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dagster's beta/preview notices
        with create_defs_folder_sandbox() as sandbox:
            folder = sandbox.defs_folder_path / "pipeline"
            folder.mkdir()
            (folder / "defs.yaml").write_text(defs_yaml)
            for name, text in (files or {}).items():
                (folder / name).write_text(textwrap.dedent(text))
            with sandbox.load_component_and_build_defs(defs_path=folder) as (component, defs):
                yield component, defs, folder / "defs.yaml"


def load_error(defs_yaml: str, files: Mapping[str, str] | None = None) -> str:
    """The message of the component's error when that defs.yaml loads (through Dagster's
    wrappers: the cause, or the traceback Dagster's resolver error quotes)."""
    with pytest.raises(Exception) as info, loaded(defs_yaml, files):
        pass
    messages = []
    error: BaseException | None = info.value
    while error is not None:
        messages.append(str(error))
        error = error.__cause__
    found = [m for m in messages if "KafkaComponentError" in m or "defs.yaml:" in m]
    assert found, messages
    return found[-1]


def line_of(path_text: str, needle: str) -> int:
    return next(i for i, line in enumerate(path_text.splitlines(), 1) if needle in line)


def test_the_scaffolded_defs_yaml_loads_as_written() -> None:
    with warnings.catch_warnings(), create_defs_folder_sandbox() as sandbox:
        warnings.simplefilter("ignore")
        path = sandbox.scaffold_component(component_cls=KafkaPipelineComponent, defs_path="p")
        text = (path / "defs.yaml").read_text()
        assert text.startswith("type: ") and text.split("\n")[0].endswith(".KafkaPipelineComponent")
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert isinstance(component, KafkaPipelineComponent)
            graph = defs.resolve_asset_graph()
            assert graph.get_all_asset_keys() == {AssetKey("orders"), AssetKey("orders_out")}
            assert {str(k.name) for k in graph.asset_check_keys} == {"kafka_dirty_data"}
            assert set(defs.resources or {}) == {"kafka", "pyspark"}
            Definitions.validate_loadable(defs)


def test_tables_assets_checks_sensors_and_partitions_from_yaml() -> None:
    with loaded(PIPELINE, FILES) as (component, defs, _):
        assert set(component.tables) == {"orders", "large_orders", "hourly"}
        assert component.tables["large_orders"].topics == ("large_orders",)
        graph = defs.resolve_asset_graph()
        keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
        assert keys == {"kafka/orders", "kafka/large_orders", "kafka/hourly"}

        large = defs.get_assets_def(AssetKey(["kafka", "large_orders"]))
        checks = {c.name: c for c in streaming_tables(large).checks}
        assert set(checks) == {"kafka_dirty_data", "kafka_consumer_lag"}
        dirty, lag = checks["kafka_dirty_data"], checks["kafka_consumer_lag"]
        assert isinstance(dirty, DirtyDataCheck)
        assert (dirty.max_ratio, dirty.blocking) == (0.05, True)
        assert isinstance(lag, ConsumerLagCheck)
        assert lag.max_pending_records == 1000
        assert lag.max_pending_age is not None and lag.max_pending_age.total_seconds() == 1800
        assert lag.severity.value == "WARN"
        assert large.specs_by_key[large.key].deps[0].asset_key == AssetKey(["kafka", "orders"])

        hourly = defs.get_assets_def(AssetKey(["kafka", "hourly"]))
        assert isinstance(hourly.partitions_def, HourlyPartitionsDefinition)
        assert hourly.partitions_def.end_offset == 1
        assert streaming_tables(hourly).lateness_ms == 300_000
        assert hourly.backfill_policy == BackfillPolicy.multi_run(max_partitions_per_run=4)
        assert large.partitions_def is None

        for key in ("large_orders", "hourly", "orders"):
            node = graph.get(AssetKey(["kafka", key]))
            assert node.group_name == "orders"
            assert node.tags["team"] == "data"

        sensors = {s.name: s for s in defs.sensors or []}
        assert set(sensors) == {"kafka__large_orders_new_data", "orders_partition_discovery"}
        assert sensors["orders_partition_discovery"].minimum_interval_seconds == 60
        assert "up to 5 time(s)" in (sensors["kafka__large_orders_new_data"].description or "")
        assert set(defs.resources or {}) == {"kafka", "pyspark"}


def test_settings_for_resources_keys_and_source_assets() -> None:
    defs_yaml = PIPELINE.split("  sensors:")[0].replace(
        "    - sql_file: hourly_insert.sql", "    - sql_file: hourly_insert.sql\n      #"
    )
    defs_yaml += """\
  kafka:
    bootstrap_servers: "{{ env('DKF_TEST_SERVERS', 'b1:9092') }}"
    properties: {client.id: yaml, message.max.bytes: "{{ 1000 * 1000 }}"}
  provide_resources: true
  kafka_resource_key: cluster
  spark_resource_key: spark
  include_source_assets: false
"""
    with loaded(defs_yaml, FILES) as (component, defs, _):
        assert component.kafka.bootstrap_servers == "b1:9092"
        assert component.kafka.properties == {"client.id": "yaml", "message.max.bytes": "1000000"}
        assert set(defs.resources or {}) == {"cluster", "spark"}
        keys = {k.to_user_string() for a in defs.assets or [] for k in a.keys}  # type: ignore[union-attr]
        assert keys == {"large_orders", "hourly"}  # 'orders' is only a dependency
        asset = defs.get_assets_def(AssetKey("large_orders"))
        assert streaming_tables(asset).kafka_resource_key == "cluster"


def test_a_spark_connect_url_alone_configures_the_session() -> None:
    defs_yaml = (
        PIPELINE.split("  sensors:")[0]
        + """\
  spark:
    remote: sc://spark-connect.example:15002
"""
    )
    with loaded(defs_yaml, FILES) as (component, _, _):
        assert component.spark.remote_url() == "sc://spark-connect.example:15002"
        assert component.spark.spark_config["spark.sql.session.timeZone"] == "UTC"


def test_components_configured_alike_share_their_resources() -> None:
    simple = f"""\
type: {TYPE}
attributes:
  tables:
{ORDERS}
    out_N:
      options: {{connector: kafka, topic: out_N, format: json}}
      columns: [{{name: order_id, type: STRING}}]
  assets:
    - {{query: "SELECT order_id FROM orders", sources: [orders], sink: out_N}}
  include_source_assets: false
"""
    with warnings.catch_warnings(), create_defs_folder_sandbox() as sandbox:
        warnings.simplefilter("ignore")
        for n in (1, 2):
            folder = sandbox.defs_folder_path / f"p{n}"
            folder.mkdir()
            (folder / "defs.yaml").write_text(simple.replace("_N", f"_{n}"))
        with sandbox.build_all_defs() as defs:
            keys = defs.resolve_asset_graph().get_all_asset_keys()
            assert {AssetKey("out_1"), AssetKey("out_2")} <= keys
            assert set(defs.resources or {}) == {"kafka", "pyspark"}


def test_a_flink_sql_entry_writes_yaml_tables_and_takes_the_translation() -> None:
    defs_yaml = f"""\
type: {TYPE}
attributes:
  tables:
{ORDERS}
    big:
      options: {{connector: kafka, topic: big, format: json}}
      columns: [{{name: order_id, type: STRING}}, {{name: real_pay, type: DOUBLE}}]
  assets:
    - sql: |
        INSERT INTO big SELECT order_id, real_pay FROM orders WHERE real_pay > 100;
      checks:
        dirty_data: {{max_count: 3, blocking: true}}
  translation:
    group_name: "{{{{ 'flink_' ~ table.topics[0] }}}}"
"""
    with loaded(defs_yaml) as (_, defs, _):
        graph = defs.resolve_asset_graph()
        assert graph.get(AssetKey("big")).group_name == "flink_big"
        assert graph.get(AssetKey("orders")).group_name == "flink_orders"
        asset = defs.get_assets_def(AssetKey("big"))
        assert asset.metadata_by_key[AssetKey("big")]["flink_sql/run_mode"] == "incremental"
        [check] = asset.check_specs
        assert (check.name, check.blocking) == ("kafka_dirty_data", True)


def test_a_component_built_in_python() -> None:
    orders = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "orders", "format": "json"},
        columns=[{"name": "order_id", "type": "STRING"}],
        name="orders",
    )
    out = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "out", "format": "json"},
        columns=[{"name": "order_id", "type": "STRING"}],
        name="out",
    )
    component = KafkaPipelineComponent(
        tables={"orders": orders, "out": out},
        assets=[AssetModel(query="SELECT * FROM orders", sources=["orders"], sink="out")],
    )
    defs = build_defs_for_component(component)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    assert keys == {AssetKey("orders"), AssetKey("out")}


def test_the_component_is_registered_for_dg() -> None:
    from dagster.components.core.package_entry import get_package_objects_in_module
    from dagster.components.scaffold.scaffold import has_scaffolder

    found = importlib.metadata.entry_points(group="dagster_dg_cli.registry_modules")
    module = next(e for e in found if e.value == "dagster_kafka_flinklike").load()
    objects = dict(get_package_objects_in_module(module))
    assert objects["KafkaPipelineComponent"] is KafkaPipelineComponent
    assert has_scaffolder(KafkaPipelineComponent)


# --- errors name the file, the line, the table or asset, and the option ---


@pytest.mark.parametrize(
    ("old", "new", "expected", "detail"),
    [
        (  # an invalid value: Flink's allowed values
            "scan.startup.mode: earliest-offset",
            "scan.startup.mode: first",
            "table 'orders', option 'scan.startup.mode'",
            "'earliest-offset'",
        ),
        (  # an unknown key
            "format: json\n",
            "formt: json\n",
            "table 'orders', option 'formt'",
            "did you mean",
        ),
        (  # in DDL: the line inside the block
            "'format' = 'json')\n    hourly",
            "'format' = 'jsn')\n    hourly",
            "table 'large_orders', option 'format'",
            "'jsn'",
        ),
        (
            "sink: large_orders",
            "sink: larger_orders",
            "table 'larger_orders' is not declared in 'tables'",
            "'large_orders'",
        ),
        (
            "max_ratio: 0.05",
            "max_ratio: 5",
            "asset 'large_orders', check 'dirty_data', option 'max_ratio'",
            "between 0 and 1",
        ),
        (
            'start: "2026-11-20-00:00"',
            'start: "yesterday"',
            "Flink SQL file 'hourly_insert.sql', option 'partitions'",
            "yesterday",
        ),
        (
            "allowed_lateness: 5 min",
            "allowed_lateness: soon",
            "Flink SQL file 'hourly_insert.sql', option 'allowed_lateness'",
            "'soon'",
        ),
    ],
)
def test_an_error_names_the_file_line_table_or_asset_and_option(
    old: str, new: str, expected: str, detail: str
) -> None:
    defs_yaml = PIPELINE.replace(old, new, 1)
    message = load_error(defs_yaml, FILES)
    line = line_of(defs_yaml, new.split("\n")[0])
    assert f"pipeline/defs.yaml:{line}: {expected}" in message
    assert detail in message


def test_an_invalid_sql_file_names_the_file_and_its_line() -> None:
    files = {**FILES, "hourly_insert.sql": "INSERT INTO hourly\nSELECT x FROM nowhere;"}
    message = load_error(PIPELINE, files)
    assert f"defs.yaml:{line_of(PIPELINE, '- sql_file: hourly_insert.sql')}" in message
    assert "hourly_insert.sql: line 1, column 1" in message
    assert "nowhere" in message


def test_a_sink_table_is_checked_as_a_sink() -> None:
    defs_yaml = PIPELINE.replace(
        "CREATE TABLE large_orders (order_id STRING, real_pay DOUBLE)",
        "CREATE TABLE large_orders (order_id STRING, real_pay DOUBLE, "
        "o BIGINT METADATA FROM 'offset')",
    )
    message = load_error(defs_yaml, FILES)
    assert "table 'large_orders' (a sink)" in message
    assert "read-only" in message


def test_the_schema_refuses_an_entry_that_is_both_query_and_sql() -> None:
    defs_yaml = PIPELINE.replace("sink: large_orders\n", "sink: large_orders\n      sql: x\n")
    message = load_error(defs_yaml, FILES)
    assert "an asset takes 'query' or 'sql', not both" in message
    assert re.search(r"attributes\.assets\S* at \S+/pipeline/defs\.yaml:\d+", message)


def test_the_readme_example_loads() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### YAML Component", 1)[1]
    defs_yaml = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    files = {
        "hourly_orders.sql": """\
            CREATE TABLE hourly_orders (window_start TIMESTAMP(3), orders BIGINT)
            WITH ('connector' = 'kafka', 'topic' = 'hourly_orders', 'format' = 'json');
        """
    }
    with loaded(defs_yaml, files) as (_, defs, _):
        keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
        assert keys == {"kafka/orders", "kafka/large_orders", "kafka/hourly_orders"}
    message = load_error(defs_yaml.replace("earliest-offset", "first"), files)
    assert "defs.yaml:10: table 'orders', option 'scan.startup.mode'" in message


# --- what breaks a load: our error with the file, line and key; no value of the YAML shown ---

SECRET = "Hunter2-s3cr3t"


def load_failure(defs_yaml: str, files: Mapping[str, str] | None = None) -> str:
    """Everything a failed load prints: the whole traceback, each error of the chain."""
    import traceback

    with pytest.raises(Exception) as info, loaded(defs_yaml, files):
        pass
    return "".join(traceback.format_exception(info.value))


def test_an_end_offset_out_of_bounds_is_refused_at_once() -> None:
    for value, instead in ((10_000_000, "Use 1 to make the current window"), (-5000, "lateness")):
        started = time.monotonic()
        defs_yaml = PIPELINE.replace("end_offset: 1", f"end_offset: {value}")
        message = load_error(defs_yaml, FILES)
        assert time.monotonic() - started < 30
        line = line_of(defs_yaml, "end_offset")
        assert (
            f"defs.yaml:{line}: Flink SQL file 'hourly_insert.sql', option 'end_offset': "
            f"'end_offset' = {value} is out of bounds: at most 1000 windows"
        ) in message
        assert instead in message
    with loaded(PIPELINE.replace("end_offset: 1", "end_offset: 1000"), FILES) as (_, defs, _):
        hourly = defs.get_assets_def(AssetKey(["kafka", "hourly"]))
        assert hourly.partitions_def is not None
        assert hourly.partitions_def.get_last_partition_key() is not None
    # the Python API too
    far = HourlyPartitionsDefinition(start_date="2026-11-20-00:00", end_offset=10_000_000)
    with pytest.raises(KafkaOptionsError, match=r"'partitions_def\.end_offset' = 10000000 is out"):
        build_flink_sql_definitions(
            "INSERT INTO b SELECT * FROM a;",
            tables={
                "a": KafkaTableSpec.from_options(
                    {"connector": "kafka", "topic": "a", "format": "raw"}
                )
            },
            partitions_def=far,
        )


def test_a_missing_sql_file_names_the_file_line_and_key(tmp_path: Path) -> None:
    defs_yaml = PIPELINE.replace("- sql_file: hourly_insert.sql", "- sql_file: missing.sql")
    message = load_error(defs_yaml, FILES)
    assert f"defs.yaml:{line_of(defs_yaml, 'missing.sql')}: Flink SQL file 'missing.sql'" in message
    assert "missing.sql': No such file or directory." in message
    defs_yaml = PIPELINE.replace("sql_file: hourly.sql", "sql_file: gone.sql")
    message = load_error(defs_yaml, FILES)
    assert (
        f"defs.yaml:{line_of(defs_yaml, 'gone.sql')}: table 'hourly', option 'sql_file'" in message
    )
    with pytest.raises(KafkaOptionsError, match=r"Cannot read the Flink SQL file .*: No such file"):
        build_flink_sql_definitions(tmp_path / "none.sql")
    (tmp_path / "latin1.sql").write_bytes(b"SET 'pipeline.name' = '\xe9';")
    with pytest.raises(KafkaOptionsError, match="is not UTF-8 text"):
        build_flink_sql_definitions(tmp_path / "latin1.sql")


def test_a_translation_that_gives_no_asset_attributes_names_its_line() -> None:
    translation = (
        "  translation:\n    key_prefix: kafka\n    group_name: orders\n    tags: {team: data}"
    )
    assert translation in PIPELINE
    defs_yaml = PIPELINE.replace(translation, "  translation: oops")
    message = load_error(defs_yaml, FILES)
    assert f"defs.yaml:{line_of(defs_yaml, 'translation:')}: translation: expected asset" in message
    assert "got text" in message
    defs_yaml = PIPELINE.replace(translation, '  translation: "{{ table.name }}"')
    message = load_error(defs_yaml, FILES)
    assert (
        f"defs.yaml:{line_of(defs_yaml, 'translation:')}: translation of table 'large_orders' does "
        "not give asset attributes: its template gives str, not a mapping of asset attributes"
    ) in message


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (  # a value pydantic refuses, under a secret option
            "ingestion.ignore-errors: true",
            f"ingestion.ignore-errors: true\n        properties.sasl.password: [{SECRET}]",
        ),
        (  # a secret option put beside 'options' instead of under it
            "      columns:\n        - {name: order_id",
            f"      properties.sasl.password: {SECRET}\n      columns:\n        - {{name: order_id",
        ),
        (  # an entry refused by its model, whose Flink SQL holds a password
            "sink: large_orders\n",
            'sink: large_orders\n      sql: "CREATE TABLE x (a INT) WITH '
            f"('properties.sasl.password' = '{SECRET}')\"\n",
        ),
        (  # a refused option a few lines below one: the lines around the field are not shown
            "    orders:\n      options:\n",
            f"    orders:\n      options:\n        properties.sasl.password: {SECRET}\n"
            "        formt: x\n",
        ),
        (  # the Kafka resource's properties
            "  sensors:\n",
            f"  kafka:\n    properties: {{sasl.password: [{SECRET}]}}\n  sensors:\n",
        ),
    ],
)
def test_no_error_of_a_load_shows_a_value_of_the_yaml(old: str, new: str) -> None:
    assert old in PIPELINE
    printed = load_failure(PIPELINE.replace(old, new, 1), FILES)
    assert "defs.yaml" in printed
    assert SECRET not in printed


def test_resources_and_tables_given_as_text_or_unknown_settings_are_our_errors() -> None:
    for new, at, expected in [
        ("  kafka:\n    k: 1\n", "k: 1", "kafka: unknown setting(s) 'k'"),
        ("  kafka: oops\n", "kafka: oops", "kafka: expected a mapping of"),
        (
            "  kafka:\n    properties: {acks: [all]}\n",
            "properties: {acks",
            "kafka: properties 'acks' must be text or numbers",
        ),
        ("  spark: oops\n", "spark: oops", "spark: expected a mapping of"),
    ]:
        defs_yaml = PIPELINE.replace("  sensors:\n", new + "  sensors:\n", 1)
        message = load_error(defs_yaml, FILES)
        assert f"defs.yaml:{line_of(defs_yaml, at)}: {expected}" in message
    tables = PIPELINE[PIPELINE.index("  tables:") : PIPELINE.index("  assets:")]
    message = load_error(PIPELINE.replace(tables, "  tables: oops\n"), FILES)
    assert "defs.yaml:3: tables: expected a mapping of table names to tables, got text." in message


def test_an_error_of_a_component_built_in_python_is_ours() -> None:
    orders = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "orders", "format": "json"},
        columns=[{"name": "order_id", "type": "STRING"}],
        name="orders",
    )
    component = KafkaPipelineComponent(
        tables={"orders": orders},
        assets=[AssetModel(query="SELECT * FROM orders", sources=["orders"], sink="out")],
    )
    with pytest.raises(KafkaComponentError, match=r"table 'out' is not declared in 'tables'"):
        build_defs_for_component(component)
