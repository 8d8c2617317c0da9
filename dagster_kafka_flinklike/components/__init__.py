"""Declarative front ends over the Python API: Flink SQL scripts (and YAML) as definitions."""

from .flink_sql import build_flink_sql_definitions, partition_period

__all__ = ["build_flink_sql_definitions", "partition_period"]
