"""Offsets checkpoint format and the Java-compatible murmur2 partitioner."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import KafkaConnectorError, OffsetsCheckpoint
from dagster_kafka_flinklike.sink.partitioners import java_default_partition, murmur2


def test_checkpoint_round_trips_through_json() -> None:
    cp = OffsetsCheckpoint({"orders": {("orders", 0): 5, ("orders", 2): 9, ("b", 0): 1}})
    data = cp.to_json()
    assert data["version"] == 1
    assert data["sources"]["orders"]["orders"] == {"0": 5, "2": 9}
    assert OffsetsCheckpoint.from_json(data).offsets("orders") == cp.offsets("orders")
    assert OffsetsCheckpoint.from_json(data).offsets("missing") is None


def test_checkpoint_of_unknown_version_is_refused() -> None:
    with pytest.raises(KafkaConnectorError, match="version"):
        OffsetsCheckpoint.from_json({"version": 99, "sources": {}})


@pytest.mark.parametrize(
    ("key", "expected"),
    [  # vectors of the Java client's Utils.murmur2
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_java(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_java_default_partition_is_positive_modulo() -> None:
    assert java_default_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert {java_default_partition(str(i).encode(), 3) for i in range(100)} == {0, 1, 2}
