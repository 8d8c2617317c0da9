"""What the Dagster instance remembers of a Kafka asset: its last materialization's metadata,
the offsets checkpoint and inferred schemas recorded there, and the offset ranges of its
recently materialized time windows.

The run driver, the checks and the sensors read an asset's past through these functions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .run import metrics as m
from .run.schema import SCHEMA_METADATA_PREFIX
from .state.checkpoint import CHECKPOINT_METADATA_KEY, OffsetsCheckpoint

if TYPE_CHECKING:  # pragma: no cover
    from dagster import AssetKey, DagsterInstance

__all__ = [
    "checkpoint_of",
    "last_materialization_metadata",
    "latest_checkpoint",
    "metadata_value",
    "recorded_windows",
    "saved_schemas",
]


def metadata_value(entry: Any) -> Any:
    """The plain value of a metadata entry (Dagster's ``MetadataValue`` or a raw value)."""
    return getattr(entry, "value", entry)


def last_materialization_metadata(instance: DagsterInstance, key: AssetKey) -> dict[str, Any]:
    """Metadata of the asset's last materialization ({} before the first)."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return {}
    return dict(event.asset_materialization.metadata)


def checkpoint_of(metadata: Mapping[str, Any]) -> OffsetsCheckpoint | None:
    """The offsets checkpoint recorded in materialization ``metadata``, if any."""
    value = metadata.get(CHECKPOINT_METADATA_KEY)
    if value is None:
        return None
    return OffsetsCheckpoint.from_json(getattr(value, "data", value))


def latest_checkpoint(instance: DagsterInstance, key: AssetKey) -> OffsetsCheckpoint | None:
    """The offsets checkpoint of the asset's last successful materialization, if any."""
    return checkpoint_of(last_materialization_metadata(instance, key))


def saved_schemas(instance: DagsterInstance, key: AssetKey) -> dict[str, dict[str, str]]:
    """The inferred source schemas of the asset's last materialization, by source name."""
    return {
        name[len(SCHEMA_METADATA_PREFIX) :]: {c.name: c.type for c in value.schema.columns}
        for name, value in last_materialization_metadata(instance, key).items()
        if name.startswith(SCHEMA_METADATA_PREFIX) and hasattr(value, "schema")
    }


def recorded_windows(
    instance: DagsterInstance, key: AssetKey, limit: int
) -> dict[str, tuple[dict[str, list[int]], int]]:
    """Each recently materialized window's recorded offset ranges and late records (newest
    materialization of each partition, at most ``limit`` windows)."""
    from dagster import AssetRecordsFilter

    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key), limit=max(limit * 4, 50)
    ).records
    found: dict[str, tuple[dict[str, list[int]], int]] = {}
    for record in records:  # newest first
        materialization = record.asset_materialization
        if materialization is None or materialization.partition is None:
            continue
        if materialization.partition in found:
            continue
        value = materialization.metadata.get(m.WINDOWS)
        ranges: Any = getattr(value, "data", value) or {}
        window = ranges.get(materialization.partition)
        if window is not None:
            late = metadata_value(materialization.metadata.get(m.LATE_RECORDS.name, 0))
            found[materialization.partition] = (window, int(late or 0))
        if len(found) >= limit:
            break
    return found
