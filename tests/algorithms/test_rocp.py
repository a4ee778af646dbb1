"""Tests of algorithms.rocp against independent references (scipy LP, brute force, MAPIE)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse

from reprojax.algorithms import rocp
from reprojax.experiments.rocp import peers


def _random_probs(rng, n, y, scale=2.0):
  z = rng.normal(size=(n, y)) * scale
  p = np.exp(z - z.max(1, keepdims=True))
  return p / p.sum(1, keepdims=True)


def _sample_labels(rng, p):
  u = rng.uniform(size=(p.shape[0], 1))
  return np.minimum((u > np.cumsum(p, 1)).sum(1), p.shape[1] - 1).astype(np.int32)


# ------------------------------------------------------------------ robust risk vs LP


def test_robust_risk_equals_worst_case_lp():
  """R(a, C) equals max_p E_p l(a, Y) s.t. p(C) >= 1 - alpha, on 3000 random cases.

  The cases are independent LPs; we stack them block-diagonally into one scipy
  (HiGHS) program, whose optimum restricted to each block is that block's optimum.
  """
  rng = np.random.default_rng(0)
  num, y = 3000, 5
  sizes = rng.integers(2, y + 1, size=num)  # labels per case
  loss = rng.normal(size=(num, y)) * rng.choice([1.0, 10.0], size=(num, 1))
  loss = np.where(rng.uniform(size=(num, y)) < 0.2, np.round(loss), loss)  # some ties
  in_set = rng.uniform(size=(num, y)) < 0.5
  in_set[np.arange(num), rng.integers(0, sizes)] = True  # non-empty
  alpha = rng.uniform(0.01, 0.99, size=num)
  for i in range(num):
    in_set[i, sizes[i]:] = False
  # Variables: p[i, j] for j < sizes[i].
  idx = [(i, j) for i in range(num) for j in range(sizes[i])]
  nv = len(idx)
  rows_i = np.array([i for i, _ in idx])
  cols_j = np.array([j for _, j in idx])
  c = -loss[rows_i, cols_j]
  a_eq = scipy.sparse.csr_matrix((np.ones(nv), (rows_i, np.arange(nv))), shape=(num, nv))
  inside = in_set[rows_i, cols_j]
  a_ub = scipy.sparse.csr_matrix((-np.ones(inside.sum()), (rows_i[inside], np.arange(nv)[inside])),
                                 shape=(num, nv))
  res = scipy.optimize.linprog(c, A_ub=a_ub, b_ub=-(1 - alpha), A_eq=a_eq, b_eq=np.ones(num),
                               bounds=(0, None), method="highs")
  assert res.status == 0, res.message
  lp_value = np.zeros(num)
  np.add.at(lp_value, rows_i, -c * res.x)
  with jax.enable_x64(True):
    got = []
    for s in np.unique(sizes):  # one call per label count (loss rows as single actions)
      sel = np.where(sizes == s)[0]
      risk = jax.jit(jax.vmap(_risk_core))(jnp.asarray(loss[sel, None, :s]),
                                           jnp.asarray(in_set[sel, :s]), jnp.asarray(alpha[sel]))
      got.append((sel, np.asarray(risk)[:, 0]))
  ours = np.zeros(num)
  for sel, v in got:
    ours[sel] = v
  np.testing.assert_allclose(ours, lp_value, rtol=1e-7, atol=1e-7)


def _risk_core(loss_1xY, in_set_Y, alpha):
  from reprojax.algorithms.rocp import _risk
  return _risk._robust_risk(loss_1xY, in_set_Y, alpha)


def test_robust_risk_public_batched_and_minimax():
  rng = np.random.default_rng(1)
  loss = rng.normal(size=(4, 6)).astype(np.float32)
  sets = rng.uniform(size=(3, 7, 6)) < 0.5
  risk = np.asarray(rocp.robust_risk(loss, sets, 0.1))
  assert risk.shape == (3, 7, 4)
  for i, j in itertools.product(range(3), range(7)):
    s = sets[i, j]
    mi = loss[:, s].max(1) if s.any() else loss.max(1)
    mo = loss[:, ~s].max(1) if (~s).any() else mi
    np.testing.assert_allclose(risk[i, j], mi + 0.1 * np.maximum(mo - mi, 0), rtol=1e-6)
  np.testing.assert_array_equal(rocp.minimax_action(loss, sets, 0.1), risk.argmin(-1))
  full = np.ones((6,), bool)  # Remark 3.2: C = Y gives max_y l(a, y)
  np.testing.assert_allclose(rocp.robust_risk(loss, full, 0.3), loss.max(1), rtol=1e-6)


def test_marginal_robust_risk_equals_lp():
  """The marginal worst case over P(Y | x_1..x_N) with coverage >= 1 - alpha equals its LP."""
  rng = np.random.default_rng(9)
  n, y_n, a_n, alpha = 30, 4, 3, 0.17
  compared = 0
  for _ in range(10):
    loss = rng.uniform(0, 10, (a_n, y_n)).astype(np.float32)
    sets = rng.uniform(size=(n, y_n)) < 0.5
    acts = rng.integers(0, a_n, n).astype(np.int32)
    y = rng.integers(0, y_n, n).astype(np.int32)
    m = rocp.decision_metrics(sets, acts, y, loss, np.zeros((a_n, y_n), bool), alpha)
    res = scipy.optimize.linprog(
        -(loss[acts] / n).ravel(), A_ub=-(sets / n).ravel()[None], b_ub=[-(1 - alpha)],
        A_eq=np.kron(np.eye(n), np.ones(y_n)), b_eq=np.ones(n), bounds=(0, None), method="highs")
    if res.status == 0:
      np.testing.assert_allclose(float(m.marginal_robust_risk), -res.fun, rtol=1e-5)
      compared += 1
  # An empty set makes the coverage constraint infeasible only when too many sets are
  # empty; with sets of density 0.5 over 4 labels every draw here is feasible.
  assert compared == 10, f"only {compared} of 10 LPs solved"


# ------------------------------------------------------------------ selector vs brute force


def _ref_levels(p, loss):
  """Reference: candidate levels, V(x,t) from the quantile definition, sets (float64 numpy)."""
  a_n, y_n = loss.shape
  f = np.array([[p[loss[a] <= loss[a, y]].sum() for y in range(y_n)] for a in range(a_n)])
  f[loss >= loss.max(1, keepdims=True)] = 1.0
  f = np.minimum(f, 1.0)
  ts = np.concatenate([[0.0], f.ravel()])
  vals, sets = [], []
  for t in ts:
    theta = np.array([loss[a][f[a] >= t].min() for a in range(a_n)])
    g = t * theta + (1 - t) * loss.max(1)
    a = int(np.argmin(g))
    vals.append(g[a])
    sets.append(np.ones(y_n, bool) if t == 0 else loss[a] <= theta[a])
  return ts, np.array(vals), np.array(sets)


def _ref_set_at(ts, vals, sets, beta):
  obj = vals - beta * ts
  best = np.flatnonzero(obj <= obj.min() + 1e-12)
  return sets[best[np.argmax(ts[best])]]


def _breaks(ts, vals):
  dt = ts[:, None] - ts[None, :]
  with np.errstate(divide="ignore", invalid="ignore"):
    b = (vals[:, None] - vals[None, :]) / dt
  return b[np.isfinite(b) & (dt != 0)]


def test_selector_is_the_exact_argmin_over_levels():
  """The selected t minimises V(x,t) - beta t over a fine grid of t (not only the candidates)."""
  rng = np.random.default_rng(2)
  grid = np.linspace(0, 1, 501)
  with jax.enable_x64(True):
    for _ in range(10):
      p = _random_probs(rng, 1, 4)[0]
      loss = rng.uniform(0, 10, size=(3, 4))
      beta = rng.uniform(0, 15)
      t, set_y, _ = rocp.select_level(p, loss, beta)
      ts, vals, sets = _ref_levels(p, loss)
      # V on a fine grid straight from the definition
      f = np.array([[p[loss[a] <= loss[a, y]].sum() for y in range(4)] for a in range(3)])
      v_grid = []
      for tt in grid:
        theta = np.array([loss[a][f[a] >= tt - 1e-12].min() for a in range(3)])
        v_grid.append((tt * theta + (1 - tt) * loss.max(1)).min())
      obj_sel = (vals - beta * ts)[np.argmin(np.abs(ts - float(t)))]
      assert obj_sel <= np.min(np.array(v_grid) - beta * grid) + 1e-9
      np.testing.assert_array_equal(set_y, _ref_set_at(ts, vals, sets, beta))
      assert set_y[int(np.argmax(p))] or float(t) < 1


# ------------------------------------------------------------------ Algorithm 1 vs brute force


def _ref_full_conformal(p_cal, y_cal, p_test, loss, alpha):
  """Brute-force Algorithm 1: per candidate label, calibrate on n + 1 points by scanning breakpoints."""
  n = len(y_cal)
  k = int(np.ceil((1 - alpha) * (n + 1) - 1e-9))
  levels = [_ref_levels(p, loss) for p in list(p_cal) + [p_test]]
  b = np.concatenate([[0.0]] + [_breaks(ts, v) for ts, v, _ in levels])
  b = np.unique(b[b >= 0])
  mids = np.concatenate([(b[:-1] + b[1:]) / 2, [b[-1] + 1.0]])
  out = np.zeros(p_test.shape[0], bool)
  for y in range(p_test.shape[0]):
    labels = list(y_cal) + [y]
    for beta, mid in zip(b, mids):
      cov = sum(_ref_set_at(*lv, mid)[lab] for lv, lab in zip(levels, labels))
      if cov >= k:
        out[y] = _ref_set_at(*levels[-1], mid)[y]
        break
    else:
      out[y] = True
  return out


def test_full_conformal_equals_brute_force_algorithm_1():
  rng = np.random.default_rng(3)
  with jax.enable_x64(True):
    for trial in range(6):
      n, y_n, a_n = 5, 3, 3
      p = _random_probs(rng, n + 1, y_n, scale=1.5)
      y = _sample_labels(rng, p)
      loss = rng.uniform(0, 10, size=(a_n, y_n))
      alpha = [0.1, 0.25, 0.4][trial % 3]
      want = _ref_full_conformal(p[:n], y[:n], p[n], loss, alpha)
      got = rocp.rocp(p[:n], y[:n], p[n:], loss, alpha, "full").sets_NxY[0]
      np.testing.assert_array_equal(np.asarray(got), want)
      glob = rocp.rocp(p[:n], y[:n], p[n:], loss, alpha, "global").sets_NxY[0]
      assert np.all(np.asarray(glob) <= np.asarray(got))  # the global set is inside the full one


# ------------------------------------------------------------------ finite-sample coverage


def _loo_covered(p, y, loss, alpha, variant):
  """For every ordering's test slot j: is y_j in the set built from the other points?"""
  m = p.shape[0]
  idx = np.array([[i for i in range(m) if i != j] for j in range(m)])
  pred = jax.vmap(lambda ic, j: rocp._rocp._rocp(p[ic], y[ic], p[j][None], loss, alpha, variant))(
      jnp.asarray(idx), jnp.arange(m))
  return pred.sets_NxY[:, 0, :][jnp.arange(m), y]


def test_exhaustive_orderings_of_tiny_exchangeable_sample():
  """Over all (n+1)! orderings of n+1 = 6 points, ROCP (Algorithm 1) covers >= 1 - alpha.

  Under exchangeability every ordering is equally likely, so the fraction of
  orderings whose last point is covered is the exact coverage probability given
  the multiset; the guarantee says it is >= k/(n+1) for every multiset, which we
  check on 300 random multisets (the global-beta variant fails it on about 1% of
  them, see the experiment README).
  """
  rng = np.random.default_rng(4)
  alpha, m, num = 0.3, 6, 300
  k = int(np.ceil((1 - alpha) * m))
  ps = _random_probs(rng, num * m, 4, scale=1.0).astype(np.float32).reshape(num, m, 4)
  ys = np.stack([_sample_labels(rng, q) for q in ps])
  loss = jnp.asarray(rng.uniform(0, 10, size=(3, 4)).astype(np.float32))
  loo = np.asarray(jax.jit(jax.vmap(lambda q, yy: _loo_covered(q, yy, loss, alpha, "full")))(
      jnp.asarray(ps), jnp.asarray(ys)))  # (num, m)
  perms = np.array(list(itertools.permutations(range(m))))  # all 720 orderings
  frac = loo[:, perms[:, -1]].mean(1)  # the last point of each ordering is the test point
  assert frac.min() >= k / m - 1e-12, (frac.min(), k / m)
  assert loo.sum(1).min() >= k


def test_coverage_over_random_splits_within_binomial_band():
  """ROCP's and LAC's mean coverage over 60 random splits lie in the binomial band."""
  rng = np.random.default_rng(5)
  n_pool, n_cal, alpha, splits = 240, 100, 0.1, 60
  p = _random_probs(rng, n_pool, 5, scale=1.5).astype(np.float32)
  loss = rng.uniform(0, 10, size=(3, 5)).astype(np.float32)
  keys = jax.random.split(jax.random.key(0), splits)
  p_j, loss_j = jnp.asarray(p), jnp.asarray(loss)

  def one(key):
    k1, k2 = jax.random.split(key)
    y = jax.random.categorical(k1, jnp.log(p_j))  # a fresh label draw from the known p(y|x)
    perm = jax.random.permutation(k2, n_pool)
    cal, test = perm[:n_cal], perm[n_cal:]
    preds = (rocp._rocp._rocp(p_j[cal], y[cal], p_j[test], loss_j, alpha, "full"),
             rocp._baselines._lac(p_j[cal], y[cal], p_j[test], loss_j, alpha))
    return jnp.stack([jnp.take_along_axis(q.sets_NxY, y[test][:, None], axis=1).mean()
                      for q in preds])

  cov_rocp, cov_lac = np.asarray(jax.jit(jax.vmap(one))(keys)).T
  n_test = n_pool - n_cal
  lower = 1 - alpha
  # Split-conformal coverage given the calibration set is Beta distributed; over
  # splits its mean is >= 1 - alpha (<= 1 - alpha + 1/(n+1) for continuous LAC scores).
  se = np.sqrt(lower * alpha / n_test + lower * alpha / (n_cal + 2)) / np.sqrt(splits)
  for cov in (cov_rocp, cov_lac):
    assert cov.mean() >= lower - 4 * se, (cov.mean(), se)
  assert cov_lac.mean() <= lower + 1 / (n_cal + 1) + 4 * se, (cov_lac.mean(), se)


# ------------------------------------------------------------------ MAPIE


def _mapie_sets(p, y, n, score, alpha, seed=7):
  """MAPIE's split-conformal sets for fixed probabilities (the benchmark's adapter)."""
  return peers.mapie_split_conformal(score, p, y, n, alpha, seed=seed)()


@pytest.mark.parametrize("score", ["lac", "aps"])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_lac_aps_sets_equal_mapie(score, alpha):
  rng = np.random.default_rng(6)
  n, m = 300, 300
  p = _random_probs(rng, n + m, 6).astype(np.float32).astype(np.float64)
  p /= p.sum(1, keepdims=True)
  y = _sample_labels(rng, p)
  want = _mapie_sets(p, y, n, score, alpha)
  p32 = p.astype(np.float32)
  if score == "lac":
    got = rocp.lac(p32[:n], y[:n], p32[n:], None, alpha).sets_NxY
  else:
    u = np.random.RandomState(7).uniform(size=n).astype(np.float32)  # MAPIE's draws
    got = rocp.aps_mapie(p32[:n], y[:n], p32[n:], None, alpha, u).sets_NxY
  np.testing.assert_array_equal(np.asarray(got), want)


# ------------------------------------------------------------------ baselines, oracle


def test_best_response_rac_raps_oracle():
  rng = np.random.default_rng(8)
  p = _random_probs(rng, 500, 4).astype(np.float32)
  y = _sample_labels(rng, p)
  loss = rng.uniform(0, 10, size=(3, 4)).astype(np.float32)
  np.testing.assert_array_equal(rocp.best_response(p, loss), (p @ loss.T).argmin(1))
  rac = rocp.rac_global_level(p[:250], y[:250], p[250:], loss, 0.1)
  assert np.asarray(rac.sets_NxY)[np.arange(250), y[250:]].mean() >= 0.85
  sets = np.asarray(rac.sets_NxY)
  assert np.all(np.asarray(rac.actions_N) ==
                np.array([loss[:, s].max(1).argmin() for s in sets]))  # max-min action
  raps = rocp.raps(p[:250], y[:250], p[250:], loss, 0.1)
  assert np.asarray(raps.sets_NxY)[np.arange(250), y[250:]].mean() >= 0.85
  # The oracle path with the true p(y|x) covers about 1 - alpha on fresh inputs.
  path = rocp.oracle_calibrate(p[:250], loss)
  pred = rocp.predict(path, p[250:], loss, 0.1, "oracle")
  mass = (np.asarray(pred.sets_NxY) * p[250:]).sum(1).mean()
  assert 0.85 <= mass <= 0.97, mass


# ------------------------------------------------------------------ bad inputs


def test_bad_inputs_raise_value_error():
  p = np.full((10, 3), 1 / 3, np.float32)
  y = np.zeros((10,), np.int32)
  loss = np.ones((2, 3), np.float32)
  neg = p.copy()
  neg[0] = [1.2, -0.2, 0.0]
  cases = {
      "negative probabilities": lambda: rocp.rocp(neg, y, p, loss, 0.1),
      "rows not summing to one": lambda: rocp.lac(p * 1.1, y, p, loss, 0.1),
      "alpha = 0": lambda: rocp.rocp(p, y, p, loss, 0.0),
      "alpha = 1": lambda: rocp.aps_mapie(p, y, p, loss, 1.0),
      "alpha < 0": lambda: rocp.robust_risk(loss, np.ones(3, bool), -0.1),
      "loss shape mismatch": lambda: rocp.rocp(p, y, p, np.ones((2, 4), np.float32), 0.1),
      "loss shape mismatch (risk)": lambda: rocp.robust_risk(loss, np.ones(4, bool), 0.1),
      "NaN scores": lambda: rocp.raps(np.where(p > 0, np.nan, p), y, p, loss, 0.1),
      "NaN test scores": lambda: rocp.rocp(p, y, p * np.nan, loss, 0.1),
      "empty calibration set": lambda: rocp.rocp(p[:0], y[:0], p, loss, 0.1),
      "empty calibration set (lac)": lambda: rocp.lac(p[:0], y[:0], p, loss, 0.1),
      "label out of range": lambda: rocp.calibrate(p, y + 3, loss),
      "bad variant": lambda: rocp.rocp(p, y, p, loss, 0.1, "nope"),
      "non-boolean set": lambda: rocp.robust_risk(loss, np.ones(3), 0.1),
  }
  for name, fn in cases.items():
    with pytest.raises(ValueError):
      fn()
      pytest.fail(f"no ValueError for {name}")
