"""Flink SQL functions as we translate them give Flink's values: each expression is evaluated
by Apache Flink (the oracle) and by Spark over our translation, value for value, or both fail."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from dagster_kafka_flinklike.sql.translate import translate_query

pytestmark = [pytest.mark.spark]

#: Expressions whose Flink semantics differ from Spark's own function of the same name.
EXPRESSIONS = [
    # Flink truncates a decimal string cast to an integral type; an exponent or an
    # out-of-range number fails (CAST) or is NULL (TRY_CAST).
    "CAST('7.5' AS INT)",
    "TRY_CAST('7.5' AS INT)",
    "CAST('-7.5' AS INT)",
    "CAST(' 7 ' AS INT)",
    "CAST('7.5' AS BIGINT)",
    "CAST('7.5' AS SMALLINT)",
    "CAST('.5' AS TINYINT)",
    "CAST('x' AS INT)",
    "TRY_CAST('x' AS INT)",
    "CAST('1e3' AS INT)",
    "TRY_CAST('1e3' AS INT)",
    "CAST('3000000000' AS INT)",
    "TRY_CAST('3000000000' AS INT)",
    "CAST(7.9 AS INT)",
    "CAST(-7.9 AS INT)",
    # JSON_VALUE returns scalars only: NULL for an object or an array.
    "JSON_VALUE('{\"a\":{\"b\":1}}', '$.a')",
    "JSON_VALUE('{\"a\":[1,2]}', '$.a')",
    "JSON_VALUE('{\"a\":\"{x}\"}', '$.a')",
    "JSON_VALUE('{\"a\":\"[x\"}', '$.a')",
    "JSON_VALUE('{\"a\":true}', '$.a')",
    "JSON_VALUE('{\"a\":{\"b\":[5]}}', '$.a.b[0]')",
    "JSON_VALUE('nope', '$.a')",
    "JSON_VALUE('{\"a\":7}', '$.a' RETURNING INT)",
    # JSON_OBJECT writes its keys sorted (found by the corpus, s12_json_object)
    "JSON_OBJECT('c' VALUE 1, 'a' VALUE 2, 'zz' VALUE 'x', 'b' VALUE 4, 'aa' VALUE 5)",
    "JSON_OBJECT(KEY 'name' VALUE 'x', KEY 'age' VALUE CAST(NULL AS INT) ABSENT ON NULL)",
]


def _ours(spark: Any, expression: str) -> dict[str, Any]:
    try:
        rows = spark.sql(translate_query(f"SELECT {expression} AS v").text).collect()
    except Exception as exc:  # Spark fails the expression: so must Flink
        return {"error": str(exc).splitlines()[0]}
    value = rows[0][0]
    return {"value": str(value) if isinstance(value, Decimal) else value}


def test_functions_give_flinks_values(spark: Any, oracle: Any) -> None:
    theirs = oracle.evaluate(EXPRESSIONS)
    differences = []
    for expression, flink in zip(EXPRESSIONS, theirs, strict=True):
        ours = _ours(spark, expression)
        if ("error" in flink) != ("error" in ours) or flink.get("value") != ours.get("value"):
            differences.append(f"{expression}: Flink {flink}, ours {ours}")
    assert not differences, "\n".join(differences)
