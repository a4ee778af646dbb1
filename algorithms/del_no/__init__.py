"""del-NO: learnable fractional derivative features for neural operators (Mehouachi & Jabari, ICML 2026).

Public API::

    from reprojax.algorithms import del_no
    du = del_no.fractional_derivative(u, 0.5, dx=1 / 256)                  # spectral (i k)^0.5
    du = del_no.fractional_derivative(u, 1.7, dx=h, method="gl", gl_terms=16)
    f_BxNxK = del_no.derivative_features(u_BxN, betas_K, scales_K)        # s_k D^beta_k u
    beta_star, gap = del_no.optimal_order(m=2, n=1000, sigma=0.05, xi_c=8.0, xi_max=64.0)

References:
  Mehouachi & Jabari, "Fractional is Better: Learnable Derivative Orders in Neural
  Operator Learning", ICML 2026.
"""


from reprojax.algorithms.del_no._fractional import BETA_MAX
from reprojax.algorithms.del_no._fractional import derivative_features
from reprojax.algorithms.del_no._fractional import derivative_features_2d
from reprojax.algorithms.del_no._fractional import fractional_derivative
from reprojax.algorithms.del_no._fractional import gl_weights
from reprojax.algorithms.del_no._theory import optimal_order
from reprojax.algorithms.del_no._theory import order_gap_constant
from reprojax.algorithms.del_no._theory import spectral_risk

__all__ = (
    "BETA_MAX", "derivative_features", "derivative_features_2d", "fractional_derivative",
    "gl_weights", "optimal_order", "order_gap_constant", "spectral_risk",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.del_no import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
