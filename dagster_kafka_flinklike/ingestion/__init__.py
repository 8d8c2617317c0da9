"""Data-ingestion pipelines: the vendor's YAML (``source``, ``sink``, ``route``, ``transform``,
``pipeline``) for Kafka → Kafka, run on Spark over the materialization cycle.

A pipeline reads Debezium JSON, Canal JSON or JSON records from Kafka, groups them by table
(each record's table id), infers each table's schema, applies ``transform`` rules and
``route`` rules, and writes each table to a Kafka topic (``sink.tableId-to-topic.mapping``, else
the table id) in Debezium JSON, Canal JSON or JSON, with the sink's delivery guarantee.

- :func:`parse_data_ingestion` parses and validates the YAML (:mod:`.definition`);
- :class:`IngestionRun` runs it once over a :class:`~..run.StreamingRun` (:mod:`.run`);
- the Dagster face is ``build_data_ingestion_definitions`` and the ``data_ingestion``
  attribute of ``KafkaPipelineComponent``.

Nothing here imports Dagster.
"""

from .definition import (
    DataIngestionPipeline,
    IngestionSink,
    IngestionSource,
    InitialSchema,
    parse_data_ingestion,
)
from .run import IngestionResult, IngestionRun
from .tables import Route, Selectors, TableId, TopicMapping, route_table
from .transform import TransformRule

__all__ = [
    "DataIngestionPipeline",
    "IngestionResult",
    "IngestionRun",
    "IngestionSink",
    "IngestionSource",
    "InitialSchema",
    "Route",
    "Selectors",
    "TableId",
    "TopicMapping",
    "TransformRule",
    "parse_data_ingestion",
    "route_table",
]
