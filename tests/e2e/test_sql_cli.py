"""``dkf sql check`` and ``dkf sql run`` as a user runs them: exit codes, output, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.conftest import consume_all

BIN = Path(sys.executable).parent
CORPUS = Path(__file__).resolve().parents[1] / "sql"


def dkf(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "dkf"), "sql", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


TABLES = """CREATE TABLE a (x INT, s STRING) WITH ('connector' = 'kafka', 'topic' = 'a',
  'format' = 'json');
CREATE TABLE b (y BIGINT) WITH ('connector' = 'kafka', 'topic' = 'b', 'format' = 'json');
"""


def test_check_plans_and_analyses_the_corpus(tmp_path: Path) -> None:
    text = (CORPUS / "enrich_json.sql").read_text().format(source="o", sink="e")
    out = dkf("check", write(tmp_path, "enrich.sql", text))
    assert out.returncode == 0, out.stderr
    assert "INSERT INTO enriched (line 37): reads orders; incremental runs" in out.stdout
    assert "ok: 1 insert(s), 2 Kafka table(s)" in out.stdout
    assert "SET 'table.exec.source.idle-timeout' (line 3) has no effect here" in out.stderr
    # no Spark job is cut short at exit (its executors would log ERROR lines)
    assert " ERROR " not in out.stderr and "[Stage " not in out.stderr


def test_check_reports_line_and_column_of_what_cannot_run(tmp_path: Path) -> None:
    stateful = write(tmp_path, "s.sql", TABLES + "INSERT INTO b\nSELECT COUNT(*) FROM a;\n")
    out = dkf("check", "--no-spark", stateful)
    assert out.returncode == 1
    assert "line 5, column 8: INSERT INTO b: the query keeps state (COUNT)" in out.stderr
    assert "'upsert-kafka'" in out.stderr

    refused = write(
        tmp_path, "m.sql", TABLES + "INSERT INTO b SELECT * FROM a\n  MATCH_RECOGNIZE (x);\n"
    )
    out = dkf("check", "--no-spark", refused)
    assert out.returncode == 1
    assert "line 5, column 3: MATCH_RECOGNIZE" in out.stderr

    bad_option = write(
        tmp_path,
        "o.sql",
        "CREATE TABLE a (x INT) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json',"
        "\n 'scan.startup.mode' = 'sideways');",
    )
    out = dkf("check", "--no-spark", bad_option)
    assert out.returncode == 1
    assert "scan.startup.mode" in out.stderr and "line 1" in out.stderr

    unknown_function = write(tmp_path, "f.sql", TABLES + "INSERT INTO b SELECT NO_SUCH(x) FROM a;")
    out = dkf("check", unknown_function)
    assert out.returncode == 1
    assert "INSERT INTO b (line 4): [UNRESOLVED_ROUTINE]" in out.stderr
    assert "NO_SUCH" in out.stderr
    assert "Traceback" not in out.stderr

    assert dkf("check", str(tmp_path / "missing.sql")).returncode == 1
    assert dkf("explode", "x.sql").returncode == 2


@pytest.mark.kafka
def test_run_reads_writes_and_keeps_its_checkpoint(
    tmp_path: Path, kafka_bootstrap: str, new_topic
) -> None:
    source, sink = new_topic(1), new_topic(1)
    script = write(
        tmp_path,
        "copy.sql",
        (CORPUS / "enrich_json.sql").read_text().format(source=source, sink=sink),
    )
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(5):
        producer.produce(source, json.dumps({"order_id": i, "channel": "web", "price": i}))
    producer.produce(source, b"{broken")
    assert producer.flush(30) == 0
    env = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "DKF_HOME": str(tmp_path / "home")}

    first = dkf("run", script, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "enriched: read 6, wrote 4, dirty 1" in first.stdout  # price 0 filtered out
    assert [json.loads(m.value())["order_id"] for m in consume_all(kafka_bootstrap, sink, 1)] == [
        1,
        2,
        3,
        4,
    ]
    assert (tmp_path / "home" / "sql" / "copy").is_dir()

    again = dkf("run", script, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "enriched: read 0, wrote 0" in again.stdout
