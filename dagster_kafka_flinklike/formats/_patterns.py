"""The texts Flink reads as dates, times, timestamps and numbers, as regular expressions.

The per-record decoding (Spark expressions, :mod:`.json`) and the batch decoding in the reading
tasks (:mod:`._arrow_json`) check values against the same patterns, so a record is clean or
dirty whichever path reads it.
"""

from __future__ import annotations

#: ``yyyy-MM-dd``.
DATE = r"^\d{4}-\d{2}-\d{2}$"
#: HH:mm:ss[.fraction] naming a time of day (Flink refuses 24:00:00, 12:60:00 and 12:00:60).
TIME = r"^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?$"
#: The start of a timestamp's text in each ``timestamp-format.standard`` (a zone may follow).
TIMESTAMP = {
    "SQL": r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,9})?",
    "ISO-8601": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?",
}
#: An integer as Java's ``Integer.parseInt`` reads a trimmed text (what Flink gives a TINYINT to
#: BIGINT from a JSON string or a CSV field): a sign, digits, blanks (up to U+0020) around.
INTEGER = r"^[\x00-\x20]*[+-]?[0-9]+[\x00-\x20]*$"
#: A decimal number, possibly in scientific notation, with surrounding blanks.
NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"

__all__ = ["DATE", "INTEGER", "NUMBER", "TIME", "TIMESTAMP"]
