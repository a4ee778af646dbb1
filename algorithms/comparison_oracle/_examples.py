"""The registered examples of ``reprojax.algorithms.comparison_oracle`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.comparison_oracle.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.comparison_oracle import MLP_NUM_PARAMS
from reprojax.algorithms.comparison_oracle import init_state
from reprojax.algorithms.comparison_oracle import make_oracle
from reprojax.algorithms.comparison_oracle import mlp_loss
from reprojax.algorithms.comparison_oracle import normalized_gradient
from reprojax.algorithms.comparison_oracle import octopus
from reprojax.algorithms.comparison_oracle import quadratic_quartic
from reprojax.algorithms.comparison_oracle import quantum_normalized_gradient
from reprojax.algorithms.comparison_oracle import quantum_params
from reprojax.algorithms.comparison_oracle import rosenbrock
from reprojax.algorithms.comparison_oracle import skewed_quartic
from reprojax.algorithms.comparison_oracle import trust_region_step


# ----------------------------------------------------------------------------- registry examples
_EX_N = 3
_EX_A = jnp.array([[1.0, 0.3, 0.0], [0.3, -0.5, 0.2], [0.0, 0.2, 2.0]])
_EX_B = jnp.array([0.5, -1.0, 0.25])
_EX_ORACLE = make_oracle(lambda x: 0.5 * x @ _EX_A @ x + _EX_B @ x, _EX_N)
_EX_QPARAMS = quantum_params(_EX_N, 0.05)


def _ex_gradient(x_N):
  u, st = normalized_gradient(_EX_ORACLE, init_state(jax.random.key(0)), x_N, gamma=1e-2,
                              bits=12)
  return u, st.count


def _ex_quantum_gradient(x_N, key):
  u, st = quantum_normalized_gradient(_EX_ORACLE, init_state(jax.random.key(0)), x_N, key,
                                      delta=0.05, gamma=1e-2, params=_EX_QPARAMS)
  return u, st.count


def _ex_trust_region(g_N, R_NxN, r):
  if jnp.ndim(r) != 0:
    raise ValueError(f"r must be a scalar, got shape {jnp.shape(r)}")
  if g_N.ndim != 1 or R_NxN.shape != (g_N.shape[0],) * 2:
    raise ValueError(f"g_N (n,) and R_NxN (n, n) expected, got {g_N.shape}, {R_NxN.shape}")
  return _trust_region_jit(g_N, R_NxN, r)


_trust_region_jit = jax.jit(trust_region_step)


def _x(key):
  return jax.random.normal(key, (_EX_N,)) + 1.0


EXAMPLES = (
    Example("normalized_gradient", _ex_gradient, lambda k: (_x(k),),
            bad_args=(jnp.array([0.0, jnp.nan, 1.0]),)),
    Example("quantum_normalized_gradient", _ex_quantum_gradient,
            lambda k: (_x(k), jax.random.fold_in(k, 1)),
            bad_args=(jnp.array([0.0, jnp.inf, 1.0]), jax.random.key(0))),
    Example("trust_region_step", _ex_trust_region,
            lambda k: (jax.random.normal(k, (4,)), jnp.diag(jnp.array([-1.0, 0.5, 1.0, 2.0])),
                       jnp.asarray(0.5)),
            bad_args=(jnp.ones((3,)), jnp.eye(4), jnp.asarray(0.5))),
    Example("quadratic_quartic", lambda x: quadratic_quartic(_EX_A)(x),
            lambda k: (_x(k),)),
    Example("rosenbrock", rosenbrock, lambda k: (_x(k),)),
    Example("octopus", octopus, lambda k: (_x(k),)),
    Example("skewed_quartic", skewed_quartic, lambda k: (_x(k),)),
    Example("mlp_loss", mlp_loss, lambda k: (jax.random.normal(k, (MLP_NUM_PARAMS,)),)),
)
