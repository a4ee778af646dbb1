"""Conditional flow matching (rectified flow) and its Euler sampler, as pure functions.

Convention: ``t = 0`` is noise ``x0 ~ N(0, I)``, ``t = 1`` is data ``x1``; the
path is the straight line ``x_t = (1 - t) x0 + t x1`` and the network learns the
velocity ``v(x_t, t) ~ x1 - x0`` (Lipman et al. 2023; Liu et al. 2023). Sampling
integrates ``dx/dt = v(x, t)`` from ``t = 0`` to ``1``. A velocity function is
``velocity_fn(x_BxD, t_B) -> (B, D)`` on flattened examples (an image model
reshapes inside it; leading batch axes before ``B`` are allowed throughout);
conditioning (a prompt, guidance) is closed over by the caller.

References:
  Lipman, Chen, Ben-Hamu, Nickel, Le. Flow Matching for Generative Modeling. ICLR 2023.
  Liu, Gong, Liu. Flow Straight and Fast: Learning to Generate and Transfer Data
  with Rectified Flow. ICLR 2023.
  Ho & Salimans. Classifier-Free Diffusion Guidance. 2022.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common

VelocityFn = Callable[[jax.Array, jax.Array], jax.Array]


def interpolate(x0_BxD: jax.Array, x1_BxD: jax.Array, t_B: jax.Array) -> jax.Array:
  """The straight path ``(1 - t) x0 + t x1`` ``(B, D)``."""
  a = _common.check_arrays({"x0_BxD": x0_BxD, "x1_BxD": x1_BxD, "t_B": t_B},
                           batch=("x0_BxD", "x1_BxD", "t_B"))
  x0, x1, t = a["x0_BxD"], a["x1_BxD"], a["t_B"]
  if x0.shape != x1.shape or x0.shape[:-1] != t.shape:
    raise ValueError(f"x0_BxD and x1_BxD must share one shape (..., B, D) with t_B (..., B), "
                     f"got {x0.shape}, {x1.shape} and {t.shape}")
  _common.check_in_range("t_B", t, 0.0, 1.0)
  return (1.0 - t[..., None]) * x0 + t[..., None] * x1


def flow_matching_loss(velocity_fn: VelocityFn, x1_BxD: jax.Array, key: jax.Array) -> jax.Array:
  """Per-example conditional flow-matching loss ``(B,)``: mean over D of ``(v - (x1 - x0))^2``.

  ``x0 ~ N(0, I)`` and ``t ~ U(0, 1)`` are drawn from ``key``.
  """
  x1 = _common.check_arrays({"x1_BxD": x1_BxD}, batch=("x1_BxD",))["x1_BxD"]
  key = _common.check_key("key", key)
  k0, kt = jax.random.split(key)
  dtype = jax.dtypes.canonicalize_dtype(x1.dtype)  # float64 only where x64 is on
  x0 = jax.random.normal(k0, x1.shape, dtype)
  t = jax.random.uniform(kt, x1.shape[:-1], dtype)
  v = velocity_fn(interpolate(x0, x1, t), t)
  return jnp.mean(jnp.square(v - (x1 - x0)), axis=-1)


def x1_prediction_loss(denoise_fn: VelocityFn, x1_BxD: jax.Array, key: jax.Array) -> jax.Array:
  """Per-example flow-matching loss in data prediction ``(B,)``: mean over D of
  ``(x1_hat(x_t, t) - x1)^2``, ``x0 ~ N(0, I)`` and ``t ~ U(0, 1)`` drawn from ``key``.

  The network ``denoise_fn(x_BxD, t_B)`` predicts the clean sample ``x1`` (DDPM's
  ``predict_xstart``) instead of the velocity; :func:`velocity_from_x1` turns its
  prediction into the velocity the sampler integrates. Where the data is (nearly) a
  function of the condition, as a generated network's weights are of its environment,
  the target does not depend on ``x_t`` and the network learns a regression, while the
  velocity target ``x1 - x0`` would have it recover ``x0`` from ``x_t``.
  """
  x1 = _common.check_arrays({"x1_BxD": x1_BxD}, batch=("x1_BxD",))["x1_BxD"]
  key = _common.check_key("key", key)
  k0, kt = jax.random.split(key)
  dtype = jax.dtypes.canonicalize_dtype(x1.dtype)
  x0 = jax.random.normal(k0, x1.shape, dtype)
  t = jax.random.uniform(kt, x1.shape[:-1], dtype)
  x1_hat = denoise_fn(interpolate(x0, x1, t), t)
  return jnp.mean(jnp.square(x1_hat - x1), axis=-1)


def velocity_from_x1(x1_hat_BxD: jax.Array, x_BxD: jax.Array, t_B: jax.Array,
                     min_gap: float = 1e-3) -> jax.Array:
  """The straight path's velocity from a data prediction: ``(x1_hat - x_t) / (1 - t)``,
  ``1 - t`` floored at ``min_gap`` (an Euler sampler never evaluates ``t = 1``)."""
  a = _common.check_arrays({"x1_hat_BxD": x1_hat_BxD, "x_BxD": x_BxD, "t_B": t_B},
                           batch=("x1_hat_BxD", "x_BxD", "t_B"))
  if jnp.shape(a["x1_hat_BxD"]) != jnp.shape(a["x_BxD"]):
    raise ValueError(f"x1_hat_BxD and x_BxD must share one shape, got "
                     f"{jnp.shape(a['x1_hat_BxD'])} and {jnp.shape(a['x_BxD'])}")
  gap = jnp.maximum(1.0 - a["t_B"], min_gap)[..., None]
  return (a["x1_hat_BxD"] - a["x_BxD"]) / gap


def guided_velocity(v_cond: jax.Array, v_uncond: jax.Array, scale: jax.Array) -> jax.Array:
  """Classifier-free guidance: ``v_uncond + scale (v_cond - v_uncond)`` (1: no guidance)."""
  a = _common.check_arrays({"v_cond": v_cond, "v_uncond": v_uncond, "scale": scale},
                           shapeless=("v_cond", "v_uncond"), scalars=("scale",))
  if jnp.shape(a["v_cond"]) != jnp.shape(a["v_uncond"]):
    raise ValueError(f"v_cond and v_uncond must share one shape, got {jnp.shape(a['v_cond'])} "
                     f"and {jnp.shape(a['v_uncond'])}")
  return a["v_uncond"] + a["scale"] * (a["v_cond"] - a["v_uncond"])


def euler_sample(velocity_fn: VelocityFn, x0_BxD: jax.Array, num_steps: int) -> jax.Array:
  """Integrates ``dx/dt = velocity_fn(x, t)`` from ``x0`` at ``t = 0`` to ``t = 1``.

  ``num_steps`` uniform Euler steps in one ``lax.fori_loop``; returns ``x`` at ``t = 1``.
  ``velocity_fn`` must be hashable (a function; it is a static argument of the
  jitted loop, so pass the same function to reuse the compiled program).
  """
  x0 = _common.check_arrays({"x0_BxD": x0_BxD}, batch=("x0_BxD",))["x0_BxD"]
  if int(num_steps) < 1:
    raise ValueError(f"num_steps must be >= 1, got {num_steps}")
  return _euler(velocity_fn, x0, int(num_steps))


@functools.partial(jax.jit, static_argnums=(0, 2))
def _euler(velocity_fn, x0, num_steps):
  # jitted with the velocity function static: an eager caller passing the same
  # function again reuses the program (a fresh lambda each call recompiles).
  dt = 1.0 / num_steps

  def step(i, x):
    t = jnp.full(x.shape[:-1], i * dt, x.dtype)
    return x + dt * velocity_fn(x, t)

  return jax.lax.fori_loop(0, num_steps, step, x0)
