"""The registered examples of ``reprojax.algorithms.gwcn`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.gwcn.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.gwcn import degree_ordered_subgraph
from reprojax.algorithms.gwcn import edges_from_adjacency
from reprojax.algorithms.gwcn import gwcn_shift
from reprojax.algorithms.gwcn import gwcn_shift_dense
from reprojax.algorithms.gwcn import limit_shift
from reprojax.algorithms.gwcn import normalized_shift
from reprojax.algorithms.gwcn import normalized_shift_dense
from reprojax.algorithms.gwcn import sample_adjacency
from reprojax.algorithms.gwcn import transfer_error


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
