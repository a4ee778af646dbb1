"""A U-Net neural operator in 1D and 2D: a small CNO-style convolutional encoder-decoder.

    v_0 = Lift([a, x]);  encoder: (conv3 -> gelu -> conv3 -> gelu, then stride-2 down) x levels
    bottleneck; decoder: (up x2, concat skip, conv3 -> gelu -> conv3 -> gelu) x levels;  u = Proj(v)

A simplification of the Convolutional Neural Operator (Raonic et al., NeurIPS 2023):
plain strided convolutions and nearest-neighbour upsampling instead of its
anti-aliased (filtered) up/down-sampling, and ``padding`` ("CIRCULAR" for periodic
1-D data, "SAME" otherwise). Channels double at each level. The grid sizes must
divide by ``2**levels``.

Shapes: ``a_BxSxC`` (1D) or ``a_BxHxWxC`` (2D); output ``(B, *grid)``.

References:
  Raonic, Molinaro, De Ryck, Rohner, Bartolucci, Alaifari, Mishra, de Bezenac.
  Convolutional Neural Operators for robust and accurate learning of PDEs. NeurIPS 2023.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from reprojax.models import _grid


class UNetOperator(nn.Module):
  dims: int = 1  # spatial dimensions
  width: int = 16  # channels at the finest level
  levels: int = 2  # number of down/up-sampling stages
  padding: str = "CIRCULAR"  # convolution padding: "CIRCULAR" (periodic) or "SAME"
  out_features: int = 1

  @nn.compact
  def __call__(self, a: jax.Array) -> jax.Array:
    d = self.dims
    a = _grid.with_channels(a, d, "UNetOperator")
    spatial = a.shape[1:-1]
    if any(s % 2**self.levels for s in spatial):
      raise ValueError(f"grid {spatial} must divide by 2**levels = {2**self.levels}")
    coords = jnp.broadcast_to(_grid.coordinates(spatial, a.dtype),
                              a.shape[:1] + spatial + (d,))
    k3 = (3,) * d

    def block(x, c, name):
      x = nn.gelu(nn.Conv(c, k3, padding=self.padding, name=f"{name}_a")(x))
      return nn.gelu(nn.Conv(c, k3, padding=self.padding, name=f"{name}_b")(x))

    x = nn.Dense(self.width, name="lift")(jnp.concatenate([a, coords], -1))
    skips = []
    for lvl in range(self.levels):
      x = block(x, self.width * 2**lvl, f"down{lvl}")
      skips.append(x)
      x = nn.Conv(self.width * 2**(lvl + 1), (2,) * d, strides=(2,) * d, padding="VALID",
                  name=f"pool{lvl}")(x)
    x = block(x, self.width * 2**self.levels, "mid")
    for lvl in reversed(range(self.levels)):
      for ax in range(1, d + 1):
        x = jnp.repeat(x, 2, axis=ax)
      x = block(jnp.concatenate([x, skips[lvl]], -1), self.width * 2**lvl, f"up{lvl}")
    x = nn.gelu(nn.Dense(2 * self.width, name="project_hidden")(x))
    x = nn.Dense(self.out_features, name="project_out")(x)
    return x[..., 0] if self.out_features == 1 else x
