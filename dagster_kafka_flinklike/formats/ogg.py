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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column
from . import _changelog as cl
from .base import Fields, Options

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "ogg-json"
#: Metadata key → the envelope field holding it and that field's type.
_FIELDS = {
    "table": "STRING",
    "primary_keys": "ARRAY<STRING>",
    "op_type": "STRING",
    "pos": "STRING",
    "current_ts": "STRING",
    "op_ts": "STRING",
}


def _instant(text: SparkColumn) -> SparkColumn:
    """GoldenGate's timestamp text (``2020-05-13 15:40:06.000000``, UTC), or epoch millis."""
    from pyspark.sql import functions as F

    iso = F.concat(F.regexp_replace(text, "T", " "), F.lit("Z")).try_cast("timestamp")
    return F.when(text.rlike(r"^\d+$"), cl.epoch_millis(text)).otherwise(iso)


class GoldenGate(cl.JsonChangelogFormat):
    """The ``ogg-json`` format (see the module's docstring)."""

    name = NAME

    def envelope(
        self, columns: Sequence[Column], metadata: Sequence[str], options: Options
    ) -> list[Column]:
        """``before``, ``after``, ``op_type`` and the fields of the ``metadata`` keys."""
        row_t = cl.row_type(columns)
        envelope = [Column("before", row_t), Column("after", row_t), Column("op_type", "STRING")]
        return cl.with_fields(envelope, [(key, _FIELDS[key]) for key in metadata])

    def interpret(
        self,
        parsed: cl.EnvelopeParse,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
    ) -> tuple[Any, Any, Sequence[Any]]:
        """GoldenGate's ``op_type`` as changelog rows (see the module's docstring)."""
        struct = parsed.struct
        operations = cl.before_after(struct["before"], struct["after"], (("I",), "U", "D"))
        rows, error = cl.dispatch(struct["op_type"], "op_type", operations)
        values = [_instant(struct[k]) if k.endswith("_ts") else struct[k] for k in metadata]
        return rows, error, values

    def encode(
        self, fields: Fields, options: Options, kind: SparkColumn | None = None
    ) -> SparkColumn:
        """Each row as a GoldenGate operation: ``I`` with ``after`` for ``+I``/``+U`` (and rows
        without a kind), ``D`` with ``before`` for ``-U``/``-D``."""
        before, after, op, row_t = cl.images(fields, kind, "I", "D")
        envelope = [
            (before, Column("before", row_t)),
            (after, Column("after", row_t)),
            (op, Column("op_type", "STRING")),
        ]
        return cl.encode_envelope(NAME, envelope, options)


FORMAT = GoldenGate()

__all__ = ["FORMAT", "GoldenGate"]
