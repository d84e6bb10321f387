# Stoker — `make demo` runs it, `make test` tests it. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench clean

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

lint: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: install
	$(PY) bench/hit_path/run.py --rounds 5 --duration 8
	$(PY) bench/queue.py
	$(PY) bench/purge.py
	$(PY) bench/warm.py

clean:
	rm -rf $(VENV) .stoker .pytest_cache .mypy_cache .ruff_cache
