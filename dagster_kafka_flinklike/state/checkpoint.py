"""The offsets checkpoint: where each source of an asset resumes, recorded by a successful run.

A checkpoint is versioned JSON kept in the materialization's metadata (key
:data:`CHECKPOINT_METADATA_KEY`); a failed run records nothing, so the next run starts where the
last successful one stopped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaConnectorError
from ..source.offsets import TopicPartition

CHECKPOINT_METADATA_KEY = "kafka_checkpoint"
CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class OffsetsCheckpoint:
    """Next offset to read per source table, topic and partition.

    Example:
        >>> cp = OffsetsCheckpoint({"orders": {("orders", 0): 42}})
        >>> OffsetsCheckpoint.from_json(cp.to_json()).offsets("orders")
        {('orders', 0): 42}
    """

    sources: Mapping[str, Mapping[TopicPartition, int]] = field(default_factory=dict)

    def offsets(self, source: str) -> dict[TopicPartition, int] | None:
        """The checkpointed offsets of ``source``, or None when it has none."""
        found = self.sources.get(source)
        return dict(found) if found is not None else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable, versioned form."""
        return {
            "version": CHECKPOINT_VERSION,
            "sources": {
                name: {
                    topic: {str(p): o for (t, p), o in sorted(offs.items()) if t == topic}
                    for topic in sorted({t for t, _ in offs})
                }
                for name, offs in self.sources.items()
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> OffsetsCheckpoint:
        """Parse :meth:`to_json` output (a dict or its JSON text)."""
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict) or data.get("version") != CHECKPOINT_VERSION:
            raise KafkaConnectorError(
                f"Unsupported offsets checkpoint (expected version {CHECKPOINT_VERSION}): "
                f"{str(data)[:200]}"
            )
        sources: dict[str, dict[TopicPartition, int]] = {}
        for name, topics in data["sources"].items():
            sources[name] = {
                (topic, int(p)): int(o) for topic, parts in topics.items() for p, o in parts.items()
            }
        return cls(sources)
