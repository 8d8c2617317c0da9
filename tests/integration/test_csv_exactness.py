"""The csv format read as Flink reads it, with Apache Flink as the oracle: under
'csv.ignore-parse-errors' a record whose fields fail or are missing keeps its row (those fields
null) and one Flink's parser cannot split (broken quoting, too many fields) is skipped; integers
parse as Java parses them; one trailing delimiter is allowed. The same script runs here and on
Flink over the same topic."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import DagsterInstance

from dagster_kafka_flinklike.components import build_flink_sql_definitions
from tests.integration.test_flink_oracle import for_flink, resources  # noqa: F401
from tests.integration.test_flink_sql import run, send, values

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SCRIPT = """
CREATE TABLE lines (id INT, i INT, s STRING, d DOUBLE) WITH (
  'connector' = 'kafka', 'topic' = '{lines}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'csv', 'csv.ignore-parse-errors' = 'true');
CREATE TABLE lines_out (id INT, i INT, s STRING, d DOUBLE) WITH (
  'connector' = 'kafka', 'topic' = '{lines_out}', 'format' = 'json');
INSERT INTO lines_out SELECT * FROM lines;
"""
LINES = [
    b"1,5,a,1.5", b"2,x,keep,2.5", b"3,5", b"4,5,a,1.5,extra", b'5,"5,a,1', b"6,,,",
    b'7,5,"a"b",1', b"8,100.00,k,", b"garbage", b"10, 7 ,q,1e400", b"11,5,a,abc",
    b'12,5,a"b,1', b'13,5,"a""b",1', b'14,5,"a" ,1', b'15,5, "a",1', b"16,5,a,1,",
    b'17,5,"a\nb",1', b'18,5,"",1', b'19,5,a,"1', b'20,5,"a,b",1', b"21,5,a,1\r\n",
    b'22,"5",a,1', b"23,5,\ta\t,1", b'24,5,"a"', b'25,"",a,1', b"26,5,a,1,,", b"27,+7,a,1",
    b"28,007,a,1", b"29,1.5,a,1", b"30,1e2,a,1", b"31,2147483648,a,1",
]  # fmt: skip


def test_csv_rows_are_kept_and_skipped_as_in_flink(
    kafka_bootstrap: str,
    new_topic: Any,
    resources: dict,  # noqa: F811
    oracle: Any,
) -> None:
    lines, ours, theirs = new_topic(1), new_topic(1), new_topic(1)
    send(kafka_bootstrap, lines, [(r, None) for r in LINES])
    flink = oracle.submit(
        for_flink(SCRIPT.format(lines=lines, lines_out=theirs)), bootstrap=kafka_bootstrap
    )
    run(
        build_flink_sql_definitions(SCRIPT.format(lines=lines, lines_out=ours)),
        resources,
        DagsterInstance.ephemeral(),
    )
    flink.result()
    expected = values(kafka_bootstrap, theirs)
    got = values(kafka_bootstrap, ours)
    if got != expected:
        for mine, flinks in zip(got, expected, strict=False):
            print("OURS ", mine, "\nFLINK", flinks)
    assert got == expected
    by_id = {r["id"]: r for r in got}
    # Kept: fields that fail or are missing are null; skipped: broken quoting, too many fields.
    assert by_id[2] == {"id": 2, "i": None, "s": "keep", "d": 2.5}
    assert by_id[3] == {"id": 3, "i": 5, "s": None, "d": None}
    assert by_id[8]["i"] is None and by_id[16] == {"id": 16, "i": 5, "s": "a", "d": 1.0}
    assert by_id[12]["s"] == 'a"b' and by_id[27]["i"] == 7 and by_id[28]["i"] == 7
    assert not {4, 5, 7, 19, 26} & set(by_id)
    assert by_id[29]["i"] is None and by_id[30]["i"] is None and by_id[31]["i"] is None
