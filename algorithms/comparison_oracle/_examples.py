"""The registered examples of ``reprojax.algorithms.comparison_oracle`` (``tests/test_common.py``).

Built only when :func:`reprojax.algorithms.comparison_oracle.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).

Factories (``make_oracle``, ``make_method``, ``second_order_method``, ``zhang_li_method``,
``hard_chain``, ``sparse_quadric``) are registered through small wrappers named
``<factory>_<what>`` that apply what they build to array inputs; the objects they
build (oracle, methods) are made once here, as a notebook would, so an eager call
with new values reuses the compiled program. Host-side helpers (Python numbers or
numpy in and out) are registered with ``jittable=False``.
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.comparison_oracle import MLP_NUM_PARAMS
from reprojax.algorithms.comparison_oracle import bits_for_accuracy
from reprojax.algorithms.comparison_oracle import chain
from reprojax.algorithms.comparison_oracle import closed_form_distribution
from reprojax.algorithms.comparison_oracle import compare
from reprojax.algorithms.comparison_oracle import estimate_from_outcome
from reprojax.algorithms.comparison_oracle import find_scale
from reprojax.algorithms.comparison_oracle import find_stationary_point
from reprojax.algorithms.comparison_oracle import gradient_queries
from reprojax.algorithms.comparison_oracle import hard_chain
from reprojax.algorithms.comparison_oracle import hard_chain_params
from reprojax.algorithms.comparison_oracle import hessian_queries
from reprojax.algorithms.comparison_oracle import indefinite_matrix
from reprojax.algorithms.comparison_oracle import init_state
from reprojax.algorithms.comparison_oracle import make_method
from reprojax.algorithms.comparison_oracle import make_oracle
from reprojax.algorithms.comparison_oracle import mlp_loss
from reprojax.algorithms.comparison_oracle import normalized_gradient
from reprojax.algorithms.comparison_oracle import normalized_gradient_batch
from reprojax.algorithms.comparison_oracle import normalized_hessian
from reprojax.algorithms.comparison_oracle import octopus
from reprojax.algorithms.comparison_oracle import quadratic_quartic
from reprojax.algorithms.comparison_oracle import quantum_gradient_batch
from reprojax.algorithms.comparison_oracle import quantum_normalized_gradient
from reprojax.algorithms.comparison_oracle import quantum_params
from reprojax.algorithms.comparison_oracle import queries_to_stationarity
from reprojax.algorithms.comparison_oracle import register_distribution
from reprojax.algorithms.comparison_oracle import rosenbrock
from reprojax.algorithms.comparison_oracle import run
from reprojax.algorithms.comparison_oracle import second_order_method
from reprojax.algorithms.comparison_oracle import skewed_quartic
from reprojax.algorithms.comparison_oracle import sparse_quadric
from reprojax.algorithms.comparison_oracle import statevector_circuit
from reprojax.algorithms.comparison_oracle import trust_region_step
from reprojax.algorithms.comparison_oracle import votes_for
from reprojax.algorithms.comparison_oracle import zhang_li_method


# ----------------------------------------------------------------------------- registry examples
_EX_N = 3
_EX_A = jnp.array([[1.0, 0.3, 0.0], [0.3, -0.5, 0.2], [0.0, 0.2, 2.0]])
_EX_B = jnp.array([0.5, -1.0, 0.25])


def _ex_f(x):
  return 0.5 * x @ _EX_A @ x + _EX_B @ x


def _ex_monitor(x):  # the evaluator's gradient norm (never given to a method)
  return jnp.linalg.norm(_EX_A @ x + _EX_B)


_EX_ORACLE = make_oracle(_ex_f, _EX_N)
_EX_QPARAMS = quantum_params(_EX_N, 0.05)
_EX_ZHANG_LI = zhang_li_method(_EX_ORACLE, ell=3.0, gamma=1e-2)
_EX_MADE = make_method(_EX_ORACLE, "zhang_li", ell=3.0, gamma=1e-2)
_EX_SECOND = second_order_method(_EX_ORACLE, gamma=1e-2, bits=8, scale_steps=8)
_EX_EPS = 0.1
_EX_STEPS = 3


def _x(key):
  return jax.random.normal(key, (_EX_N,)) + 1.0


def _xb(key, b=4):
  return jax.random.normal(key, (b, _EX_N)) + 1.0


def _x_key(key):
  return _x(key), jax.random.fold_in(key, 1)


def _ex_gradient(x_N):
  u, st = normalized_gradient(_EX_ORACLE, init_state(jax.random.key(0)), x_N, gamma=1e-2,
                              bits=12)
  return u, st.count


def _ex_gradient_batch(x_BxN):
  u, st = normalized_gradient_batch(_EX_ORACLE, init_state(jax.random.key(0)), x_BxN, 1e-2, 12)
  return u, st.count


def _ex_quantum_gradient(x_N, key):
  u, st = quantum_normalized_gradient(_EX_ORACLE, init_state(jax.random.key(0)), x_N, key,
                                      delta=0.05, gamma=1e-2, params=_EX_QPARAMS)
  return u, st.count


def _ex_quantum_batch(x_BxN, key):
  u, st = quantum_gradient_batch(_EX_ORACLE, init_state(key), x_BxN, 1e-2, _EX_QPARAMS)
  return u, st.count


def _ex_hessian(x_N, key):
  H, R, g, st = normalized_hessian(_EX_ORACLE, init_state(key), x_N, key, gamma=1e-2, bits=10)
  return H, R, g, st.count


def _ex_find_scale(x_N, g_hat_N, key):
  s, st = find_scale(_EX_ORACLE, init_state(key), x_N, g_hat_N, 1.0, J=12)
  return s, st.count


def _scale_args(key):
  x_N, key = _x_key(key)
  g = _EX_A @ x_N + _EX_B
  return x_N, g / jnp.linalg.norm(g), key


def _ex_compare(x_BxN, y_BxN):
  bits, st = compare(_EX_ORACLE, init_state(jax.random.key(0)), x_BxN, y_BxN)
  return bits, st.count


def _ex_make_oracle_compare(x_BxN, y_BxN, key):
  """A noisy oracle (p0 = 0.1, tau = 0.5, majority of 3) built and asked B comparisons."""
  oracle = make_oracle(_ex_f, _EX_N, flip_prob=0.1, flip_scale=0.5, votes=3)
  bits, st = compare(oracle, init_state(key), x_BxN, y_BxN)
  return bits, st.count


def _state_arrays(state):
  return state.count, jax.random.key_data(state.key)


def _run_summary(method):
  def fn(x0_N, key):
    final, xs, counts = run(method, x0_N, key, _EX_EPS, _EX_STEPS)
    return final.x, xs, counts
  return fn


_ZHANG_LI_RUN = _run_summary(_EX_ZHANG_LI)


def _ex_queries(x0_N, key):
  return queries_to_stationarity(_EX_ZHANG_LI, _ex_monitor, x0_N, key, _EX_EPS, 50)


def _ex_find_stationary_point(x0_N, key):
  return find_stationary_point(_EX_ORACLE, x0_N, key, eps=_EX_EPS, method="zhang_li",
                               num_steps=_EX_STEPS, ell=3.0, gamma=1e-2)


def _ex_hard_chain_value(x_N, num_links, sigma, scale):
  return hard_chain(num_links, sigma, scale)(x_N)


def _ex_hard_chain_params(num_links, gap, lipschitz):
  return hard_chain_params(num_links, 2, gap, lipschitz)


def _hard_chain_args(key):
  k1, k2 = jax.random.split(key)
  return (0.3 * jax.random.normal(k1, (5,)), jax.random.randint(k2, (), 1, 6), jnp.asarray(0.5),
          jnp.asarray(0.2))


def _hard_params_args(key):
  k1, k2, k3 = jax.random.split(key, 3)
  return (jax.random.randint(k1, (), 1, 10).astype(jnp.float32),
          jax.random.uniform(k2, (), minval=0.5, maxval=2.0),
          jax.random.uniform(k3, (), minval=0.5, maxval=2.0))


# Host-side circuit simulators: tiny sizes (n = 2 on a 4 x 4 grid, K = 3 ancilla bits).
_SIM = dict(gamma=1e-2, N=4, M=1.0)


def _u0(x_N):
  g = _EX_A[:2, :2] @ x_N + _EX_B[:2]
  return g / jnp.linalg.norm(g) + jnp.array([0.1, -0.1])


_EX_ORACLE2 = make_oracle(lambda x: 0.5 * x @ _EX_A[:2, :2] @ x + _EX_B[:2] @ x, 2)


def _x2(key):
  return 0.5 * jax.random.normal(key, (2,))


def _ex_register(x_N, u0_N):
  return register_distribution(_EX_ORACLE2, x_N, u0_N, K=3, B=2.0, **_SIM)


def _ex_closed_form(x_N, u0_N):
  return closed_form_distribution(_EX_ORACLE2, x_N, u0_N, **_SIM)


def _ex_statevector(x_N, u0_N):
  out = statevector_circuit(_EX_ORACLE2, x_N, u0_N, K=3, B=2.0, **_SIM)
  return out["probs"], out["ancilla_leak"]


def _circuit_args(key):
  x_N = _x2(key)
  return x_N, _u0(x_N)


def _outcome(key):
  return (np.asarray(jax.random.randint(key, (_EX_N,), 1, 64)), 64, 10.0)  # 0 0 0 decodes to 0


EXAMPLES = (
    # estimators
    Example("normalized_gradient", _ex_gradient, lambda k: (_x(k),),
            bad_args=(jnp.array([0.0, jnp.nan, 1.0]),)),
    Example("normalized_gradient_batch", _ex_gradient_batch, lambda k: (_xb(k),),
            bad_args=(jnp.ones((4, 2)),)),  # points of the wrong dimension
    Example("quantum_normalized_gradient", _ex_quantum_gradient, _x_key,
            bad_args=(jnp.array([0.0, jnp.inf, 1.0]), jax.random.key(0))),
    Example("quantum_gradient_batch", _ex_quantum_batch,
            lambda k: (_xb(k), jax.random.fold_in(k, 1)),
            bad_args=(jnp.ones((3,)), jax.random.key(0))),  # not a batch of points
    Example("normalized_hessian", _ex_hessian, _x_key,
            bad_args=(jnp.array([1.0, jnp.nan, 0.0]), jax.random.key(0))),
    Example("find_scale", _ex_find_scale, _scale_args),
    Example("trust_region_step", trust_region_step,
            lambda k: (jax.random.normal(k, (4,)), jnp.diag(jnp.array([-1.0, 0.5, 1.0, 2.0])),
                       jnp.asarray(0.5)),
            bad_args=(jnp.ones((3,)), jnp.eye(4), jnp.asarray(0.5))),
    # the oracle
    Example("compare", _ex_compare, lambda k: (_xb(k), _xb(jax.random.fold_in(k, 1)))),
    Example("make_oracle_compare", _ex_make_oracle_compare,
            lambda k: (_xb(k), _xb(jax.random.fold_in(k, 1)), jax.random.fold_in(k, 2))),
    Example("init_state", lambda k: _state_arrays(init_state(k)), lambda k: (k,)),
    # methods and drivers
    Example("zhang_li_method_run", _ZHANG_LI_RUN, _x_key),
    Example("make_method_run", _run_summary(_EX_MADE), _x_key),
    Example("second_order_method_run", _run_summary(_EX_SECOND), _x_key),
    Example("run_zhang_li", _ZHANG_LI_RUN, _x_key),  # the same program as the line above
    Example("queries_to_stationarity", _ex_queries, _x_key),
    Example("find_stationary_point", _ex_find_stationary_point, _x_key,
            bad_args=(jnp.array([jnp.nan, 0.0, 0.0]), jax.random.key(0))),
    # test functions
    Example("quadratic_quartic", lambda x: quadratic_quartic(_EX_A)(x),
            lambda k: (_x(k),)),
    Example("rosenbrock", rosenbrock, lambda k: (_x(k),)),
    Example("octopus", octopus, lambda k: (_x(k),)),
    Example("skewed_quartic", skewed_quartic, lambda k: (_x(k),)),
    Example("sparse_quadric_value", lambda x: sparse_quadric(2)(x), lambda k: (_x(k),)),
    Example("mlp_loss", mlp_loss, lambda k: (jax.random.normal(k, (MLP_NUM_PARAMS,)),)),
    Example("indefinite_matrix", lambda k: indefinite_matrix(4, k), lambda k: (k,)),
    Example("chain", chain,
            lambda k: (0.3 * jax.random.normal(k, (5,)), jax.random.randint(k, (), 1, 6))),
    Example("hard_chain_value", _ex_hard_chain_value, _hard_chain_args),
    Example("hard_chain_params", _ex_hard_chain_params, _hard_params_args,
            bad_args=(jnp.asarray(0.0), jnp.asarray(1.0), jnp.asarray(1.0)),  # no links
            broadcasts=True),  # vectorised over T by the experiment
    # host-side helpers: query budgets and the circuit simulators
    Example("bits_for_accuracy", bits_for_accuracy,
            lambda k: (8, float(jax.random.uniform(k, minval=1e-6, maxval=0.5))),
            bad_args=(8, 0.0), jittable=False),
    Example("gradient_queries", gradient_queries, lambda k: (8, 20),
            bad_args=(0, 20), jittable=False),
    Example("hessian_queries", hessian_queries, lambda k: (8, 20),
            bad_args=(8, -1), jittable=False),
    Example("votes_for", votes_for,
            lambda k: (float(jax.random.uniform(k, maxval=0.4)), 1e4),
            bad_args=(0.5, 1e4), jittable=False),
    Example("quantum_params", quantum_params,
            lambda k: (8, float(jax.random.uniform(k, minval=1e-6, maxval=0.5))),
            bad_args=(0, 0.1), jittable=False),
    Example("estimate_from_outcome", estimate_from_outcome, _outcome,
            bad_args=(np.array([0, 64, 3]), 64, 10.0), jittable=False),  # outcome off the grid
    Example("register_distribution", _ex_register, _circuit_args,
            bad_args=(jnp.array([0.1, jnp.nan]), jnp.array([0.6, -0.8])), jittable=False),
    Example("closed_form_distribution", _ex_closed_form, _circuit_args,
            bad_args=(jnp.array([0.1, jnp.nan]), jnp.array([0.6, -0.8])), jittable=False),
    Example("statevector_circuit", _ex_statevector, _circuit_args,
            bad_args=(jnp.array([jnp.inf, 0.0]), jnp.array([0.6, -0.8])), jittable=False),
)
