"""The registered examples of ``reprojax.algorithms.vrpo``."""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.vrpo import _core as c

_SCHED = c.schedule(6, sigma_max=10.0)
_HOST = dict(jittable=False, vmappable=False)
_MEANS = np.array([[1.0, 0.0], [-1.0, 0.5], [0.0, -1.0]], np.float32)


def _gmm():
  return c.gmm(_MEANS, np.array([1.0, 2.0, 1.0]), np.array([0.3, 0.2, 0.4]))


def _reward():
  return c.quadratic_reward(np.array([0.5, 0.0], np.float32), 1.0)


def _eps(x, k):
  return c.gmm_eps(_gmm(), x, k, _SCHED)


def _k(key, n=3, lo=1):
  return jax.random.randint(key, (n,), lo, 7)


def _x(key, n=3):
  return jax.random.normal(key, (n, 2))


EXAMPLES = (
    Example("schedule", lambda sigma_max: tuple(c.schedule(8, sigma_max=sigma_max)),
            lambda key: (20.0,), bad_args=(-1.0,), **_HOST),
    Example("step", lambda x, e, k: tuple(c.step(x, e, k, _SCHED)),
            lambda key: (_x(key), _x(jax.random.fold_in(key, 1)), _k(key)),
            bad_args=(jnp.zeros((3, 2)), jnp.zeros((3, 2)), jnp.array([1, 2, 9]))),
    Example("gaussian_log_prob", lambda xn, m, s: c.gaussian_log_prob(xn, c.Step(m, s)),
            lambda key: (_x(key), _x(jax.random.fold_in(key, 1)),
                         jax.random.uniform(key, (3,), minval=0.1, maxval=1.0)),
            bad_args=(jnp.zeros((3, 5)), jnp.zeros((3, 2)), jnp.ones((3,)))),
    Example("step_log_ratio", c.step_log_ratio,
            lambda key: (_x(key), _x(jax.random.fold_in(key, 1)), _x(jax.random.fold_in(key, 2)),
                         jax.random.uniform(key, (3,), minval=0.1, maxval=1.0)),
            bad_args=(jnp.zeros((3, 2)), jnp.zeros((3, 2)), jnp.zeros((4, 2)), jnp.ones((3,)))),
    Example("sample", lambda x, key: tuple(c.sample(_eps, x, _SCHED, key)),
            lambda key: (_x(key), jax.random.fold_in(key, 3)),
            bad_args=(jnp.zeros((3, 0)), jax.random.key(0))),
    Example("rollout_from", lambda x, k, key: c.rollout_from(_eps, x, k, _SCHED, key),
            lambda key: (_x(key), _k(key, lo=0), jax.random.fold_in(key, 3)),
            bad_args=(jnp.zeros((3, 2)), jnp.array([0, 1, 7]), jax.random.key(0))),
    Example("gmm_eps", lambda x, k: c.gmm_eps(_gmm(), x, k, _SCHED),
            lambda key: (_x(key), _k(key)),
            bad_args=(jnp.zeros((3, 2)), jnp.array([0, 1, 2]))),
    Example("gmm_log_density", lambda x: c.gmm_log_density(_gmm(), x),
            lambda key: (_x(key),), bad_args=(jnp.zeros((3, 3)),)),
    Example("posterior", lambda x, ab: tuple(c.posterior(_gmm(), x, ab)),
            lambda key: (_x(key), jax.random.uniform(key, (), minval=0.1, maxval=0.9)),
            bad_args=(jnp.zeros((3, 4)), 0.5)),
    Example("tilt", lambda eta: tuple(c.tilt(_gmm(), _reward(), eta)),
            lambda key: (jax.random.uniform(key, (), minval=0.1, maxval=2.0),),
            bad_args=(jnp.float32(-1.0),), ranges={0: (0.0, None)}),
    Example("soft_value", lambda x, eta, ab: c.soft_value(_gmm(), _reward(), eta, x, ab),
            lambda key: (_x(key), jax.random.uniform(key, (), minval=0.1, maxval=2.0),
                         jax.random.uniform(jax.random.fold_in(key, 1), (), minval=0.1,
                                            maxval=0.9)),
            bad_args=(jnp.zeros((3, 2)), jnp.float32(0.0), 0.5), ranges={1: (0.0, None)}),
    Example("reward", lambda x: c.reward(_reward(), x), lambda key: (_x(key),),
            bad_args=(jnp.zeros((3, 3)),)),
    Example("two_hot", lambda r: c.two_hot(r, c.support(-4.0, 0.0, 9)),
            lambda key: (-4.0 * jax.random.uniform(key, (5,)),), bad_args=(jnp.zeros(()),)),
    Example("value_distribution_loss",
            lambda logits, r: c.value_distribution_loss(logits, r, c.support(-4.0, 0.0, 9)),
            lambda key: (jax.random.normal(key, (5, 9)), -4.0 * jax.random.uniform(key, (5,))),
            bad_args=(jnp.zeros((5, 8)), jnp.zeros((5,)))),
    Example("head_soft_value", lambda logits, eta: c.head_soft_value(
        logits, c.support(-4.0, 0.0, 9), eta),
            lambda key: (jax.random.normal(key, (5, 9)),
                         jax.random.uniform(key, (), minval=0.1, maxval=2.0)),
            bad_args=(jnp.zeros((5, 9)), jnp.float32(-0.5)), ranges={1: (0.0, None)}),
    Example("segment_log_ratio", c.segment_log_ratio,
            lambda key: (jax.random.normal(key, (4, 3)),), bad_args=(jnp.zeros((3,)),)),
    Example("vrpo_loss", lambda lr, ve, vs, eta: c.vrpo_loss(lr, ve, vs, eta),
            lambda key: (jax.random.normal(key, (3, 2)), jax.random.normal(key, (3, 2)),
                         jax.random.normal(key, (3,)),
                         jax.random.uniform(key, (), minval=0.1, maxval=2.0)),
            bad_args=(jnp.zeros((3, 2)), jnp.zeros((3, 2)), jnp.zeros((3,)), jnp.float32(0.0)),
            ranges={3: (0.0, None)}),
    Example("vrpo_loss_group", lambda lr, ve, eta: c.vrpo_loss(lr, ve, None, eta, form="group"),
            lambda key: (jax.random.normal(key, (3, 2)), jax.random.normal(key, (3, 2)),
                         jax.random.uniform(key, (), minval=0.1, maxval=2.0)),
            bad_args=(jnp.zeros((3, 1)), jnp.zeros((3, 1)), jnp.float32(1.0)),
            ranges={2: (0.0, None)}),
    Example("dpo_weights", lambda n: c.dpo_weights(c.schedule(n)), lambda key: (8,),
            bad_args=(1,), **_HOST),
    Example("gmm_sample", lambda key: c.gmm_sample(_gmm(), key, 5), lambda key: (key,),
            bad_args=(jnp.zeros((3,)),)),
    Example("log_exp_moment", lambda x, eta, ab: c.log_exp_moment(_gmm(), _reward(), eta, x, ab),
            lambda key: (_x(key), jax.random.uniform(key, (), minval=0.1, maxval=2.0),
                         jax.random.uniform(jax.random.fold_in(key, 1), (), minval=0.1,
                                            maxval=0.9)),
            bad_args=(jnp.zeros((3, 2)), jnp.float32(-2.0), 0.5), ranges={1: (0.0, None)}),
    Example("quadratic_reward", lambda centre, lam: tuple(c.quadratic_reward(centre, lam)),
            lambda key: (jax.random.normal(key, (2,)),
                         jax.random.uniform(key, (), minval=0.1, maxval=2.0)),
            bad_args=(jnp.zeros((2,)), jnp.float32(0.0)), ranges={1: (0.0, None)}),
    Example("support", lambda lo: c.support(lo, 0.0, 5), lambda key: (-3.0,),
            bad_args=(1.0,), **_HOST),
    Example("diffusion_dpo_loss",
            lambda ew, ewr, el, elr, w: c.diffusion_dpo_loss(ew, ewr, el, elr, w, 1.0),
            lambda key: tuple(jax.random.uniform(jax.random.fold_in(key, i), (4,))
                              for i in range(5)),
            bad_args=(jnp.zeros((4,)), jnp.zeros((4,)), jnp.zeros((4,)), jnp.zeros((4,)),
                      -jnp.ones((4,))), ranges={4: (0.0, None)}),
    Example("rwr_weights", lambda r, eta: c.rwr_weights(r, eta),
            lambda key: (jax.random.normal(key, (6,)),
                         jax.random.uniform(key, (), minval=0.1, maxval=2.0)),
            bad_args=(jnp.zeros((6,)), jnp.float32(-1.0)), ranges={1: (0.0, None)}),
    Example("gaussian_kl", c.gaussian_kl,
            lambda key: (_x(key), _x(jax.random.fold_in(key, 1)),
                         jax.random.uniform(key, (3,), minval=0.1, maxval=1.0)),
            bad_args=(jnp.zeros((3, 2)), jnp.zeros((2, 2)), jnp.ones((3,)))),
    Example("mmd2", c.mmd2, lambda key: (_x(key, 6), _x(jax.random.fold_in(key, 1), 5)),
            bad_args=(jnp.zeros((1, 2)), jnp.zeros((5, 2)))),
    Example("mode_histogram", lambda x: c.mode_histogram(x, jnp.asarray(_MEANS)),
            lambda key: (_x(key, 6),), bad_args=(jnp.zeros((6, 3)),)),
)
