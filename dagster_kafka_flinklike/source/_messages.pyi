"""Fields of a batch of consumed messages into Arrow buffers (``_messages.c``)."""

from collections.abc import Callable
from typing import Any

def timestamps(
    messages: list[Any], method: Callable[[Any], tuple[int, int]]
) -> tuple[bytes | None, bytes, list[tuple[int, int, int]]]:
    """Microseconds since the epoch (int64), null where a message has no timestamp or one whose
    microseconds overflow int64; those listed as (index, type, milliseconds)."""

def binaries(
    messages: list[Any], method: Callable[[Any], bytes | None]
) -> tuple[bytes | None, bytes, bytes]:
    """An Arrow binary array's validity (None: no nulls), int32 offsets and data."""
