"""A run's records decoded table by table, with the source format's own decoding.

Each table's records are decoded as a Kafka table of the source's format whose columns are the
table's schema (:func:`~..source.records.decode_records`): Flink's rules for the envelope, the
JSON values, row kinds and dirty records all apply unchanged. A record that names no table is
dirty; a Canal DDL record (``isDdl``) yields no row. The union of every table's error and
provenance columns is what the run counts and what the dirty-data policy reads.

Each decoded row also gets :data:`~..sink.serializer.SEQUENCE` (its order among its table's
rows) and :data:`PAIR`, shared by the ``-U`` and ``+U`` rows of one update, so the two images
are written as one change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import TYPE_CHECKING, Any

from ..formats.json import snippet
from ..options import ROW_KIND, FlinkType, ValueFieldsInclude, flink_type_of, resolve_format
from ..run.decode import DecodedTable, InputCounts, input_stats
from ..run.schema import InferredSchema, flattened, sample_ranges, with_schema
from ..run.tables import ResolvedTable
from ..sink.serializer import SEQUENCE
from ..source.probe import sample_values
from ..source.records import (
    DIRTY_COLUMNS,
    ERROR,
    PARTIAL,
    PROVENANCE,
    RECORD_START,
    TOLERATED,
    VALUE_BYTES,
    decode_records,
    yields_row,
)
from .observe import (
    TABLE_ID,
    TableObservation,
    observe_tables,
    table_id,
    table_id_column,
    table_schemas,
)
from .tables import TableId

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..source.admin import KafkaAdmin
    from ..source.enumerator import SourcePlan
    from .definition import IngestionSource

__all__ = ["PAIR", "DecodedTables", "TableRows", "decode_tables"]

#: The column shared by the rows of one change (the two images of an update).
PAIR = "__dkf_pair"
_HELPERS = (ROW_KIND, *DIRTY_COLUMNS, *PROVENANCE, SEQUENCE, PAIR)


@dataclass(frozen=True)
class TableRows:
    """One source table's decoded rows: its columns, row kinds, order and pairs."""

    table: TableId
    #: Every decoded row (dirty ones with their error), persisted for the run.
    frame: DataFrame
    columns: Mapping[str, FlinkType]
    primary_key: tuple[str, ...] = ()

    @property
    def clean(self) -> DataFrame:
        """The rows that decoded: the columns, :data:`ROW_KIND`, ``SEQUENCE`` and :data:`PAIR`."""
        from pyspark.sql import functions as F

        names = [F.col(f"`{c}`") for c in self.columns]
        rows = self.frame.filter(yields_row())
        return rows.select(*names, ROW_KIND, SEQUENCE, PAIR)


@dataclass
class DecodedTables:
    """What decoding a run's records produced, table by table."""

    tables: dict[TableId, TableRows] = field(default_factory=dict)
    schemas: dict[TableId, InferredSchema] = field(default_factory=dict)
    observed: dict[TableId, TableObservation] = field(default_factory=dict)
    #: Frames cached for the run (released by :meth:`release`).
    cached: list[Any] = field(default_factory=list)

    def release(self) -> None:
        """Unpersist the run's cached frames."""
        for frame in self.cached:
            frame.unpersist()
        self.cached.clear()


def _table_spec(
    base: ResolvedTable, source: IngestionSource, schema: InferredSchema, keys: set[str]
) -> ResolvedTable:
    """``base`` declaring the table's columns (and, for a keyed JSON source, its key)."""
    table = with_schema(base, schema)
    spec = replace(table.spec, value_fields_prefix=source.value_prefix)
    key_fields = tuple(c.name for c in spec.physical_columns if c.name in keys)
    if key_fields:
        spec = replace(
            spec,
            key_format=resolve_format({}, "json", "key.format"),
            key_fields=key_fields,
            key_fields_prefix=source.key_prefix,
            value_fields_include=ValueFieldsInclude.EXCEPT_KEY,
        )
    return replace(table, spec=spec)


def _rows(
    table: TableId, resolved: ResolvedTable, schema: InferredSchema, raw: DataFrame, pk: tuple
) -> TableRows:
    from pyspark.sql import functions as F

    frame = flattened(decode_records(resolved.spec, raw), resolved, schema)
    if ROW_KIND not in frame.columns:
        frame = frame.withColumn(ROW_KIND, F.when(yields_row(), F.lit("+I")))
    frame = frame.withColumn(SEQUENCE, F.monotonically_increasing_id())
    plus_u = F.col(ROW_KIND) == F.lit("+U")  # follows its -U: same pair
    frame = frame.withColumn(
        PAIR, F.when(plus_u, F.col(SEQUENCE) - 1).otherwise(F.col(SEQUENCE))
    ).persist()
    declared = {c.name: c.flink_type for c in resolved.spec.columns}
    types = {**declared, **schema.fields}
    columns = {
        f.name: types.get(f.name) or flink_type_of(f.dataType)
        for f in frame.schema.fields
        if f.name not in _HELPERS
    }
    return TableRows(table, frame, columns, pk)


def _unnamed(source: IngestionSource, raw: DataFrame) -> DataFrame:
    """Records that name no table, as dirty rows with provenance."""
    from pyspark.sql import functions as F

    fmt = source.value_format
    what = {
        "debezium-json": "'source.table' (and 'source.db') missing",
        "canal-json": "'table' (and 'database') missing",
        "json": f"a field of 'json.decode.parser-table-id.fields' "
        f"({', '.join(source.table_id_fields)}) missing",
    }[fmt]
    text = F.col("value").cast("string")
    parsed = F.from_json(text, "map<string,string>")
    not_json = F.concat(F.lit(f"value ({fmt}): not a {fmt} record: "), snippet(text))
    error = F.when(parsed.isNull(), not_json)
    error = error.otherwise(F.lit(f"value ({fmt}): the record names no table: {what}"))
    tolerated = F.lit(bool(source.spec.value_format.ignore_parse_errors))
    fields = ("topic", "partition", "offset", "key", "value", "timestamp")
    provenance = [F.col(f).alias(p) for f, p in zip(fields, PROVENANCE, strict=False)]
    return raw.filter(F.col(TABLE_ID).isNull()).select(
        error.alias(ERROR),
        tolerated.alias(TOLERATED),
        F.lit(False).alias(PARTIAL),
        *provenance,
        F.coalesce(F.length("value"), F.lit(0)).alias(VALUE_BYTES),
        F.lit(True).alias(RECORD_START),
    )


def sample_tables(
    table: ResolvedTable, admin: KafkaAdmin, plan: SourcePlan, source: IngestionSource, spark: Any
) -> dict[str, TableObservation]:
    """The ``static`` strategy's sample: the newest records of each partition, observed."""

    ranges = sample_ranges(table, admin, plan)
    rows = []
    for topic in sorted({t for t, _ in ranges}):
        mine = {tp: r for tp, r in ranges.items() if tp[0] == topic}
        for value in sample_values(table.consumer, mine, timeout_s=admin.timeout_s):
            rows.append((topic, 0, 0, None, value))
    if not rows:
        return {}
    schema = "topic string, partition int, offset long, key binary, value binary"
    frame = spark.createDataFrame(rows, schema)
    return observe_tables(frame.withColumn(TABLE_ID, table_id_column(source)), source)


def decode_tables(
    source: IngestionSource,
    table: ResolvedTable,
    raw: DataFrame,
    saved: Mapping[str, Mapping[str, str]],
    sampled: Any = None,
) -> tuple[DecodedTable, DecodedTables]:
    """Decode ``raw`` (a run's records) table by table.

    ``saved`` are the schemas the last run kept (by table id); ``sampled`` a callable giving
    the ``static`` strategy's sample (asked only when no schema was kept). Returns the
    :class:`~..run.decode.DecodedTable` the run cycle counts and applies the dirty-data policy
    to (its frame: the clean records' table ids), and the tables' rows.

    Raises:
        DeserializationError: a table's schema changes incompatibly and errors are not
            tolerated.
    """
    from pyspark.sql import functions as F

    from ..formats import get_format

    fmt = source.spec.value_format
    kept = raw.filter(~get_format(fmt.name).skipped(F.col("value"), fmt))
    if fmt.name == "canal-json":  # a DDL record changes a schema, which inference follows
        ddl = F.get_json_object(F.col("value").cast("string"), "$.isDdl") == F.lit("true")
        kept = kept.filter(~F.coalesce(ddl, F.lit(False)))
    kept = kept.withColumn(TABLE_ID, table_id_column(source)).persist()
    out = DecodedTables(cached=[kept])
    observed = observe_tables(kept, source)
    static = source.spec.inference_strategy == "static" and not saved and sampled is not None
    schemas = table_schemas(source, observed, saved, sampled() if static else None)
    for tid, schema in schemas.items():
        name = table_id(tid)
        initial = source.initial_schemas.get(name)
        pk = initial.primary_key if initial and initial.primary_key else observed[tid].primary_key
        resolved = _table_spec(table, source, schema, observed[tid].key_fields)
        rows = _rows(name, resolved, schema, kept.filter(F.col(TABLE_ID) == F.lit(tid)), pk)
        out.tables[name], out.schemas[name], out.observed[name] = rows, schema, observed[tid]
        out.cached.append(rows.frame)
    parts = [r.frame.select(*DIRTY_COLUMNS, *PROVENANCE) for r in out.tables.values()]
    decoded = reduce(lambda a, b: a.unionByName(b), parts, _unnamed(source, kept))
    clean = decoded.filter(yields_row())
    counts = InputCounts.known(input_stats(decoded))
    return DecodedTable(frame=clean, records=lambda: decoded, counts=counts), out
