"""The registered examples of ``reprojax.algorithms.alft`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.alft.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.alft import alft_als
from reprojax.algorithms.alft import alft_grad
from reprojax.algorithms.alft import alft_predict
from reprojax.algorithms.alft import cp_als
from reprojax.algorithms.alft import cp_grad
from reprojax.algorithms.alft import cp_to_tensor
from reprojax.algorithms.alft import heldout_errors
from reprojax.algorithms.alft import init_alft
from reprojax.algorithms.alft import init_cp
from reprojax.algorithms.alft import init_tucker
from reprojax.algorithms.alft import integer_offset_basis
from reprojax.algorithms.alft import offset_basis
from reprojax.algorithms.alft import pair_component
from reprojax.algorithms.alft import rank_mask
from reprojax.algorithms.alft import tucker_als
from reprojax.algorithms.alft import tucker_grad
from reprojax.algorithms.alft import tucker_to_tensor

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


def _tensor_args(key):
  y, mask, k = _data(key)
  return jax.random.normal(k, _SHAPE), y, mask


def _predict_args(key):
  _, _, p, b = _alft_args(key)
  return p, b[0]


def _pair_args(key):
  k1, k2 = jax.random.split(key)
  return jax.random.normal(k1, _SHAPE[:2] + (2,)), jax.random.uniform(k2, (_SHAPE[2], 2))


def _cp_factors(key):
  return init_cp(key, _SHAPE, 2)


def _tucker_parts(key):
  return init_tucker(key, _SHAPE, (2, 3, 2))


def _coords(key):
  """Host arrays: sorted coordinates of two ordered modes and knots covering their offsets."""
  k1, k2 = jax.random.split(key)
  up = np.sort(np.asarray(jax.random.uniform(k1, (5,), minval=0.0, maxval=10.0)))
  uq = np.sort(np.asarray(jax.random.uniform(k2, (4,), minval=2.0, maxval=12.0)))
  return up, uq, np.linspace(-4.0, 8.0, 7)


EXAMPLES = (
    Example("cp_als", lambda y, m, f: cp_als(y, m, f, n_iter=5), _cp_args, _bad_cp),
    Example("cp_grad", lambda y, m, f: cp_grad(y, m, f, n_iter=5), _cp_args, _bad_lft_cp),
    Example("tucker_als", lambda y, m, c, f: tucker_als(y, m, c, f, n_iter=3), _tucker_args,
            _bad_tucker),
    Example("tucker_grad", lambda y, m, c, f: tucker_grad(y, m, c, f, n_iter=5), _tucker_args,
            _bad_tucker),
    Example("alft_als", lambda y, m, p, b: alft_als(y, m, p, b, pairs=_PAIRS, n_iter=3),
            _alft_args, _bad_alft),
    Example("alft_grad", lambda y, m, p, b: alft_grad(y, m, p, b, pairs=_PAIRS, n_iter=5),
            _alft_args, _bad_alft),
    Example("alft_predict", lambda p, w: alft_predict(p, (w,), _PAIRS), _predict_args),
    Example("pair_component", lambda h, v: pair_component(h, (v,), _PAIRS[0], _SHAPE),
            _pair_args),
    Example("cp_to_tensor", lambda f: cp_to_tensor(f), lambda k: (_cp_factors(k),)),
    Example("tucker_to_tensor", tucker_to_tensor, _tucker_parts,
            free_sizes=(3,)),  # I_2 = 3 and the core's R_1 = 3 are independent
    Example("heldout_errors", heldout_errors, _tensor_args),
    Example("rank_mask", lambda r: rank_mask(r, 4),
            lambda k: (jax.random.randint(k, (3,), 1, 5),),
            bad_args=(jnp.array([0, 2, 4]),)),  # rank 0 switches every component off
    Example("init_cp", lambda k: init_cp(k, _SHAPE, 2), lambda k: (k,)),
    Example("init_tucker", lambda k: init_tucker(k, _SHAPE, (2, 3, 2)), lambda k: (k,)),
    Example("init_alft",
            lambda k: init_alft(k, _SHAPE, 2, pairs=_PAIRS, bases=(_BASIS,),
                                n_offset_components=2),
            lambda k: (k,)),
    # host-side builders of the interpolation weights (numpy)
    Example("offset_basis", offset_basis, _coords,
            bad_args=(np.arange(3.0), np.arange(2.0), np.array([0.0, 2.0, 1.0])),  # knots unsorted
            jittable=False),
    Example("integer_offset_basis", integer_offset_basis, lambda k: (5, 4),
            bad_args=(0, 4), jittable=False),  # a mode of size 0
)
