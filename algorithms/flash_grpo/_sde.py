"""Flash-GRPO's pieces: the flow schedule, one SDE step of a flow model with its
log-probability, the single-SDE-step rollout, iso-temporal step sampling and temporal
gradient rectification.

Conventions. The suite's flow models (``algorithms.flow_matching``) run ``t`` from noise
(0) to data (1) with velocity ``v ~ x1 - x0``. Flow-GRPO and Flash-GRPO write the same path
with the noise level ``sigma = 1 - t`` (1: noise, 0: data) and the velocity
``u = x0 - x1 = -v``; the schedule is a decreasing list ``sigmas[0] > ... > sigmas[N] = 0``
and step ``k`` goes from ``sigmas[k]`` to ``sigmas[k + 1]`` (``dt = sigmas[k+1] - sigmas[k] < 0``).
Functions here take the suite's ``v`` and the paper's ``sigma``.

The SDE step (the reverse-time SDE with the flow's marginals, Flow-GRPO's discretisation):
with noise scale ``s_k = sigma_max sigma_k`` (``sigma_max = sigmas[1]`` in the public code;
``noise_schedule="flash"``) or Flow-GRPO's own ``s_k = a sqrt(sigma_k / (1 - sigma_k))``
(``a`` its ``noise_level``, 0.7; ``sigma_k = 1`` replaced by ``sigmas[1]`` in the
denominator; ``noise_schedule="flow_grpo"``, on Flow-GRPO's scheduler :func:`sd3_sigmas`),

    mean = x + (u + s_k^2 / (2 sigma_k) (x + (1 - sigma_k) u)) dt,   std = s_k sqrt(-dt),

and ``x' = mean + std eps``. Its log-density is Gaussian; the public code averages it over
the dimensions (``reduce="mean"``), which scales the PPO ratio's exponent by ``1 / D``.

Rectification. Per element, ``d log p / d u = -eps c_k`` with
``c_k = sqrt(-dt) / s_k + s_k sqrt(-dt) (1 - sigma_k) / (2 sigma_k)``, so the policy gradient
of a step scales with ``c_k``, which changes about twofold over the first half of the
schedule; Flash-GRPO weighs each sample's loss by ``1 / c_k`` divided by its batch mean
(:func:`rectification_weights`).

References:
  Flash-GRPO (ICML 2026; public code Shredded-Pork/Flash-GRPO, read for the formulas);
  Liu et al. Flow-GRPO: Training Flow Matching Models via Online RL, 2025.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms import policy_gradient as pg

REDUCTIONS = ("mean", "sum")
NOISE_SCHEDULES = ("flash", "flow_grpo")
VelocityFn = Callable[[jax.Array, jax.Array], jax.Array]  # (x_BxD, t_B) -> v_BxD


def flow_sigmas(num_steps: int, shift: float = 3.0) -> np.ndarray:
  """The decreasing noise levels ``(num_steps + 1,)`` of the shifted flow schedule (the
  UniPC flow schedule of diffusers with ``use_flow_sigmas``, ``final_sigmas_type="zero"``):
  ``num_steps`` levels from ``1 - 1/1000`` towards 0 spaced uniformly, each mapped by
  ``shift s / (1 + (shift - 1) s)``, then a final 0."""
  num_steps = _common.check_int("num_steps", num_steps, 1)
  if not (isinstance(shift, (int, float, np.floating)) and 0 < float(shift) < float("inf")):
    raise ValueError(f"shift must be a finite number > 0, got {shift!r}")
  s = 1.0 - np.linspace(1.0, 1.0 / 1000, num_steps + 1)
  s = np.flip(shift * s / (1.0 + (shift - 1.0) * s))[:-1]
  return np.concatenate([s, [0.0]]).astype(np.float32)


def sd3_sigmas(num_steps: int, shift: float = 3.0) -> np.ndarray:
  """Flow-GRPO's noise levels ``(num_steps + 1,)``: diffusers' flow-matching Euler scheduler
  of SD3.5 (``shift`` 3). Its training levels ``i / 1000`` (``i = 1..1000``) are shifted by
  ``shift s / (1 + (shift - 1) s)``; ``num_steps`` levels spaced uniformly between the
  shifted ends (1 and ``shift(1/1000)``) are shifted once more, then a final 0. The first
  level is exactly 1 (where Flow-GRPO's noise scale takes ``sigmas[1]``)."""
  num_steps = _common.check_int("num_steps", num_steps, 1)
  if not (isinstance(shift, (int, float, np.floating)) and 0 < float(shift) < float("inf")):
    raise ValueError(f"shift must be a finite number > 0, got {shift!r}")
  warp = lambda s: shift * s / (1.0 + (shift - 1.0) * s)  # pylint: disable=unnecessary-lambda-assignment
  s = warp(np.linspace(1.0, warp(1.0 / 1000), num_steps))
  return np.concatenate([s, [0.0]]).astype(np.float32)


def _check_noise(noise_schedule: str, noise_level: float) -> None:
  if noise_schedule not in NOISE_SCHEDULES:
    raise ValueError(f"noise_schedule must be one of {NOISE_SCHEDULES}, got {noise_schedule!r}")
  if not (isinstance(noise_level, (int, float, np.floating))
          and 0 < float(noise_level) < float("inf")):
    raise ValueError(f"noise_level must be a finite number > 0, got {noise_level!r}")


def _noise_scale(sig, s_cur, noise_schedule, noise_level):
  """``s_k`` at the levels ``s_cur``: Flash-GRPO's ``sigmas[1] sigma_k`` or Flow-GRPO's
  ``a sqrt(sigma_k / (1 - sigma_k))`` (``sigmas[1]`` for ``sigma_k = 1`` below the line)."""
  if noise_schedule == "flash":
    return sig[1] * s_cur
  return noise_level * jnp.sqrt(s_cur / (1.0 - jnp.where(s_cur == 1.0, sig[1], s_cur)))


def noise_scales(sigmas: jax.Array, noise_schedule: str = "flash", noise_level: float = 0.7
                 ) -> jax.Array:
  """``s_k`` of every step that can be an SDE step, ``(N - 1,)`` (``sigmas[k+1] > 0``)."""
  sig = _check_sigmas(sigmas)
  _check_noise(noise_schedule, noise_level)
  return _noise_scale(sig, sig[:-2], noise_schedule, float(noise_level))


def _check_sigmas(sigmas) -> jax.Array:
  sig = jnp.asarray(sigmas)
  if sig.ndim != 1 or sig.shape[0] < 2:
    raise ValueError(f"sigmas must be a 1-D schedule of at least two levels, got shape "
                     f"{sig.shape}")
  if _common.is_concrete(sig):
    a = np.asarray(sig)
    _common.check_finite("sigmas", a)
    if not (np.all(np.diff(a) < 0) and a[0] <= 1.0 and a[-1] >= 0.0):
      raise ValueError(f"sigmas must decrease strictly within [0, 1], got {a.tolist()}")
  return sig.astype(jnp.float32)


def _check_index(k, num_levels: int, name: str = "k"):
  """``k`` must index a step whose next level is above 0: ``0 <= k < num_levels - 2``."""
  if _common.is_concrete(k):
    a = np.asarray(k)
    if not np.issubdtype(a.dtype, np.integer):
      raise ValueError(f"{name} must hold integer step indices, got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() >= num_levels - 2):
      raise ValueError(f"{name} must lie in [0, {num_levels - 2}) (an SDE step needs "
                       f"sigmas[k + 1] > 0), got values in [{a.min()}, {a.max()}]")
  return jnp.asarray(k, jnp.int32)


class Transition(NamedTuple):
  mean: jax.Array  # (..., D)
  std: jax.Array  # (...,) per sample
  c: jax.Array  # (...,) the step's gradient scale c_k


def sde_transition(x_BxD: jax.Array, v_BxD: jax.Array, sigmas: jax.Array, k_B: jax.Array,
                   noise_schedule: str = "flash", noise_level: float = 0.7) -> Transition:
  """The SDE step ``k`` from ``x``: its Gaussian mean and std, and ``c_k`` (the step's
  gradient scale ``sqrt(-dt) / s_k + s_k sqrt(-dt) (1 - sigma_k) / (2 sigma_k)`` for the
  chosen noise scale ``s_k``)."""
  sig = _check_sigmas(sigmas)
  _check_noise(noise_schedule, noise_level)
  k = _check_index(k_B, sig.shape[0], "k_B")
  _common.check_finite("x_BxD", x_BxD)
  _common.check_finite("v_BxD", v_BxD)
  x, v = jnp.asarray(x_BxD, jnp.float32), jnp.asarray(v_BxD, jnp.float32)
  if x.shape != v.shape or x.shape[:-1] != k.shape:
    raise ValueError(f"x_BxD and v_BxD must share one shape (..., B, D) with k_B (..., B), got "
                     f"{x.shape}, {v.shape} and {k.shape}")
  return _sde_transition(x, v, sig, k, float(noise_level), noise_schedule=noise_schedule)


@functools.partial(jax.jit, static_argnames=("noise_schedule",))
def _sde_transition(x, v, sig, k, noise_level, noise_schedule="flash"):
  # one program (eagerly, one per operation); the values are checked by the caller
  s_cur, s_next = sig[k], sig[k + 1]
  dt = s_next - s_cur
  noise = _noise_scale(sig, s_cur, noise_schedule, noise_level)
  u = -v
  mean = x + (u + (noise ** 2 / (2 * s_cur))[..., None] * (x + (1 - s_cur)[..., None] * u)) \
      * dt[..., None]
  root = jnp.sqrt(-dt)
  c = root / noise + noise * root * (1 - s_cur) / (2 * s_cur)
  return Transition(mean, noise * root, c)


def gaussian_log_prob(x_next_BxD: jax.Array, t: Transition, reduce: str = "mean") -> jax.Array:
  """``log N(x_next; mean, std^2 I)`` per sample, averaged (public code) or summed over D."""
  if reduce not in REDUCTIONS:
    raise ValueError(f"reduce must be one of {REDUCTIONS}, got {reduce!r}")
  _common.check_finite("x_next_BxD", x_next_BxD)
  x = jnp.asarray(x_next_BxD, jnp.float32)
  if x.shape != t.mean.shape:
    raise ValueError(f"x_next_BxD must have the transition's shape {t.mean.shape}, got {x.shape}")
  std = t.std[..., None]
  lp = -jnp.square(x - t.mean) / (2 * std ** 2) - jnp.log(std) - 0.5 * jnp.log(2 * jnp.pi)
  return jnp.mean(lp, axis=-1) if reduce == "mean" else jnp.sum(lp, axis=-1)


def rectification_coefficients(sigmas: jax.Array) -> jax.Array:
  """``c_k`` of every step that can be an SDE step, ``(N - 1,)`` (``sigmas[k+1] > 0``)."""
  return _rectification_coefficients(_check_sigmas(sigmas))


@jax.jit
def _rectification_coefficients(sig):
  k = jnp.arange(sig.shape[0] - 2)
  dt = sig[k + 1] - sig[k]
  noise = sig[1] * sig[k]
  root = jnp.sqrt(-dt)
  return root / noise + noise * root * (1 - sig[k]) / (2 * sig[k])


def rectification_weights(k_B: jax.Array, sigmas: jax.Array) -> jax.Array:
  """Each sample's loss weight ``(1 / c_k) / mean_batch(1 / c_k)`` (mean 1 over the batch)."""
  sig = _check_sigmas(sigmas)
  k = _check_index(k_B, sig.shape[0], "k_B")
  inv = 1.0 / rectification_coefficients(sig)[k]
  return inv / jnp.mean(inv)


def sample_sde_steps(key: jax.Array, num_prompts: int, group: int, high: int, *,
                     iso_temporal: bool = True) -> jax.Array:
  """The SDE step of every sample ``(P, G)``, uniform in ``[0, high)``: one per prompt shared
  by its group (iso-temporal grouping) or one per sample."""
  key = _common.check_key("key", key)
  num_prompts = _common.check_int("num_prompts", num_prompts, 1)
  group = _common.check_int("group", group, 2)
  high = _common.check_int("high", high, 1)
  if iso_temporal:
    k = jax.random.randint(key, (num_prompts, 1), 0, high)
    return jnp.broadcast_to(k, (num_prompts, group))
  return jax.random.randint(key, (num_prompts, group), 0, high)


class Rollout(NamedTuple):
  x_final_BxD: jax.Array  # the sample at sigma = 0
  x_k_BxD: jax.Array  # the state before the SDE step
  x_next_BxD: jax.Array  # the state after it
  log_prob_B: jax.Array  # the SDE step's log-probability under the sampling policy


def single_sde_rollout(velocity_fn: VelocityFn, noise_BxD: jax.Array, sigmas: jax.Array,
                       k_B: jax.Array, key: jax.Array, reduce: str = "mean") -> Rollout:
  """Integrates from noise with Euler ODE steps, except one SDE step at ``k_B`` per sample;
  keeps that transition and its log-probability (Flash-GRPO's rollout).

  ``velocity_fn(x, t)`` is the suite's (``t = 1 - sigma``); it must be hashable (a static
  argument of the jitted loop: pass the same function to reuse the compiled program).
  """
  sig = _check_sigmas(sigmas)
  k = _check_index(k_B, sig.shape[0], "k_B")
  key = _common.check_key("key", key)
  _common.check_finite("noise_BxD", noise_BxD)
  x0 = jnp.asarray(noise_BxD, jnp.float32)
  if x0.ndim < 1 or x0.shape[-1] < 1:
    raise ValueError(f"noise_BxD must have at least one dimension D, got shape {x0.shape}")
  if x0.shape[:-1] != k.shape:
    raise ValueError(f"noise_BxD (..., B, D) and k_B (..., B) must share their batch shape, "
                     f"got {x0.shape} and {k.shape}")
  if reduce not in REDUCTIONS:
    raise ValueError(f"reduce must be one of {REDUCTIONS}, got {reduce!r}")
  return Rollout(*_rollout(velocity_fn, x0, sig, k, key, reduce))


@functools.partial(jax.jit, static_argnums=(0, 5))
def _rollout(velocity_fn, x0, sig, k, key, reduce):
  # jitted with the velocity function static, as flow_matching.euler_sample: an eager caller
  # passing the same function again reuses the program
  eps = jax.random.normal(key, x0.shape, jnp.float32)

  def step(i, carry):
    x, xk, xn, lp = carry
    t = jnp.broadcast_to(1.0 - sig[i], x.shape[:-1])
    v = velocity_fn(x, t)
    ode = x - (sig[i + 1] - sig[i]) * v  # x + dt u with u = -v
    tr = sde_transition(x, v, sig, jnp.broadcast_to(jnp.minimum(i, sig.shape[0] - 3),
                                                    k.shape))
    sde = tr.mean + tr.std[..., None] * eps
    here = (k == i)
    x_new = jnp.where(here[..., None], sde, ode)
    xk = jnp.where(here[..., None], x, xk)
    xn = jnp.where(here[..., None], sde, xn)
    lp = jnp.where(here, gaussian_log_prob(sde, tr, reduce), lp)
    return x_new, xk, xn, lp

  init = (x0, x0, x0, jnp.zeros(k.shape, jnp.float32))
  return jax.lax.fori_loop(0, sig.shape[0] - 1, step, init)


class Trajectory(NamedTuple):
  states_NxBxD: jax.Array  # x before each step (N of them) ...
  x_final_BxD: jax.Array  # ... and the sample at sigma = 0
  log_probs_NxB: jax.Array  # each SDE step's log-probability (0 for an ODE step)


def sde_trajectory(velocity_fn: VelocityFn, noise_BxD: jax.Array, sigmas: jax.Array,
                   sde_N: jax.Array, key: jax.Array, reduce: str = "mean",
                   noise_schedule: str = "flash", noise_level: float = 0.7) -> Trajectory:
  """The full-trajectory rollout of Flow-GRPO: step ``i`` is an SDE step where ``sde_N[i]``
  (else an Euler ODE step), every state and log-probability kept, so any step can be
  trained. ``sde_N`` must leave the last step (to ``sigma = 0``, zero noise) an ODE step
  (Flow-GRPO's sampler adds noise there too, and does not train that step). The SDE steps'
  noise scale is Flash-GRPO's (``"flash"``) or Flow-GRPO's (``"flow_grpo"``, with its
  ``noise_level``; use it on :func:`sd3_sigmas`, Flow-GRPO's scheduler)."""
  sig = _check_sigmas(sigmas)
  _check_noise(noise_schedule, noise_level)
  n = sig.shape[0] - 1
  key = _common.check_key("key", key)
  mask = jnp.asarray(sde_N)
  if mask.shape != (n,):
    raise ValueError(f"sde_N must mark each of the {n} steps, got shape {mask.shape}")
  if _common.is_concrete(mask) and bool(np.asarray(mask)[-1]):
    raise ValueError("sde_N must leave the last step an ODE step (its next sigma is 0)")
  _common.check_finite("noise_BxD", noise_BxD)
  x0 = jnp.asarray(noise_BxD, jnp.float32)
  if x0.ndim != 2 or x0.shape[-1] < 1:
    raise ValueError(f"noise_BxD must be (B, D) with D >= 1, got shape {x0.shape}")
  if reduce not in REDUCTIONS:
    raise ValueError(f"reduce must be one of {REDUCTIONS}, got {reduce!r}")
  states, x, lps = _trajectory(velocity_fn, x0, sig, mask.astype(bool), key, reduce,
                               noise_schedule, float(noise_level))
  return Trajectory(states, x, lps)


@functools.partial(jax.jit, static_argnums=(0, 5, 6, 7))
def _trajectory(velocity_fn, x0, sig, mask, key, reduce, noise_schedule, noise_level):
  n = sig.shape[0] - 1

  def step(x, inputs):
    i, use_sde, k_i = inputs
    t = jnp.broadcast_to(1.0 - sig[i], x.shape[:-1])
    v = velocity_fn(x, t)
    ode = x - (sig[i + 1] - sig[i]) * v
    tr = sde_transition(x, v, sig, jnp.broadcast_to(jnp.minimum(i, n - 2), x.shape[:-1]),
                        noise_schedule, noise_level)
    sde = tr.mean + tr.std[..., None] * jax.random.normal(k_i, x.shape, jnp.float32)
    x_new = jnp.where(use_sde, sde, ode)
    lp = jnp.where(use_sde, gaussian_log_prob(sde, tr, reduce), 0.0)
    return x_new, (x, lp)

  x, (states, lps) = jax.lax.scan(step, x0, (jnp.arange(n), mask, jax.random.split(key, n)))
  return states, x, lps


def step_log_prob(velocity_fn: VelocityFn, x_k_BxD: jax.Array, x_next_BxD: jax.Array,
                  sigmas: jax.Array, k_B: jax.Array, reduce: str = "mean",
                  noise_schedule: str = "flash", noise_level: float = 0.7) -> jax.Array:
  """The log-probability ``(B,)`` of the stored transition ``x_k -> x_next`` at step ``k``
  under ``velocity_fn`` (with the noise scale that sampled it, as :func:`sde_trajectory`):
  the differentiable quantity every arm trains (the policy's ``log p`` in the GRPO
  ratio)."""
  sig = _check_sigmas(sigmas)
  k = _check_index(k_B, sig.shape[0], "k_B")
  _common.check_finite("x_k_BxD", x_k_BxD)
  xk = jnp.asarray(x_k_BxD, jnp.float32)
  if xk.ndim < 1 or xk.shape[:-1] != k.shape or jnp.shape(x_next_BxD) != xk.shape:
    raise ValueError(f"x_k_BxD and x_next_BxD must share one shape (..., B, D) with k_B (..., B),"
                     f" got {xk.shape}, {jnp.shape(x_next_BxD)} and {k.shape}")
  v = velocity_fn(xk, 1.0 - sig[k])
  return gaussian_log_prob(x_next_BxD, sde_transition(x_k_BxD, v, sig, k, noise_schedule,
                                                     noise_level), reduce)


def sliding_window(iteration: int, window: int, num_steps: int, stride: int = 1) -> np.ndarray:
  """The steps a sliding-window baseline trains at ``iteration``: ``window`` consecutive
  steps starting at ``(iteration * stride) mod (num_steps - window + 1)``, over the
  ``num_steps`` steps that can be SDE steps."""
  iteration = _common.check_int("iteration", iteration, 0)
  window = _common.check_int("window", window, 1)
  num_steps = _common.check_int("num_steps", num_steps, 1)
  stride = _common.check_int("stride", stride, 1)
  if window > num_steps:
    raise ValueError(f"window={window} exceeds the {num_steps} steps it slides over")
  start = (iteration * stride) % (num_steps - window + 1)
  return np.arange(start, start + window)


ADVANTAGES = ("global_std", "group_std")


def public_advantages(rewards_PxG: jax.Array, eps: float = 1e-4, bound: float = 5.0
                      ) -> jax.Array:
  """The public code's advantages: reward minus its prompt's mean, over the standard
  deviation of every reward in the batch (plus ``eps``), clipped to ``[-bound, bound]``."""
  r = jnp.asarray(rewards_PxG, jnp.float32)
  if r.ndim != 2:
    raise ValueError(f"rewards_PxG must be (prompts, group), got shape {r.shape}")
  _common.check_finite("rewards_PxG", r)
  a = (r - jnp.mean(r, axis=1, keepdims=True)) / (jnp.std(r) + eps)
  return jnp.clip(a, -bound, bound)


def flash_grpo_loss(log_prob_PxG: jax.Array, old_log_prob_PxG: jax.Array,
                    rewards_PxG: jax.Array, k_PxG: jax.Array, sigmas: jax.Array, *,
                    clip_eps: float = 1e-3, rectify: bool = True,
                    advantages: str = "global_std") -> jax.Array:
  """The single-step loss: PPO's clipped ratio on each sample's SDE step with its advantage
  (``"global_std"``: :func:`public_advantages`; ``"group_std"``: GRPO's per-group
  standardisation), weighted by :func:`rectification_weights` (``rectify``) or not; the
  mean over samples (no KL, as the public configuration)."""
  if advantages not in ADVANTAGES:
    raise ValueError(f"advantages must be one of {ADVANTAGES}, got {advantages!r}")
  for name, x in (("log_prob_PxG", log_prob_PxG), ("old_log_prob_PxG", old_log_prob_PxG),
                  ("rewards_PxG", rewards_PxG)):
    _common.check_finite(name, x)
  k_PxG = jnp.asarray(k_PxG)
  lp = jnp.asarray(log_prob_PxG)
  if lp.ndim != 2 or lp.shape[1] < 2:
    raise ValueError(f"log_prob_PxG must be (prompts, group) with a group of at least 2, got "
                     f"shape {lp.shape}")
  for name, x in (("old_log_prob_PxG", old_log_prob_PxG), ("rewards_PxG", rewards_PxG),
                  ("k_PxG", k_PxG)):
    if jnp.shape(x) != lp.shape:
      raise ValueError(f"{name} must have log_prob_PxG's shape {lp.shape}, got {jnp.shape(x)}")
  sig = _check_sigmas(sigmas)
  k = _check_index(k_PxG, sig.shape[0], "k_PxG")
  _common.check_in_range("clip_eps", clip_eps, 0.0, 1.0, lo_open=True, hi_open=True)
  return _flash_grpo_loss(lp, jnp.asarray(old_log_prob_PxG), jnp.asarray(rewards_PxG), k, sig,
                          clip_eps, rectify=bool(rectify), advantages=advantages)


@functools.partial(jax.jit, static_argnames=("rectify", "advantages"))
def _flash_grpo_loss(lp, old_log_prob_PxG, rewards_PxG, k_PxG, sigmas, clip_eps, *, rectify,
                     advantages):
  """:func:`flash_grpo_loss` once its arguments are checked: one program, eagerly as under jit."""
  adv = jax.lax.stop_gradient(public_advantages(rewards_PxG) if advantages == "global_std"
                              else pg.group_advantages(rewards_PxG))
  surr = pg.clipped_surrogate(lp, old_log_prob_PxG, adv, clip_eps=clip_eps)
  if rectify:
    w = jax.lax.stop_gradient(rectification_weights(jnp.ravel(k_PxG), sigmas)).reshape(lp.shape)
  else:
    w = jnp.ones_like(lp)
  return -jnp.mean(w * surr)
