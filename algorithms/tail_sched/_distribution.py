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


def _suffix_sums(edges_B1, counts_B, gamma):
  """``(sum_{b >= j} c_b e^{gamma (mid_b - top)}, sum_{b >= j} c_b)`` for j = 0..B (over the
  bins with mass) and ``top``, the largest midpoint with mass."""
  mid_B = 0.5 * (edges_B1[1:] + edges_B1[:-1])
  has_B = counts_B > 0
  finite_gamma = jnp.where(jnp.isinf(gamma), 1.0, gamma)
  top = jnp.max(jnp.where(has_B, mid_B, -jnp.inf))
  w_B = jnp.where(has_B, counts_B * jnp.exp(finite_gamma * jnp.where(has_B, mid_B - top, 0)),
                  0.0)
  zero = jnp.zeros(1, w_B.dtype)
  s1_B1 = jnp.concatenate([jnp.cumsum(w_B[::-1])[::-1], zero])
  s0_B1 = jnp.concatenate([jnp.cumsum(jnp.where(has_B, counts_B, 0.0)[::-1])[::-1], zero])
  return s1_B1, s0_B1, top


def _finish(edges_B1, s1, s0, top, attained_R, gamma):
  """``log M`` from a request's suffix sums; the last bin's width where nothing is live."""
  finite_gamma = jnp.where(jnp.isinf(gamma), 1.0, gamma)
  live = s0 > 0
  out = (jnp.log(jnp.where(live, s1, 1.0)) + finite_gamma * (jnp.where(live, top, 0.0)
                                                             - attained_R)
         - jnp.log(jnp.where(live, s0, 1.0)))
  fallback = finite_gamma * (edges_B1[-1] - edges_B1[-2])
  out = jnp.where(live, out, fallback)
  return jnp.where(jnp.isinf(gamma), jnp.inf, out)


@jax.jit
def _log_mgf_remaining(hist, attained_R, gamma):
  # log M(x) = log sum_{b live} c_b e^{gamma mid_b} - gamma x - log sum_{b live} c_b, the
  # live bins (mid_b > x) a suffix of the sorted midpoints: two suffix sums over the bins,
  # then one lookup per request (O(R log B), not O(R B) exponentials). The exponentials
  # are taken relative to the largest midpoint with mass, which is live whenever any is.
  s1_B1, s0_B1, top = _suffix_sums(hist.edges_B1, hist.counts_B, gamma)
  mid_B = 0.5 * (hist.edges_B1[1:] + hist.edges_B1[:-1])
  k = jnp.searchsorted(mid_B, attained_R, side="right", method="compare_all")
  return _finish(hist.edges_B1, s1_B1[k], s0_B1[k], top, attained_R, gamma)

class ConditionalHistogram(NamedTuple):
  """Counts of completed sizes per class of a signal known at arrival (the prompt length).

  Row ``k`` holds the sizes of the requests whose signal fell in
  ``[class_edges_K1[k], class_edges_K1[k + 1])`` (the first and last classes take what
  falls outside), on the size bins ``edges_B1``."""

  edges_B1: jax.Array  # float [B + 1], size bin edges, increasing, edges_B1[0] >= 0
  class_edges_K1: jax.Array  # float [K + 1], signal edges, increasing
  counts_KB: jax.Array  # float [K, B], counts (pseudo-counts of a prior included)


def _check_conditional(hist: ConditionalHistogram) -> ConditionalHistogram:
  if not isinstance(hist, ConditionalHistogram):
    raise ValueError(f"hist must be a ConditionalHistogram, got {type(hist).__name__}")
  got = _common.check_arrays({"edges_B1": hist.edges_B1, "class_edges_K1": hist.class_edges_K1,
                              "counts_KB": hist.counts_KB})
  edges, cls, counts = got["edges_B1"], got["class_edges_K1"], got["counts_KB"]
  if np.ndim(edges) != 1 or np.ndim(cls) != 1 or np.ndim(counts) != 2:
    raise ValueError(f"edges_B1 and class_edges_K1 must be 1-D and counts_KB 2-D, got shapes "
                     f"{np.shape(edges)}, {np.shape(cls)} and {np.shape(counts)}")
  if np.shape(counts) != (np.shape(cls)[0] - 1, np.shape(edges)[0] - 1):
    raise ValueError(f"counts_KB must have shape (len(class_edges_K1) - 1, len(edges_B1) - 1) = "
                     f"{(np.shape(cls)[0] - 1, np.shape(edges)[0] - 1)}, got {np.shape(counts)}")
  for name, e in (("edges_B1", edges), ("class_edges_K1", cls)):
    if _common.is_concrete(e) and (np.any(np.diff(np.asarray(e)) <= 0)
                                   or (name == "edges_B1" and np.asarray(e)[0] < 0)):
      raise ValueError(f"{name} must be increasing (edges_B1 from >= 0), got {np.asarray(e)}")
  if _common.is_concrete(counts) and np.any(np.asarray(counts) < 0):
    raise ValueError(f"counts_KB must be >= 0, got min {np.min(counts)}")
  return ConditionalHistogram(edges, cls, counts)


def conditional_histogram(edges_B1: jax.Array, class_edges_K1: jax.Array,
                          prior_counts_KB: jax.Array | None = None) -> ConditionalHistogram:
  """An empty conditional histogram (or one holding ``prior_counts_KB`` pseudo-counts)."""
  edges_B1 = jnp.asarray(_common.check_array("edges_B1", edges_B1), jnp.float32)
  class_edges_K1 = jnp.asarray(_common.check_array("class_edges_K1", class_edges_K1),
                               jnp.float32)
  if jnp.ndim(edges_B1) != 1 or jnp.ndim(class_edges_K1) != 1:
    raise ValueError(f"edges_B1 and class_edges_K1 must be 1-D, got shapes "
                     f"{jnp.shape(edges_B1)} and {jnp.shape(class_edges_K1)}")
  shape = (jnp.shape(class_edges_K1)[0] - 1, jnp.shape(edges_B1)[0] - 1)
  counts = (jnp.zeros(shape, jnp.float32) if prior_counts_KB is None else
            jnp.asarray(_common.check_array("prior_counts_KB", prior_counts_KB), jnp.float32))
  return _check_conditional(ConditionalHistogram(edges_B1, class_edges_K1, counts))


def _signal_class(class_edges_K1, signal_R):
  num = class_edges_K1.shape[0] - 1
  k = jnp.searchsorted(class_edges_K1, signal_R, side="right", method="compare_all") - 1
  return jnp.clip(k, 0, num - 1)


def observe_conditional(hist: ConditionalHistogram, signal_R: jax.Array, sizes_R: jax.Array,
                        mask_R: jax.Array) -> ConditionalHistogram:
  """Adds the sizes of the requests where ``mask_R`` is true to their signal's row."""
  hist = _check_conditional(hist)
  got = _common.check_arrays({"signal_R": signal_R, "sizes_R": sizes_R, "mask_R": mask_R},
                             kinds={"mask_R": "bool"},
                             empty_ok=("signal_R", "sizes_R", "mask_R"))
  return _observe_conditional(hist, got["signal_R"], got["sizes_R"], got["mask_R"])


@jax.jit
def _observe_conditional(hist, signal_R, sizes_R, mask_R):
  num_bins = hist.counts_KB.shape[1]
  b = jnp.clip(jnp.searchsorted(hist.edges_B1, sizes_R, side="right", method="compare_all") - 1,
               0, num_bins - 1)
  k = _signal_class(hist.class_edges_K1, signal_R)
  add = jnp.zeros_like(hist.counts_KB).at[k, b].add(mask_R.astype(hist.counts_KB.dtype))
  return hist._replace(counts_KB=hist.counts_KB + add)


def log_mgf_conditional(hist: ConditionalHistogram, signal_R: jax.Array, attained_R: jax.Array,
                        gamma: float | jax.Array) -> jax.Array:
  """``log E[e^{gamma (S - x)} | S > x, class(signal)]`` per request: the rule of
  :func:`log_mgf_remaining` on the row of the request's signal class (its fallback, the
  last bin's width, where the row has no mass above ``x``)."""
  hist = _check_conditional(hist)
  got = _common.check_arrays({"signal_R": signal_R, "attained_R": attained_R, "gamma": gamma},
                             empty_ok=("signal_R", "attained_R"), scalars=("gamma",))
  signal_R, attained_R, gamma = got["signal_R"], got["attained_R"], got["gamma"]
  if np.shape(signal_R) != np.shape(attained_R):
    raise ValueError(f"signal_R and attained_R must have one shape, got {np.shape(signal_R)} "
                     f"and {np.shape(attained_R)}")
  if _common.is_concrete(gamma) and not float(gamma) > 0:
    raise ValueError(f"gamma must be finite and > 0, got {gamma}")
  if _common.is_concrete(attained_R) and np.any(np.asarray(attained_R) < 0):
    raise ValueError(f"attained_R must be >= 0, got min {np.min(attained_R)}")
  return _log_mgf_conditional(hist.edges_B1, hist.class_edges_K1, hist.counts_KB, signal_R,
                              attained_R, gamma)


@jax.jit
def _log_mgf_conditional(edges_B1, class_edges_K1, counts_KB, signal_R, attained_R, gamma):
  # _log_mgf_remaining's two suffix sums, one row per class; a request reads its row's.
  k_R = _signal_class(class_edges_K1, signal_R)
  rows = jax.vmap(lambda counts_B: _suffix_sums(edges_B1, counts_B, gamma))(counts_KB)
  s1_KB1, s0_KB1, top_K = rows
  mid_B = 0.5 * (edges_B1[1:] + edges_B1[:-1])
  j_R = jnp.searchsorted(mid_B, attained_R, side="right", method="compare_all")
  return _finish(edges_B1, s1_KB1[k_R, j_R], s0_KB1[k_R, j_R], top_K[k_R], attained_R, gamma)
