"""The registered examples of ``reprojax.algorithms.gwcn`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.gwcn.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.gwcn import SparseOperator
from reprojax.algorithms.gwcn import adjacency_from_edges
from reprojax.algorithms.gwcn import bernoulli_variance
from reprojax.algorithms.gwcn import bfs_order
from reprojax.algorithms.gwcn import degree_order
from reprojax.algorithms.gwcn import degree_ordered_subgraph
from reprojax.algorithms.gwcn import density_term
from reprojax.algorithms.gwcn import edge_density
from reprojax.algorithms.gwcn import edge_density_dense
from reprojax.algorithms.gwcn import edges_from_adjacency
from reprojax.algorithms.gwcn import fit_density_curves
from reprojax.algorithms.gwcn import fit_power_law
from reprojax.algorithms.gwcn import gwcn_shift
from reprojax.algorithms.gwcn import gwcn_shift_dense
from reprojax.algorithms.gwcn import induced_subgraph
from reprojax.algorithms.gwcn import limit_shift
from reprojax.algorithms.gwcn import normalized_shift
from reprojax.algorithms.gwcn import normalized_shift_dense
from reprojax.algorithms.gwcn import operator_norm
from reprojax.algorithms.gwcn import pad_edges
from reprojax.algorithms.gwcn import propagate
from reprojax.algorithms.gwcn import random_order
from reprojax.algorithms.gwcn import rms
from reprojax.algorithms.gwcn import sample_adjacency
from reprojax.algorithms.gwcn import size_term
from reprojax.algorithms.gwcn import sort_edges
from reprojax.algorithms.gwcn import sparsity
from reprojax.algorithms.gwcn import stretched_sample
from reprojax.algorithms.gwcn import to_csr
from reprojax.algorithms.gwcn import to_ell
from reprojax.algorithms.gwcn import transfer_bound
from reprojax.algorithms.gwcn import transfer_error
from reprojax.algorithms.gwcn import validate_adjacency
from reprojax.algorithms.gwcn import validate_edges


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


def _mismatched_edges():
  _, (s, r, w) = _ring_np()
  return s[:3], r, w  # lengths differ


def _edges_and_signal(key):
  return (*_example_edges(key), _uniform_NxN(jax.random.fold_in(key, 2))[:, :3])


def _ring_edges(key):
  """The padded ring (fixed degrees: fixed ELL bucket shapes) with random weights."""
  _, (s, r, w) = _ring_np()
  return s, r, w * (0.5 + jax.random.uniform(key, w.shape))


def _ell_and_signal(key):
  return to_ell(SparseOperator(*_ring_edges(key)), _N), _edges_and_signal(key)[3]


def _edges_and_order(key):
  return (*_example_edges(key), jax.random.permutation(jax.random.fold_in(key, 3), _N))


_M = np.array([10.0, 20.0, 40.0, 80.0], np.float32)  # subgraph sizes of the curve fits


def _curve(key):
  """Densities ~ 3 / m with a little multiplicative noise."""
  return jnp.asarray(_M), jnp.asarray(3.0 / _M) * (1.0 + 0.1 * _uniform_NxN(key)[0, :4])


def _bound_args(key):
  u = _uniform_NxN(key)
  return u[0, :2], u[1, :2], u[2, :2], u[3, :2], 1.0 + u[4, 0], u[5, 0], u[6, 0]


_BAD_NORMS = (-np.ones(2, np.float32),) + (np.ones(2, np.float32),) * 3 + (np.float32(1.0),) * 3

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
            bad_args=(np.ones((6, 5), np.float32), np.ones((4, 6), np.float32)),
            derived_sizes=True),  # (N + Q) x (N + Q)
    Example("propagate_sparse", lambda s, r, w, x: propagate(SparseOperator(s, r, w), x),
            _edges_and_signal, bad_args=(*_ring_np()[1], np.ones(_N, np.float32))),
    Example("propagate_chunked", lambda s, r, w, x: propagate(SparseOperator(s, r, w), x, 8),
            _edges_and_signal, bad_args=(*_ring_np()[1], np.ones(_N, np.float32))),
    Example("propagate_csr", lambda csr, x: propagate(csr, x),
            lambda k: (to_csr(SparseOperator(*_example_edges(k)), _N), _edges_and_signal(k)[3]),
            vmappable=False),  # built on the host from the edge values; bad input: test_gwcn
    Example("to_csr", lambda s, r, w: to_csr(SparseOperator(s, r, w), _N), _example_edges,
            bad_args=_mismatched_edges(), jittable=False, vmappable=False),
    Example("propagate_ell", lambda ell, x: propagate(ell, x), _ell_and_signal,
            vmappable=False),  # built on the host from the edge values; bad input: test_gwcn
    # to_ell's tables take their shapes from the degrees (and one weight where a bucket's are
    # all equal): the example returns the product through them, whose shape is fixed
    Example("to_ell", lambda s, r, w: propagate(to_ell(SparseOperator(s, r, w), _N),
                                                np.ones((_N, 2), np.float32)), _ring_edges,
            bad_args=_mismatched_edges(), jittable=False, vmappable=False),  # host numpy
    Example("propagate_dense", propagate,
            lambda k: (_example_adjacency(k), _uniform_NxN(k)[:, :3]),
            bad_args=(_ring_np()[0], np.ones(_N, np.float32))),
    Example("operator_norm_dense", lambda a: operator_norm(a, _N, 20),
            lambda k: (_example_adjacency(k),), bad_args=(np.ones((3, 3), np.float32),)),
    Example("operator_norm_sparse",
            lambda s, r, w: operator_norm(SparseOperator(s, r, w), _N, 20), _example_edges),
    Example("edges_from_adjacency", lambda a: edges_from_adjacency(a, _E),
            lambda k: (_example_adjacency(k),), bad_args=(np.ones((_N + 1, _N + 1), np.float32),)),
    Example("adjacency_from_edges", lambda s, r, w: adjacency_from_edges(s, r, w, _N),
            _example_edges, bad_args=_mismatched_edges()),
    Example("sort_edges", sort_edges, _example_edges, bad_args=_mismatched_edges()),
    Example("pad_edges", lambda s, r, w: pad_edges(s, r, w, 5), _example_edges,
            bad_args=_mismatched_edges()),
    Example("edge_density", lambda w: edge_density(w, _N), lambda k: _example_edges(k)[2:],
            bad_args=(np.ones((2, 3), np.float32),)),
    Example("edge_density_dense", edge_density_dense, lambda k: (_example_adjacency(k),),
            bad_args=(np.ones((3, 4), np.float32),)),
    Example("validate_edges", lambda s, r, w: validate_edges(s, r, w, _N), _example_edges,
            bad_args=_self_loop_edges(), jittable=False),
    Example("validate_adjacency", validate_adjacency, lambda k: (_example_adjacency(k),),
            bad_args=(-_ring_np()[0],), jittable=False),
    Example("degree_order", lambda s, r, w: degree_order(s, r, w, _N), _example_edges,
            bad_args=_bad_edges()),
    Example("bfs_order", lambda s, r, w: bfs_order(s, r, w, _N), _example_edges,
            bad_args=_bad_edges()),
    Example("random_order", lambda k: random_order(k, _N), lambda k: (k,)),
    Example("induced_subgraph", lambda s, r, w, o: induced_subgraph(s, r, w, o, 5),
            _edges_and_order, bad_args=(*_bad_edges(), np.arange(_N))),
    Example("stretched_sample", lambda k, p: stretched_sample(k, p, 0.5),
            lambda k: (k, _uniform_NxN(jax.random.fold_in(k, 1))),
            bad_args=(jax.random.key(0), np.full((_N, _N), 1.5, np.float32))),
    Example("sparsity", lambda n: sparsity(n, "logn/n", 2.0),
            lambda k: (100.0 + 50.0 * _uniform_NxN(k)[0, 0],), bad_args=(np.float32(1.0),),
            jittable=False),  # numpy: a schedule is evaluated on the host
    Example("fit_density_curves",
            lambda m, d: {k: v for k, v in fit_density_curves(m, d).items() if k != "best"},
            _curve, bad_args=(_M, np.zeros(4, np.float32)), jittable=False),  # numpy least squares
    Example("fit_power_law", fit_power_law, _curve, bad_args=(_M, np.ones(3, np.float32)),
            jittable=False),  # numpy least squares
    Example("rms", rms, lambda k: (_uniform_NxN(k)[:, :3], _uniform_NxN(k)[:, 3] > 0.3),
            bad_args=(np.ones(_N, np.float32), None)),
    Example("size_term", lambda w: size_term(100, w, 0.05, 4),
            lambda k: (0.5 + _uniform_NxN(k)[0, 0],), bad_args=(np.float32(-1.0),)),
    Example("density_term", lambda v: density_term(100, 0.3, v),
            lambda k: (30.0 * _uniform_NxN(k)[0, 0],), bad_args=(np.float32(-1.0),)),
    Example("bernoulli_variance", lambda p: bernoulli_variance(p, 0.5),
            lambda k: (_uniform_NxN(k),), bad_args=(np.full((_N, _N), -0.5, np.float32),)),
    Example("transfer_bound", transfer_bound, _bound_args, bad_args=_BAD_NORMS),
)
