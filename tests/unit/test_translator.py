"""The translator: Kafka tables as Dagster assets, and the lineage topic → asset → topic."""

from __future__ import annotations

import pytest
from dagster import AssetKey, AssetSpec, Definitions

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaResource,
    KafkaTableSpec,
    KafkaTranslator,
    SparkResource,
    build_kafka_source_assets,
    kafka_streaming_asset,
)

RESOURCES = {"kafka": KafkaResource(), "pyspark": SparkResource(spark_config={})}
COLUMNS = [
    {"name": "id", "type": "BIGINT", "comment": "order id"},
    {"name": "ts", "type": "TIMESTAMP_LTZ(3)", "metadata_key": "timestamp"},
]


def table(name: str | None, **options: str) -> KafkaTableSpec:
    return KafkaTableSpec.from_options(
        {"connector": "kafka", "format": "json", **options}, columns=COLUMNS, name=name
    )


def test_a_topic_asset_has_kind_schema_name_and_its_declaration() -> None:
    spec = KafkaTranslator().get_asset_spec(
        table("orders", topic="orders", **{"properties.bootstrap.servers": "b1:9092,b2:9092"})
    )
    assert spec.key == AssetKey("orders")
    assert spec.kinds == {"kafka"}
    assert spec.metadata["dagster/table_name"] == "orders"
    assert spec.metadata["dagster/uri"].value == "kafka://b1:9092/orders"
    columns = spec.metadata["dagster/column_schema"].value.columns
    assert [(c.name, c.type) for c in columns] == [("id", "BIGINT"), ("ts", "TIMESTAMP_LTZ(3)")]
    assert columns[0].description == "order id"
    assert columns[1].description == "metadata column"
    assert spec.metadata["kafka/table"].value["options"]["topic"] == "orders"


def test_keys_of_unnamed_tables_and_secret_declarations() -> None:
    translator = KafkaTranslator()
    assert translator.get_asset_spec(table(None, topic="a.b")).key == AssetKey("a.b")
    pattern = translator.get_asset_spec(table(None, **{"topic-pattern": "orders-(eu|us).*"}))
    assert pattern.key == AssetKey(["topic-pattern", "orders-_eu_us_._"])
    secret = translator.get_asset_spec(
        table("s", topic="s", **{"properties.sasl.password": "hunter2"})
    )
    assert "kafka/table" not in secret.metadata
    assert "hunter2" not in repr(secret.metadata)


class Grouped(KafkaTranslator):
    def get_asset_spec(self, table):  # type: ignore[no-untyped-def]
        spec = super().get_asset_spec(table)
        return spec.replace_attributes(key=spec.key.with_prefix("kafka"), group_name="topics")


def test_the_graph_reads_topic_asset_topic() -> None:
    orders = table("orders", topic="orders")
    revenue = table("revenue", topic="revenue")
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "report", "format": "json"}, columns=COLUMNS, role="sink"
    )

    @kafka_streaming_asset(sources={"orders": orders}, sink=revenue, checks=[])
    def revenue_asset(context, orders):  # type: ignore[no-untyped-def]
        return orders

    @kafka_streaming_asset(sources={"revenue": revenue}, sink=sink, checks=[], name="report")
    def report(context, revenue):  # type: ignore[no-untyped-def]
        return revenue

    sources = build_kafka_source_assets([revenue_asset, report])
    assert sorted(k for a in sources for k in a.keys) == [AssetKey("orders"), AssetKey("revenue")]
    graph = Definitions(
        assets=[revenue_asset, report, *sources], resources=RESOURCES
    ).resolve_asset_graph()
    assert graph.get(AssetKey("revenue_asset")).parent_keys == {AssetKey("orders")}
    assert graph.get(AssetKey("orders")).is_external

    @kafka_streaming_asset(sources={"orders": orders}, sink=revenue, checks=[], name="revenue")
    def revenue_named(context, orders):  # type: ignore[no-untyped-def]
        return orders

    # Named like the table it writes, the asset is that topic: the next asset depends on it.
    [only_orders] = build_kafka_source_assets([revenue_named, report])
    assert only_orders.keys == {AssetKey("orders")}
    graph = Definitions(
        assets=[revenue_named, report, only_orders], resources=RESOURCES
    ).resolve_asset_graph()
    assert graph.get(AssetKey("report")).parent_keys == {AssetKey("revenue")}
    assert graph.get(AssetKey("revenue")).parent_keys == {AssetKey("orders")}

    with pytest.raises(KafkaOptionsError, match="every run would read its own output again"):

        @kafka_streaming_asset(
            sources={"revenue": revenue}, sink=revenue, checks=[], name="revenue"
        )
        def rewrites(context, revenue):  # type: ignore[no-untyped-def]
            return revenue

    @kafka_streaming_asset(
        sources={"orders": orders}, sink=sink, checks=[], name="by_translator", translator=Grouped()
    )
    def by_translator(context, orders):  # type: ignore[no-untyped-def]
        return orders

    assert by_translator.specs_by_key[AssetKey("by_translator")].deps[0].asset_key == AssetKey(
        ["kafka", "orders"]
    )
    [topics] = build_kafka_source_assets([by_translator], translator=Grouped())
    assert topics.keys == {AssetKey(["kafka", "orders"])}
    assert topics.specs_by_key[AssetKey(["kafka", "orders"])].group_name == "topics"


def test_a_streaming_asset_stands_for_its_sink_topic() -> None:
    sink = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "out", "format": "json"}, columns=COLUMNS, role="sink"
    )

    @kafka_streaming_asset(sources={"orders": table("orders", topic="orders")}, sink=sink)
    def copied(context, orders):  # type: ignore[no-untyped-def]
        return orders

    spec = copied.specs_by_key[AssetKey("copied")]
    assert spec.metadata["dagster/table_name"] == "out"
    assert [c.name for c in spec.metadata["dagster/column_schema"].value.columns] == ["id", "ts"]
    assert spec.kinds == {"kafka", "spark"}


def test_changelog_tables_list_exactly_their_declared_columns() -> None:
    declared = [{"name": "id", "type": "BIGINT"}, {"name": "total", "type": "DOUBLE"}]
    upsert = KafkaTableSpec.from_options(
        {"connector": "upsert-kafka", "topic": "totals", "key.format": "json",
         "value.format": "json"},
        columns=declared,
        primary_key=["id"],
        role="sink",
    )  # fmt: skip
    cdc = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "cdc", "format": "debezium-json"}, columns=declared
    )

    @kafka_streaming_asset(sources={"orders": table("orders", topic="orders")}, sink=upsert)
    def totals(context, orders):  # type: ignore[no-untyped-def]
        return orders

    def names(spec: AssetSpec) -> list[str]:
        return [c.name for c in spec.metadata["dagster/column_schema"].value.columns]

    # the row kind is a column of the frames, not of the table (Flink's schema has none)
    assert names(totals.specs_by_key[AssetKey("totals")]) == ["id", "total"]
    assert names(KafkaTranslator().get_asset_spec(cdc)) == ["id", "total"]
