"""The Flink SQL front end: lexer, DDL/DML parser, statements, the translation of queries to
Spark SQL and the planning of inserts into bounded runs; built on :mod:`..options`.

:func:`parse_flink_sql` turns a script (``CREATE TABLE ... WITH (...)``, ``CREATE VIEW``,
``INSERT INTO``, ``SET``) into statements whose tables are validated ``KafkaTableSpec`` objects.
"""

from ..errors import FlinkSqlError
from .parser import parse_flink_sql
from .pipeline import FlinkSqlPipeline, RunMode, SqlInsert, plan_flink_sql
from .statements import CreateTable, CreateView, InsertInto, SetOption, Statement, Watermark
from .translate import SparkQuery, translate_query

__all__ = [
    "CreateTable",
    "CreateView",
    "FlinkSqlError",
    "FlinkSqlPipeline",
    "InsertInto",
    "RunMode",
    "SetOption",
    "SparkQuery",
    "SqlInsert",
    "Statement",
    "Watermark",
    "parse_flink_sql",
    "plan_flink_sql",
    "translate_query",
]
