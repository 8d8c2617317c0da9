"""The record scanners (``_text_scan.c``: json, csv, protobuf, avro) from Python: which tables
they read (flat ones; for ``json`` also rows at any depth, arrays and maps with text keys:
:func:`tree_columns`), and the struct of a batch they give. A record a scanner leaves is null in
that struct and goes on to the next decoding (for ``json`` Arrow's parser, then the per-record
decoding; for ``csv``, ``protobuf`` and ``avro`` the per-record decoding), which gives Flink's
result for it.

The scanners are a C module built with the package where a compiler is; without it every table
decodes the way it would with records the scanners leave.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FlinkType, spark_type

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

#: Flink's text types.
TEXT_TYPES = frozenset({"STRING", "VARCHAR", "CHAR"})
#: Column kinds (see ``_text_scan.c``); TIMESTAMP and TIMESTAMP_LTZ by the text's standard.
_KINDS = {
    **dict.fromkeys(TEXT_TYPES, "s"),
    "DATE": "D",
    "TIME": "C",
    "BOOLEAN": "b",
    "TINYINT": "B",
    "SMALLINT": "H",
    "INT": "I",
    "BIGINT": "L",
    "FLOAT": "f",
    "DOUBLE": "d",
    "DECIMAL": "m",
}
_TIMESTAMPS = {
    "SQL": {"TIMESTAMP": "t", "TIMESTAMP_LTZ": "z"},
    "ISO-8601": {"TIMESTAMP": "T", "TIMESTAMP_LTZ": "Z"},
}
MAX_COLUMNS = 64

#: A scanner's description of a column: name, kind, DECIMAL precision and scale.
ScanColumn = tuple[bytes, str, int, int]


def scanner() -> Any:
    """The compiled scanners, or None where the package was installed without them."""
    try:  # by name: the compiled module (no .py file) is imported, not this package's names
        return importlib.import_module(f"{__package__}._text_scan")
    except ImportError:
        return None


def scan_columns(columns: Sequence[Column], standard: str) -> tuple[ScanColumn, ...] | None:
    """The scanners' description of a flat table's columns (``standard``: how its timestamps
    are written, SQL or ISO-8601), or None when they cannot read them or are not built."""
    if scanner() is None or not columns or len(columns) > MAX_COLUMNS:
        return None
    kinds = {**_KINDS, **_TIMESTAMPS[standard]}
    described = []
    for c in columns:
        kind = kinds.get(c.flink_type.name)
        if kind is None:
            return None
        precision, scale = 0, 0
        if kind == "m":
            params = c.flink_type.params
            precision = params[0] if params else 10
            scale = params[1] if len(params) > 1 else 0
        described.append((c.name.encode(), kind, precision, scale))
    return tuple(described)


#: A scanner's description of a column that may be nested: a :data:`ScanColumn`, or name, kind
#: (``R`` row, ``A`` array, ``M`` map), 0, 0 and the descriptions of its fields, its element, or
#: its key and value.
TreeColumn = tuple[Any, ...]
#: The json scanner's limits on a nested table: nodes of its type tree, fields of a row.
MAX_TREE_NODES = 1024


def tree_columns(columns: Sequence[Column], standard: str) -> tuple[TreeColumn, ...] | None:
    """The json scanner's description of a table's columns with nested ones among them (rows at
    any depth, arrays, maps with text keys), or None when it cannot read them, the table is
    flat (:func:`scan_columns` describes those) or the scanners are not built."""
    if scanner() is None or not columns or len(columns) > MAX_COLUMNS:
        return None
    kinds = {**_KINDS, **_TIMESTAMPS[standard]}
    nodes = [0]

    def describe(name: str, t: FlinkType) -> TreeColumn | None:
        nodes[0] += 1
        if nodes[0] > MAX_TREE_NODES:
            return None
        encoded = name.encode("utf-8", "surrogatepass")
        if t.name == "ROW":
            if not t.children or len(t.children) > MAX_COLUMNS:
                return None
            fields = [describe(n, c) for n, c in zip(t.field_names, t.children, strict=True)]
            return None if None in fields else (encoded, "R", 0, 0, tuple(fields))
        if t.name in ("ARRAY", "MULTISET"):
            element = describe("", t.children[0])
            return None if element is None else (encoded, "A", 0, 0, (element,))
        if t.name == "MAP":
            key, value = t.children
            described = describe("", value)
            if key.name not in TEXT_TYPES or described is None:
                return None
            return (encoded, "M", 0, 0, ((b"", "s", 0, 0), described))
        kind = kinds.get(t.name)
        if kind is None:
            return None
        precision, scale = 0, 0
        if kind == "m":
            precision = t.params[0] if t.params else 10
            scale = t.params[1] if len(t.params) > 1 else 0
        return (encoded, kind, precision, scale)

    if all(c.flink_type.name not in ("ROW", "ARRAY", "MULTISET", "MAP") for c in columns):
        return None
    described = [describe(c.name, c.flink_type) for c in columns]
    return None if None in described else tuple(d for d in described if d is not None)


def _tree_array(arrow_type: pa.DataType, result: tuple[int, Any, Any]) -> pa.Array:
    """An Arrow array from a nested scan's result for one column (see ``scan_nested``)."""
    import pyarrow as pa

    count, parts, children = result
    buffers = [pa.py_buffer(b) for b in parts]
    if pa.types.is_struct(arrow_type):
        arrays = [_tree_array(f.type, r) for f, r in zip(arrow_type, children, strict=True)]
        return pa.Array.from_buffers(arrow_type, count, buffers, children=arrays)
    if pa.types.is_map(arrow_type):
        keys = _tree_array(arrow_type.key_type, children[0])
        items = _tree_array(arrow_type.item_type, children[1])
        entries = pa.StructArray.from_arrays(
            [keys, items], fields=[arrow_type.key_field, arrow_type.item_field]
        )
        return pa.Array.from_buffers(arrow_type, count, buffers, children=[entries])
    if pa.types.is_list(arrow_type):
        element = _tree_array(arrow_type.value_type, children[0])
        return pa.Array.from_buffers(arrow_type, count, buffers, children=[element])
    return pa.Array.from_buffers(arrow_type, count, buffers)


def scanned_tree(
    values: pa.Array, arrow_type: pa.StructType, columns: tuple[TreeColumn, ...], node: bool
) -> tuple[pa.StructArray, pa.BooleanArray]:
    """The json scanner over ``values`` for a table with nested columns (``node``: as Flink's
    node-based reading): the struct of ``arrow_type``, null where a record was left, and which
    records it decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(values)
    validity, offsets, data = values.buffers()
    assert offsets is not None and data is not None
    bitmap, results = scanner().scan_nested(
        validity, offsets, data, values.offset, n, columns, node
    )
    decoded = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bitmap)])
    arrays = [_tree_array(f.type, r) for f, r in zip(arrow_type, results, strict=True)]
    struct = pa.StructArray.from_arrays(arrays, fields=list(arrow_type), mask=pc.invert(decoded))
    return struct, decoded


def struct_type(columns: Sequence[Column]) -> Any:
    """The Spark struct of the table's columns: what the per-record decoding gives."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(c.name, spark_type(c.flink_type)) for c in columns])


def scanned(
    values: pa.Array, arrow_type: pa.StructType, scan: Any, *arguments: Any
) -> tuple[pa.StructArray, pa.BooleanArray]:
    """``scan`` (a function of the scanners) over ``values``: the struct of ``arrow_type``,
    null where a record was left, and which records it decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(values)
    validity, offsets, data = values.buffers()
    assert offsets is not None and data is not None
    bitmap, buffers = scan(validity, offsets, data, values.offset, n, *arguments)
    decoded = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bitmap)])
    arrays = [
        pa.Array.from_buffers(field.type, n, [pa.py_buffer(b) for b in parts])
        for field, parts in zip(arrow_type, buffers, strict=True)
    ]
    struct = pa.StructArray.from_arrays(arrays, fields=list(arrow_type), mask=pc.invert(decoded))
    return struct, decoded


class NativeCsv:
    """Decodes a batch of CSV values into a struct of the table's columns with the scanner;
    null where a record needs the per-record decoding (picklable: built on the driver, run in
    the tasks)."""

    def __init__(
        self,
        columns: Sequence[Column],
        described: tuple[ScanColumn, ...],
        settings: Mapping[str, Any],
    ) -> None:
        from pyspark.sql.pandas.types import to_arrow_type

        self.columns = described  # scan_columns(columns, "SQL")
        #: The struct's Spark type: what the per-record decoding gives for the same columns.
        self.spark_type = struct_type(columns)
        self.arrow_type: pa.StructType = to_arrow_type(self.spark_type, timezone="UTC")
        quote, escape = settings.get("quote-character"), settings.get("escape-character")
        literal = settings.get("null-literal")
        self.arguments = (
            ord(settings["field-delimiter"]),
            -1 if quote is None else ord(quote),
            -1 if escape is None else ord(escape),
            None if literal is None else str(literal).encode(),
            bool(settings["allow-comments"]),
        )

    def __call__(self, values: pa.Array) -> pa.Array:
        import pyarrow as pa

        try:
            struct, _ = scanned(
                values, self.arrow_type, scanner().scan_csv, self.columns, *self.arguments
            )
        except pa.ArrowException:  # never fail the reading task: decode per record
            return pa.nulls(len(values), self.arrow_type)
        return struct


def csv_decoder(columns: Sequence[Column], settings: Mapping[str, Any]) -> NativeCsv | None:
    """The scanner of a flat CSV table, or None when the table needs the per-record decoding
    for every record (nested columns, a delimiter, quote or escape that is not one ASCII
    character, or no scanners built)."""
    characters = [settings.get(k) for k in ("field-delimiter", "quote-character")]
    characters.append(settings.get("escape-character"))
    if any(c is not None and (len(str(c)) != 1 or ord(str(c)) > 0x7F) for c in characters):
        return None
    described = scan_columns(columns, "SQL")
    if settings.get("field-delimiter") is None or described is None:
        return None
    return NativeCsv(columns, described, settings)


#: A protobuf column's scanner kind by its Flink type (see ``_text_scan.c``).
_PROTO_KINDS = {
    **dict.fromkeys(TEXT_TYPES, "s"),
    **dict.fromkeys(("BINARY", "VARBINARY", "BYTES"), "y"),
    "INT": "I",
    "BIGINT": "L",
    "FLOAT": "f",
    "DOUBLE": "d",
    "BOOLEAN": "b",
}
_PB_ENUM, _PB_GROUP = 14, 10
#: Field flags: the record is left when the field is present; a closed enum.
_PB_LEAVE, _PB_CLOSED = 1, 2


class NativeProtobuf:
    """Decodes a batch of serialized messages into a struct of a flat table's columns with the
    scanner; null where a record needs the per-record decoding (picklable: built on the
    driver, run in the tasks)."""

    def __init__(
        self,
        columns: Sequence[Column],
        described: tuple[tuple[bytes, str, bool, tuple[tuple[int, bytes], ...] | None], ...],
        fields: tuple[tuple[int, int, int, int], ...],
    ) -> None:
        from pyspark.sql.pandas.types import to_arrow_type

        self.columns = described
        self.fields = fields
        #: The struct's Spark type: what the per-record decoding gives for the same columns.
        self.spark_type = struct_type(columns)
        self.arrow_type: pa.StructType = to_arrow_type(self.spark_type, timezone="UTC")

    def __call__(self, values: pa.Array) -> pa.Array:
        import pyarrow as pa

        try:
            struct, _ = scanned(
                values, self.arrow_type, scanner().scan_protobuf, self.columns, self.fields
            )
        except pa.ArrowException:  # never fail the reading task: decode per record
            return pa.nulls(len(values), self.arrow_type)
        return struct


def protobuf_decoder(
    columns: Sequence[Column], settings: Mapping[str, Any]
) -> NativeProtobuf | None:
    """The scanner of a flat table of a message's singular scalar, string, bytes and enum
    fields, or None when the table needs the per-record decoding for every record: a nested
    column, a member of a oneof of several fields, a message with required fields, an enum
    into a small integer, default values read where a field tracks presence, or no scanners
    built."""
    from ..options.protobuf_descriptors import message_descriptor

    if scanner() is None or not columns or len(columns) > MAX_COLUMNS:
        return None
    message = message_descriptor(settings["descriptor-set"], settings["message"])
    defaults = bool(settings["read-default-values"])
    if any(f.is_required for f in message.fields):
        return None
    by_name = {c.name: i for i, c in enumerate(columns)}
    described = []
    for column in columns:
        field = message.fields_by_name.get(column.name)
        kind = _PROTO_KINDS.get(column.flink_type.name)
        oneof = field.containing_oneof if field is not None else None
        if (
            field is None
            or kind is None
            or field.is_repeated
            or field.message_type is not None
            or (oneof is not None and len(oneof.fields) > 1)
            or (defaults and field.has_presence)
            or (field.type == _PB_ENUM and kind not in "sIL")
        ):
            return None
        names = None
        if field.enum_type is not None:
            names = tuple((v.number, v.name.encode()) for v in field.enum_type.values)
        unset_null = not defaults and field.has_presence
        described.append((column.name.encode(), kind, unset_null, names))
    fields = []
    for field in sorted(message.fields, key=lambda f: f.number):
        flags = 0
        if field.is_repeated or field.message_type is not None or field.type == _PB_GROUP:
            flags |= _PB_LEAVE
        if field.enum_type is not None and field.enum_type.is_closed:
            flags |= _PB_CLOSED
        fields.append((field.number, field.type, by_name.get(field.name, -1), flags))
    return NativeProtobuf(columns, tuple(described), tuple(fields))


#: An Avro column's scanner kind by its Avro type (see ``_text_scan.c``): a primitive's name, or
#: (type, logicalType) of a logical one; TINYINT and SMALLINT are ints of a narrower range.
_AVRO_KINDS: dict[Any, str] = {
    "string": "s",
    "bytes": "y",
    "boolean": "b",
    "int": "I",
    "long": "L",
    "float": "f",
    "double": "d",
    ("bytes", "decimal"): "m",
    ("int", "date"): "D",
    ("int", "time-millis"): "C",
    ("long", "timestamp-millis"): "t",
    ("long", "local-timestamp-millis"): "t",
    ("long", "timestamp-micros"): "T",
    ("long", "local-timestamp-micros"): "T",
}
_AVRO_NARROW = {"TINYINT": "B", "SMALLINT": "H"}
#: A scanner's description of an Avro column: name, kind, nullable, DECIMAL precision and scale.
AvroColumn = tuple[bytes, str, bool, int, int]


def _avro_column(column: Column, field: Mapping[str, Any]) -> AvroColumn | None:
    """The scanner's description of ``column`` read as the record's ``field`` (its type as the
    derived schema writes it: the type, or a union of null and the type), or None."""
    avro_type, nullable = field["type"], False
    if isinstance(avro_type, list):
        if len(avro_type) != 2 or avro_type[0] != "null":
            return None
        avro_type, nullable = avro_type[1], True
    precision, scale = 0, 0
    if isinstance(avro_type, dict):
        logical = avro_type.get("logicalType")
        kind = _AVRO_KINDS.get((avro_type.get("type"), logical)) if logical else None
        if kind == "m":
            precision, scale = avro_type["precision"], avro_type.get("scale", 0)
    else:
        kind = _AVRO_KINDS.get(avro_type)
    if kind == "I":
        kind = _AVRO_NARROW.get(column.flink_type.name, kind)
    if kind is None or (kind == "m" and not (1 <= precision <= 38 and 0 <= scale <= precision)):
        return None
    return (column.name.encode(), kind, nullable, precision, scale)


class NativeAvro:
    """Decodes a batch of Avro datums into a struct of a flat table's columns with the scanner;
    null where a record needs the per-record decoding (picklable: built on the driver, run in
    the tasks)."""

    def __init__(self, columns: Sequence[Column], described: tuple[AvroColumn, ...]) -> None:
        from pyspark.sql.pandas.types import to_arrow_type

        self.columns = described
        #: The struct's Spark type: what the per-record decoding gives for the same columns.
        self.spark_type = struct_type(columns)
        self.arrow_type: pa.StructType = to_arrow_type(self.spark_type, timezone="UTC")

    def __call__(self, values: pa.Array) -> pa.Array:
        import pyarrow as pa

        try:
            struct, _ = scanned(values, self.arrow_type, scanner().scan_avro, self.columns)
        except pa.ArrowException:  # never fail the reading task: decode per record
            return pa.nulls(len(values), self.arrow_type)
        return struct


def avro_decoder(columns: Sequence[Column], schema: str) -> NativeAvro | None:
    """The scanner of a flat table's datums of ``schema`` (the Avro schema derived from
    ``columns``, Avro's binary encoding), or None when the table needs the per-record decoding
    for every record: a nested column, a type the scanner does not read, or no scanners built."""
    import json

    if scanner() is None or not columns or len(columns) > MAX_COLUMNS:
        return None
    fields = json.loads(schema)["fields"]
    if len(fields) != len(columns):
        return None
    described = []
    for column, field in zip(columns, fields, strict=True):
        if field["name"] != column.name:
            return None
        described_column = _avro_column(column, field)
        if described_column is None:
            return None
        described.append(described_column)
    return NativeAvro(columns, tuple(described))
