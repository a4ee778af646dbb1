"""Small MLPs for flow and diffusion models on low-dimensional data: a class-conditional
velocity (or noise) network and a distributional value head over noisy states.

The 2-D half of the suite's conditional flow network (``STYLE.md``, "One of each"; the
image half is :mod:`reprojax.models.cond_unet`): ``v(x_t, t, label)`` for
:mod:`reprojax.algorithms.flow_matching`'s convention (``t = 0`` noise, ``t = 1`` data).
The input is ``x`` concatenated with the sinusoidal embedding of ``t`` (the U-Net's,
:func:`reprojax.models.cond_unet.time_embedding`) and a learned embedding of the label;
label ``num_classes`` is the null label of classifier-free guidance. With ``cond_dim > 0``
the network also takes a continuous condition ``cond_BxC`` (DynaDiff's prompt features),
embedded by a two-layer GELU MLP of width ``label_dim`` and concatenated likewise. Hidden
layers are SiLU MLP layers; the output layer starts at zero, so an untrained model's flow
is still.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from reprojax.models import cond_unet


class CondFlowMLP(nn.Module):
  """``CondFlowMLP(num_classes).apply(params, x_BxD, t_B, label_B) -> v_BxD``;
  ``CondFlowMLP(num_classes, cond_dim=C).apply(params, x_BxD, t_B, label_B, cond_BxC)``."""

  num_classes: int
  hidden: Sequence[int] = (128, 128, 128)
  time_dim: int = 32
  label_dim: int = 32
  cond_dim: int = 0  # width of an optional continuous condition (0: none)

  @nn.compact
  def __call__(self, x_BxD: jax.Array, t_B: jax.Array, label_B: jax.Array,
               cond_BxC: jax.Array | None = None) -> jax.Array:
    if jnp.ndim(x_BxD) != 2 or jnp.shape(t_B) != jnp.shape(x_BxD)[:1] or \
        jnp.shape(label_B) != jnp.shape(x_BxD)[:1]:
      raise ValueError(f"x_BxD must be (B, D) with t_B and label_B of shape (B,), got "
                       f"{jnp.shape(x_BxD)}, {jnp.shape(t_B)} and {jnp.shape(label_B)}")
    if not jnp.issubdtype(jnp.result_type(label_B), jnp.integer):
      raise ValueError(f"label_B must hold integer labels, got {jnp.result_type(label_B)}")
    emb_t = cond_unet.time_embedding(jnp.asarray(t_B, jnp.float32), self.time_dim)
    emb_y = nn.Embed(self.num_classes + 1, self.label_dim, name="label")(label_B)
    parts = [x_BxD, emb_t, emb_y]
    if (cond_BxC is None) != (self.cond_dim == 0) or (
        cond_BxC is not None and jnp.shape(cond_BxC) != (jnp.shape(x_BxD)[0], self.cond_dim)):
      raise ValueError(f"cond_BxC must be (B, {self.cond_dim}) for cond_dim={self.cond_dim} "
                       f"(None when 0), got {None if cond_BxC is None else jnp.shape(cond_BxC)}")
    if cond_BxC is not None:
      c = nn.gelu(nn.Dense(self.label_dim, name="cond_0")(cond_BxC))
      parts.append(nn.Dense(self.label_dim, name="cond_1")(c))
    h = jnp.concatenate(parts, axis=-1)
    for i, width in enumerate(self.hidden):
      h = nn.silu(nn.Dense(width, name=f"dense_{i}")(h))
    return nn.Dense(x_BxD.shape[-1], kernel_init=nn.initializers.zeros, name="out")(h)


class ValueDistributionMLP(nn.Module):
  """``ValueDistributionMLP(num_atoms).apply(params, x_BxD, t_B) -> logits_BxA``: a
  distributional value head over noisy states, the categorical distribution of a terminal
  return given ``(x_t, t)`` (``t`` in [0, 1], the same sinusoidal embedding as
  :class:`CondFlowMLP`). The output layer starts at zero: an untrained head is uniform
  over the atoms."""

  num_atoms: int
  hidden: Sequence[int] = (128, 128)
  time_dim: int = 32

  @nn.compact
  def __call__(self, x_BxD: jax.Array, t_B: jax.Array) -> jax.Array:
    if jnp.ndim(x_BxD) != 2 or jnp.shape(t_B) != jnp.shape(x_BxD)[:1]:
      raise ValueError(f"x_BxD must be (B, D) with t_B of shape (B,), got "
                       f"{jnp.shape(x_BxD)} and {jnp.shape(t_B)}")
    if self.num_atoms < 2:
      raise ValueError(f"num_atoms must be >= 2, got {self.num_atoms}")
    emb_t = cond_unet.time_embedding(jnp.asarray(t_B, jnp.float32), self.time_dim)
    h = jnp.concatenate([x_BxD, emb_t], axis=-1)
    for i, width in enumerate(self.hidden):
      h = nn.silu(nn.Dense(width, name=f"dense_{i}")(h))
    return nn.Dense(self.num_atoms, kernel_init=nn.initializers.zeros, name="out")(h)
