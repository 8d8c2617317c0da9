"""Property-based tests: on arbitrary input the parsers raise nothing but our own errors."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_kafka_flinklike.options import (
    FORMAT_OPTIONS,
    OPTIONS,
    Column,
    KafkaOptionsError,
    KafkaTableSpec,
    client_config,
    parse_duration_ms,
    parse_flink_type,
    parse_specific_offsets,
)
from dagster_kafka_flinklike.options._librdkafka import LIBRDKAFKA_PROPERTIES
from dagster_kafka_flinklike.sql import FlinkSqlError, parse_flink_sql

from .test_options_support import BASE, COLUMNS

# Shared option maps carry source options into sink tables too: those options are accepted with
# a KafkaOptionsWarning (as Flink ignores them), which these tests do not look at.
pytestmark = pytest.mark.filterwarnings(
    "ignore::dagster_kafka_flinklike.errors.KafkaOptionsWarning"
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TYPE_WORDS = [
    "INT",
    "STRING",
    "ROW",
    "ARRAY",
    "MAP",
    "MULTISET",
    "DECIMAL",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "WITH",
    "LOCAL",
    "TIME",
    "ZONE",
    "NOT",
    "NULL",
    "VARCHAR",
    "`a`",
    "b",
    "<",
    ">",
    "(",
    ")",
    ",",
    "3",
    "0",
    "39",
    "'c'",
    "DOUBLE",
    "PRECISION",
    "`",
]
SQL_WORDS = [
    "CREATE",
    "TEMPORARY",
    "TABLE",
    "VIEW",
    "IF",
    "NOT",
    "EXISTS",
    "t",
    "`q`",
    "(",
    ")",
    ",",
    ";",
    "INT",
    "STRING",
    "ROW<a INT>",
    "METADATA",
    "FROM",
    "'timestamp'",
    "VIRTUAL",
    "AS",
    "WATERMARK",
    "FOR",
    "PRIMARY",
    "KEY",
    "ENFORCED",
    "WITH",
    "'connector'",
    "'kafka'",
    "'upsert-kafka'",
    "'topic'",
    "'x'",
    "'format'",
    "'json'",
    "=",
    "INSERT",
    "INTO",
    "SELECT",
    "*",
    "--c\n",
    "/* c */",
    "U&'\\0041'",
    "SET",
    "COMMENT",
    "PARTITIONED",
    "BY",
    "CONSTRAINT",
    "OVERWRITE",
    "JOIN",
    ".",
    "'",
    "\n",
]
OPTION_KEYS = [o.key for o in OPTIONS if not o.prefix] + [
    "sink.semantic",
    "json.ignore-parse-errors",
    "csv.field-delimiter",
    "key.json.x",
    "value.csv.quote-character",
    "raw.charset",
    "properties.sasl.jaas.config",
    "properties.ssl.truststore.location",
    "properties.acks",
    "properties.bogus",
]
OPTION_VALUES = [
    "kafka",
    "upsert-kafka",
    "json",
    "csv",
    "raw",
    "true",
    "false",
    "1",
    "-1",
    "0",
    "x;y",
    "ALL",
    "EXCEPT_KEY",
    "earliest-offset",
    "timestamp",
    "specific-offsets",
    "partition:0,offset:1",
    "5 min",
    "exactly-once",
    "id",
    "k_",
    "\\u0001",
    "",
    "a:b|c:d",
    'x.PlainLoginModule required username="u" password="p";',
]


def _ours(fn: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(KafkaOptionsError, FlinkSqlError):
        fn(*args, **kwargs)


@FAST
@given(
    st.one_of(
        st.text(max_size=80), st.lists(st.sampled_from(TYPE_WORDS), max_size=25).map(" ".join)
    )
)
def test_type_parser(text: str) -> None:
    _ours(parse_flink_type, text)


@FAST
@given(st.one_of(st.text(max_size=40), st.from_regex(r"\s*[+-]?\d{0,25}\s*[a-zµ]{0,12}\s*")))
def test_duration_parser(text: str) -> None:
    _ours(parse_duration_ms, "k", text)


@FAST
@given(
    st.one_of(
        st.text(max_size=60),
        st.lists(st.tuples(st.integers(-3, 10**12), st.integers(-3, 10**25)), max_size=4).map(
            lambda ps: ";".join(f"partition:{p},offset:{o}" for p, o in ps)
        ),
    )
)
def test_specific_offsets_parser(text: str) -> None:
    _ours(parse_specific_offsets, "k", text)


@FAST
@given(
    st.dictionaries(
        st.sampled_from(OPTION_KEYS),
        st.one_of(st.sampled_from(OPTION_VALUES), st.text(max_size=20)),
        max_size=8,
    ),
    st.sampled_from([None, "source", "sink"]),
)
def test_options_maps(changes: dict[str, str], role: str | None) -> None:
    _ours(KafkaTableSpec.from_options, {**BASE, **changes}, columns=COLUMNS, role=role)


@FAST
@given(
    st.dictionaries(
        st.text(max_size=15),
        st.one_of(st.text(max_size=15), st.integers(), st.booleans(), st.none(), st.floats()),
        max_size=6,
    )
)
def test_arbitrary_options(options: dict[str, Any]) -> None:
    _ours(KafkaTableSpec.from_options, options)


@FAST
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": st.text(max_size=6),
                "type": st.one_of(
                    st.sampled_from(
                        ["INT", "STRING", "TIMESTAMP_LTZ(3)", "MAP<STRING, BYTES>", "BIGINT"]
                    ),
                    st.text(max_size=10),
                ),
            },
            optional={
                "metadata_key": st.one_of(
                    st.none(), st.sampled_from(["timestamp", "offset", "headers", "topic", "nope"])
                ),
                "virtual": st.booleans(),
            },
        ),
        max_size=5,
    ),
    st.lists(st.text(max_size=5), max_size=2),
)
def test_columns(columns: list[dict[str, Any]], primary_key: list[str]) -> None:
    _ours(KafkaTableSpec.from_options, BASE, columns=columns, primary_key=primary_key, role="sink")
    for column in columns:
        _ours(Column.coerce, column)


@FAST
@given(
    st.one_of(
        st.text(max_size=120), st.lists(st.sampled_from(SQL_WORDS), max_size=40).map(" ".join)
    ),
    st.booleans(),
)
def test_sql_parser(text: str, strict: bool) -> None:
    _ours(parse_flink_sql, text, strict=strict)


PROPERTY_KEYS = [
    *list(LIBRDKAFKA_PROPERTIES)[:60],
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.endpoint.identification.algorithm",
    "buffer.memory",
    "receive.buffer.bytes",
    "interceptor.classes",
    "key.deserializer",
    "unknown.thing",
]


@FAST
@given(
    st.dictionaries(st.sampled_from(PROPERTY_KEYS), st.text(max_size=30), max_size=6),
    st.sampled_from(["consumer", "producer", "admin"]),
)
def test_client_properties(properties: dict[str, str], role: str) -> None:
    _ours(client_config, properties, role=role)


@FAST
@given(
    st.sampled_from(sorted(FORMAT_OPTIONS)),
    st.dictionaries(st.text(max_size=12), st.text(max_size=6), max_size=3),
)
def test_format_options(name: str, options: dict[str, str]) -> None:
    prefixed = {f"{name}.{k}": v for k, v in options.items()}
    _ours(
        KafkaTableSpec.from_options,
        {**BASE, "format": name, **prefixed},
        columns=[Column("x", "STRING")],
    )
