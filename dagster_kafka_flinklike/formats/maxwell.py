"""The ``maxwell-json`` changelog format: Maxwell's row events in JSON, as Flink reads and writes
them.

Reading, ``type`` says what a record is: ``insert`` yields ``+I`` of ``data``, ``delete`` ``-D``
of ``data``, ``update`` ``-U`` then ``+U``, the before image built from ``old`` (a field present
in it, even as null, had that value; any other was unchanged). A missing or unknown ``type``
(Maxwell's bootstrap and DDL events included, as in Flink), an event without ``data`` or an
update without ``old`` is dirty. A null or empty value yields no row.

Writing, as Flink writes: ``{"data": row, "type": "insert"}`` for ``+I`` and ``+U`` rows,
``"delete"`` for ``-U`` and ``-D`` rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column
from . import _changelog as cl
from .base import Fields, Options
from .json import TEXT_OPTIONS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "maxwell-json"
_NO_OLD = 'the "old" field of an update is missing'
#: Metadata key → the envelope field holding it and that field's type.
_FIELDS = {
    "database": ("database", "STRING"),
    "table": ("table", "STRING"),
    "primary-key-columns": ("primary_key_columns", "ARRAY<STRING>"),
    "ingestion-timestamp": ("ts", "BIGINT"),
}


class Maxwell(cl.JsonChangelogFormat):
    """The ``maxwell-json`` format (see the module's docstring)."""

    name = NAME

    def envelope(
        self, columns: Sequence[Column], metadata: Sequence[str], options: Options
    ) -> list[Column]:
        """``data``, ``old``, ``type`` and the fields of the ``metadata`` keys."""
        row_t = cl.row_type(columns)
        envelope = [Column("data", row_t), Column("old", row_t), Column("type", "STRING")]
        return cl.with_fields(envelope, [_FIELDS[key] for key in metadata])

    def interpret(
        self,
        parsed: cl.EnvelopeParse,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
    ) -> tuple[Any, Any, Sequence[Any]]:
        """Maxwell's ``type`` as changelog rows (see the module's docstring)."""
        from pyspark.sql import functions as F

        struct = parsed.struct
        data, old = struct["data"], struct["old"]
        # The fields 'old' names: parsed once, for updates only.
        old_json = F.from_json(parsed.text, "struct<old:string>", TEXT_OPTIONS)["old"]
        old_keys = parsed.stage(
            "old_keys", F.when(struct["type"] == "update", cl.object_keys(old_json))
        )
        before = cl.before_image(data, old, old_keys, columns)

        no_data = cl.missing(data, "data")
        rows, error = cl.dispatch(
            struct["type"],
            "type",
            {
                "insert": cl.Operation(F.array(cl.change("+I", data)), (no_data("an insert"),)),
                "update": cl.Operation(
                    F.array(cl.change("-U", before), cl.change("+U", data)),
                    (no_data("an update"), (old.isNull(), _NO_OLD)),
                ),
                "delete": cl.Operation(F.array(cl.change("-D", data)), (no_data("a delete"),)),
            },
        )
        values = []
        for key in metadata:
            value = struct[_FIELDS[key][0]]
            # Maxwell's ts is in seconds
            values.append(F.timestamp_seconds(value) if key == "ingestion-timestamp" else value)
        return rows, error, values

    def encode(
        self, fields: Fields, options: Options, kind: SparkColumn | None = None
    ) -> SparkColumn:
        """Each row as a Maxwell event: ``insert`` for ``+I``/``+U`` (and rows without a kind),
        ``delete`` for ``-U``/``-D``."""
        row, row_t = cl.row_struct(fields)
        envelope = [
            (row, Column("data", row_t)),
            (cl.written_op(kind, "insert", "delete"), Column("type", "STRING")),
        ]
        return cl.encode_envelope(NAME, envelope, options)


FORMAT = Maxwell()

__all__ = ["FORMAT", "Maxwell"]
