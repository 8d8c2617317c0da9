"""Declarative front ends over the Python API: Flink SQL scripts, data-ingestion pipeline YAML
and YAML (a Dagster Component)."""

from .data_ingestion import build_data_ingestion_definitions
from .flink_sql import build_flink_sql_definitions, partition_period
from .kafka_pipeline import KafkaPipelineComponent

__all__ = [
    "KafkaPipelineComponent",
    "build_data_ingestion_definitions",
    "build_flink_sql_definitions",
    "partition_period",
]
