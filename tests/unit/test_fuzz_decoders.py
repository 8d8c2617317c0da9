"""The decoder fuzz targets (``tests/fuzz/decoders.py``) through Spark, CI-sized: a record's way
from the reader's batch through ``decode_records`` and the run's observed counts, for two tables
of each target; and the checks catch a decoding that counts a record twice, loses one, or fails
the Spark job (narrowed down to the record that fails it)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import DECODERS, make_target
from tests.fuzz.decoders import Decoders
from tests.fuzz.harness import Counts, run_target

pytestmark = pytest.mark.spark


def _run(target: Decoders, inputs: int, tmp_path: Path) -> tuple[Counts, str]:
    out = io.StringIO()
    counts = run_target(target, inputs, seed=11, failures=tmp_path, out=out)
    return counts, out.getvalue()


def _small(name: str, tables: int = 2) -> Decoders:
    target = make_target(name, spark=True, batch=60)  # (two batches: a table each)
    assert isinstance(target, Decoders)
    target.tables = [target.tables[0], target.tables[-1]][:tables]
    return target


@pytest.mark.parametrize("name", DECODERS)
def test_every_decoder_target_runs_clean_through_spark(
    name: str, spark: Any, tmp_path: Path
) -> None:
    counts, out = _run(_small(name), 120, tmp_path)
    assert counts.failures == 0, out
    assert counts.inputs == 120 and counts.refused > 0  # dirty records were made
    assert counts.extra.get("decoded", 0) > 0  # and clean ones


def _decoding(monkeypatch: Any, change: Any) -> None:
    from dagster_kafka_flinklike.source import records

    real = records.decode_records
    monkeypatch.setattr(records, "decode_records", lambda spec, raw: change(real(spec, raw)))


def test_a_record_counted_twice_or_lost_is_caught(
    spark: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    # Dirty records twice (a second row starts them again), clean records with an even offset lost.
    _decoding(
        monkeypatch, lambda frame: frame.union(frame.filter(F.col("__dkf_error").isNotNull()))
    )
    counts, out = _run(_small("json", 1), 60, tmp_path / "twice")
    assert counts.failures > 0 and "counted twice" in out
    monkeypatch.undo()
    odd = (F.col("__dkf_offset") % 2 == 1) | F.col("__dkf_error").isNotNull()
    _decoding(monkeypatch, lambda frame: frame.filter(odd))
    counts, out = _run(_small("json", 1), 60, tmp_path / "lost")
    assert counts.failures > 0 and "record lost" in out


def test_a_failing_spark_job_is_narrowed_down_to_its_record(
    spark: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    # The job fails on the record at offset 13 of its table's batch.
    error = F.col("__dkf_error")
    fail = F.when(F.col("__dkf_offset") == 13, F.raise_error(F.lit("planted"))).otherwise(error)
    _decoding(monkeypatch, lambda frame: frame.withColumn("__dkf_error", fail))
    target = _small("raw", 1)
    cases = [target.case(__import__("random").Random(i)) for i in range(40)]
    findings = target.check(cases, Counts())
    assert [(f.index, f.kind) for f in findings] == [(13, "the Spark job failed")]
    assert "planted" in findings[0].message


def test_a_spark_job_that_does_not_finish_stops_its_target(
    spark: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    import time

    from pyspark.sql import functions as F

    from tests.fuzz import decoders

    @F.udf("string")
    def slow(error: Any) -> Any:
        time.sleep(20)
        return error

    monkeypatch.setattr(decoders, "JOB_TIMEOUT_S", 4.0)
    slowed = F.when(F.col("__dkf_offset") == 3, slow(F.col("__dkf_error")))
    _decoding(
        monkeypatch, lambda f: f.withColumn("__dkf_error", slowed.otherwise(f["__dkf_error"]))
    )
    target = _small("raw", 1)
    counts, out = _run(target, 120, tmp_path)
    assert target.stalled and counts.failures == 1
    assert "did not finish in 4 s" in out and counts.extra["unchecked"] == 60
