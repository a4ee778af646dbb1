r"""Benchmark: split conformal calibration + prediction on 100,000 points, ours vs MAPIE.

    python -m reprojax.experiments.rocp.benchmark [--n=100000 --num_labels=10 --repeats=5]

Both sides get the same precomputed probabilities (MAPIE through a prefit
estimator whose ``predict_proba`` is a table lookup), calibrate on ``n`` points
and predict sets for ``n`` test points. Ours is timed after compilation (median
of ``repeats`` runs, ``block_until_ready``); the sets are checked equal. ROCP
(Algorithm 1 and global beta) is timed on the same data for reference; MAPIE has
no counterpart. The figures go into experiments/rocp/README.md.
"""

from __future__ import annotations

import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import rocp
from reprojax.experiments import bench
from reprojax.experiments import common
from reprojax.experiments.rocp.peers import mapie_split_conformal

_N = flags.DEFINE_integer("n", 100_000, "calibration points (and as many test points)")
_Y = flags.DEFINE_integer("num_labels", 10, "number of labels")
_REPEATS = flags.DEFINE_integer("repeats", 5, "timed repetitions (median reported)")
_ALPHA = flags.DEFINE_float("alpha", 0.1, "miscoverage level")
_ROCP = flags.DEFINE_bool("rocp", True, "also time ROCP (Algorithm 1 and global beta)")


def _problem(n, y_n, seed=0):
  """Probabilities and labels for ``n`` calibration and ``n`` test points (float64, rows sum to 1)."""
  rng = np.random.default_rng(seed)
  z = rng.normal(size=(2 * n, y_n)) * 2.0
  p = np.exp(z - z.max(1, keepdims=True))
  p = (p / p.sum(1, keepdims=True)).astype(np.float32).astype(np.float64)
  p /= p.sum(1, keepdims=True)
  u = rng.uniform(size=(2 * n, 1))
  y = np.minimum((u > np.cumsum(p, 1)).sum(1), y_n - 1).astype(np.int32)
  return p, y


def _same_sets(ours, peer):
  mismatch = int((np.asarray(ours) != np.asarray(peer)).sum())
  return mismatch == 0, f"{mismatch:,} of {np.asarray(peer).size:,} set entries differ"


def workloads(full: bool) -> list[bench.Workload]:
  """``make bench``'s rows: split-conformal LAC and APS, calibrate and predict, against MAPIE."""
  n, y_n, alpha = (100_000 if not full else 1_000_000), 10, 0.1
  p, y = _problem(n, y_n)
  pc, pt = jnp.asarray(p[:n].astype(np.float32)), jnp.asarray(p[n:].astype(np.float32))
  yc = jnp.asarray(y[:n])
  u_cal = jnp.asarray(np.random.RandomState(0).uniform(size=n).astype(np.float32))
  lac = jax.jit(lambda pc, yc, pt: rocp.lac(pc, yc, pt, None, alpha).sets_NxY)
  aps = jax.jit(lambda pc, yc, pt, uc: rocp.aps_mapie(pc, yc, pt, None, alpha, uc).sets_NxY)
  moved = float(2 * n * y_n * 4 + n * y_n)
  note = "bytes: the two float32 probability tables read once, the boolean sets written once"
  return [
      bench.Workload(paper="rocp", name=f"split conformal LAC, {n:,} + {n:,} points, {y_n} labels",
                     ours=lambda: lac(pc, yc, pt),
                     peer=mapie_split_conformal("lac", p, y, n, alpha),
                     peer_name="MAPIE", peer_package="mapie", agree=_same_sets, bytes=moved,
                     note=note),
      bench.Workload(paper="rocp", name=f"split conformal APS, {n:,} + {n:,} points, {y_n} labels",
                     ours=lambda: aps(pc, yc, pt, u_cal),
                     peer=mapie_split_conformal("aps", p, y, n, alpha),
                     peer_name="MAPIE", peer_package="mapie", agree=_same_sets, bytes=moved,
                     note=note),
  ]


def main(argv):
  del argv
  n, y_n, alpha = _N.value, _Y.value, _ALPHA.value
  p, y = _problem(n, y_n)
  rng = np.random.default_rng(1)  # the ROCP loss table
  pc, pt = jnp.asarray(p[:n].astype(np.float32)), jnp.asarray(p[n:].astype(np.float32))
  yc = jnp.asarray(y[:n])
  loss = jnp.asarray(rng.uniform(0, 10, size=(3, y_n)).astype(np.float32))
  print(f"devices: {jax.devices()}; n = {n} calibration + {n} test points, Y = {y_n}")

  rows = []
  lac = jax.jit(lambda pc, yc, pt: rocp.lac(pc, yc, pt, None, alpha).sets_NxY)
  u_cal = jnp.asarray(np.random.RandomState(0).uniform(size=n).astype(np.float32))
  aps = jax.jit(lambda pc, yc, pt, uc: rocp.aps_mapie(pc, yc, pt, None, alpha, uc).sets_NxY)
  cases = {
      "lac": (lambda: lac(pc, yc, pt), mapie_split_conformal("lac", p, y, n, alpha)),
      "aps": (lambda: aps(pc, yc, pt, u_cal), mapie_split_conformal("aps", p, y, n, alpha)),
  }
  for name, (ours, theirs) in cases.items():
    t0 = time.perf_counter()
    jax.block_until_ready(ours())
    compile_s = time.perf_counter() - t0
    t_ours = common.median_seconds(ours, _REPEATS.value, warmup=0)  # compiled just above
    t_mapie = common.median_seconds(theirs, max(1, _REPEATS.value // 2), warmup=0)
    s_ours, s_mapie = ours(), theirs()
    mismatch = int((np.asarray(s_ours) != s_mapie).sum())
    rows.append((name, t_ours, t_mapie, t_mapie / t_ours, compile_s, mismatch))
  for variant in ("global", "full") if _ROCP.value else ():
    fn = jax.jit(lambda pc, yc, pt, v=variant: rocp.rocp(pc, yc, pt, loss, alpha, v).sets_NxY)
    run = lambda fn=fn: fn(pc, yc, pt)
    t0 = time.perf_counter()
    jax.block_until_ready(run())
    compile_s = time.perf_counter() - t0
    t_ours = common.median_seconds(run, _REPEATS.value, warmup=0)
    rows.append((f"rocp_{variant}", t_ours, float("nan"), float("nan"), compile_s, 0))
  print("| method | ours (s) | MAPIE (s) | speed-up | our compile (s) | set mismatches |")
  print("|---|---|---|---|---|---|")
  for name, a, b, r, c, mm in rows:
    print(f"| {name} | {a:.4f} | {b:.4f} | {r:.1f}x | {c:.2f} | {mm} |")


if __name__ == "__main__":
  app.run(main)
