"""Applying a graph shift ``S x`` for a sparse padded edge list or a dense matrix.

The pure propagation that :mod:`reprojax.models.gcn` builds its layers on and that
the operator norms of :mod:`reprojax.algorithms.gwcn._operators` iterate.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Union

import jax
import jax.numpy as jnp


class SparseOperator(NamedTuple):
  """A graph shift as a padded weighted edge list; padding edges have weight 0."""

  senders_E: jax.Array  # int32 [E], source node of each edge
  receivers_E: jax.Array  # int32 [E], target node (the row of S)
  weights_E: jax.Array  # float [E], S[receiver, sender]


Shift = Union[SparseOperator, jax.Array]


def propagate(shift: Shift, x_NxF: jax.Array, edge_chunk: int | None = None) -> jax.Array:
  """Applies the shift: ``(S x)_i = sum_j S_ij x_j`` for a sparse or dense ``S``.

  Args:
    shift: a :class:`SparseOperator` (rows indexed by receivers) or an ``N x N`` array.
    x_NxF: node signals, ``N`` nodes by ``F`` features.
    edge_chunk: ``None`` for one ``segment_sum`` over all edges (materialises the
      ``E x F`` messages). An int ``C`` (``E`` a multiple of ``C``, see
      ``reprojax.algorithms.gwcn.pad_edges``) scatter-adds ``C`` edges at a time into one
      carried accumulator (the same scatter-add ``segment_sum`` lowers to), so the
      messages stay in cache: with edges sorted by sender
      (``reprojax.algorithms.gwcn.sort_edges``) this is the fast path for large graphs on CPU.

  Returns:
    ``S x`` of shape ``N x F``.
  """
  if jnp.ndim(x_NxF) != 2:
    raise ValueError(f"x_NxF must be 2-D (nodes x features), got shape {jnp.shape(x_NxF)}")
  if not isinstance(shift, SparseOperator):
    return jnp.einsum("nm,mf->nf", shift.astype(x_NxF.dtype), x_NxF)
  n = x_NxF.shape[0]
  w_E = shift.weights_E.astype(x_NxF.dtype)
  if edge_chunk is None:
    msg_ExF = w_E[:, None] * x_NxF[shift.senders_E]
    return jax.ops.segment_sum(msg_ExF, shift.receivers_E, num_segments=n)
  num_edges = shift.weights_E.shape[0]
  if edge_chunk < 1 or num_edges % edge_chunk:
    raise ValueError(f"edge_chunk={edge_chunk} must divide the number of edges {num_edges}; "
                     "pad the edge list with reprojax.algorithms.gwcn.pad_edges")
  return _propagate_chunked(shift.senders_E, shift.receivers_E, w_E, x_NxF,
                            edge_chunk=int(edge_chunk))


@functools.partial(jax.jit, static_argnames=("edge_chunk",))
def _propagate_chunked(senders_E, receivers_E, w_E, x_NxF, edge_chunk):
  """``C = edge_chunk`` edges at a time scatter-added into one carried accumulator."""
  nc = w_E.shape[0] // edge_chunk
  s_CxK = senders_E.reshape(nc, edge_chunk)
  r_CxK = receivers_E.reshape(nc, edge_chunk)
  w_CxK = w_E.reshape(nc, edge_chunk)

  def body(c, acc_NxF):
    msg = w_CxK[c][:, None] * x_NxF.at[s_CxK[c]].get(mode="promise_in_bounds")
    return acc_NxF.at[r_CxK[c]].add(msg, mode="promise_in_bounds")

  return jax.lax.fori_loop(0, nc, body, jnp.zeros_like(x_NxF))
