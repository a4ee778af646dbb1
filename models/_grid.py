"""Input handling shared by the neural operators: channel axis and grid coordinates."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def with_channels(a: jax.Array, dims: int, name: str) -> jax.Array:
  """``a`` as ``(B, *spatial, C)``: adds a channel axis to ``(B, *spatial)``; validates rank."""
  if a.ndim == dims + 1:
    a = a[..., None]
  if a.ndim != dims + 2:
    raise ValueError(f"{name}{dims}d expects (B, {dims} spatial axes[, C]), got shape {a.shape}")
  return a


def coordinates(spatial: tuple[int, ...], dtype) -> jax.Array:
  """Grid coordinates in [0, 1] of a ``spatial`` grid, shape ``(*spatial, len(spatial))``."""
  grids = jnp.meshgrid(*[jnp.linspace(0.0, 1.0, s, dtype=dtype) for s in spatial], indexing="ij")
  return jnp.stack(grids, -1)
