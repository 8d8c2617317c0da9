"""Fuzz properties of the loaders: data-ingestion YAML, the component's YAML and Flink SQL.

For arbitrary text and arbitrary mutations of valid documents, a loader returns or raises the
connector's own errors only (never RecursionError, KeyError, TypeError, a yaml error, Dagster's
CheckError, ...), and no message shows a secret planted under a secret key. Mutations leave the
secret values' own characters alone; a mutation that moves a secret out from under its secret
key (into a key, or into another option's value) is not counted.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dagster_kafka_flinklike import KafkaConnectorError, KafkaPipelineComponent
from dagster_kafka_flinklike.ingestion import parse_data_ingestion
from dagster_kafka_flinklike.ingestion._yaml import load_yaml
from dagster_kafka_flinklike.options import is_secret
from dagster_kafka_flinklike.options.ingestion_keys import INGESTION_KEYS
from dagster_kafka_flinklike.sql import parse_flink_sql
from dagster_kafka_flinklike.sql.lexer import STRING, SYMBOL, tokenize
from dagster_kafka_flinklike.sql.pipeline import plan_flink_sql

FUZZ = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
#: Every planted secret holds this; no message may.
MARK = "s3cr3t"

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password='

PIPELINE = rf"""source:
  type: kafka
  name: orders
  topic: cdc
  properties.bootstrap.servers: "b:9092"
  properties.security.protocol: SASL_SSL
  properties.sasl.mechanism: PLAIN
  properties.sasl.jaas.config: '{JAAS}"{MARK}-jaas";'
  properties.ssl.key.password: "{MARK}-key"
  value.format: debezium-json
  scan.startup.mode: earliest-offset
sink:
  type: kafka
  topic: out
  properties.sasl.password: {MARK}-sink
  properties.sasl.username: u
  properties.sasl.mechanism: PLAIN
  properties.security.protocol: SASL_PLAINTEXT
route:
  - source-table: app.orders_\.*
    sink-table: app.orders
transform:
  - source-table: app.orders
    projection: id, amount
    filter: amount > 0
pipeline:
  name: p
  parallelism: 2
"""

SCRIPT = f"""SET 'pipeline.name' = 'orders';
CREATE TABLE orders (
  order_id STRING,
  real_pay DOUBLE,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'format' = 'json',
  'properties.bootstrap.servers' = 'b:9092',
  'properties.security.protocol' = 'SASL_SSL',
  'properties.sasl.mechanism' = 'PLAIN',
  'properties.sasl.jaas.config' = '{JAAS}"{MARK}-jaas";',
  'properties.ssl.key.password' = '{MARK}-key',
  'scan.startup.mode' = 'earliest-offset'
);
CREATE TABLE big (order_id STRING, real_pay DOUBLE) WITH (
  'connector' = 'kafka', 'topic' = 'big', 'format' = 'json',
  'properties.sasl.password' = '{MARK}-sink', 'properties.sasl.username' = 'u',
  'properties.sasl.mechanism' = 'PLAIN', 'properties.security.protocol' = 'SASL_PLAINTEXT'
);
CREATE VIEW paid AS SELECT order_id, real_pay FROM orders WHERE real_pay > 0;
INSERT INTO big SELECT order_id, real_pay FROM paid WHERE real_pay >= 100;
"""

#: Characters that mean something to YAML or SQL, and some that mean trouble.
SPECIAL = [*":'\"-[]{}&*!#%|>,?@`\n\t =;()<>.\\$+/", "a", "Z", "0", "9", "é", "\x00", "\x85"]


def test_the_documents_load_as_written() -> None:
    assert parse_data_ingestion(PIPELINE).sink.topic == "out"
    assert [i.name for i in plan_flink_sql(SCRIPT).inserts] == ["big"]


# -- the property --------------------------------------------------------------------------------


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors a traceback shows with it (as Dagster records it too)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        suppressed = current.__suppress_context__
        current = current.__cause__ or (None if suppressed else current.__context__)


def only_ours(load: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``load`` returns or raises a KafkaConnectorError; no message or warning shows a secret.

    Any other exception propagates, so hypothesis reports it with the input that caused it.
    """
    shown: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            load(*args, **kwargs)
        except KafkaConnectorError as exc:
            for error in _chain(exc):
                shown += [str(error), repr(getattr(error, "keys", ""))]
    shown += [str(w.message) for w in caught]
    for text in shown:
        assert MARK not in text, text


# -- mutations of text: edits outside the secrets ------------------------------------------------


def _segments(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (part, is a secret) pieces."""
    pieces: list[tuple[str, bool]] = []
    position = 0
    for found in re.finditer(rf"{MARK}-\w+", text):
        pieces += [(text[position : found.start()], False), (found.group(), True)]
        position = found.end()
    return [*pieces, (text[position:], False)]


@st.composite
def edited(draw: st.DrawFn, text: str) -> str:
    """``text`` after 1 to 5 insertions, deletions or replacements outside the secrets."""
    pieces = _segments(text)
    free = [i for i, (_, secret) in enumerate(pieces) if not secret]
    for _ in range(draw(st.integers(1, 5))):
        index = draw(st.sampled_from(free))
        part = pieces[index][0]
        start = draw(st.integers(0, len(part)))
        end = draw(st.integers(start, min(len(part), start + draw(st.sampled_from([0, 1, 3, 40])))))
        inserted = draw(
            st.one_of(
                st.just(""),
                st.lists(st.sampled_from(SPECIAL), min_size=1, max_size=4).map("".join),
                st.text(max_size=6),
            )
        )
        pieces[index] = (part[:start] + inserted + part[end:], False)
    return "".join(p for p, _ in pieces)


def _secrets_under_secret_keys(data: Any) -> bool:
    """Whether every planted secret of loaded YAML is still a value under a secret key."""
    seen: set[int] = set()

    def walk(node: Any, secret: bool) -> bool:
        if isinstance(node, dict | list):
            if id(node) in seen:
                return True
            seen.add(id(node))
        if isinstance(node, dict):
            return all(
                MARK not in str(k) and walk(v, secret or is_secret(str(k))) for k, v in node.items()
            )
        if isinstance(node, list):
            return all(walk(v, secret) for v in node)
        return secret or MARK not in str(node)

    return walk(data, False)


def _yaml_counts(text: str) -> bool:
    """Whether a mutated pipeline keeps its secrets where they were (or is no YAML at all)."""
    try:
        document = load_yaml(text)
    except KafkaConnectorError:
        return True
    return _secrets_under_secret_keys(document.data)


def _sql_counts(text: str) -> bool:
    """Whether each secret of a mutated script still follows its secret option's key in the
    same statement (a mutation before the key may turn the key into words)."""
    try:
        tokens = tokenize(text)
    except KafkaConnectorError:
        return True
    secret_key = False
    for token in tokens:
        if token.kind == SYMBOL and token.value == ";":
            secret_key = False
        if token.kind == STRING and is_secret(token.value) and MARK not in token.value:
            secret_key = True
        if MARK in token.text and not secret_key:
            return False
    return True


# -- data-ingestion YAML -------------------------------------------------------------------------


@FUZZ
@given(st.text(max_size=200))
def test_pipeline_yaml_of_any_text(text: str) -> None:
    only_ours(parse_data_ingestion, text)


@FUZZ
@given(
    st.lists(st.sampled_from([*SPECIAL, "a: ", "- ", "&x ", "*x", "!!int ", "<<: "]), max_size=60)
)
def test_pipeline_yaml_of_yaml_punctuation(parts: list[str]) -> None:
    only_ours(parse_data_ingestion, "".join(parts))


@FUZZ
@given(edited(PIPELINE))
def test_pipeline_yaml_edited(text: str) -> None:
    assume(_yaml_counts(text))
    only_ours(parse_data_ingestion, text)


KEYS = sorted({k for section in INGESTION_KEYS.values() for k in section} | {"type", "source"})
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(["kafka", "json", "canal-json", "${v}", "earliest-offset", "a.b", "0"]),
    st.datetimes(),
    st.binary(max_size=4),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=3)
    ),
    max_leaves=6,
)


def _places(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _places(value, (*at, i))


@st.composite
def restructured(draw: st.DrawFn, document: Any) -> Any:
    """``document`` (parsed) with 1 to 4 values replaced, removed, wrapped or keys added."""
    data = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.sampled_from(list(_places(data))))
        parent = data
        for part in at[:-1]:
            parent = parent[part]
        node = parent[at[-1]] if at else data
        op = draw(st.sampled_from(["replace", "remove", "wrap", "add"]))
        if op == "add" and isinstance(node, dict):
            node[draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)))] = draw(VALUES)
        elif op == "add" and isinstance(node, list):
            node.append(draw(VALUES))
        elif at and op == "remove":
            del parent[at[-1]]
        elif at and op == "wrap":
            parent[at[-1]] = draw(st.sampled_from([[node], {"k": node}, {"type": node}]))
        elif at:
            parent[at[-1]] = draw(VALUES)
    return data


@FUZZ
@given(restructured(yaml.safe_load(PIPELINE)), st.booleans())
def test_pipeline_mappings_restructured(data: Any, as_text: bool) -> None:
    assume(_secrets_under_secret_keys(data))
    if as_text:
        try:
            data = yaml.safe_dump(data, allow_unicode=True)
        except yaml.YAMLError:  # (values only Python has: mapping input below)
            return
    only_ours(parse_data_ingestion, data)


# -- Flink SQL -----------------------------------------------------------------------------------


@FUZZ
@given(st.text(max_size=200), st.booleans())
def test_sql_of_any_text(text: str, strict: bool) -> None:
    only_ours(parse_flink_sql, text, strict=strict)
    only_ours(plan_flink_sql, text)


@FUZZ
@given(edited(SCRIPT))
def test_sql_edited(text: str) -> None:
    assume(_sql_counts(text))
    only_ours(parse_flink_sql, text)
    only_ours(plan_flink_sql, text)


# -- the component's YAML ------------------------------------------------------------------------

ATTRIBUTES = yaml.safe_load(f"""
tables:
  orders:
    options:
      connector: kafka
      topic: orders
      format: json
      properties.sasl.mechanism: PLAIN
      properties.security.protocol: SASL_SSL
      properties.sasl.jaas.config: '{JAAS}"{MARK}-jaas";'
    columns:
      - {{name: order_id, type: STRING}}
      - {{name: real_pay, type: DOUBLE}}
      - {{name: ts, type: TIMESTAMP_LTZ(3), metadata_key: timestamp}}
  big:
    ddl: |
      CREATE TABLE big (order_id STRING, real_pay DOUBLE)
      WITH ('connector' = 'kafka', 'topic' = 'big', 'format' = 'json',
            'properties.ssl.key.password' = '{MARK}-key')
assets:
  - query: SELECT order_id, real_pay FROM orders WHERE real_pay >= 100
    sources: [orders]
    sink: big
    checks: {{dirty_data: {{max_ratio: 0.05}}}}
  - sql: INSERT INTO big SELECT order_id, real_pay FROM orders;
    partitions: {{type: hourly, start: "2026-11-20-00:00", end_offset: 1}}
    allowed_lateness: 5 min
kafka:
  properties: {{sasl.password: {MARK}-kafka}}
translation:
  group_name: g
""")


def _component(attributes: Any) -> None:
    from dagster.components import build_defs_for_component
    from pydantic import ValidationError

    text = yaml.safe_dump(attributes, allow_unicode=True)
    try:
        component = KafkaPipelineComponent.resolve_from_yaml(text)
    except ValidationError as exc:  # the schema's refusal (Dagster's), its values hidden
        assert MARK not in str(exc), str(exc)
        return
    build_defs_for_component(component)


@settings(FUZZ, max_examples=50)
@given(restructured(ATTRIBUTES))
def test_component_attributes_restructured(attributes: Any) -> None:
    assume(_secrets_under_secret_keys(attributes))
    assume("{{" not in str(attributes) and "{%" not in str(attributes))  # (Jinja templates)
    try:
        yaml.safe_dump(attributes, allow_unicode=True)
    except yaml.YAMLError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        only_ours(_component, attributes)


@pytest.mark.parametrize("seed", [PIPELINE])
def test_secrets_of_the_seeds_are_under_secret_keys(seed: str) -> None:
    assert _secrets_under_secret_keys(yaml.safe_load(seed))
    assert _sql_counts(SCRIPT)
