"""The Avro formats' fast path: Spark's own ``from_avro`` in the JVM, Python only where it fails.

Spark's Avro package decodes a datum an order of magnitude faster than a Python worker can.
When the session has it (see :func:`..._sessions.has_spark_avro`) and the table's columns are types
``from_avro`` yields exactly as declared, each record is first decoded by ``from_avro`` in
PERMISSIVE mode (null for a datum it cannot read); only those records then reach the Python
decoder, which reads them the slow way or says why they are dirty. For ``avro-confluent`` the
writer schemas are the versions registered under the table's subject (their references
inlined), fetched on the driver when the query is planned; records written with any other schema
id, or carrying it in a header, take the Python path, so the result is the same as Python's
alone. A registry that does not answer that fetch fails the run, as it would in the workers.
TIME columns (and types ``from_avro`` does not yield as declared) always take the Python path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FlinkType

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn

logger = logging.getLogger(__name__)

#: Types ``from_avro`` returns as the declared Spark type at any depth.
_NATIVE = {"STRING", "VARCHAR", "CHAR", "BOOLEAN", "INT", "BIGINT", "FLOAT", "DOUBLE",
           "DECIMAL", "DATE", "BYTES", "BINARY", "VARBINARY", "TIMESTAMP_LTZ"}  # fmt: skip
_MAX_WRITERS = 20  # writer schemas of a subject tried in the JVM: the newest versions
#: A field only the reader schema has, so Avro's resolution fills it with its default (true) for
#: every datum read: PERMISSIVE ``from_avro`` gives a row of nulls, not a null, for a datum it
#: cannot read, and this field's null tells the two apart.
_SENTINEL = "__dkf_read"


def _with_sentinel(reader: str) -> str:
    record = json.loads(reader)
    sentinel = {"name": _SENTINEL, "type": "boolean", "default": True}
    return json.dumps({**record, "fields": [*record["fields"], sentinel]}, separators=(",", ":"))


def _native(t: FlinkType) -> bool:
    if t.name in ("ARRAY", "ROW") or (t.name == "MAP" and t.children[0].name == "STRING"):
        return all(_native(c) for c in t.children)
    return t.name in _NATIVE


def from_avro_reads(columns: Sequence[Column]) -> bool:
    """Whether Spark's ``from_avro`` can decode records into ``columns`` in the active session:
    the session has Spark's Avro package, and the columns are types ``from_avro`` yields as
    declared (native types at any depth, and top-level TIMESTAMP columns)."""
    from pyspark.sql import SparkSession

    from .._sessions import has_spark_avro

    if not all(_native(c.flink_type) or c.flink_type.name == "TIMESTAMP" for c in columns):
        return False
    spark = SparkSession.getActiveSession()
    return spark is not None and has_spark_avro(spark)


def _as_declared(decoded: SparkColumn, columns: Sequence[Column], legacy: bool) -> SparkColumn:
    """``from_avro``'s staged struct as the table's row (null where it read nothing): TIMESTAMP
    is the UTC wall clock of the instant Avro's ``timestamp-*`` holds (legacy mapping), or
    Avro's ``local-timestamp-*`` as it is."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.getActiveSession()
    zone = spark.conf.get("spark.sql.session.timeZone", "UTC") if spark is not None else "UTC"
    fields = []
    for c in columns:
        value = decoded[c.name]
        if c.flink_type.name == "TIMESTAMP" and legacy:
            if zone in ("UTC", "Etc/UTC", "Z", "+00:00", "GMT"):
                value = value.cast("timestamp_ntz")
            else:
                value = F.convert_timezone(F.lit(zone), F.lit("UTC"), value)
        fields.append(value.alias(c.name))
    return F.when(decoded[_SENTINEL].isNotNull(), F.struct(*fields))


def decode_plain(raw: SparkColumn, schema: str) -> Any:
    """``from_avro`` of each datum of ``schema`` (its fields null where it cannot read it)."""
    from pyspark.sql.avro.functions import from_avro

    options = {"mode": "PERMISSIVE", "avroSchema": _with_sentinel(schema)}
    return from_avro(raw, schema, options)


def subject_writers(conf: Mapping[str, Any], subject: str | None) -> dict[int, str]:
    """Schema id → schema text (references inlined) of the newest Avro versions registered under
    ``subject``; empty when there is no subject or it has no versions (Python then reads all).

    Raises:
        SchemaRegistryClientError: the registry did not answer (the run fails).
    """
    from . import _registry
    from ._avro_schema import self_contained

    if not subject:
        return {}
    registry = _registry.client(conf)
    writers = {}
    try:
        versions = _registry.request(
            conf, f"listing the versions of subject {subject!r}",
            lambda: registry.get_versions(subject),
        )  # fmt: skip
        for version in versions[-_MAX_WRITERS:]:
            found = _registry.request(
                conf, f"fetching version {version} of subject {subject!r}",
                _registry.version_of(registry, subject, version),
            )  # fmt: skip
            if (found.schema.schema_type or "AVRO") != "AVRO":
                continue
            try:
                writer = self_contained(conf, registry, found.schema)
            except (_registry.SchemaNotFound, ValueError) as exc:  # Python says why, per record
                logger.info("Version %s of %s is left to Python: %s", version, subject, exc)
                continue
            writers[found.schema_id] = json.dumps(writer, separators=(",", ":"))
    except _registry.SchemaNotFound:  # no such subject (yet): Python reads every record
        return writers
    return writers


def decode_confluent(
    raw: SparkColumn,
    headers: SparkColumn | None,
    writers: Mapping[int, str],
    reader: str,
    header: str,
) -> Any:
    """``from_avro`` of Confluent-framed records whose writer schema is one of ``writers``,
    resolved into ``reader``; null for every other record."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from ._registry import frame

    payload = F.substring(raw, 6, 2**31 - 1)
    prefix = F.substring(raw, 1, 5)
    options = {"mode": "PERMISSIVE", "avroSchema": _with_sentinel(reader)}
    decoded = F.coalesce(*[
        F.when(prefix == F.lit(frame(schema_id, b"")), from_avro(payload, writer, options))
        for schema_id, writer in writers.items()
    ])  # fmt: skip
    if headers is not None:  # a schema id in a header: the value is bare, Python reads it
        in_header = F.exists(F.coalesce(headers, F.array()), lambda h: h["key"] == F.lit(header))
        decoded = F.when(~in_header, decoded)
    return decoded


def staged(
    prefix: str,
    fast: SparkColumn,
    raw: SparkColumn,
    slow: Any,
    headers: SparkColumn | None,
    columns: Sequence[Column],
    legacy: bool,
) -> tuple[list[dict[str, SparkColumn]], tuple[SparkColumn, SparkColumn, SparkColumn]]:
    """The stages of a ``from_avro`` decoding (``fast``, evaluated once per record in its own
    projection) with the Python decoder ``slow`` for the records it left:
    (stages, (row, error, tolerated))."""
    from pyspark.sql import functions as F

    from ._python import ERROR, ROW

    jvm, python = f"{prefix}avro_jvm", f"{prefix}avro"
    left = F.when(F.col(jvm)[_SENTINEL].isNull() & raw.isNotNull(), raw)
    stage = slow(left, headers)
    row = F.coalesce(_as_declared(F.col(jvm), columns, legacy), F.col(python)[ROW])
    return [{jvm: fast}, {python: stage}], (row, F.col(python)[ERROR], F.lit(False))


__all__ = [
    "decode_confluent",
    "decode_plain",
    "from_avro_reads",
    "staged",
    "subject_writers",
]
