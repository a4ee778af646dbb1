"""Test set-up: 8 fake CPU devices, so sharding is exercised on every run; fast compiles.

The flag must be set before JAX initialises its backends, hence at import of
this conftest, which pytest loads before any test module.
"""

import os

# XLA's CPU fusion emitters (the default) compile slower than the elemental emitters
# they replace: with them off a sample of the common test took 20 s of CPU instead of
# 36 s, every test passing either way. Splitting each program's LLVM module for parallel
# codegen, and the concurrency-optimised scheduler, cost more than they save on small
# programs with two busy cores: without them two samples of the common test (36 and 99
# examples) took 34 s and 44 s of CPU instead of 42 s and 50 s.
FAST_COMPILE_FLAGS = ("--xla_cpu_use_fusion_emitters=false "
                      "--xla_cpu_parallel_codegen_split_count=1 "
                      "--xla_cpu_enable_concurrency_optimized_scheduler=false")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE_FLAGS +
                           " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The suite is compile-bound (small shapes, many programs): XLA's optimisation passes
# cost more than they save here. With them mostly off the whole suite took 6 min 03 s
# instead of 9 min 29 s on 2 cores, every test passing either way. Set through the
# environment, so launcher subprocesses and notebook kernels inherit it;
# `JAX_DISABLE_MOST_OPTIMIZATIONS=0 make test` runs the suite fully optimised, and
# `make reproduce` and the launchers always are.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

import jax  # noqa: E402  (after the flag)

jax.config.update("jax_threefry_partitionable", True)


import pytest  # noqa: E402

from reprojax.data import paths  # noqa: E402  (no JAX work at import)


def _in_ci() -> bool:
  return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture
def manual_dataset():
  """Resolves a real dataset's folder under ``$REPROJAX_MANUAL_DIR``, or skips the test.

  ``manual_dataset("crowd_binary/jn_product", "answer.csv", "truth.csv")`` returns
  the folder. When the folder or a file is missing the test is skipped with one
  line naming the dataset and the variable to set; under ``CI=true`` (how
  ``.ci/run`` runs) it fails instead, so real-data tests cannot silently stop
  running. Every test that reads a manual-folder dataset goes through this.
  """

  def resolve(name: str, *required: str) -> str:
    try:
      return paths.manual_dir(name, required=required)
    except FileNotFoundError as e:
      message = str(e)
      if paths.MANUAL_DIR_ENV not in message:
        message += f" Set ${paths.MANUAL_DIR_ENV} to the folder that holds {name}/."
      line = f"needs real data: {message} (.ci/run uses ../shared/data)"
      if _in_ci():
        pytest.fail(f"CI=true: {line}", pytrace=False)
      pytest.skip(line)

  return resolve


# The longest tests (tens of seconds each: two-process runs, the notebooks' tiny runs, the
# launcher's subprocesses) go first, so that pytest-xdist's workers end together on short
# tests instead of one worker finishing a notebook while the others idle.
_LONG_FIRST = ("tests/experiments/test_multihost.py",
               "tests/test_notebooks.py::test_notebook_runs_top_to_bottom",
               "tests/experiments/test_launcher.py")


def pytest_collection_modifyitems(config, items):
  del config
  rank = lambda item: next((i for i, p in enumerate(_LONG_FIRST)  # noqa: E731
                            if item.nodeid.startswith(p)), len(_LONG_FIRST))
  items.sort(key=rank)  # stable: the order within each group is kept
