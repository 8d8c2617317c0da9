"""Inferred schemas: the columns of a JSON source that declares none, kept from run to run.

A table whose value format is JSON and which declares no physical column gets its columns from
its data (:mod:`..source.inference`), by ``schema.inference.strategy``:

- ``continuous`` (the default): every record the run reads is observed (one Spark pass over
  the raw values before decoding), and the schema kept from the last run widens by what was
  found: new fields become nullable columns, types widen (integers to a larger integer or
  DECIMAL, numbers to DOUBLE, a longer VARCHAR or TIMESTAMP precision, DATE to TIMESTAMP).
  A change that would turn a non-text column into STRING (a number field now holding words) is
  incompatible: the run fails naming both schemas, or, when the table tolerates dirty data
  (``ingestion.ignore-errors``, ``json.ignore-parse-errors``), the column keeps its type and
  the records that do not fit are dirty data.
- ``static``: the first run samples the newest ``scan.max.pre.fetch.records`` records of each
  partition; later runs keep that schema (new fields are not read; values that do not fit are
  dirty data).

The schema goes into each materialization's metadata (``kafka/schema/<source>``, with the
changes in ``kafka/schema_changes/<source>``), where the next run finds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import DeserializationError
from ..options import Column, FlinkType, KafkaTableSpec, parse_flink_type
from ..source.inference import (
    STRING,
    InferenceSettings,
    Observed,
    SchemaChange,
    merge_fields,
    merge_observed,
    observe_json,
)
from ..source.probe import sample_values
from .tables import ResolvedTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..source.admin import KafkaAdmin
    from ..source.enumerator import SourcePlan

#: Metadata keys of a source's inferred schema and of its changes in a run.
SCHEMA_METADATA_PREFIX = "kafka/schema/"
CHANGES_METADATA_PREFIX = "kafka/schema_changes/"
_TEXT = ("STRING", "VARCHAR", "CHAR")


@dataclass(frozen=True)
class InferredSchema:
    """A source's inferred value columns after a run, and what the run changed."""

    fields: dict[str, FlinkType]
    changes: tuple[SchemaChange, ...] = ()
    #: Changes refused as incompatible (the table tolerates dirty data, so the run went on).
    refused: tuple[SchemaChange, ...] = ()
    flatten: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, str]:
        """The fields as ``{name: Flink type}``."""
        return {name: str(t) for name, t in self.fields.items()}


def settings_of(spec: KafkaTableSpec) -> InferenceSettings:
    """The table's ``json.infer-schema.*`` options."""
    options = spec.value_format.settings
    return InferenceSettings(
        primitive_as_string=bool(options.get("infer-schema.primitive-as-string")),
        flatten_nested=bool(options.get("infer-schema.flatten-nested-columns.enable")),
        fixed_types=options.get("infer-schema.fixed-types") or {},
    )


def parse_schema(saved: Mapping[str, str] | None) -> dict[str, FlinkType]:
    """A schema saved by :meth:`InferredSchema.to_json` (empty for None)."""
    return {name: parse_flink_type(text) for name, text in (saved or {}).items()}


def _observe_partitions(settings: InferenceSettings) -> Any:
    def observe(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        seen: Observed = {}
        bad = 0
        for batch in batches:
            _, skipped = observe_json(batch.column("value").to_pylist(), settings, seen)
            bad += skipped
        found = {name: (str(t) if t is not None else None) for name, t in seen.items()}
        yield pa.RecordBatch.from_pydict({"fields": [json.dumps(found)], "bad": [bad]})

    return observe


def observe_records(raw: DataFrame, settings: InferenceSettings) -> Observed:
    """The fields of every raw value of ``raw`` (a Spark pass; one result per task)."""
    rows = raw.select("value").mapInArrow(_observe_partitions(settings), "fields string, bad long")
    seen: Observed = {}
    for row in rows.collect():
        found = json.loads(row["fields"])
        merge_observed(
            seen, {n: parse_flink_type(t) if t is not None else None for n, t in found.items()}
        )
    return seen


def sample_ranges(
    table: ResolvedTable, admin: KafkaAdmin, plan: SourcePlan
) -> dict[tuple[str, int], tuple[int, int]]:
    """The offset ranges of the newest ``scan.max.pre.fetch.records`` records of each planned
    partition (the ``static`` strategy's sample; empty when it samples nothing)."""
    count = table.spec.prefetch_records
    if not count or not plan.stops:
        return {}
    lows = admin.beginning_offsets(list(plan.stops))
    return {tp: (max(lows.get(tp, 0), stop - count), stop) for tp, stop in plan.stops.items()}


def _sample(table: ResolvedTable, admin: KafkaAdmin, plan: SourcePlan) -> Observed:
    ranges = sample_ranges(table, admin, plan)
    if not ranges:
        return {}
    values = sample_values(table.consumer, ranges, timeout_s=admin.timeout_s)
    seen, _ = observe_json(values, settings_of(table.spec))
    return seen


def infer_schema(
    table: ResolvedTable,
    raw: DataFrame,
    admin: KafkaAdmin,
    plan: SourcePlan,
    saved: Mapping[str, str] | None,
) -> InferredSchema:
    """The schema ``table``'s run decodes with (see the module docs).

    Raises:
        DeserializationError: under ``continuous``, the run's records change a column
            incompatibly and the table does not tolerate dirty data.
    """
    spec = table.spec
    settings = settings_of(spec)
    current = parse_schema(saved)
    fixed: Observed = dict(settings.fixed_types)
    if spec.inference_strategy == "static":
        if current:
            return InferredSchema(current, flatten=settings.flatten_nested)
        found = merge_observed(_sample(table, admin, plan), fixed)
    else:
        found = merge_observed(observe_records(raw, settings), fixed)
    tolerant = spec.ignore_errors or spec.value_format.ignore_parse_errors
    return evolve_schema(f"Table '{table.name}'", current, found, tolerant, settings.flatten_nested)


def evolve_schema(
    what: str,
    current: Mapping[str, FlinkType],
    found: Observed,
    tolerant: bool,
    flatten: bool = False,
) -> InferredSchema:
    """``current`` widened by the ``found`` observations; an incompatible change (a column of
    another type becoming STRING) fails, or, when ``tolerant``, keeps the column (records that
    do not fit are then dirty data). ``what`` names the table in the error.

    Example:
        >>> evolve_schema("t", {}, {"id": FlinkType("BIGINT")}, False).to_json()
        {'id': 'BIGINT'}

    Raises:
        DeserializationError: an incompatible change and not ``tolerant``.
    """
    merged, changes = merge_fields(current, found)
    refused = [c for c in changes if _incompatible(c)]
    if refused:
        if not tolerant:
            after = {**merged, **{c.column: c.after for c in refused}}
            raise DeserializationError(
                f"{what}: the records read change its inferred schema "
                f"incompatibly ({'; '.join(str(c) for c in refused)}). Schema kept so far: "
                f"{_text(current)}; schema of the records: {_text(after)}. Declare the columns "
                f"(or fix a type with 'json.infer-schema.fixed-types'), or set "
                f"'ingestion.ignore-errors' to read what fits as before and count the rest as "
                f"dirty data."
            )
        for change in refused:
            assert change.before is not None
            merged[change.column] = change.before
        changes = [c for c in changes if c not in refused]
    return InferredSchema(merged, tuple(changes), tuple(refused), flatten)


def _incompatible(change: SchemaChange) -> bool:
    before = change.before
    return before is not None and before.name not in _TEXT and change.after == STRING


def _text(fields: Mapping[str, FlinkType]) -> str:
    return "(" + ", ".join(f"`{n}` {t}" for n, t in fields.items()) + ")"


def _nested(fields: Mapping[str, FlinkType]) -> dict[str, FlinkType]:
    """Flattened ``parent.child`` fields as ROW columns to decode (a name that is both a field
    and a parent stays a STRING field holding the JSON text)."""
    tree: dict[str, Any] = {}
    for name, t in fields.items():
        node, parts = tree, name.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            if not isinstance(node.get(parts[-1]), dict):
                node[parts[-1]] = t
            continue

    def build(node: Mapping[str, Any]) -> FlinkType:
        names = tuple(node)
        return FlinkType.row(names, (_typed(node[n]) for n in names))

    def _typed(value: Any) -> FlinkType:
        return build(value) if isinstance(value, dict) else value

    return {name: _typed(value) for name, value in tree.items()}


def with_schema(table: ResolvedTable, schema: InferredSchema) -> ResolvedTable:
    """``table`` declaring the inferred columns (before its metadata and computed columns)."""
    fields = _nested(schema.fields) if schema.flatten else schema.fields
    columns = tuple(Column(name, str(t)) for name, t in fields.items() if name)
    spec = replace(table.spec, columns=(*columns, *table.spec.columns))
    return replace(table, spec=spec)


def _leaves(name: str, t: FlinkType, path: str) -> Iterator[tuple[str, str]]:
    if t.name != "ROW":
        yield name, path
        return
    for child, ct in zip(t.field_names, t.children, strict=True):
        yield from _leaves(f"{name}.{child}", ct, f"{path}.`{child}`")


def flattened(frame: DataFrame, table: ResolvedTable, schema: InferredSchema) -> DataFrame:
    """``frame`` (``table``'s decoded rows) with each ROW of a flattened schema as its leaves,
    ``parent.child`` columns in place of the ROW."""
    from pyspark.sql import functions as F

    if not schema.flatten:
        return frame
    types = {c.name: c.flink_type for c in table.spec.physical_columns}
    out: list[Any] = []
    for name in frame.columns:
        t = types.get(name)
        if t is None or t.name != "ROW":
            out.append(F.col(f"`{name}`"))
            continue
        out += [F.col(path).alias(leaf) for leaf, path in _leaves(name, t, f"`{name}`")]
    return frame.select(*out)


__all__ = [
    "CHANGES_METADATA_PREFIX",
    "SCHEMA_METADATA_PREFIX",
    "InferredSchema",
    "evolve_schema",
    "flattened",
    "infer_schema",
    "observe_records",
    "parse_schema",
    "sample_ranges",
    "settings_of",
    "with_schema",
]
