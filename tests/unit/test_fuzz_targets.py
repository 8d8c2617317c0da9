"""The fuzz targets (``make fuzz``, ``tests/fuzz``) CI-sized, so the harness cannot rot: every
target runs a few hundred inputs (the decoders without Spark; ``test_fuzz_decoders.py`` runs
them through Spark) and finds nothing, and planted faults are found: a loader that raises a
foreign exception or shows a secret, a decoder that counts a record twice, a C module that
crashes. A failing input is written to a file that ``--replay`` checks again."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from dagster_kafka_flinklike import KafkaConnectorError
from tests.fuzz import DECODERS, TARGETS, make_target
from tests.fuzz.__main__ import main
from tests.fuzz.decoders import Decoders
from tests.fuzz.harness import Counts, Finding, Target, read_failure, replay, run_target
from tests.fuzz.loaders import ComponentYaml, IngestionYaml, check_one
from tests.fuzz.mutate import case_random, mutate_bytes, mutate_text
from tests.unit.test_loaders_fuzz import MARK

#: Inputs per target here (the C modules cost the most per input).
SIZES = {"native": 200}


def _run(target: Target, inputs: int, tmp_path: Path) -> tuple[Counts, str]:
    out = io.StringIO()
    try:
        counts = run_target(target, inputs, seed=7, failures=tmp_path, out=out)
    finally:
        target.close()
    return counts, out.getvalue()


@pytest.mark.parametrize("name", list(TARGETS))
def test_every_target_runs_clean(name: str, tmp_path: Path) -> None:
    target = make_target(name, spark=False) if name in DECODERS else make_target(name)
    inputs = SIZES.get(name, 200)
    target.batch = min(target.batch, 100)
    counts, out = _run(target, inputs, tmp_path)
    assert counts.inputs == inputs
    assert counts.failures == 0, out
    assert not list(tmp_path.iterdir())


def test_inputs_are_the_same_for_the_same_seed() -> None:
    target = make_target("sql")
    first = [target.case(case_random(3, "sql", i)) for i in range(50)]
    again = [target.case(case_random(3, "sql", i)) for i in range(50)]
    other = [target.case(case_random(4, "sql", i)) for i in range(50)]
    assert first == again and first != other


def test_mutations_leave_protected_text_alone() -> None:
    text = f"key: {MARK}-a, other: {MARK}-bb\n"
    import re

    for i in range(300):
        edited = mutate_text(case_random(1, "t", i), text, protect=re.compile(rf"{MARK}-\w+"))
        assert f"{MARK}-a" in edited and f"{MARK}-bb" in edited
    assert any(mutate_bytes(case_random(1, "b", i), b"{}") != b"{}" for i in range(10))


# -- planted faults ------------------------------------------------------------------------------


class _Broken(IngestionYaml):
    """The data-ingestion target over a loader that fails on purpose: a foreign exception for
    text with a colon, a planted secret in its message for text with the mark."""

    name = "ingestion"

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        findings = []
        for i, (_, data) in enumerate(cases):
            found = check_one(counts, i, _broken_loader, str(data), counted=lambda: True)
            if found is not None:
                findings.append(found)
        return findings


def _broken_loader(text: str) -> None:
    if MARK in text:
        raise KafkaConnectorError(f"cannot read {text[text.index(MARK) :][:20]}")
    if ":" in text:
        raise KeyError("a foreign exception")
    raise KafkaConnectorError("refused")


def test_a_foreign_exception_and_a_secret_in_a_message_are_failures(tmp_path: Path) -> None:
    cases = [IngestionYaml().case(case_random(7, "ingestion", i)) for i in range(60)]
    kinds = {f.kind for f in _Broken().check(cases, Counts())}
    assert kinds == {"foreign exception", "secret shown"}
    counts, out = _run(_Broken(), 60, tmp_path)
    assert counts.failures > 5 and out.count("FAILURE ingestion") == 5  # (five written)
    files = sorted(tmp_path.iterdir())
    assert 0 < len(files) <= 5
    name, seed, index, case = read_failure(files[0])
    assert (name, seed) == ("ingestion", 7)
    assert case == IngestionYaml().case(case_random(7, "ingestion", index))
    assert replay(_Broken(), seed, index, case)  # it fails again


def test_a_template_in_a_binary_value_is_dagsters_to_render_and_one_in_a_comment_is_none() -> None:
    # Found by the campaign: ``!!binary AXt7`` is the bytes ``\\x01{{``, which the schema takes
    # as text and Dagster renders as a template (Jinja's syntax error, Dagster's own); the
    # component never sees it, as with a template written as text.
    import yaml

    target = ComponentYaml()
    data = yaml.safe_load(target.text)
    plain = yaml.safe_dump(data)
    data["tables"]["orders"]["options"]["format"] = b"\x01{{"
    binary = yaml.safe_dump(data)
    assert "!!binary" in binary and "{{" not in binary
    commented = plain + "# {{ a comment, which Dagster does not render }}\n"
    counts = Counts()
    assert target.check([binary, plain, commented], counts) == []
    assert counts.extra == {"templates": 1}
    assert counts.refused == 0  # the plain attributes build, with the comment too


def test_a_decoder_that_decodes_and_fails_a_record_is_caught(tmp_path: Path) -> None:
    target = make_target("avro", spark=False)
    assert isinstance(target, Decoders)

    def both(values: Any) -> Any:
        import pyarrow as pa

        rows = pa.array([{"id": 1}] * len(values), pa.struct([("id", pa.int64())]))
        errors = pa.array(["bad"] * len(values), pa.string())
        return pa.StructArray.from_arrays([rows, errors], names=["row", "error"])

    target._udf_function = lambda table: both  # type: ignore[method-assign]
    counts, out = _run(target, 20, tmp_path)
    assert counts.failures == 20 and "decoded and dirty" in out


def test_a_json_decimal_with_an_exponent_of_millions_is_checked_like_any_record() -> None:
    target = make_target("json", spark=False)
    assert isinstance(target, Decoders)
    flat = [t.name for t in target.tables].index("flat")
    cases = [
        [flat, None, b'{"price": 1.5e-99999999}', [1, 0]],
        [flat, None, b'{"name": "1.5e-99999999", "price": 1.5e+99999999}', [1, 0]],
    ]
    counts = Counts()
    assert target.check(cases, counts) == []


def test_a_crash_in_a_c_module_is_caught_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("FUZZ_NATIVE_CRASH_AT", "5")  # the worker crashes at input 5 on purpose
    target = make_target("native")
    counts, out = _run(target, 20, tmp_path)
    assert counts.failures == 1 and counts.inputs == 20, out
    assert "FAILURE native #5 (sanitizer report or crash)" in out
    calls = ("scan_calls", "nested_scan_calls", "exact_calls", "message_calls")
    assert sum(counts.extra[k] for k in calls) == 14  # after the crash
    [file] = tmp_path.iterdir()
    assert json.loads(file.read_text())["case"]["index"] == 5


def test_the_command_line_prints_the_figures_last(capsys: Any, tmp_path: Path) -> None:
    code = main(["options=50", "sql=20", "--seed", "3", "--failures", str(tmp_path)])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    figures = json.loads(last)
    assert code == 0
    assert (
        figures["targets"]["options"]["inputs"] == 50 and figures["targets"]["sql"]["failures"] == 0
    )
    assert figures["seed"] == 3 and figures["total_seconds"] >= 0
