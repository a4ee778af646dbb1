"""A running distribution of completed request sizes, and the conditional MGF of what remains.

The prediction-free scheduler knows of a running request only its attained service
``x``; it ranks it by ``M(x) = E[e^{gamma (S - x)} | S > x]`` under the distribution of
sizes ``S`` of requests completed so far. That distribution is a histogram on fixed
bins (static shapes: it lives inside a jitted simulator and is updated every
iteration); each bin stands for its midpoint.

References:
  The tail_sched paper (ICML 2026): "lightweight statistical signals" instead of
  length prediction (the histogram and the midpoint rule are our reconstruction).
  G. Yu, Z. Scully, SIGMETRICS 2024 (the boost of a class, b = (1/gamma) log(M / (M - 1))).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


class SizeHistogram(NamedTuple):
  """Counts of completed sizes on fixed bins (seconds of service)."""

  edges_B1: jax.Array  # float [B + 1], increasing, edges_B1[0] >= 0
  counts_B: jax.Array  # float [B], counts (pseudo-counts of a prior included)


def _check_histogram(hist: SizeHistogram) -> SizeHistogram:
  if not isinstance(hist, SizeHistogram):
    raise ValueError(f"hist must be a SizeHistogram, got {type(hist).__name__}")
  got = _common.check_arrays({"edges_B1": hist.edges_B1, "counts_B": hist.counts_B})
  edges, counts = got["edges_B1"], got["counts_B"]
  if np.ndim(edges) != 1 or np.ndim(counts) != 1:
    raise ValueError(f"edges_B1 and counts_B must be 1-D, got shapes {np.shape(edges)} and "
                     f"{np.shape(counts)}")
  if np.shape(edges)[0] != np.shape(counts)[0] + 1:
    raise ValueError(f"edges_B1 must have one more entry than counts_B, got {np.shape(edges)} "
                     f"and {np.shape(counts)}")
  if _common.is_concrete(edges):
    e = np.asarray(edges)
    if e[0] < 0 or np.any(np.diff(e) <= 0):
      raise ValueError(f"edges_B1 must be increasing from >= 0, got {e}")
  if _common.is_concrete(counts) and np.any(np.asarray(counts) < 0):
    raise ValueError(f"counts_B must be >= 0, got min {np.min(counts)}")
  return SizeHistogram(edges, counts)


def histogram(edges_B1: jax.Array, prior_counts_B: jax.Array | None = None) -> SizeHistogram:
  """An empty histogram on ``edges_B1`` (or one holding ``prior_counts_B`` pseudo-counts)."""
  edges_B1 = jnp.asarray(_common.check_array("edges_B1", edges_B1), jnp.float32)
  counts = (jnp.zeros(jnp.shape(edges_B1)[0] - 1, jnp.float32) if prior_counts_B is None
            else jnp.asarray(_common.check_array("prior_counts_B", prior_counts_B), jnp.float32))
  return _check_histogram(SizeHistogram(edges_B1, counts))


def observe(hist: SizeHistogram, sizes_R: jax.Array, mask_R: jax.Array) -> SizeHistogram:
  """Adds the sizes of the requests where ``mask_R`` is true (sizes clipped into the bins)."""
  hist = _check_histogram(hist)
  got = _common.check_arrays({"sizes_R": sizes_R, "mask_R": mask_R}, kinds={"mask_R": "bool"},
                             empty_ok=("sizes_R", "mask_R"))
  return _observe(hist, got["sizes_R"], got["mask_R"])


@jax.jit
def _observe(hist, sizes_R, mask_R):
  num_bins = hist.counts_B.shape[0]
  b = jnp.clip(jnp.searchsorted(hist.edges_B1, sizes_R, side="right", method="compare_all") - 1,
               0, num_bins - 1)
  add = jnp.zeros_like(hist.counts_B).at[b].add(mask_R.astype(hist.counts_B.dtype))
  return hist._replace(counts_B=hist.counts_B + add)


def log_mgf_remaining(hist: SizeHistogram, attained_R: jax.Array,
                      gamma: float | jax.Array) -> jax.Array:
  """``log M(x) = log E[e^{gamma (S - x)} | S > x]`` for each attained service ``x``.

  ``S`` takes each bin's midpoint with probability proportional to its count; only
  midpoints above ``x`` count. When none has mass (a request older than every size
  seen, or an empty histogram) the remaining service is taken to be the last bin's
  width. Always > 0, so the boost ``(1/gamma) log(M / (M - 1))`` is finite. ``gamma``
  must be finite here (FCFS, gamma = inf, has no boost to compute); a traced inf
  gives inf.
  """
  hist = _check_histogram(hist)
  got = _common.check_arrays({"attained_R": attained_R, "gamma": gamma},
                             empty_ok=("attained_R",), scalars=("gamma",))
  attained_R, gamma = got["attained_R"], got["gamma"]
  if _common.is_concrete(gamma) and not float(gamma) > 0:
    raise ValueError(f"gamma must be finite and > 0, got {gamma}")
  if _common.is_concrete(attained_R) and np.any(np.asarray(attained_R) < 0):
    raise ValueError(f"attained_R must be >= 0, got min {np.min(attained_R)}")
  return _log_mgf_remaining(hist, attained_R, gamma)


@jax.jit
def _log_mgf_remaining(hist, attained_R, gamma):
  # log M(x) = log sum_{b live} c_b e^{gamma mid_b} - gamma x - log sum_{b live} c_b, the
  # live bins (mid_b > x) a suffix of the sorted midpoints: two suffix sums over the bins,
  # then one lookup per request (O(R log B), not O(R B) exponentials). The exponentials
  # are taken relative to the largest midpoint with mass, which is live whenever any is.
  mid_B = 0.5 * (hist.edges_B1[1:] + hist.edges_B1[:-1])
  has_B = hist.counts_B > 0
  finite_gamma = jnp.where(jnp.isinf(gamma), 1.0, gamma)
  top = jnp.max(jnp.where(has_B, mid_B, -jnp.inf))
  w_B = jnp.where(has_B, hist.counts_B * jnp.exp(finite_gamma * jnp.where(has_B, mid_B - top, 0)),
                  0.0)
  zero = jnp.zeros(1, w_B.dtype)
  s1_B1 = jnp.concatenate([jnp.cumsum(w_B[::-1])[::-1], zero])
  s0_B1 = jnp.concatenate([jnp.cumsum(jnp.where(has_B, hist.counts_B, 0.0)[::-1])[::-1], zero])
  k = jnp.searchsorted(mid_B, attained_R, side="right", method="compare_all")
  s1, s0 = s1_B1[k], s0_B1[k]
  live = s0 > 0
  out = (jnp.log(jnp.where(live, s1, 1.0)) + finite_gamma * (top - attained_R)
         - jnp.log(jnp.where(live, s0, 1.0)))
  fallback = finite_gamma * (hist.edges_B1[-1] - hist.edges_B1[-2])
  out = jnp.where(live, out, fallback)
  return jnp.where(jnp.isinf(gamma), jnp.inf, out)
