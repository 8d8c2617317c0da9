"""A YAML-declared pipeline (KafkaPipelineComponent) materialized on real Kafka and Spark."""

from __future__ import annotations

import warnings

from dagster import AssetKey, DagsterInstance, materialize
from dagster.components.testing import create_defs_folder_sandbox

from dagster_kafka_flinklike.local.orders import encode_order, generate_orders
from tests.conftest import produce
from tests.integration.test_streaming_asset import read_all

DEFS_YAML = """\
type: dagster_kafka_flinklike.KafkaPipelineComponent
attributes:
  tables:
    orders:
      options:
        connector: kafka
        topic: {orders}
        format: json
        properties.group.id: large-{orders}
        scan.startup.mode: earliest-offset
        ingestion.ignore-errors: true
      columns:
        - {{name: order_id, type: STRING}}
        - {{name: order_channel, type: STRING}}
        - {{name: real_pay, type: DOUBLE}}
    large_orders:
      ddl: |
        CREATE TABLE large_orders (order_id STRING, order_channel STRING, real_pay DOUBLE)
        WITH ('connector' = 'kafka', 'topic' = '{large}',
              'key.format' = 'raw', 'key.fields' = 'order_id', 'value.format' = 'json',
              'sink.delivery-guarantee' = 'exactly-once',
              'sink.transactional-id-prefix' = 'large-orders')
  assets:
    - query: |
        SELECT order_id, order_channel, real_pay FROM orders WHERE real_pay >= 100
      sources: [orders]
      sink: large_orders
      checks:
        dirty_data: {{max_ratio: 0.05}}
  kafka:
    bootstrap_servers: {bootstrap}
  spark:
    spark_config: {{spark.master: "local[2]", spark.sql.shuffle.partitions: "2",
                   spark.sql.session.timeZone: UTC, spark.ui.enabled: "false"}}
"""


def test_a_yaml_query_asset_writes_its_result_to_the_sink_topic(
    kafka_bootstrap, new_topic, spark
) -> None:
    orders_topic, large_topic = new_topic(partitions=2), new_topic(partitions=2)
    orders = list(generate_orders(7, 120))
    produce(kafka_bootstrap, orders_topic, [encode_order(o) for o in orders])
    produce(kafka_bootstrap, orders_topic, [(b"bad", b"{not json")])
    defs_yaml = DEFS_YAML.format(orders=orders_topic, large=large_topic, bootstrap=kafka_bootstrap)

    with warnings.catch_warnings(), create_defs_folder_sandbox() as sandbox:
        warnings.simplefilter("ignore")
        folder = sandbox.defs_folder_path / "large_orders"
        folder.mkdir()
        (folder / "defs.yaml").write_text(defs_yaml)
        with sandbox.load_component_and_build_defs(defs_path=folder) as (_, defs):
            asset = defs.get_assets_def(AssetKey("large_orders"))
            result = materialize(
                [asset], resources=defs.resources, instance=DagsterInstance.ephemeral()
            )

    assert result.success
    meta = result.asset_materializations_for_node("large_orders")[0].metadata
    large = [o for o in orders if o["real_pay"] >= 100]
    assert meta["numRecordsIn"].value == 121
    assert meta["dirtyRecords"].value == 1
    assert meta["numRecordsOut"].value == len(large)
    [check] = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == ("kafka_dirty_data", True)

    written = read_all(kafka_bootstrap, large_topic, 2)
    assert sorted(key.decode() for key, _ in written) == sorted(o["order_id"] for o in large)
    by_id = {o["order_id"]: o for o in large}
    for key, value in written:  # the value holds every column ('value.fields-include' = ALL)
        order = by_id[key.decode()]
        assert value == {k: order[k] for k in ("order_id", "order_channel", "real_pay")}
