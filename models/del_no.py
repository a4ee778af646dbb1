"""del-NO: learnable fractional derivative channels in front of any neural operator backbone.

    DelNO(a) = backbone( [a, s_1 D^{beta_1} a, ..., s_K D^{beta_K} a] )

The orders ``beta_k`` and scales ``s_k`` are parameters trained with the backbone
(the orders with a larger learning rate: :func:`optimizer` builds the
``optax.multi_transform`` that does so). 1-D inputs ``a_BxS`` get K directional
channels (the paper's K = 2, orders initialised at 1 and 2; K = 3 with 1, 2, 3 for
KdV); 2-D inputs ``a_BxHxW`` get K channels per axis plus one mixed partial
``s_xy D_x^{a} D_y^{b} a`` whose two orders share one scale (K = 2: 5 channels).
The derivative is :func:`reprojax.algorithms.del_no.fractional_derivative`, GL by default
with ``gl_terms=16`` and without the ``h^-beta`` factor (absorbed into ``s_k``).

``channel_gains`` (off by default) multiplies channel k by a constant c_k that is
not a parameter: ``c_k s_k D^{beta_k} a``. The experiment's ``channel_norm="rms"``
sets c_k = 1 / RMS of the channel over clean training inputs at the initial
orders, so every channel starts at unit size while s_k still starts at 1 (an
ablation of the channel scale; see experiments/del_no/README.md).

Orders are clipped to [beta_min, BETA_MAX] in the forward pass (the GL weights
are defined for any beta, the clip only keeps them in the validated range).

References:
  Mehouachi & Jabari, "Fractional is Better: Learnable Derivative Orders in Neural
  Operator Learning", ICML 2026.
"""

from __future__ import annotations

from typing import Any, Sequence

import flax.linen as nn
import flax.traverse_util
import jax
import jax.numpy as jnp
import optax

from reprojax.algorithms import del_no as del_no_lib

ORDER_PARAMS = ("beta", "beta_x", "beta_y", "beta_mixed")


class DelNO(nn.Module):
  """Derivative-augmented neural operator around ``backbone`` (a module taking (B, *grid, C))."""

  backbone: nn.Module
  orders: Sequence[float] = (1.0, 2.0)  # initial orders beta_k (per axis in 2D)
  dims: int = 1  # spatial dimensions of the input (1 or 2)
  mixed_orders: Sequence[float] = (1.0, 1.0)  # 2D: initial orders of the mixed partial
  method: str = "gl"  # "gl" or "spectral" (periodic only)
  gl_terms: int = 16
  boundary: str = "periodic"  # "periodic" or "zero" (GL on non-periodic domains)
  init_scale: float = 1.0  # initial s_k (all channels)
  init_scales: Sequence[float] | None = None  # 1D: per-channel initial s_k (overrides init_scale)
  channel_gains: Sequence[float] | None = None  # fixed (not learned) factor per channel (K; 2D 2K+1)
  beta_min: float = 0.0

  def _clip(self, b):
    return jnp.clip(b, self.beta_min, del_no_lib.BETA_MAX)

  @nn.compact
  def __call__(self, a: jax.Array) -> jax.Array:
    if self.dims not in (1, 2):
      raise ValueError(f"dims must be 1 or 2, got {self.dims}")
    if a.ndim != self.dims + 1:
      raise ValueError(f"DelNO with dims={self.dims} expects a (B, {self.dims} spatial axes) input, "
                       f"got shape {a.shape}")
    k = len(self.orders)
    init_b = lambda vals: (lambda key, shape: jnp.asarray(vals, jnp.float32))  # noqa: E731
    init_s = nn.initializers.constant(self.init_scale)
    kw = dict(method=self.method, gl_terms=self.gl_terms, boundary=self.boundary,
              include_h=False)
    if self.dims == 1:
      beta = self.param("beta", init_b(self.orders), (k,))
      if self.init_scales is not None:
        init_s = init_b(self.init_scales)
      scale = self.param("scale", init_s, (k,))
      feats = del_no_lib.derivative_features(a, self._clip(beta), scale, **kw)
    else:
      bx = self.param("beta_x", init_b(self.orders), (k,))
      by = self.param("beta_y", init_b(self.orders), (k,))
      sx = self.param("scale_x", init_s, (k,))
      sy = self.param("scale_y", init_s, (k,))
      bm = self.param("beta_mixed", init_b(self.mixed_orders), (2,))
      sm = self.param("scale_mixed", init_s, ())
      feats = del_no_lib.derivative_features_2d(a, self._clip(bx), self._clip(by), sx, sy,
                                                self._clip(bm), sm, **kw)
    if self.channel_gains is not None:
      if len(self.channel_gains) != feats.shape[-1]:
        raise ValueError(f"channel_gains has {len(self.channel_gains)} entries for "
                         f"{feats.shape[-1]} channels")
      feats = feats * jnp.asarray(self.channel_gains, feats.dtype)
    return self.backbone(jnp.concatenate([a[..., None], feats.astype(a.dtype)], axis=-1))


def learned_orders(params: Any) -> dict[str, jax.Array]:
  """The order parameters of a DelNO's params, by name (``beta``, ``beta_x``, ...)."""
  flat = flax.traverse_util.flatten_dict(params)
  return {path[-1]: v for path, v in flat.items() if path[-1] in ORDER_PARAMS}


def param_labels(params: Any) -> Any:
  """``"orders"`` for the derivative orders, ``"network"`` for everything else."""
  flat = flax.traverse_util.flatten_dict(params)
  return flax.traverse_util.unflatten_dict(
      {p: ("orders" if p[-1] in ORDER_PARAMS else "network") for p in flat})


def optimizer(learning_rate: float | optax.Schedule, order_lr_multiplier: float = 10.0,
              weight_decay: float = 0.0) -> optax.GradientTransformation:
  """Adam on the network and Adam with ``order_lr_multiplier`` x the rate on the orders.

  Weight decay applies to the network only (decaying the orders would pull them to 0).
  """
  if callable(learning_rate):
    order_lr = lambda step: order_lr_multiplier * learning_rate(step)  # noqa: E731
  else:
    order_lr = order_lr_multiplier * learning_rate
  return optax.multi_transform(
      {"network": optax.adamw(learning_rate, weight_decay=weight_decay),
       "orders": optax.adam(order_lr)},
      param_labels)
