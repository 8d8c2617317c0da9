"""Sink partitioners: where a record goes, matching the Java client (and so Flink) for keys."""

from __future__ import annotations

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(key: bytes) -> int:
    """Kafka's murmur2 hash of ``key`` as a signed 32-bit int, exactly as Java's ``Utils.murmur2``.

    Example:
        >>> murmur2(b"21")
        -973932308
    """
    length = len(key)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = key[i] | (key[i + 1] << 8) | (key[i + 2] << 16) | (key[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= key[n4 + 2] << 16
    if rest >= 2:
        h ^= key[n4 + 1] << 8
    if rest >= 1:
        h ^= key[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_default_partition(key: bytes, num_partitions: int) -> int:
    """The partition the Java producer's default partitioner picks for a keyed record.

    Example:
        >>> java_default_partition(b"webShop", 3) in range(3)
        True
    """
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


#: librdkafka's partitioner that equals the Java client's for keyed records (random for null).
LIBRDKAFKA_DEFAULT = "murmur2_random"
