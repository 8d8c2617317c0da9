"""The dirty-data policy (Flink's dirty-data tolerance): fail, or skip, count and collect.

With errors not ignored (the default), one dirty record fails the run and nothing is written or
committed. With ``ingestion.ignore-errors`` (or a format's ``ignore-parse-errors``) dirty records
are skipped, sampled into the run's metadata and, with ``ingestion.dead-letter.topic``, written
there with their raw bytes; ``ingestion.error-tolerance.max-count`` bounds them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import DeserializationError
from ..source.records import ERROR, PROVENANCE
from .decode import DecodedTable
from .tables import ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: Dirty records sampled into the run's metadata, per source.
DIRTY_SAMPLES = 5
#: Bytes of a dirty record's value shown in a sample.
SAMPLE_BYTES = 200
#: Headers of a dead-letter record: where it came from and why it was skipped.
DEAD_LETTER_HEADERS = ("source.topic", "source.partition", "source.offset", "error")


@dataclass(frozen=True)
class DirtyData:
    """The dirty records of one source in one run, after the policy let the run go on.

    Example:
        >>> DirtyData("orders", records=100, dirty=0).ratio
        0.0
    """

    source: str
    records: int
    dirty: int
    samples: tuple[dict[str, Any], ...] = ()
    #: The dead-letter topic they go to, if the table names one.
    dead_letter_topic: str | None = None
    #: ``ingestion.error-tolerance.max-count`` of the table (-1: no limit).
    max_count: int = -1
    dead_letters: DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def ratio(self) -> float:
        """Dirty records as a share of the records read (0.0 when none was read)."""
        return self.dirty / self.records if self.records else 0.0


def _samples(rows: DataFrame) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "topic": r["__dkf_topic"],
            "partition": r["__dkf_partition"],
            "offset": r["__dkf_offset"],
            "error": r[ERROR],
            "value": (r["__dkf_value"] or b"")[:SAMPLE_BYTES].decode("utf-8", "replace"),
        }
        for r in rows.select(ERROR, *PROVENANCE).limit(DIRTY_SAMPLES).collect()
    )


#: What a run failed by the dirty-data policy leaves, before it wrote anything.
NOTHING_WRITTEN = "Nothing was written and the checkpoint did not advance."


def apply_dirty_policy(
    table: ResolvedTable,
    decoded: DecodedTable,
    log: logging.Logger | Any,
    outcome: str = NOTHING_WRITTEN,
) -> DirtyData:
    """Fail on dirty records the table does not tolerate; else skip, count and collect them.

    Records a format tolerates (its ``ignore-parse-errors``) never fail the run;
    ``ingestion.error-tolerance.max-count`` bounds every skipped record.

    Raises:
        DeserializationError: naming the first dirty record's topic, partition and offset,
            then ``outcome`` (what the failed run leaves).
    """
    stats, spec = decoded.stats, table.spec
    base = DirtyData(
        table.name,
        stats.records,
        stats.dirty,
        dead_letter_topic=spec.dead_letter_topic,
        max_count=spec.error_tolerance_max_count,
    )
    if not stats.dirty:
        return base
    rows = decoded.dirty_rows
    samples = _samples(rows)
    first = samples[0]
    where = f"{first['topic']}-{first['partition']}@{first['offset']}"
    limit = spec.error_tolerance_max_count
    reason = None
    if stats.strict and not spec.ignore_errors:
        reason = (
            f"could not be decoded (first at {where}: {first['error']}); set "
            f"'ingestion.ignore-errors' = 'true' to skip and collect them"
        )
    elif limit >= 0 and stats.dirty > limit:
        reason = f"exceed 'ingestion.error-tolerance.max-count' = {limit} (first at {where})"
    if reason is not None:
        raise DeserializationError(
            f"{stats.dirty} dirty record(s) of source {table.name!r} {reason}. {outcome}",
            topic=first["topic"],
            partition=first["partition"],
            offset=first["offset"],
        )
    log.warning(
        f"Skipped {stats.dirty} dirty record(s) of source {table.name!r}; samples: {list(samples)}"
    )
    letters = dead_letter_records(rows) if spec.dead_letter_topic else None
    return DirtyData(
        table.name,
        stats.records,
        stats.dirty,
        samples,
        dead_letter_topic=spec.dead_letter_topic,
        max_count=limit,
        dead_letters=letters,
    )


def dead_letter_records(dirty: DataFrame) -> DataFrame:
    """Dirty rows as Kafka records: raw key and value, provenance and error in headers."""
    from pyspark.sql import functions as F

    def header(name: str, value: Any) -> Any:
        return F.struct(
            F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value")
        )

    sources = ("__dkf_topic", "__dkf_partition", "__dkf_offset", ERROR)
    return dirty.select(
        F.col("__dkf_key").alias("key"),
        F.col("__dkf_value").alias("value"),
        F.array(
            *[header(h, F.col(c)) for h, c in zip(DEAD_LETTER_HEADERS, sources, strict=True)]
        ).alias("headers"),
    )
