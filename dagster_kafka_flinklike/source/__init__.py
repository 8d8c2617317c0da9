"""The Kafka source: offsets initializers, planning (enumerator), reading and record decoding."""

from .enumerator import KafkaSplit, SourcePlan, plan_source, split_ranges
from .offsets import OffsetResetStrategy, OffsetsInitializer

__all__ = [
    "KafkaSplit",
    "OffsetResetStrategy",
    "OffsetsInitializer",
    "SourcePlan",
    "plan_source",
    "split_ranges",
]
