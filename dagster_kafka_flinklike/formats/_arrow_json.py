"""The ``json`` format's native decoding: a batch of values decoded where the bytes are.

The reader's tasks run this on the Arrow batch a task builds, so a clean record never goes
through Spark's per-record JSON parsing. It gives a value only where the result is certainly what
Flink's JSON format gives (see :mod:`.json`); every other record is left null, and
:meth:`.json.Json.decode_stages` decodes it with the full semantics: errors, numbers written as
strings, missing fields, duplicate keys, ``NaN`` and the rest. Two decoders, the faster first:

- The record scanner (``_text_scan``, C, built with the package where a compiler is) decodes the
  records one by one into Arrow buffers: JSON strings into text columns, ``true`` and ``false``,
  integers in range, numbers into DOUBLE and FLOAT, exact decimals, and numbers written as JSON
  strings (a sign and digits; a JSON number), which Flink parses from their text. It reads
  nested columns the same way (``scan_nested``): ROW at any depth (a JSON object; a field it
  lacks is null), ARRAY and MULTISET (a JSON array) of any of these, MAP with text keys (a JSON
  object: its keys unescaped, and of a repeated key the last entry kept once every entry
  converted, as Flink keeps it), nulls at any depth. A record with anything else (see its
  source: a declared field twice, a row key with an escape, a value of another kind, NaN, ...)
  is left to the next decoder, alone. For a changelog envelope (Flink's node-based reading) it
  also leaves a record with a number in a text position, which that reading writes its own way.
- Arrow's C++ JSON reader takes the records the scanner left (or all of them, for a table the
  scanner cannot describe). A value is a candidate when it starts with ``{`` and ends with ``}``;
  the candidates are joined into one newline-delimited buffer and parsed at once into the
  declared types. A value holding a second document, or a newline that breaks it, changes the
  row count or fails the parse, and then all of them go the per-record way; so do invalid UTF-8,
  ``NaN`` or ``Infinity`` anywhere (Arrow accepts them, Flink does not), and any conversion Arrow
  refuses (a fractional number in an integer column, a DECIMAL that needs rounding).
- DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ columns, and such fields of rows, are read as text
  by both and checked against ``timestamp-format.standard``'s shape per record; a record whose
  text does not match goes the per-record way alone.
- MAP columns with text keys (at any depth), for Arrow's parser: it reads no maps, so the
  exactness pass (``_text_scan.exact``, see :mod:`._exact_json`) first writes every map as the
  array of its entries, the last of a repeated key alone as in Flink, and the parsed entries
  become the map. A record whose map is no object or has a key with an escape goes the
  per-record way alone.
- Tables neither covers decode per record only: ``fail-on-missing-field`` (neither can tell a
  missing field from a null one), MAP with keys that are not text, BYTES, and temporal types
  inside ARRAY or MAP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FlinkType, spark_type
from ._exact_json import ExactJson, node_mode
from ._patterns import DATE, TIME, TIMESTAMP
from ._scanners import (
    TEXT_TYPES,
    scan_columns,
    scanned,
    scanned_tree,
    scanner,
    struct_type,
    tree_columns,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

_PARSED = TEXT_TYPES | {
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
}
_TEMPORAL = {"DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"}
#: Tokens Arrow's parser accepts as numbers and Flink's (Jackson's defaults) refuses.
_NON_NUMBERS = (b"NaN", b"Infinity")


def _covered(t: FlinkType, top: bool) -> bool:
    if t.name in _PARSED:
        return True
    if t.name in _TEMPORAL:
        return top
    if t.name == "ROW":  # a row's fields are its record's, one each: temporal text is checked
        return bool(t.children) and all(_covered(c, top) for c in t.children)
    if t.name in ("ARRAY", "MULTISET"):
        return _covered(t.children[0], False)
    if t.name == "MAP":  # its entries (see the module's docstring): the pass is C only
        key, value = t.children
        return scanner() is not None and key.name in TEXT_TYPES and _covered(value, False)
    return False


def _has_map(t: FlinkType) -> bool:
    return t.name == "MAP" or any(_has_map(c) for c in t.children)


def _special(t: FlinkType) -> bool:
    """Whether a value of type ``t`` is parsed as another type than its own (see
    :func:`_parse_type`)."""
    return t.name == "MAP" or t.name in _TEMPORAL or any(_special(c) for c in t.children)


def _parse_type(t: FlinkType) -> pa.DataType:
    """The Arrow type a field is parsed as: temporal text as a string, a map as the list of its
    entries, the rest as declared."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    if t.name in _TEMPORAL:
        return pa.string()
    if not _special(t):
        return to_arrow_type(spark_type(t), timezone="UTC")
    if t.name == "MAP":
        entry = [("key", pa.string()), ("value", _parse_type(t.children[1]))]
        return pa.list_(pa.struct(entry))
    if t.name == "ROW":
        return pa.struct(
            [(n, _parse_type(c)) for n, c in zip(t.field_names, t.children, strict=True)]
        )
    return pa.list_(_parse_type(t.children[0]))


def _contains(data: Any, token: bytes) -> bool:
    """Whether the byte array ``data`` (numpy ``uint8``) contains ``token``."""
    import numpy as np

    end = len(data) - len(token) + 1
    if end <= 0:
        return False
    found = np.flatnonzero(data[:end] == token[0])
    for i, byte in enumerate(token[1:], 1):
        if not len(found):
            return False
        found = found[data[found + i] == byte]
    return bool(len(found))


class NativeJson:
    """Decodes a batch of JSON values into a struct of the table's columns; null where a record
    needs the per-record decoding (picklable: built on the driver, run in the tasks)."""

    def __init__(self, columns: Sequence[Column], standard: str, node: bool = False) -> None:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_type

        self.names = [c.name for c in columns]
        self.types = [c.flink_type for c in columns]
        #: The struct's Spark type: what the per-record decoding gives for the same columns.
        self.spark_type = struct_type(columns)
        #: The Arrow type of the decoded struct (Spark's mapping of :attr:`spark_type`).
        self.arrow_type: pa.StructType = to_arrow_type(self.spark_type, timezone="UTC")
        #: What Arrow's parser reads each column as (temporal types as text), built once here
        #: instead of per batch.
        self.parse_schema = pa.schema([(c.name, _parse_type(c.flink_type)) for c in columns])
        #: The exactness pass prepared for Arrow's parser, for a table with MAP columns (maps as
        #: their entries) and for a changelog envelope (``node``: numbers in text positions as
        #: Flink's node-based reading gives them).
        rewritten = node or any(_has_map(t) for t in self.types)
        mode = node_mode(columns) if node else 0
        self.rewrite = ExactJson(columns, mode) if rewritten else None
        #: The record scanner's columns, when it is built and the table is flat.
        self.scan_columns = None if node else scan_columns(columns, standard)
        #: Its columns when the table has nested ones (rows, arrays, maps with text keys); for
        #: an envelope (``node``) it leaves a record with a number in a text position.
        self.tree_columns = tree_columns(columns, standard)
        self.node = node
        timestamp = TIMESTAMP[standard]
        self.patterns = {
            "DATE": DATE,
            "TIME": TIME,
            "TIMESTAMP": timestamp + "$",
            "TIMESTAMP_LTZ": timestamp + "Z$",
        }

    def __call__(self, values: pa.Array) -> pa.Array:
        if self.scan_columns is not None or self.tree_columns is not None:
            return self._scan(values)
        return self._arrow(values)

    def _arrow(self, values: pa.Array) -> pa.Array:
        """Arrow's parser over the whole batch (see the module's docstring)."""
        import pyarrow as pa

        try:
            return self._decode(values)
        except pa.ArrowException:
            return pa.nulls(len(values), self.arrow_type)

    def _scan(self, values: pa.Array) -> pa.Array:
        """The record scanner, then Arrow's parser for the records it left."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(values)
        try:
            if self.tree_columns is not None:
                struct, decoded = scanned_tree(
                    values, self.arrow_type, self.tree_columns, self.node
                )
            else:
                struct, decoded = scanned(
                    values, self.arrow_type, scanner().scan, self.scan_columns
                )
        except pa.ArrowException:  # never fail the reading task: decode per record
            return pa.nulls(n, self.arrow_type)
        if decoded.true_count == n:
            return struct
        undecoded = pc.invert(decoded)
        rest = self._arrow(values.filter(undecoded))
        # Row i of the result: the scanner's where it decoded, else the next of the rest.
        position = pc.add(pc.subtract(pc.cumulative_sum(undecoded.cast(pa.int64())), 1), n)
        indices = pc.if_else(decoded, pa.array(range(n), pa.int64()), position)
        return pa.concat_arrays([struct, rest]).take(indices)

    def _parse(self, values: pa.Array) -> pa.Table | None:
        """The candidates parsed, one row each; None when the batch needs the per-record way."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj

        values.cast(pa.string())  # Arrow's parser does not check UTF-8: refuse the batch here
        offsets = pa.array([0, len(values)], pa.int32())
        joined = pc.binary_join(pa.ListArray.from_arrays(offsets, values), b"\n")[0]
        buffer = joined.as_buffer()
        data = np.frombuffer(buffer, dtype=np.uint8)
        if any(_contains(data, token) for token in _NON_NUMBERS):
            return None
        table = pj.read_json(
            pa.BufferReader(buffer),
            read_options=pj.ReadOptions(
                use_threads=False, block_size=max(1 << 20, buffer.size + 1)
            ),
            parse_options=pj.ParseOptions(
                explicit_schema=self.parse_schema, unexpected_field_behavior="ignore"
            ),
        )
        return table if table.num_rows == len(values) else None

    def _decode(self, values: pa.Array) -> pa.Array:
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(values)
        if self.rewrite is not None:
            try:
                values = self.rewrite.for_arrow(values)  # null: a record it leaves
            except OverflowError:  # the rewritten batch would pass a binary array's 2 GiB
                return pa.nulls(n, self.arrow_type)
        objects = pc.and_(
            pc.equal(pc.binary_slice(values, 0, 1), pa.scalar(b"{", pa.binary())),
            pc.equal(pc.binary_slice(values, -1), pa.scalar(b"}", pa.binary())),
        ).fill_null(False)
        count = pc.sum(objects).as_py() or 0
        if count == 0:
            return pa.nulls(n, self.arrow_type)
        candidates = values if count == n else values.filter(objects)
        table = self._parse(candidates)
        if table is None:
            return pa.nulls(n, self.arrow_type)
        decoded = self._struct([table.column(name).combine_chunks() for name in self.names])
        if count == n:
            return decoded
        position = pc.subtract(pc.cumulative_sum(objects.cast(pa.int64())), 1)
        return decoded.take(pc.if_else(objects, position, None))

    def _struct(self, parsed: list[pa.Array]) -> pa.StructArray:
        """Arrow's parsed columns as the struct (see :meth:`_converted`); a record with a
        temporal text that does not have its type's shape is null (decoded per record)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        clean: pa.Array | None = None
        arrays = []
        for column, t, field in zip(parsed, self.types, self.arrow_type, strict=True):
            value, shaped = self._converted(column, t, field.type)
            arrays.append(value)
            if shaped is not None:
                clean = shaped if clean is None else pc.and_(clean, shaped)
        mask = None if clean is None else pc.invert(clean)
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow_type), mask=mask)

    def _converted(
        self, parsed: pa.Array, t: FlinkType, arrow_type: pa.DataType
    ) -> tuple[pa.Array, pa.Array | None]:
        """A parsed value as its declared Arrow type: temporal text converted where it has its
        type's shape, each map built from its parsed entries; and which values had the shape
        (None: no temporal text in them; it is only covered at the top and in rows)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not _special(t):
            return parsed, None
        if t.name in _TEMPORAL:
            shaped = pc.match_substring_regex(parsed, self.patterns[t.name]).fill_null(True)
            value = pc.if_else(shaped, parsed, None)
            return (value if t.name == "TIME" else value.cast(arrow_type)), shaped
        absent = parsed.is_null()
        if t.name == "ROW":
            children, clean = [], None
            for i, child in enumerate(t.children):
                value, shaped = self._converted(parsed.field(i), child, arrow_type.field(i).type)
                children.append(value)
                if shaped is not None:
                    clean = shaped if clean is None else pc.and_(clean, shaped)
            if clean is not None:
                clean = pc.or_(clean, absent)
            struct = pa.StructArray.from_arrays(children, fields=list(arrow_type), mask=absent)
            return struct, clean
        if t.name == "MAP":
            entries = parsed.values
            value, _ = self._converted(entries.field("value"), t.children[1], arrow_type.item_type)
            keys = entries.field("key")
            return pa.MapArray.from_arrays(
                parsed.offsets, keys, value, type=arrow_type, mask=absent
            ), None
        element, _ = self._converted(parsed.values, t.children[0], arrow_type.value_type)
        return pa.ListArray.from_arrays(parsed.offsets, element, type=arrow_type, mask=absent), None


def native_decoder(columns: Sequence[Column], settings: Any) -> NativeJson | None:
    """The native decoder of ``columns`` with the ``json`` format's parsed ``settings``, or None
    when the table needs the per-record decoding for every record."""
    if not columns or settings["fail-on-missing-field"]:
        return None
    if not all(_covered(c.flink_type, True) for c in columns):
        return None
    return NativeJson(columns, settings["timestamp-format.standard"])


def envelope_decoder(envelope: Sequence[Column], standard: str) -> NativeJson | None:
    """The native decoder of a JSON changelog format's ``envelope`` (its images, operation and
    other fields as columns), read as Flink's node-based reading reads it; None when it needs the
    per-record decoding (the pass this needs is C only)."""
    if scanner() is None or not all(_covered(c.flink_type, True) for c in envelope):
        return None
    return NativeJson(envelope, standard, node=True)
