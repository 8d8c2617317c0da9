"""Sink partitioners (``sink.partitioner``): which Kafka partition each record goes to.

``default`` places keyed records where the Java client (and so Flink) would — murmur2 of the key
bytes — and spreads null keys; ``fixed`` sends all records of a Spark task to one partition
(task index modulo the partition count, as Flink's ``FlinkFixedPartitioner``); ``round-robin``
cycles a task's records over all partitions; a dotted class path names a user
:class:`KafkaPartitioner`.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import KafkaOptionsError
from ..options import BUILT_IN_PARTITIONERS as BUILT_IN
from ..options import load_partitioner

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_OPTION = "sink.partitioner"

#: librdkafka's partitioner that equals the Java client's for keyed records (random for null).
LIBRDKAFKA_DEFAULT = "murmur2_random"

#: Partition value that lets the producer's own partitioner (:data:`LIBRDKAFKA_DEFAULT`) choose.
UNASSIGNED = -1


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


class KafkaPartitioner(ABC):
    """A user partitioner for ``sink.partitioner`` = ``'my.module.MyPartitioner'``.

    The Python counterpart of Flink's ``FlinkKafkaPartitioner``: one instance per writing Spark
    task, built with no arguments, opened once, then asked for every record's partition. The
    class must be importable where the Spark tasks run. Subclassing is optional: any class with
    these methods will do (``open`` may be left out).

    Example:
        >>> class ByValueParity(KafkaPartitioner):
        ...     def partition(self, key, value, partitions):
        ...         return partitions[len(value or b"") % 2 % len(partitions)]
        >>> ByValueParity().partition(None, b"ab", [0, 1, 2])
        0
    """

    def open(self, task_index: int, num_tasks: int) -> None:  # noqa: B027 - optional hook
        """Called once per task before any record: the task's index and the number of tasks."""

    @abstractmethod
    def partition(self, key: bytes | None, value: bytes | None, partitions: Sequence[int]) -> int:
        """The partition of one record: one of ``partitions`` (the topic's, ascending)."""


@dataclass(frozen=True)
class SinkPartitioner:
    """The ``sink.partitioner`` of one write, resolved on the driver and shipped to every task.

    ``partitions`` are the topic's partition ids, ascending (empty for ``default``, which needs
    no lookup); ``custom`` is the user class for a class path. :meth:`open` gives each task its
    :class:`TaskPartitioner`.

    Example:
        >>> p = SinkPartitioner.resolve("fixed", "orders", [0, 1, 2])
        >>> p.open(task_index=4, num_tasks=5).assign([b"k"], [b"v"])
        1
    """

    name: str
    topic: str
    partitions: tuple[int, ...] = ()
    custom: type | None = None

    @classmethod
    def resolve(
        cls,
        option: str,
        topic: str,
        partitions: Iterable[int] = (),
        custom: type | None = None,
    ) -> SinkPartitioner:
        """The partitioner named by the option value ``option`` for ``topic``'s ``partitions``.

        ``custom`` is the class a class path names when the caller has loaded it already (the
        table spec keeps it, loaded once when the table was declared).

        Raises:
            KafkaOptionsError: a class path that :func:`load_partitioner` rejects, or a
                partitioner other than ``default`` without the topic's partitions.
        """
        name = option.strip()
        if name in BUILT_IN:
            custom = None
        elif custom is None:
            custom = load_partitioner(name)
        ordered = tuple(sorted(partitions))
        if name != "default" and not ordered:
            raise KafkaOptionsError(
                f"'sink.partitioner' = {name!r} needs the partitions of topic {topic!r}, "
                f"but none are known.",
                keys=(_OPTION,),
            )
        return cls(name=name, topic=topic, partitions=ordered, custom=custom)

    def open(self, task_index: int, num_tasks: int) -> TaskPartitioner:
        """The partitioner of one writing task (for a user class: a new, opened instance)."""
        instance = None
        if self.custom is not None:
            instance = self.custom()
            opener = getattr(instance, "open", None)
            if opener is not None:
                opener(task_index, num_tasks)
        return TaskPartitioner(self, task_index, instance)


class TaskPartitioner:
    """Partitions of one task's records, a batch at a time (built by :meth:`SinkPartitioner.open`).

    :meth:`assign` answers an int for a whole batch (one partition, or :data:`UNASSIGNED` to let
    the producer hash the key) or an iterable with one partition per record.
    """

    def __init__(self, spec: SinkPartitioner, task_index: int, instance: object | None) -> None:
        self.spec = spec
        self.task_index = task_index
        self._instance = instance
        parts = spec.partitions
        self._constant: int | None = None
        self._cycle: Iterator[int] | None = None
        if spec.name == "default":
            self._constant = UNASSIGNED
        elif spec.name == "fixed":
            self._constant = parts[task_index % len(parts)]
        elif spec.name == "round-robin":
            start = task_index % len(parts)
            self._cycle = itertools.cycle(parts[start:] + parts[:start])
        self._allowed = frozenset(parts)

    def assign(
        self, keys: Sequence[bytes | None], values: Sequence[bytes | None]
    ) -> int | Iterable[int]:
        """Partition(s) of a batch of records given as parallel ``keys`` and ``values`` lists.

        A round-robin answer is an endless iterator: zip it after the batch's own columns.

        Raises:
            KafkaOptionsError: a user partitioner returned a partition the topic does not have.
        """
        if self._constant is not None:
            return self._constant
        if self._cycle is not None:
            return self._cycle
        partition = self._instance.partition  # type: ignore[union-attr]
        parts = self.spec.partitions
        chosen = [partition(k, v, parts) for k, v in zip(keys, values, strict=True)]
        if not self._allowed.issuperset(chosen):
            bad = next(p for p in chosen if p not in self._allowed)
            raise KafkaOptionsError(
                f"Partitioner {self.spec.name} ('sink.partitioner') returned partition {bad!r}, "
                f"but topic {self.spec.topic!r} has partitions {list(parts)}.",
                keys=(_OPTION,),
            )
        return chosen
