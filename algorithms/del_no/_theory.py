"""The spectral bias-variance model of the optimal derivative order, and its closed-form minimiser.

Model. A del-NO with a feature ``D^beta u`` must still realise the residual
``delta = m - beta`` orders of the PDE's order-``m`` structure inside the network.
Two terms of the excess risk compete (our derivation of the form the paper quotes
as its Theorem 5.6; the constants are ours):

* bias (approximation): implicit differentiation of order delta by a network costs
  a rate ``W^-(s - delta)/d`` (the abstract's rate with m replaced by the residual
  order), i.e. a squared error ``c_b xi_c^{2 delta}`` with ``xi_c = W^{1/d} > 1``
  the network's effective resolution and ``c_b = W^{-2 s / d}``;
* variance (noise): the feature amplifies input noise of level sigma at frequency
  xi by ``xi^beta``; the noise power is dominated by the top of the band xi_max
  and is averaged over n training pairs: ``c_v (sigma^2 / n) xi_max^{2 beta}``.

    R(beta) = c_b xi_c^{2 (m - beta)} + c_v (sigma^2 / n) xi_max^{2 beta}.

R is a sum of two exponentials in beta, hence strictly convex. Setting
``dR/d delta = 0`` with ``delta = m - beta``:

    2 c_b ln(xi_c) xi_c^{2 delta} = 2 c_v (sigma^2 / n) ln(xi_max) xi_max^{2 m} xi_max^{-2 delta}
    (xi_c xi_max)^{2 delta} = [c_v ln(xi_max) xi_max^{2 m} / (c_b ln(xi_c))] sigma^2 / n

    delta* = (A_c - ln(n / sigma^2)) / (2 ln(xi_c xi_max)),
    A_c    = ln(c_v / c_b) + 2 m ln(xi_max) + ln(ln(xi_max) / ln(xi_c)),

the paper's form. ``beta* = m - delta*`` (clipped to [0, m]; the interior optimum
lies below m whenever ``n / sigma^2 < e^{A_c}``, which holds for any practical
noise level because A_c grows like ``2 m ln xi_max``). Trends, read off the formula:
beta* falls as sigma rises, rises as n grows, and falls as the input's frequency
content xi_max rises (d delta*/d ln xi_max > 0 whenever delta* < m).

References:
  Mehouachi & Jabari, "Fractional is Better: Learnable Derivative Orders in Neural
  Operator Learning", ICML 2026 (Theorem 5.6, form quoted in the authors' README).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def _check(m, n, sigma, xi_c, xi_max, c_b, c_v):
  _common.check_in_range("m", m, 0.0, lo_open=True)
  _common.check_in_range("n", n, 0.0, lo_open=True)
  _common.check_in_range("sigma", sigma, 0.0, lo_open=True)
  _common.check_in_range("xi_c", xi_c, 1.0, lo_open=True)
  _common.check_in_range("xi_max", xi_max, 1.0, lo_open=True)
  _common.check_in_range("c_b", c_b, 0.0, lo_open=True)
  _common.check_in_range("c_v", c_v, 0.0, lo_open=True)
  for name, v in (("m", m), ("n", n), ("sigma", sigma), ("xi_c", xi_c), ("xi_max", xi_max)):
    if np.ndim(v) != 0:
      raise ValueError(f"{name} must be a scalar, got shape {np.shape(v)}")


def spectral_risk(beta, m, n, sigma, xi_c, xi_max, c_b=1.0, c_v=1.0):
  """R(beta) = c_b xi_c^{2 (m - beta)} + c_v (sigma^2 / n) xi_max^{2 beta} (any beta shape)."""
  _check(m, n, sigma, xi_c, xi_max, c_b, c_v)
  beta = _common.check_arrays({"beta": beta}, shapeless=("beta",))["beta"]
  bias = c_b * jnp.exp(2 * (m - beta) * jnp.log(xi_c))
  var = c_v * sigma**2 / n * jnp.exp(2 * beta * jnp.log(xi_max))
  return bias + var


def order_gap_constant(m, xi_c, xi_max, c_b=1.0, c_v=1.0):
  """A_c = ln(c_v / c_b) + 2 m ln(xi_max) + ln(ln(xi_max) / ln(xi_c)).

  Args: as for :func:`optimal_order` (m > 0, xi_c > 1, xi_max > 1, c_b, c_v > 0).
  """
  _check(m, 1.0, 1.0, xi_c, xi_max, c_b, c_v)
  return (jnp.log(c_v / c_b) + 2 * m * jnp.log(xi_max)
          + jnp.log(jnp.log(xi_max) / jnp.log(xi_c)))


def optimal_order(m, n, sigma, xi_c, xi_max, c_b=1.0, c_v=1.0):
  """The closed-form minimiser beta* of :func:`spectral_risk` over [0, m].

  Args:
    m: PDE order (> 0). n: training-set size. sigma: input noise level (> 0).
    xi_c: network resolution (> 1). xi_max: top frequency of the input (> 1).
    c_b, c_v: bias and variance constants (> 0).

  Returns:
    ``(beta_star, delta_star)``: the clipped optimal order and the unclipped gap
    ``delta* = (A_c - ln(n / sigma^2)) / (2 ln(xi_c xi_max))``.
  """
  _check(m, n, sigma, xi_c, xi_max, c_b, c_v)
  a_c = order_gap_constant(m, xi_c, xi_max, c_b, c_v)
  delta = (a_c - jnp.log(n / sigma**2)) / (2 * jnp.log(xi_c * xi_max))
  return jnp.clip(m - delta, 0.0, m), delta
