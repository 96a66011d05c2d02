# Kafka Inspector — the two commands a newcomer needs:
#   make demo   set up, then real captures in pcaps/ -> Parquet events -> Spark report
#   make test   set up, then lint, type-check, generated-code check and the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
KAFKA_SPEC ?= ../shared/kafka-spec
OUT ?= out

.PHONY: setup system-deps test lint demo regen check-generated bench captures clean docker-test

# A C compiler is required: the install compiles the hot path (setup.py), once, in place.
$(BIN)/kafka-inspector: pyproject.toml setup.py
	@command -v cc >/dev/null || { echo "a C compiler is needed (Debian: apt-get install build-essential)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# The compiled modules (decoders/accel/*.pyx, generated; */native/*.pyx; the hot path's .py) are built
# by the install above, in place; this rebuilds the ones whose sources changed since (nothing right after
# the install: setup.py compiles a module only when it is older than its sources), and writes the
# bytecode of the pure modules as pip does for an installed package (an editable install has none,
# and with PYTHONDONTWRITEBYTECODE set every run would compile the generated decoders (~6 MB) again).
ACCEL_STAMP := decoders/accel/.built
# Every source of a compiled module (setup.py's COMPILED, decoders/accel, the native folders) and every .pxd.
COMPILED_SOURCES := $(wildcard decoders/*.py decoders/*.pxd decoders/accel/*.pyx decoders/accel/*.pxd) \
  $(wildcard decoders/native/*.pyx decoders/native/*.pxd inspector/*/*.py inspector/*/*.pxd inspector/*/*.pyx)
$(ACCEL_STAMP): $(BIN)/kafka-inspector $(COMPILED_SOURCES)
	$(BIN)/python setup.py -q build_ext --inplace
	$(BIN)/python -m compileall -q inspector decoders pipelines contract >/dev/null
	touch $@

setup: $(BIN)/kafka-inspector $(ACCEL_STAMP)

# tshark (cross-checks), tcpdump (captures, live tap), tcpreplay (the tap's replay tests and bench), a JRE (Spark)
# and chromium (the report page test) come from Debian.
system-deps:
	@missing=""; \
	command -v tshark >/dev/null || missing="$$missing tshark"; \
	command -v tcpdump >/dev/null || missing="$$missing tcpdump"; \
	command -v tcpreplay >/dev/null || missing="$$missing tcpreplay"; \
	command -v java >/dev/null || missing="$$missing default-jre-headless"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

check-generated: setup
	$(BIN)/python -m decoders.codegen --check

# The suite on TEST_WORKERS processes (pytest-xdist), a test file's tests in one of them (its module fixtures made
# once), the longest files first (tests/conftest.py, SLOWEST_FIRST); each worker has its own Spark session. Two:
# this project's machine has two cores, and the suite keeps both busy (more workers only share them); each worker
# also starts a JVM of ~1 GB.
TEST_WORKERS ?= 2
test: setup system-deps lint check-generated
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

demo: setup system-deps
	$(BIN)/kafka-inspector read pcaps/*.pcap --output $(OUT) --overwrite
	$(BIN)/kafka-inspector report $(OUT) --output $(OUT)/report

# Update to a newer Kafka: newest spec directory first, older ones after (for retired versions); --additions
# names a partial folder of newer specs, read right after the newest full directory.
regen: setup
	$(BIN)/python -m decoders.regen $(KAFKA_SPEC)/apache-kafka-678c0e07 $(KAFKA_SPEC)/apache-kafka-1eb76443 \
	  --additions $(KAFKA_SPEC)/apache-kafka-additions-2026
	$(BIN)/python setup.py -q build_ext --inplace

# The TLS captures (pcaps/tls/) put stunnel4, Debian's OpenSSL TLS terminator, in front of the broker.
captures: setup system-deps
	@command -v stunnel4 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stunnel4 >/dev/null; }
	$(BIN)/python pcaps/make_captures.py

bench: setup system-deps
	$(BIN)/python bench/bench_decode.py
	$(BIN)/python bench/bench_read.py
	$(BIN)/python bench/bench_tls.py

# The image built from a clean export of the current commit and run in both roles (docs/docker.md): needs a
# Docker engine; minutes on a first run, less once Docker's layer cache holds the dependencies.
docker-test:
	docker/test.sh

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache build $(ACCEL_STAMP)
	find decoders inspector \( -name '*.so' -o -name '*.c' -o -name _compiled.json \) -delete
