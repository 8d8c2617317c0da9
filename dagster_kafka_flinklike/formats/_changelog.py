"""What the changelog formats (``debezium-json``, ``debezium-avro-confluent``, ``canal-json``,
``maxwell-json``, ``ogg-json``) share: each record becomes changelog rows. The JSON envelopes are
parsed by the ``json`` format's own decoding (so rows follow Flink's JSON rules and a bad field is
dirty with its path); ``debezium-avro-confluent``'s by the ``avro-confluent`` format's.

A changelog format is a :class:`ChangelogFormat`: ``skipped`` (tombstones, and records its
filters leave out), ``encode(fields, options, kind)`` and

``decode_changelog_stages(raw, columns, metadata, options, prefix, native)`` returning
``(stages, (rows, meta, error, tolerated))``: ``rows`` is an array of ``struct<k, r>`` (``k`` the
row kind ``+I``/``-U``/``+U``/``-D``, ``r`` the row of ``columns``), null for a dirty record and
empty or null for a record that yields no row (a dirty record has rows only when the
format :attr:`~.base.Format.keeps_rows` and tolerates it); ``meta`` a struct of the requested format
metadata (fields ``m0``, ``m1``, ... in the order of ``metadata``) or None when none is
requested; ``error`` and ``tolerated`` as in every format. A JSON changelog format defines only
its :meth:`~ChangelogFormat.envelope` (the JSON columns it parses), how it
:meth:`~ChangelogFormat.interpret` s them, and how it encodes. A before/after envelope whose
operations need the parsed envelope alone (not the record's text) sets ``native_operations``:
the reader's tasks then parse its envelopes natively (:func:`._arrow_json.envelope_decoder`) and
interpret them there too (:class:`NativeChangelog`), so ``native`` is each record's ``rows``,
null for the records decoded per record (those the native parse left and every dirty one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..options import ACCUMULATIONS, Column
from ..options import row_type as options_row_type
from .base import Fields, Format, NativeDecoder, Options, Stager, Stages, format_settings
from .json import FORMAT as JSON
from .json import snippet

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column as SparkColumn


def json_options(name: str, options: Options) -> dict[str, Any]:
    """The ``json`` options the envelope of format ``name`` is decoded and encoded with."""
    own = format_settings(name, options)
    shared = ("ignore-parse-errors", "timestamp-format.standard", "map-null-key.mode",
              "map-null-key.literal", "encode.decimal-as-plain-number")  # fmt: skip
    return {k: own[k] for k in shared if k in own}


def row_type(columns: Sequence[Column]) -> str:
    """The Flink ROW type (as text) holding ``columns``, to nest them in an envelope."""
    return str(options_row_type(columns))


def is_tombstone(raw: SparkColumn) -> SparkColumn:
    """A null or empty value: a tombstone, which yields no row (as Flink skips it)."""
    from pyspark.sql import functions as F

    return raw.isNull() | (F.length(raw) == F.lit(0))


def change(kind: str, row: SparkColumn) -> SparkColumn:
    """One changelog row: its kind and the row."""
    from pyspark.sql import functions as F

    return F.struct(F.lit(kind).alias("k"), row.alias("r"))


def changes(kind: str, rows: SparkColumn) -> SparkColumn:
    """Every row of an array of rows as a changelog row of ``kind``."""
    from pyspark.sql import functions as F

    return F.transform(rows, lambda r: change(kind, r))


def before_image(
    after: SparkColumn, old: SparkColumn, old_keys: SparkColumn, columns: Sequence[Column]
) -> SparkColumn:
    """The row before an update from its changed fields: a field present in ``old`` (its keys
    ``old_keys``, even when null) took that value; any other field kept the ``after`` value."""
    from pyspark.sql import functions as F

    fields = [
        F.when(F.array_contains(old_keys, F.lit(c.name)), old[c.name])
        .otherwise(after[c.name])
        .alias(c.name)
        for c in columns
    ]
    return F.struct(*fields)


def object_keys(text: SparkColumn) -> SparkColumn:
    """The keys of a JSON object text (an empty array for null)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.json_object_keys(text), F.array().cast("array<string>"))


@dataclass(frozen=True)
class Operation:
    """What one value of the envelope's operation field means: the changelog rows it yields
    (None: none, as for a DDL event) and the conditions that make the record dirty."""

    rows: SparkColumn | None
    checks: tuple[tuple[SparkColumn, str], ...] = ()


def dispatch(
    op: SparkColumn, field: str, operations: Mapping[str, Operation]
) -> tuple[SparkColumn, SparkColumn]:
    """(rows, error) of a record whose operation field ``field`` holds ``op``.

    A missing operation, an unknown one, or a failed check of its operation is an error that
    says which.
    """
    from pyspark.sql import functions as F

    rows: Any = None
    error = F.when(op.isNull(), F.lit(f'the "{field}" field is missing'))
    for value, operation in operations.items():
        if operation.rows is not None:
            rows = (F if rows is None else rows).when(op == value, operation.rows)
        for condition, reason in operation.checks:
            error = error.when((op == value) & condition, F.lit(reason))
    known = F.array(*[F.lit(v) for v in operations])
    unknown = F.concat(F.lit(f'unknown "{field}" value "'), snippet(op), F.lit('"'))
    error = error.when(~F.array_contains(known, op), unknown)
    return (rows if rows is not None else F.lit(None)), error


def before_after(
    before: SparkColumn,
    after: SparkColumn,
    ops: tuple[Sequence[str], str, str],
    no_before: str = 'the "before" field of {op} is null',
) -> dict[str, Operation]:
    """The operations of a before/after envelope (Debezium, OGG): ``ops`` are the insert values,
    the update value and the delete value of its operation field. An insert yields ``+I`` of
    ``after``; an update ``-U`` of ``before`` and ``+U`` of ``after``; a delete ``-D`` of
    ``before``; a missing image is dirty (``no_before`` says so for the before image)."""
    from pyspark.sql import functions as F

    inserts, update, delete = ops

    def no_after(op: str) -> tuple[SparkColumn, str]:
        return after.isNull(), f'the "after" field of {op} is null'

    operations = {
        value: Operation(F.array(change("+I", after)), (no_after("an insert"),))
        for value in inserts
    }
    operations[update] = Operation(
        F.array(change("-U", before), change("+U", after)),
        ((before.isNull(), no_before.format(op="an update")), no_after("an update")),
    )
    operations[delete] = Operation(
        F.array(change("-D", before)), ((before.isNull(), no_before.format(op="a delete")),)
    )
    return operations


def images(
    fields: Fields, kind: SparkColumn | None, insert_op: str, delete_op: str
) -> tuple[SparkColumn, SparkColumn, SparkColumn, str]:
    """(before, after, operation, row type) of rows written as before/after envelopes, as Flink
    writes them: ``+I``/``+U`` rows (and rows without a kind) as the after image with
    ``insert_op``, ``-U``/``-D`` rows as the before image with ``delete_op``."""
    from pyspark.sql import functions as F

    row, row_t = row_struct(fields)
    insert = is_insert(kind)
    return F.when(~insert, row), F.when(insert, row), written_op(kind, insert_op, delete_op), row_t


def with_fields(envelope: list[Column], wanted: Iterable[tuple[str, str]]) -> list[Column]:
    """``envelope`` with each (field, Flink type) of ``wanted`` it lacks added, in order (the
    fields the requested metadata needs)."""
    for name, type_ in wanted:
        if all(c.name != name for c in envelope):
            envelope.append(Column(name, type_))
    return envelope


@dataclass(frozen=True)
class EnvelopeParse:
    """A record's envelope as JSON decoding left it: the ``struct`` of the envelope's fields,
    the record's ``text``, and ``stage(name, expression)``, which computes an expression once per
    record (after the parse) and returns its column."""

    struct: Any
    text: Any
    stage: Callable[[str, Any], Any]


#: Builds (rows, envelope error, metadata values) from the parsed envelope struct, the text and
#: a function that stages an expression (computed once per record, after the envelope's parse).
Interpret = Callable[[Any, Any, Callable[[str, Any], Any]], tuple[Any, Any, Sequence[Any]]]


def decode_envelope(
    name: str,
    raw: SparkColumn,
    envelope: Sequence[Column],
    options: Options,
    prefix: str | None,
    interpret: Interpret,
    native: SparkColumn | None = None,
) -> tuple[
    list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn | None, SparkColumn, SparkColumn]
]:
    """Parse the ``envelope`` columns of format ``name`` with the JSON format, then let
    ``interpret`` turn the parsed struct into changelog rows, an error and metadata values.

    A JSON error (malformed record, a field that does not convert) comes first; a record that
    is not a JSON object (blank, ``null``) is dirty too: only tombstones yield no row silently.
    """
    from pyspark.sql import functions as F

    stager = Stager(prefix, 3)
    struct, json_error, _ = JSON.decode_with(raw, envelope, json_options(name, options), stager)
    tombstone = is_tombstone(raw)
    if native is not None:  # the records the reader's tasks decoded (their raw value is null)
        tombstone = native.isNull() & tombstone
    text = raw.cast("string")
    rows, envelope_error, metadata = interpret(struct, text, lambda n, e: stager.put(2, n, e))
    not_record = F.when(
        struct.isNull() & ~tombstone,
        F.concat(F.lit(f"not a {name} record: "), snippet(text)),
    )
    ignore = bool(format_settings(name, options)["ignore-parse-errors"])
    # As Flink's JSON changelog formats under 'ignore-parse-errors': a field of an image that
    # fails is null and the record's rows stay (the JSON decoding nulls the struct of a record
    # that is not an object); an envelope that is wrong as a whole yields none.
    kept = F.lit(ignore) & struct.isNotNull() & F.coalesce(not_record, envelope_error).isNull()
    rows, error = outcome(tombstone, rows, json_error, not_record, envelope_error, kept=kept)
    if native is not None:  # a natively decoded record is clean: its rows are the native ones
        rows, error = F.coalesce(native, rows), F.when(native.isNull(), error)
    tolerated = error.isNotNull() & F.lit(ignore)
    meta = F.struct(*[m.alias(f"m{i}") for i, m in enumerate(metadata)]) if metadata else None
    return stager.stages, (rows, meta, error, tolerated)


def epoch_millis(value: SparkColumn) -> SparkColumn:
    """A TIMESTAMP_LTZ from epoch milliseconds."""
    from pyspark.sql import functions as F

    return F.timestamp_millis(value.cast("bigint"))


def encode_envelope(
    name: str,
    envelope: Sequence[tuple[SparkColumn, Column]],
    options: Options,
) -> SparkColumn:
    """The envelope written with the ``json`` format's encoding (nulls kept, as Flink does)."""
    return JSON.encode(envelope, json_options(name, options))


def row_struct(fields: Sequence[tuple[SparkColumn, Column]]) -> tuple[SparkColumn, str]:
    """The row of ``fields`` as one struct, and its Flink ROW type."""
    from pyspark.sql import functions as F

    return F.struct(*[src.alias(c.name) for src, c in fields]), row_type([c for _, c in fields])


def is_insert(kind: SparkColumn | None) -> SparkColumn:
    """Rows written as inserts: ``+I`` and ``+U``, and every row of a frame without kinds."""
    from pyspark.sql import functions as F

    if kind is None:
        return F.lit(True)
    return kind.isNull() | kind.isin(*ACCUMULATIONS)


def written_op(kind: SparkColumn | None, insert_op: str, delete_op: str) -> SparkColumn:
    """The operation a row of row ``kind`` is written as, as Flink writes changelog envelopes:
    ``insert_op`` for ``+I``/``+U`` (and rows without a kind), ``delete_op`` for ``-U``/``-D``."""
    from pyspark.sql import functions as F

    return F.when(is_insert(kind), F.lit(insert_op)).otherwise(F.lit(delete_op))


def missing(value: SparkColumn, field: str) -> Callable[[str], tuple[SparkColumn, str]]:
    """The check of an :class:`Operation` that the envelope's ``field`` (``value``) is present,
    as a function of the operation it names in its reason (``"an insert"``)."""

    def check(op: str) -> tuple[SparkColumn, str]:
        return value.isNull(), f'the "{field}" field of {op} is missing'

    return check


def outcome(
    tombstone: SparkColumn, rows: SparkColumn, *errors: SparkColumn, kept: SparkColumn | None = None
) -> tuple[SparkColumn, SparkColumn]:
    """(rows, error) of a record: its error the first of ``errors`` that is not null, none for a
    ``tombstone``; its ``rows`` only when it is clean, or dirty and ``kept``."""
    from pyspark.sql import functions as F

    error = F.when(~tombstone, F.coalesce(*errors))
    return F.when(error.isNull() if kept is None else error.isNull() | kept, rows), error


class ChangelogFormat(Format):
    """A format whose records become changelog rows with row kinds (see the module's
    docstring): it defines :meth:`decode_changelog_stages` and :meth:`encode`."""

    changelog = True

    def skipped(self, raw: SparkColumn, options: Options) -> SparkColumn:
        """Tombstones (null or empty values) yield no row."""
        return is_tombstone(raw)

    def decode_changelog_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
        prefix: str | None = None,
        native: SparkColumn | None = None,
    ) -> tuple[Stages, tuple[Any, Any, Any, Any]]:
        """``(stages, (rows, meta, error, tolerated))`` of each record (see the module's
        docstring)."""
        raise NotImplementedError

    def encode(
        self, fields: Fields, options: Options, kind: SparkColumn | None = None
    ) -> SparkColumn:
        """Each row as one record of its row ``kind`` (rows without a kind are inserts)."""
        raise NotImplementedError


#: The operations of a before/after envelope: its insert values, its update value and its
#: delete value (see :func:`before_after`).
Operations = tuple[tuple[str, ...], str, str]
#: The row kinds :class:`NativeChangelog` writes, by index.
_KINDS = ("+I", "-U", "+U", "-D")


class NativeChangelog:
    """Parses a batch of before/after envelopes natively and interprets them where they were
    read: each record's changelog rows (an array of ``struct<k, r>``, as :func:`before_after`
    and :func:`dispatch` give them), null where the record needs the per-record decoding (the
    parse left it, or its envelope is dirty: a missing or unknown operation, a missing image).
    Picklable: built on the driver, run in the tasks.

    Interpreting here spares Spark a projection of conditional arrays per record, and since
    every record it decodes is clean, the reader need not carry its raw bytes further.
    """

    def __init__(self, envelope: NativeDecoder, operations: Operations, payload: str | None):
        from pyspark.sql import types as T
        from pyspark.sql.pandas.types import to_arrow_type

        self.envelope = envelope
        self.operations = operations
        #: The envelope's field holding the event (Debezium's ``payload``), or None: the root.
        self.payload = payload
        event: Any = envelope.spark_type
        if payload is not None:
            event = event[payload].dataType
        row = event["before"].dataType
        entry = T.StructType(
            [T.StructField("k", T.StringType(), False), T.StructField("r", row, True)]
        )
        self.spark_type: T.DataType = T.ArrayType(entry, False)
        self.arrow_type = to_arrow_type(self.spark_type, timezone="UTC")

    def __call__(self, values: pa.Array) -> pa.Array:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        parsed = self.envelope(values)
        event, present = parsed, parsed.is_valid()
        if self.payload is not None:
            event = parsed.field(self.payload)
            present = pc.and_(present, event.is_valid())
        before, after, op = (event.field(f) for f in ("before", "after", "op"))
        inserts, update, delete = self.operations
        is_insert = pc.is_in(op, value_set=pa.array(inserts, pa.string()))
        is_update = pc.equal(op, pa.scalar(update, pa.string()))
        is_delete = pc.equal(op, pa.scalar(delete, pa.string()))
        has_before, has_after = before.is_valid(), after.is_valid()
        clean = pc.and_(
            present,
            pc.or_(
                pc.or_(pc.and_(is_insert, has_after), pc.and_(is_delete, has_before)),
                pc.and_(is_update, pc.and_(has_before, has_after)),
            ),
        ).fill_null(False)
        n = len(parsed)
        keep = clean.to_numpy(zero_copy_only=False)
        update_np = is_update.fill_null(False).to_numpy(zero_copy_only=False) & keep
        delete_np = is_delete.fill_null(False).to_numpy(zero_copy_only=False) & keep
        counts = keep.astype(np.int32) + update_np
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(counts, out=offsets[1:])
        starts = offsets[:-1][keep]
        rows = np.arange(n, dtype=np.int64)
        # Each record's first row: its before image (at i of before + after) for an update or
        # a delete, else its after image (at n + i); an update's second row, its after image.
        first = np.where(update_np | delete_np, rows, rows + n)[keep]
        first_kind = np.where(update_np, 1, np.where(delete_np, 3, 0))[keep]
        second = starts[update_np[keep]] + 1
        images = np.empty(offsets[-1], np.int64)
        kinds = np.empty(offsets[-1], np.int8)
        images[starts], kinds[starts] = first, first_kind
        images[second], kinds[second] = rows[update_np] + n, 2
        entry = self.arrow_type.value_type
        row = pa.concat_arrays([before, after]).take(pa.array(images))
        kind = pa.array(_KINDS, pa.string()).take(pa.array(kinds))
        entries = pa.StructArray.from_arrays([kind, row], fields=list(entry))
        return pa.ListArray.from_arrays(
            pa.array(offsets), entries, type=self.arrow_type, mask=pc.invert(clean)
        )


class JsonChangelogFormat(ChangelogFormat):
    """A changelog format whose records are JSON envelopes, parsed by the ``json`` format's
    decoding: it defines the :meth:`envelope` it parses and how it :meth:`interpret` s it."""

    keeps_rows = True
    #: The operations of a before/after envelope the reader's tasks may interpret themselves
    #: (see :class:`NativeChangelog`), for a format whose interpretation needs the parsed
    #: envelope alone; None: none are.
    native_operations: ClassVar[Operations | None] = None

    def native_payload(self, options: Options) -> str | None:
        """The envelope's field holding the event, or None: the envelope is the event."""
        return None

    def envelope(
        self, columns: Sequence[Column], metadata: Sequence[str], options: Options
    ) -> list[Column]:
        """The envelope's fields to parse: the images of ``columns``, the operation, and what
        the ``metadata`` keys need."""
        raise NotImplementedError

    def exact_pass(
        self, columns: Sequence[Column], options: Options, metadata: Sequence[str] = ()
    ) -> Callable[[pa.Array], pa.Array] | None:
        """The ``json`` format's pass over the envelope, as Flink's node-based reading (which
        its changelog formats use) gives a number in a STRING (see :mod:`._exact_json`)."""
        from ._exact_json import exact_json

        return exact_json(self.envelope(columns, metadata, options), node=True)

    def native_decoder(self, columns: Sequence[Column], options: Options) -> NativeDecoder | None:
        """The changelog rows of ``columns`` (no metadata), the envelope parsed and interpreted
        natively where the format allows it (:attr:`native_operations`) and the envelope's
        types are covered."""
        if self.native_operations is None:
            return None
        from ._arrow_json import envelope_decoder

        standard = format_settings(self.name, options).get("timestamp-format.standard", "SQL")
        envelope = envelope_decoder(self.envelope(columns, (), options), standard)
        if envelope is None:
            return None
        return NativeChangelog(envelope, self.native_operations, self.native_payload(options))

    def interpret(
        self,
        parsed: EnvelopeParse,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
    ) -> tuple[Any, Any, Sequence[Any]]:
        """(rows, envelope error, metadata values) of a parsed envelope."""
        raise NotImplementedError

    def decode_changelog_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
        prefix: str | None = None,
        native: SparkColumn | None = None,
    ) -> tuple[Stages, tuple[Any, Any, Any, Any]]:
        """The envelope parsed as JSON (or, ``native``, by the reader's tasks), then interpreted
        as changelog rows of ``columns`` and the ``metadata`` values."""

        def interpret(struct: Any, text: Any, stage: Callable[[str, Any], Any]) -> Any:
            return self.interpret(EnvelopeParse(struct, text, stage), columns, metadata, options)

        envelope = self.envelope(columns, metadata, options)
        return decode_envelope(self.name, raw, envelope, options, prefix, interpret, native)


__all__ = [
    "ChangelogFormat",
    "EnvelopeParse",
    "JsonChangelogFormat",
    "NativeChangelog",
    "Operation",
    "Operations",
    "before_after",
    "before_image",
    "change",
    "changes",
    "decode_envelope",
    "dispatch",
    "encode_envelope",
    "epoch_millis",
    "images",
    "is_insert",
    "is_tombstone",
    "json_options",
    "missing",
    "object_keys",
    "outcome",
    "row_struct",
    "row_type",
    "with_fields",
    "written_op",
]
