r"""Risk-optimal prediction sets at a level t, the selector, and ROCP's calibration.

Derivation (our write-up of the paper's Sections 3-4; see the experiment README).

**Sets at a level.** Fix an input x with model probabilities :math:`p(y|x)`. For an
action a let :math:`F_a(\theta) = P(\ell(a, Y) \le \theta \mid x)` and
:math:`\theta_a(t) = \min\{\theta : F_a(\theta) \ge t\}` its t-quantile. The set
:math:`C_a(t) = \{y : \ell(a, y) \le \theta_a(t)\}` has conditional coverage at
least t, and against every distribution that gives it coverage t the
worst-case loss of a is :math:`t\,\theta_a(t) + (1 - t) M_a` with
:math:`M_a = \max_y \ell(a, y)`. The level-t value and its set are

.. math::
   V(x, t) = \min_a \bigl[t\,\theta_a(t) + (1 - t) M_a\bigr],\qquad
   C(x, t) = \{y : \ell(\hat a, y) \le \theta_{\hat a}(t)\},

with :math:`\hat a` the minimising action (ties: smallest index). At t = 0 the set
is the whole label space and :math:`\hat a = \arg\min_a M_a` (Remark 3.2).

**Finitely many levels matter.** :math:`\theta_a(t)` is a step function that jumps
just after each :math:`F_a(\ell(a, y))`, so on each step
:math:`t\theta_a + (1-t)M_a - \beta t` is affine in t and its minimum over the
step sits at the step's right end. Hence :math:`\min_t V(x,t) - \beta t` is
attained on the M = 1 + A Y candidates :math:`\{0\} \cup \{F_a(\ell(a,y))\}`
(duplicates allowed; :math:`F_a` at a worst label is set to exactly 1).

**Selector.** :math:`t(x; \beta) = \arg\min_t V(x, t) - \beta t` over the candidates,
ties toward the larger t. For each candidate this is a line in :math:`\beta`, so
the selected candidate is the lower envelope: the vertices of the lower convex
hull of :math:`\{(t_m, V_m)\}` in increasing t, vertex k selected on
:math:`[b_{k-1}, b_k)` with :math:`b_k` the slope between vertices k and k+1
(left-closed: at a tie the larger t wins). We compute the breakpoints as a
running maximum of those slopes, so the pieces tile the real line exactly even
under rounding. :math:`\beta` is the multiplier of the coverage constraint
:math:`E[t(X)] \ge 1 - \alpha` in :math:`\min E[V(X, t(X))]`, hence
:math:`\beta \ge 0`; on :math:`\beta \ge 0` the level t = 0 is never selected
because :math:`V(x, t) \le V(x, 0)` for every t.

**Calibration.** Coverage of the calibration sample as a function of
:math:`\beta`, :math:`N(\beta) = \sum_i 1[y_i \in C(x_i, t(x_i;\beta))]`, is piecewise
constant and right-continuous with jumps at the points' breakpoints; it need
not be monotone, so we scan the breakpoints instead of bisecting
(:class:`CoveragePath`). With :math:`k = \lceil (1-\alpha)(n+1) \rceil`:

* *global* (one beta, as the released code; its target there is
  :math:`\lceil (1-\alpha) n \rceil` points, no +1: ``predict(variant="released")``):
  :math:`\hat\beta` = smallest :math:`\beta \ge 0` with :math:`N(\beta) \ge k`; the test
  set is :math:`C(x, t(x; \hat\beta))`. Valid as n grows but not finite-sample: the sets
  are not nested in :math:`\beta`.
* *full* (the paper's Algorithm 1): for each candidate label y of the test point,
  calibrate on the n + 1 points including (x, y) and keep y if it lands in its own
  set. Because :math:`N_{n+1}(\beta) = N(\beta) + 1[y \in C(x, \beta)]`, the smallest
  :math:`\beta` reaching k is :math:`\min(\beta_k, \inf\{\beta \in B : y \in C(x,\beta)\})`
  with :math:`\beta_k` the global :math:`\hat\beta` and
  :math:`B = \{\beta \in [0, \beta_k] : N(\beta) \ge k - 1\}`, so the full set is the
  union :math:`\bigcup_{\beta \in B} C(x, t(x;\beta))`, a superset of the global one,
  computed with one pass over the test point's pieces. Exchangeability of the
  n + 1 points gives :math:`P(Y \in C) \ge k/(n+1) \ge 1 - \alpha` for any model and
  any distribution.

If no :math:`\beta \ge 0` reaches k, :math:`\hat\beta = +\infty` and the set is the
whole label space (valid, uninformative).

References:
  Wang & Dobriban, "Optimal Decision-Making Based on Prediction Sets", ICML 2026,
  Sections 3-4 and Algorithm 1; Vovk et al., "Algorithmic Learning in a Random
  World" (2005) for full conformal prediction.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Candidates(NamedTuple):
  """The M = 1 + A*Y candidate levels of one input (leading batch axes allowed)."""

  t_M: jax.Array  # float (M,): candidate levels, t_M[0] = 0
  value_M: jax.Array  # float (M,): V(x, t_m)
  sets_MxY: jax.Array  # bool (M, Y): C(x, t_m); row 0 is the whole label space
  action_M: jax.Array  # int32 (M,): the action attaining V(x, t_m)


class Pieces(NamedTuple):
  """The selector as a function of beta: piece k selected for beta in [lo_M[k], hi_M[k]).

  Pieces are in increasing t; entries past the last vertex are empty (lo = hi = inf).
  """

  lo_M: jax.Array  # float (M,)
  hi_M: jax.Array  # float (M,)
  t_M: jax.Array  # float (M,): level of each piece
  sets_MxY: jax.Array  # bool (M, Y)
  action_M: jax.Array  # int32 (M,)


class CoveragePath(NamedTuple):
  """Calibration coverage N(beta) as a step function on beta >= 0 (alpha-free).

  N(beta) = count_E[k] for beta in [beta_E[k], beta_E[k+1]); beta_E is sorted,
  beta_E[0] = 0, padded with +inf.
  """

  beta_E: jax.Array  # float (E,), E = n*M + 1
  count_E: jax.Array  # float (E,): covered calibration points (or expected coverage, oracle)
  n: jax.Array  # float (): calibration size


def loss_cdf(probs_Y: jax.Array, loss_AxY: jax.Array) -> jax.Array:
  """F_a(l(a, y)) = sum_z p_z 1[l(a, z) <= l(a, y)], (A, Y); exactly 1 at a row's worst label."""
  loss = loss_AxY.astype(probs_Y.dtype)
  le_AxYxY = loss[:, None, :] <= loss[:, :, None]  # [a, y, z]: l(a, z) <= l(a, y)
  f_AxY = jnp.einsum("ayz,z->ay", le_AxYxY.astype(probs_Y.dtype), probs_Y)
  return jnp.where(le_AxYxY.all(-1), 1.0, jnp.minimum(f_AxY, 1.0))


def loss_quantiles(f_AxY: jax.Array, loss_AxY: jax.Array, levels_L: jax.Array) -> jax.Array:
  """theta_a(t) = min{l(a, y) : F_a(l(a, y)) >= t} at each level t, (L, A) (the row's
  smallest loss at t = 0)."""
  reach_LxAxY = f_AxY[None] >= levels_L[:, None, None]
  return jnp.where(reach_LxAxY, loss_AxY[None], jnp.inf).min(-1)


def candidates(probs_Y: jax.Array, loss_AxY: jax.Array) -> Candidates:
  """Candidate levels, values, sets and actions of one input (unchecked core)."""
  dtype = probs_Y.dtype
  loss = loss_AxY.astype(dtype)
  f_AxY = loss_cdf(probs_Y, loss)
  t_M = jnp.concatenate([jnp.zeros((1,), dtype), f_AxY.reshape(-1)])
  theta_MxA = loss_quantiles(f_AxY, loss, t_M)
  worst_A = loss.max(-1)
  g_MxA = t_M[:, None] * theta_MxA + (1.0 - t_M[:, None]) * worst_A[None]
  g_MxA = g_MxA.at[0].set(worst_A)  # t = 0: 0 * theta, kept exact
  action_M = jnp.argmin(g_MxA, axis=-1).astype(jnp.int32)
  value_M = jnp.take_along_axis(g_MxA, action_M[:, None], axis=-1)[:, 0]
  theta_hat_M = jnp.take_along_axis(theta_MxA, action_M[:, None], axis=-1)[:, 0]
  sets_MxY = loss[action_M] <= theta_hat_M[:, None]
  sets_MxY = sets_MxY.at[0].set(True)
  return Candidates(t_M, value_M, sets_MxY, action_M)


def pieces(cand: Candidates) -> Pieces:
  """Lower envelope of the lines V_m - beta t_m (one input, unchecked core)."""
  t, v = cand.t_M, cand.value_M
  m = t.shape[0]
  idx = jnp.arange(m)
  same_t = t[:, None] == t[None, :]
  dup = (same_t & (idx[None, :] < idx[:, None])).any(-1)
  dt = t[:, None] - t[None, :]
  slope = (v[:, None] - v[None, :]) / jnp.where(same_t, 1.0, dt)
  lo = jnp.where(dt > 0, slope, -jnp.inf).max(-1)
  hi = jnp.where(dt < 0, slope, jnp.inf).min(-1)
  vertex = (lo < hi) & ~dup
  order = jnp.argsort(jnp.where(vertex, t, jnp.inf), stable=True)
  nv = vertex.sum()
  ts, vs = t[order], v[order]
  k = jnp.arange(m)
  has_next = k < nv - 1
  nxt = jnp.minimum(k + 1, m - 1)
  step = (vs[nxt] - vs) / jnp.where(has_next, ts[nxt] - ts, 1.0)
  b = jax.lax.cummax(jnp.where(has_next, step, jnp.inf))
  hi_k = jnp.where(k < nv, b, jnp.inf)
  lo_k = jnp.where(k < nv, jnp.concatenate([jnp.full((1,), -jnp.inf, b.dtype), b[:-1]]), jnp.inf)
  return Pieces(lo_k, hi_k, ts, cand.sets_MxY[order], cand.action_M[order])


def piece_at(pcs: Pieces, beta: jax.Array) -> jax.Array:
  """Index of the piece selected at beta (finite), one input."""
  k = (pcs.hi_M <= beta).sum()
  return jnp.minimum(k, pcs.hi_M.shape[0] - 1)


def coverage_path(pcs: Pieces, weight_NxM: jax.Array) -> CoveragePath:
  """N(beta) = sum_i weight_i[piece_i(beta)] on beta >= 0, from n inputs' pieces (batched)."""
  n, m = weight_NxM.shape
  dtype = pcs.hi_M.dtype
  w = weight_NxM.astype(dtype)
  base = w[:, 0].sum()
  finite = jnp.isfinite(pcs.hi_M)
  delta = jnp.concatenate([w[:, 1:] - w[:, :-1], jnp.zeros((n, 1), dtype)], axis=1)
  delta = jnp.where(finite, delta, 0.0).reshape(-1)
  pos = jnp.where(finite, pcs.hi_M, jnp.inf).reshape(-1)
  order = jnp.argsort(pos)
  pos_s = pos[order]
  cums = jnp.cumsum(delta[order])
  grid = jnp.concatenate([jnp.zeros((1,), dtype), jnp.maximum(pos_s, 0.0)])  # sorted already
  # N(grid_k) needs the cumulative delta up to the last event at or below grid_k:
  # for grid_0 = 0 (and every non-positive event) that is the last non-positive
  # event; for an event position it is the end of its run of equal positions.
  e = pos_s.shape[0]
  j = jnp.arange(e)
  run_last = jnp.concatenate([pos_s[1:] != pos_s[:-1], jnp.ones((1,), bool)])
  run_end = jax.lax.cummin(jnp.where(run_last, j, e), reverse=True)
  n_nonpos = (pos_s <= 0).sum()
  at = jnp.concatenate([(n_nonpos - 1)[None], jnp.where(pos_s > 0, run_end, n_nonpos - 1)])
  count = base + jnp.where(at >= 0, cums[jnp.maximum(at, 0)], 0.0)
  del m
  return CoveragePath(grid, count, jnp.asarray(n, dtype))


def conformal_rank(n: jax.Array, alpha: jax.Array) -> jax.Array:
  """k = ceil((1 - alpha)(n + 1)), as a float; a 1e-6 slack absorbs float32 rounding."""
  x = (1.0 - alpha) * (n + 1.0)
  return jnp.ceil(x - 1e-6 * jnp.maximum(x, 1.0))


def smallest_beta(path: CoveragePath, target: jax.Array) -> jax.Array:
  """Smallest beta >= 0 with N(beta) >= target (+inf if none)."""
  ok = (path.count_E >= target) & jnp.isfinite(path.beta_E)
  return jnp.where(ok, path.beta_E, jnp.inf).min()


def global_sets(pcs: Pieces, beta: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Set and level selected at one beta for one input (beta = inf: whole label space)."""
  k = piece_at(pcs, jnp.where(jnp.isfinite(beta), beta, 0.0))
  full = ~jnp.isfinite(beta)
  return pcs.sets_MxY[k] | full, jnp.where(full, 1.0, pcs.t_M[k])


def full_conformal_set(pcs: Pieces, path: CoveragePath, beta_k: jax.Array,
                       target: jax.Array) -> jax.Array:
  """Algorithm 1's set for one test input: the union of C(x, beta) over beta in B."""
  grid, count = path.beta_E, path.count_E
  good = (count >= target - 1) & (grid <= beta_k) & jnp.isfinite(grid)
  prefix = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(good.astype(jnp.int32))])
  lo = jnp.maximum(pcs.lo_M, 0.0)
  valid = (lo < pcs.hi_M) & (lo <= beta_k)
  k0 = jnp.searchsorted(grid, lo, side="right") - 1
  k1 = jnp.minimum(jnp.searchsorted(grid, pcs.hi_M, side="left") - 1,
                   jnp.searchsorted(grid, beta_k, side="right") - 1)
  k0 = jnp.clip(k0, 0, grid.shape[0] - 1)
  k1 = jnp.clip(k1, -1, grid.shape[0] - 1)
  hit = valid & (prefix[k1 + 1] - prefix[k0] > 0)
  union = (pcs.sets_MxY & hit[:, None]).any(0)
  return union | ~jnp.isfinite(beta_k)
