# Two commands on a fresh machine: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
WORKERS ?= 2
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: that release is on the machines' local disk (any other spec may pull CUDA wheels)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/anchorlab demo --out demo_out --workers $(WORKERS)

test: setup
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks experiments

clean:
	rm -rf demo_out .pytest_cache
