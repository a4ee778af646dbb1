"""The registered examples of ``reprojax.algorithms.flash_grpo``."""

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.flash_grpo import _sde as s

_SIGMAS = s.flow_sigmas(8, 3.0)
_HOST = dict(jittable=False, vmappable=False)


def _velocity(x, t):
  return -x * (1.0 + t[..., None])


def _transition(x, v, k):
  t = s.sde_transition(x, v, _SIGMAS, k)
  return t.mean, t.std, t.c


def _log_prob(x_next, x, v, k):
  return s.gaussian_log_prob(x_next, s.sde_transition(x, v, _SIGMAS, k))


def _rollout(noise, k, key):
  return tuple(s.single_sde_rollout(_velocity, noise, _SIGMAS, k, key))


def _k(key, n=3):
  return jax.random.randint(key, (n,), 0, 6)


EXAMPLES = (
    Example("flow_sigmas", lambda shift: s.flow_sigmas(10, shift), lambda key: (3.0,),
            bad_args=(-1.0,), **_HOST),
    Example("sd3_sigmas", lambda shift: s.sd3_sigmas(10, shift), lambda key: (3.0,),
            bad_args=(0.0,), **_HOST),
    Example("noise_scales", lambda sig: s.noise_scales(sig, "flow_grpo", 0.7),
            lambda key: (jnp.asarray(s.sd3_sigmas(8, 3.0)),),
            bad_args=(jnp.array([0.5, 0.9, 0.0]),), jittable=False),
    Example("sde_transition", _transition,
            lambda key: (jax.random.normal(key, (3, 4)), jax.random.normal(key, (3, 4)), _k(key)),
            bad_args=(jnp.zeros((3, 4)), jnp.zeros((3, 4)), jnp.array([0, 1, 7]))),
    Example("gaussian_log_prob", _log_prob,
            lambda key: (jax.random.normal(key, (3, 4)), jax.random.normal(key, (3, 4)),
                         jax.random.normal(jax.random.fold_in(key, 1), (3, 4)), _k(key)),
            bad_args=(jnp.zeros((3, 5)), jnp.zeros((3, 4)), jnp.zeros((3, 4)),
                      jnp.array([0, 1, 2]))),
    Example("rectification_coefficients", s.rectification_coefficients,
            lambda key: (jnp.asarray(_SIGMAS),), bad_args=(jnp.array([0.5, 0.9, 0.0]),),
            jittable=False),
    Example("rectification_weights", lambda k: s.rectification_weights(k, _SIGMAS),
            lambda key: (_k(key, 5),), bad_args=(jnp.array([0, 8]),)),
    Example("sample_sde_steps", lambda key, group: s.sample_sde_steps(key, 3, group, 5),
            lambda key: (key, 4), bad_args=(jax.random.key(0), 1), **_HOST),
    Example("single_sde_rollout", _rollout,
            lambda key: (jax.random.normal(key, (3, 4)), _k(key), jax.random.fold_in(key, 2)),
            bad_args=(jnp.zeros((3, 4)), jnp.array([0, 1, 9]), jax.random.key(0))),
    Example("sde_trajectory", lambda noise, key: tuple(s.sde_trajectory(
        _velocity, noise, _SIGMAS, jnp.arange(8) < 6, key)),
            lambda key: (jax.random.normal(key, (3, 4)), jax.random.fold_in(key, 2)),
            bad_args=(jnp.zeros((3, 0)), jax.random.key(0))),
    Example("step_log_prob", lambda xk, xn, k: s.step_log_prob(_velocity, xk, xn, _SIGMAS, k),
            lambda key: (jax.random.normal(key, (3, 4)),
                         jax.random.normal(jax.random.fold_in(key, 1), (3, 4)), _k(key)),
            bad_args=(jnp.zeros((3, 4)), jnp.zeros((3, 4)), jnp.array([0, 1, 7]))),
    Example("sliding_window", lambda it: s.sliding_window(it, 3, 10), lambda key: (4,),
            bad_args=(-1,), **_HOST),
    Example("public_advantages", s.public_advantages,
            lambda key: (jax.random.bernoulli(key, 0.5, (3, 4)).astype(jnp.float32),),
            bad_args=(jnp.zeros((4,)),)),
    Example("flash_grpo_loss",
            lambda lp, old, r, k: s.flash_grpo_loss(lp, old, r, k, _SIGMAS),
            lambda key: (-jax.random.uniform(key, (2, 4)), -jax.random.uniform(key, (2, 4)) - 0.01,
                         jax.random.uniform(jax.random.fold_in(key, 1), (2, 4)),
                         jax.random.randint(key, (2, 4), 0, 6)),
            bad_args=(jnp.zeros((2, 1)), jnp.zeros((2, 1)), jnp.zeros((2, 1)),
                      jnp.zeros((2, 1), jnp.int32))),
)
