"""Helpers shared by several papers' experiments (one home each, per issue 32).

* :func:`relative_l2` and :class:`Normalizer`: the neural-operator papers' error
  and input/output scaling (fno, del_no, and later dynadiff);
* :func:`standard_error`, :func:`fit_loglog`, :func:`median_seconds`: the
  statistics and timing every results table reports;
* :func:`map_seeds`: independent per-seed work on every core of a one-device CPU run.

The mesh of a run is :func:`reprojax.experiments.sharding.config_mesh`, and the
ending of every figure :func:`reprojax.experiments.plotting.save`.
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats


def relative_l2(pred_BxG: jax.Array, true_BxG: jax.Array) -> jax.Array:
  """Per-example ||pred - true||_2 / ||true||_2 over all grid axes; shape (B,)."""
  axes = tuple(range(1, true_BxG.ndim))
  num = jnp.sqrt(jnp.sum((pred_BxG - true_BxG) ** 2, axis=axes))
  return num / jnp.sqrt(jnp.sum(true_BxG**2, axis=axes))


class Normalizer:
  """Pointwise Gaussian normaliser fitted on the training set (the FNO code's UnitGaussianNormalizer)."""

  def __init__(self, x_NxG: np.ndarray, enabled: bool, eps: float = 1e-5):
    self.mean = x_NxG.mean(0) if enabled else np.zeros(x_NxG.shape[1:], np.float32)
    self.std = x_NxG.std(0) + eps if enabled else np.ones(x_NxG.shape[1:], np.float32)

  def encode(self, x):
    return (x - self.mean) / self.std

  def decode(self, x):
    return x * self.std + self.mean


def standard_error(x: Any, axis: int | None = None) -> Any:
  """The standard error of the mean, ``std(ddof=1) / sqrt(n)`` along ``axis`` (all if None)."""
  x = np.asarray(x)
  n = x.size if axis is None else x.shape[axis]
  return x.std(axis=axis, ddof=1) / np.sqrt(n)


def mean_and_se(per: Mapping[str, Sequence[float]]) -> dict[str, float]:
  """Per-seed values -> ``{name: mean, name_se: standard error}`` (0 for a single seed)."""
  out = {}
  for k, v in per.items():
    out[k] = float(np.mean(v))
    out[k + "_se"] = float(standard_error(v)) if len(v) > 1 else 0.0
  return out


def fit_loglog(x: Any, y: Any) -> tuple[float, float, float]:
  """OLS of log y on log x: (slope, half-width of its 95% t-interval, intercept)."""
  lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
  res = stats.linregress(lx, ly)
  df = max(len(lx) - 2, 1)
  return float(res.slope), float(stats.t.ppf(0.975, df) * res.stderr), float(res.intercept)


def median_seconds(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
  """Median wall seconds of ``fn()`` (its outputs blocked on) over ``repeats`` calls after ``warmup``."""
  for _ in range(warmup):
    jax.block_until_ready(fn())
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def seed_workers() -> int:
  """The threads :func:`map_seeds` uses by default.

  Every core this process may run on when the run is one process on one CPU device, else 1.
  XLA's CPU programs at this suite's sizes keep about one core busy (suco's training step:
  18.5 ms on both cores, 20.3 ms pinned to one), so on one device the seeds' independent
  programs can run side by side. On a mesh the devices already split the work, and programs
  with collectives over the same devices must not interleave; with several processes, each
  must reach its collectives and checkpoint barriers in the same order.
  """
  if jax.process_count() == 1 and jax.device_count() == 1 and jax.default_backend() == "cpu":
    return len(os.sched_getaffinity(0))
  return 1


def map_seeds(fn: Callable[[Any], Any], seeds: Sequence[Any],
              workers: int | None = None) -> list[Any]:
  """``[fn(s) for s in seeds]``, the calls run in ``workers`` threads (default
  :func:`seed_workers`); ``seeds`` may be any independent jobs (a seed and a method, say).

  Each call must depend on its job alone (explicit keys and generators, no plotting, no
  timing: the other threads share the cores), so the results equal the serial loop's bit for
  bit, whatever the order the threads finish in. The first failure is raised once the calls
  that had started have ended; calls not yet started are cancelled.
  """
  seeds = list(seeds)
  workers = seed_workers() if workers is None else int(workers)
  if workers < 1:
    raise ValueError(f"workers must be at least 1, got {workers}")
  if workers == 1 or len(seeds) < 2:
    return [fn(s) for s in seeds]
  with concurrent.futures.ThreadPoolExecutor(min(workers, len(seeds))) as pool:
    futures = [pool.submit(fn, s) for s in seeds]
    try:
      return [f.result() for f in futures]
    except BaseException:
      for f in futures:
        f.cancel()
      raise
