"""GWCN: generalized graphon convolutional networks and size transfer at any sparsity.

Public API (``from algorithms import gwcn``):

* shifts: :func:`gwcn_shift` / :func:`gwcn_shift_dense` (stretched ``A / (n rho)``),
  :func:`normalized_shift` / :func:`normalized_shift_dense` (``D~^-1/2 (A+I) D~^-1/2``),
  :func:`propagate` (``edge_chunk`` for large graphs), :func:`sort_edges`,
  :func:`pad_edges`, :func:`edges_from_adjacency`, :func:`adjacency_from_edges`,
  :func:`edge_density`, :func:`operator_norm`, validation helpers;
* sampling: :func:`sparsity` (schedules), :func:`sample_adjacency`,
  :func:`stretched_sample`, :func:`degree_order`, :func:`bfs_order`,
  :func:`random_order`, :func:`induced_subgraph`, :func:`degree_ordered_subgraph`,
  :func:`fit_density_curves`;
* transfer: :func:`limit_shift`, :func:`transfer_error`, :func:`size_term`,
  :func:`density_term`, :func:`bernoulli_variance`, :func:`transfer_bound`,
  :func:`fit_power_law`.

References:
  The GWCN paper (ICML 2026); Ruiz, Chamon & Ribeiro, NeurIPS 2020; Jian, Ji & Tay,
  arXiv 2309.05260; Shu et al., arXiv 2408.17274.
"""

import jax
import jax.numpy as jnp
import numpy as np

from algorithms._common import Example
from algorithms.gwcn._operators import SparseOperator
from algorithms.gwcn._operators import adjacency_from_edges
from algorithms.gwcn._operators import edge_density
from algorithms.gwcn._operators import edge_density_dense
from algorithms.gwcn._operators import edges_from_adjacency
from algorithms.gwcn._operators import gwcn_shift
from algorithms.gwcn._operators import gwcn_shift_dense
from algorithms.gwcn._operators import normalized_shift
from algorithms.gwcn._operators import normalized_shift_dense
from algorithms.gwcn._operators import operator_norm
from algorithms.gwcn._operators import pad_edges
from algorithms.gwcn._operators import propagate
from algorithms.gwcn._operators import sort_edges
from algorithms.gwcn._operators import validate_adjacency
from algorithms.gwcn._operators import validate_edges
from algorithms.gwcn._sampling import SCHEDULES
from algorithms.gwcn._sampling import bfs_order
from algorithms.gwcn._sampling import degree_order
from algorithms.gwcn._sampling import degree_ordered_subgraph
from algorithms.gwcn._sampling import fit_density_curves
from algorithms.gwcn._sampling import induced_subgraph
from algorithms.gwcn._sampling import random_order
from algorithms.gwcn._sampling import sample_adjacency
from algorithms.gwcn._sampling import sparsity
from algorithms.gwcn._sampling import stretched_sample
from algorithms.gwcn._transfer import bernoulli_variance
from algorithms.gwcn._transfer import density_term
from algorithms.gwcn._transfer import fit_power_law
from algorithms.gwcn._transfer import limit_shift
from algorithms.gwcn._transfer import rms
from algorithms.gwcn._transfer import size_term
from algorithms.gwcn._transfer import transfer_bound
from algorithms.gwcn._transfer import transfer_error

_N = 8  # nodes of the registry examples
_E = _N * (_N - 1)  # padded edge slots: every ordered pair


def _example_adjacency(key):
  """A random symmetric 0/1 graph on 8 nodes that always contains the ring."""
  u = _uniform_NxN(key)
  ring = jnp.roll(jnp.eye(_N), 1, axis=1)
  rand = jnp.triu(u < 0.3, k=1).astype(jnp.float32)
  a = jnp.clip(rand + rand.T + ring + ring.T, 0.0, 1.0)
  return a * (1.0 - jnp.eye(_N))


def _example_edges(key):
  return edges_from_adjacency(_example_adjacency(key), _E)


def _ring_np():
  """The 8-node ring as numpy arrays (bad inputs are built at import: no eager JAX work)."""
  i = np.arange(_N)
  adj = np.zeros((_N, _N), np.float32)
  adj[i, (i + 1) % _N] = adj[(i + 1) % _N, i] = 1.0
  r, s = np.nonzero(adj)
  pad = _E - s.size
  edges = (np.concatenate([s, np.zeros(pad)]).astype(np.int32),
           np.concatenate([r, np.zeros(pad)]).astype(np.int32),
           np.concatenate([np.ones(s.size), np.zeros(pad)]).astype(np.float32))
  return adj, edges


def _bad_edges():
  _, (s, r, w) = _ring_np()
  s[0] = _N + 3  # an index out of range
  return s, r, w


def _self_loop_edges():
  _, (s, r, w) = _ring_np()
  return s, s, w  # every live edge becomes a loop


def _uniform_NxN(key):
  """One ``8 x 8`` uniform draw: every example slices it (one PRNG shape to compile)."""
  return jax.random.uniform(key, (_N, _N))


def _limit_args(key):
  u = _uniform_NxN(key)
  return u[:6, :6], u[6:, :6]  # 6 quadrature points, 2 queries


def _transfer_args(key):
  u = _uniform_NxN(key)
  return 2.0 * u[:, :3] - 1.0, 1.0 + u[:, 3:6]


EXAMPLES = (
    Example("gwcn_shift", lambda s, r, w: gwcn_shift(s, r, w, _N), _example_edges,
            bad_args=_bad_edges()),
    Example("normalized_shift", lambda s, r, w: normalized_shift(s, r, w, _N), _example_edges,
            bad_args=_self_loop_edges()),
    Example("gwcn_shift_dense", lambda a: gwcn_shift_dense(a, 0.5),
            lambda k: (_example_adjacency(k),),
            bad_args=(np.zeros((_N, _N), np.float32),)),  # empty graph
    Example("normalized_shift_dense", normalized_shift_dense,
            lambda k: (_example_adjacency(k),),
            bad_args=(-_ring_np()[0],)),  # negative weights
    Example("sample_adjacency", lambda k, p: sample_adjacency(k, p, 0.5),
            lambda k: (k, _uniform_NxN(jax.random.fold_in(k, 1))),
            bad_args=(jax.random.key(0), np.full((_N, _N), 1.5, np.float32))),
    Example("degree_ordered_subgraph",
            lambda s, r, w: degree_ordered_subgraph(s, r, w, _N, 5), _example_edges,
            bad_args=_bad_edges()),
    Example("transfer_error", transfer_error,
            _transfer_args,
            bad_args=(np.ones((_N, 3), np.float32), np.ones((_N, 2), np.float32))),
    Example("limit_shift", lambda a, b: limit_shift(a, b, normalized=True), _limit_args,
            bad_args=(np.ones((6, 5), np.float32), np.ones((4, 6), np.float32))),
)

__all__ = [
    "EXAMPLES", "SCHEDULES", "SparseOperator", "adjacency_from_edges", "bernoulli_variance",
    "bfs_order", "degree_order", "degree_ordered_subgraph", "density_term", "edge_density",
    "edge_density_dense", "edges_from_adjacency", "fit_density_curves", "fit_power_law",
    "gwcn_shift", "gwcn_shift_dense", "induced_subgraph", "limit_shift", "normalized_shift",
    "normalized_shift_dense", "operator_norm", "propagate", "random_order", "rms",
    "pad_edges", "sample_adjacency", "size_term", "sort_edges", "sparsity", "stretched_sample", "transfer_bound",
    "transfer_error", "validate_adjacency", "validate_edges",
]
