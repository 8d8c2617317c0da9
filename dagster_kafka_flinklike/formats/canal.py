"""The ``canal-json`` changelog format: Alibaba Canal's row events in JSON, as Flink reads and
writes them.

Reading, ``type`` says what a record is and ``data`` holds its rows (an array: one record may
carry many): ``INSERT`` yields ``+I`` of each row, ``DELETE`` ``-D`` of each, ``UPDATE`` ``-U``
then ``+U`` for each row, the before image built from ``old`` (same position; a field present
in it, even as null, had that value, any other was unchanged). ``CREATE`` (a DDL event) yields
no row. A missing or unknown ``type``, a row event without ``data``, an update without an
``old`` row for each ``data`` row is dirty. ``database.include`` / ``table.include`` keep only
the records whose ``database`` / ``table`` match in full (Java regular expressions, as Spark
evaluates them); the others yield no row and are not decoded. A null or empty value yields no
row.

Writing, as Flink writes: one record per row, ``{"data": [row], "type": "INSERT"}`` for ``+I``
and ``+U`` rows, ``"DELETE"`` for ``-U`` and ``-D`` rows. The event's fields
(:func:`change_event`) are built here for every writer of Canal events: this format and the
data-ingestion sink (which writes Flink CDC's events: ``UPDATE`` with ``old``, and the
``database``, ``table`` and ``pkNames`` fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column
from . import _changelog as cl
from .base import Fields, Options, format_settings
from .json import TEXT_OPTIONS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "canal-json"
#: Metadata key → the envelope field holding it and that field's type.
_FIELDS = {
    "database": ("database", "STRING"),
    "table": ("table", "STRING"),
    "sql-type": ("sqlType", "MAP<STRING, INT>"),
    "pk-names": ("pkNames", "ARRAY<STRING>"),
    "ingestion-timestamp": ("ts", "BIGINT"),
    "event-timestamp": ("es", "BIGINT"),
}
_FEWER_OLD = 'the "old" field of an UPDATE has fewer rows than "data"'
_FILTERS = (("database.include", "database"), ("table.include", "table"))


def _filters(options: Options) -> list[tuple[str, str, str]]:
    """(option, envelope field, full-match pattern) of each include filter that is set."""
    own = format_settings(NAME, options)
    return [(o, f, f"^(?:{own[o]})$") for o, f in _FILTERS if own.get(o) is not None]


def change_event(
    data: SparkColumn,
    kind: SparkColumn,
    row_type: str,
    *,
    old: SparkColumn | None = None,
    database: SparkColumn | None = None,
    table: SparkColumn | None = None,
    pk_names: SparkColumn | None = None,
) -> list[tuple[SparkColumn, Column]]:
    """The fields of a Canal event, in Canal's order: ``old`` (when given), ``data`` (arrays of
    rows of Flink ROW type ``row_type``), ``type`` (``kind``) and, when given, ``database``,
    ``table`` and ``pkNames``.

    Example:
        >>> change_event(F.array(F.col("row")), F.lit("INSERT"), "ROW<`id` INT>")  # doctest: +SKIP
    """
    rows_t = f"ARRAY<{row_type}>"
    fields = [] if old is None else [(old, Column("old", rows_t))]
    fields += [(data, Column("data", rows_t)), (kind, Column("type", "STRING"))]
    for value, name, type_ in (
        (database, "database", "STRING"),
        (table, "table", "STRING"),
        (pk_names, "pkNames", "ARRAY<STRING>"),
    ):
        if value is not None:
            fields.append((value, Column(name, type_)))
    return fields


class Canal(cl.JsonChangelogFormat):
    """The ``canal-json`` format (see the module's docstring)."""

    name = NAME

    def skipped(self, raw: SparkColumn, options: Options) -> SparkColumn:
        """Tombstones, and records whose ``database`` / ``table`` the include filters leave out."""
        from pyspark.sql import functions as F

        out = cl.is_tombstone(raw)
        text = raw.cast("string")
        for _, field, pattern in _filters(options):
            value = F.get_json_object(text, f"$.{field}")
            out = out | (value.isNotNull() & ~value.rlike(pattern))
        return out

    def envelope(
        self, columns: Sequence[Column], metadata: Sequence[str], options: Options
    ) -> list[Column]:
        """``data``, ``old``, ``type`` and the fields the ``metadata`` keys and the include
        filters need."""
        rows_t = f"ARRAY<{cl.row_type(columns)}>"
        envelope = [Column("data", rows_t), Column("old", rows_t), Column("type", "STRING")]
        filters = _filters(options)
        wanted = [_FIELDS[k] for k in metadata] + [(f, "STRING") for _, f, _ in filters]
        return cl.with_fields(envelope, wanted)

    def interpret(
        self,
        parsed: cl.EnvelopeParse,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
    ) -> tuple[Any, Any, Sequence[Any]]:
        """Canal's ``type`` as changelog rows (see the module's docstring)."""
        from pyspark.sql import functions as F

        struct, text, stage = parsed.struct, parsed.text, parsed.stage
        filters = _filters(options)
        data, old = struct["data"], struct["old"]
        # The texts of the 'old' rows, for the fields each names: parsed once, for updates only.
        old_json = F.from_json(text, "struct<old:array<string>>", TEXT_OPTIONS)["old"]
        old_texts = stage("old_texts", F.when(struct["type"] == "UPDATE", old_json))

        def update(after: SparkColumn, i: SparkColumn) -> SparkColumn:
            keys = cl.object_keys(F.get(old_texts, i))
            before = cl.before_image(after, F.get(old, i), keys, columns)
            return F.array(cl.change("-U", before), cl.change("+U", after))

        no_data = cl.missing(data, "data")
        rows, error = cl.dispatch(
            struct["type"],
            "type",
            {
                "INSERT": cl.Operation(cl.changes("+I", data), (no_data("an INSERT"),)),
                "UPDATE": cl.Operation(
                    F.flatten(F.transform(data, update)),
                    (
                        no_data("an UPDATE"),
                        (old.isNull(), 'the "old" field of an UPDATE is missing'),
                        (F.size(old) < F.size(data), _FEWER_OLD),
                    ),
                ),
                "DELETE": cl.Operation(cl.changes("-D", data), (no_data("a DELETE"),)),
                "CREATE": cl.Operation(None),
            },
        )
        for option, field, _ in reversed(filters):
            missing = F.lit(f"the \"{field}\" field is missing ('canal-json.{option}' needs it)")
            error = F.when(struct[field].isNull(), missing).otherwise(error)
        values = []
        for key in metadata:
            value = struct[_FIELDS[key][0]]
            values.append(cl.epoch_millis(value) if key.endswith("timestamp") else value)
        return rows, error, values

    def encode(
        self, fields: Fields, options: Options, kind: SparkColumn | None = None
    ) -> SparkColumn:
        """Each row as a Canal event of one row: ``INSERT`` for ``+I``/``+U`` (and rows without
        a kind), ``DELETE`` for ``-U``/``-D``."""
        from pyspark.sql import functions as F

        row, row_t = cl.row_struct(fields)
        kind_text = cl.written_op(kind, "INSERT", "DELETE")
        return cl.encode_envelope(NAME, change_event(F.array(row), kind_text, row_t), options)


FORMAT = Canal()

__all__ = ["FORMAT", "Canal", "change_event"]
