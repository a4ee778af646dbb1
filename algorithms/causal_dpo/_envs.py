"""Latent environments by soft clustering, and the scores that judge them and the policy.

CausalDPO models the environment distribution by soft clustering of a learned
representation: ``w_ie = softmax_e(-||f_i - c_e|| / temperature)``, the Euclidean
distances of example ``i``'s features to ``E`` centres (the public code's
``cluster_batch``, temperature 1). The public code re-seeds the centres on every
batch with DBSCAN; we fit them once with k-means (k-means++ seeding, then Lloyd
iterations) on the frozen reference model's representation of the whole training
set, so the memberships are fixed inputs of preference training and the whole
fit jits and vmaps over seeds. That is our choice, not the paper's.

Ranking metrics for next-item recommendation with one relevant item per user:
its rank is the number of items scored strictly higher (items the caller wants
excluded, such as the history, get score ``-inf``); ``HR@k = [rank < k]`` and
``NDCG@k = [rank < k] / log2(rank + 2)``.

References:
  Arthur and Vassilvitskii. k-means++: the advantages of careful seeding. SODA 2007.
  Hubert and Arabie. Comparing partitions. J. Classification 1985 (adjusted Rand index).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def _sq_dists(x_NxD, c_ExD):
  return jnp.maximum(jnp.sum(x_NxD ** 2, -1)[:, None] + jnp.sum(c_ExD ** 2, -1)[None, :]
                     - 2.0 * x_NxD @ c_ExD.T, 0.0)


@functools.partial(jax.jit, static_argnames=("num_envs",))
def _seed_centers(features_NxD, key, num_envs):
  n = features_NxD.shape[0]
  keys = jax.random.split(key, num_envs)
  first = jax.random.randint(keys[0], (), 0, n)
  centers = jnp.zeros((num_envs, features_NxD.shape[1]), features_NxD.dtype)
  centers = centers.at[0].set(features_NxD[first])

  def body(e, centers):
    d_NxE = _sq_dists(features_NxD, centers)
    d_N = jnp.min(jnp.where(jnp.arange(num_envs)[None, :] < e, d_NxE, jnp.inf), axis=1)
    # D^2 sampling; if every point sits on a centre, draw uniformly.
    logits = jnp.where(jnp.sum(d_N) > 0, jnp.log(jnp.maximum(d_N, 1e-30)), 0.0)
    pick = jax.random.categorical(keys[e], logits)
    return centers.at[e].set(features_NxD[pick])

  return jax.lax.fori_loop(1, num_envs, body, centers)


@functools.partial(jax.jit, static_argnames=("num_iters",))
def _lloyd(features_NxD, centers_ExD, num_iters):
  def body(_, centers):
    onehot_NxE = jax.nn.one_hot(jnp.argmin(_sq_dists(features_NxD, centers), axis=1),
                                centers.shape[0], dtype=features_NxD.dtype)
    count_E = jnp.sum(onehot_NxE, axis=0)
    means = (onehot_NxE.T @ features_NxD) / jnp.maximum(count_E, 1.0)[:, None]
    return jnp.where(count_E[:, None] > 0, means, centers)  # an empty cluster stays put

  return jax.lax.fori_loop(0, num_iters, body, centers_ExD)


def kmeans(features_NxD, key, *, num_envs: int, num_iters: int = 25,
           init_ExD=None) -> jax.Array:
  """k-means centres ``(E, D)``: k-means++ seeding from ``key`` (or ``init_ExD``),
  then ``num_iters`` Lloyd iterations (assign to the nearest centre, move each
  centre to its points' mean; an empty cluster keeps its centre)."""
  if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
    raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
  if not isinstance(num_iters, (int, np.integer)) or num_iters < 0:
    raise ValueError(f"num_iters must be an integer >= 0, got {num_iters!r}")
  a = _common.check_arrays(dict(features_NxD=features_NxD, init_ExD=init_ExD))
  x = a["features_NxD"]
  if init_ExD is None:
    key = _common.check_key("key", key)
    if np.shape(x)[0] < num_envs:
      raise ValueError(f"features_NxD has {np.shape(x)[0]} rows, fewer than num_envs={num_envs}")
    centers = _seed_centers(x, key, int(num_envs))
  else:
    centers = a["init_ExD"]
    if np.shape(centers)[0] != num_envs:
      raise ValueError(f"init_ExD must have num_envs={num_envs} rows, got {np.shape(centers)}")
  return _lloyd(x, centers, int(num_iters))


@jax.jit
def _soft(features_BxD, centers_ExD, temperature):
  return jax.nn.softmax(-jnp.sqrt(_sq_dists(features_BxD, centers_ExD)) / temperature, axis=-1)


def soft_assign(features_BxD, centers_ExD, *, temperature: float = 1.0) -> jax.Array:
  """Soft memberships ``softmax_e(-||f_i - c_e|| / temperature)``, shape ``(B, E)``."""
  a = _common.check_arrays(dict(features_BxD=features_BxD, centers_ExD=centers_ExD))
  if np.ndim(temperature) != 0:
    raise ValueError(f"temperature must be a scalar, got shape {np.shape(temperature)}")
  t = _common.check_array("temperature", temperature, scalars=True)
  if _common.is_concrete(t) and not float(np.asarray(t)) > 0:
    raise ValueError(f"temperature must be > 0, got {float(np.asarray(t))}")
  return _soft(a["features_BxD"], a["centers_ExD"], t)


@functools.partial(jax.jit, static_argnames=("num_a", "num_b"))
def _ari(a_N, b_N, num_a, num_b):
  n_AxB = jax.nn.one_hot(a_N, num_a).T @ jax.nn.one_hot(b_N, num_b)
  pairs = lambda x: x * (x - 1.0) / 2.0  # noqa: E731
  index = jnp.sum(pairs(n_AxB))
  rows, cols = jnp.sum(pairs(n_AxB.sum(1))), jnp.sum(pairs(n_AxB.sum(0)))
  total = pairs(jnp.asarray(a_N.shape[0], jnp.float32))
  expected = rows * cols / jnp.maximum(total, 1.0)
  top = (rows + cols) / 2.0
  # Both partitions trivial (one cluster each, or all singletons): identical, ARI 1.
  return jnp.where(top == expected, 1.0, (index - expected) / (top - expected))


def adjusted_rand_index(labels_a_N, labels_b_N, *, num_a: int, num_b: int) -> jax.Array:
  """The adjusted Rand index of two labellings (values in ``[0, num_a)`` and
  ``[0, num_b)``), a scalar: 1 for the same partition, about 0 by chance."""
  a = _common.check_arrays(dict(labels_a_N=labels_a_N, labels_b_N=labels_b_N),
                           kinds=dict(labels_a_N="int", labels_b_N="int"))
  for name, k in (("num_a", num_a), ("num_b", num_b)):
    if not isinstance(k, (int, np.integer)) or k < 1:
      raise ValueError(f"{name} must be an integer >= 1, got {k!r}")
  for name, k in (("labels_a_N", num_a), ("labels_b_N", num_b)):
    x = a[name]
    if _common.is_concrete(x) and (np.min(x) < 0 or np.max(x) >= k):
      raise ValueError(f"{name} must lie in [0, {k}), got [{np.min(x)}, {np.max(x)}]")
  return _ari(a["labels_a_N"], a["labels_b_N"], int(num_a), int(num_b))


@functools.partial(jax.jit, static_argnames=("k",))
def _ranks(scores_BxN, target_B, k):
  target_score = jnp.take_along_axis(scores_BxN, target_B[:, None], axis=1)
  rank_B = jnp.sum(scores_BxN > target_score, axis=1)
  hit_B = (rank_B < k).astype(jnp.float32)
  return hit_B, hit_B / jnp.log2(rank_B.astype(jnp.float32) + 2.0)


def _check_ranking(scores_BxN, target_B, k):
  a = _common.check_arrays(dict(scores_BxN=scores_BxN, target_B=target_B),
                           kinds=dict(target_B="int"), inf_ok=("scores_BxN",))
  if not isinstance(k, (int, np.integer)) or k < 1:
    raise ValueError(f"k must be an integer >= 1, got {k!r}")
  t, s = a["target_B"], a["scores_BxN"]
  n = np.shape(s)[1]
  if _common.is_concrete(t) and (np.min(t) < 0 or np.max(t) >= n):
    raise ValueError(f"target_B must index the {n} items, got [{np.min(t)}, {np.max(t)}]")
  if _common.is_concrete(s) and _common.is_concrete(t):
    own = np.take_along_axis(np.asarray(s), np.asarray(t)[:, None], axis=1)
    if not np.all(np.isfinite(own)):
      raise ValueError("scores_BxN must be finite at the target items (an excluded target "
                       "cannot be ranked)")
  return s, t


def hit_rate_at_k(scores_BxN, target_B, *, k: int = 10) -> jax.Array:
  """``HR@k`` per user, shape ``(B,)``: 1 where the target is among the top ``k``."""
  s, t = _check_ranking(scores_BxN, target_B, k)
  return _ranks(s, t, int(k))[0]


def ndcg_at_k(scores_BxN, target_B, *, k: int = 10) -> jax.Array:
  """``NDCG@k`` per user with one relevant item, shape ``(B,)``: ``1 / log2(rank + 2)``
  where the target's rank (0-based) is below ``k``, else 0."""
  s, t = _check_ranking(scores_BxN, target_B, k)
  return _ranks(s, t, int(k))[1]
