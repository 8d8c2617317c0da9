# Two entry points (README quick start): `make demo` and `make test`.
# Both create the environment on a fresh clone; the embedded Kafka broker is
# fetched and started by the project itself unless KAFKA_BOOTSTRAP_SERVERS is set.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: env demo test lint bench bench-read bench-write bench-sensor ui clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

env: $(STAMP)

demo: env
	$(BIN)/python -m definitions.demo

test: env
	$(BIN)/python -m pytest

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: bench-read bench-write bench-sensor

bench-read: env
	$(BIN)/python bench/read_bench.py

bench-write: env
	$(BIN)/python bench/write_bench.py

bench-sensor: env
	$(BIN)/python bench/sensor_bench.py

ui: env
	DAGSTER_HOME=$(CURDIR)/.local/dagster_home $(BIN)/dagster dev -w workspace.yaml

clean:
	-$(BIN)/dkf local-kafka stop
	rm -rf .local
