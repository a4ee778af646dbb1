r"""Risk-averse calibration (RAC, Kiyani et al., ICML 2025): the paper's, and our earlier reading.

Both act by the max-min rule :math:`\arg\min_a \max_{y \in C} \ell(a, y)` and build sets
from the model's loss quantiles. For one input with probabilities p and action a, let
:math:`F_a(l) = \sum_y p_y 1[\ell(a, y) \le l]` and :math:`\theta_a(s)` the s-quantile of
:math:`\ell(a, Y)`: the smallest loss level l in row a with :math:`F_a(l) \ge s`
(:math:`\theta_a(0)` is the row's smallest loss). The risk-averse agent at level s plays
:math:`a^*(s) = \arg\min_a \theta_a(s)` (ties: smallest index) and its set is
:math:`C(x, s) = \{y : \ell(a^*, y) \le \theta_{a^*}(s)\}`.

* ``rac`` (the ROCP paper's evaluation of RAC): the level is chosen per input,
  :math:`s^*(x; \beta) = \arg\max_s [\beta s - \min_a \theta_a(s)]` (ties: the smallest s),
  over the candidates :math:`\{0, 1\} \cup \{F_a(\ell(a, y))\}` (the objective is affine
  on each step of the quantile, so its maximum sits at a step's right end). One global
  multiplier :math:`\beta` is found by bisection so that the empirical coverage of the
  n calibration points reaches :math:`1 - \alpha` (no +1 correction, no test point): beta
  = 0 if it already covers; else doubling from 1 (capped at 1e6), then up to 50 halvings
  (relative tolerance 1e-8), returning the final interval's midpoint, as the authors'
  code does. Their code works in utilities :math:`\max \ell - \ell`; this is the same rule
  in losses.
* ``rac_global_level`` (our earlier reading): one global level t for all inputs, the
  smallest of the grid :math:`\{1/L, \dots, 1\}` whose calibration coverage reaches
  :math:`\lceil (1-\alpha)(n+1) \rceil` points.

References:
  Kiyani, Pappas, Roth & Hassani, "Decision-Theoretic Foundations for Conformal
  Prediction" (ICML 2025); Wang & Dobriban, "Optimal Decision-Making Based on Prediction
  Sets" (ICML 2026), whose evaluation the paper's reading follows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from reprojax.algorithms.rocp import _optimal
from reprojax.algorithms.rocp import _risk
from reprojax.algorithms.rocp._baselines import _arr
from reprojax.algorithms.rocp._baselines import _check
from reprojax.algorithms.rocp._rocp import Prediction

BETA_MAX = 1e6  # the authors' cap on the multiplier
BISECTION_STEPS = 50
BISECTION_RTOL = 1e-8


def _sets_at_levels(f_AxY, loss, levels_L):
  """(theta*, set) of the risk-averse agent at each level (one input; ``f_AxY`` its
  :func:`_optimal.loss_cdf`): (L,), (L, Y)."""
  theta_LxA = _optimal.loss_quantiles(f_AxY, loss, levels_L)
  a_L = jnp.argmin(theta_LxA, axis=-1)
  theta_L = jnp.take_along_axis(theta_LxA, a_L[:, None], axis=-1)[:, 0]
  return theta_L, loss[a_L] <= theta_L[:, None]


def _candidates(probs_Y, loss_AxY):
  """The paper's candidate levels {0, 1, F_a(l(a, y))} with min_a theta_a(s) and sets."""
  loss = loss_AxY.astype(probs_Y.dtype)
  f_AxY = _optimal.loss_cdf(probs_Y, loss)
  f = f_AxY.reshape(-1)
  s_M = jnp.concatenate([jnp.zeros((1,), f.dtype), jnp.ones((1,), f.dtype), f])
  w_M, sets_MxY = _sets_at_levels(f_AxY, loss, s_M)
  return s_M, w_M, sets_MxY


def _select(s_M, w_M, beta):
  """argmax_m beta s_m - w_m, ties to the smallest s (then the first candidate)."""
  obj = beta * s_M - w_M
  best = obj.max()
  tie = obj >= best
  s_tie = jnp.where(tie, s_M, jnp.inf)
  return jnp.argmax(tie & (s_M <= s_tie.min()))


def _coverage(beta, s_NxM, w_NxM, covered_NxM):
  m = jax.vmap(_select, in_axes=(0, 0, None))(s_NxM, w_NxM, beta)
  return jnp.take_along_axis(covered_NxM, m[:, None], axis=1)[:, 0].mean()


def _bisect_beta(s_NxM, w_NxM, covered_NxM, alpha):
  """The authors' search for the global multiplier (module docstring)."""
  dtype = s_NxM.dtype
  target = 1.0 - alpha
  ok = lambda b: _coverage(b, s_NxM, w_NxM, covered_NxM) >= target  # noqa: E731
  one, cap = jnp.ones((), dtype), jnp.asarray(BETA_MAX, dtype)

  def grow(state):
    _, high = state
    return high, jnp.minimum(2.0 * high, cap)

  low, high = jax.lax.while_loop(lambda st: ~ok(st[1]) & (st[1] < cap), grow,
                                 (jnp.zeros((), dtype), one))
  reachable = ok(high)

  def halve(state):
    i, lo, hi = state
    mid = 0.5 * (lo + hi)
    good = ok(mid)
    return i + 1, jnp.where(good, lo, mid), jnp.where(good, mid, hi)

  def more(state):
    i, lo, hi = state
    mid = 0.5 * (lo + hi)
    return (i < BISECTION_STEPS) & (hi - lo >= BISECTION_RTOL * jnp.maximum(jnp.abs(mid), 1e-6))

  _, low, high = jax.lax.while_loop(more, halve, (0, low, high))
  beta = jnp.where(reachable, 0.5 * (low + high), high)
  return jnp.where(ok(jnp.zeros((), dtype)), 0.0, beta)


def _rac(probs_cal, labels_cal, probs_test, loss_AxY, alpha):
  loss = loss_AxY.astype(probs_cal.dtype)
  s_cal, w_cal, sets_cal = jax.vmap(_candidates, in_axes=(0, None))(probs_cal, loss)
  covered = jnp.take_along_axis(sets_cal, labels_cal[:, None, None], axis=-1)[..., 0]
  beta = _bisect_beta(s_cal, w_cal, covered, alpha)
  s_t, w_t, sets_t = jax.vmap(_candidates, in_axes=(0, None))(probs_test, loss)
  m = jax.vmap(_select, in_axes=(0, 0, None))(s_t, w_t, beta)
  sets = jnp.take_along_axis(sets_t, m[:, None, None], axis=1)[:, 0]
  actions = _risk._minimax_action(loss, sets, jnp.zeros((), loss.dtype))
  return Prediction(sets, actions, beta)


_rac_jit = jax.jit(_rac)


def rac(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha) -> Prediction:
  r"""RAC as the ROCP paper evaluates it: a level per input from one bisected multiplier.

  Args:
    probs_cal_NxY, labels_cal_N: calibration probabilities (n, Y) and labels (n,).
    probs_test_MxY: test probabilities (m, Y).
    loss_AxY: loss (A, Y).
    alpha: miscoverage in (0, 1); the target is calibration coverage >= 1 - alpha.

  Returns:
    :class:`Prediction` with max-min actions and ``beta`` the multiplier (the capped
    1e6 when no multiplier reaches the target).
  """
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  if loss_AxY is None:
    raise ValueError("rac needs a loss matrix loss_AxY, got None")
  return _rac_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)))


def _rac_global_level(probs_cal, labels_cal, probs_test, loss_AxY, alpha, num_levels=200):
  levels = jnp.linspace(0.0, 1.0, num_levels + 1, dtype=probs_cal.dtype)[1:]  # t > 0
  loss = loss_AxY.astype(probs_cal.dtype)
  sets_at = jax.vmap(lambda p, lv: _sets_at_levels(_optimal.loss_cdf(p, loss), loss, lv)[1],
                     in_axes=(0, None))
  sets_cal = sets_at(probs_cal, levels)
  covered_L = jnp.take_along_axis(sets_cal, labels_cal[:, None, None], axis=-1)[..., 0].sum(0)
  k = _optimal.conformal_rank(jnp.asarray(probs_cal.shape[0], probs_cal.dtype), alpha)
  ok = covered_L >= k
  li = jnp.where(ok.any(), jnp.argmax(ok), num_levels - 1)
  level = levels[li]
  sets = sets_at(probs_test, level[None])[:, 0] | ~ok.any()
  actions = _risk._minimax_action(loss, sets, 0.0)
  return Prediction(sets, actions, level)


_rac_global_level_jit = jax.jit(_rac_global_level, static_argnames=("num_levels",))


def rac_global_level(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha,
                     num_levels: int = 200) -> Prediction:
  """RAC as we first read it: one global level for every input; ``beta`` holds the level t."""
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  if loss_AxY is None:
    raise ValueError("rac_global_level needs a loss matrix loss_AxY, got None")
  return _rac_global_level_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY,
                                           loss_AxY, alpha)), num_levels=int(num_levels))
