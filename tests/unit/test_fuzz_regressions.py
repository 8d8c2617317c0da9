"""Inputs the fuzz targets (``make fuzz``) found failing, kept as regression tests."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest

from dagster_kafka_flinklike.options import KafkaOptionsError, KafkaTableSpec

REGISTRY = {
    "connector": "kafka",
    "topic": "t",
    "format": "avro-confluent",
    "avro-confluent.url": "http://registry:8081",
}


def test_a_map_option_without_an_entry_key_is_refused_naming_it() -> None:
    # It was taken as the map itself, a string, and failed later with a ValueError.
    with pytest.raises(KafkaOptionsError, match=r"'avro-confluent\.properties' is a map") as info:
        KafkaTableSpec.from_options({**REGISTRY, "avro-confluent.properties": "csv"})
    assert info.value.keys == ("avro-confluent.properties",)
    spec = KafkaTableSpec.from_options({**REGISTRY, "avro-confluent.properties.timeout": "5"})
    assert spec.value_format is not None
    assert spec.value_format.settings["properties"] == {"timeout": "5"}


_TABLES = """CREATE TABLE s (a INT) WITH ('connector' = 'kafka', 'topic' = 's', 'format' = 'csv');
CREATE TABLE k (a INT, n BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
  'topic' = 'k', 'key.format' = 'json', 'value.format' = 'json');
"""


@pytest.mark.parametrize("tail", ["GROUP", "GROUP BY", "GROUP BY a,", "GROUP BY a, SESSION"])
def test_a_query_that_ends_in_its_group_by_is_planned_or_refused(tail: str) -> None:
    # The rewriting of legacy SESSION windows read past the last token (an IndexError).
    from dagster_kafka_flinklike.sql import FlinkSqlError
    from dagster_kafka_flinklike.sql.pipeline import plan_flink_sql

    with contextlib.suppress(FlinkSqlError):
        plan_flink_sql(f"{_TABLES}INSERT INTO k SELECT a, COUNT(*) FROM s {tail};")


#: Python's codec of each strict charset (Java's UTF-16: big-endian unless a BOM says otherwise).
_CODECS = {
    "UTF-16BE": "utf-16-be",
    "UTF-16LE": "utf-16-le",
    "UTF-32": "utf-32-be",
    "UTF-16": "utf-16-be",
}


def _raw_strings(spark: Any, charset: str, values: list[bytes]) -> list[tuple[Any, Any]]:
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.formats import get_format
    from dagster_kafka_flinklike.options import Column

    frame = spark.createDataFrame([(v,) for v in values], "value binary")
    columns, options = [Column("s", "STRING")], {"charset": charset}
    struct, error, _ = get_format("raw").decode(F.col("value"), columns, options)
    return [(r[0], r[1]) for r in frame.select(struct["s"], error).collect()]


def _python_text(value: bytes, charset: str) -> str | None:
    """``value`` as text in ``charset`` by Python's strict codecs (None: not valid)."""
    codec = _CODECS[charset]
    if charset == "UTF-16" and value[:2] == b"\xff\xfe":
        value, codec = value[2:], "utf-16-le"
    try:
        return value.decode(codec)
    except UnicodeDecodeError:
        return None


@pytest.mark.spark
@pytest.mark.parametrize("charset", sorted(_CODECS))
def test_long_raw_text_in_a_strict_charset_is_decoded_or_dirty(spark: Any, charset: str) -> None:
    # Validating a few kilobytes of UTF-16 or UTF-32 overflowed the stack of Spark's task
    # (a StackOverflowError failed the job), the whole value being one regular expression.
    text = "aé€\U0001f600" * 2000
    codec = "utf-16-le" if charset == "UTF-16" else _CODECS[charset]
    bom = b"\xff\xfe" if charset == "UTF-16" else b""
    valid = bom + text.encode(codec)
    lone = valid + "\ud800".encode(codec, "surrogatepass")
    rng = random.Random(3)
    short = [rng.randbytes(rng.randrange(9)) for _ in range(300)]
    alphabet = b"\x00\xd8\xdc\xfe\xff\x10\x11A"
    short += [bytes(rng.choices(alphabet, k=rng.randrange(9))) for _ in range(300)]
    rows = _raw_strings(spark, charset, [valid, lone, *short])
    assert rows[0] == (text, None)
    assert rows[1][0] is None and f"not valid {charset} text" in str(rows[1][1])
    for value, (decoded, error) in zip(short, rows[2:], strict=True):
        valid_text = _python_text(value, charset) is not None  # the same verdict as Python's
        assert (decoded is not None) == valid_text, (value, decoded, error)
        assert (error is None) == valid_text, (value, error)


def _varint(n: int) -> bytes:
    zigzag, out = (n << 1) ^ (n >> 63), b""
    while zigzag > 0x7F:
        out, zigzag = out + bytes([zigzag & 0x7F | 0x80]), zigzag >> 7
    return out + bytes([zigzag])


@pytest.mark.spark
def test_an_avro_record_claiming_a_huge_array_is_dirty_not_an_out_of_memory_error(
    spark: Any,
) -> None:
    # Spark's from_avro allocated what the record claimed (10^9 items: a Java heap of several
    # GB) and the job failed with an OutOfMemoryError.
    from pyspark.sql import functions as F

    from dagster_kafka_flinklike.formats import get_format
    from dagster_kafka_flinklike.options import Column
    from dagster_kafka_flinklike.spark import has_spark_avro

    assert has_spark_avro(spark)  # (the record goes to Spark's from_avro first)
    columns = [Column("id", "BIGINT"), Column("tags", "ARRAY<STRING>")]
    valid = b"\x02" + _varint(7) + b"\x02" + _varint(1) + b"\x02" + _varint(1) + b"a\x00"
    claims = [b"\x00\x02" + _varint(count) + b"\x02\x02a" for count in (10**9, 2**31 - 1)]
    frame = spark.createDataFrame([(v,) for v in [valid, *claims]], "value binary")
    stages, (struct, error, _) = get_format("avro").decode_stages(F.col("value"), columns, {}, "p_")
    for stage in stages:
        frame = frame.select("*", *[expr.alias(name) for name, expr in stage.items()])
    rows = frame.select(struct, error).collect()
    assert rows[0][0].asDict() == {"id": 7, "tags": ["a"]} and rows[0][1] is None
    assert all(row[0] is None and row[1] for row in rows[1:]), rows


@pytest.mark.parametrize("charset", ["\x00upsert", "utf-8\x00", "utf\udcff-8"])
def test_a_charset_name_python_cannot_look_up_is_refused_naming_its_option(charset: str) -> None:
    # Python's codec lookup raised a ValueError (a NUL, or a UnicodeEncodeError: a lone
    # surrogate) through the options.
    options = {"connector": "kafka", "topic": "t", "format": "raw", "raw.charset": charset}
    with pytest.raises(KafkaOptionsError, match=r"'raw\.charset'") as info:
        KafkaTableSpec.from_options(options, columns=[{"name": "v", "type": "STRING"}])
    assert info.value.keys == ("raw.charset",)


_PIPELINE = """
tables:
  orders:
    options: {connector: kafka, topic: o, properties.bootstrap.servers: "h:9", format: json,
              scan.startup.mode: earliest-offset}
    columns: [{name: id, type: INT}]
  big:
    options: {connector: kafka, topic: b, properties.bootstrap.servers: "h:9", format: json}
    columns: [{name: id, type: INT}]
assets:
- {name: NAME, query: "SELECT id FROM orders", sources: [orders], sink: big,
   checks: {dirty_data: {name: CHECK}}}
"""


@pytest.mark.parametrize(
    ("asset", "check"), [("${v}", "ok"), ("my-asset", "ok"), ("ok", "kafka dirty"), ("é", "ok")]
)
def test_a_name_dagster_does_not_take_is_refused_at_load_naming_it(asset: str, check: str) -> None:
    # A Component asset named '${v}' reached Dagster, whose DagsterInvalidDefinitionError
    # escaped the load.
    from pydantic import ValidationError

    from dagster_kafka_flinklike import KafkaPipelineComponent

    text = _PIPELINE.replace("NAME", f'"{asset}"').replace("CHECK", f'"{check}"')
    bad = asset if asset != "ok" else check
    with pytest.raises(ValidationError, match=r"is not a name Dagster takes") as info:
        KafkaPipelineComponent.resolve_from_yaml(text)
    assert repr(bad) in str(info.value)


def test_a_pipeline_name_with_other_letters_gives_a_name_dagster_takes() -> None:
    # Python's \w takes 'é' and '٤': a data-ingestion or Flink SQL pipeline named so gave a
    # job and sensor name Dagster refuses.
    from dagster_kafka_flinklike.components.flink_sql import identifier

    assert identifier("café orders", "x") == "caf_orders"
    assert identifier("٤٢", "flink_sql") == "flink_sql"
