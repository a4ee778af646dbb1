"""del-NO: learnable fractional derivative features for neural operators (Mehouachi & Jabari, ICML 2026).

Public API::

    from algorithms import del_no
    du = del_no.fractional_derivative(u, 0.5, dx=1 / 256)                  # spectral (i k)^0.5
    du = del_no.fractional_derivative(u, 1.7, dx=h, method="gl", gl_terms=16)
    f_BxNxK = del_no.derivative_features(u_BxN, betas_K, scales_K)        # s_k D^beta_k u
    beta_star, gap = del_no.optimal_order(m=2, n=1000, sigma=0.05, xi_c=8.0, xi_max=64.0)

References:
  Mehouachi & Jabari, "Fractional is Better: Learnable Derivative Orders in Neural
  Operator Learning", ICML 2026.
"""

import jax
import jax.numpy as jnp
import numpy as np

from algorithms._common import Example
from algorithms.del_no._fractional import BETA_MAX
from algorithms.del_no._fractional import derivative_features
from algorithms.del_no._fractional import derivative_features_2d
from algorithms.del_no._fractional import fractional_derivative
from algorithms.del_no._fractional import gl_weights
from algorithms.del_no._theory import optimal_order
from algorithms.del_no._theory import order_gap_constant
from algorithms.del_no._theory import spectral_risk

__all__ = (
    "BETA_MAX", "derivative_features", "derivative_features_2d", "fractional_derivative",
    "gl_weights", "optimal_order", "order_gap_constant", "spectral_risk",
)

_B, _N, _K = 2, 16, 2


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
                               _betas(jax.random.fold_in(key, 3)), jnp.float32(0.5)),
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
)
