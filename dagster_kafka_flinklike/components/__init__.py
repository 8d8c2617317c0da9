"""Declarative front ends over the Python API: Flink SQL scripts and YAML (a Dagster Component)."""

from .flink_sql import build_flink_sql_definitions, partition_period
from .kafka_pipeline import KafkaPipelineComponent

__all__ = ["KafkaPipelineComponent", "build_flink_sql_definitions", "partition_period"]
