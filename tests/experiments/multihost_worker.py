"""One process of ``test_multihost.py``: every paper's main step on a mesh spanning 2 processes.

    python tests/experiments/multihost_worker.py PORT PROCESS_ID OUT_JSON WORKDIR

Run as two processes (``jax.distributed`` over localhost, 4 CPU devices each). For every
registered paper, both run ``main_step(tiny config, key(0))`` on the 8-device mesh that
spans them, and process 0 also runs it on one of its own devices (one process, one
device: the answer the paper's notebook computes) and compares. Then the training paths
that an earlier two-process run found broken, at their smallest shapes: suco's supervised
step and pdr's RL loop (with its orbax checkpoint) on host data. Process 0 writes
``{name: {"ok": bool, "max_abs": float, "error": str}}`` to OUT_JSON.
"""

import importlib
import json
import os
import sys
import time
import traceback

import jax
import numpy as np

from reprojax.experiments import launcher
from reprojax.experiments import registry
from reprojax.experiments import sharding

RTOL, ATOL = 2e-4, 1e-5  # as tests/experiments/test_papers.py: sums in another order


def _compare(got, want) -> tuple[bool, float, str]:
  got, want = jax.tree.leaves(got), jax.tree.leaves(want)
  if len(got) != len(want) or not got:
    return False, float("nan"), f"{len(got)} leaves against {len(want)}"
  worst = 0.0
  for a, b in zip(got, want):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
      return False, float("nan"), f"shape {a.shape} against {b.shape}"
    worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)))
    if not np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
      return False, worst, "differs beyond rtol 2e-4, atol 1e-5"
  return True, worst, ""


def _host(tree):
  return jax.tree.map(sharding.to_host, tree)


def main_steps(report, pid):
  global_mesh = sharding.make_mesh()
  local_mesh = sharding.make_mesh(devices=jax.local_devices()[:1])
  for slug in registry.PAPERS:
    t0 = time.time()
    try:
      experiment = importlib.import_module(f"reprojax.experiments.{slug}.experiment")
      step = experiment.main_step(registry.load_config(slug, "tiny"), jax.random.key(0))
      got = _host(step.build(global_mesh)(*step.args))
      if pid == 0:
        ok, worst, err = _compare(got, _host(step.build(local_mesh)(*step.args)))
        report[slug] = {"ok": ok, "max_abs": worst, "error": err, "s": time.time() - t0}
    except Exception:  # pylint: disable=broad-except
      report[slug] = {"ok": False, "max_abs": float("nan"), "error": traceback.format_exc()[-1500:]}
      raise  # the other process waits on a collective: stop both


def suco_training(report, pid):
  from reprojax.experiments.suco import programs as suco  # pylint: disable=g-import-not-at-top
  from reprojax.models import llama  # pylint: disable=g-import-not-at-top
  config = registry.load_config("suco", "tiny")
  cfg = suco.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(1)))
  rows = suco.base_rows(config, 0)
  kw = dict(steps=2, batch=8, lr=1e-3, seed=0)
  got, loss = suco.train_lm(cfg, params, rows, mesh=sharding.make_mesh(), **kw)
  if pid == 0:
    want, want_loss = suco.train_lm(cfg, params, rows,
                                    mesh=sharding.make_mesh(devices=jax.local_devices()[:1]), **kw)
    ok, worst, err = _compare((got, loss), (want, want_loss))
    report["suco.train_lm"] = {"ok": ok, "max_abs": worst, "error": err}


def pdr_rl(report, pid, workdir):
  from reprojax.experiments.pdr import programs as pdr  # pylint: disable=g-import-not-at-top
  from reprojax.experiments.pdr import rl  # pylint: disable=g-import-not-at-top
  from reprojax.models import llama  # pylint: disable=g-import-not-at-top
  config = registry.load_config("pdr", "tiny")
  config.rl.steps = 2
  config.rl.checkpoint_every = 2
  config.rl.questions = 2
  cfg = pdr.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(2)))
  out, summary = rl.train_rl(config, params, workdir, 0, cfg=cfg, task=pdr.sorting_task(config),
                             pad=pdr.prompt_pad(config), mesh=sharding.make_mesh())
  if pid == 0:
    saved = os.path.isdir(os.path.join(workdir, "checkpoints", "2"))
    finite = all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(out))
    report["pdr.train_rl"] = {"ok": bool(saved and finite), "max_abs": 0.0,
                              "error": "" if saved and finite else
                              f"checkpoint at step 2: {saved}; finite parameters: {finite}"}


def main():
  port, pid, out, workdir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
  launcher.initialize_distributed(f"localhost:{port}", 2, pid)
  jax.config.update("jax_threefry_partitionable", True)  # as tests/conftest.py
  assert jax.process_count() == 2 and jax.device_count() == 8, (jax.process_count(),
                                                                jax.device_count())
  report = {}
  try:
    main_steps(report, pid)
    suco_training(report, pid)
    pdr_rl(report, pid, workdir)
  finally:
    if pid == 0:
      with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
  main()
