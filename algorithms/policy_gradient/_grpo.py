"""Group-relative policy gradients: the suite's policy-gradient module ("One of each").

The GRPO objective of Shao et al. (2024) over groups of ``G`` samples per prompt, written
as pure functions of log-probabilities, so any policy (a language model's tokens, a flow
model's denoising steps) plugs in:

* :func:`group_advantages`: each sample's reward minus its group's mean, divided by the
  group's standard deviation (``scale="std"``, GRPO) or not (``scale="none"``, Dr. GRPO);
  a group whose rewards are all equal gets zero advantages;
* :func:`clipped_surrogate`: PPO's clipped ratio objective per step,
  ``min(rho A, clip(rho, 1 - eps, 1 + eps) A)`` with ``rho = exp(logp - logp_old)``;
* :func:`kl_estimate`: the ``k3`` estimator ``exp(q) - q - 1`` with ``q = logp_ref - logp``
  of ``KL(pi || pi_ref)`` per step, unbiased and non-negative, as GRPO penalises it;
* :func:`grpo_loss`: their combination, ``-(surrogate - beta KL)`` averaged over each
  sample's valid steps and then over samples (``"sample"`` normalisation), or over every
  valid step of the batch at once (``"token"``).

Shapes: ``B`` prompts, ``G`` samples per prompt, ``T`` steps (tokens) per sample;
``mask_BxGxT`` marks the valid steps.

References:
  Shao et al. DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language
  Models, 2024 (GRPO); Schulman et al. Proximal Policy Optimization Algorithms, 2017;
  Schulman, "Approximating KL divergence", 2020 (k3); Liu et al. Understanding R1-Zero-Like
  Training: A Critical Perspective, 2025 (Dr. GRPO: no std scaling, token normalisation).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common

SCALES = ("std", "none")
NORMALISATIONS = ("sample", "token")


class GrpoAux(NamedTuple):
  advantages_BxG: jax.Array
  surrogate: jax.Array  # mean clipped surrogate over valid steps (the normalisation's weights)
  kl: jax.Array  # mean k3 KL estimate over valid steps
  clipped_fraction: jax.Array  # share of valid steps whose ratio was clipped


def _float(name: str, x) -> jax.Array:
  """``x`` as a float array, refused (when concrete) if it holds NaN or infinity."""
  _common.check_finite(name, x)
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    x = x.astype(jnp.float32)
  return x


def group_advantages(rewards_BxG: jax.Array, *, scale: str = "std", eps: float = 1e-6
                     ) -> jax.Array:
  """``(r - mean_g r) / (std_g r + eps)`` per group (``scale="std"``), or ``r - mean_g r``."""
  if scale not in SCALES:
    raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
  r = _float("rewards_BxG", rewards_BxG)
  if r.ndim != 2 or r.shape[1] < 1:
    raise ValueError(f"rewards_BxG must be (prompts, group) with a group of at least one, got "
                     f"shape {r.shape}")
  _common.check_in_range("eps", eps, 0.0, lo_open=True)
  centred = r - jnp.mean(r, axis=1, keepdims=True)
  if scale == "none":
    return centred
  return centred / (jnp.std(r, axis=1, keepdims=True) + eps)


def clipped_surrogate(logp: jax.Array, logp_old: jax.Array, advantages: jax.Array, *,
                      clip_eps: float = 0.2) -> jax.Array:
  """PPO's per-step objective ``min(rho A, clip(rho, 1-eps, 1+eps) A)`` (to maximise);
  ``advantages`` broadcasts against the log-probabilities (a ``(B, G, 1)`` per sample)."""
  _common.check_in_range("clip_eps", clip_eps, 0.0, 1.0, lo_open=True, hi_open=True)
  logp, logp_old, a = (_float(n, x) for n, x in (("logp", logp), ("logp_old", logp_old),
                                                   ("advantages", advantages)))
  if logp.shape != logp_old.shape:
    raise ValueError(f"logp and logp_old must have one shape, got {logp.shape} and "
                     f"{logp_old.shape}")
  if a.ndim != logp.ndim or any(x not in (1, y) for x, y in zip(a.shape, logp.shape)):
    raise ValueError(f"advantages must have logp's rank and broadcast to its shape "
                     f"{logp.shape} (size 1 or equal per axis), got {a.shape}")
  ratio = jnp.exp(logp - logp_old)
  return jnp.minimum(ratio * a, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * a)


def kl_estimate(logp: jax.Array, logp_ref: jax.Array) -> jax.Array:
  """The k3 estimate ``exp(q) - q - 1``, ``q = logp_ref - logp``, of ``KL(pi || pi_ref)``
  per step, for steps sampled from ``pi``."""
  logp, logp_ref = _float("logp", logp), _float("logp_ref", logp_ref)
  if logp.shape != logp_ref.shape:
    raise ValueError(f"logp and logp_ref must have one shape, got {logp.shape} and "
                     f"{logp_ref.shape}")
  q = logp_ref - logp
  return jnp.exp(q) - q - 1.0


def grpo_loss(logp_BxGxT: jax.Array, logp_old_BxGxT: jax.Array, logp_ref_BxGxT: jax.Array,
              rewards_BxG: jax.Array, mask_BxGxT: jax.Array, *, clip_eps: float = 0.2,
              beta: float = 0.04, scale: str = "std", normalisation: str = "sample",
              eps: float = 1e-6) -> tuple[jax.Array, GrpoAux]:
  """The GRPO loss (to minimise) and its parts; see the module docstring.

  ``logp_BxGxT`` carries the gradient (the policy being trained); ``logp_old_BxGxT`` is the
  sampling policy's (pass ``stop_gradient(logp)`` for one on-policy step: the ratio is then
  1 and the gradient is the plain policy gradient ``-A grad logp``); ``logp_ref_BxGxT`` the
  reference policy's, for the KL penalty (``beta = 0``: none).
  """
  if normalisation not in NORMALISATIONS:
    raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
  if _common.is_concrete(beta) and not float(beta) >= 0:
    raise ValueError(f"beta must be >= 0, got {beta!r}")
  logp = _float("logp_BxGxT", logp_BxGxT)
  if logp.ndim != 3:
    raise ValueError(f"logp_BxGxT must be (prompts, group, steps), got shape {logp.shape}")
  for name, x in (("logp_old_BxGxT", logp_old_BxGxT), ("logp_ref_BxGxT", logp_ref_BxGxT),
                  ("mask_BxGxT", mask_BxGxT)):
    if jnp.shape(x) != logp.shape:
      raise ValueError(f"{name} must have logp_BxGxT's shape {logp.shape}, got {jnp.shape(x)}")
  if jnp.shape(rewards_BxG) != logp.shape[:2]:
    raise ValueError(f"rewards_BxG must have shape {logp.shape[:2]}, got "
                     f"{jnp.shape(rewards_BxG)}")
  old, ref = _float("logp_old_BxGxT", logp_old_BxGxT), _float("logp_ref_BxGxT", logp_ref_BxGxT)
  if scale not in SCALES:
    raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
  _common.check_in_range("clip_eps", clip_eps, 0.0, 1.0, lo_open=True, hi_open=True)
  _common.check_in_range("eps", eps, 0.0, lo_open=True)
  return _grpo_loss(logp, old, ref, _float("rewards_BxG", rewards_BxG),
                    jnp.asarray(mask_BxGxT).astype(logp.dtype), clip_eps, beta, eps,
                    scale=scale, normalisation=normalisation)


@functools.partial(jax.jit, static_argnames=("scale", "normalisation"))
def _grpo_loss(logp, logp_old_BxGxT, logp_ref_BxGxT, rewards_BxG, m, clip_eps, beta, eps, *,
               scale, normalisation):
  """:func:`grpo_loss` once its arguments are checked: one program, eagerly as under jit."""
  adv = jax.lax.stop_gradient(group_advantages(rewards_BxG, scale=scale, eps=eps))
  surr = clipped_surrogate(logp, logp_old_BxGxT, adv[..., None], clip_eps=clip_eps)
  kl = kl_estimate(logp, logp_ref_BxGxT)
  per_step = surr - beta * kl
  if normalisation == "sample":
    w = m / jnp.maximum(jnp.sum(m, axis=2, keepdims=True), 1.0)
    w = w / jnp.maximum(jnp.sum(jnp.any(m > 0, axis=2)), 1)
  else:
    w = m / jnp.maximum(jnp.sum(m), 1.0)
  ratio = jnp.exp(logp - _float("logp_old", logp_old_BxGxT))
  clipped = (ratio < 1 - clip_eps) | (ratio > 1 + clip_eps)
  aux = GrpoAux(adv, jnp.sum(w * surr), jnp.sum(w * kl),
                jnp.sum(m * clipped) / jnp.maximum(jnp.sum(m), 1.0))
  return -jnp.sum(w * per_step), aux
