"""``transform`` rules: projections and filters of a table's rows, as Spark SQL.

A rule's ``projection`` lists columns: ``*`` (the table's columns), column names, and Flink SQL
expressions with ``AS``; its ``filter`` is a Flink SQL condition. Both are translated to Spark
SQL by the Flink SQL front end (:func:`~..sql.translate.translate_query`) when the pipeline
loads, so an expression without a faithful translation, or an aggregation, is refused then,
naming the key. They may use the metadata columns of Flink CDC's transforms:
``__namespace_name__``, ``__schema_name__``, ``__table_name__`` and ``__data_event_type__``
(the row's kind: ``+I``, ``-U``, ``+U`` or ``-D``).

The filter is evaluated on every row image, as Flink CDC does: an update whose before image
fails it becomes an insert of its after image, one whose after image fails it a delete of its
before image. It sees the table's columns and the projection's new columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import FlinkSqlError, KafkaOptionsError
from ..options import ROW_KIND, split_top_level
from ..sql.translate import translate_query
from .tables import Selectors, TableId

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["METADATA_COLUMNS", "TransformRule", "apply_transform", "split_items"]

#: The metadata columns a projection or filter may use.
METADATA_COLUMNS = (
    "__namespace_name__",
    "__schema_name__",
    "__table_name__",
    "__data_event_type__",
)


def split_items(text: str) -> list[str]:
    """A comma-separated list split where no parenthesis, bracket or quote encloses the comma.

    Example:
        >>> split_items("*, CONCAT(a, ',', b) AS ab, `x,y`")
        ['*', "CONCAT(a, ',', b) AS ab", '`x,y`']
    """
    return [item for item in split_top_level(text) if item]


def _translate(where: str, key: str, text: str) -> str:
    try:
        query = translate_query(text)
    except FlinkSqlError as exc:
        raise KafkaOptionsError(f"{where}: '{key}' {text!r}: {exc}", keys=(key,)) from None
    uses = [s[0] for s in query.stateful] + [w.kind for w in query.windows]
    if uses:
        raise KafkaOptionsError(
            f"{where}: '{key}' {text!r} uses {', '.join(uses)}; a transform works on one row "
            f"at a time.",
            keys=(key,),
        )
    return query.text


@dataclass(frozen=True)
class TransformRule:
    """One ``transform`` entry, its expressions translated to Spark SQL.

    Example:
        >>> rule = TransformRule.parse(0, {"source-table": "db.t", "filter": "id > 10"})
        >>> rule.filter
        'id > 10'
    """

    index: int
    source_table: Selectors
    #: Spark SQL items (``*`` kept), or None: the table's columns.
    projection: tuple[str, ...] | None = None
    filter: str | None = None
    primary_keys: tuple[str, ...] = ()
    description: str | None = None

    @property
    def where(self) -> str:
        """How messages name the rule."""
        return f"transform[{self.index}]"

    @classmethod
    def parse(cls, index: int, options: Mapping[str, str]) -> TransformRule:
        """Translate one entry's ``projection`` and ``filter`` (the keys are checked already).

        Raises:
            KafkaOptionsError: an expression that does not translate, naming the key.
        """
        where = f"transform[{index}]"
        projection = None
        if options.get("projection"):
            items = split_items(options["projection"])
            projection = tuple(i if i == "*" else _translate(where, "projection", i) for i in items)
        condition = options.get("filter")
        keys = tuple(k.strip() for k in (options.get("primary-keys") or "").split(",") if k.strip())
        return cls(
            index=index,
            source_table=Selectors.parse(options["source-table"], "source-table"),
            projection=projection,
            filter=_translate(where, "filter", condition) if condition else None,
            primary_keys=keys,
            description=options.get("description"),
        )


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _with_metadata(frame: DataFrame, table: TableId) -> DataFrame:
    from pyspark.sql import functions as F

    values = (table.namespace, table.schema_name, table.table_name)
    meta = [
        F.lit(v).cast("string").alias(n) for v, n in zip(values, METADATA_COLUMNS, strict=False)
    ]
    return frame.select("*", *meta, F.col(ROW_KIND).alias(METADATA_COLUMNS[3]))


def apply_transform(
    rule: TransformRule,
    frame: DataFrame,
    table: TableId,
    columns: Sequence[str],
    keep: Sequence[str],
) -> DataFrame:
    """``frame`` (the table's ``columns`` and the ``keep`` columns) filtered and projected.

    Raises:
        KafkaOptionsError: Spark cannot evaluate the projection or filter over this table,
            naming the rule's key and Spark's reason.
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    star = [_quoted(c) for c in columns]
    items = [c for i in (rule.projection or ("*",)) for c in (star if i == "*" else [i])]
    kept = [_quoted(c) for c in keep]
    wide = _with_metadata(frame, table)
    key = "projection"
    try:
        projected = wide.selectExpr(*items, *kept)
        if rule.filter is None:
            return projected
        key = "filter"
        try:  # the filter sees the table's columns and the metadata columns ...
            return wide.filter(F.expr(rule.filter)).selectExpr(*items, *kept)
        except AnalysisException:  # ... or else the projection's columns
            names = projected.columns
            helpers = [m for m in METADATA_COLUMNS if m not in names]
            both = wide.selectExpr(*items, *kept, *helpers).filter(F.expr(rule.filter))
            return both.select(*[_quoted(n) for n in names])
    except AnalysisException as exc:
        reason = str(exc).splitlines()[0]
        raise KafkaOptionsError(
            f"{rule.where}: Spark cannot evaluate '{key}' over table {str(table)!r} (columns "
            f"{', '.join(columns)}): {reason}",
            keys=(key,),
        ) from None
