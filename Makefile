# Stoker — `make demo` runs it, `make test` tests it. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-fast lint reference bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Stoker needs Python 3.11 or newer (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: install
	$(VENV)/bin/stoker demo

test: install
	$(PY) -m pytest -q

test-fast: install   # unit, contract and in-process core tests: no HTTP servers, no browser, no PostgreSQL or Redis
	$(PY) -m pytest -q -m "not services" tests/unit tests/contract tests/core

lint: install
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

reference: install   # the generated reference: docs/configuration.md's settings table, docs/cli.md
	$(PY) -m stoker.cli.reference

bench: install
	$(PY) bench/hit_path/run.py --rounds 5 --duration 8
	$(PY) bench/job_queue.py
	$(PY) bench/purge.py
	$(PY) bench/hit_path/run.py --systems stoker,stoker-l2 --rounds 5 --duration 8 --output bench/results/hit_path_l2.json
	$(PY) bench/miss_path.py --rounds 5 --duration 6
	$(PY) bench/memory.py --rounds 3
	$(PY) bench/hit_path/run.py --systems stoker,stoker-2p,nginx,nginx-2w --scenarios browser --no-pin --connections 64 --rounds 5 --duration 8 --output bench/results/scaling.json
	$(PY) bench/cluster.py
	$(PY) bench/access_log.py --rounds 5
	$(PY) bench/warm.py
	$(PY) bench/hostile.py
	$(PY) bench/cold_trace.py
	$(PY) bench/decorator.py

clean:
	rm -rf $(VENV) .stoker .pytest_cache .mypy_cache .ruff_cache
