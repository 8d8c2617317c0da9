"""Metric names are declared once; the reference page is generated from them and current."""

from __future__ import annotations

from pathlib import Path

from dagster_kafka_flinklike.run import metrics

REPO = Path(__file__).resolve().parents[2]


def test_metrics_page_is_current() -> None:
    page = REPO / "docs" / "metrics.md"
    assert page == metrics.DOC_PATH
    assert page.read_text(encoding="utf-8") == metrics.render_metrics_reference(), (
        "docs/metrics.md is stale: run `python -m dagster_kafka_flinklike.run`"
    )


def test_every_metric_is_declared_once_per_scope_and_documented() -> None:
    seen = {(m.name, m.scope) for m in metrics.METRICS}
    assert len(seen) == len(metrics.METRICS)
    page = metrics.render_metrics_reference()
    for m in metrics.METRICS:
        assert m.description and m.unit
        assert f"| `{m.name}` | {m.unit} |" in page


def test_a_run_records_only_declared_names() -> None:
    from dagster_kafka_flinklike.run.cycle import write_metrics
    from dagster_kafka_flinklike.sink.transactional import TransactionResult

    result = TransactionResult(10, 100, 0, None, 5.0, "t-0", 1, 2, 30.0, 1, 60_000)
    names = set(write_metrics(result, 1.0))
    declared = {m.name for m in metrics.OUTPUT_METRICS}
    assert names == declared
