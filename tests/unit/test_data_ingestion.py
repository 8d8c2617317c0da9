"""Data-ingestion pipeline YAML without a broker: the seed's examples, parsing, table ids,
routes, topic mapping, transforms, types, and every refusal with its exact message."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from dagster_kafka_flinklike import (
    KafkaOptionsError,
    KafkaOptionsWarning,
    build_data_ingestion_definitions,
    parse_data_ingestion,
)
from dagster_kafka_flinklike.errors import KafkaYamlError
from dagster_kafka_flinklike.formats.debezium import connect_schema
from dagster_kafka_flinklike.ingestion import Route, Selectors, TableId, TopicMapping, route_table
from dagster_kafka_flinklike.ingestion.observe import jdbc_type, mysql_type
from dagster_kafka_flinklike.ingestion.transform import TransformRule, split_items
from dagster_kafka_flinklike.options import FlinkType
from dagster_kafka_flinklike.options.ingestion_keys import INGESTION_KEYS, REFUSED_INGESTION_KEYS
from tests.ingestion_seed import as_written, seed_pipelines

BASE = "source: {type: kafka, topic: cdc}\nsink: {type: kafka}\n"
T = TableId.parse


def refused(text: str, **kw: object) -> KafkaOptionsError:
    with pytest.raises(KafkaOptionsError) as caught:
        parse_data_ingestion(text, **kw)  # type: ignore[arg-type]
    return caught.value


def reason(error: BaseException) -> str:
    """The message without its place (``line 2, column 7: ``), which the YAML text gives."""
    return error.reason if isinstance(error, KafkaYamlError) else str(error)


# -- the seed's examples ------------------------------------------------------------------------


def test_the_seed_has_thirteen_pipeline_examples_and_one_is_kafka_to_kafka() -> None:
    examples = seed_pipelines()
    assert len(examples) == 13
    both = [e for e in examples if e.source_type == "kafka" and e.sink_type == "kafka"]
    assert [e.line for e in both] == [1387]


def test_the_seed_syntax_example_loads_as_written() -> None:
    [example] = [e for e in seed_pipelines() if e.line == 1387]
    pipeline = parse_data_ingestion(
        as_written(example, "broker:9092", "cdc"), variables={"kafka.topic": "cdc"}
    )
    source, sink = pipeline.source, pipeline.sink
    assert (source.name, source.value_format, source.spec.topics) == (
        "Kafka_source",
        "debezium-json",
        ("cdc",),
    )
    assert source.spec.properties["bootstrap.servers"] == "broker:9092"
    assert source.spec.startup_mode.value == "group-offsets"
    assert source.spec.effective_group_id == "KafkaSource-Kafka_source"
    assert (sink.value_format, sink.key_format, sink.topic, sink.partition_strategy) == (
        "debezium-json",
        None,
        None,
        "all-to-zero",
    )
    assert sink.spec.delivery_guarantee.value == "at-least-once"
    assert sink.topic_of(T("inventory.products")) == "inventory.products"


def test_seed_examples_of_other_systems_are_refused_as_written() -> None:
    messages = {}
    for example in seed_pipelines():
        if example.source_type != "kafka" or example.sink_type not in ("kafka", None):
            with pytest.raises(KafkaOptionsError) as caught:
                parse_data_ingestion(example.text)
            messages[example.line] = reason(caught.value).splitlines()[0]
    kafka_only = "is not supported: this product is Kafka ↔ Kafka on Spark"
    assert messages == {
        2201: f"sink: 'type' = 'hologres' {kafka_only}; the sink must be 'type: kafka'.",
        2219: f"source: 'type' = 'mysql' {kafka_only}; the source must be 'type: kafka'.",
        2553: f"source: 'type' = 'mysql' {kafka_only}; the source must be 'type: kafka'.",
        # the document's own typo: ' route:' indented by one space is not YAML
        2572: "not valid YAML: expected <block end>, but found '<block mapping start>' "
        "(while parsing a block mapping at line 1).",
        2599: f"source: 'type' = 'mysql' {kafka_only}; the source must be 'type: kafka'.",
        2617: f"source: 'type' = 'mysql' {kafka_only}; the source must be 'type: kafka'.",
    }


def test_seed_source_sections_need_a_sink_and_load_with_one() -> None:
    sources = [e for e in seed_pipelines() if e.source_type == "kafka" and e.sink_type is None]
    assert [e.line for e in sources] == [2272, 2290, 2311, 2496, 2512, 2526]
    sink = "sink:\n  type: kafka\n  topic: out\n  value.format: json\n"
    for example in sources:
        text = as_written(example, "broker:9092", "test-in")
        assert reason(refused(text)) == (
            "The pipeline has no 'sink': a data-ingestion pipeline reads a Kafka 'source' and "
            "writes a Kafka 'sink' (both 'type: kafka')."
        )
        pipeline = parse_data_ingestion(text + sink)
        assert pipeline.source.spec.topics == ("test-in",)
        assert pipeline.source.value_format == "json"
    by_line = {e.line: parse_data_ingestion(as_written(e, "b:9092", "t") + sink) for e in sources}
    initial = by_line[2272].source.initial_schemas
    assert {str(t): {n: str(x) for n, x in s.fields.items()} for t, s in initial.items()} == {
        "db1.t1": {"id": "BIGINT", "name": "VARCHAR(10)"},
        "db1.t2": {"id": "BIGINT"},
    }
    assert by_line[2290].source.spec.prefetch_records == 0
    assert by_line[2311].source.table_id_fields == ("col1", "col2")
    assert by_line[2496].source.spec.error_tolerance_max_count == 1000
    assert by_line[2512].source.spec.ignore_errors
    assert (by_line[2512].dirty_collector, by_line[2526].dirty_collector) == (None, "logger")


# -- table ids, selectors, routes, mapping ------------------------------------------------------


def test_table_ids() -> None:
    assert T("t").parts == ("t",)
    assert (T("ns.db.t").namespace, T("ns.db.t").schema_name, T("ns.db.t").table_name) == (
        "ns",
        "db",
        "t",
    )
    with pytest.raises(KafkaOptionsError, match="is not a table id"):
        T("a.b.c.d")


def test_selectors_match_part_by_part_in_full_ignoring_case() -> None:
    s = Selectors.parse(r"app_db.order_\.*, other.t1")
    assert s.matches(T("APP_DB.order_1")) and s.matches(T("other.t1"))
    assert not s.matches(T("app_db.orders_1")) and not s.matches(T("other.t10"))
    assert not s.matches(T("app_db")) and not s.matches(T("x.app_db.order_1"))
    assert Selectors.parse("t").matches(T("t")) and not Selectors.parse("t").matches(T("db.t"))
    with pytest.raises(KafkaOptionsError) as caught:
        Selectors.parse("a.b.c.d", "source-table")
    assert str(caught.value) == (
        "'source-table' selector 'a.b.c.d' has 4 parts; a table selector has 1 to 3 "
        "('[namespace.]schema.table'; write '\\.' for a regular-expression dot)."
    )


def test_routes_rename_merge_and_fan_out() -> None:
    merge = Route.parse(r"db.orders_\.*", "db.orders")
    symbol = Route.parse(r"db.\.*", "ods.ods_<>", replace_symbol="<>")
    groups = Route.parse(r"db.(\.*)_v2", "db2.$1")
    assert route_table(T("db.orders_01"), [merge]) == [T("db.orders")]
    assert route_table(T("db.orders_01"), [merge, symbol]) == [
        T("db.orders"),
        T("ods.ods_orders_01"),
    ]
    assert route_table(T("db.users_v2"), [groups]) == [T("db2.users")]
    assert route_table(T("other.t"), [merge, symbol]) == [T("other.t")]
    # a plain dot separates database and table: it does not match any character
    assert not merge.matches(T("dbxorders_1"))
    seed = Route.parse("mydb.mytable1,mydb.mytable2", "mytable1")
    assert route_table(T("mydb.mytable2"), [seed]) == [T("mytable1")]
    with pytest.raises(KafkaOptionsError, match="'source-table' holds"):
        Route.parse("db.(", "x")


def test_topic_mapping_first_rule_wins_and_keeps_unmapped_tables_by_id() -> None:
    m = TopicMapping.parse(r"mydb.mytable1,mydb.mytable2:mytable;mydb.\.*:rest")
    assert m.topic_of(T("mydb.mytable1")) == m.topic_of(T("mydb.mytable2")) == "mytable"
    assert m.topic_of(T("mydb.other")) == "rest"
    assert m.topic_of(T("x.y")) is None
    split = TopicMapping.parse("mydb.mytable1:mytable;mydb.mytable2:mytable")
    assert split.topic_of(T("mydb.mytable2")) == "mytable"
    with pytest.raises(KafkaOptionsError) as caught:
        TopicMapping.parse("mydb.t1=topic1")
    assert str(caught.value) == (
        "'sink.tableId-to-topic.mapping' rule 'mydb.t1=topic1' is not '<tables>:<topic>' "
        "(rules are separated by ';', tables by ',')."
    )


def test_sink_topic_precedence() -> None:
    text = BASE.replace(
        "sink: {type: kafka}",
        "sink: {type: kafka, topic: all, sink.tableId-to-topic.mapping: 'db.t:mapped'}",
    )
    assert parse_data_ingestion(text).sink.topic_of(T("db.t")) == "all"
    mapped = parse_data_ingestion(
        BASE.replace("{type: kafka}", "{type: kafka, sink.tableId-to-topic.mapping: 'db.t:mapped'}")
    )
    assert (mapped.sink.topic_of(T("db.t")), mapped.sink.topic_of(T("db.u"))) == ("mapped", "db.u")


# -- transforms -------------------------------------------------------------------------------


def test_split_items_respects_parentheses_and_quotes() -> None:
    assert split_items("*, CONCAT(a, ',', b) AS ab, `x,y`") == [
        "*",
        "CONCAT(a, ',', b) AS ab",
        "`x,y`",
    ]


def test_transform_expressions_are_translated_to_spark_sql() -> None:
    rule = TransformRule.parse(
        0,
        {
            "source-table": r"db.\.*",
            "projection": "*, CAST(id AS VARCHAR) AS id_text, __table_name__ AS tbl",
            "filter": "id > 10 AND name <> 'x'",
            "primary-keys": "id, name",
        },
    )
    assert rule.projection == ("*", "CAST(id AS string) AS id_text", "__table_name__ AS tbl")
    assert rule.filter == "id > 10 AND name <> 'x'"
    assert rule.primary_keys == ("id", "name")
    pipeline = parse_data_ingestion(
        BASE
        + "transform:\n  - {source-table: 'db.a', filter: 'x = 1'}\n  - {source-table: 'db.\\.*'}\n"
    )
    assert pipeline.transform_of(T("db.a")).index == 0  # type: ignore[union-attr]
    assert pipeline.transform_of(T("db.b")).index == 1  # type: ignore[union-attr]
    assert pipeline.transform_of(T("other.b")) is None


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "keys"),
    [
        (
            "source: {type: kafka, topic: a, value.format: avro}\nsink: {type: kafka}",
            "source: Invalid value for option 'value.format': 'avro'. Allowed values are "
            "'debezium-json', 'canal-json', 'json'.",
            ("value.format",),
        ),
        (
            "source: {type: kafka, topic: a, sink.tableId-to-topic.mapping: 'x:y'}\n"
            "sink: {type: kafka}",
            "source: 'sink.tableId-to-topic.mapping' is not supported: it is a sink option: move "
            "it under 'sink'.",
            ("sink.tableId-to-topic.mapping",),
        ),
        (
            "source: {type: kafka, topic: a, canal-json.table.include: x}\nsink: {type: kafka}",
            "source: 'canal-json.table.include' applies to 'value.format' 'canal-json', but the "
            "value format is 'debezium-json'.",
            ("canal-json.table.include", "value.format"),
        ),
        (
            "source: {type: kafka, topic: a, key.format: json}\nsink: {type: kafka}",
            "source: 'key.format' reads the key's fields as columns of a 'json' value format; "
            "debezium-json records carry their rows in the value.",
            ("key.format", "value.format"),
        ),
        (
            "source: {type: kafka, topic: a, value.format: json, key.format: json, "
            "key.fields-prefix: k_, value.fields-prefix: k_v_}\nsink: {type: kafka, topic: o}",
            "source: 'key.fields-prefix' = 'k_' and 'value.fields-prefix' = 'k_v_': neither may "
            "be a prefix of the other.",
            ("key.fields-prefix", "value.fields-prefix"),
        ),
        (
            "source: {type: kafka, topic: a, metadata.list: 'topic,rowtime'}\nsink: {type: kafka}",
            "source: 'metadata.list' names 'rowtime'; available: topic, partition, headers, "
            "leader-epoch, offset, timestamp, timestamp-type, __raw_key__, __raw_value__.",
            ("metadata.list",),
        ),
        (
            "source: {type: kafka, topic: a, scan.bounded.mode: latest-offset}\n"
            "sink: {type: kafka}",
            None,
            ("scan.bounded.mode",),
        ),
        (
            "source: {type: kafka, topic: a, value.format: json}\nsink: {type: kafka}",
            "sink: a 'json' source names each record's table after its topic, so without a sink "
            "'topic', 'sink.tableId-to-topic.mapping' or a 'route' the pipeline would write every "
            "record back into the topic it read it from. Name the output topic(s), or set "
            "'json.decode.parser-table-id.fields' on the source.",
            ("topic", "sink.tableId-to-topic.mapping"),
        ),
        (
            "source: {type: kafka, topic: a}\nsink: {type: kafka, topic: a}",
            "sink: 'topic' writes topic 'a', which source 'data_ingestion_source' reads (its "
            "'topic'): each run would read its own output again.",
            ("topic",),
        ),
        (
            "source: {type: kafka, topic-pattern: 'a.*'}\nsink: {type: kafka, topic: ab}",
            "sink: 'topic' writes topic 'ab', which source 'data_ingestion_source' reads (its "
            "'topic-pattern'): each run would read its own output again.",
            ("topic",),
        ),
        (
            "source: {type: kafka, topic: 'x;a'}\n"
            "sink: {type: kafka, sink.tableId-to-topic.mapping: 'db.t:a'}",
            "sink: 'sink.tableId-to-topic.mapping' writes topic 'a', which source "
            "'data_ingestion_source' reads (its 'topic'): each run would read its own output "
            "again.",
            ("sink.tableId-to-topic.mapping",),
        ),
        (
            "source: {type: kafka, topic: a}\nsink: {type: kafka, partition.strategy: hash-by-key}",
            "sink: 'partition.strategy' = 'hash-by-key' places records by the hash of their key: "
            "set 'key.format' (json or csv) so that records carry their primary key.",
            ("partition.strategy", "key.format"),
        ),
        (
            "source: {type: kafka, topic: a}\nsink: {type: kafka, partition.strategy: by-value}",
            "sink: Invalid value for option 'partition.strategy': 'by-value'. Allowed values are "
            "'all-to-zero', 'hash-by-key'.",
            ("partition.strategy",),
        ),
        (
            "source: {type: kafka, topic: a}\nsink: {type: kafka, value.format: json}",
            "sink: 'value.format' = 'json' writes rows without their change kind, but the "
            "source's debezium-json records carry updates and deletes: write 'debezium-json' or "
            "'canal-json'.",
            ("value.format",),
        ),
        (
            "source: {type: kafka, topic: a}\nsink: {type: kafka, value.format: canal-json, "
            "debezium-json.include-schema.enabled: true}",
            "sink: 'debezium-json.include-schema.enabled' applies to 'value.format' "
            "'debezium-json', but the value format is 'canal-json'.",
            ("debezium-json.include-schema.enabled", "value.format"),
        ),
        (
            "source: {type: kafka, topic: a}\nsink: {type: kafka, sink.custom-header: 'k:v'}",
            "sink: 'sink.custom-header' is not supported: custom headers are not written.",
            ("sink.custom-header",),
        ),
        (
            "source: {type: kafka, topic: a}\n"
            "sink: {type: kafka, sink.delivery-guarantee: exactly-once}",
            "sink: sink.transactional-id-prefix must be specified when using "
            "'sink.delivery-guarantee' = 'exactly-once'.",
            ("sink.transactional-id-prefix", "sink.delivery-guarantee"),
        ),
        (
            BASE + "route:\n  - {source-table: db.t}",
            "route[0]: 'sink-table' is required.",
            ("sink-table",),
        ),
        (
            BASE + "route:\n  - {source-table: db.t, sink-table: x, mode: all}",
            "route[0]: unknown key 'mode'. A route takes: source-table, sink-table, "
            "replace-symbol, description.",
            ("mode",),
        ),
        (
            BASE + "transform:\n  - {source-table: db.t, partition-keys: id}",
            "transform[0]: 'partition-keys' is not supported: partition keys configure lake "
            "sinks; a Kafka sink places records by 'partition.strategy'.",
            ("partition-keys",),
        ),
        (
            BASE + "transform:\n  - {source-table: db.t, converter-after-transform: SOFT_DELETE}",
            "transform[0]: 'converter-after-transform' is not supported: post-transform "
            "converters (SOFT_DELETE) are not supported.",
            ("converter-after-transform",),
        ),
        (
            BASE + "transform:\n  - {source-table: db.t, projection: 'id, COUNT(*) AS n'}",
            "transform[0]: 'projection' 'COUNT(*) AS n' uses COUNT; a transform works on one row "
            "at a time.",
            ("projection",),
        ),
        (
            BASE + 'transform:\n  - {source-table: db.t, filter: "a MATCH_RECOGNIZE b"}',
            None,
            ("filter",),
        ),
        (
            BASE + "pipeline: {schema.change.behavior: evolve}",
            "pipeline: 'schema.change.behavior' is not supported: a Kafka sink writes rows, no "
            "schema change events, so every behavior is the same here.",
            ("schema.change.behavior",),
        ),
        (
            BASE + "pipeline:\n  user-defined-function: [{name: f, classpath: a.B}]",
            "pipeline: 'user-defined-function' is not supported: user-defined functions run "
            "inside Flink (Java/Python classes); use Spark SQL built-in functions in "
            "'projection' and 'filter'.",
            ("user-defined-function",),
        ),
        (
            BASE + "pipeline: {dirty-data.collector: {type: kafka}}",
            "pipeline: Invalid value for option 'dirty-data.collector.type': 'kafka'. Allowed "
            "values are 'logger'.",
            ("dirty-data.collector.type",),
        ),
        (
            BASE + "pipeline: {parallelism: 0}",
            "pipeline: 'parallelism' must be at least 1.",
            ("parallelism",),
        ),
        (
            BASE + "model: x",
            "Unknown top-level key(s) 'model': a data-ingestion pipeline has source, sink, "
            "route, transform, pipeline.",
            ("model",),
        ),
        (
            "source: {type: kafka, topic: '${kafka.topic}'}\nsink: {type: kafka}",
            "'source.topic' uses '${kafka.topic}', which has no value: pass it in 'variables'.",
            ("kafka.topic",),
        ),
        (
            "source: {type: kafka, topic: a, properties: {acks: all}}\nsink: {type: kafka}",
            "source: 'properties' must be a value (text, number or true/false), got a mapping.",
            ("properties",),
        ),
    ],
)
def test_refusals_name_the_key(text: str, message: str | None, keys: tuple[str, ...]) -> None:
    error = refused(text)
    if message is not None:
        assert reason(error) == message
    assert error.keys == keys


def test_unknown_keys_get_a_hint_and_the_list_of_keys() -> None:
    error = refused("source: {type: kafka, topic: a, value.fromat: json}\nsink: {type: kafka}")
    assert reason(error).startswith(
        "source: unknown key 'value.fromat' (did you mean 'value.format'?). A source takes: "
        "type, name, properties.bootstrap.servers, properties.*, value.format, key.format, "
    )


def test_source_table_options_are_validated_as_kafka_table_options() -> None:
    error = refused(
        "source: {type: kafka, topic: a, scan.startup.mode: timestamp}\nsink: {type: kafka}"
    )
    assert reason(error) == (
        "source: 'scan.startup.timestamp-millis' is required in 'timestamp' startup mode but "
        "missing."
    )
    error = refused(
        "source: {type: kafka, topic: a, properties.no.such.setting: 1}\nsink: {type: kafka}"
    )
    assert reason(error) == (
        "source: Option 'properties.no.such.setting' is not a Kafka client setting librdkafka "
        "knows. See docs/options.md, 'Kafka client properties'."
    )


def test_canal_mysql_options_without_mysql_type_warn() -> None:
    text = (
        "source: {type: kafka, topic: a, value.format: canal-json, "
        "canal-json.mysql.treat-tinyint1-as-boolean.enabled: false}\nsink: {type: kafka}"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_data_ingestion(text)
    [warning] = [w.message for w in caught if isinstance(w.message, KafkaOptionsWarning)]
    assert str(warning) == (
        "source: 'canal-json.mysql.treat-tinyint1-as-boolean.enabled' take effect only with "
        "'canal-json.infer-schema.strategy' = 'MYSQL_TYPE'."
    )


def test_initial_schemas_must_be_create_table_statements() -> None:
    text = (
        "source: {type: kafka, topic: a, scan.value.initial-schemas.ddls: "
        "'INSERT INTO x SELECT 1'}\nsink: {type: kafka}"
    )
    assert reason(refused(text)) == (
        "source: 'scan.value.initial-schemas.ddls' holds InsertInto; write only 'CREATE TABLE "
        "db.t (col TYPE, ...)' statements, without WITH."
    )
    ok = parse_data_ingestion(
        "source: {type: kafka, topic: a, scan.value.initial-schemas.ddls: "
        "'CREATE TABLE db.t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED)'}\nsink: {type: kafka}"
    )
    assert ok.source.initial_schemas[T("db.t")].primary_key == ("id",)


def test_the_pipeline_file_and_the_variables() -> None:
    pipeline = parse_data_ingestion(
        "source: {type: kafka, topic: '${t}', value.format: '${f}'}\nsink: {type: kafka}\n",
        variables={"t": "cdc", "f": "canal-json"},
    )
    assert (pipeline.source.spec.topics, pipeline.source.value_format) == (("cdc",), "canal-json")
    with pytest.raises(KafkaOptionsError, match="Cannot read the pipeline YAML"):
        parse_data_ingestion(Path("/nonexistent/pipeline.yaml"))


# -- types and encodings ------------------------------------------------------------------------


def test_canal_sql_and_mysql_types() -> None:
    assert [str(jdbc_type(c)) for c in (-7, 4, -5, 3, 7, 8, 91, 93, 12, 2004)] == [
        "BOOLEAN", "INT", "BIGINT", "DECIMAL(38, 18)", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP",
        "STRING", "BYTES",
    ]  # fmt: skip
    assert str(mysql_type("tinyint(1)", tinyint1_as_boolean=False)) == "TINYINT"
    assert str(mysql_type("bigint(20) unsigned")) == "DECIMAL(20, 0)"
    assert str(mysql_type("datetime(6)")) == "TIMESTAMP(6)"
    assert str(mysql_type("timestamp")) == "TIMESTAMP(0)"
    assert str(mysql_type("varchar(255)")) == "STRING"
    assert str(mysql_type("enum('a','b')")) == "STRING"


def test_connect_schema_of_before_and_after() -> None:
    schema = json.loads(
        connect_schema(
            {"id": FlinkType("BIGINT", nullable=False), "price": FlinkType("DECIMAL", (10, 2))}
        )
    )
    before, after = schema["fields"]
    assert (before["field"], after["field"], schema["optional"]) == ("before", "after", False)
    assert before["fields"] == [
        {"type": "int64", "optional": False, "field": "id"},
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "optional": True,
            "field": "price",
        },
    ]


# -- the Dagster face ---------------------------------------------------------------------------


def test_definitions_name_the_asset_and_depend_on_the_source_topic() -> None:
    defs = build_data_ingestion_definitions(BASE + "pipeline: {name: orders cdc}\n")
    assets = {k.to_user_string(): a for a in defs.assets or () for k in a.keys}  # type: ignore[union-attr]
    assert set(assets) == {"orders_cdc", "orders_cdc_source"}
    asset = assets["orders_cdc"]
    assert asset.group_names_by_key[asset.key].startswith("orders_cdc")
    [deps] = asset.asset_deps.values()
    assert {d.to_user_string() for d in deps} == {"orders_cdc_source"}
    named = build_data_ingestion_definitions(BASE, name="cdc_to_topics")
    assert {k.to_user_string() for a in named.assets or () for k in a.keys} == {  # type: ignore[union-attr]
        "cdc_to_topics",
        "cdc_to_topics_source",
    }


def test_checks_that_need_a_sink_table_are_refused() -> None:
    from dagster_kafka_flinklike import TransactionTimeoutCheck

    with pytest.raises(KafkaOptionsError) as caught:
        build_data_ingestion_definitions(BASE, checks=[TransactionTimeoutCheck()])
    assert str(caught.value) == (
        "Check(s) kafka_transaction_timeout: a data-ingestion pipeline writes many topics and "
        "has no sink table; it takes DirtyDataCheck and ConsumerLagCheck."
    )


def test_every_declared_key_is_documented_and_refused_keys_are_not_declared() -> None:
    from dagster_kafka_flinklike.options import render_options_reference

    page = render_options_reference()
    for section, keys in INGESTION_KEYS.items():
        for key in keys:
            assert f"`{key}" in page, (section, key)
        for refused_key in REFUSED_INGESTION_KEYS.get(section, {}):
            assert refused_key not in keys
            assert f"`{refused_key}`" in page


def test_the_readme_example_parses_and_routes_as_described() -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Data-ingestion YAML") :]
    text = re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]
    pipeline = parse_data_ingestion(
        text, variables={"kafka.topic": "t", "kafka.bootstraps.server": "b:9092"}
    )
    [orders] = pipeline.sink_tables(T("app_db.orders_07"))
    assert (str(orders), pipeline.sink.topic_of(orders)) == ("app_db.orders", "orders")
    assert pipeline.sink.topic_of(T("app_db.users")) == "users"
    assert pipeline.dirty_collector == "logger"


def test_a_discovery_sensor_watches_the_source_at_its_interval() -> None:
    text = (
        "source: {type: kafka, topic: cdc, scan.topic-partition-discovery.interval: 2 min}\n"
        "sink: {type: kafka}\n"
    )
    defs = build_data_ingestion_definitions(text, discovery_sensor=True)
    [sensor] = defs.sensors or []
    assert sensor.minimum_interval_seconds == 120


# -- YAML that breaks a loader: our error, the file, the line, the key, never a secret ----------

SECRET = "Hunter2-s3cr3t"


def yaml_error(text: str, tmp_path: Path | None = None) -> KafkaYamlError:
    """The error of ``text`` as a pipeline, given as text (or as a file in ``tmp_path``)."""
    source: str | Path = text
    if tmp_path is not None:
        source = tmp_path / "pipeline.yaml"
        source.write_text(text, encoding="utf-8")
    with pytest.raises(KafkaYamlError) as caught:
        parse_data_ingestion(source)
    assert SECRET not in str(caught.value)
    return caught.value


def test_a_self_referencing_anchor_names_the_file_line_and_key(tmp_path: Path) -> None:
    assert str(yaml_error("a: &x [*x]")) == (
        "line 1, column 8: 'a[0]': an alias ('*') refers to the value that holds it (a "
        "self-referencing anchor): such a value has no end; write it out instead."
    )
    text = "sink: {type: kafka}\nsource:\n  type: kafka\n  topic: &t\n    - a\n    - *t\n"
    error = yaml_error(text, tmp_path)
    assert str(error).startswith(f"{tmp_path / 'pipeline.yaml'}:6:7: 'source.topic[1]': an alias")
    assert (error.file, error.line, error.column, error.keys) == (
        str(tmp_path / "pipeline.yaml"),
        6,
        7,
        ("source.topic[1]",),
    )


def test_deep_nesting_and_alias_bombs_are_refused_at_once() -> None:
    deep = yaml_error("source: {type: kafka, topic: " + "[" * 5000 + "]" * 5000 + "}")
    assert str(deep) == (
        "line 1, column 61: 'source.topic[0][0][0][0]…': values nest more than 32 levels "
        "deep; a pipeline's sections are mappings of options, lists of routes and transforms."
    )
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    bomb = yaml_error("\n".join(lines))
    assert bomb.line == 5
    assert bomb.reason.startswith("'a4[9]': its aliases expand it to more than 100000 values")
    # a mapping given in Python that contains itself
    looped: dict[str, object] = {"sink": {"type": "kafka"}}
    looped["source"] = looped
    with pytest.raises(KafkaOptionsError, match="nests more than 32 levels deep"):
        parse_data_ingestion(looped)


@pytest.mark.parametrize(
    ("line", "column", "expected"),
    [
        (  # a quoted value followed by more text
            f'properties.ssl.key.password: "{SECRET}" and more',
            49,
            "not valid YAML in 'source': expected <block end>, but found '<scalar>' (while "
            "parsing a block mapping at line 2).",
        ),
        (  # a quote never closed: yaml's snippet would show the whole line
            f'properties.sasl.jaas.config: \'PlainLoginModule required password="{SECRET}";',
            1,
            "not valid YAML in 'source': found unexpected end of stream (while scanning a quoted "
            "scalar at line 4).",
        ),
        (  # '*' starts an alias: yaml's message would name it
            f"properties.sasl.password: *{SECRET}",
            29,
            "not valid YAML in 'source.properties.sasl.password': found undefined alias.",
        ),
        (  # '!' starts a tag
            f"properties.sasl.password: !{SECRET} x",
            29,
            "not valid YAML in 'source.properties.sasl.password': could not determine a "
            "constructor for the tag.",
        ),
        (  # a tab where yaml expects a token
            f"properties.ssl.key.password:\t{SECRET}\t:",
            31,
            "not valid YAML in 'source': found character '\\t' that cannot start any token.",
        ),
    ],
)
def test_a_yaml_error_gives_the_line_and_column_and_never_the_text(
    tmp_path: Path, line: str, column: int, expected: str
) -> None:
    text = f"source:\n  type: kafka\n  topic: cdc\n  {line}\nsink: {{type: kafka}}\n"
    if "unexpected end" in expected:  # the quote runs to the end
        text = text.replace("sink: {type: kafka}\n", "")
    error = yaml_error(text, tmp_path)
    row = 5 if "unexpected end" in expected else 4
    assert str(error) == f"{tmp_path / 'pipeline.yaml'}:{row}:{column}: {expected}"


def test_values_python_cannot_build_and_bytes_that_are_not_text_are_yaml_errors(
    tmp_path: Path,
) -> None:
    assert str(yaml_error("source: {type: kafka, topic: 2026-13-45}")) == (
        "line 1, column 30: not valid YAML in 'source.topic': the value cannot be read as a "
        "timestamp."
    )
    assert yaml_error("source: {type: kafka, topic: !!int x}").reason.endswith(
        "the value cannot be read as an integer."
    )
    assert yaml_error("source: {type: kafka, topic: [{a: b}: c]}").reason.endswith(
        "found unhashable key (while constructing a mapping at line 1)."
    )
    assert str(yaml_error("source: {type: kafka,\n topic: \x00}")) == (
        "line 2, column 9: not valid YAML: special characters are not allowed (a control "
        "character or an unpaired surrogate)."
    )
    path = tmp_path / "latin1.yaml"
    path.write_bytes(
        f"source:\n  type: kafka\n  properties.sasl.password: '\xe9{SECRET}'\n".encode("latin-1")
    )
    with pytest.raises(KafkaYamlError) as caught:
        parse_data_ingestion(path)
    assert str(caught.value) == f"{path}:3:30: not valid YAML: the file is not UTF-8 text."


def test_a_secret_key_holding_a_list_or_mapping_is_refused_without_its_value() -> None:
    error = refused(
        f"source: {{type: kafka, topic: a, properties.sasl.jaas.config: [{SECRET}]}}\n"
        "sink: {type: kafka}"
    )
    assert str(error) == (
        "line 1, column 33: source: 'properties.sasl.jaas.config' must be a value (text, number "
        "or true/false), got a list."
    )
    assert str(refused(f"source: [{SECRET}]\nsink: {{type: kafka}}")) == (
        "line 1, column 1: source: expected a mapping of options, got a list."
    )


def test_every_refusal_of_a_file_names_the_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(
        "source:\n  type: kafka\n  topic: cdc\n  scan.startup.mode: first\nsink:\n  type: kafka\n"
        "route:\n  - source-table: 'db.('\n    sink-table: x\n",
        encoding="utf-8",
    )
    with pytest.raises(KafkaYamlError) as caught:
        parse_data_ingestion(path)
    assert str(caught.value).startswith(
        f"{path}:4:3: source: Invalid value for option 'scan.startup.mode': 'first'."
    )
    assert caught.value.keys == ("scan.startup.mode",)
    path.write_text(path.read_text().replace("first", "earliest-offset"), encoding="utf-8")
    with pytest.raises(KafkaYamlError, match=f"^{re.escape(str(path))}:8:5: 'source-table' holds"):
        parse_data_ingestion(path)
