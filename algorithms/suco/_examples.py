"""The registered examples of ``reprojax.algorithms.suco``."""

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.suco import _core as c

_HOST = dict(jittable=False, vmappable=False)


def _chains(key):
  prompt = jax.random.randint(key, (2, 5), 6, 20)
  cot = jax.random.randint(jax.random.fold_in(key, 1), (2, 7), 6, 20)
  return prompt, jnp.array([5, 3]), cot, jnp.array([[2, 4, 7], [1, 3, 3]])


def _logits(ids, mask):
  del mask
  return jax.nn.one_hot(ids, 24) * 3.0 + 0.1 * jnp.arange(24.0)


EXAMPLES = (
    Example("prefix_batch", lambda p, pl, cot, ends: c.prefix_batch(p, pl, cot, ends, 4),
            _chains, bad_args=(jnp.zeros((2, 5), jnp.int32), jnp.array([5, 9]),
                               jnp.zeros((2, 7), jnp.int32), jnp.array([[2, 4, 7], [1, 3, 3]])),
            derived_sizes=True),  # T = P + C + 1 rows of S + 1 prefixes
    Example("forced_answer_logprob", c.forced_answer_logprob,
            lambda key: (jax.random.normal(key, (3, 6, 10)), jnp.array([0, 2, 5]),
                         jnp.array([1, 9, 4])),
            bad_args=(jnp.zeros((3, 6, 10)), jnp.array([0, 2, 6]), jnp.array([1, 9, 4]))),
    Example("forced_answer_probs", lambda p, pl, cot, ends: c.forced_answer_probs(
        _logits, p, pl, cot, ends, jnp.array([7, 8]), 4), _chains,
            bad_args=(jnp.zeros((2, 5), jnp.int32), jnp.array([5, 3]),
                      jnp.zeros((2, 7), jnp.int32), jnp.array([[2, 4, 9], [1, 3, 3]])),
            derived_sizes=True),
    Example("adaptive_threshold", lambda d: c.adaptive_threshold(d, 6),
            lambda key: (jax.random.randint(key, (4,), 1, 7),), bad_args=(jnp.array([0, 2]),)),
    Example("length_percentile", c.length_percentile,
            lambda key: (jax.random.uniform(key, (4,), maxval=20.0),
                         jax.random.uniform(jax.random.fold_in(key, 1), (6,), maxval=20.0)),
            bad_args=(jnp.array([3.0, -1.0]), jnp.array([1.0, 2.0, 3.0]))),
    Example("sufficiency_threshold", lambda cx: c.sufficiency_threshold(cx, 0.6, 0.3),
            lambda key: (jax.random.uniform(key, (5,)),), bad_args=(jnp.array([0.5, 1.5]),),
            ranges={0: (0.0, 1.0)}),
    Example("minimal_sufficient_steps", c.minimal_sufficient_steps,
            lambda key: (jax.random.uniform(key, (3, 5)), jnp.array([0.5, 0.7, 0.9]),
                         jnp.array([4, 2, 3])),
            bad_args=(jnp.zeros((3, 5)), jnp.array([0.5, 0.0, 0.9]), jnp.array([4, 2, 3]))),
    Example("minimal_sufficient_steps_full_fallback",
            lambda p, t, n: c.minimal_sufficient_steps(p, t, n, fallback="full"),
            lambda key: (jax.random.uniform(key, (3, 5)), jnp.array([0.5, 0.7, 0.9]),
                         jnp.array([4, 2, 3])),
            bad_args=(jnp.zeros((3, 5)), jnp.array([0.5, 0.7, 0.9]), jnp.array([4, 2, 5]))),
    Example("sapo_reward", c.sapo_reward,
            lambda key: (jax.random.bernoulli(key, 0.5, (5,)),
                         jax.random.uniform(key, (5,), maxval=20.0),
                         jax.random.uniform(jax.random.fold_in(key, 1), (5,), maxval=20.0)),
            bad_args=(jnp.ones((5,), bool), jnp.ones((5,)), jnp.ones((4,)))),
    Example("tracker_init", lambda n: tuple(c.tracker_init(n)), lambda key: (4,),
            bad_args=(0,), **_HOST),
    Example("tracker_update", lambda q, n, v: tuple(c.tracker_update(c.tracker_init(4), q, n, v)),
            lambda key: (jax.random.randint(key, (6,), 0, 4),
                         jax.random.uniform(key, (6,), maxval=9.0),
                         jax.random.bernoulli(key, 0.7, (6,))),
            bad_args=(jnp.array([0, 4]), jnp.ones((2,)), jnp.ones((2,), bool))),
    Example("tracked_length", lambda q, d: c.tracked_length(
        c.tracker_update(c.tracker_init(4), jnp.array([0, 1, 1]), jnp.array([3.0, 4.0, 6.0]),
                         jnp.ones((3,), bool)), q, d),
            lambda key: (jax.random.randint(key, (5,), 0, 4),
                         jax.random.uniform(key, (5,), maxval=9.0)),
            bad_args=(jnp.array([0, 7]), jnp.ones((2,)))),
)
