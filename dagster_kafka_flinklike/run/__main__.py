"""``python -m dagster_kafka_flinklike.run``: regenerate ``docs/metrics.md``."""

from .metrics import write_metrics_reference

if __name__ == "__main__":  # pragma: no cover
    print(f"wrote {write_metrics_reference()}")
