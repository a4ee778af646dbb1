"""The registered examples of ``reprojax.algorithms.del_no`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.del_no.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.del_no import derivative_features
from reprojax.algorithms.del_no import derivative_features_2d
from reprojax.algorithms.del_no import fractional_derivative
from reprojax.algorithms.del_no import gl_weights
from reprojax.algorithms.del_no import optimal_order
from reprojax.algorithms.del_no import order_gap_constant
from reprojax.algorithms.del_no import spectral_risk


_B, _N, _K = 3, 16, 4  # distinct sizes, so an axis that grows alone is a mismatch


def _field(key):
  return jax.random.normal(key, (_B, _N))


def _betas(key):
  return jax.random.uniform(key, (_K,), minval=0.2, maxval=2.8)


EXAMPLES = (
    Example(
        name="fractional_derivative_spectral",
        fn=lambda u, beta: fractional_derivative(u, beta, dx=1.0 / _N),
        make_args=lambda key: (_field(key), jax.random.uniform(jax.random.fold_in(key, 1), (),
                                                               minval=0.1, maxval=3.0)),
        bad_args=(np.ones((_B, _N), np.float32), np.float32(-0.5)),
    ),
    Example(
        name="fractional_derivative_gl",
        fn=lambda u, beta: fractional_derivative(u, beta, dx=1.0 / _N, method="gl",
                                                 boundary="zero", gl_terms=8),
        make_args=lambda key: (_field(key), jax.random.uniform(jax.random.fold_in(key, 1), (),
                                                               minval=0.1, maxval=3.0)),
        bad_args=(np.full((_B, _N), np.nan, np.float32), np.float32(1.0)),
    ),
    Example(
        name="derivative_features",
        fn=lambda u, b, s: derivative_features(u, b, s, dx=1.0 / _N),
        make_args=lambda key: (_field(key), _betas(jax.random.fold_in(key, 1)),
                               jax.random.normal(jax.random.fold_in(key, 2), (_K,))),
        bad_args=(np.ones((_B, _N), np.float32), np.array([1.0, 9.0], np.float32),
                  np.ones((_K,), np.float32)),
    ),
    Example(
        name="derivative_features_2d",
        fn=lambda u, bx, by, sx, sy, bm, sm: derivative_features_2d(u, bx, by, sx, sy, bm, sm),
        make_args=lambda key: (jax.random.normal(key, (_B, 8, 8)),
                               _betas(jax.random.fold_in(key, 1)), _betas(jax.random.fold_in(key, 2)),
                               jnp.ones((_K,)), jnp.ones((_K,)),
                               jax.random.uniform(jax.random.fold_in(key, 3), (2,), minval=0.2,
                                                  maxval=2.8), jnp.float32(0.5)),
        bad_args=(np.ones((_B, 8, 8), np.float32), np.ones((_K,), np.float32),
                  np.ones((_K,), np.float32), np.ones((_K,), np.float32),
                  np.ones((_K,), np.float32), np.ones((3,), np.float32), np.float32(1.0)),
    ),
    Example(
        name="optimal_order",
        fn=lambda sigma, n: optimal_order(2.0, n, sigma, 8.0, 64.0),
        make_args=lambda key: (jax.random.uniform(key, (), minval=0.01, maxval=0.2),
                               jax.random.uniform(jax.random.fold_in(key, 1), (), minval=100.0,
                                                  maxval=5000.0)),
        bad_args=(np.float32(-0.1), np.float32(100.0)),
    ),
    Example(
        name="gl_weights",
        fn=lambda beta: gl_weights(beta, 8),
        make_args=lambda key: (jax.random.uniform(key, (), minval=0.1, maxval=3.0),),
        bad_args=(np.ones((2,), np.float32),),  # beta must be a scalar
    ),
    Example(
        name="spectral_risk",
        fn=lambda beta, sigma, n: spectral_risk(beta, 2.0, n, sigma, 8.0, 64.0),
        make_args=lambda key: (jax.random.uniform(key, (5,), minval=0.0, maxval=2.0),
                               jax.random.uniform(jax.random.fold_in(key, 1), (), minval=0.01,
                                                  maxval=0.2),
                               jax.random.uniform(jax.random.fold_in(key, 2), (), minval=100.0,
                                                  maxval=5000.0)),
        bad_args=(np.ones((5,), np.float32), np.float32(0.1), np.float32(-1.0)),
    ),
    Example(
        name="order_gap_constant",
        fn=lambda m, xi_c: order_gap_constant(m, xi_c, 64.0),
        make_args=lambda key: (jax.random.uniform(key, (), minval=1.0, maxval=3.0),
                               jax.random.uniform(jax.random.fold_in(key, 1), (), minval=2.0,
                                                  maxval=16.0)),
        bad_args=(np.float32(2.0), np.float32(0.5)),  # xi_c must exceed 1
    ),
)
