"""The ``ogg-json`` changelog format: Oracle GoldenGate's JSON operations, as Flink reads and
writes them.

Reading, ``op_type`` says what a record is: ``I`` yields ``+I`` of ``after``, ``U`` ``-U`` of
``before`` then ``+U`` of ``after``, ``D`` ``-D`` of ``before``. A missing image, a missing or
unknown ``op_type`` (``T``, truncate, included, as in Flink) is dirty. A null or empty value
yields no row.

Writing, as Flink writes: ``+I`` and ``+U`` rows become ``{"before": null, "after": row,
"op_type": "I"}``, ``-U`` and ``-D`` rows ``{"before": row, "after": null, "op_type": "D"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FormatSpec
from . import _changelog as cl

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "ogg-json"
CHANGELOG = True
#: Metadata key → the envelope field holding it and that field's type.
_FIELDS = {
    "table": "STRING",
    "primary_keys": "ARRAY<STRING>",
    "op_type": "STRING",
    "pos": "STRING",
    "current_ts": "STRING",
    "op_ts": "STRING",
}


def skipped(raw: SparkColumn, options: FormatSpec | Mapping[str, Any]) -> SparkColumn:
    """Tombstones (null or empty values) yield no row."""
    return cl.is_tombstone(raw)


def _instant(text: SparkColumn) -> SparkColumn:
    """GoldenGate's timestamp text (``2020-05-13 15:40:06.000000``, UTC), or epoch millis."""
    from pyspark.sql import functions as F

    iso = F.concat(F.regexp_replace(text, "T", " "), F.lit("Z")).try_cast("timestamp")
    return F.when(text.rlike(r"^\d+$"), cl.epoch_millis(text)).otherwise(iso)


def decode_changelog_stages(
    raw: SparkColumn,
    columns: Sequence[Column],
    metadata: Sequence[str],
    options: FormatSpec | Mapping[str, Any],
    prefix: str | None = None,
) -> tuple[list[dict[str, SparkColumn]], tuple[Any, Any, Any, Any]]:
    """Decode GoldenGate JSON into changelog rows of ``columns`` and the ``metadata`` keys."""
    row_t = cl.row_type(columns)
    envelope = [Column("before", row_t), Column("after", row_t), Column("op_type", "STRING")]
    for key in metadata:
        if all(c.name != key for c in envelope):
            envelope.append(Column(key, _FIELDS[key]))

    def interpret(struct: SparkColumn, text: SparkColumn, stage: Any) -> tuple[Any, Any, list]:
        operations = cl.before_after(struct["before"], struct["after"], (("I",), "U", "D"))
        rows, error = cl.dispatch(struct["op_type"], "op_type", operations)
        values = [_instant(struct[k]) if k.endswith("_ts") else struct[k] for k in metadata]
        return rows, error, values

    return cl.decode_envelope(NAME, raw, envelope, options, prefix, interpret)


def encode(
    fields: Sequence[tuple[SparkColumn, Column]],
    options: FormatSpec | Mapping[str, Any],
    kind: SparkColumn | None = None,
) -> SparkColumn:
    """Each row as a GoldenGate operation: ``I`` with ``after`` for ``+I``/``+U`` (and rows
    without a kind), ``D`` with ``before`` for ``-U``/``-D``."""
    return cl.encode_before_after(NAME, fields, options, kind, ("op_type", "I", "D"))


__all__ = ["CHANGELOG", "decode_changelog_stages", "encode", "skipped"]
