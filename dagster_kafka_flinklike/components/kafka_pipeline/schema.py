"""The YAML schema of :class:`~.component.KafkaPipelineComponent`: tables, assets, checks, sensors.

Every model is a Dagster ``Model`` (pydantic, unknown keys refused), so ``dg check yaml`` and
editors validate a ``defs.yaml`` against it, and each field's description is the documentation.
Durations are written as in Flink's options (``'5 min'``, ``'30 s'``, ``'100 ms'``; a bare
number is milliseconds).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Literal

from dagster import (
    BackfillPolicy,
    DailyPartitionsDefinition,
    DefaultSensorStatus,
    HourlyPartitionsDefinition,
    TimeWindowPartitionsDefinition,
    WeeklyPartitionsDefinition,
)
from dagster.components import Model
from pydantic import ConfigDict, Field, field_validator, model_validator

from ... import checks as kafka_checks
from ...errors import KafkaOptionsError
from ...options import parse_duration_ms
from ..flink_sql import MAX_END_OFFSET, check_end_offset

__all__ = [
    "AssetModel",
    "ChecksModel",
    "ColumnModel",
    "DataIngestionModel",
    "NewDataSensorModel",
    "PartitionsModel",
    "SensorsModel",
    "TableModel",
    "duration",
]

#: YAML scalars that an option value may be (Flink writes them all as strings).
OptionValue = str | int | float | bool


def duration(key: str, text: str | int | None) -> timedelta | None:
    """A Flink duration (``'5 min'``; a bare number is milliseconds) as a timedelta.

    Raises:
        KafkaOptionsError: not a duration, naming ``key``.
    """
    if text is None:
        return None
    return timedelta(milliseconds=parse_duration_ms(key, str(text)))


class ColumnModel(Model):
    """A column of a Kafka table (as a Flink ``CREATE TABLE`` column)."""

    name: str = Field(description="The column's name.")
    type: str = Field(default="STRING", description="Its Flink SQL type, e.g. 'DECIMAL(10, 2)'.")
    metadata_key: str | None = Field(
        default=None,
        description="Read from (or written to) this record metadata: 'timestamp', 'partition', "
        "'offset', 'headers', ... (Flink's METADATA FROM).",
    )
    virtual: bool = Field(default=False, description="A read-only metadata column (VIRTUAL).")
    expression: str | None = Field(
        default=None, description="A computed column: its Spark SQL expression."
    )
    comment: str | None = Field(default=None, description="A description of the column.")


class TableModel(Model):
    """A Kafka table: Flink's WITH options and columns, or Flink SQL ``CREATE TABLE`` text."""

    # (validated again once templates are rendered: its errors must not show a password)
    model_config = ConfigDict(hide_input_in_errors=True)

    options: dict[str, OptionValue] | None = Field(
        default=None,
        description="Flink's Kafka connector options, keys verbatim "
        "(connector: kafka, topic: orders, format: json, scan.startup.mode: earliest-offset, ...).",
    )
    columns: list[ColumnModel] = Field(
        default_factory=list,
        description="The table's columns (with 'options'). A JSON table without physical "
        "columns infers them from its data (schema.inference.strategy, json.infer-schema.*).",
    )
    primary_key: list[str] = Field(
        default_factory=list,
        description="Primary key columns (with 'options'; required by 'upsert-kafka').",
    )
    ddl: str | None = Field(
        default=None,
        description="Flink SQL declaring the table: a CREATE TABLE statement named like this "
        "entry.",
    )
    sql_file: str | None = Field(
        default=None,
        description="A Flink SQL file (relative to this defs.yaml) holding a CREATE TABLE named "
        "like this entry.",
    )

    @model_validator(mode="after")
    def _one_declaration(self) -> TableModel:
        given = [k for k in ("options", "ddl", "sql_file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"a table takes exactly one of 'options', 'ddl' or 'sql_file', got "
                f"{', '.join(given) or 'none'}"
            )
        if self.options is None and (self.columns or self.primary_key):
            raise ValueError("'columns' and 'primary_key' go with 'options' (DDL declares its own)")
        return self


def dagster_name(value: str | None) -> str | None:
    """``value`` when Dagster takes it as a name (of an asset, a check, a sensor: ASCII
    letters, digits and '_').

    Raises:
        ValueError: it does not.
    """
    if value is not None and not re.fullmatch(r"[A-Za-z0-9_]+", value):
        raise ValueError(
            f"{value[:80]!r} is not a name Dagster takes: use ASCII letters, digits and '_'"
        )
    return value


class _Named(Model):
    """A model whose ``name`` becomes a Dagster name: refused at load when Dagster would."""

    @field_validator("name", check_fields=False)
    @classmethod
    def _dagster_name(cls, value: str | None) -> str | None:
        return dagster_name(value)


class _CheckModel(_Named):
    name: str | None = Field(
        default=None,
        description="The check's name on the asset (default: kafka_<check>).",
    )
    severity: Literal["ERROR", "WARN"] = Field(
        default="ERROR", description="Severity of a failed result."
    )
    blocking: bool = Field(
        default=False, description="An ERROR stops downstream assets of the same run."
    )

    def _common(self) -> dict[str, Any]:
        return {"name": self.name or "", "severity": self.severity, "blocking": self.blocking}

    def build(self) -> kafka_checks.KafkaAssetCheck:
        """The check object (thresholds validated)."""
        raise NotImplementedError


class DirtyDataCheckModel(_CheckModel):
    """Dirty records of the sources against a maximum count and ratio."""

    max_count: int | None = Field(
        default=None,
        description="Most dirty records per run (default: 'ingestion.error-tolerance.max-count').",
    )
    max_ratio: float | None = Field(default=None, description="Largest share of dirty records.")

    def build(self) -> kafka_checks.DirtyDataCheck:
        return kafka_checks.DirtyDataCheck(
            **self._common(), max_count=self.max_count, max_ratio=self.max_ratio
        )


class TransactionTimeoutCheckModel(_CheckModel):
    """An exactly-once sink's transaction timeout against the brokers' limit and the run."""

    warn_ratio: float = Field(default=0.5, description="WARN above this share of the timeout.")
    fail_ratio: float = Field(default=0.9, description="ERROR above this share of the timeout.")

    def build(self) -> kafka_checks.TransactionTimeoutCheck:
        return kafka_checks.TransactionTimeoutCheck(
            **self._common(), warn_ratio=self.warn_ratio, fail_ratio=self.fail_ratio
        )


class HangingTransactionsCheckModel(_CheckModel):
    """Partitions held by a transaction open too long."""

    max_open: str | None = Field(
        default=None,
        description="How long a transaction may hold readers back before the check fails "
        "(default: 2 min on the sink, the brokers' transaction.max.timeout.ms on sources).",
        examples=["5 min"],
    )

    def build(self) -> kafka_checks.HangingTransactionsCheck:
        return kafka_checks.HangingTransactionsCheck(
            **self._common(), max_open=duration("max_open", self.max_open)
        )


class ConsumerLagCheckModel(_CheckModel):
    """Records not read yet, and the age of the oldest."""

    max_pending_records: int | None = Field(default=None, description="Most pending records.")
    max_pending_age: str | None = Field(
        default=None, description="Oldest pending record's largest age.", examples=["30 min"]
    )

    def build(self) -> kafka_checks.ConsumerLagCheck:
        return kafka_checks.ConsumerLagCheck(
            **self._common(),
            max_pending_records=self.max_pending_records,
            max_pending_age=duration("max_pending_age", self.max_pending_age),
        )


class LateDataCheckModel(_CheckModel):
    """Time windows that got records after they were materialized."""

    windows: int = Field(default=24, description="How many recent windows to look at.")

    def build(self) -> kafka_checks.LateDataCheck:
        return kafka_checks.LateDataCheck(**self._common(), windows=self.windows)


class ChecksModel(Model):
    """The asset's Kafka checks, each with its thresholds; only those listed are attached."""

    dirty_data: DirtyDataCheckModel | None = None
    transaction_timeout: TransactionTimeoutCheckModel | None = None
    hanging_transactions: HangingTransactionsCheckModel | None = None
    consumer_lag: ConsumerLagCheckModel | None = None
    late_data: LateDataCheckModel | None = None

    def listed(self) -> list[tuple[str, _CheckModel]]:
        """``(yaml key, model)`` of the checks given, in declaration order."""
        found = [(k, getattr(self, k)) for k in type(self).model_fields]
        return [(k, m) for k, m in found if m is not None]


class PartitionsModel(Model):
    """Time-window partitions: each run reads the records whose timestamps lie in its window."""

    type: Literal["hourly", "daily", "weekly"] = Field(description="The window length.")
    start: str = Field(
        description="The first window's start ('2026-11-20-00:00' hourly, '2026-11-20' daily).",
        examples=["2026-11-20-00:00"],
    )
    end: str | None = Field(default=None, description="No windows from this moment on.")
    timezone: str | None = Field(default=None, description="Time zone of the windows (UTC).")
    end_offset: int = Field(
        default=0,
        description="Windows past the last complete one (1: the current window is a partition; "
        f"negative: recent windows held back), at most {MAX_END_OFFSET} either way.",
    )

    def build(self) -> TimeWindowPartitionsDefinition:
        """The Dagster partitions definition."""
        kinds = {
            "hourly": HourlyPartitionsDefinition,
            "daily": DailyPartitionsDefinition,
            "weekly": WeeklyPartitionsDefinition,
        }
        check_end_offset(self.end_offset)
        try:
            partitions: TimeWindowPartitionsDefinition = kinds[self.type](
                start_date=self.start,
                end_date=self.end,
                timezone=self.timezone,
                end_offset=self.end_offset,
            )
            return partitions
        except Exception as exc:  # Dagster's own message says what is wrong with the dates
            raise KafkaOptionsError(str(exc), keys=("partitions",)) from exc


class BackfillPolicyModel(Model):
    """How a backfill over many windows runs."""

    type: Literal["single_run", "multi_run"] = Field(
        description="single_run: one run (one Spark job) for the whole range; multi_run: runs of "
        "at most max_partitions_per_run windows."
    )
    max_partitions_per_run: int = Field(default=1, description="With multi_run.")

    def build(self) -> BackfillPolicy:
        if self.type == "single_run":
            return BackfillPolicy.single_run()
        return BackfillPolicy.multi_run(max_partitions_per_run=self.max_partitions_per_run)


class NewDataSensorModel(_Named):
    """A sensor that requests a run when the asset's sources have new data."""

    min_pending_records: int = Field(default=1, description="Request a run at this many records.")
    max_pending_age: str | None = Field(
        default=None,
        description="...or when records have waited this long.",
        examples=["5 min"],
    )
    minimum_interval_seconds: int = Field(default=30, description="Seconds between ticks.")
    max_retries: int = Field(
        default=3, description="Request a batch whose run failed again, at most this many times."
    )
    retry_backoff: str = Field(
        default="1 min",
        description="Wait this long before the first retry of a failed batch (doubling after "
        "each further failure).",
        examples=["30 s"],
    )
    name: str | None = Field(default=None, description="The sensor's name.")


class SensorsModel(Model):
    """Sensors of the whole component."""

    discovery: bool = Field(
        default=False,
        description="One partition-discovery sensor per source subscription whose "
        "'scan.topic-partition-discovery.interval' is positive.",
    )
    default_status: Literal["stopped", "running"] = Field(
        default="stopped", description="Whether the component's sensors start running."
    )

    @property
    def status(self) -> DefaultSensorStatus:
        """The Dagster status of the component's sensors."""
        return DefaultSensorStatus(self.default_status.upper())


class AssetModel(_Named):
    """One entry of ``assets``: a Spark SQL query over the tables, or Flink SQL inserts.

    A query entry gives ``query``, ``sources`` and ``sink`` (``name``, ``checks``,
    ``from_checkpoint`` optional); a Flink SQL entry gives ``sql`` or ``sql_file`` (its
    ``INSERT INTO`` statements, one asset each, may read and write the YAML tables). Both take
    ``partitions``, ``backfill_policy``, ``allowed_lateness`` and ``new_data_sensor``.
    """

    name: str | None = Field(
        default=None,
        description="The asset's name (default: the sink table's asset key, so the asset is the "
        "sink topic in the graph).",
    )
    query: str | None = Field(
        default=None,
        description="A Spark SQL query over the source tables (by their names); its columns "
        "are the sink's.",
    )
    sources: list[str] = Field(
        default_factory=list, description="The tables the query reads (names in 'tables')."
    )
    sink: str | None = Field(default=None, description="The table the result is written to.")
    description: str | None = Field(default=None, description="The asset's description.")
    checks: ChecksModel | None = Field(
        default=None,
        description="Kafka checks and thresholds. Without it the asset gets the default checks "
        "(dirty data for tolerant sources, transaction checks for an exactly-once sink); {} "
        "attaches none.",
    )
    from_checkpoint: bool = Field(
        default=True,
        description="False: every run reads from the startup position (e.g. an aggregation "
        "over everything into an upsert-kafka sink).",
    )
    sql: str | None = Field(
        default=None, description="Flink SQL: INSERT INTO statements (and views, SET, tables)."
    )
    sql_file: str | None = Field(
        default=None, description="A Flink SQL file, relative to this defs.yaml."
    )
    partitions: PartitionsModel | None = Field(
        default=None, description="Time-window partitions of record timestamps."
    )
    backfill_policy: BackfillPolicyModel | None = Field(
        default=None, description="Default with partitions: single_run."
    )
    allowed_lateness: str | None = Field(
        default=None,
        description="How late a record may arrive and still be read with its window.",
        examples=["5 min"],
    )
    new_data_sensor: NewDataSensorModel | None = Field(
        default=None, description="A sensor that runs the asset when new data is pending."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> AssetModel:
        flink = [k for k in ("sql", "sql_file") if getattr(self, k) is not None]
        if self.query is not None:
            if flink:
                raise ValueError(f"an asset takes 'query' or '{flink[0]}', not both")
            if not self.sources or not self.sink:
                raise ValueError("a 'query' asset needs 'sources' (table names) and 'sink'")
            return self
        if len(flink) != 1:
            raise ValueError(
                "an asset takes 'query' (with 'sources' and 'sink'), or one of 'sql' / 'sql_file'"
            )
        query_only = ("name", "sources", "sink", "description", "from_checkpoint")
        spark_only = [k for k in query_only if k in self.model_fields_set]
        if spark_only:
            raise ValueError(
                f"{', '.join(repr(k) for k in spark_only)} go with 'query'; Flink SQL assets are "
                f"named after their INSERT INTO target"
            )
        return self

    @property
    def label(self) -> str:
        """How messages name the entry."""
        if self.query is not None:
            return f"asset '{self.name or self.sink}'"
        return f"Flink SQL {'file ' + repr(self.sql_file) if self.sql_file else 'statements'}"


class DataIngestionModel(Model):
    """One entry of ``data_ingestion``: a data-ingestion pipeline (``source``, ``sink``,
    ``route``, ``transform``, ``pipeline``, Kafka → Kafka) run as one asset."""

    pipeline_file: str | None = Field(
        default=None, description="The pipeline YAML file, relative to this defs.yaml."
    )
    pipeline: dict[str, Any] | None = Field(
        default=None,
        description="The pipeline inline: 'source' and 'sink' (type: kafka), 'route', "
        "'transform', 'pipeline'.",
    )
    variables: dict[str, str] = Field(
        default_factory=dict, description="Values of the pipeline's ${name} placeholders."
    )
    name: str | None = Field(
        default=None,
        description="The asset's name (default: 'pipeline.name', else the file's stem).",
    )
    checks: ChecksModel | None = Field(
        default=None,
        description="dirty_data and consumer_lag checks (default: dirty data when the source "
        "tolerates dirty records).",
    )
    new_data_sensor: NewDataSensorModel | None = Field(
        default=None, description="A sensor that runs the pipeline when new data is pending."
    )

    @model_validator(mode="after")
    def _one_pipeline(self) -> DataIngestionModel:
        if (self.pipeline_file is None) == (self.pipeline is None):
            raise ValueError("a data_ingestion entry takes one of 'pipeline_file' or 'pipeline'")
        return self

    @property
    def label(self) -> str:
        """How messages name the entry."""
        what = f"file {self.pipeline_file!r}" if self.pipeline_file else "(inline)"
        return f"data-ingestion pipeline {what}"
