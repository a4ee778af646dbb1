r"""Benchmark: our jitted Dawid-Skene against crowd-kit's on 100,000 items x 10 judges.

    python -m reprojax.experiments.ising_aggregation.benchmark [--items=100000 --judges=10 --iters=20]

Both run the same two-coin EM (majority-vote start, the same M-step floor) for
exactly ``--iters`` iterations (tolerance disabled), so the posteriors must
agree; we report the largest difference, crowd-kit's wall time and ours after
compilation (median of 3 runs), and the speed-up. Figures go into README.md.
"""

from __future__ import annotations

import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import ising_aggregation as ia
from reprojax.experiments import bench

_ITEMS = flags.DEFINE_integer("items", 100_000, "Items N.")
_JUDGES = flags.DEFINE_integer("judges", 10, "Judges K.")
_ITERS = flags.DEFINE_integer("iters", 20, "EM iterations (fixed, tolerance off).")
_MISSING = flags.DEFINE_float("missing", 0.2, "Share of missing votes.")


def make_votes(n, k, missing, seed=0):
  rng = np.random.default_rng(seed)
  y = rng.random(n) < 0.4
  sens, spec = rng.uniform(0.6, 0.9, k), rng.uniform(0.6, 0.9, k)
  p1 = np.where(y[:, None], sens[None], 1 - spec[None])
  v = (rng.random((n, k)) < p1).astype(np.int32)
  miss = rng.random((n, k)) < missing
  miss[:, 0] = False
  return np.where(miss, -1, v), y


def workloads(full: bool) -> list[bench.Workload]:
  """``make bench``'s row: two-coin Dawid-Skene, ours against crowd-kit, same iterations."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  from crowdkit.aggregation import DawidSkene  # pylint: disable=g-import-not-at-top
  n, k, iters = (100_000, 10, 20) if not full else (1_000_000, 10, 20)
  votes, _ = make_votes(n, k, 0.2)
  ii, kk = np.nonzero(votes >= 0)
  df = pd.DataFrame({"task": ii, "worker": kk, "label": votes[ii, kk]})
  vj = jnp.asarray(votes)
  return [bench.Workload(
      paper="ising_aggregation",
      name=f"Dawid-Skene two-coin EM, {n:,} items x {k} judges, {iters} iterations",
      ours=lambda: ia.dawid_skene(vj, max_iters=iters, tol=-np.inf).posterior_N,
      peer=lambda: DawidSkene(n_iter=iters, tol=-np.inf).fit_predict_proba(df).loc[
          np.arange(n), 1].to_numpy(),
      peer_name="crowd-kit", peer_package="crowd-kit",
      agree=bench.max_abs_diff(1e-4, "max |posterior diff| (our float32, its float64)"),
      bytes=float(iters * 2 * votes.size * 4), repeats=3,
      note="bytes: the N x K int32 votes read twice per iteration (E and M step)")]


def main(argv):
  del argv
  import pandas as pd  # pylint: disable=g-import-not-at-top
  from crowdkit.aggregation import DawidSkene  # pylint: disable=g-import-not-at-top

  n, k, iters = _ITEMS.value, _JUDGES.value, _ITERS.value
  votes, _ = make_votes(n, k, _MISSING.value)
  ii, kk = np.nonzero(votes >= 0)
  df = pd.DataFrame({"task": ii, "worker": kk, "label": votes[ii, kk]})
  t = time.perf_counter()
  ref = DawidSkene(n_iter=iters, tol=-np.inf).fit_predict_proba(df)
  t_ck = time.perf_counter() - t
  ref1 = ref.loc[np.arange(n), 1].to_numpy()

  vj = jnp.asarray(votes)
  t = time.perf_counter()
  ours = ia.dawid_skene(vj, max_iters=iters, tol=-np.inf).posterior_N.block_until_ready()
  t_first = time.perf_counter() - t
  runs = []
  for _ in range(3):
    t = time.perf_counter()
    ours = ia.dawid_skene(vj, max_iters=iters, tol=-np.inf).posterior_N.block_until_ready()
    runs.append(time.perf_counter() - t)
  t_ours = float(np.median(runs))
  diff = float(np.max(np.abs(np.asarray(ours, np.float64) - ref1)))
  with jax.enable_x64(True):
    ours64 = ia.dawid_skene(jnp.asarray(votes), max_iters=iters, tol=-np.inf).posterior_N
    diff64 = float(np.max(np.abs(np.asarray(ours64) - ref1)))
  print(f"Dawid-Skene two-coin, {n} items x {k} judges, {len(df)} votes, {iters} EM iterations, "
        f"device {jax.devices()[0].platform}")
  print(f"crowd-kit {t_ck:.3f} s | ours {t_ours * 1e3:.1f} ms after compile "
        f"(first call with compile {t_first:.2f} s) | speed-up {t_ck / t_ours:.0f}x | "
        f"max |posterior difference| {diff:.2e} (float32), {diff64:.2e} (float64)")


if __name__ == "__main__":
  app.run(main)
