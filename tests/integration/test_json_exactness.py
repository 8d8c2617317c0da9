"""JSON numbers read as Flink reads them, with Apache Flink as the oracle: a number in a STRING
column (top level, in a row, an array or a map) is its text as written, a DECIMAL beyond any
precision is null, a DECIMAL with an exponent of millions neither holds the run nor differs, and
a DECIMAL string is read trimmed; and the changelog formats read their envelopes as Flink's
node-based reading does; and 'json.ignore-parse-errors' keeps a record whose field fails as a
row with that field null; and numbers into integer and floating columns are truncated, refused
or infinite as in Flink. The same script runs here and on Flink over the same topics, per
record (maps, decimals with exponents) and through the native decoding (flat).

The exponent of millions is ``JSON_TEST_EXPONENT`` (2,000,000 by default): Flink rescales such a
DECIMAL with BigInteger arithmetic, about a second a record at that size and minutes at
99,999,999, the size ``make exactness`` runs. Ours takes both sizes alike: a DECIMAL with an
exponent of 1,000 or more that rounds to zero is 0 and one beyond any precision null, and the C
scanner stops counting an exponent at 100,000."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from dagster import DagsterInstance

from dagster_kafka_flinklike.components import build_flink_sql_definitions
from tests.conftest import consume_all
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
CREATE TABLE tolerant ({tolerant_columns}) WITH (
  'connector' = 'kafka', 'topic' = '{tolerant}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE tolerant_out ({tolerant_columns}) WITH (
  'connector' = 'kafka', 'topic' = '{tolerant_out}', 'format' = 'json');
INSERT INTO tolerant_out SELECT * FROM tolerant;
CREATE TABLE changes_tolerant (id INT, s STRING, r ROW<a INT>) WITH (
  'connector' = 'kafka', 'topic' = '{changes_tolerant}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json', 'debezium-json.ignore-parse-errors' = 'true');
CREATE TABLE changes_tolerant_out (id INT, s STRING, r ROW<a INT>) WITH (
  'connector' = 'kafka', 'topic' = '{changes_tolerant_out}', 'format' = 'debezium-json');
INSERT INTO changes_tolerant_out SELECT * FROM changes_tolerant;
CREATE TABLE canal_tolerant (id INT, s STRING) WITH (
  'connector' = 'kafka', 'topic' = '{canal_tolerant}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'canal-json', 'canal-json.ignore-parse-errors' = 'true');
CREATE TABLE canal_tolerant_out (id INT, s STRING) WITH (
  'connector' = 'kafka', 'topic' = '{canal_tolerant_out}', 'format' = 'debezium-json');
INSERT INTO canal_tolerant_out SELECT * FROM canal_tolerant;
CREATE TABLE numbers ({number_columns}) WITH (
  'connector' = 'kafka', 'topic' = '{numbers}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE numbers_out ({number_columns}) WITH (
  'connector' = 'kafka', 'topic' = '{numbers_out}', 'format' = 'json');
INSERT INTO numbers_out SELECT * FROM numbers;
CREATE TABLE changes_numbers ({number_columns}) WITH (
  'connector' = 'kafka', 'topic' = '{changes_numbers}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json', 'debezium-json.ignore-parse-errors' = 'true');
CREATE TABLE changes_numbers_out ({number_columns}) WITH (
  'connector' = 'kafka', 'topic' = '{changes_numbers_out}', 'format' = 'debezium-json');
INSERT INTO changes_numbers_out SELECT * FROM changes_numbers;
CREATE TABLE changes_doubles (id INT, s STRING, r ROW<t STRING>) WITH (
  'connector' = 'kafka', 'topic' = '{changes_doubles}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-json');
CREATE TABLE changes_doubles_out (id INT, s STRING, r ROW<t STRING>) WITH (
  'connector' = 'kafka', 'topic' = '{changes_doubles_out}', 'format' = 'debezium-json');
INSERT INTO changes_doubles_out SELECT * FROM changes_doubles;
INSERT INTO decimals_out SELECT id, p, s FROM decimals;
INSERT INTO changes_out SELECT id, s, p FROM changes;
INSERT INTO flat_out SELECT id, s FROM flat;
INSERT INTO nested_out SELECT id, s, m, r FROM nested;
"""

#: An exponent of millions (see the module's docstring).
E = os.environ.get("JSON_TEST_EXPONENT", "2000000").encode()
DECIMALS = [
    b'{"id": 1, "p": 1e400}', b'{"id": 2, "p": 1.5e-99999}', b'{"id": 3, "p": "1e400"}',
    b'{"id": 4, "p": 1.235}', b'{"id": 5, "p": 123456789012}', b'{"id": 6, "p": 1e-1000}',
    b'{"id": 7, "p": -1.5e-' + E + b'}',
    b'{"id": 8, "p": 12345678901234567890123456789012345678901}',
    b'{"id": 9, "p": 0e99999999}', b'{"id": 10, "p": -0.004}', b'{"id": 11, "s": 1.5e-99999}',
    b'{"id": 12, "s": 12345678901234567890.125e-1}', b'{"id": 13, "p": 1e37}',
    b'{"id": 14, "p": " 12.5 "}', b'{"id": 15, "p": "+1.5e1"}', b'{"id": 16, "p": 1.5e+' + E + b'}',
    b'{"id": 17, "p": 100}', b'{"id": 18, "p": 0.00}', b'{"id": 19, "p": "-1.50"}',
]  # fmt: skip
TEXTS = [
    b'{"id": 1, "s": 1.50}', b'{"id": 2, "s": 1e2}', b'{"id": 3, "s": 1234567890123.125e-1}',
    b'{"id": 4, "s": -0.0}', b'{"id": 5, "s": true}', b'{"id": 6, "s": {"a": 1.50, "b": [2]}}',
    b'{"id": 7, "s": [1.50, null]}', b'{"id": 8, "s": 123456789012345678901234567890}',
    b'{"id": 9, "s": "1.50"}', b'{"id": 10, "s": -0}', b'{"id": 11, "s": 1.5E-7}',
    b'{"id": 12, "s": "raw\t\x01controls"}',
]  # fmt: skip
#: Debezium envelopes' after images: Flink's changelog formats read them node by node, so a
#: number into a STRING is ``BigDecimal.stripTrailingZeros().toString()`` (an integer as
#: written), unlike ``json``.
AFTER = [
    b'{"id": 1, "s": 1.50, "p": 1e400}', b'{"id": 2, "s": 1e2, "p": "2.5"}',
    b'{"id": 3, "s": "x", "p": 1.5e-' + E + b'}', b'{"id": 4, "s": -0, "p": 1.235}',
    b'{"id": 5, "s": 0.0000001, "p": null}', b'{"id": 6, "s": 123456789012345678901234567890}',
]  # fmt: skip
CHANGES = [b'{"before": null, "after": ' + a + b', "op": "c"}' for a in AFTER]
#: The same node-based reading of a table without a DECIMAL: Jackson reads a number with a
#: fraction or an exponent as a double, so a STRING gets Java's Double.toString() text.
AFTER_DOUBLES = [
    b'{"id": 1, "s": 100.0, "r": {"t": 1e2}}', b'{"id": 2, "s": 1.50, "r": {"t": -0.0}}',
    b'{"id": 3, "s": 0.0000001, "r": {"t": 12345678901234567890123}}',
    b'{"id": 4, "s": 1234567.25, "r": {"t": 12345678.5}}', b'{"id": 5, "s": 0.001, "r": {"t": -0}}',
    b'{"id": 6, "s": 2.5E+10, "r": {"t": 0.30000000000000004}}',
]  # fmt: skip
CHANGES_DOUBLES = [b'{"before": null, "after": ' + a + b', "op": "c"}' for a in AFTER_DOUBLES]
CHANGES_TOLERANT = [
    b'{"before": null, "after": {"id": "x", "s": "keep"}, "op": "c"}',
    b'{"before": null, "after": {"id": 2, "r": {"a": "abc"}}, "op": "c"}',
    b'{"before": null, "after": {"id": 3, "s": "clean"}, "op": "c"}',
    b'{"before": null, "after": 5, "op": "c"}',
    b"not json",
]
CANAL_TOLERANT = [
    b'{"data": [{"id": "x", "s": "keep"}, {"id": 2, "s": "ok"}], "type": "INSERT"}',
    b'{"data": [{"id": 3, "s": "a"}], "old": [{"id": "y"}], "type": "UPDATE"}',
    b'{"data": 5, "type": "INSERT"}',
]
#: Records whose fields fail: Flink's 'json.ignore-parse-errors' keeps the row with the field
#: that failed null (at any depth) and skips only what is not a JSON object. (Not here: a MAP
#: value that is an array where a number is declared, ``{"m": {"k": [1]}}``: Flink's parser
#: goes on inside the array and reads its element as a key, ``{k: null, 1: null}``; here the
#: value is null, ``{k: null}``.)
TOLERANT_COLUMNS = (
    "id INT, s STRING, i INT, p DECIMAL(10, 2), b BOOLEAN, ts TIMESTAMP(3), d DOUBLE, "
    "r ROW<a INT, s STRING>, arr ARRAY<INT>, m MAP<STRING, INT>, rs ARRAY<ROW<a INT>>"
)
TOLERANT = [
    b'{"id": 1, "i": "abc", "s": "keep"}', b'{"id": 2, "r": {"a": "abc", "s": "x"}}',
    b'{"id": 3, "arr": [1, "abc", 3]}', b'{"id": 4, "m": {"k": "abc", "j": 2}}',
    b'{"id": 5, "ts": "bad", "s": "keep"}', b'{"id": 6, "d": "abc"}', b'{"id": 7, "r": "x"}',
    b'{"id": 8, "arr": 5, "s": "keep"}', b'{"id": 9, "i": 99999999999}',
    b'{"id": "x", "s": "keep10"}', b'{"id": 11, "p": "abc", "s": "keep"}',
    b'{"id": 12, "p": "1,000", "s": "keep"}', b'{"id": 13, "p": 1e400, "i": "1.5"}',
    b'{"id": 14, "rs": [{"a": 1}, {"a": "abc"}, {"a": 3}]}', b'{"id": 15, "m": {"k": null}}',
    b'{"id": 16, "s": "a", "s": "b", "i": 1, "i": 2}', b'not json', b'[1, 2]', b'5',
    b'{"id": 20, "s": "cut"', b'{"id": 21, "b": "yes", "ts": "2020-01-01 00:00:00"}',
    b'{"id": 22, "s": "clean", "i": 7}', b'{"id": 23, "rs": "x", "arr": [1]}',
    b'{"id": 24, "m": {"k": "x", "k": 2}}',  # a repeated key: the last kept, each converted
]  # fmt: skip
#: Numbers into integer and floating columns: Flink truncates a JSON number with a fraction or an
#: exponent into INT and BIGINT (as a double, within range) and refuses it into TINYINT and
#: SMALLINT; it parses a string as Java's parseInt does (``"100.00"`` and ``"1e2"`` fail); a
#: number beyond a double is infinity in FLOAT and DOUBLE. The same in the changelog formats'
#: node-based reading.
NUMBER_COLUMNS = (
    "id INT, t TINYINT, sm SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, a ARRAY<INT>, "
    "r ROW<i INT, d DOUBLE>"
)
NUMBERS = [
    b'{"id": 1, "i": 1.9, "bi": -1.5, "t": 7, "sm": -0}',
    b'{"id": 2, "i": 1e2, "bi": 9223372036854775806.5, "t": 1.0, "sm": 1e2}',
    b'{"id": 3, "i": "100.00", "bi": "1e2", "t": " 42 ", "sm": "+7"}',
    b'{"id": 4, "i": 2147483647.5, "bi": 2147483647.5, "t": 1e-400, "sm": "007"}',
    b'{"id": 5, "i": -2147483648.9, "bi": -2147483648.9, "d": 1e400, "f": -1e400}',
    b'{"id": 6, "i": -0.5, "bi": 1.5e10, "d": "1e400", "f": 3.4028236e38}',
    b'{"id": 7, "a": [1.5, "2", "2.0", 3e0], "i": "\\t42\\t", "r": {"i": -7.9, "d": 1e999}}',
    b'{"id": 8, "i": 1.5e10, "bi": 1e19, "d": 1e-400, "f": 1.5}',
    b'{"id": 9, "bi": 9007199254740993.7, "i": "007", "sm": 40000, "t": 1.5}',
    b'{"id": 10, "i": "\t42\n", "d": 1e400, "bi": 2.5}',  # raw control characters: as Flink
]  # fmt: skip
CHANGES_NUMBERS = [b'{"before": null, "after": ' + n + b', "op": "c"}' for n in NUMBERS]
NESTED = [
    *TEXTS,
    b'{"id": 20, "m": {"k": 1.50, "j": 1e400, "o": {"x": 2.50}, "t": "1.50"}}',
    b'{"id": 21, "r": {"a": 1E+2, "b": [1.10, "y", 3], "d": 1e40}}',
    b'{"id": 22, "r": {"a": "x", "b": [], "d": 1234.56}, "m": {}}',
    b'{"id": 23, "m": {"k": "a", "j": true, "k": "c", "\xc3\xa9": null, "j": 2}}',  # repeated keys
]


def test_json_numbers_decode_as_in_flink(
    kafka_bootstrap: str,
    new_topic: Any,
    resources: dict,  # noqa: F811
    oracle: Any,
) -> None:
    sinks = ("decimals_out", "flat_out", "nested_out", "changes_out", "tolerant_out",
             "changes_tolerant_out", "canal_tolerant_out", "numbers_out",
             "changes_numbers_out", "changes_doubles_out")  # fmt: skip
    sources = (
        "decimals", "flat", "nested", "changes", "tolerant", "changes_tolerant", "canal_tolerant",
        "numbers", "changes_numbers", "changes_doubles",
    )  # fmt: skip
    topics = {name: new_topic(1) for name in (*sources, *sinks)}
    theirs = {name: new_topic(1) for name in sinks}
    inputs = {
        "decimals": DECIMALS, "flat": TEXTS, "nested": NESTED, "changes": CHANGES,
        "tolerant": TOLERANT, "changes_tolerant": CHANGES_TOLERANT,
        "canal_tolerant": CANAL_TOLERANT, "numbers": NUMBERS, "changes_numbers": CHANGES_NUMBERS,
        "changes_doubles": CHANGES_DOUBLES,
    }  # fmt: skip
    for name, records in inputs.items():
        send(kafka_bootstrap, topics[name], [(r, None) for r in records])

    def script(sinks: dict[str, str]) -> str:
        return SCRIPT.format(
            **{**topics, **sinks},
            tolerant_columns=TOLERANT_COLUMNS,
            number_columns=NUMBER_COLUMNS,
        )

    flink = oracle.submit(for_flink(script(theirs)), bootstrap=kafka_bootstrap)
    run(build_flink_sql_definitions(script({})), resources, DagsterInstance.ephemeral())
    flink.result()
    for sink in theirs:
        expected = values(kafka_bootstrap, theirs[sink])
        assert expected, f"Flink wrote nothing to {sink}"
        got = values(kafka_bootstrap, topics[sink])
        if got != expected:
            for mine, flinks in zip(got, expected, strict=False):
                print("OURS ", mine, "\nFLINK", flinks)
        assert got == expected, sink
    # A DECIMAL written as Flink writes it (BigDecimal.stripTrailingZeros().toString()), byte
    # for byte: 100 is 1E+2, 0.00 is 0, -1.50 is -1.5.
    for sink in ("decimals_out", "changes_out"):
        written = [m.value() for m in consume_all(kafka_bootstrap, topics[sink], 1)]
        assert written == [m.value() for m in consume_all(kafka_bootstrap, theirs[sink], 1)]
    decimal_text = {json.loads(v)["id"]: v for v in (
        m.value() for m in consume_all(kafka_bootstrap, topics["decimals_out"], 1))}  # fmt: skip
    assert b'"p":1E+2' in decimal_text[17] and b'"p":0,' in decimal_text[18]
    assert b'"p":-1.5' in decimal_text[19]
    # What Flink gives, as these records expect it.
    flat = {r["id"]: r["s"] for r in values(kafka_bootstrap, topics["flat_out"])}
    assert flat[1] == "1.50" and flat[2] == "1e2" and flat[10] == "-0" and flat[11] == "1.5E-7"
    assert flat[12] == "raw\t\x01controls"
    decimals = {r["id"]: r["p"] for r in values(kafka_bootstrap, topics["decimals_out"])}
    assert decimals[1] is None and decimals[7] == 0 and decimals[16] is None
    assert decimals[14] == 12.5
    tolerant = values(kafka_bootstrap, topics["tolerant_out"])
    # Every object kept (a field that failed null); not JSON, not an object, cut short: skipped.
    assert [r["id"] for r in tolerant] == [*range(1, 10), None, *range(11, 17), 21, 22, 23, 24]
    assert tolerant[-1]["m"] == {"k": 2}
    assert tolerant[1]["r"] == {"a": None, "s": "x"} and tolerant[2]["arr"] == [1, None, 3]
    assert tolerant[13]["rs"] == [{"a": 1}, {"a": None}, {"a": 3}]
    kept = [r["after"] for r in values(kafka_bootstrap, topics["changes_tolerant_out"])]
    assert kept == [
        {"id": None, "s": "keep", "r": None},
        {"id": 2, "s": None, "r": {"a": None}},
        {"id": 3, "s": "clean", "r": None},
    ]
    changes = [r["after"]["s"] for r in values(kafka_bootstrap, topics["changes_out"])]
    assert changes[:5] == ["1.5", "1E+2", "x", "0", "1E-7"]
    doubles = [r["after"] for r in values(kafka_bootstrap, topics["changes_doubles_out"])]
    assert [d["s"] for d in doubles[:3]] == ["100.0", "1.5", "1.0E-7"]
    assert [d["r"]["t"] for d in doubles[:2]] == ["100.0", "-0.0"]
    numbers = values(kafka_bootstrap, topics["numbers_out"])
    assert [(r["i"], r["bi"]) for r in numbers[:2]] == [(1, -1), (100, 9223372036854775807)]
    assert (numbers[1]["t"], numbers[1]["sm"]) == (None, None)  # TINYINT, SMALLINT: refused
    assert (numbers[2]["i"], numbers[2]["bi"], numbers[2]["t"]) == (None, None, 42)
    assert (numbers[4]["d"], numbers[4]["f"]) == ("Infinity", "-Infinity")  # as Flink writes them
    assert numbers[6]["a"] == [1, 2, None, 3] and numbers[6]["r"]["i"] == -7
    assert (numbers[9]["i"], numbers[9]["d"], numbers[9]["bi"]) == (42, "Infinity", 2)
    changes_numbers = [r["after"] for r in values(kafka_bootstrap, topics["changes_numbers_out"])]
    assert [(r["i"], r["bi"]) for r in changes_numbers] == [(r["i"], r["bi"]) for r in numbers]
