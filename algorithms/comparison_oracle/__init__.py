"""Finding stationary points with a comparison oracle, classical and quantum (simulated).

Paper: Wang, Zhang, Tao, Zhang & Li, "Finding Stationary Points by Comparisons" (ICML 2026).

Public API::

    from algorithms import comparison_oracle as co
    oracle = co.make_oracle(f, n)                      # the only holder of f
    state = co.init_state(key)                         # query count lives here
    u, state = co.normalized_gradient(oracle, state, x, gamma=1e-5, bits=20)
    H, R, g, state = co.normalized_hessian(oracle, state, x, key, gamma=1e-5)
    x_eps, queries, xs, counts = co.find_stationary_point(oracle, x0, key, eps=1e-3)

The quantum algorithm is SIMULATED CLASSICALLY (``_quantum``): a dense statevector
for tiny sizes, the exact grid-register distribution for small ones and a tested
closed form for larger ``n``.
"""

import jax
import jax.numpy as jnp

from algorithms._common import Example
from algorithms.comparison_oracle._functions import CHAIN_GAP_PER_LINK
from algorithms.comparison_oracle._functions import CHAIN_LIPSCHITZ
from algorithms.comparison_oracle._functions import MLP_NUM_PARAMS
from algorithms.comparison_oracle._functions import chain
from algorithms.comparison_oracle._functions import hard_chain
from algorithms.comparison_oracle._functions import hard_chain_params
from algorithms.comparison_oracle._functions import indefinite_matrix
from algorithms.comparison_oracle._functions import mlp_loss
from algorithms.comparison_oracle._functions import octopus
from algorithms.comparison_oracle._functions import quadratic_quartic
from algorithms.comparison_oracle._functions import rosenbrock
from algorithms.comparison_oracle._functions import skewed_quartic
from algorithms.comparison_oracle._functions import sparse_quadric
from algorithms.comparison_oracle._gradient import bits_for_accuracy
from algorithms.comparison_oracle._gradient import gradient_queries
from algorithms.comparison_oracle._gradient import normalized_gradient
from algorithms.comparison_oracle._gradient import normalized_gradient_batch
from algorithms.comparison_oracle._hessian import find_scale
from algorithms.comparison_oracle._hessian import hessian_queries
from algorithms.comparison_oracle._hessian import normalized_hessian
from algorithms.comparison_oracle._optimizers import GDState
from algorithms.comparison_oracle._optimizers import Method
from algorithms.comparison_oracle._optimizers import SecondOrderState
from algorithms.comparison_oracle._optimizers import find_stationary_point
from algorithms.comparison_oracle._optimizers import make_method
from algorithms.comparison_oracle._optimizers import queries_to_stationarity
from algorithms.comparison_oracle._optimizers import run
from algorithms.comparison_oracle._optimizers import second_order_method
from algorithms.comparison_oracle._optimizers import trust_region_step
from algorithms.comparison_oracle._optimizers import zhang_li_method
from algorithms.comparison_oracle._oracle import ComparisonOracle
from algorithms.comparison_oracle._oracle import OracleState
from algorithms.comparison_oracle._oracle import compare
from algorithms.comparison_oracle._oracle import init_state
from algorithms.comparison_oracle._oracle import make_oracle
from algorithms.comparison_oracle._oracle import votes_for
from algorithms.comparison_oracle._quantum import QuantumParams
from algorithms.comparison_oracle._quantum import closed_form_distribution
from algorithms.comparison_oracle._quantum import estimate_from_outcome
from algorithms.comparison_oracle._quantum import quantum_gradient_batch
from algorithms.comparison_oracle._quantum import quantum_normalized_gradient
from algorithms.comparison_oracle._quantum import quantum_params
from algorithms.comparison_oracle._quantum import register_distribution
from algorithms.comparison_oracle._quantum import statevector_circuit

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
