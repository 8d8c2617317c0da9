"""The sink side of a pipeline run: each table's rows transformed, routed into their sink
tables, paired into changes and encoded as Flink CDC's Kafka sink writes them, one frame per
topic.

- A sink table that several source tables are routed into has their columns merged (types
  widened, columns a table lacks are null), as Flink CDC merges routed schemas.
- The ``-U``/``+U`` rows of one update become one change (``before`` and ``after``); a lone
  ``-U`` (its after image filtered out) is a delete, a lone ``+U`` an insert.
- ``debezium-json``: ``{"before", "after", "op": "c"|"u"|"d", "source": {"db", "table"}}``,
  with ``debezium-json.include-schema.enabled`` as ``{"schema", "payload"}`` where the schema is
  the Kafka Connect schema of ``before`` and ``after``. ``canal-json``: ``{"old": [before] for
  an update, "data": [row], "type": "INSERT"|"UPDATE"|"DELETE", "database", "table",
  "pkNames"}``. ``json``: the row. Values follow the ``json`` format's encoding.
- The key (``key.format``): ``{"TableId": "<sink table>", <primary key columns>}`` as JSON, or
  the same fields as a CSV line; none without ``key.format``.
- ``partition.strategy``: ``all-to-zero`` writes partition 0; ``hash-by-key`` places records by
  murmur2 of the key, as the Java client does. Records keep their table's order per key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING

from ..errors import KafkaOptionsError
from ..formats import canal, debezium, get_format
from ..formats.json import FORMAT as JSON
from ..options import (
    ACCUMULATIONS,
    RETRACTIONS,
    ROW_KIND,
    Column,
    FlinkType,
    flink_type_of,
    spark_type,
)
from ..sink.partitioners import SinkPartitioner
from ..sink.serializer import SEQUENCE
from ..source.inference import wider_type
from .decode import PAIR, TableRows
from .tables import TableId
from .transform import apply_transform

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from .definition import DataIngestionPipeline, IngestionSink

__all__ = ["SinkTable", "plan_outputs"]

_MEMBER = "__dkf_member"
_KEEP = (ROW_KIND, SEQUENCE, PAIR)


@dataclass(frozen=True)
class _Rows:
    table: TableId
    frame: DataFrame
    columns: Mapping[str, FlinkType]
    primary_key: tuple[str, ...]


@dataclass(frozen=True)
class SinkTable:
    """A table the pipeline writes: its topic, merged columns, key and source tables."""

    table: TableId
    topic: str
    columns: Mapping[str, FlinkType]
    primary_key: tuple[str, ...]
    sources: tuple[TableId, ...]


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _transformed(pipeline: DataIngestionPipeline, rows: TableRows) -> _Rows:
    """The table's clean rows after its transform rule (if one selects it)."""
    clean = rows.clean
    rule = pipeline.transform_of(rows.table)
    if rule is None:
        return _Rows(rows.table, clean, rows.columns, rows.primary_key)
    frame = apply_transform(rule, clean, rows.table, list(rows.columns), _KEEP)
    before = {f.name: f.dataType for f in clean.schema.fields}
    columns = {
        f.name: rows.columns[f.name]
        if f.name in rows.columns and before.get(f.name) == f.dataType
        else flink_type_of(f.dataType)
        for f in frame.schema.fields
        if f.name not in _KEEP
    }
    missing = [k for k in rule.primary_keys if k not in columns]
    if missing:
        raise KafkaOptionsError(
            f"{rule.where}: 'primary-keys' names {', '.join(missing)}, which table "
            f"{str(rows.table)!r} does not have after the projection (columns: "
            f"{', '.join(columns)}).",
            keys=("primary-keys",),
        )
    pk = rule.primary_keys or tuple(k for k in rows.primary_key if k in columns)
    return _Rows(rows.table, frame, columns, pk)


def _merged(members: Sequence[_Rows]) -> dict[str, FlinkType]:
    columns: dict[str, FlinkType] = {}
    for member in members:
        for name, t in member.columns.items():
            columns[name] = wider_type(columns[name], t) if name in columns else t
    return columns


def _aligned(member: _Rows, number: int, columns: Mapping[str, FlinkType]) -> DataFrame:
    from pyspark.sql import functions as F

    cells = [
        (F.col(_q(n)) if n in member.columns else F.lit(None)).cast(spark_type(t)).alias(n)
        for n, t in columns.items()
    ]
    return member.frame.select(*cells, *_KEEP, F.lit(number).alias(_MEMBER))


def _changes(rows: DataFrame, columns: Mapping[str, FlinkType], changelog: bool) -> DataFrame:
    """One row per change: ``before``, ``after`` (structs of ``columns``), ``SEQUENCE``."""
    from pyspark.sql import functions as F

    row = F.struct(*[F.col(_q(n)).alias(n) for n in columns])
    if not changelog:
        empty = F.lit(None).cast(spark_type(FlinkType.row(columns, columns.values())))
        return rows.select(empty.alias("before"), row.alias("after"), F.col(SEQUENCE))
    kind = F.col(ROW_KIND)
    return rows.groupBy(_MEMBER, PAIR).agg(
        F.first(F.when(kind.isin(*RETRACTIONS), row), ignorenulls=True).alias("before"),
        F.first(F.when(kind.isin(*ACCUMULATIONS), row), ignorenulls=True).alias("after"),
        F.min(SEQUENCE).alias(SEQUENCE),
    )


def _value(sink: IngestionSink, table: SinkTable) -> SparkColumn:
    from pyspark.sql import functions as F

    before, after = F.col("before"), F.col("after")
    op = F.when(before.isNotNull() & after.isNotNull(), "u").when(after.isNotNull(), "c")
    op = op.otherwise("d")
    row_t = str(FlinkType.row(table.columns, table.columns.values()))
    db, name = F.lit(table.table.schema_name).cast("string"), F.lit(table.table.table_name)
    if sink.value_format == "json":
        fields = [(after[n], Column(n, str(t))) for n, t in table.columns.items()]
        return JSON.encode(fields, {})
    if sink.value_format == "canal-json":
        kind = F.when(op == "u", "UPDATE").when(op == "c", "INSERT").otherwise("DELETE")
        keys = F.array(*[F.lit(k) for k in table.primary_key]).cast("array<string>")
        event = canal.change_event(
            F.array(F.coalesce(after, before)), kind, row_t,
            old=F.when(op == "u", F.array(before)), database=db, table=name, pk_names=keys,
        )  # fmt: skip
        return JSON.encode(event, {})
    source = F.struct(db.alias("db"), name.alias("table"))
    payload = JSON.encode(debezium.change_event(before, after, op, row_t, source), {})
    if not sink.include_schema:
        return payload
    return debezium.with_connect_schema(payload, table.columns)


def _key(sink: IngestionSink, table: SinkTable) -> SparkColumn:
    from pyspark.sql import functions as F

    if sink.key_format is None:
        return F.lit(None).cast("binary")
    image = F.coalesce(F.col("after"), F.col("before"))
    fields = [(F.lit(str(table.table)), Column("TableId", "STRING"))]
    fields += [(image[k], Column(k, str(table.columns[k]))) for k in table.primary_key]
    return get_format("csv" if sink.key_format == "csv" else "json").encode(fields, {})


def _partitioner(sink: IngestionSink, topic: str) -> SinkPartitioner:
    if sink.partition_strategy == "hash-by-key":
        return SinkPartitioner.resolve("default", topic)
    return SinkPartitioner.resolve("fixed", topic, (0,))


def plan_outputs(
    pipeline: DataIngestionPipeline, tables: Mapping[TableId, TableRows]
) -> tuple[list[tuple[str, DataFrame, SinkPartitioner]], list[SinkTable]]:
    """The encoded frames (``key``, ``value``, ``SEQUENCE``) to write, one per topic, with
    their partitioners; and the sink tables they hold.

    Raises:
        KafkaOptionsError: a transform that Spark cannot evaluate over a table, or whose
            primary keys the table does not have after it.
    """
    members: dict[TableId, list[_Rows]] = {}
    for rows in tables.values():
        transformed = _transformed(pipeline, rows)
        for target in pipeline.sink_tables(rows.table):
            members.setdefault(target, []).append(transformed)
    changelog = pipeline.source.value_format != "json"
    by_topic: dict[str, list[DataFrame]] = {}
    sink_tables: list[SinkTable] = []
    for target, group in members.items():
        columns = _merged(group)
        pk = next((m.primary_key for m in group if m.primary_key), ())
        table = SinkTable(
            target,
            pipeline.sink.topic_of(target),
            columns,
            pk,
            tuple(m.table for m in group),
        )
        aligned = reduce(
            lambda a, b: a.unionByName(b),
            [_aligned(m, i, columns) for i, m in enumerate(group)],
        )
        changes = _changes(aligned, columns, changelog)
        encoded = changes.select(
            _key(pipeline.sink, table).alias("key"),
            _value(pipeline.sink, table).alias("value"),
            SEQUENCE,
        )
        by_topic.setdefault(table.topic, []).append(encoded)
        sink_tables.append(table)
    outputs = [
        (topic, reduce(lambda a, b: a.unionByName(b), frames), _partitioner(pipeline.sink, topic))
        for topic, frames in by_topic.items()
    ]
    return outputs, sink_tables
