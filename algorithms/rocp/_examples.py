"""The registered examples of ``reprojax.algorithms.rocp`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.rocp.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.rocp import aps
from reprojax.algorithms.rocp import best_response
from reprojax.algorithms.rocp import lac
from reprojax.algorithms.rocp import minimax_action
from reprojax.algorithms.rocp import rac
from reprojax.algorithms.rocp import raps
from reprojax.algorithms.rocp import robust_risk
from reprojax.algorithms.rocp import rocp


_A, _Y, _N, _M = 3, 4, 12, 5


def _probs(key, n):
  return jax.nn.softmax(2.0 * jax.random.normal(key, (n, _Y)), axis=-1)


def _loss(key):
  return jax.random.uniform(key, (_A, _Y)) * 10.0


def _split_args(key):
  k1, k2, k3, k4 = jax.random.split(key, 4)
  return (_probs(k1, _N), jax.random.randint(k2, (_N,), 0, _Y), _probs(k3, _M), _loss(k4),
          jnp.asarray(0.2))


_BAD_PROBS = np.full((_N, _Y), 0.3, np.float32)  # rows sum to 1.2
_BAD_SPLIT = (_BAD_PROBS, np.zeros((_N,), np.int32), np.full((_M, _Y), 0.25, np.float32),
              np.ones((_A, _Y), np.float32), 0.2)

EXAMPLES = (
    Example("robust_risk", robust_risk,
            lambda k: (_loss(k), jax.random.bernoulli(jax.random.fold_in(k, 1), 0.5, (_N, _Y)),
                       jnp.asarray(0.1)),
            bad_args=(np.ones((_A, _Y)), np.ones((_N, _Y + 1), bool), 0.1)),
    Example("minimax_action", minimax_action,
            lambda k: (_loss(k), jax.random.bernoulli(jax.random.fold_in(k, 1), 0.5, (_N, _Y)),
                       jnp.asarray(0.1)),
            bad_args=(np.ones((_A, _Y)), np.ones((_N, _Y), bool), 1.5)),
    Example("rocp_full", rocp, _split_args, bad_args=_BAD_SPLIT),
    Example("lac", lac, _split_args,
            bad_args=(_BAD_SPLIT[0] * np.nan,) + _BAD_SPLIT[1:]),
    Example("aps", aps, _split_args, bad_args=_BAD_SPLIT),
    Example("raps", raps, _split_args, bad_args=_BAD_SPLIT),
    Example("rac", rac, _split_args, bad_args=_BAD_SPLIT[:3] + (None, 0.2)),
    Example("best_response", best_response,
            lambda k: (_probs(k, _N), _loss(jax.random.fold_in(k, 1))),
            bad_args=(_BAD_PROBS, np.ones((_A, _Y), np.float32))),
)
