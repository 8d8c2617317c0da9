"""The run's metrics, declared once under Flink's metric names (as the option table declares
options): the asset, the IO manager, the checks and the sensors all read names from here.

Numbers go into materialization (or observation) metadata under these names, so the Dagster UI
plots each across runs; per-partition figures go under :data:`OFFSETS` as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Metric:
    """One metric: its Flink name, unit and meaning.

    Example:
        >>> NUM_RECORDS_IN.name, NUM_RECORDS_IN.unit
        ('numRecordsIn', 'records')
    """

    name: str
    unit: str
    description: str
    #: ``run`` (one number per run), ``write`` (what a write did), ``transaction`` (exactly-once
    #: sinks only), ``partition`` (per topic-partition, under ``offsets``) or ``tick`` (sensor
    #: observations).
    scope: str = "run"


_DECLARED: list[Metric] = []


def _metric(name: str, unit: str, description: str, scope: str = "run") -> Metric:
    declared = Metric(name, unit, description, scope)
    _DECLARED.append(declared)
    return declared


NUM_RECORDS_IN = _metric(
    "numRecordsIn",
    "records",
    "Records read from the sources in this run; for a time window, its own records (those of "
    "its timestamps that arrived in time).",
)
NUM_BYTES_IN = _metric("numBytesIn", "bytes", "Value bytes read from the sources in this run.")
NUM_RECORDS_IN_PER_SECOND = _metric(
    "numRecordsInPerSecond", "records/s", "Records read per second of the run."
)
NUM_RECORDS_IN_ERRORS = _metric(
    "numRecordsInErrors", "records", "Records that could not be decoded (dirty data)."
)
DIRTY_RECORDS = _metric(
    "dirtyRecords", "records", "Records that could not be decoded (the dirty-data check's count)."
)
DIRTY_RATIO = _metric(
    "dirtyRatio", "ratio", "Dirty records as a share of the records read (0 when none was read)."
)
DURATION = _metric("duration_s", "s", "Wall time of the run's Kafka work.")
CURRENT_EMIT_EVENT_TIME_LAG = _metric(
    "currentEmitEventTimeLag", "ms", "Now minus the timestamp of the newest record read."
)
PENDING_RECORDS = _metric(
    "pendingRecords",
    "records",
    "Records in the sources beyond the run's stop offsets (end of log minus stop), in all "
    "partitions; per partition under 'offsets'.",
)
CURRENT_WATERMARK = _metric(
    "currentWatermark",
    "ms",
    "Stateful runs: the event-time watermark after the run (epoch ms, Flink's: the newest event "
    "time read minus the WATERMARK delay); windows ending at or before it have been emitted.",
)
NUM_LATE_RECORDS_DROPPED = _metric(
    "numLateRecordsDropped",
    "rows",
    "Stateful runs: rows dropped because the watermark had passed their window when they came.",
)
STATE_ROWS = _metric(
    "stateRows", "rows", "Stateful runs: rows of state (open windows) kept after the run."
)
STATE_BYTES = _metric("stateBytes", "bytes", "Stateful runs: memory the state held after the run.")
MICRO_BATCHES = _metric(
    "microBatches", "batches", "Stateful runs: the Structured Streaming micro-batches run."
)
NUM_RECORDS_OUT = _metric("numRecordsOut", "records", "Records written to the sink topic.", "write")
NUM_BYTES_OUT = _metric("numBytesOut", "bytes", "Key and value bytes written to the sink.", "write")
NUM_RECORDS_OUT_PER_SECOND = _metric(
    "numRecordsOutPerSecond", "records/s", "Records written per second of the run.", "write"
)
CURRENT_SEND_TIME = _metric(
    "currentSendTime", "ms", "Time the slowest writer spent sending.", "write"
)
NUM_RECORDS_OUT_ERRORS = _metric(
    "numRecordsOutErrors", "records", "Records not delivered ('none' guarantee only).", "write"
)
TRANSACTIONAL_ID = _metric(
    "transactionalId", "id", "The sink's stable transactional.id.", "transaction"
)
PRODUCER_ID = _metric("producerId", "id", "The transactional producer's id.", "transaction")
PRODUCER_EPOCH = _metric(
    "producerEpoch", "epoch", "The producer's epoch (bumped by every run).", "transaction"
)
TRANSACTION_DURATION = _metric(
    "transactionDurationMs",
    "ms",
    "From begin to commit of the run's transaction (the transaction-timeout check's figure).",
    "transaction",
)
TRANSACTION_TIMEOUT = _metric(
    "transactionTimeoutMs",
    "ms",
    "The producer's transaction.timeout.ms in this run.",
    "transaction",
)
COMMIT_ATTEMPTS = _metric(
    "commitAttempts",
    "attempts",
    "commit_transaction calls until the commit went through.",
    "transaction",
)
START_OFFSET = _metric("start", "offset", "First offset the run read.", "partition")
END_OFFSET = _metric("end", "offset", "Stop offset (exclusive) the run read to.", "partition")
CURRENT_OFFSET = _metric(
    "currentOffset",
    "offset",
    "Where the source resumes next run (Flink's currentOffset).",
    "partition",
)
COMMITTED_OFFSET = _metric(
    "committedOffset",
    "offset",
    "The consumer group's committed offset after the run.",
    "partition",
)
PARTITION_PENDING = _metric(
    "pendingRecords", "records", "End of log minus currentOffset.", "partition"
)
OLDEST_PENDING_AGE = _metric(
    "oldestPendingAgeMs",
    "ms",
    "How long records have been pending beyond the checkpoint (sensor: since the tick that "
    "first saw them).",
    "tick",
)
WINDOW_START = _metric("windowStart", "epoch ms", "Start of the time window (inclusive).", "window")
WINDOW_END = _metric("windowEnd", "epoch ms", "End of the time window (exclusive).", "window")
WINDOW_STATE = _metric(
    "windowState",
    "state",
    "'complete'; 'open' (not over yet, or within the allowed lateness: read up to the end of "
    "the log at planning time); or 'future' (nothing to read yet).",
    "window",
)
LATE_RECORDS = _metric(
    "lateRecords",
    "records",
    "Records that arrived while the window was being read (after the previous window's stop "
    "offset) with timestamps of an earlier window, after that window's allowed lateness: in no "
    "window. Each late record is counted once, whatever the runs.",
    "window",
)
PARTITIONS = _metric(
    "partitions", "partitions", "Topic-partitions the table subscribes to.", "tick"
)

#: Every metric, in the order they are declared.
METRICS: tuple[Metric, ...] = tuple(_DECLARED)

#: Metadata key of the per-partition figures (JSON, keyed ``<source>/<topic>-<partition>``).
OFFSETS = "offsets"
#: Metadata key of samples of the run's dirty records (JSON).
DIRTY_SAMPLES = "dirtySamples"
#: Metadata key of the offset ranges of each time window a run covered (JSON: window key →
#: ``<source>/<topic>-<partition>`` → ``[start, stop)``); the late-data check compares them.
WINDOWS = "windows"
#: Metadata key of why a window may be incomplete (retention, offset resets).
WINDOW_NOTES = "windowNotes"
#: Metadata key, on each window's materialization by a run over several time windows (a
#: single-run backfill), of that run's own figures (JSON: its first and last partition keys and
#: their count, its totals, what it wrote, its duration), recorded once for all its windows
#: instead of as each window's.
RUN = "run"

#: The metrics a write records (the transaction's only under exactly-once).
OUTPUT_METRICS: tuple[Metric, ...] = tuple(
    x for x in METRICS if x.scope in ("write", "transaction")
)


def metric(name: str, scope: str = "run") -> Metric:
    """The declared metric ``name`` (of ``scope``).

    Example:
        >>> metric("pendingRecords").unit
        'records'

    Raises:
        KeyError: no metric of that name and scope is declared.
    """
    for m in METRICS:
        if m.name == name and (m.scope == scope or (scope == "run" and m.scope != "partition")):
            return m
    raise KeyError(f"No metric {name!r} of scope {scope!r} is declared.")


#: Where :func:`render_metrics_reference` is kept in the repository.
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
_SCOPES = {
    "run": "Per run (materialization metadata; the UI plots them across runs)",
    "write": "Per write (materialization or output metadata)",
    "transaction": "Per transaction (exactly-once sinks)",
    "partition": "Per topic-partition (JSON under `offsets`, keyed `<source>/<topic>-<partition>`)",
    "window": "Per time window (time-partitioned assets: each partition's own, also in a backfill)",
    "tick": "Per sensor tick (observations of the asset)",
}


def render_metrics_reference() -> str:
    """The metrics reference page (``docs/metrics.md``), generated from :data:`METRICS`.

    Example:
        >>> render_metrics_reference().startswith("# Metrics")
        True
    """
    lines = [
        "# Metrics",
        "",
        "<!-- Generated by `python -m dagster_kafka_flinklike.run` from",
        "dagster_kafka_flinklike/run/metrics.py; edit that, not this page. A unit test fails when",
        "it is stale. -->",
        "",
        "Runs, checks and sensors record these figures under Flink's metric names, declared once",
        "in `dagster_kafka_flinklike.run.metrics`.",
    ]
    for scope, title in _SCOPES.items():
        lines += ["", f"## {title}", "", "| name | unit | meaning |", "|---|---|---|"]
        lines += [
            f"| `{x.name}` | {x.unit} | {x.description} |" for x in METRICS if x.scope == scope
        ]
    return "\n".join(lines) + "\n"


def write_metrics_reference(path: Path = DOC_PATH) -> Path:
    """Write the metrics reference page (``docs/metrics.md`` by default); return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_metrics_reference(), encoding="utf-8")
    return path
