"""The registered examples of ``reprojax.algorithms.policy_gradient``."""

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.policy_gradient import _grpo as g


def _logps(key, b=2, grp=4, t=5):
  k1, k2, k3 = jax.random.split(key, 3)
  logp = -jax.random.uniform(k1, (b, grp, t), minval=0.1, maxval=3.0)
  old = logp + 0.3 * jax.random.normal(k2, (b, grp, t))
  ref = logp + 0.3 * jax.random.normal(k3, (b, grp, t))
  return logp, old, ref


def _loss(logp, old, ref, rewards, mask):
  loss, aux = g.grpo_loss(logp, old, ref, rewards, mask, clip_eps=0.2, beta=0.04)
  return loss, aux.advantages_BxG, aux.kl


EXAMPLES = (
    Example("group_advantages", g.group_advantages,
            lambda key: (jax.random.bernoulli(key, 0.5, (3, 4)).astype(jnp.float32),),
            bad_args=(jnp.ones((4,)),)),
    Example("clipped_surrogate", g.clipped_surrogate,
            lambda key: _logps(key)[:2] + (jax.random.normal(key, (2, 4, 1)),),
            bad_args=(jnp.zeros((2, 4, 5)), jnp.zeros((2, 4, 6)), jnp.zeros((2, 4, 1))),
            broadcasts=True),
    Example("kl_estimate", g.kl_estimate, lambda key: (_logps(key)[0], _logps(key)[2]),
            bad_args=(jnp.zeros((2, 3)), jnp.zeros((3, 2)))),
    Example("grpo_loss", _loss,
            lambda key: _logps(key) + (
                jax.random.bernoulli(jax.random.fold_in(key, 1), 0.5, (2, 4)).astype(jnp.float32),
                jax.random.bernoulli(jax.random.fold_in(key, 2), 0.8, (2, 4, 5))),
            bad_args=(jnp.zeros((2, 4, 5)),) * 3 + (jnp.zeros((2, 3)), jnp.ones((2, 4, 5), bool))),
)
