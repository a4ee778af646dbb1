"""Per-task subnetworks: Eq. (1)'s masked inference, SNV-A's adaptive S_t and its routing.

SNV's Eq. (1) scores task t through its own subnetwork S_t: the neurons in S_t keep
their (frozen) weights, every other neuron is clamped to the mean response stored
when task t froze. With a model that mean-ablates (``models.maskable_mlp``),
``model.apply(params, x, keep_N=S_t, fill_N=means_t)`` is that network; the
functions here are what comes around it.

* :func:`adaptive_subnetwork` picks S_t as SNV-A does (the variant that produced the
  authors' numbers): the neurons in decreasing order of phi, phi <= 0 never taken;
  S_t is the smallest top-phi prefix holding ``coverage`` of the positive phi mass
  (efficiency: the phi sum to v(N) - v(empty)), at least ``min_share`` * N neurons and
  at most ``max_new`` * N newly frozen ones (neurons frozen by earlier tasks are free).
* :func:`route` turns the per-task subnetworks' logits into predictions without a
  task identity (class-IL): ``"concat"`` takes the argmax of the concatenated raw
  logits (Algorithm 1 as written), ``"maxprob"`` of the concatenated per-task
  log-softmax scores, i.e. the subnetwork whose own head is most confident, then its
  argmax (SNV-A's routing under task-IL in the authors' campaign; their class-IL runs
  add a rotation-energy router, which needs images, not our 8 x 8 digit vectors).

Where we depart: SNV-A's ``_topk_with_layer_floor`` also keeps a floor of neurons per
layer; we take the prefix as it comes (no floor).

References:
  SNV, ICML 2026, Eq. (1); ``SNV/snv_core.py`` (``install_subnetwork_mask``,
  ``task_eval_state``) and ``Matryoshka_Continual_Learning/SNV/snv_adaptive.py``
  (``SNVAdaptive._select`` with ``adaptive_rule='coverage'``, ``predict`` with
  ``routing='maxprob'``) of github.com/Ali-Vahedifar/Shapley-Neuron-Values.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

ROUTING = ("concat", "maxprob")


def _check_share(name, x):
  if np.ndim(x) != 0:
    raise ValueError(f"{name} must be a scalar, got shape {np.shape(x)}")
  x = _common.check_array(name, x, scalars=True)
  _common.check_in_range(name, x, 0.0, 1.0)
  return x


def adaptive_subnetwork(values_N: Any, frozen_N: Any, coverage: Any = 0.9,
                        max_new: Any = 0.2, min_share: Any = 0.02) -> jax.Array:
  """SNV-A's S_t: the smallest top-phi prefix of positive neurons covering ``coverage``.

  With the positive values sorted, phi_(1) >= phi_(2) >= ... > 0, and their partial
  sums m_k, the size is ``k* = #{k: m_k < coverage * m_P} + 1``; it is raised to
  ``min(floor(min_share * N) or 1, P)`` and capped where the prefix would freeze more
  than ``max(that floor, floor(max_new * N))`` neurons not in ``frozen_N``. Ties go to
  the lower index. Everything may be traced (vmapped over replicas).

  Args:
    values_N: ``(N,)`` the neurons' Shapley values phi.
    frozen_N: ``(N,)`` bool, neurons frozen by earlier tasks (free under the cap).
    coverage: in [0, 1], the share of the positive phi mass S_t must hold (SNV-A: 0.9).
    max_new: in [0, 1], at most this share of N newly frozen (SNV-A: 0.2).
    min_share: in [0, 1], at least this share of N (SNV-A: 0.02).

  Returns:
    ``(N,)`` bool, S_t (not joined to ``frozen_N``).
  """
  arrays = _common.check_arrays({"values_N": values_N, "frozen_N": frozen_N},
                                kinds={"frozen_N": "bool"})
  coverage = _check_share("coverage", coverage)
  max_new = _check_share("max_new", max_new)
  min_share = _check_share("min_share", min_share)
  return _adaptive(arrays["values_N"], arrays["frozen_N"], coverage, max_new, min_share)


@jax.jit
def _adaptive(values_N, frozen_N, coverage, max_new, min_share):
  n = values_N.shape[0]
  order = jnp.argsort(-values_N, stable=True)
  v = values_N[order]
  pos = v > 0  # a prefix of the sorted order
  p = jnp.sum(pos)
  mass = jnp.cumsum(jnp.where(pos, v, 0.0))
  size = jnp.sum((mass < coverage * mass[-1]) & pos) + 1
  k_min = jnp.maximum(1, jnp.floor(min_share * n + 1e-6).astype(jnp.int32))
  k_max = jnp.maximum(k_min, jnp.floor(max_new * n + 1e-6).astype(jnp.int32))
  new = jnp.cumsum(jnp.where(pos, ~frozen_N[order], False).astype(jnp.int32))
  limit = jnp.sum((new <= k_max) & pos)
  limit = jnp.maximum(jnp.minimum(limit, p), jnp.minimum(k_min, p))
  chosen = jnp.minimum(jnp.maximum(size, jnp.minimum(k_min, p)), limit)
  rank = jnp.zeros((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))
  return rank < chosen


def route(logits_TxBxK: Any, class_task_K: Any, seen_K: Any, rule: str = "maxprob"
          ) -> jax.Array:
  """Class-IL predictions from the per-task subnetworks' logits.

  ``logits_TxBxK[c]`` are subnetwork c's logits (Eq. (1) through S_c). Class k is
  scored by its own task's subnetwork, ``c = class_task_K[k]``: the raw logit
  (``"concat"``) or the log-softmax over task c's classes (``"maxprob"``); the
  prediction is the argmax over the ``seen_K`` classes.

  Returns:
    ``(B,)`` int32 predicted classes.
  """
  arrays = _common.check_arrays({"logits_TxBxK": logits_TxBxK, "class_task_K": class_task_K,
                                 "seen_K": seen_K},
                                kinds={"class_task_K": "int", "seen_K": "bool"})
  if rule not in ROUTING:
    raise ValueError(f"rule must be one of {ROUTING}, got {rule!r}")
  ct = arrays["class_task_K"]
  t = np.shape(arrays["logits_TxBxK"])[0]
  if _common.is_concrete(ct):
    lo, hi = int(np.min(np.asarray(ct))), int(np.max(np.asarray(ct)))
    if lo < 0 or hi >= t:
      raise ValueError(f"class_task_K must index the {t} subnetworks, got values in "
                       f"[{lo}, {hi}]")
  return _route(arrays["logits_TxBxK"], ct, arrays["seen_K"], rule == "maxprob")


@jax.jit
def _route(logits_TxBxK, class_task_K, seen_K, maxprob):
  t = logits_TxBxK.shape[0]
  own_TxK = class_task_K[None, :] == jnp.arange(t)[:, None]
  masked = jnp.where(own_TxK[:, None, :], logits_TxBxK, -jnp.inf)
  logp = jax.nn.log_softmax(masked, axis=-1)
  score_TxBxK = jnp.where(maxprob, logp, logits_TxBxK)
  # class k read from its own task's subnetwork
  score_BxK = jnp.take_along_axis(score_TxBxK, class_task_K[None, None, :], axis=0)[0]
  return jnp.argmax(jnp.where(seen_K, score_BxK, -jnp.inf), axis=-1).astype(jnp.int32)
