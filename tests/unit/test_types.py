"""Flink SQL types: parsing, normalisation, range checks and the one Spark mapping."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from dagster_kafka_flinklike.options import (
    Column,
    FlinkType,
    KafkaOptionsError,
    parse_flink_type,
    spark_type,
    struct_type,
)


@pytest.mark.parametrize(
    ("text", "spark"),
    [
        ("STRING", T.StringType()),
        ("VARCHAR", T.StringType()),
        ("VARCHAR(200)", T.StringType()),
        ("CHAR(3)", T.StringType()),
        ("CHARACTER VARYING(5)", T.StringType()),
        ("BOOLEAN", T.BooleanType()),
        ("TINYINT", T.ByteType()),
        ("SMALLINT", T.ShortType()),
        ("INT", T.IntegerType()),
        ("INTEGER", T.IntegerType()),
        ("BIGINT", T.LongType()),
        ("FLOAT", T.FloatType()),
        ("REAL", T.FloatType()),
        ("DOUBLE", T.DoubleType()),
        ("DOUBLE PRECISION", T.DoubleType()),
        ("DECIMAL", T.DecimalType(10, 0)),
        ("DECIMAL(10, 2)", T.DecimalType(10, 2)),
        ("DEC(5)", T.DecimalType(5, 0)),
        ("NUMERIC(38,18)", T.DecimalType(38, 18)),
        ("DATE", T.DateType()),
        ("TIME", T.StringType()),
        ("TIME(3)", T.StringType()),
        ("TIMESTAMP", T.TimestampNTZType()),
        ("TIMESTAMP(3)", T.TimestampNTZType()),
        ("TIMESTAMP(9) WITHOUT TIME ZONE", T.TimestampNTZType()),
        ("TIMESTAMP_LTZ", T.TimestampType()),
        ("TIMESTAMP_LTZ(3)", T.TimestampType()),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", T.TimestampType()),
        ("BYTES", T.BinaryType()),
        ("VARBINARY(10)", T.BinaryType()),
        ("BINARY(16)", T.BinaryType()),
        ("ARRAY<STRING>", T.ArrayType(T.StringType(), True)),
        ("ARRAY<INT NOT NULL>", T.ArrayType(T.IntegerType(), False)),
        ("MULTISET<STRING>", T.ArrayType(T.StringType(), True)),
        ("MAP<STRING, BYTES>", T.MapType(T.StringType(), T.BinaryType(), True)),
        ("MAP<STRING, BIGINT NOT NULL>", T.MapType(T.StringType(), T.LongType(), False)),
        (
            "ROW<`owner` STRING, engine STRING>",
            T.StructType(
                [T.StructField("owner", T.StringType()), T.StructField("engine", T.StringType())]
            ),
        ),
        (
            "ROW(a INT NOT NULL, b ARRAY<ROW<c DATE>>)",
            T.StructType(
                [
                    T.StructField("a", T.IntegerType(), False),
                    T.StructField(
                        "b", T.ArrayType(T.StructType([T.StructField("c", T.DateType())]))
                    ),
                ]
            ),
        ),
        (
            "ROW<a INT 'the a', `b c` STRING 'it''s b'>",
            T.StructType(
                [T.StructField("a", T.IntegerType()), T.StructField("b c", T.StringType())]
            ),
        ),
        ("ROW<>", T.StructType([])),
        ("string", T.StringType()),
        (
            "  map < string , array < int > >  ",
            T.MapType(T.StringType(), T.ArrayType(T.IntegerType())),
        ),
    ],
)
def test_spark_mapping(text: str, spark: T.DataType) -> None:
    assert spark_type(text) == spark


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("integer not null", "INT NOT NULL"),
        ("DEC(5, 2)", "DECIMAL(5, 2)"),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP_LTZ(3) NOT NULL"),
        ("ROW<`a``b` INT>", "ROW<`a`b` INT>"),
        ("INT NULL", "INT"),
        ("MAP<STRING, BYTES> NOT NULL", "MAP<STRING, BYTES> NOT NULL"),
    ],
)
def test_normalised_text(text: str, normalised: str) -> None:
    assert str(parse_flink_type(text)) == normalised


def test_parsed_structure() -> None:
    t = parse_flink_type("ROW<a DECIMAL(10, 2) NOT NULL, b MAP<STRING, ARRAY<INT>>>")
    assert t == FlinkType(
        "ROW",
        children=(
            FlinkType("DECIMAL", (10, 2), nullable=False),
            FlinkType(
                "MAP",
                children=(FlinkType("STRING"), FlinkType("ARRAY", children=(FlinkType("INT"),))),
            ),
        ),
        field_names=("a", "b"),
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "unexpected end"),
        ("FOO", "unknown type 'FOO'"),
        ("INT(3)", "at most 0"),
        ("VARCHAR(0)", "outside [1,"),
        ("DECIMAL(39)", "outside [1, 38]"),
        ("DECIMAL(5, 6)", "scale must not exceed"),
        ("DECIMAL(1,2,3)", "at most 2"),
        ("TIMESTAMP(10)", "outside [0, 9]"),
        ("TIMESTAMP_LTZ(12)", "outside [0, 9]"),
        ("TIMESTAMP(3) WITH TIME ZONE", "not supported by Flink"),
        ("ARRAY<>", "type name"),
        ("ARRAY<INT", "unexpected end"),
        ("MAP<STRING>", "expected ','"),
        ("ROW<a>", "type name"),
        ("ROW<a INT, a STRING>", "unique"),
        ("ROW a INT", "'<' or '('"),
        ("INT INT", "unexpected 'INT'"),
        ("VARCHAR(x)", "expected a number"),
        ("VARCHAR(1", "unexpected end"),
        ("`INT`", "expected a type name"),
        ("INT;", "character"),
        ("ARRAY<" * 40 + "INT" + ">" * 40, "nest deeper"),
        ("VARCHAR(99999999999999)", "number"),
        ("INTERVAL DAY", "unknown type"),
        ("RAW('x', 'y')", "unknown type"),
    ],
)
def test_invalid_types(text: str, fragment: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        parse_flink_type(text)
    assert fragment in str(info.value)


def test_non_string_type_is_an_options_error() -> None:
    with pytest.raises(KafkaOptionsError, match="must be a string"):
        parse_flink_type(3)  # type: ignore[arg-type]


def test_struct_type_of_columns_keeps_nullability_and_order() -> None:
    schema = struct_type(
        [
            Column("id", "BIGINT NOT NULL"),
            Column("tags", "ARRAY<STRING>"),
            Column("ts", "TIMESTAMP_LTZ(3)", metadata_key="timestamp"),
        ]
    )
    assert schema == T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("tags", T.ArrayType(T.StringType())),
            T.StructField("ts", T.TimestampType()),
        ]
    )


def test_computed_columns_have_no_declared_type() -> None:
    column = Column("day", expression="CAST(ts AS DATE)")
    assert column.is_computed and not column.is_physical and not column.is_metadata
    assert column.flink_type == FlinkType("STRING")
