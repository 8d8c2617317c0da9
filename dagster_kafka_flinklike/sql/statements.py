"""The statements a Flink SQL script holds, as :func:`parse_flink_sql` returns them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import KafkaOptionsError
from ..options import CONNECTORS, REDACTED, Column, KafkaTableSpec, is_secret, redact


@dataclass(frozen=True)
class Watermark:
    """``WATERMARK FOR rowtime AS expression``: the event-time column and its watermark.

    Example:
        >>> Watermark("ts", "ts - INTERVAL '5' SECOND").column
        'ts'
    """

    column: str
    expression: str


@dataclass(frozen=True)
class CreateTable:
    """``CREATE TABLE``: a table's columns, constraints and WITH options.

    For a ``kafka`` / ``upsert-kafka`` table ``spec`` holds the validated
    :class:`KafkaTableSpec`; a table of another connector (``print``, ``hologres``, none at
    all) parses with ``spec`` None and ``supported`` False. With ``strict=False`` an invalid
    Kafka table also comes back with ``spec`` None and the reason in ``error``.

    Example:
        >>> from dagster_kafka_flinklike.sql import parse_flink_sql
        >>> [t] = parse_flink_sql("CREATE TABLE p (a INT) WITH ('connector' = 'print')")
        >>> (t.name, t.supported)
        ('p', False)
    """

    name: str
    qualified_name: tuple[str, ...]
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    watermark: Watermark | None
    options: dict[str, str]
    spec: KafkaTableSpec | None
    temporary: bool = False
    if_not_exists: bool = False
    comment: str | None = None
    partition_keys: tuple[str, ...] = ()
    as_query: str | None = None
    sources: tuple[str, ...] = ()
    error: KafkaOptionsError | None = field(default=None, compare=False)
    line: int = 1
    #: Where ``as_query`` lies in the script (character offsets), for :mod:`.translate`.
    query_span: tuple[int, int] = (0, 0)

    @property
    def connector(self) -> str | None:
        """The ``connector`` option, or None when the table declares none."""
        return self.options.get("connector")

    @property
    def supported(self) -> bool:
        """True for the connectors this project runs: ``kafka`` and ``upsert-kafka``."""
        return self.connector in CONNECTORS

    def __repr__(self) -> str:
        return (
            f"CreateTable(name={self.name!r}, connector={self.connector!r}, "
            f"columns={[c.name for c in self.columns]!r}, options={redact(self.options)!r}, "
            f"error={'yes' if self.error else None})"
        )


@dataclass(frozen=True)
class CreateView:
    """``CREATE [TEMPORARY] VIEW name AS query``: a named query over other tables.

    Example:
        >>> from dagster_kafka_flinklike.sql import parse_flink_sql
        >>> [v] = parse_flink_sql("CREATE TEMPORARY VIEW v AS SELECT * FROM t")
        >>> v.sources
        ('t',)
    """

    name: str
    qualified_name: tuple[str, ...]
    query: str
    temporary: bool = False
    if_not_exists: bool = False
    column_names: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    line: int = 1
    #: Where ``query`` lies in the script (character offsets), for :mod:`.translate`.
    query_span: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class InsertInto:
    """``INSERT INTO target SELECT ...``: the target table and the query text.

    ``table`` is the target's :class:`CreateTable` when the same script declares it (its spec
    then validated as a sink); ``sources`` names the tables the query reads (best effort:
    names after FROM, JOIN and TABLE).

    Example:
        >>> from dagster_kafka_flinklike.sql import parse_flink_sql
        >>> [i] = parse_flink_sql("INSERT INTO s SELECT id FROM t")
        >>> (i.target, i.query, i.sources)
        ('s', 'SELECT id FROM t', ('t',))
    """

    target: str
    qualified_name: tuple[str, ...]
    query: str
    overwrite: bool = False
    column_names: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    table: CreateTable | None = None
    line: int = 1
    #: Where ``query`` lies in the script (character offsets), for :mod:`.translate`.
    query_span: tuple[int, int] = (0, 0)
    #: The statement set (``EXECUTE STATEMENT SET BEGIN ... END``) it belongs to: 1, 2, ...
    statement_set: int | None = None


@dataclass(frozen=True)
class SetOption:
    """``SET 'key' = 'value'``: a job configuration option (secrets hidden in its repr).

    Example:
        >>> from dagster_kafka_flinklike.sql import parse_flink_sql
        >>> parse_flink_sql("SET 'pipeline.name' = 'orders'")[0].value
        'orders'
    """

    key: str
    value: str
    line: int = 1

    def __repr__(self) -> str:
        shown = REDACTED if is_secret(self.key) else self.value
        return f"SetOption(key={self.key!r}, value={shown!r}, line={self.line})"


Statement = CreateTable | CreateView | InsertInto | SetOption
