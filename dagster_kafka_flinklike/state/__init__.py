"""Offsets checkpoint state."""

from .checkpoint import CHECKPOINT_METADATA_KEY, OffsetsCheckpoint

__all__ = ["CHECKPOINT_METADATA_KEY", "OffsetsCheckpoint"]
