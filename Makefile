# Two commands on a fresh machine:  `make demo`  and  `make test`.
# Both create the virtual environment (.venv) and install cuegap into it first.
VENV ?= .venv
# Extras to install (.ci/run sets EXTRAS=dev,spark in the environment for the Spark tests).
EXTRAS ?= dev
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/cuegap demo

test: $(STAMP)
	bash scripts/test.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check cuegap tests benchmarks
	$(VENV)/bin/ruff format --check cuegap tests benchmarks

# Issue 14's figures in one run: ingest against its floors, analysis at 1x and 10x, the demo.
bench: $(STAMP)
	$(PY) benchmarks/bench_ingest.py
	$(PY) benchmarks/bench_flat_analysis.py
	$(PY) benchmarks/bench_demo.py

clean:
	rm -rf $(VENV) cuegap.db cuegap.db-wal cuegap.db-shm cuegap-demo
