"""Finding stationary points with a comparison oracle, classical and quantum (simulated).

Paper: Wang, Zhang, Tao, Zhang & Li, "Finding Stationary Points by Comparisons" (ICML 2026).

Public API::

    from reprojax.algorithms import comparison_oracle as co
    oracle = co.make_oracle(f, n)                      # the only holder of f
    state = co.init_state(key)                         # query count lives here
    u, state = co.normalized_gradient(oracle, state, x, gamma=1e-5, bits=20)
    H, R, g, state = co.normalized_hessian(oracle, state, x, key, gamma=1e-5)
    x_eps, queries, xs, counts = co.find_stationary_point(oracle, x0, key, eps=1e-3)

The quantum algorithm is SIMULATED CLASSICALLY (``_quantum``): a dense statevector
for tiny sizes, the exact grid-register distribution for small ones and a tested
closed form for larger ``n``.
"""

from reprojax.algorithms.comparison_oracle._functions import CHAIN_GAP_PER_LINK
from reprojax.algorithms.comparison_oracle._functions import CHAIN_LIPSCHITZ
from reprojax.algorithms.comparison_oracle._functions import MLP_NUM_PARAMS
from reprojax.algorithms.comparison_oracle._functions import chain
from reprojax.algorithms.comparison_oracle._functions import hard_chain
from reprojax.algorithms.comparison_oracle._functions import hard_chain_params
from reprojax.algorithms.comparison_oracle._functions import indefinite_matrix
from reprojax.algorithms.comparison_oracle._functions import mlp_loss
from reprojax.algorithms.comparison_oracle._functions import octopus
from reprojax.algorithms.comparison_oracle._functions import quadratic_quartic
from reprojax.algorithms.comparison_oracle._functions import rosenbrock
from reprojax.algorithms.comparison_oracle._functions import skewed_quartic
from reprojax.algorithms.comparison_oracle._functions import sparse_quadric
from reprojax.algorithms.comparison_oracle._gradient import bits_for_accuracy
from reprojax.algorithms.comparison_oracle._gradient import gradient_queries
from reprojax.algorithms.comparison_oracle._gradient import normalized_gradient
from reprojax.algorithms.comparison_oracle._gradient import normalized_gradient_batch
from reprojax.algorithms.comparison_oracle._hessian import find_scale
from reprojax.algorithms.comparison_oracle._hessian import hessian_queries
from reprojax.algorithms.comparison_oracle._hessian import normalized_hessian
from reprojax.algorithms.comparison_oracle._optimizers import GDState
from reprojax.algorithms.comparison_oracle._optimizers import Method
from reprojax.algorithms.comparison_oracle._optimizers import SecondOrderState
from reprojax.algorithms.comparison_oracle._optimizers import find_stationary_point
from reprojax.algorithms.comparison_oracle._optimizers import make_method
from reprojax.algorithms.comparison_oracle._optimizers import queries_to_stationarity
from reprojax.algorithms.comparison_oracle._optimizers import run
from reprojax.algorithms.comparison_oracle._optimizers import second_order_method
from reprojax.algorithms.comparison_oracle._optimizers import trust_region_step
from reprojax.algorithms.comparison_oracle._optimizers import zhang_li_method
from reprojax.algorithms.comparison_oracle._oracle import ComparisonOracle
from reprojax.algorithms.comparison_oracle._oracle import OracleState
from reprojax.algorithms.comparison_oracle._oracle import compare
from reprojax.algorithms.comparison_oracle._oracle import init_state
from reprojax.algorithms.comparison_oracle._oracle import make_oracle
from reprojax.algorithms.comparison_oracle._oracle import votes_for
from reprojax.algorithms.comparison_oracle._quantum import QuantumParams
from reprojax.algorithms.comparison_oracle._quantum import closed_form_distribution
from reprojax.algorithms.comparison_oracle._quantum import estimate_from_outcome
from reprojax.algorithms.comparison_oracle._quantum import quantum_gradient_batch
from reprojax.algorithms.comparison_oracle._quantum import quantum_normalized_gradient
from reprojax.algorithms.comparison_oracle._quantum import quantum_params
from reprojax.algorithms.comparison_oracle._quantum import register_distribution
from reprojax.algorithms.comparison_oracle._quantum import statevector_circuit

__all__ = (
    "bits_for_accuracy", "chain", "CHAIN_GAP_PER_LINK", "CHAIN_LIPSCHITZ",
    "closed_form_distribution", "compare", "ComparisonOracle", "estimate_from_outcome",
    "find_scale", "find_stationary_point", "GDState", "gradient_queries", "hard_chain",
    "hard_chain_params", "hessian_queries", "indefinite_matrix", "init_state", "make_method",
    "make_oracle", "Method", "mlp_loss", "MLP_NUM_PARAMS", "normalized_gradient",
    "normalized_gradient_batch", "normalized_hessian", "octopus", "OracleState",
    "quadratic_quartic", "quantum_gradient_batch", "quantum_normalized_gradient",
    "quantum_params", "QuantumParams", "queries_to_stationarity", "register_distribution",
    "rosenbrock", "run", "second_order_method", "SecondOrderState", "skewed_quartic",
    "sparse_quadric", "statevector_circuit", "trust_region_step", "votes_for",
    "zhang_li_method",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.comparison_oracle import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
