"""The ROCP paper's own evaluation baselines against hand-computed cases and plain references.

RAC (a level per input from one bisected multiplier), APS with the mass strictly above
the label, SOCOP's convex-hull score, decision calibration, the per-label critical
rate, the released ROCP target and the quantile's clip. The references here are
written from the definitions (loops in utilities, a monotone-chain hull, numpy least
squares), independently of the vectorised library code.
"""

import jax
import numpy as np
import pytest

from reprojax.algorithms import rocp
from reprojax.algorithms.rocp._baselines import socop_scores


def _random_probs(rng, n, y, scale=2.0):
  z = rng.normal(size=(n, y)) * scale
  p = np.exp(z - z.max(1, keepdims=True))
  return (p / p.sum(1, keepdims=True)).astype(np.float32)


def _sample_labels(rng, p):
  u = rng.uniform(size=(p.shape[0], 1))
  return np.minimum((u > np.cumsum(p, 1)).sum(1), p.shape[1] - 1).astype(np.int32)


# ------------------------------------------------------------------ RAC, the paper's


def _rac_reference(p, loss, beta):
  """The authors' rule in utilities U = max(loss) - loss, by loops (one input): set, action."""
  util = loss.max() - loss  # (A, Y)
  a_n, y_n = loss.shape

  def h(s):  # (best utility level, its action): largest u with P(U[a] >= u) >= s, max over a
    best_u, best_a = -np.inf, -1
    for a in range(a_n):
      cand = -np.inf
      for u in sorted(set(util[a].tolist()), reverse=True):
        if p[util[a] >= u].sum() >= s or u == util[a].min():
          cand = u
          break
      if cand > best_u:
        best_u, best_a = cand, a
    return best_u, best_a

  levels = [0.0, 1.0] + [p[util[a] >= u].sum() for a in range(a_n) for u in util[a]]
  best_s, best_phi = None, -np.inf
  for s in sorted(levels):
    phi = beta * s + h(s)[0]
    if phi > best_phi:
      best_s, best_phi = s, phi
  u_star, a_star = h(best_s)
  in_set = util[a_star] >= u_star
  action = int(np.argmax([util[a][in_set].min() for a in range(a_n)]))
  return in_set, action


def test_rac_hand_computed():
  # One input type p = (0.6, 0.3, 0.1); action 0 is free on label 0 and costs 10 on label 2,
  # action 1 costs 3 everywhere. Levels: W(0) = W(0.6) = 0, W(0.9) = W(1) = 3, so the
  # level 0.6 (set {0}) wins for beta <= 7.5 and 1 (set Y, action 1) beyond.
  p = np.tile(np.array([[0.6, 0.3, 0.1]], np.float32), (5, 1))
  loss = np.array([[0.0, 5.0, 10.0], [3.0, 3.0, 3.0]], np.float32)
  labels = np.array([0, 0, 0, 1, 2], np.int32)
  # alpha = 0.2: 4 of 5 must be covered, so the set must be Y: the bisection closes on 7.5
  # and returns its last interval's midpoint, which may fall on either side of the jump
  # (the authors' code does the same; its coverage there is not guaranteed).
  pred = rocp.rac(p, labels, p[:1], loss, 0.2)
  assert abs(float(pred.beta) - 7.5) < 1e-4, pred.beta
  # (In float32 the jump itself sits a few ulps off 7.5.)
  got = (tuple(np.asarray(pred.sets_NxY)[0].tolist()), int(pred.actions_N[0]))
  assert got in (((True, False, False), 0), ((True, True, True), 1)), got
  # alpha = 0.5: 3 of 5 are covered at beta = 0 (set {0}), so beta = 0 and action 0.
  pred = rocp.rac(p, labels, p[:1], loss, 0.5)
  assert float(pred.beta) == 0.0
  np.testing.assert_array_equal(np.asarray(pred.sets_NxY), [[True, False, False]])
  assert int(pred.actions_N[0]) == 0
  for beta, want in ((0.0, [1, 0, 0]), (7.0, [1, 0, 0]), (8.0, [1, 1, 1])):
    np.testing.assert_array_equal(_rac_reference(p[0], loss, beta)[0], np.array(want, bool))


def test_rac_matches_the_utility_reference_and_differs_from_a_global_level():
  rng = np.random.default_rng(3)
  p = _random_probs(rng, 400, 5)
  y = _sample_labels(rng, p)
  loss = rng.integers(0, 8, size=(3, 5)).astype(np.float32)  # integer losses: many ties
  pred = rocp.rac(p[:200], y[:200], p[200:], loss, 0.1)
  beta = float(pred.beta)
  ref = [_rac_reference(q.astype(np.float64), loss, beta) for q in p[200:]]
  sets = np.asarray(pred.sets_NxY)
  agree = np.mean([np.array_equal(s, r[0]) for s, r in zip(sets, ref)])
  assert agree >= 0.995, agree  # float32 sums against float64 at a boundary, at most 1 in 200
  np.testing.assert_array_equal(np.asarray(pred.actions_N),
                                [loss[:, s].max(1).argmin() for s in sets])
  # The bisected beta covers 1 - alpha of the calibration points, a slightly smaller one not.
  cov = lambda b: np.mean([_rac_reference(q.astype(np.float64), loss, b)[0][t]  # noqa: E731
                           for q, t in zip(p[:200], y[:200])])
  assert cov(beta * (1 + 1e-5)) >= 0.9 > cov(beta * 0.98)
  # Our first reading (one level for all inputs) gives other sets on many inputs.
  glob = np.asarray(rocp.rac_global_level(p[:200], y[:200], p[200:], loss, 0.1).sets_NxY)
  assert 0.05 < np.mean(np.any(glob != sets, axis=1)) < 1.0


# ------------------------------------------------------------------ APS, the paper's


def test_aps_paper_hand_computed_and_clip():
  p_cal = np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.2], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]],
                   np.float32)
  y_cal = np.array([1, 1, 2, 2], np.int32)
  # scores: mass strictly above the label: 0.5, 0 (a tie does not count), 0.9, 0.
  # n = 4, alpha = 0.4: k = ceil(0.6 * 5) = 3 -> q = 0.5.
  p_test = np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]], np.float32)
  pred = rocp.aps_paper(p_cal, y_cal, p_test, None, 0.4)
  assert np.isclose(float(pred.beta), 0.5)
  np.testing.assert_array_equal(np.asarray(pred.sets_NxY), [[1, 1, 0], [0, 1, 1]])
  # alpha = 0.1: k = ceil(0.9 * 5) = 5 > n: the authors clip to the largest score (0.9),
  # MAPIE's convention gives +inf (the whole label space).
  assert np.isclose(float(rocp.aps_paper(p_cal, y_cal, p_test, None, 0.1).beta), 0.9)
  assert np.isinf(float(rocp.aps_paper(p_cal, y_cal, p_test, None, 0.1, clip=False).beta))
  assert np.isclose(float(rocp.conformal_quantile(np.arange(4.0), 0.1, clip=True)), 3.0)


# ------------------------------------------------------------------ SOCOP


def _hull_scores(p, lam):
  """SOCOP scores from an explicit monotone-chain lower hull (one input)."""
  order = np.argsort(-p, kind="stable")
  s = np.concatenate([[0.0], np.cumsum(p[order])])
  k = np.arange(len(p) + 1)
  g = (k > 1) + lam * k
  hull = []
  for i in range(len(s)):
    while len(hull) >= 2:
      (x1, y1), (x2, y2) = (s[hull[-2]], g[hull[-2]]), (s[hull[-1]], g[hull[-1]])
      if (x2 - x1) * (g[i] - y1) - (y2 - y1) * (s[i] - x1) <= 1e-12:
        hull.pop()
      else:
        break
    hull.append(i)
  out = np.empty(len(p))
  for rank in range(1, len(p) + 1):
    j = next(j for j in range(1, len(hull)) if hull[j] >= rank)
    a, b = hull[j - 1], hull[j]
    out[order[rank - 1]] = (g[b] - g[a]) / (s[b] - s[a])
  return out


@pytest.mark.parametrize("lam", [0.25, 0.0625])
def test_socop_scores_equal_an_explicit_hull(lam):
  rng = np.random.default_rng(4)
  p = _random_probs(rng, 60, 6, scale=1.5).astype(np.float64)
  got = np.asarray(socop_scores(p.astype(np.float32), lam))
  want = np.stack([_hull_scores(q, lam) for q in p])
  np.testing.assert_allclose(got, want, rtol=2e-4)
  # Hand case: p = (0.6, 0.3, 0.1), lam = 0.25: points (0, 0), (0.6, 0.25), (0.9, 1.5), (1, 1.75);
  # the hull is (0,0)-(0.6,0.25)-(1,1.75): slopes 0.25/0.6 and 1.5/0.4 for ranks 2 and 3.
  if lam == 0.25:
    np.testing.assert_allclose(np.asarray(socop_scores(np.array([[0.6, 0.3, 0.1]],
                                                                     np.float32), lam))[0],
                               [0.25 / 0.6, 1.5 / 0.4, 1.5 / 0.4], rtol=1e-5)


def test_socop_sets_are_nested_and_cover():
  rng = np.random.default_rng(5)
  p = _random_probs(rng, 1200, 6)
  y = _sample_labels(rng, p)
  pred = rocp.socop(p[:600], y[:600], p[600:], None, 0.1)
  sets = np.asarray(pred.sets_NxY)
  assert 0.87 <= sets[np.arange(600), y[600:]].mean() <= 0.95
  # Nested: a kept label keeps every more probable one.
  for q, s in zip(p[600:], sets):
    if s.any():
      assert s[q >= q[s].min()].all()


# ------------------------------------------------------------------ decision calibration


def test_decision_calibration_round_is_least_squares_and_replays():
  rng = np.random.default_rng(6)
  true = _random_probs(rng, 800, 4)
  y = _sample_labels(rng, true)
  model = true ** 2 / (true ** 2).sum(1, keepdims=True)  # over-confident
  cal = rocp.decision_calibrate(jax.random.key(0), model, y, num_actions=3, rounds=1)
  w, u = np.asarray(cal.w_RxAxY[0], np.float64), np.asarray(cal.u_RxYxA[0], np.float64)
  b = np.exp(model @ w.T)
  b /= b.sum(1, keepdims=True)
  resid = np.eye(4)[y] - model
  u_lstsq = np.linalg.lstsq(b, resid, rcond=None)[0].T  # (Y, A)
  np.testing.assert_allclose(u, u_lstsq, atol=5e-3)
  got = np.asarray(rocp.recalibrate(cal, model))
  assert np.allclose(got.sum(1), 1.0, atol=1e-5) and got.min() >= 0
  # The correction removes the residual the adversary found (least squares on B).
  before = np.sum((resid.T @ b / 800) ** 2)
  after = np.sum(((np.eye(4)[y] - got).T @ b / 800) ** 2)
  assert after < 0.2 * before, (before, after)
  # A tolerance above any residual stops before the first correction: nothing moves.
  idle = rocp.decision_calibrate(jax.random.key(0), model, y, 3, rounds=2, eps=10.0)
  assert not np.asarray(idle.used_R).any()
  np.testing.assert_array_equal(np.asarray(rocp.recalibrate(idle, model)), model)


# ------------------------------------------------------------------ metrics, variants


def test_critical_rates_by_label_hand_computed():
  critical = np.zeros((3, 4), bool)
  critical[0, 1:] = True  # action 0 is critical on labels 1..3
  labels = np.array([0, 1, 1, 2, 2, 2, 3], np.int32)
  actions = np.array([0, 0, 1, 0, 0, 2, 1], np.int32)
  got = np.asarray(rocp.critical_rates_by_label(actions, labels, critical))
  np.testing.assert_allclose(got, [0.0, 0.5, 2 / 3, 0.0])


def test_released_rocp_target_and_maxmin_action():
  rng = np.random.default_rng(7)
  p = _random_probs(rng, 500, 4)
  y = _sample_labels(rng, p)
  loss = rng.uniform(0, 10, size=(3, 4)).astype(np.float32)
  path = rocp.calibrate(p[:200], y[:200], loss)
  released = rocp.predict(path, p[:200], loss, 0.1, "released")
  glob = rocp.predict(path, p[:200], loss, 0.1, "global")
  covered = np.asarray(released.sets_NxY)[np.arange(200), y[:200]].sum()
  assert covered >= 180 and float(released.beta) <= float(glob.beta)
  sets = rng.uniform(size=(50, 4)) < 0.5
  want = [loss[:, s].max(1).argmin() if s.any() else loss.max(1).argmin() for s in sets]
  np.testing.assert_array_equal(np.asarray(rocp.maxmin_action(loss, sets)), want)
  lac_mm = rocp.lac(p[:200], y[:200], p[200:], loss, 0.1, action="maxmin")
  np.testing.assert_array_equal(np.asarray(lac_mm.actions_N),
                                np.asarray(rocp.maxmin_action(loss, lac_mm.sets_NxY)))


def test_bad_inputs():
  p = np.full((10, 3), 1 / 3, np.float32)
  y = np.zeros((10,), np.int32)
  loss = np.ones((2, 3), np.float32)
  cases = {
      "unknown action rule": lambda: rocp.lac(p, y, p, loss, 0.1, action="greedy"),
      "socop lam <= 0": lambda: rocp.socop(p, y, p, loss, 0.1, lam=0.0),
      "rac without a loss": lambda: rocp.rac(p, y, p, None, 0.1),
      "rac alpha = 1": lambda: rocp.rac(p, y, p, loss, 1.0),
      "decision calibration, no rounds": lambda: rocp.decision_calibrate(
          jax.random.key(0), p, y, 2, rounds=0),
      "decision calibration, label out of range": lambda: rocp.decision_calibrate(
          jax.random.key(0), p, y + 5, 2),
      "critical mask of wrong rank": lambda: rocp.critical_rates_by_label(y, y, np.ones(3, bool)),
      "recalibrate with other labels": lambda: rocp.recalibrate(
          rocp.decision_calibrate(jax.random.key(0), p, y, 2, rounds=1),
          np.full((4, 4), 0.25, np.float32)),
  }
  for name, fn in cases.items():
    with pytest.raises(ValueError):
      fn()
      pytest.fail(f"no ValueError for {name}")
