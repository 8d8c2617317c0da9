"""The target of the options layer: table options, columns, format options, client properties,
Flink types, durations, specific offsets, header filters, fixed types and single-table DDL.

Only the documented error escapes (:class:`KafkaOptionsError`, of which ``FlinkSqlError`` and
``FlinkTypeError`` are kinds), and no message (error, warning, log record) shows a value planted
under a secret key. The option maps and words are those of
``tests/unit/test_options_properties_based.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from dagster_kafka_flinklike.options import (
    FORMAT_OPTIONS,
    Column,
    KafkaOptionsError,
    KafkaTableSpec,
    client_config,
    is_secret,
    parse_duration_ms,
    parse_fixed_types,
    parse_flink_type,
    parse_header_filter,
    parse_specific_offsets,
)
from tests.unit.test_loaders_fuzz import MARK
from tests.unit.test_options_properties_based import (
    OPTION_KEYS,
    OPTION_VALUES,
    PROPERTY_KEYS,
    SQL_WORDS,
    TYPE_WORDS,
)
from tests.unit.test_options_support import BASE, COLUMNS

from .harness import Counts, Finding, Target
from .loaders import SECRET, check_one, sql_secrets_stay
from .mutate import TEXT_TOKENS, edge_integer, mutate_text, random_text, soup

SECRET_KEYS = (
    "properties.sasl.jaas.config",
    "properties.ssl.key.password",
    "properties.sasl.password",
    "properties.ssl.keystore.password",
    "properties.sasl.oauthbearer.client.secret",
    "avro-confluent.basic-auth.user-info",
    "avro-confluent.bearer-auth.token",
)
_SECRET_PROPERTIES = tuple(k.removeprefix("properties.") for k in SECRET_KEYS[:5])
_TYPES = (
    "INT",
    "STRING",
    "TIMESTAMP_LTZ(3)",
    "MAP<STRING, BYTES>",
    "BIGINT",
    "ROW<a INT, b ARRAY<DOUBLE>>",
    "DECIMAL(38, 18)",
    "TIME(3)",
    "VARCHAR(10)",
    "BINARY(3)",
    "MULTISET<STRING>",
)
_TEXT_SEEDS = {
    "type": (
        "ROW<a INT, `b c` ARRAY<MAP<STRING, DECIMAL(10, 2)>>> NOT NULL",
        "TIMESTAMP(3) WITH LOCAL TIME ZONE",
    ),
    "duration": ("10 s", "5 min", "100ms", "-1", "1 h", "2 days"),
    "offsets": ("partition:0,offset:42;partition:1,offset:300",),
    "header": ("depart = 'toy' AND NOT env = 'test'", "(a = 'x' OR b IS NULL) AND c <> 'y'"),
    "fixed": ("id BIGINT, name VARCHAR(10), at TIMESTAMP(3)",),
}
_DDL = (
    f"""CREATE TABLE t (
  id BIGINT, name STRING, amount DECIMAL(10, 2), tags ARRAY<STRING>,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL, part INT METADATA FROM 'partition',
  c AS UPPER(name), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) COMMENT 'x' WITH (
  'connector' = 'upsert-kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'b:9092',
  'key.format' = 'json', 'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://r:8081',
  'value.avro-confluent.basic-auth.user-info' = 'u:{MARK}-info',
  'properties.sasl.jaas.config' = 'x required password="{MARK}-jaas";'
)""",
    f"""CREATE TEMPORARY TABLE IF NOT EXISTS c.d.s (a INT, b STRING) WITH ('connector' = 'kafka',
  'topic-pattern' = 'a.*', 'format' = 'csv', 'csv.field-delimiter' = ';',
  'scan.startup.mode' = 'specific-offsets',
  'scan.startup.specific-offsets' = 'partition:0,offset:1',
  'properties.ssl.key.password' = '{MARK}-key', 'sink.delivery-guarantee' = 'exactly-once')""",
)
_WORDS = (*TEXT_TOKENS, *TYPE_WORDS)
_DDL_WORDS = (*TEXT_TOKENS, *SQL_WORDS)


def _text(rng: Any, kind: str) -> str:
    roll = rng.random()
    if roll < 0.1:
        return random_text(rng, 40)
    if roll < 0.3:
        return soup(rng, _WORDS, 25)
    seeds = _TEXT_SEEDS[kind]
    return mutate_text(rng, rng.choice(seeds), _WORDS, seeds)


def _value(rng: Any) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(OPTION_VALUES)
    if roll < 0.7:
        return mutate_text(rng, rng.choice(OPTION_VALUES), TEXT_TOKENS, OPTION_VALUES)
    if roll < 0.8:
        return str(edge_integer(rng))
    if roll < 0.95:
        return random_text(rng, 20)
    return rng.choice((None, 1, -1, True, 1.5, ["a"], {"a": "b"}))


def _key(rng: Any, keys: Any) -> str:
    key = rng.choice(keys)
    return key if rng.random() < 0.85 else mutate_text(rng, key, TEXT_TOKENS, keys)


def _secrets(rng: Any, keys: Any) -> dict[str, str]:
    """Values with the mark under some secret keys."""
    return {k: f"x{MARK}-{rng.randrange(100)}" for k in keys if rng.random() < 0.3}


def _column(rng: Any) -> dict[str, Any]:
    column: dict[str, Any] = {
        "name": rng.choice(("id", "name", "a", "`b`", ""))
        if rng.random() < 0.8
        else random_text(rng, 6),
        "type": rng.choice(_TYPES) if rng.random() < 0.8 else _text(rng, "type"),
    }
    if rng.random() < 0.3:
        column["metadata_key"] = rng.choice(
            ("timestamp", "offset", "headers", "topic", "nope", None)
        )
    if rng.random() < 0.2:
        column["virtual"] = rng.random() < 0.5
    return column


def _secrets_stay(mapping: dict[str, Any]) -> bool:
    """Whether the mark is only in values of secret keys (edits of keys may have moved it)."""
    return all(is_secret(str(k)) or MARK not in str(v) for k, v in mapping.items()) and not any(
        MARK in str(k) for k in mapping
    )


class Options(Target):
    """The options layer over option maps, columns, format options, client properties, the
    parsers of option values, and single-table DDL."""

    name = "options"
    batch = 1000
    refused_as = "refused"

    def case(self, rng: Any, index: int = 0) -> Any:
        kind = rng.choice(
            (
                "table",
                "table",
                "table",
                "columns",
                "format",
                "properties",
                "properties",
                "type",
                "duration",
                "offsets",
                "header",
                "fixed",
                "ddl",
                "arbitrary",
            )
        )
        role = rng.choice((None, "source", "sink"))
        if kind == "table":
            changes = {_key(rng, OPTION_KEYS): _value(rng) for _ in range(rng.randrange(9))}
            return [kind, {**BASE, **_secrets(rng, SECRET_KEYS), **changes}, role]
        if kind == "arbitrary":
            options = {random_text(rng, 15): _value(rng) for _ in range(rng.randrange(7))}
            return [kind, {**options, **_secrets(rng, SECRET_KEYS)}, role]
        if kind == "columns":
            columns = [_column(rng) for _ in range(rng.randrange(6))]
            key = [rng.choice(("id", "name", "a", "x")) for _ in range(rng.randrange(3))]
            return [kind, columns, key]
        if kind == "format":
            name = rng.choice(sorted(FORMAT_OPTIONS))
            options = {
                f"{name}.{_key(rng, [o.key for o in FORMAT_OPTIONS[name]] or ['x'])}": _value(rng)
                for _ in range(rng.randrange(5))
            }
            return [kind, {**BASE, "format": name, **options, **_secrets(rng, SECRET_KEYS)}, role]
        if kind == "properties":
            properties = {_key(rng, PROPERTY_KEYS): _value(rng) for _ in range(rng.randrange(7))}
            properties.update(_secrets(rng, _SECRET_PROPERTIES))
            return [kind, properties, rng.choice(("consumer", "producer", "admin"))]
        if kind == "ddl":  # (the first, with a registry, costs the registry client's set-up)
            seed = _DDL[0] if rng.random() < 0.1 else _DDL[1]
            return [kind, mutate_text(rng, seed, _DDL_WORDS, _DDL, SECRET)]
        return [kind, _text(rng, kind)]

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        from dagster_kafka_flinklike.sql import parse_flink_sql

        findings = []
        for i, (kind, data, *more) in enumerate(cases):
            load: Callable[..., Any]
            counted: Callable[[], bool] = lambda: True  # noqa: E731
            if kind in ("table", "arbitrary", "format"):
                load = functools.partial(KafkaTableSpec.from_options, columns=COLUMNS, role=more[0])
                counted = functools.partial(_secrets_stay, data)
            elif kind == "columns":
                load = functools.partial(_columns, primary_key=more[0])
            elif kind == "properties":
                load = functools.partial(client_config, role=more[0])
                counted = functools.partial(_secrets_stay, data)
            elif kind == "ddl":
                load = parse_flink_sql
                counted = functools.partial(sql_secrets_stay, data)
            else:
                load = _PARSERS[kind]
            found = check_one(counts, i, load, data, counted=counted, ours=(KafkaOptionsError,))
            if found is not None:
                findings.append(found)
        return findings


def _columns(columns: list[dict[str, Any]], primary_key: list[str]) -> None:
    for column in columns:
        Column.coerce(column)
    KafkaTableSpec.from_options(BASE, columns=columns, primary_key=primary_key, role="sink")


_PARSERS: dict[str, Callable[[str], Any]] = {
    "type": parse_flink_type,
    "duration": functools.partial(parse_duration_ms, "k"),
    "offsets": functools.partial(parse_specific_offsets, "k"),
    "header": parse_header_filter,
    "fixed": functools.partial(parse_fixed_types, "json.infer-schema.fixed-types"),
}

__all__ = ["Options"]
