"""Graph convolutional network (Flax Linen) over sparse padded edge lists or dense shifts.

A layer is a graph filter with ``num_taps`` taps (Ruiz, Chamon & Ribeiro 2020,
eq. (3)), followed by a pointwise nonlinearity:

    z_{l+1} = sigma( sum_{k=0}^{K-1} S^k z_l H_{l,k} + b_l ),

with ``S`` the graph shift operator. Which operator ``S`` is (the stretched GWCN
shift ``A / (n rho)`` or the normalised ``D^-1/2 (A + I) D^-1/2`` of a c-GCN) is
decided by the caller: build it with ``reprojax.algorithms.gwcn.gwcn_shift`` or
``reprojax.algorithms.gwcn.normalized_shift`` (sparse) or their ``*_dense`` twins. The
model never normalises on its own, so one set of parameters can be applied to a
graph of any size and to the graphon limit (a dense quadrature operator): that
is what size transfer means.

Sparse operators are a :class:`SparseOperator` of three length-``E`` arrays;
edges padded to a static ``E`` for ``jit`` carry weight 0 (any in-range indices).
``S x`` is computed as ``segment_sum(w_e * x[sender_e], receiver_e)``, i.e.
``(S x)_i = sum_{e: receiver_e = i} w_e x_{sender_e}``; an undirected graph lists
both directions of each edge. A dense operator is an ``N x N`` array used as
``S @ x``. The same parameters give the same output for the sparse and the
dense form of one operator (tested).

References:
  Kipf & Welling, "Semi-Supervised Classification with Graph Convolutional
  Networks", ICLR 2017. Ruiz, Chamon & Ribeiro, "Graphon Neural Networks and the
  Transferability of Graph Neural Networks", NeurIPS 2020.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax

from reprojax.algorithms.gwcn import propagate
from reprojax.algorithms.gwcn import Shift
from reprojax.algorithms.gwcn import SparseOperator


class GraphFilterLayer(nn.Module):
  """One graph filter ``sum_k S^k z H_k + b`` (no nonlinearity)."""

  features: int  # output features
  num_taps: int = 2  # K: powers S^0 .. S^{K-1}
  edge_chunk: int | None = None  # see propagate(); None = one segment_sum

  @nn.compact
  def __call__(self, x_NxF: jax.Array, shift: Shift) -> jax.Array:
    if self.num_taps < 1:
      raise ValueError(f"num_taps must be >= 1, got {self.num_taps}")
    out = nn.Dense(self.features, use_bias=True, name="tap_0")(x_NxF)
    z = x_NxF
    for k in range(1, self.num_taps):
      z = propagate(shift, z, self.edge_chunk)
      out = out + nn.Dense(self.features, use_bias=False, name=f"tap_{k}")(z)
    return out


class GCN(nn.Module):
  """A stack of graph filters with ReLU between them; the last layer is linear.

  ``model.apply(params, x_NxF, shift)`` with ``shift`` sparse or dense (see the
  module docstring). Parameters do not depend on the number of nodes.
  """

  features: Sequence[int]  # output width of each layer, e.g. (32, 32, num_classes)
  num_taps: int = 2  # taps per filter (1 = self only; 2 = self + one hop)
  edge_chunk: int | None = None  # edges per scatter-add chunk (large graphs); see propagate()

  @nn.compact
  def __call__(self, x_NxF: jax.Array, shift: Shift) -> jax.Array:
    if x_NxF.ndim != 2:
      raise ValueError(f"x_NxF must be 2-D (nodes x features), got shape {x_NxF.shape}")
    if not isinstance(shift, SparseOperator):
      if shift.shape != (x_NxF.shape[0], x_NxF.shape[0]):
        raise ValueError(f"dense shift must be {x_NxF.shape[0]}x{x_NxF.shape[0]}, "
                         f"got shape {shift.shape}")
    z = x_NxF
    for i, f in enumerate(self.features):
      z = GraphFilterLayer(f, self.num_taps, self.edge_chunk, name=f"layer_{i}")(z, shift)
      if i < len(self.features) - 1:
        z = nn.relu(z)
    return z


def layer_weights(params) -> list[list[jax.Array]]:
  """The tap matrices ``[[H_{l,0}, H_{l,1}, ...], ...]`` of a :class:`GCN`'s params."""
  p = params["params"] if "params" in params else params
  layers = sorted(p, key=lambda s: int(s.split("_")[1]))
  out = []
  for name in layers:
    taps = sorted(p[name], key=lambda s: int(s.split("_")[1]))
    out.append([p[name][t]["kernel"] for t in taps])
  return out


def layer_biases(params) -> list[jax.Array]:
  """The bias ``b_l`` of each layer of a :class:`GCN`'s params."""
  p = params["params"] if "params" in params else params
  layers = sorted(p, key=lambda s: int(s.split("_")[1]))
  return [p[name]["tap_0"]["bias"] for name in layers]
