"""A Kafka table as a Spark Structured Streaming source: the same reader, planned by Spark.

A stateful query (event-time windows with a watermark, deduplication, joins) runs on Spark
Structured Streaming, whose checkpoint keeps both the offsets read and the operators' state.
Its source is this module's Python data source (Spark's ``DataSourceStreamReader``): offsets
are ``{"topic/partition": offset}``, the first ones from the table's ``scan.startup.mode``
(:func:`~.enumerator.plan_source` without a checkpoint), the latest ones the end of each
partition's log as a bounded run's stop (last stable offset under ``read_committed``), new
partitions from their beginning; each micro-batch's ranges are cut into splits and read by
:func:`~.reader.read_split` in the tasks, as Arrow batches of the same raw fields. With
``Trigger.AvailableNow`` (a materialization) the end is fixed when the query starts.

Example:
    >>> register_stream_source(spark)  # doctest: +SKIP
    >>> frame = stream_frame(spark, spec, properties, group, consumer, fields)  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from .enumerator import DEFAULT_MAX_RECORDS_PER_SPLIT, KafkaSplit, plan_source, split_ranges
from .offsets import TopicPartition
from .reader import DerivedColumn, Shedding

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from ..options import KafkaTableSpec

#: The data source's name in ``spark.readStream.format(...)``.
SOURCE_NAME = "dkf-kafka"
_SETTINGS = "settings"


@dataclass(frozen=True)
class StreamSettings:
    """What the source needs in the driver and the tasks (passed to Spark as one option)."""

    spec: KafkaTableSpec
    #: The table's client properties (connection defaults merged) and consumer group, for the
    #: admin client that plans the offsets on the driver.
    properties: Mapping[str, str]
    group_id: str | None
    #: librdkafka settings of the consumers that read the records in the tasks.
    consumer: Mapping[str, Any]
    #: The record fields read (see :data:`~.reader.RECORD_FIELDS`).
    fields: tuple[str, ...]
    #: Columns the reading tasks decode natively, and the raw fields they shed.
    derived: tuple[DerivedColumn, ...] = ()
    shedding: Shedding | None = None
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT

    def encode(self) -> str:
        """The settings as an option value."""
        from pyspark import cloudpickle

        return base64.b64encode(cloudpickle.dumps(self)).decode("ascii")

    @staticmethod
    def decode(text: str) -> StreamSettings:
        """Settings from :meth:`encode`'s option value."""
        settings = pickle.loads(base64.b64decode(text))
        assert isinstance(settings, StreamSettings)
        return settings


def _key(tp: TopicPartition) -> str:
    return f"{tp[0]}/{tp[1]}"


def _partition(key: str) -> TopicPartition:
    topic, _, partition = key.rpartition("/")
    return (topic, int(partition))


@dataclass(frozen=True)
class _Splits(InputPartition):  # type: ignore[misc]
    splits: tuple[KafkaSplit, ...]


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Offsets, micro-batch splits and reading of one Kafka table for Structured Streaming."""

    def __init__(self, settings: StreamSettings) -> None:
        self.settings = settings
        self._target: dict[str, int] | None = None
        self._admin: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # the tasks get the settings; the driver's admin client stays on the driver
        return {**self.__dict__, "_admin": None}

    def _plan(self, starts: Mapping[str, int] | None) -> tuple[dict[str, int], dict[str, int]]:
        from .admin import KafkaAdmin

        if self._admin is None:
            self._admin = KafkaAdmin(self.settings.properties, group_id=self.settings.group_id)
        admin = self._admin
        spec = self.settings.spec
        partitions = admin.partitions(spec.topics, spec.topic_pattern)
        checkpoint = None if starts is None else {_partition(k): v for k, v in starts.items()}
        plan = plan_source(spec, partitions, admin, checkpoint)
        return (
            {_key(tp): offset for tp, offset in plan.starts.items()},
            {_key(tp): offset for tp, offset in plan.stops.items()},
        )

    def initialOffset(self) -> dict[str, int]:
        """Where the query starts: the table's ``scan.startup.mode``."""
        return self._plan(None)[0]

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of this query's input: each partition's log end now."""
        self._target = self._latest({})

    def _latest(self, start: Mapping[str, int]) -> dict[str, int]:
        starts, stops = self._plan(start)
        return {k: max(stops[k], starts[k]) for k in stops}

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        """The end of the next micro-batch: the fixed end (AvailableNow), else the log end."""
        if self._target is not None:
            return {**start, **self._target}
        return self._latest(start)

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Splits]:
        """The micro-batch ``[start, end)`` cut into splits, one task each."""
        starts = {_partition(k): start.get(k, 0) for k in end}
        stops = {_partition(k): v for k, v in end.items()}
        splits = split_ranges(starts, stops, self.settings.max_records_per_split)
        return [_Splits((split,)) for split in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The raw records of a task's splits, as Arrow batches."""
        from .reader import read_split

        assert isinstance(partition, _Splits)
        settings = self.settings
        for split in partition.splits:
            yield from read_split(
                split,
                settings.consumer,
                settings.fields,
                derived=settings.derived,
                shedding=settings.shedding,
            )

    def commit(self, end: dict[str, int]) -> None:
        """Nothing: the query's checkpoint holds the offsets."""


class KafkaStreamSource(DataSource):  # type: ignore[misc]
    """The Python data source ``dkf-kafka`` (register with :func:`register_stream_source`)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _settings(self) -> StreamSettings:
        return StreamSettings.decode(self.options[_SETTINGS])

    def schema(self) -> StructType:
        from .reader import spark_schema

        settings = self._settings()
        return spark_schema(settings.fields, settings.derived)

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(self._settings())


def register_stream_source(spark: SparkSession) -> None:
    """Register the ``dkf-kafka`` streaming source with ``spark``'s session."""
    spark.dataSource.register(KafkaStreamSource)


def stream_frame(
    spark: SparkSession,
    spec: KafkaTableSpec,
    properties: Mapping[str, str],
    group_id: str | None,
    consumer: Mapping[str, Any],
    fields: Sequence[str],
    *,
    derived: Sequence[DerivedColumn] = (),
    shedding: Shedding | None = None,
    max_records_per_split: int = DEFAULT_MAX_RECORDS_PER_SPLIT,
) -> DataFrame:
    """A streaming DataFrame of the raw ``fields`` of ``spec``'s records (and the ``derived``
    columns its reading tasks decode natively, as :func:`~.reader.read_splits` gives them)."""
    register_stream_source(spark)
    settings = StreamSettings(
        spec,
        dict(properties),
        group_id,
        dict(consumer),
        tuple(fields),
        tuple(derived),
        shedding,
        max_records_per_split,
    )
    return spark.readStream.format(SOURCE_NAME).option(_SETTINGS, settings.encode()).load()
