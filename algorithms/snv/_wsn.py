"""WSN (Winning SubNetworks): a learned binary weight mask per task, the mask-based
task-incremental baseline of the authors' campaign.

Every weight w has a learnable score s. Task t's subnetwork keeps, in every parameter
array, the ``capacity`` share of entries with the largest scores, m_t = top_c(s); the
network runs on ``w * m_t``. The hard mask is trained by the straight-through estimator
(the forward pass uses m_t, the backward pass treats m_t as s). Weights used by an
earlier task (M_{t-1} = m_1 | ... | m_{t-1}) get no update; after task t, m_t is stored
and M_t = M_{t-1} | m_t. Task t is scored with m_t on the final weights, which its
entries reach frozen: backward transfer is exactly 0.

:func:`wsn_mask` gives m_t (with the straight-through gradient) and :func:`wsn_apply`
the masked parameters; freezing is ``snv.freeze`` with ``trainable = 1 - M_{t-1}``.

References:
  Kang et al. Forget-free Continual Learning with Winning Subnetworks. ICML 2022.
  ``baselines/WSN/wsn.py`` of github.com/Ali-Vahedifar/Shapley-Neuron-Values (the
  campaign's task-IL runner-up, ACC 0.847 on CIFAR-100).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.snv import _checks


@jax.jit
def _top_share(s, capacity):
  """0/1 mask of the ``ceil(capacity * size)`` largest entries of ``s``.

  The k-th largest value is found by bisection on the value (60 halvings reach adjacent
  floats), not by a sort: XLA's CPU sort made WSN's training ten times slower. Entries
  tied with the k-th largest are all kept (with real-valued scores, ties do not occur).
  """
  flat = s.reshape(-1)
  k = jnp.maximum(jnp.ceil(capacity * flat.shape[0] - 1e-6), 1.0)

  def halve(_, lo_hi):
    lo, hi = lo_hi
    mid = lo + (hi - lo) / 2
    enough = jnp.sum(flat >= mid) >= k
    return jnp.where(enough, mid, lo), jnp.where(enough, hi, mid)

  lo, _ = jax.lax.fori_loop(0, 60, halve, (flat.min(), flat.max()))
  return (s >= lo).astype(s.dtype)


def wsn_mask(scores: Any, capacity: Any) -> Any:
  """m_t: in every leaf of ``scores``, 1 on its ``capacity`` share of largest scores.

  The value is the hard 0/1 mask; its gradient with respect to ``scores`` is the
  identity (straight-through), so ``jax.grad`` of a loss on ``wsn_apply(params, m)``
  reaches the scores. ``capacity`` in (0, 1] may be traced.
  """
  scores = _checks.check_tree("scores", scores, kind="float")
  if np.ndim(capacity) != 0:
    raise ValueError(f"capacity must be a scalar, got shape {np.shape(capacity)}")
  capacity = _common.check_array("capacity", capacity, scalars=True)
  _common.check_in_range("capacity", capacity, 0.0, 1.0, lo_open=True)

  return jax.tree.map(lambda s: _straight_through(s, capacity), scores)


@jax.jit
def _straight_through(s, capacity):
  hard = _top_share(jax.lax.stop_gradient(s), capacity)
  return hard + (s - jax.lax.stop_gradient(s))  # exactly hard in value


def wsn_apply(params: Any, mask: Any) -> Any:
  """``params * mask`` leaf by leaf (the subnetwork's parameters)."""
  params = _checks.check_tree("params", params, kind="float")
  _checks.check_like("mask", mask, params, "params")
  return jax.tree.map(jnp.multiply, params, mask)
