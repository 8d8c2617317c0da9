"""JSON numbers read as Flink reads them, with Apache Flink as the oracle: a number in a STRING
column (top level, in a row, an array or a map) is its text as written, a DECIMAL beyond any
precision is null, a DECIMAL with an exponent of millions neither holds the run nor differs, and
a DECIMAL string is read trimmed; and the changelog formats read their envelopes as Flink's
node-based reading does. The same script runs here and on Flink over the same
topics, per record (maps, decimals with exponents) and through the native decoding (flat)."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import DagsterInstance

from dagster_kafka_flinklike.components import build_flink_sql_definitions
from tests.integration.test_flink_oracle import for_flink, resources  # noqa: F401
from tests.integration.test_flink_sql import run, send, values

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SCRIPT = """
CREATE TABLE decimals (id INT, p DECIMAL(10, 2), s STRING) WITH (
  'connector' = 'kafka', 'topic' = '{decimals}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE flat (id INT, s STRING) WITH (
  'connector' = 'kafka', 'topic' = '{flat}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE nested (id INT, s STRING, m MAP<STRING, STRING>,
  r ROW<a STRING, b ARRAY<STRING>, d DECIMAL(5, 1)>) WITH (
  'connector' = 'kafka', 'topic' = '{nested}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE decimals_out (id INT, p DECIMAL(10, 2), s STRING) WITH (
  'connector' = 'kafka', 'topic' = '{decimals_out}', 'format' = 'json');
CREATE TABLE flat_out (id INT, s STRING) WITH (
  'connector' = 'kafka', 'topic' = '{flat_out}', 'format' = 'json');
CREATE TABLE nested_out (id INT, s STRING, m MAP<STRING, STRING>,
  r ROW<a STRING, b ARRAY<STRING>, d DECIMAL(5, 1)>) WITH (
  'connector' = 'kafka', 'topic' = '{nested_out}', 'format' = 'json');
CREATE TABLE changes (id INT, s STRING, p DECIMAL(10, 2)) WITH (
  'connector' = 'kafka', 'topic' = '{changes}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json');
CREATE TABLE changes_out (id INT, s STRING, p DECIMAL(10, 2)) WITH (
  'connector' = 'kafka', 'topic' = '{changes_out}', 'format' = 'debezium-json');
INSERT INTO decimals_out SELECT id, p, s FROM decimals;
INSERT INTO changes_out SELECT id, s, p FROM changes;
INSERT INTO flat_out SELECT id, s FROM flat;
INSERT INTO nested_out SELECT id, s, m, r FROM nested;
"""

DECIMALS = [
    b'{"id": 1, "p": 1e400}', b'{"id": 2, "p": 1.5e-99999}', b'{"id": 3, "p": "1e400"}',
    b'{"id": 4, "p": 1.235}', b'{"id": 5, "p": 123456789012}', b'{"id": 6, "p": 1e-1000}',
    b'{"id": 7, "p": -1.5e-99999999}', b'{"id": 8, "p": 12345678901234567890123456789012345678901}',
    b'{"id": 9, "p": 0e99999999}', b'{"id": 10, "p": -0.004}', b'{"id": 11, "s": 1.5e-99999}',
    b'{"id": 12, "s": 12345678901234567890.125e-1}', b'{"id": 13, "p": 1e37}',
    b'{"id": 14, "p": " 12.5 "}', b'{"id": 15, "p": "+1.5e1"}', b'{"id": 16, "p": 1.5e+99999999}',
]  # fmt: skip
TEXTS = [
    b'{"id": 1, "s": 1.50}', b'{"id": 2, "s": 1e2}', b'{"id": 3, "s": 1234567890123.125e-1}',
    b'{"id": 4, "s": -0.0}', b'{"id": 5, "s": true}', b'{"id": 6, "s": {"a": 1.50, "b": [2]}}',
    b'{"id": 7, "s": [1.50, null]}', b'{"id": 8, "s": 123456789012345678901234567890}',
    b'{"id": 9, "s": "1.50"}', b'{"id": 10, "s": -0}', b'{"id": 11, "s": 1.5E-7}',
]  # fmt: skip
#: Debezium envelopes' after images: Flink's changelog formats read them node by node, so a
#: number into a STRING is ``BigDecimal.stripTrailingZeros().toString()`` (an integer as
#: written), unlike ``json``.
AFTER = [
    b'{"id": 1, "s": 1.50, "p": 1e400}', b'{"id": 2, "s": 1e2, "p": "2.5"}',
    b'{"id": 3, "s": "x", "p": 1.5e-99999999}', b'{"id": 4, "s": -0, "p": 1.235}',
    b'{"id": 5, "s": 0.0000001, "p": null}', b'{"id": 6, "s": 123456789012345678901234567890}',
]  # fmt: skip
CHANGES = [b'{"before": null, "after": ' + a + b', "op": "c"}' for a in AFTER]
NESTED = [
    *TEXTS,
    b'{"id": 20, "m": {"k": 1.50, "j": 1e400, "o": {"x": 2.50}, "t": "1.50"}}',
    b'{"id": 21, "r": {"a": 1E+2, "b": [1.10, "y", 3], "d": 1e40}}',
    b'{"id": 22, "r": {"a": "x", "b": [], "d": 1234.56}, "m": {}}',
]


def test_json_numbers_decode_as_in_flink(
    kafka_bootstrap: str,
    new_topic: Any,
    resources: dict,  # noqa: F811
    oracle: Any,
) -> None:
    sinks = ("decimals_out", "flat_out", "nested_out", "changes_out")
    topics = {name: new_topic(1) for name in ("decimals", "flat", "nested", "changes", *sinks)}
    theirs = {name: new_topic(1) for name in sinks}
    inputs = {"decimals": DECIMALS, "flat": TEXTS, "nested": NESTED, "changes": CHANGES}
    for name, records in inputs.items():
        send(kafka_bootstrap, topics[name], [(r, None) for r in records])

    def script(sinks: dict[str, str]) -> str:
        return SCRIPT.format(**{**topics, **sinks})

    flink = oracle.submit(for_flink(script(theirs)), bootstrap=kafka_bootstrap)
    run(build_flink_sql_definitions(script({})), resources, DagsterInstance.ephemeral())
    flink.result()
    for sink in theirs:
        expected = values(kafka_bootstrap, theirs[sink])
        assert expected, f"Flink wrote nothing to {sink}"
        assert values(kafka_bootstrap, topics[sink]) == expected, sink
    # What Flink gives, as these records expect it.
    flat = {r["id"]: r["s"] for r in values(kafka_bootstrap, topics["flat_out"])}
    assert flat[1] == "1.50" and flat[2] == "1e2" and flat[10] == "-0" and flat[11] == "1.5E-7"
    decimals = {r["id"]: r["p"] for r in values(kafka_bootstrap, topics["decimals_out"])}
    assert decimals[1] is None and decimals[7] == 0 and decimals[16] is None
    assert decimals[14] == 12.5
    changes = [r["after"]["s"] for r in values(kafka_bootstrap, topics["changes_out"])]
    assert changes[:5] == ["1.5", "1E+2", "x", "0", "1E-7"]
