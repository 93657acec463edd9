# Benchmarks (bench/README.md): `make bench` from a clean checkout creates .venv-bench/, installs agentturn
# with its CDK extra (the cold-start bench builds each function's asset) plus the comparison packages of
# bench/requirements.txt into it (never into the project's own environment), then runs every benchmark and
# writes bench/results/ and the README tables.

PYTHON ?= python3
BENCH_VENV ?= .venv-bench
BENCH_PYTHON := $(BENCH_VENV)/bin/python
BENCH_STAMP := $(BENCH_VENV)/.installed
BENCH_ARGS ?=

.PHONY: bench bench-quick bench-env bench-clean

bench: $(BENCH_STAMP)
	$(BENCH_PYTHON) -m bench.bench_all $(BENCH_ARGS)

# A smoke run: fewer repeats and conversation lengths (about two minutes).
bench-quick: $(BENCH_STAMP)
	$(BENCH_PYTHON) -m bench.bench_all --quick $(BENCH_ARGS)

bench-env: $(BENCH_STAMP)

$(BENCH_STAMP): pyproject.toml bench/requirements.txt
	test -x $(BENCH_PYTHON) || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[cdk]' -r bench/requirements.txt
	touch $@

bench-clean:
	rm -rf $(BENCH_VENV)
