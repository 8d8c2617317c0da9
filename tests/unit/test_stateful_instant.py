"""A ``TIMESTAMP`` event-time column becomes the instant it reads as in UTC, exactly (Spark keeps
watermarks on instants only)."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.run.stateful import _instant

pytestmark = pytest.mark.spark


def test_wall_clock_times_become_their_utc_instants_at_every_minute(spark: Any) -> None:
    from pyspark.sql import functions as F

    frame = spark.sql(
        "SELECT TIMESTAMP_NTZ'2026-11-20 23:59:59.123456' AS ts UNION ALL "
        "SELECT TIMESTAMP_NTZ'1969-12-31 23:59:59.5' UNION ALL "
        "SELECT TIMESTAMP_NTZ'2026-03-29 02:45:00'"
    )
    got = [r[0] for r in frame.select(F.unix_micros(_instant("ts"))).collect()]
    assert got == [1_795_219_199_123_456, -500_000, 1_774_752_300_000_000]
