"""Changelogs in Spark frames: the ``_rowkind`` column and turning a changelog into a table.

A changelog table's frame (a changelog value format such as ``debezium-json``, or an
``upsert-kafka`` table) carries each row's Flink row kind in :data:`ROW_KIND`: ``+I`` insert,
``-U`` update-before, ``+U`` update-after, ``-D`` delete. Flink keeps the table such a changelog
describes in state (its ChangelogNormalize / upsert materialization); a bounded run here gets the
changelog itself, and :func:`latest_per_key` folds it into that table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import KafkaOptionsError
from .options import RETRACTIONS, ROW_KIND, ROW_KINDS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def latest_per_key(
    frame: DataFrame, key_columns: str | Sequence[str], order_by: Sequence[str] = ()
) -> DataFrame:
    """The latest row of each key of a changelog: the table the changelog describes.

    Rows are taken in changelog order: by ``order_by`` when given (for example columns declared
    ``METADATA FROM 'partition'`` and ``METADATA FROM 'offset'``), then by the frame's row order,
    which is Kafka's (partition, offset) order for a run's frame and anything derived from it
    without a shuffle (select, filter, withColumn). The last row of each key is kept, and a key
    whose last row is a ``-D`` (or a ``-U`` without its ``+U``) is dropped. The result has the
    frame's columns without :data:`ROW_KIND`; a frame without it is all inserts (the last row
    of each key wins).

    Example:
        >>> products = latest_per_key(run.source("products"), ["id"])  # doctest: +SKIP

    Raises:
        KafkaOptionsError: a key or order column is not a column of the frame.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = [key_columns] if isinstance(key_columns, str) else list(key_columns)
    if not keys:
        raise KafkaOptionsError("latest_per_key needs at least one key column.")
    missing = [c for c in [*keys, *order_by] if c not in frame.columns]
    if missing:
        raise KafkaOptionsError(
            f"latest_per_key: {', '.join(repr(c) for c in missing)} not in the frame's columns "
            f"({', '.join(frame.columns)})."
        )
    sequence, rank = "__dkf_changelog_seq", "__dkf_changelog_rank"
    ordered = frame.withColumn(sequence, F.monotonically_increasing_id())
    order = [*(F.col(f"`{c}`").desc() for c in order_by), F.col(sequence).desc()]
    window = Window.partitionBy(*[F.col(f"`{k}`") for k in keys]).orderBy(*order)
    latest = ordered.withColumn(rank, F.row_number().over(window)).filter(F.col(rank) == 1)
    if ROW_KIND in frame.columns:
        kind = F.col(ROW_KIND)
        latest = latest.filter(kind.isNull() | ~kind.isin(*RETRACTIONS)).drop(ROW_KIND)
    return latest.drop(sequence, rank)


__all__ = ["RETRACTIONS", "ROW_KIND", "ROW_KINDS", "latest_per_key"]
