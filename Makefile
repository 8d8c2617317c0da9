# Two entry points (README quick start): `make demo` and `make test`.
# Both create the environment on a fresh clone; the embedded Kafka broker is
# fetched and started by the project itself unless KAFKA_BOOTSTRAP_SERVERS is set.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The UI test drives Debian's Chromium; `make test` installs it when it is missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: env browser openssl flink-oracle demo test soak faults fuzz corpus exactness lint bench bench-read bench-write bench-sensor bench-run bench-stateful ui clean

# uv resolves and downloads in parallel (about 40 s instead of 90 s on a fresh machine); pip
# stays the fallback wherever uv cannot run.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	{ $(BIN)/python -m pip install --quiet uv && \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'; } || \
	  $(BIN)/python -m pip install --quiet -e '.[dev]'
	# Bytecode once, here: with PYTHONDONTWRITEBYTECODE set (as on these machines) every fresh
	# process (each Dagster run, the demo, dkf) would otherwise compile what it imports again.
	-$(BIN)/python -m compileall -q -j0 $(VENV)/lib dagster_kafka_flinklike definitions >/dev/null
	touch $(STAMP)

env: $(STAMP)

# Run as a script (not `-m definitions.demo`), so the demo starts Spark before the example's
# package (and Dagster) is imported: the JVM comes up meanwhile.
demo: env
	$(BIN)/python definitions/demo.py

browser:
	command -v chromium >/dev/null 2>&1 || $(SUDO) env DEBIAN_FRONTEND=noninteractive sh -c \
	  'apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)'

# The security test follows the JKS-to-PEM commands its errors give (keytool comes with the JDK).
openssl:
	command -v openssl >/dev/null 2>&1 || $(SUDO) env DEBIAN_FRONTEND=noninteractive sh -c \
	  'apt-get install -y -q openssl || (apt-get update -q && apt-get install -y -q openssl)'

# The slowest tests are listed at the end, so that CI's output shows where its time goes.
test: env browser openssl flink-oracle
	$(BIN)/python -m pytest --durations=30

# The whole Flink SQL corpus, here and on Apache Flink (make test runs a CI-sized part).
corpus: env flink-oracle
	$(BIN)/python -m tests.corpus

# The SIGKILL tests at full length (make test runs them CI-sized).
soak: env flink-oracle
	KILL_TEST_RECORDS=200000 KILL_TEST_KILLS=20 KILL_TEST_ALO_KILLS=8 KILL_TEST_STATEFUL_KILLS=10 \
	  $(BIN)/python -m pytest -s tests/integration/test_kills.py

# The JSON exactness test with DECIMAL exponents of 99,999,999 (make test runs 2,000,000): Flink
# spends minutes of BigInteger arithmetic on each such record.
exactness: env flink-oracle
	JSON_TEST_EXPONENT=99999999 $(BIN)/python -m pytest tests/integration/test_json_exactness.py

# Broker and client faults on a 3-node cluster at length (make test runs them CI-sized): 1M
# records, 320 exactly-once rounds (220 client kills, 80 broker kills of which 20 whole-cluster,
# 20 pauses) and 48 at-least-once rounds; each test prints its figures as a JSON line.
# FAULT_TEST_SEED replays.
faults: env
	FAULT_TEST_RECORDS=1000000 FAULT_TEST_ROUNDS=320 FAULT_TEST_ALO_ROUNDS=48 \
	  $(BIN)/python -m pytest -s tests/integration/test_broker_faults.py

# The fuzz targets at length (tests/fuzz; make test runs each one CI-sized): FUZZ_INPUTS generated
# inputs per target (a slow target stops at its own cap: see README "Fuzzing"), from FUZZ_SEED;
# FUZZ_TARGETS names some (NAME=N sets one's count). It prints each target's figures, then
# a JSON line of all; a failing input is written under .local/fuzz-failures (--replay FILE).
FUZZ_INPUTS ?= 1000000
FUZZ_SEED ?= 1
FUZZ_TARGETS ?=
fuzz: env
	$(BIN)/python -m tests.fuzz $(FUZZ_TARGETS) --inputs $(FUZZ_INPUTS) --seed $(FUZZ_SEED)

# Apache Flink (PyFlink in its own environment, and its Kafka connector) as the tests' oracle.
flink-oracle: env
	$(BIN)/python -m tests.oracle

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/unit/test_import_graph.py

bench: bench-read bench-write bench-sensor bench-run bench-stateful

bench-read: env
	$(BIN)/python bench/read_bench.py

bench-write: env
	$(BIN)/python bench/write_bench.py

bench-sensor: env
	$(BIN)/python bench/sensor_bench.py

bench-run: env
	$(BIN)/python bench/run_bench.py

bench-stateful: env
	$(BIN)/python bench/stateful_bench.py

ui: env
	DAGSTER_HOME=$(CURDIR)/.local/dagster_home $(BIN)/dagster dev -w workspace.yaml

clean:
	-$(BIN)/dkf local-kafka stop
	-$(BIN)/dkf local-registry stop
	-$(BIN)/dkf local-spark stop
	-$(BIN)/dkf local-spark stop --workers 1
	rm -rf .local
