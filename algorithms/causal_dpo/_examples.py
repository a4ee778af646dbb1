"""The registered examples of ``reprojax.algorithms.causal_dpo`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.causal_dpo.examples` is called, so importing
the package does no JAX work.
"""

import jax
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.causal_dpo import adjusted_rand_index
from reprojax.algorithms.causal_dpo import backdoor_adjusted_loss
from reprojax.algorithms.causal_dpo import causal_dpo_loss
from reprojax.algorithms.causal_dpo import dpo_loss
from reprojax.algorithms.causal_dpo import env_losses
from reprojax.algorithms.causal_dpo import hit_rate_at_k
from reprojax.algorithms.causal_dpo import kmeans
from reprojax.algorithms.causal_dpo import mmd_penalty
from reprojax.algorithms.causal_dpo import ndcg_at_k
from reprojax.algorithms.causal_dpo import sdpo_loss
from reprojax.algorithms.causal_dpo import soft_assign
from reprojax.algorithms.causal_dpo import variance_penalty

_B, _K, _E, _D, _N = 6, 3, 2, 4, 9  # distinct sizes, so an axis that grows alone is a mismatch


def _n(key, i, shape):
  return jax.random.normal(jax.random.fold_in(key, i), shape)


def _logp(key, i, shape):
  return -jax.nn.softplus(_n(key, i, shape)) - 1.0  # log-probabilities: negative


def _probs(key, i):
  return jax.nn.softmax(_n(key, i, (_B, _E)), axis=-1)


def _pairs(key, k=None):
  shape = (_B,) if k is None else (_B, k)
  return (_logp(key, 0, (_B,)), _logp(key, 1, shape), _logp(key, 2, (_B,)), _logp(key, 3, shape))


_NAN_B = np.full((_B,), np.nan, np.float32)
_ONES_B = np.ones((_B,), np.float32)
_ONES_BK = np.ones((_B, _K), np.float32)
_BAD_PROBS = np.full((_B, _E), 0.7, np.float32)  # rows sum to 1.4

EXAMPLES = (
    Example(name="dpo_loss", fn=lambda a, b, c, d: dpo_loss(a, b, c, d, beta=0.5),
            make_args=_pairs, bad_args=(_NAN_B, _ONES_B, _ONES_B, _ONES_B), broadcasts=False),
    Example(name="sdpo_loss", fn=lambda a, b, c, d: sdpo_loss(a, b, c, d, beta=0.5),
            make_args=lambda key: _pairs(key, _K),
            bad_args=(_ONES_B, _ONES_BK, _ONES_B, np.ones((_B, _K + 1), np.float32))),
    Example(name="env_losses", fn=env_losses,
            make_args=lambda key: (jax.nn.softplus(_n(key, 0, (_B,))), _probs(key, 1)),
            bad_args=(_ONES_B, _BAD_PROBS)),
    Example(name="backdoor_adjusted_loss", fn=backdoor_adjusted_loss,
            make_args=lambda key: (jax.nn.softplus(_n(key, 0, (_B,))), _probs(key, 1),
                                   jax.nn.softmax(_n(key, 2, (_E,)))),
            bad_args=(_ONES_B, _BAD_PROBS, np.full((_E,), 0.5, np.float32))),
    Example(name="variance_penalty", fn=variance_penalty,
            make_args=lambda key: (jax.nn.softplus(_n(key, 0, (_B,))), _probs(key, 1)),
            bad_args=(_ONES_B, -np.ones((_B, _E), np.float32))),
    Example(name="mmd_penalty", fn=lambda f, p: mmd_penalty(f, p, bandwidth=2.0),
            make_args=lambda key: (_n(key, 0, (_B, _D)), _probs(key, 1)),
            bad_args=(np.ones((_B, _D), np.float32), np.ones((_B + 1, _E), np.float32) / _E)),
    Example(name="causal_dpo_loss",
            fn=lambda a, b, c, d, p: causal_dpo_loss(a, b, c, d, p, beta=0.5,
                                                     invariance_weight=2.0),
            make_args=lambda key: _pairs(key, _K) + (_probs(key, 4),),
            bad_args=(_ONES_B, _ONES_BK, _ONES_B, _ONES_BK, _BAD_PROBS)),
    Example(name="causal_dpo_loss_mmd",
            fn=lambda a, b, c, d, p, f: causal_dpo_loss(a, b, c, d, p, f, beta=0.5,
                                                        invariance_weight=0.3, penalty="mmd"),
            make_args=lambda key: _pairs(key, _K) + (_probs(key, 4), _n(key, 5, (_B, _D))),
            bad_args=(_ONES_B, _ONES_BK, _ONES_B, _ONES_BK, np.ones((_B, _E), np.float32) / _E,
                      np.full((_B, _D), np.inf, np.float32))),
    Example(name="kmeans", fn=lambda x, c: kmeans(x, None, num_envs=_E, init_ExD=c),
            make_args=lambda key: (_n(key, 0, (_N, _D)), _n(key, 1, (_E, _D))),
            bad_args=(np.ones((_N, _D), np.float32), np.ones((_E, _D + 1), np.float32))),
    Example(name="kmeans_seeded", fn=lambda x, key: kmeans(x, key, num_envs=3),
            make_args=lambda key: (_n(key, 0, (_N, _D)), jax.random.fold_in(key, 1)),
            bad_args=(np.ones((2, _D), np.float32), jax.random.key(0))),
    Example(name="soft_assign", fn=lambda f, c: soft_assign(f, c, temperature=0.5),
            make_args=lambda key: (_n(key, 0, (_B, _D)), _n(key, 1, (_E, _D))),
            bad_args=(np.ones((_B, _D), np.float32), np.ones((_E, _D + 2), np.float32))),
    Example(name="adjusted_rand_index",
            fn=lambda a, b: adjusted_rand_index(a, b, num_a=3, num_b=2),
            make_args=lambda key: (jax.random.randint(jax.random.fold_in(key, 0), (_N,), 0, 3),
                                   jax.random.randint(jax.random.fold_in(key, 1), (_N,), 0, 2)),
            bad_args=(np.zeros((_N,), np.int32), np.full((_N,), 2, np.int32)),
            ranges={0: (0, 2), 1: (0, 1)}),
    Example(name="hit_rate_at_k", fn=lambda s, t: hit_rate_at_k(s, t, k=3),
            make_args=lambda key: (_n(key, 0, (_B, _N)),
                                   jax.random.randint(jax.random.fold_in(key, 1), (_B,), 0, _N)),
            bad_args=(np.ones((_B, _N), np.float32), np.full((_B,), _N, np.int32)),
            ranges={1: (0, _N - 1)}),
    Example(name="ndcg_at_k", fn=lambda s, t: ndcg_at_k(s, t, k=3),
            make_args=lambda key: (_n(key, 0, (_B, _N)),
                                   jax.random.randint(jax.random.fold_in(key, 1), (_B,), 0, _N)),
            bad_args=(np.full((_B, _N), -np.inf, np.float32), np.zeros((_B,), np.int32)),
            ranges={1: (0, _N - 1)}),
)
