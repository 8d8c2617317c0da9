"""Offsets initializers: where a partition starts or stops, as Flink's ``OffsetsInitializer``.

One small strategy per mode, built with Flink's factory names (``earliest()``, ``latest()``,
``committed_offsets(reset)``, ``timestamp(ms)``, ``offsets(map)``). Strategies ask an
:class:`OffsetsRetriever` for broker facts, so they are tested against a fake one without Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from ..errors import OffsetsError

#: A topic and a partition of it: what Kafka assigns, offsets belong to and checkpoints record.
TopicPartition = tuple[str, int]

_START_HINT = (
    "set 'properties.auto.offset.reset' to 'earliest' or 'latest', or choose another "
    "'scan.startup.mode'"
)


class OffsetResetStrategy(StrEnum):
    """``properties.auto.offset.reset``: what a partition without a usable offset does."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


class OffsetsRetriever(Protocol):
    """Broker facts an initializer needs; implemented over confluent-kafka's AdminClient.

    ``group_id`` is the consumer group whose committed offsets are read (None when unset).
    """

    group_id: str | None

    def committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets; partitions without one are absent."""
        ...

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        ...

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The end of each partition: the last stable offset under read_committed."""
        ...

    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The high watermark of each partition, whatever the isolation level."""
        ...

    def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        """The first offset whose timestamp is >= ``timestamp_ms`` (the end when none is)."""
        ...


def describe_partitions(partitions: Sequence[TopicPartition], limit: int = 10) -> str:
    """``topic-partition`` names for messages, the first ``limit`` of them."""
    names = ", ".join(f"{t}-{p}" for t, p in partitions[:limit])
    more = len(partitions) - limit
    return f"{names} (and {more} more)" if more > 0 else names


class OffsetsInitializer:
    """Decides an offset for each partition.

    Example:
        >>> OffsetsInitializer.committed_offsets(OffsetResetStrategy.EARLIEST)
        CommittedOffsetsInitializer(reset=<OffsetResetStrategy.EARLIEST: 'earliest'>)
    """

    def get_offsets(
        self, partitions: Sequence[TopicPartition], retriever: OffsetsRetriever
    ) -> dict[TopicPartition, int]:
        """The offset of every partition in ``partitions``."""
        raise NotImplementedError

    @staticmethod
    def earliest() -> OffsetsInitializer:
        """The log start of each partition."""
        return EarliestOffsetsInitializer()

    @staticmethod
    def latest() -> OffsetsInitializer:
        """The end of each partition at planning time."""
        return LatestOffsetsInitializer()

    @staticmethod
    def committed_offsets(
        reset: OffsetResetStrategy = OffsetResetStrategy.NONE, *, hint: str = _START_HINT
    ) -> OffsetsInitializer:
        """The consumer group's committed offsets, ``reset`` where there is none.

        ``hint`` ends the error raised when a partition has no committed offset and ``reset`` is
        ``NONE``: what the user can change.
        """
        return CommittedOffsetsInitializer(reset, hint)

    @staticmethod
    def timestamp(timestamp_ms: int) -> OffsetsInitializer:
        """The first record at or after ``timestamp_ms``; the end where none is."""
        return TimestampOffsetsInitializer(timestamp_ms)

    @staticmethod
    def offsets(
        offsets: Mapping[TopicPartition, int],
        fallback: OffsetsInitializer | None = None,
    ) -> OffsetsInitializer:
        """Explicit offsets; partitions not listed use ``fallback``.

        The default fallback is Flink's: the committed offset, else the log start.
        """
        return SpecificOffsetsInitializer(
            dict(offsets), fallback or CommittedOffsetsInitializer(OffsetResetStrategy.EARLIEST)
        )


@dataclass(frozen=True, repr=True)
class EarliestOffsetsInitializer(OffsetsInitializer):
    """Start (or stop) at the log start offset."""

    def get_offsets(self, partitions, retriever):  # type: ignore[no-untyped-def]
        return retriever.beginning_offsets(partitions) if partitions else {}


@dataclass(frozen=True, repr=True)
class LatestOffsetsInitializer(OffsetsInitializer):
    """Start (or stop) at the end of the log at planning time."""

    def get_offsets(self, partitions, retriever):  # type: ignore[no-untyped-def]
        return retriever.end_offsets(partitions) if partitions else {}


@dataclass(frozen=True, repr=True)
class CommittedOffsetsInitializer(OffsetsInitializer):
    """The group's committed offsets; the reset strategy for partitions without one."""

    reset: OffsetResetStrategy = OffsetResetStrategy.NONE
    hint: str = field(default=_START_HINT, repr=False, compare=False)

    def get_offsets(self, partitions, retriever):  # type: ignore[no-untyped-def]
        if not partitions:
            return {}
        result = dict(retriever.committed_offsets(partitions))
        missing = [tp for tp in partitions if tp not in result]
        if missing and self.reset == OffsetResetStrategy.NONE:
            group = getattr(retriever, "group_id", None)
            raise OffsetsError(
                f"Consumer group {group!r} has no committed offset for partition(s) "
                f"{describe_partitions(missing)} and no reset strategy is set: {self.hint}."
            )
        if missing:
            fill = (
                retriever.beginning_offsets(missing)
                if self.reset == OffsetResetStrategy.EARLIEST
                else retriever.end_offsets(missing)
            )
            result.update(fill)
        return {tp: result[tp] for tp in partitions}


@dataclass(frozen=True, repr=True)
class TimestampOffsetsInitializer(OffsetsInitializer):
    """The first offset whose record timestamp is >= the given epoch milliseconds."""

    timestamp_ms: int

    def get_offsets(self, partitions, retriever):  # type: ignore[no-untyped-def]
        return retriever.offsets_for_times(partitions, self.timestamp_ms) if partitions else {}


@dataclass(frozen=True, repr=True)
class SpecificOffsetsInitializer(OffsetsInitializer):
    """Explicit offsets per partition; the rest from the fallback initializer."""

    specific: dict[TopicPartition, int]
    fallback: OffsetsInitializer

    def get_offsets(self, partitions, retriever):  # type: ignore[no-untyped-def]
        result = {tp: self.specific[tp] for tp in partitions if tp in self.specific}
        rest = [tp for tp in partitions if tp not in result]
        if rest:
            result.update(self.fallback.get_offsets(rest, retriever))
        return result
