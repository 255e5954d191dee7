# Two commands on a fresh machine: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
WORKERS ?= 2
# test processes (pytest-xdist; auto: one a core; 0: the tests run in make's own pytest process)
TEST_WORKERS ?= auto
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: setup setup-dev demo test lint clean

# The demo needs only the core (torch, numpy, matplotlib, safetensors, tqdm); the tests also need the
# optional extras they exercise (Ray, transformers, tokenizers, scikit-learn, pyarrow: the "dev" extra).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: that release is on the machines' local disk (any other spec may pull CUDA wheels)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e .
	touch $(STAMP)

$(DEVSTAMP): $(STAMP)
	$(PY) -m pip install -q -e ".[dev]"
	touch $(DEVSTAMP)

setup: $(STAMP)

setup-dev: $(DEVSTAMP)

demo: setup
	$(VENV)/bin/anchorlab demo --out demo_out --workers $(WORKERS)

test: setup-dev
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: setup-dev
	$(VENV)/bin/ruff check src tests benchmarks experiments

clean:
	rm -rf demo_out .pytest_cache
