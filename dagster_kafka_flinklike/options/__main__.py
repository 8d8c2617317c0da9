"""``python -m dagster_kafka_flinklike.options``: regenerate ``docs/options.md``."""

from ._docs import write_options_reference

if __name__ == "__main__":  # pragma: no cover
    print(f"wrote {write_options_reference()}")
