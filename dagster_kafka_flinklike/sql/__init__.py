"""The Flink SQL front end: lexer, DDL/DML parser and statements, built on :mod:`..options`.

:func:`parse_flink_sql` turns a script (``CREATE TABLE ... WITH (...)``, ``CREATE VIEW``,
``INSERT INTO``, ``SET``) into statements whose tables are validated ``KafkaTableSpec`` objects.
"""

from ..errors import FlinkSqlError
from .parser import parse_flink_sql
from .statements import CreateTable, CreateView, InsertInto, SetOption, Statement, Watermark

__all__ = [
    "CreateTable",
    "CreateView",
    "FlinkSqlError",
    "InsertInto",
    "SetOption",
    "Statement",
    "Watermark",
    "parse_flink_sql",
]
