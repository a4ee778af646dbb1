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

The authors' public notebooks 2 and 3 parametrise differently, and ``order_param="exp"``,
``scale_param="relu"`` reproduce it (1-D only): the orders are ``exp(gamma)`` with
``gamma`` the parameter (``log_beta``, started at log 1 and log 2), unbounded, and the
scales ``relu(s)`` started at 1, so a scale pushed below 0 switches its channel off
for good (no gradient reaches it or its order again). Their stencil is
``method="gl_centred"``. :func:`authors_optimizer` is their AdamW, one-cycle schedule
and gradient clipping.

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

ORDER_PARAMS = ("beta", "beta_x", "beta_y", "beta_mixed", "log_beta")
SCALE_PARAMS = ("scale", "scale_x", "scale_y", "scale_mixed")
ORDER_PARAMETRISATIONS = ("clip", "exp")
SCALE_PARAMETRISATIONS = ("linear", "relu")


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
  order_param: str = "clip"  # "clip": beta itself, clipped; "exp": beta = exp(log_beta) (authors')
  scale_param: str = "linear"  # "linear": s itself; "relu": relu(s) (authors')

  def _clip(self, b):
    return jnp.clip(b, self.beta_min, del_no_lib.BETA_MAX)

  @nn.compact
  def __call__(self, a: jax.Array) -> jax.Array:
    if self.dims not in (1, 2):
      raise ValueError(f"dims must be 1 or 2, got {self.dims}")
    if a.ndim != self.dims + 1:
      raise ValueError(f"DelNO with dims={self.dims} expects a (B, {self.dims} spatial axes) input, "
                       f"got shape {a.shape}")
    if self.order_param not in ORDER_PARAMETRISATIONS or self.scale_param not in SCALE_PARAMETRISATIONS:
      raise ValueError(f"order_param must be one of {ORDER_PARAMETRISATIONS} and scale_param one "
                       f"of {SCALE_PARAMETRISATIONS}, got {self.order_param!r}, {self.scale_param!r}")
    authors = (self.order_param, self.scale_param) != ("clip", "linear")
    if authors and self.dims != 1:
      raise ValueError("order_param='exp' and scale_param='relu' are the authors' 1-D notebooks' "
                       "parametrisation; 2-D inputs take the defaults")
    k = len(self.orders)
    init_b = lambda vals: (lambda key, shape: jnp.asarray(vals, jnp.float32))  # noqa: E731
    init_s = nn.initializers.constant(self.init_scale)
    kw = dict(method=self.method, gl_terms=self.gl_terms, boundary=self.boundary,
              include_h=False)
    if self.dims == 1:
      if self.order_param == "exp":
        if min(self.orders) <= 0:
          raise ValueError(f"order_param='exp' needs positive initial orders, got {self.orders}")
        beta = jnp.exp(self.param("log_beta", init_b(jnp.log(jnp.asarray(self.orders))), (k,)))
      else:
        beta = self._clip(self.param("beta", init_b(self.orders), (k,)))
      if self.init_scales is not None:
        init_s = init_b(self.init_scales)
      scale = self.param("scale", init_s, (k,))
      if self.scale_param == "relu":
        scale = jax.nn.relu(scale)
      feats = del_no_lib.derivative_features(a, beta, scale, **kw)
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


class ZeroChannels(nn.Module):
  """The backbone fed ``k`` all-zero channels beside the input: del-NO's fan-in, no derivatives.

  The control twin of a :class:`DelNO` with ``k`` channels: it holds the backbone under
  the same attribute name (``backbone``), so one seed gives both the same backbone
  initialisation (the lifting sees zeros where del-NO sees derivatives).
  """

  backbone: nn.Module
  k: int

  @nn.compact
  def __call__(self, a):
    zeros = jnp.zeros(a.shape + (self.k,), a.dtype)
    return self.backbone(jnp.concatenate([a[..., None], zeros], axis=-1))


def learned_orders(params: Any) -> dict[str, jax.Array]:
  """The orders of a DelNO's params, by name (``beta``, ``beta_x``, ...); ``exp(log_beta)``
  is returned as ``beta``. Unclipped: the forward pass clips the ``clip`` parametrisation."""
  flat = flax.traverse_util.flatten_dict(params)
  out = {path[-1]: v for path, v in flat.items() if path[-1] in ORDER_PARAMS}
  if "log_beta" in out:
    out["beta"] = jnp.exp(out.pop("log_beta"))
  return out


def learned_scales(params: Any) -> dict[str, jax.Array]:
  """The scale parameters (raw: before the ``relu`` of ``scale_param="relu"``), by name."""
  flat = flax.traverse_util.flatten_dict(params)
  return {path[-1]: v for path, v in flat.items() if path[-1] in SCALE_PARAMS}


def param_labels(params: Any, scales_with_orders: bool = False) -> Any:
  """``"orders"`` for the derivative orders (and scales, if asked), ``"network"`` for the rest."""
  flat = flax.traverse_util.flatten_dict(params)
  group = ORDER_PARAMS + (SCALE_PARAMS if scales_with_orders else ())
  return flax.traverse_util.unflatten_dict(
      {p: ("orders" if p[-1] in group else "network") for p in flat})


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


def authors_optimizer(steps: int, learning_rate: float = 1e-3, order_learning_rate: float = 1e-2,
                      weight_decay: float = 1e-5, pct_start: float = 0.1, div_factor: float = 25.0,
                      final_div_factor: float = 1e4, clip_norm: float = 1.0,
                      cycle_momentum: bool = True) -> optax.GradientTransformation:
  """The optimizer of the authors' notebooks 2 and 3, in optax.

  Gradients clipped to global norm ``clip_norm`` over all parameters, then AdamW in two
  groups: the network (``learning_rate``, ``weight_decay``) and the derivative orders
  *and* scales (``order_learning_rate``, no decay), each under PyTorch's ``OneCycleLR``
  with a per-group maximum (a list ``max_lr``, which keeps the 10x): from max / 25 up to
  max over ``pct_start`` of the steps (cosine), then down to max / 25 / 1e4 (cosine).
  With ``cycle_momentum`` Adam's beta1 moves the other way, 0.95 -> 0.85 -> 0.95, as
  ``OneCycleLR``'s default does. Use with ``param_labels(..., scales_with_orders=True)``
  (this function does so).
  """
  if steps < 2:
    raise ValueError(f"the one-cycle schedule needs at least 2 steps, got {steps}")

  def one_cycle(peak):
    return optax.cosine_onecycle_schedule(steps, peak, pct_start, div_factor, final_div_factor)

  def momentum(step):
    # PyTorch's anneal between max and base momentum, opposite to the rate.
    up = max(1.0, float(pct_start * steps) - 1.0)
    down = max(1.0, float(steps) - 1.0 - up)
    t = jnp.asarray(step, jnp.float32)
    first = 0.95 + (0.85 - 0.95) * (1 - jnp.cos(jnp.pi * jnp.minimum(t / up, 1.0))) / 2
    second = 0.85 + (0.95 - 0.85) * (1 - jnp.cos(jnp.pi * jnp.clip((t - up) / down, 0, 1))) / 2
    return jnp.where(t <= up, first, second)

  def group(peak, wd):
    b1 = momentum if cycle_momentum else 0.9
    return optax.inject_hyperparams(optax.adamw)(learning_rate=one_cycle(peak), b1=b1,
                                                 weight_decay=wd)

  return optax.chain(
      optax.clip_by_global_norm(clip_norm),
      optax.multi_transform({"network": group(learning_rate, weight_decay),
                             "orders": group(order_learning_rate, 0.0)},
                            lambda p: param_labels(p, scales_with_orders=True)))
