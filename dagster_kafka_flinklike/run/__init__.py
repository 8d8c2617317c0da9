"""The materialization cycle, phase by phase: plan → read → decode → write → commit.

Each table is resolved once per run (:func:`resolve_table`); :class:`StreamingRun` strings the
phases for the streaming asset and the IO manager; sensors and checks use the planning functions
and the metric names (:mod:`.metrics`) without reading data. Nothing here needs Dagster.
"""

from . import metrics
from .commit import commit_group_offsets, next_checkpoint
from .cycle import SourceRead, StreamingRun, write_metrics
from .decode import DecodedTable, InputStats, WindowCounts, decode_table
from .dirty import DEAD_LETTER_HEADERS, DirtyData, apply_dirty_policy, dead_letter_records
from .metrics import METRICS, Metric, metric
from .plan import (
    check_group_is_free,
    pending_records,
    plan_table,
    previous_offsets,
    subscribed_partitions,
)
from .read import read_table
from .tables import KafkaClients, ResolvedTable, merge_properties, resolve_table
from .windows import TimeWindow, TimeWindows
from .write import is_exactly_once, open_transaction, write_dead_letters, write_table

__all__ = [
    "DEAD_LETTER_HEADERS",
    "METRICS",
    "DecodedTable",
    "DirtyData",
    "InputStats",
    "KafkaClients",
    "Metric",
    "ResolvedTable",
    "SourceRead",
    "StreamingRun",
    "TimeWindow",
    "TimeWindows",
    "WindowCounts",
    "apply_dirty_policy",
    "check_group_is_free",
    "commit_group_offsets",
    "dead_letter_records",
    "decode_table",
    "is_exactly_once",
    "merge_properties",
    "metric",
    "metrics",
    "next_checkpoint",
    "open_transaction",
    "pending_records",
    "plan_table",
    "previous_offsets",
    "read_table",
    "resolve_table",
    "subscribed_partitions",
    "write_dead_letters",
    "write_metrics",
    "write_table",
]
