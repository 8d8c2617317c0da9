"""``scan.header-filter``: parsing, left-to-right evaluation and agreement with option checks."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dagster_kafka_flinklike.errors import KafkaOptionsError
from dagster_kafka_flinklike.options import HeaderCondition, _rules, parse_header_filter

SEED = "depart:toy|depart:book&!env:test"


def test_parse_keeps_conditions_and_operators_in_order() -> None:
    parsed = parse_header_filter(SEED)
    assert parsed.conditions == (
        HeaderCondition("depart", "toy"),
        HeaderCondition("depart", "book"),
        HeaderCondition("env", "test", negated=True),
    )
    assert [op for op, _ in parsed.rest] == ["|", "&"]
    assert str(parsed) == SEED


def test_whitespace_around_conditions_and_keys_is_ignored_values_are_exact() -> None:
    parsed = parse_header_filter("  depart:toy |  ! env :test ")
    assert parsed.conditions == (
        HeaderCondition("depart", "toy"),
        HeaderCondition("env", "test", negated=True),
    )
    assert parse_header_filter("k: v").first.value == " v"
    assert parse_header_filter("url:http://x:8080/a").first == HeaderCondition(
        "url", "http://x:8080/a"
    )
    assert parse_header_filter("empty:").first == HeaderCondition("empty", "")


# The seed's example for every combination of depart/env headers a record may carry.
DEPARTS = [(), ("toy",), ("book",), ("food",), ("toy", "book"), ("Toy",)]
ENVS = [(), ("test",), ("prod",), ("prod", "test")]


@pytest.mark.parametrize(("departs", "envs"), list(itertools.product(DEPARTS, ENVS)))
def test_seed_example_truth_table(departs: tuple[str, ...], envs: tuple[str, ...]) -> None:
    headers = [("depart", d.encode()) for d in departs] + [("env", e.encode()) for e in envs]
    expected = ("toy" in departs or "book" in departs) and "test" not in envs
    assert parse_header_filter(SEED).matches(headers) is expected


def test_operators_apply_left_to_right_without_precedence() -> None:
    only_a = [("a", b"1")]
    # Left to right: (a or b) and c. With '&' binding tighter it would be a or (b and c) = True.
    assert parse_header_filter("a:1|b:1&c:1").matches(only_a) is False
    # Left to right: (a and b) or c.
    assert parse_header_filter("a:1&b:1|c:1").matches([("c", b"1")]) is True
    assert parse_header_filter("a:1&b:1|c:1").matches(only_a) is False
    # A chain of negations and ors: ((not a) or b) and (not c) ... evaluated in order.
    assert parse_header_filter("!a:1|b:1&!c:1").matches([("a", b"1"), ("b", b"1")]) is True
    assert parse_header_filter("!a:1|b:1&!c:1").matches([("b", b"1"), ("c", b"1")]) is False


def test_values_compare_as_exact_utf8_bytes() -> None:
    f = parse_header_filter("région:été")
    assert f.matches([("région", "été".encode())]) is True
    assert f.matches([("région", "été".encode("latin-1"))]) is False
    assert f.matches([("région", b"ete")]) is False
    assert parse_header_filter("k:toy").matches([("k", b"toy ")]) is False
    assert parse_header_filter("k:toy").matches([("K", b"toy")]) is False


def test_any_header_of_a_repeated_key_matches_and_null_values_never_do() -> None:
    f = parse_header_filter("env:test")
    assert f.matches([("env", b"prod"), ("env", b"test"), ("env", b"dev")]) is True
    assert f.matches([("env", None)]) is False
    assert parse_header_filter("!env:test").matches([("env", None)]) is True
    assert parse_header_filter("env:").matches([("env", None)]) is False
    assert parse_header_filter("env:").matches([("env", b"")]) is True


def test_a_record_without_headers_fails_conditions_and_passes_negations() -> None:
    assert parse_header_filter("env:test").matches([]) is False
    assert parse_header_filter("!env:test").matches([]) is True


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("depart", "without ':'"),
        (":toy", "without a header key"),
        ("!:toy", "without a header key"),
        ("depart:toy|", "empty condition (condition 2)"),
        ("depart:toy&&env:test", "empty condition (condition 2)"),
        ("(depart:toy|depart:book)&!env:test", "parentheses are not supported"),
        ("depart:(toy)", "parentheses are not supported"),
        ("!!env:test", "'!' may only start a condition"),
        ("de!part:toy", "'!' may only start a condition"),
    ],
)
def test_invalid_expressions_name_the_option(text: str, fragment: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        parse_header_filter(text)
    assert fragment in str(info.value)
    assert info.value.keys == ("scan.header-filter",)
    assert "'scan.header-filter'" in str(info.value)


def _accepted_by_options(text: str) -> bool:
    try:
        _rules.header_filter(text)
    except KafkaOptionsError:
        return False
    return True


def _parses(text: str) -> bool:
    try:
        parse_header_filter(text)
    except KafkaOptionsError:
        return False
    return True


@given(st.text(alphabet="ab:!&|()", max_size=12))
def test_parser_accepts_exactly_what_the_options_layer_accepts(text: str) -> None:
    assert _parses(text) == _accepted_by_options(text)


def _oracle(conditions: list[tuple[bool, str, str]], operators: list[str], headers: list) -> bool:
    """Independent evaluation: each condition's truth, then folded pairwise from the left."""
    truths = [
        any(k == key and v == value.encode() for k, v in headers) != negated
        for negated, key, value in conditions
    ]
    result = truths[0]
    for op, truth in zip(operators, truths[1:], strict=True):
        result = (result and truth) if op == "&" else (result or truth)
    return result


CONDITION = st.tuples(st.booleans(), st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]))


@given(
    st.lists(CONDITION, min_size=1, max_size=6),
    st.lists(st.sampled_from("&|"), min_size=5, max_size=5),
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([b"1", b"2", b"3"])),
        max_size=5,
    ),
)
def test_evaluation_matches_left_nested_boolean_expression(
    conditions: list[tuple[bool, str, str]], operators: list[str], headers: list
) -> None:
    ops = operators[: len(conditions) - 1]
    text = "".join(
        ("" if i == 0 else ops[i - 1]) + ("!" if neg else "") + f"{k}:{v}"
        for i, (neg, k, v) in enumerate(conditions)
    )
    assert parse_header_filter(text).matches(headers) is _oracle(conditions, ops, headers)
