"""Rules of the changelog formats (``debezium-json``, ``canal-json``, ``maxwell-json``,
``ogg-json``) that involve more than their own options, as Flink's table factories enforce them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import KafkaOptionsError
from ._formats import CHANGELOG_FORMATS, FormatSpec
from ._metadata import ROW_KIND
from ._types import Column


def changelog_rules(
    *,
    upsert: bool,
    value_format: FormatSpec,
    value_key: str,
    key_format: FormatSpec | None,
    columns: Iterable[Column],
    sink: bool,
    opts: Mapping[str, str],
) -> None:
    """A changelog format is a value format only, never the value of ``upsert-kafka``; its
    tables reserve the :data:`ROW_KIND` column name; ``debezium-json.schema-include`` is read
    only.

    Raises:
        KafkaOptionsError: naming the offending option (or column).
    """
    if key_format is not None and key_format.name in CHANGELOG_FORMATS:
        raise KafkaOptionsError(
            f"Option 'key.format' = '{key_format.name}' is a changelog format (row kinds +I, -U, "
            f"+U, -D); a key format must be insert-only, as in Flink. Use it as the value format.",
            keys=("key.format",),
        )
    changelog = value_format.name in CHANGELOG_FORMATS
    if upsert and changelog:
        raise KafkaOptionsError(
            f"The 'upsert-kafka' connector doesn't support '{value_format.name}' as "
            f"'{value_key}': it is a changelog format, and upsert values must be insert-only. "
            f"Read it with the 'kafka' connector.",
            keys=(value_key,),
        )
    if (changelog or upsert) and any(c.name == ROW_KIND for c in columns):
        raise KafkaOptionsError(
            f"Column '{ROW_KIND}' is reserved in a changelog table: it holds each row's row "
            f"kind. Rename the column.",
            keys=(value_key,),
        )
    if sink and value_format.name == "debezium-json" and value_format.settings["schema-include"]:
        spellings = ("debezium-json.schema-include", "value.debezium-json.schema-include")
        key = next((k for k in spellings if k in opts), spellings[0])
        raise KafkaOptionsError(
            f"Option '{key}' = 'true' cannot be written: Flink's debezium-json serialization "
            f"does not write a schema. Set it only on source tables.",
            keys=(key,),
        )
