"""The registered examples of ``reprojax.algorithms.alft`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.alft.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.alft import alft_als
from reprojax.algorithms.alft import alft_grad
from reprojax.algorithms.alft import cp_als
from reprojax.algorithms.alft import cp_grad
from reprojax.algorithms.alft import cp_to_tensor
from reprojax.algorithms.alft import init_alft
from reprojax.algorithms.alft import init_cp
from reprojax.algorithms.alft import init_tucker
from reprojax.algorithms.alft import integer_offset_basis
from reprojax.algorithms.alft import tucker_als


# ------------------------------------------------------------ registry examples
_SHAPE = (5, 4, 3)
_PAIRS = ((0, 1),)
_BASIS = jnp.asarray(integer_offset_basis(5, 4), jnp.float32)


def _data(key):
  k1, k2, k3 = jax.random.split(key, 3)
  y = cp_to_tensor(init_cp(k1, _SHAPE, 2))
  mask = (jax.random.uniform(k2, _SHAPE) < 0.7).astype(jnp.float32).at[0, 0, 0].set(1.0)
  return y, mask, k3


def _cp_args(key):
  y, mask, k = _data(key)
  return y, mask, init_cp(k, _SHAPE, 2)


def _tucker_args(key):
  y, mask, k = _data(key)
  core, factors = init_tucker(k, _SHAPE, (2, 2, 2))
  return y, mask, core, factors


def _alft_args(key):
  y, mask, k = _data(key)
  return y, mask, init_alft(k, _SHAPE, 2, pairs=_PAIRS, bases=(_BASIS,)), (_BASIS,)


def _bad_cp():
  y, _, k = _data(jax.random.key(0))
  return y, jnp.ones((5, 4)), init_cp(k, _SHAPE, 2)  # mask shape differs from the tensor


def _bad_alft():
  y, _, k = _data(jax.random.key(0))
  return (y, jnp.zeros(_SHAPE), init_alft(k, _SHAPE, 2, pairs=_PAIRS, bases=(_BASIS,)),
          (_BASIS,))  # every entry missing


def _bad_lft_cp():
  y, mask, k = _data(jax.random.key(0))
  return y.at[0, 0, 0].set(jnp.nan), mask, init_cp(k, _SHAPE, 2)  # non-finite observed value


def _bad_tucker():
  y, mask, k = _data(jax.random.key(0))
  core, factors = init_tucker(k, _SHAPE, (2, 2, 2))
  return y, mask, core, factors[:2]  # one factor short


EXAMPLES = (
    Example("cp_als", lambda y, m, f: cp_als(y, m, f, n_iter=5), _cp_args, _bad_cp()),
    Example("cp_grad", lambda y, m, f: cp_grad(y, m, f, n_iter=5), _cp_args, _bad_lft_cp()),
    Example("tucker_als", lambda y, m, c, f: tucker_als(y, m, c, f, n_iter=3), _tucker_args,
            _bad_tucker()),
    Example("alft_als", lambda y, m, p, b: alft_als(y, m, p, b, pairs=_PAIRS, n_iter=3),
            _alft_args, _bad_alft()),
    Example("alft_grad", lambda y, m, p, b: alft_grad(y, m, p, b, pairs=_PAIRS, n_iter=5),
            _alft_args, _bad_alft()),
)
