"""Accuracy and calibration of aggregated posteriors."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common


@jax.jit
def accuracy(p1_N: jax.Array, labels_N: jax.Array) -> jax.Array:
  """Share of items where the label 1[p > 1/2] equals the truth (a tie predicts 0)."""
  return jnp.mean((p1_N > 0.5) == (labels_N == 1))


@functools.partial(jax.jit, static_argnames=("eps",))
def log_loss(p1_N: jax.Array, labels_N: jax.Array, eps: float = 1e-6) -> jax.Array:
  """Mean negative log-likelihood of the truth, probabilities clipped to [eps, 1 - eps]."""
  p = jnp.clip(p1_N, eps, 1 - eps)
  y = (labels_N == 1)
  return -jnp.mean(jnp.where(y, jnp.log(p), jnp.log1p(-p)))


def expected_calibration_error(p1_N: jax.Array, labels_N: jax.Array, num_bins: int = 10) -> jax.Array:
  """ECE: sum_b (n_b / N) |acc_b - conf_b| over equal-width bins of confidence max(p, 1 - p).

  References:
    Guo et al., "On calibration of modern neural networks" (ICML 2017).
  """
  got = _common.check_arrays({"p1_N": p1_N, "labels_N": labels_N}, kinds={"labels_N": "index"})
  _common.check_in_range("p1_N", got["p1_N"], 0.0, 1.0)
  return _ece(*got.values(), num_bins=num_bins)


@functools.partial(jax.jit, static_argnames=("num_bins",))
def _ece(p1_N, labels_N, num_bins):
  conf = jnp.maximum(p1_N, 1 - p1_N)
  correct = ((p1_N > 0.5) == (labels_N == 1)).astype(conf.dtype)
  b = jnp.clip(jnp.floor((conf - 0.5) * 2 * num_bins).astype(jnp.int32), 0, num_bins - 1)
  s_conf = jnp.zeros(num_bins, conf.dtype).at[b].add(conf)
  s_acc = jnp.zeros(num_bins, conf.dtype).at[b].add(correct)
  return jnp.sum(jnp.abs(s_acc - s_conf)) / conf.shape[0]
