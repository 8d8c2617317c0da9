"""JSON schema inference: value types, the type tree, flattening, fixed types and evolution."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import KafkaOptionsError
from dagster_kafka_flinklike.options import parse_fixed_types, parse_flink_type
from dagster_kafka_flinklike.source.inference import (
    InferenceSettings,
    infer_json_fields,
    merge_fields,
    wider_type,
)


def names(fields: dict) -> dict[str, str]:
    return {k: str(v) for k, v in fields.items()}


@pytest.mark.parametrize(
    ("a", "b", "wider"),
    [
        ("INT", "INT", "INT"),
        ("TINYINT", "BIGINT", "BIGINT"),
        ("INT", "DECIMAL(10, 2)", "DECIMAL(12, 2)"),
        ("DECIMAL(5, 3)", "DECIMAL(10, 1)", "DECIMAL(12, 3)"),
        ("BIGINT", "DECIMAL(38, 10)", "DECIMAL(38, 10)"),
        ("BIGINT", "DECIMAL(38, 30)", "DOUBLE"),
        ("FLOAT", "FLOAT", "FLOAT"),
        ("INT", "FLOAT", "DOUBLE"),
        ("DECIMAL(10, 2)", "DOUBLE", "DOUBLE"),
        ("VARCHAR(10)", "VARCHAR(20)", "VARCHAR(20)"),
        ("TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(6)"),
        ("DATE", "TIMESTAMP(3)", "TIMESTAMP(3)"),
        ("BOOLEAN", "BIGINT", "STRING"),
        ("VARCHAR(3)", "BIGINT", "STRING"),
        ("TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", "STRING"),
        ("INT NOT NULL", "INT", "INT"),
    ],
)
def test_the_type_tree(a: str, b: str, wider: str) -> None:
    ta, tb = parse_flink_type(a), parse_flink_type(b)
    assert str(wider_type(ta, tb)) == wider
    assert str(wider_type(tb, ta)) == wider


def test_fields_from_records_merge_in_first_seen_order() -> None:
    values = [
        b'{"id": 1, "price": 10, "tags": ["a"], "user": {"name": "x"}}',
        b'{"id": 2, "price": 10.5, "ok": true, "note": null}',
        None,  # a tombstone: no row
        b'{"id": 99999999999999999999999, "late": "2026-11-20"}',
        b"[1, 2]",  # not an object
        b"{broken",
    ]
    fields, bad = infer_json_fields(values)
    assert bad == 2
    assert names(fields) == {
        "id": "DECIMAL(23, 0)",
        "price": "DOUBLE",
        "tags": "STRING",
        "user": "STRING",
        "ok": "BOOLEAN",
        "note": "STRING",
        "late": "STRING",
    }


def test_flatten_primitive_as_string_and_fixed_types() -> None:
    values = [b'{"id": 1, "user": {"name": "x", "geo": {"lat": 1.5}}, "n": 3}']
    flat, _ = infer_json_fields(values, InferenceSettings(flatten_nested=True))
    assert names(flat) == {
        "id": "BIGINT",
        "user.name": "STRING",
        "user.geo.lat": "DOUBLE",
        "n": "BIGINT",
    }
    text, _ = infer_json_fields(values, InferenceSettings(primitive_as_string=True))
    assert set(names(text).values()) == {"STRING"}
    fixed = parse_fixed_types("json.infer-schema.fixed-types", "id INT, `n` DECIMAL(10, 2)")
    typed, _ = infer_json_fields(
        values, InferenceSettings(primitive_as_string=True, fixed_types=fixed)
    )
    assert names(typed) == {"id": "INT", "user": "STRING", "n": "DECIMAL(10, 2)"}


@pytest.mark.parametrize("text", ["id", "id BIGINT, ", "id NOTATYPE"])
def test_fixed_types_errors_name_the_option(text: str) -> None:
    with pytest.raises(KafkaOptionsError, match=r"json\.infer-schema\.fixed-types") as exc:
        parse_fixed_types("json.infer-schema.fixed-types", text)
    assert exc.value.keys == ("json.infer-schema.fixed-types",)


def test_evolution_over_three_batches() -> None:
    first, _ = infer_json_fields([b'{"id": 1, "name": "a"}'])
    second, _ = infer_json_fields([b'{"id": 2, "name": "b", "score": 3}'])
    third, _ = infer_json_fields([b'{"id": 3.5, "score": "high"}'])
    schema, changes = merge_fields({}, first)
    assert [str(c) for c in changes] == ["added column `id` BIGINT", "added column `name` STRING"]
    schema, changes = merge_fields(schema, second)
    assert [str(c) for c in changes] == ["added column `score` BIGINT"]
    schema, changes = merge_fields(schema, third)
    assert [str(c) for c in changes] == [
        "widened column `id` from BIGINT to DOUBLE",
        "widened column `score` from BIGINT to STRING",
    ]
    assert names(schema) == {"id": "DOUBLE", "name": "STRING", "score": "STRING"}
