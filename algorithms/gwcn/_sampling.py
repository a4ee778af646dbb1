"""Sampling graphs from a graphon at a sparsity schedule, and subgraph sampling of a large graph.

* Sparse graphon sampling (Bollobas-Janson-Riordan; Borgs et al.): latents
  ``u_i`` drawn from the graphon's probability space, then independently for
  ``i < j``: ``A_ij = A_ji ~ Bernoulli(min(1, rho_n W(u_i, u_j)))``, ``A_ii = 0``.
  :func:`sample_adjacency` takes the matrix ``P_ij = W(u_i, u_j)`` (so any
  latent space works) and ``rho_n``.
* Stretched sampling (:func:`stretched_sample`): the same graph returned with its
  stretched shift ``A / (n rho_n)``, whose limit is ``T_W`` at every sparsity.
* Sparsity schedules ``rho(n) = min(1, c f(n))`` with ``f`` one of ``1``
  (dense, Theta(1)), ``n^-1/4``, ``n^-1/2``, ``log n / n``, ``1 / n``
  (:func:`sparsity`): the expected degree ``n rho(n)`` grows like
  ``n, n^3/4, n^1/2, log n`` and stays bounded for ``1/n``.
* Subgraph sampling of a real graph (size transfer protocol): an ordering of the
  nodes, then the induced subgraph on the first ``m``. Degree ordering (largest
  degree first) gives a dense core widening into a sparse tail; breadth-first
  ordering from the top-degree node gives a connected ball; a random ordering
  gives uniform node sampling. Everything keeps static shapes (the subgraph is
  returned padded to the full size with its dropped edges at weight 0), so one
  compilation serves every ``m``.

References:
  Lovasz, "Large networks and graph limits" (2012), ch. 10; Borgs, Chayes, Cohn &
  Zhao, "An L^p theory of sparse graph convergence I", Trans. AMS 2019;
  the GWCN paper's public README (degree-ordered subgraph sampling).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.gwcn import _operators

SCHEDULES = ("const", "n^-1/4", "n^-1/2", "logn/n", "1/n")


def sparsity(n, schedule: str, scale: float = 1.0):
  """``rho(n) = min(1, scale * f(n))`` for a schedule name in :data:`SCHEDULES`.

  ``n`` may be an int or a numpy array; the result is a float or an array.
  """
  if schedule not in SCHEDULES:
    raise ValueError(f"unknown sparsity schedule {schedule!r}; expected one of {SCHEDULES}")
  if scale <= 0:
    raise ValueError(f"scale must be > 0, got {scale}")
  n_arr = np.asarray(_common.check_arrays({"n": n}, shapeless=("n",))["n"], np.float64)
  if np.any(n_arr < 2):
    raise ValueError(f"n must be >= 2, got {n}")
  f = {"const": np.ones_like(n_arr), "n^-1/4": n_arr ** -0.25, "n^-1/2": n_arr ** -0.5,
       "logn/n": np.log(n_arr) / n_arr, "1/n": 1.0 / n_arr}[schedule]
  out = np.minimum(1.0, scale * f)
  return float(out) if np.ndim(out) == 0 else out


def _check_prob(prob_NxN, density):
  prob_NxN = _common.check_arrays({"prob_NxN": prob_NxN})["prob_NxN"]
  if np.shape(prob_NxN)[0] < 2:
    raise ValueError(f"need at least 2 nodes, got {np.shape(prob_NxN)[0]}")
  _common.check_in_range("prob_NxN", prob_NxN, lo=0.0, hi=1.0)
  _common.check_in_range("density", density, lo=0.0, hi=1.0, lo_open=True)
  return prob_NxN


def sample_adjacency(key: jax.Array, prob_NxN: jax.Array, density) -> jax.Array:
  """A symmetric loop-free 0/1 adjacency with ``A_ij ~ Bernoulli(min(1, rho P_ij))``.

  Args:
    key: PRNG key.
    prob_NxN: ``P_ij = W(u_i, u_j)`` in ``[0, 1]`` (only ``i < j`` is read).
    density: ``rho`` in ``(0, 1]``.

  Returns:
    float32 ``N x N`` adjacency.
  """
  prob_NxN = _check_prob(prob_NxN, density)
  n = prob_NxN.shape[0]
  key = _common.check_key("key", key)
  u_NxN = jax.random.uniform(key, (n, n))
  upper = jnp.triu(u_NxN < jnp.minimum(1.0, density * prob_NxN), k=1)
  return (upper | upper.T).astype(jnp.float32)


def stretched_sample(key: jax.Array, prob_NxN: jax.Array, density):
  """Samples ``A`` as :func:`sample_adjacency` and returns ``(A, A / (n rho))``.

  The stretched shift ``A / (n rho)`` is unbiased for ``W(u_i, u_j) / n`` off the
  diagonal (when ``rho P <= 1``), so its spectrum tracks that of ``T_W`` at any
  ``rho``, whereas ``A / n`` shrinks to 0 with ``rho``.
  """
  adj = sample_adjacency(key, prob_NxN, density)
  n = np.shape(prob_NxN)[0]
  return adj, adj / (n * jnp.asarray(density, jnp.float32))


def degree_order(senders_E, receivers_E, weights_E, num_nodes: int) -> jax.Array:
  """Node ids by decreasing degree (ties by id): the dense core first."""
  senders_E, receivers_E, weights_E = _operators.validate_edges(
      senders_E, receivers_E, weights_E, num_nodes)
  deg_N = jax.ops.segment_sum((weights_E > 0).astype(jnp.float32), receivers_E,
                              num_segments=num_nodes)
  return jnp.argsort(-deg_N, stable=True).astype(jnp.int32)


def bfs_order(senders_E, receivers_E, weights_E, num_nodes: int) -> jax.Array:
  """Node ids by hop distance from the top-degree node, ties by decreasing degree.

  Distances by Bellman-Ford relaxation over the live edges (one ``segment_min`` per
  hop, until nothing changes); nodes unreachable from the start come last.
  """
  senders_E, receivers_E, weights_E = _operators.validate_edges(
      senders_E, receivers_E, weights_E, num_nodes)
  return _bfs_order(senders_E, receivers_E, weights_E, num_nodes=int(num_nodes))


@functools.partial(jax.jit, static_argnames=("num_nodes",))
def _bfs_order(senders_E, receivers_E, weights_E, num_nodes):
  deg_N = jax.ops.segment_sum((weights_E > 0).astype(jnp.float32), receivers_E,
                              num_segments=num_nodes)
  big = jnp.float32(num_nodes + 1)
  dist0 = jnp.where(jnp.arange(num_nodes) == jnp.argmax(deg_N), 0.0, big)
  live = weights_E > 0

  def step(state):
    dist, _ = state
    cand = jnp.where(live, dist[senders_E] + 1.0, big)
    new = jnp.minimum(dist, jax.ops.segment_min(cand, receivers_E, num_segments=num_nodes))
    return new, jnp.any(new != dist)

  dist, _ = jax.lax.while_loop(lambda s: s[1], step, (dist0, jnp.bool_(True)))
  # lexicographic (dist ascending, degree descending)
  score = dist * (jnp.max(deg_N) + 1.0) - deg_N
  return jnp.argsort(score, stable=True).astype(jnp.int32)


def random_order(key: jax.Array, num_nodes: int) -> jax.Array:
  """A uniformly random node ordering (uniform node sampling)."""
  if int(num_nodes) < 1:
    raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
  key = _common.check_key("key", key)
  return jax.random.permutation(key, num_nodes).astype(jnp.int32)


def induced_subgraph(senders_E, receivers_E, weights_E, order_N, m):
  """The subgraph induced by the first ``m`` nodes of ``order_N``, relabelled ``0..m-1``.

  Args:
    senders_E, receivers_E, weights_E: padded edge list of the full graph.
    order_N: a permutation of ``0..N-1`` (e.g. :func:`degree_order`).
    m: number of nodes kept (int or traced scalar, ``1 <= m <= N``).

  Returns:
    ``(senders_E, receivers_E, weights_E)`` of the same static length: kept edges
    relabelled by their endpoints' position in ``order_N``, dropped edges with
    weight 0 and indices 0. Nodes ``m..N-1`` of the result are isolated padding.
  """
  order_N = _common.check_arrays({"order_N": order_N}, kinds={"order_N": "int"})["order_N"]
  senders_E, receivers_E, weights_E = _operators.validate_edges(
      senders_E, receivers_E, weights_E, np.shape(order_N)[0])
  n = order_N.shape[0]
  if _common.is_concrete(m) and not 1 <= int(m) <= n:
    raise ValueError(f"m must be in [1, {n}], got {m}")
  rank_N = jnp.zeros(n, jnp.int32).at[order_N].set(jnp.arange(n, dtype=jnp.int32))
  s, r = rank_N[senders_E], rank_N[receivers_E]
  keep = (s < m) & (r < m) & (weights_E > 0)
  zero = jnp.zeros_like(s)
  return (jnp.where(keep, s, zero), jnp.where(keep, r, zero),
          jnp.where(keep, weights_E, jnp.zeros_like(weights_E)))


def degree_ordered_subgraph(senders_E, receivers_E, weights_E, num_nodes: int, m):
  """:func:`induced_subgraph` on the ``m`` highest-degree nodes (dense core, sparse tail)."""
  order = degree_order(senders_E, receivers_E, weights_E, num_nodes)
  return induced_subgraph(senders_E, receivers_E, weights_E, order, m)


def fit_density_curves(m_M, density_M):
  """Least-squares fits of ``density(m)`` to ``a / m``, ``a log m / m`` and ``a``.

  Each fit is one scale ``a`` fitted in log space (``log density = log a + log f(m)``);
  returns ``{name: (a, r2)}`` with ``r2`` the coefficient of determination of the
  log densities, and the name of the best fit under key ``"best"``.
  """
  m, d = (np.asarray(a, np.float64) for a in _common.check_arrays(
      {"m_M": m_M, "density_M": density_M}).values())
  if m.size < 2:
    raise ValueError(f"m_M and density_M must be 1-D of one length >= 2, got {m.shape}, {d.shape}")
  if np.any(d <= 0) or np.any(m < 2):
    raise ValueError(f"density_M must be > 0 and m_M >= 2, got min {d.min()} and {m.min()}")
  y = np.log(d)
  ss_tot = float(np.sum((y - y.mean()) ** 2)) or 1e-30
  out = {}
  for name, f in (("1/n", 1.0 / m), ("logn/n", np.log(m) / m), ("const", np.ones_like(m))):
    log_a = float(np.mean(y - np.log(f)))
    resid = y - (log_a + np.log(f))
    out[name] = (math.exp(log_a), 1.0 - float(np.sum(resid ** 2)) / ss_tot)
  out["best"] = max(("1/n", "logn/n", "const"), key=lambda k: out[k][1])
  return out
