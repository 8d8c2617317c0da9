"""The json format's record scanner (``_json_scan.c``)."""

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
    column's Arrow buffers."""
