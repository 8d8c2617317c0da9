"""The ``debezium-avro-confluent`` changelog format: Debezium's change events in Avro with a
Confluent Schema Registry, as Flink reads and writes them.

Reading: each record is Avro in Confluent's framing, as Debezium's ``AvroConverter`` writes it;
its writer schema (the envelope: ``before``, ``after``, ``op``, ``source``, ``ts_ms``, ...) is
fetched from the registry and resolved into the table's envelope — ``before`` and ``after`` the
table's columns, ``op`` a string — exactly as the ``avro-confluent`` format reads a record
(references, logical types, failures of the registry: see :mod:`.avro_confluent`). Then ``op``
says what the record is, as in ``debezium-json``: ``c`` and ``r`` yield ``+I`` of ``after``,
``u`` ``-U`` of ``before`` and ``+U`` of ``after``, ``d`` ``-D`` of ``before``; a missing image
or an unknown ``op`` is dirty. A null or empty value (Debezium's tombstone) yields no row.

Writing, as Flink writes: ``+I``/``+U`` rows become ``{before: null, after: row, op: "c"}``,
``-U``/``-D`` rows ``{before: row, after: null, op: "d"}``, the envelope's schema (Flink's
derived one, or ``debezium-avro-confluent.schema``) registered under the subject on the driver.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import KafkaOptionsError
from ..options import Column, FormatSpec
from . import _changelog as cl
from .avro_confluent import AvroConfluent
from .base import Fields, Options, Stages, format_settings
from .debezium import change_event, event_rows

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

NAME = "debezium-avro-confluent"
_ENVELOPE_FIELDS = ("before", "after", "op")
#: The format the envelope is read and written with.
_AVRO = AvroConfluent(written_as=NAME)


def _envelope(columns: Sequence[Column]) -> list[Column]:
    """Flink's Debezium Avro row: the nullable images of the table's row and the operation."""
    row = cl.row_type(columns)
    return [Column("before", row), Column("after", row), Column("op", "STRING")]


def _avro(options: Options) -> FormatSpec:
    """The ``avro-confluent`` settings the envelope is read and written with (Flink's legacy
    timestamp mapping: Debezium's Avro formats have no other)."""
    settings = dict(format_settings(NAME, options))
    given = settings.get("schema")
    if given:
        fields = [f.get("name") for f in json.loads(given).get("fields", [])]
        if not set(_ENVELOPE_FIELDS) <= set(fields):
            raise KafkaOptionsError(
                f"Option '{NAME}.schema' must be a record with the fields 'before', 'after' and "
                f"'op' (Debezium's envelope); it has {', '.join(map(str, fields)) or 'none'}.",
                keys=(f"{NAME}.schema",),
            )
    settings["timestamp_mapping.legacy"] = True
    return FormatSpec("avro-confluent", {}, settings)


class DebeziumAvro(cl.ChangelogFormat):
    """The ``debezium-avro-confluent`` format (see the module's docstring)."""

    name = NAME

    def decode_changelog_stages(
        self,
        raw: SparkColumn,
        columns: Sequence[Column],
        metadata: Sequence[str],
        options: Options,
        prefix: str | None = None,
        native: SparkColumn | None = None,
    ) -> tuple[Stages, tuple[Any, Any, Any, Any]]:
        """Decode Debezium Avro into changelog rows of ``columns`` (the format has no metadata
        keys here: ``metadata`` is empty, and no native decoding: ``native`` is None).

        Raises:
            KafkaOptionsError: ``debezium-avro-confluent.schema`` is not Debezium's envelope.
        """
        from pyspark.sql import functions as F

        stages, (envelope, error, _) = _AVRO.decode_stages(
            raw, _envelope(columns), _avro(options), prefix or "__dkf_"
        )
        rows, op_error = event_rows(envelope)
        rows, error = cl.outcome(cl.is_tombstone(raw), rows, error, op_error)
        return stages, (rows, None, error, F.lit(False))

    def encode(
        self, fields: Fields, options: Options, kind: SparkColumn | None = None
    ) -> SparkColumn:
        """Each row as a Debezium Avro event in Confluent's framing: ``op`` ``c`` with ``after``
        for ``+I``/``+U`` (and rows without a kind), ``d`` with ``before`` for ``-U``/``-D``.

        Raises:
            KafkaOptionsError: no subject is known, or ``debezium-avro-confluent.schema`` is not
                Debezium's envelope.
            SchemaRegistryClientError: the registry refused the envelope's schema or did not
                answer.
        """
        event = change_event(*cl.images(fields, kind, "c", "d"))
        return _AVRO.encode(event, _avro(options))


FORMAT = DebeziumAvro()

__all__ = ["FORMAT", "DebeziumAvro"]
