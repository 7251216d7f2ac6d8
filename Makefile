# Two commands on a fresh machine:  `make demo`  and  `make test`.
# Both create the virtual environment (.venv) and install cuegap into it first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/cuegap demo

test: $(STAMP)
	bash scripts/test.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check cuegap tests benchmarks
	$(VENV)/bin/ruff format --check cuegap tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/bench_ingest.py

clean:
	rm -rf $(VENV) cuegap.db cuegap.db-wal cuegap.db-shm cuegap-demo
