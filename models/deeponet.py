"""DeepONet (Lu et al., 2021) on a fixed grid: branch MLP over the input field, trunk MLP over coordinates.

    G(a)(y) = sum_p b_p(a) t_p(y) + b_0,   b = Branch(flatten a),   t = Trunk(y)

The branch sees the whole input (all channels at all grid points, flattened), so
derivative channels enter as extra sensor values. The trunk evaluates at the grid
points (the output grid is the input grid).

Shapes: ``a_BxS(xC)`` (1D) or ``a_BxHxW(xC)`` (2D); output ``(B, *grid)``.

References:
  Lu, Jin, Pang, Zhang, Karniadakis. Learning nonlinear operators via DeepONet based
  on the universal approximation theorem of operators. Nature Machine Intelligence, 2021.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from reprojax.models import _grid


class DeepONet(nn.Module):
  dims: int = 1  # spatial dimensions
  branch: Sequence[int] = (128, 128)  # hidden widths of the branch net
  trunk: Sequence[int] = (128, 128)  # hidden widths of the trunk net
  basis: int = 64  # p, number of basis functions

  @nn.compact
  def __call__(self, a: jax.Array) -> jax.Array:
    d = self.dims
    a = _grid.with_channels(a, d, "DeepONet")
    spatial = a.shape[1:-1]
    b = a.reshape(a.shape[0], -1)
    for i, w in enumerate(self.branch):
      b = nn.gelu(nn.Dense(w, name=f"branch_{i}")(b))
    b = nn.Dense(self.basis, name="branch_out")(b)
    t = _grid.coordinates(spatial, a.dtype).reshape(-1, d)
    # Periodic-friendly trunk input: the coordinates and their first Fourier features.
    t = jnp.concatenate([t, jnp.sin(2 * jnp.pi * t), jnp.cos(2 * jnp.pi * t)], -1)
    for i, w in enumerate(self.trunk):
      t = nn.gelu(nn.Dense(w, name=f"trunk_{i}")(t))
    t = nn.gelu(nn.Dense(self.basis, name="trunk_out")(t))
    out = jnp.einsum("bp,gp->bg", b, t) + self.param("bias", nn.initializers.zeros, ())
    return out.reshape((a.shape[0],) + spatial)
