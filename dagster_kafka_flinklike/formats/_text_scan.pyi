"""The text formats' record scanners (``_text_scan.c``)."""

from typing import Any

def scan(
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    columns: tuple[tuple[bytes, str, int, int], ...],
) -> tuple[bytes, list[tuple[bytes, ...]]]:
    """Decode ``length`` JSON values of an Arrow binary array (its buffers) into the flat
    ``columns`` (name, kind, precision, scale): a bitmap of the records decoded, and each
    column's Arrow buffers. Buffers, ``offset`` and ``length`` that do not fit each other (or
    offsets outside the data) raise ValueError; nothing is read outside them."""

def scan_nested(
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    columns: tuple[tuple[Any, ...], ...],
    node_mode: bool = False,
) -> tuple[bytes, list[tuple[int, tuple[bytes, ...], list[Any]]]]:
    """As :func:`scan`, for columns that may be nested: a scalar is (name, kind, precision,
    scale); a row, an array or a map is (name, ``"R"``, ``"A"`` or ``"M"``, 0, 0, children: its
    fields, its element, or its key and value). Each column's result is (slots, its Arrow
    buffers, its children's results). ``node_mode``: a number in a text position leaves its
    record (Flink's node-based reading writes it otherwise)."""

def scan_csv(
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    columns: tuple[tuple[bytes, str, int, int], ...],
    delimiter: int,
    quote: int,
    escape: int,
    null_literal: bytes | None,
    comments: bool,
) -> tuple[bytes, list[tuple[bytes, ...]]]:
    """As :func:`scan`, for CSV records (``columns`` in field order; ``quote`` and ``escape``
    byte values or -1 for none)."""

def scan_avro(
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    columns: tuple[tuple[bytes, str, bool, int, int], ...],
) -> tuple[bytes, list[tuple[bytes, ...]]]:
    """As :func:`scan`, for Avro datums (binary encoding) of the record of the flat ``columns``
    in its field order: (name, kind, nullable: a union of null and the type, precision,
    scale)."""

def exact(
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    nodes: bytes,
    names: bytes,
    node_mode: bool = False,
    maps: bool = False,
) -> tuple[bytes, bytes, bytes]:
    """The json format's exactness pass over ``length`` values of an Arrow binary array (its
    buffers) along a packed type tree (``nodes``, 16 bytes each, root first; ``names``): the
    buffers of a binary array valid where a record was rewritten. ``node_mode``: numbers in
    text positions as Flink's node-based reading gives them (the changelog formats); ``maps``:
    each MAP written as the array of its entries, for Arrow's parser."""
