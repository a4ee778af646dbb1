"""Graph shift operators of GWCN and of the normalised GCN, sparse and dense, with validation.

Notation (GWCN paper and its lineage): a graph ``G_n`` on ``n`` nodes with
adjacency ``A`` (symmetric, zero diagonal, non-negative weights) and edge density
``rho``. Two shift operators act on node signals ``x`` (``n x F``):

* **GWCN (stretched) shift**: ``S_n = A / (n rho)``. As an integral operator on
  ``L^2[0,1]`` acting on step functions this is the graph's canonical graphon
  ``W_G`` stretched by ``1 / rho`` in its range: ``W_G / rho``. When ``G_n`` is
  sampled from ``rho_n W`` the classical limit ``A / n -> 0`` vanishes, while
  ``A / (n rho_n) -> T_W``: a non-trivial limit at every sparsity level. With
  ``rho`` unknown (real graphs) the empirical density
  ``rho_hat = sum_ij A_ij / (n (n - 1))`` is used and the limit is the unit-mass
  graphon ``W / ||W||_1`` (the normalisation of the stretched canonical graphon
  of Borgs, Chayes, Cohn & Holden). This range-stretching is our reading of the
  abstract's "stretching"; the domain-stretched graphex of BCCH is equivalent up
  to this normalisation of the measure.
* **Normalised GCN shift** (c-GCN, Kipf & Welling):
  ``S_n = D~^{-1/2} (A + I) D~^{-1/2}`` with ``D~ = diag(A 1) + I``. Its dense
  limit is ``W(x, y) / sqrt(d(x) d(y))`` with ``d(x) = int W(x, y) dy``; the
  added identity and the random degrees bias it when ``n rho_n`` stays bounded.

Sparse operators are padded edge lists (:class:`SparseOperator`), the
padding being edges of weight 0. Validation (``ValueError``) rejects: indices
out of range, negative or non-finite weights, self-loops and duplicated edges
among the non-padding edges (both change the operator: a loop adds to the
diagonal, a duplicate doubles an entry under ``segment_sum``), and a graph with
no edge (its density is 0, so the stretched shift is undefined). Value checks
run on concrete arrays only (see ``reprojax.algorithms._common``).

References:
  Kipf & Welling, ICLR 2017; Ruiz, Chamon & Ribeiro, NeurIPS 2020;
  Borgs, Chayes, Cohn & Holden, "Sparse exchangeable graphs and their limits via
  graphon processes", JMLR 2018; Jian, Ji & Tay, arXiv 2309.05260.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.gwcn._propagate import SparseOperator
from reprojax.algorithms.gwcn._propagate import check_edge_arrays as _check_edge_arrays
from reprojax.algorithms.gwcn._propagate import check_shift
from reprojax.algorithms.gwcn._propagate import propagate

__all__ = [
    "SparseOperator", "propagate", "validate_edges", "validate_adjacency",
    "edge_density", "edge_density_dense", "gwcn_shift", "gwcn_shift_dense",
    "normalized_shift", "normalized_shift_dense", "edges_from_adjacency",
    "adjacency_from_edges", "operator_norm", "sort_edges", "pad_edges",
]


def validate_edges(senders_E, receivers_E, weights_E, num_nodes: int):
  """Raises ``ValueError`` unless the padded edge list is a valid simple weighted graph;
  returns the three arrays (a list converted, integer weights as float32).

  Always: 1-D arrays of one length, integer indices, floating weights. On concrete
  arrays also: indices in ``[0, num_nodes)``, weights finite and ``>= 0``, at least
  one edge of positive weight, no self-loop and no duplicate among the live
  (positive-weight) edges; padding edges (weight 0) may repeat and loop.
  """
  senders_E, receivers_E, weights_E = _check_edge_arrays(senders_E, receivers_E, weights_E)
  if np.ndim(num_nodes) != 0:
    raise ValueError(f"num_nodes must be a scalar, got shape {np.shape(num_nodes)}")
  if _common.is_concrete(num_nodes) and int(num_nodes) < 1:
    raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
  if not all(_common.is_concrete(a) for a in (senders_E, receivers_E, weights_E, num_nodes)):
    return senders_E, receivers_E, weights_E
  s, r, w = np.asarray(senders_E), np.asarray(receivers_E), np.asarray(weights_E)
  n = int(num_nodes)
  _common.check_in_range("weights_E", w, lo=0.0)
  bad = (s < 0) | (s >= n) | (r < 0) | (r >= n)
  if bad.any():
    raise ValueError(f"edge indices must lie in [0, {n}), got {int(bad.sum())} edges out of "
                     f"range (min {min(s.min(), r.min())}, max {max(s.max(), r.max())})")
  live = w > 0
  if not live.any():
    raise ValueError("the graph has no edge of positive weight (empty graph): its density "
                     "is 0 and the stretched shift A / (n rho) is undefined")
  if (s[live] == r[live]).any():
    raise ValueError(f"self-loops are not allowed (they change the operator's diagonal), got "
                     f"{int((s[live] == r[live]).sum())}; the normalised shift adds I itself")
  key = s[live].astype(np.int64) * n + r[live].astype(np.int64)
  if np.unique(key).size != key.size:
    raise ValueError(f"duplicate edges are not allowed (segment_sum would add them), got "
                     f"{key.size - np.unique(key).size} duplicates")
  return senders_E, receivers_E, weights_E


def validate_adjacency(adj_NxN):
  """Raises ``ValueError`` unless ``adj_NxN`` is square, finite, >= 0, loop-free, non-empty;
  returns it as a float array."""
  adj_NxN = _common.check_arrays({"adj_NxN": adj_NxN})["adj_NxN"]
  if not _common.is_concrete(adj_NxN):
    return adj_NxN
  a = np.asarray(adj_NxN)
  _common.check_in_range("adj_NxN", a, lo=0.0)
  if np.any(np.diag(a) != 0):
    raise ValueError(f"adj_NxN must have a zero diagonal (no self-loops), got "
                     f"{int(np.count_nonzero(np.diag(a)))} loops")
  if not np.any(a > 0):
    raise ValueError("adj_NxN has no edge (empty graph): its density is 0")
  return adj_NxN


def edge_density(weights_E: jax.Array, num_nodes) -> jax.Array:
  """Empirical density ``rho_hat = sum_e w_e / (n (n - 1))`` (edges listed both ways)."""
  weights_E = _common.check_arrays({"weights_E": weights_E})["weights_E"]
  if _common.is_concrete(num_nodes) and not np.ndim(num_nodes) and int(num_nodes) < 2:
    raise ValueError(f"num_nodes must be >= 2 for a density, got {num_nodes}")
  n = jnp.asarray(num_nodes, jnp.float32)
  return jnp.sum(weights_E) / (n * (n - 1.0))


def edge_density_dense(adj_NxN: jax.Array) -> jax.Array:
  """Empirical density ``sum_ij A_ij / (n (n - 1))`` of a dense adjacency."""
  adj_NxN = _common.check_arrays({"adj_NxN": adj_NxN})["adj_NxN"]
  if np.shape(adj_NxN)[0] < 2:
    raise ValueError(f"adj_NxN must have n >= 2 nodes, got shape {np.shape(adj_NxN)}")
  n = adj_NxN.shape[0]
  return jnp.sum(adj_NxN) / (n * (n - 1.0))


def gwcn_shift(senders_E, receivers_E, weights_E, num_nodes, density=None) -> SparseOperator:
  """The GWCN (stretched) shift ``S = A / (n rho)`` as a padded edge list.

  Args:
    senders_E, receivers_E: int [E] endpoints (both directions of each edge).
    weights_E: float [E] edge weights ``A_ij >= 0``; padding edges weigh 0.
    num_nodes: ``n``, the number of nodes that count (an int, or a traced scalar
      when a padded graph holds fewer real nodes than its static size).
    density: ``rho`` (the sparsity schedule's value), or ``None`` for the
      empirical density, in which case ``S = (n - 1) A / sum_ij A_ij``.

  Returns:
    A :class:`SparseOperator` with weights ``A_ij / (n rho)``.
  """
  senders_E, receivers_E, weights_E = validate_edges(senders_E, receivers_E, weights_E,
                                                    num_nodes)
  if density is not None:
    _common.check_in_range("density", density, lo=0.0, hi=1.0, lo_open=True)
  n = jnp.asarray(num_nodes, jnp.float32)
  rho = edge_density(weights_E, num_nodes) if density is None else jnp.asarray(density)
  return SparseOperator(senders_E, receivers_E, weights_E / (n * rho))


def gwcn_shift_dense(adj_NxN: jax.Array, density=None) -> jax.Array:
  """Dense ``A / (n rho)``; ``density=None`` uses the empirical density."""
  adj_NxN = validate_adjacency(adj_NxN)
  if density is not None:
    _common.check_in_range("density", density, lo=0.0, hi=1.0, lo_open=True)
  n = adj_NxN.shape[0]
  rho = edge_density_dense(adj_NxN) if density is None else jnp.asarray(density)
  return adj_NxN / (n * rho)


def normalized_shift(senders_E, receivers_E, weights_E, num_nodes: int) -> SparseOperator:
  """``D~^{-1/2} (A + I) D~^{-1/2}`` as an edge list of ``E + n`` entries (loops appended).

  ``num_nodes`` must be a static int here: one loop per node is appended.
  """
  senders_E, receivers_E, weights_E = validate_edges(senders_E, receivers_E, weights_E,
                                                    num_nodes)
  n = int(num_nodes)
  deg_N = jax.ops.segment_sum(weights_E, receivers_E, num_segments=n) + 1.0
  inv_sqrt_N = jax.lax.rsqrt(deg_N)
  w = weights_E * inv_sqrt_N[senders_E] * inv_sqrt_N[receivers_E]
  loops = jnp.arange(n, dtype=jnp.asarray(senders_E).dtype)
  return SparseOperator(jnp.concatenate([senders_E, loops]),
                        jnp.concatenate([receivers_E, loops]),
                        jnp.concatenate([w, 1.0 / deg_N]))


def normalized_shift_dense(adj_NxN: jax.Array) -> jax.Array:
  """Dense ``D~^{-1/2} (A + I) D~^{-1/2}``."""
  adj_NxN = validate_adjacency(adj_NxN)
  a = adj_NxN + jnp.eye(adj_NxN.shape[0], dtype=adj_NxN.dtype)
  inv_sqrt_N = jax.lax.rsqrt(jnp.sum(a, axis=1))
  return a * inv_sqrt_N[:, None] * inv_sqrt_N[None, :]


def edges_from_adjacency(adj_NxN: jax.Array, max_edges: int):
  """Padded edge list of the nonzeros of ``adj_NxN`` (jit-able: static ``max_edges``).

  Returns ``(senders_E, receivers_E, weights_E)`` with ``E = max_edges``; entries
  beyond the number of nonzeros are padding (indices 0, weight 0). Raises if a
  concrete adjacency has more nonzeros than ``max_edges``.
  """
  adj_NxN = _common.check_arrays({"adj_NxN": adj_NxN})["adj_NxN"]
  if _common.is_concrete(adj_NxN):
    nnz = int(np.count_nonzero(np.asarray(adj_NxN)))
    if nnz > max_edges:
      raise ValueError(f"adjacency has {nnz} nonzeros, more than max_edges={max_edges}")
  r, s = jnp.nonzero(adj_NxN, size=max_edges, fill_value=0)
  w = adj_NxN[r, s]
  valid = jnp.arange(max_edges) < jnp.count_nonzero(adj_NxN)
  return s.astype(jnp.int32), r.astype(jnp.int32), jnp.where(valid, w, 0.0)


def adjacency_from_edges(senders_E, receivers_E, weights_E, num_nodes: int) -> jax.Array:
  """Dense ``N x N`` matrix with ``M[receiver, sender] += weight`` (padding adds 0)."""
  senders_E, receivers_E, weights_E = _check_edge_arrays(senders_E, receivers_E, weights_E)
  m = jnp.zeros((num_nodes, num_nodes), jnp.asarray(weights_E).dtype)
  return m.at[receivers_E, senders_E].add(weights_E)


def operator_norm(shift, num_nodes: int, num_iters: int = 100) -> jax.Array:
  """Spectral norm ``||S||`` of a symmetric shift by power iteration on ``S^2`` (sparse or dense).

  Starts from ``1 + 0.01 i / n`` (not orthogonal to the top eigenvector of a
  connected non-negative graph), runs ``num_iters`` steps ``v <- S^2 v / ||S^2 v||``
  and returns ``||S v||``.

  Args:
    shift: a :class:`SparseOperator` or an ``N x N`` array (symmetric).
    num_nodes: ``N`` (static).
    num_iters: power iterations (static).

  Returns:
    A scalar, ``||S||`` up to the power iteration's convergence.
  """
  if int(num_nodes) < 1 or int(num_iters) < 1:
    raise ValueError(f"num_nodes and num_iters must be >= 1, got {num_nodes}, {num_iters}")
  shift, _ = check_shift(shift, np.zeros((int(num_nodes), 1), np.float32))
  return _operator_norm(shift, num_nodes=int(num_nodes), num_iters=int(num_iters))


@functools.partial(jax.jit, static_argnames=("num_nodes", "num_iters"))
def _operator_norm(shift, num_nodes, num_iters):
  x = jnp.ones((num_nodes, 1), jnp.float32) + 0.01 * jnp.arange(num_nodes)[:, None] / num_nodes

  def body(_, v):
    v = propagate(shift, propagate(shift, v))
    return v / (jnp.linalg.norm(v) + 1e-30)

  v = jax.lax.fori_loop(0, num_iters, body, x / jnp.linalg.norm(x))
  return jnp.linalg.norm(propagate(shift, v))


def sort_edges(senders_E, receivers_E, weights_E, by: str = "sender"):
  """The edge list reordered by sender (or receiver), stable; the operator is unchanged.

  Sorting by sender makes the gather ``x[senders]`` of :func:`propagate` sequential.
  """
  if by not in ("sender", "receiver"):
    raise ValueError(f"by must be 'sender' or 'receiver', got {by!r}")
  senders_E, receivers_E, weights_E = _check_edge_arrays(senders_E, receivers_E, weights_E)
  key = senders_E if by == "sender" else receivers_E
  perm = jnp.argsort(key, stable=True)
  return senders_E[perm], receivers_E[perm], weights_E[perm]


def pad_edges(senders_E, receivers_E, weights_E, multiple: int):
  """Pads the edge list with weight-0 edges ``(0, 0)`` to a length divisible by ``multiple``."""
  if multiple < 1:
    raise ValueError(f"multiple must be >= 1, got {multiple}")
  senders_E, receivers_E, weights_E = _check_edge_arrays(senders_E, receivers_E, weights_E)
  pad = (-np.shape(weights_E)[0]) % multiple
  return (jnp.pad(senders_E, (0, pad)), jnp.pad(receivers_E, (0, pad)),
          jnp.pad(weights_E, (0, pad)))
