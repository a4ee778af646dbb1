"""SNV's estimators against enumeration in numpy, its freezing against the real optimisers,
and the baselines' importances against per-example loops."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import scipy.stats

from reprojax.algorithms import snv
from reprojax.models import maskable_mlp

N = 6


def _net(seed=0):
  rng = np.random.default_rng(seed)
  return (rng.normal(size=(4, N)).astype(np.float32), rng.normal(size=(N,)).astype(np.float32),
          rng.normal(size=(9, 4)).astype(np.float32))


def game(mask_N, w, v, x):
  """Minus the squared error of a one-layer net, neurons outside the mask replaced by their
  mean (the mean output itself would not change under mean ablation)."""
  z = jnp.tanh(x @ w)
  z = jnp.where(mask_N > 0, z, z.mean(0))
  return -jnp.mean((z @ v - jnp.sin(x[:, 0])) ** 2)


def _np_value(coalition, w, v, x):
  z = np.tanh(x.astype(np.float64) @ w)
  out = np.where(np.isin(np.arange(N), list(coalition)), z, z.mean(0))
  return float(-np.mean((out @ v - np.sin(x[:, 0].astype(np.float64))) ** 2))


def _brute_force(w, v, x):
  """Shapley values by walking every one of the N! orders in numpy (float64)."""
  phi = np.zeros(N)
  for order in itertools.permutations(range(N)):
    members = []
    for i in order:
      phi[i] += _np_value(members + [i], w, v, x) - _np_value(members, w, v, x)
      members.append(i)
  return phi / math.factorial(N)


@pytest.fixture(scope="module")
def reference():
  args = _net()
  return args, _brute_force(*args)


def test_exact_and_all_permutations_equal_brute_force(reference):
  args, phi = reference
  np.testing.assert_allclose(snv.exact_shapley(game, args, num_players=N), phi, atol=2e-5)
  perms = np.array(list(itertools.permutations(range(N))), np.int32)
  est = snv.shapley_from_permutations(game, args, perms, chunk=4)
  np.testing.assert_allclose(est.values_N, phi, atol=2e-5)
  assert int(est.num_evaluations) == len(perms) * N + 2


def test_monte_carlo_within_its_error_and_efficiency_exact(reference):
  args, phi = reference
  est = snv.tmc_shapley(game, args, jax.random.key(0), num_players=N, num_permutations=400,
                        tolerance=0.0, max_rounds=2)
  assert int(est.num_permutations) == 800
  z = np.abs(np.asarray(est.values_N) - phi) / np.asarray(est.stderr_N)
  assert np.all(z < 4.5), z
  total = _np_value(range(N), *args) - _np_value([], *args)
  np.testing.assert_allclose(float(jnp.sum(est.values_N)), total, atol=1e-5)  # efficiency
  # every single permutation telescopes, not only the mean
  perms = np.stack([np.random.default_rng(i).permutation(N) for i in range(5)]).astype(np.int32)
  for p in perms:
    one = snv.shapley_from_permutations(game, args, p[None])
    np.testing.assert_allclose(float(jnp.sum(one.values_N)), total, atol=1e-5)


def test_truncation_bounds_the_efficiency_error_and_saves_evaluations(reference):
  args, _ = reference
  total = _np_value(range(N), *args) - _np_value([], *args)
  perms = np.stack([np.random.default_rng(i).permutation(N) for i in range(64)]).astype(np.int32)
  for tol in (0.2, 0.5):
    cut = snv.shapley_from_permutations(game, args, perms, tol, chunk=1)
    assert abs(float(jnp.sum(cut.values_N)) - total) <= tol * abs(total) + 1e-5
    # One permutation at a time (a batch stops when its last permutation is truncated):
    # the same contributions up to the truncation point, and fewer coalitions evaluated.
    saved = 0
    for p in perms[:8]:
      a = snv.shapley_from_permutations(game, args, p[None], tol, chunk=1)
      b = snv.shapley_from_permutations(game, args, p[None], 0.0, chunk=1)
      kept = np.asarray(a.values_N) != 0
      np.testing.assert_allclose(np.asarray(a.values_N)[kept], np.asarray(b.values_N)[kept],
                                 atol=1e-6)
      saved += int(b.num_evaluations) - int(a.num_evaluations)
    assert saved > 0


def test_early_stopping_stops_when_the_error_is_small(reference):
  args, _ = reference
  kw = dict(num_players=N, num_permutations=8, max_rounds=6, tolerance=0.0)
  loose = snv.tmc_shapley(game, args, jax.random.key(1), stop_stderr=10.0, **kw)
  tight = snv.tmc_shapley(game, args, jax.random.key(1), stop_stderr=1e-6, **kw)
  assert int(loose.num_permutations) == 8 and int(tight.num_permutations) == 48


def test_top_fraction_is_cumulative_and_counts_floor():
  values = jnp.array([0.5, 3.0, -1.0, 3.0, 2.0, 0.0, 1.0, 0.1, 0.2, 0.3])
  got = snv.top_fraction(values, 0.25)  # floor(2.5) = 2: the two 3.0s
  assert np.flatnonzero(got).tolist() == [1, 3]
  before = jnp.zeros(10, bool).at[2].set(True)
  got = snv.top_fraction(values, 0.3, before)  # 4 (2.0) joins; 2 stays frozen
  assert np.flatnonzero(got).tolist() == [1, 2, 3, 4]
  assert not np.any(snv.top_fraction(values, 0.0)) and np.all(snv.top_fraction(values, 1.0))


@pytest.mark.parametrize("inner", [optax.adam(0.05), optax.adamw(0.05, weight_decay=0.5),
                                   optax.sgd(0.05, momentum=0.9)], ids=["adam", "adamw", "sgd"])
def test_frozen_parameters_stay_bit_identical(inner):
  """Momentum built before the freeze and AdamW's decay move no frozen entry, steps after."""
  model = maskable_mlp.MaskableMLP(hidden=(8, 8), num_classes=3)
  x = jax.random.normal(jax.random.key(0), (16, 5))
  y = jax.random.randint(jax.random.key(1), (16,), 0, 3)
  params = model.init(jax.random.key(2), x)
  opt = snv.freeze(inner)
  state = opt.init(params)

  def loss(p):
    return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()

  @jax.jit
  def step(p, s, trainable):
    g = jax.grad(loss)(p)
    u, s = opt.update(g, s, p, trainable=trainable)
    return optax.apply_updates(p, u), s

  ones = jax.tree.map(jnp.ones_like, params)
  for _ in range(5):  # momentum and second moments build up
    params, state = step(params, state, ones)
  frozen = jnp.array([1, 0, 1, 0, 0, 0, 1, 0] + [0, 1, 0, 0, 0, 0, 0, 1], bool)
  trainable = jax.tree.map(jnp.ones_like, params)
  inner_p = trainable["params"]
  for layer, sl in (("Dense_0", slice(0, 8)), ("Dense_1", slice(8, 16))):
    k, b = snv.dense_trainable(frozen[sl], inner_p[layer]["kernel"].shape[0])
    inner_p[layer] = {"kernel": k, "bias": b}
  start = params
  for _ in range(5):
    params, state = step(params, state, trainable)
  for layer, sl in (("Dense_0", slice(0, 8)), ("Dense_1", slice(8, 16))):
    f = np.asarray(frozen[sl])
    k0, k1 = (np.asarray(p["params"][layer]["kernel"]) for p in (start, params))
    b0, b1 = (np.asarray(p["params"][layer]["bias"]) for p in (start, params))
    assert np.array_equal(k0[:, f], k1[:, f]) and np.array_equal(b0[f], b1[f])
    assert np.mean(k0[:, ~f] != k1[:, ~f]) > 0.5  # the others learn (a dead ReLU may not)


def test_fisher_and_mas_equal_per_example_loops():
  model = maskable_mlp.MaskableMLP(hidden=(6,), num_classes=4)
  x = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
  y = np.random.default_rng(1).integers(0, 4, 7).astype(np.int32)
  params = model.init(jax.random.key(0), x)

  def nll(p, ex):
    xi, yi = ex
    return -jax.nn.log_softmax(model.apply(p, xi[None])[0])[yi]

  def out(p, xi):
    return model.apply(p, xi[None])[0]

  grads = [jax.grad(nll)(params, (x[i], y[i])) for i in range(7)]
  want = jax.tree.map(lambda *g: np.mean(np.stack(g) ** 2, 0), *grads)
  got = snv.fisher_diagonal(nll, params, (x, y))
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8), got, want)
  grads = [jax.grad(lambda p: jnp.sum(out(p, x[i]) ** 2))(params) for i in range(7)]
  want = jax.tree.map(lambda *g: np.mean(np.abs(np.stack(g)), 0), *grads)
  got = snv.mas_importance(out, params, x)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8), got, want)


def test_si_and_penalty_formulas():
  rng = np.random.default_rng(0)
  p0, p1, g, d = ({"a": rng.normal(size=(3, 2)).astype(np.float32)} for _ in range(4))
  path = snv.si_path_step(jax.tree.map(np.zeros_like, p0), g, d)
  np.testing.assert_allclose(path["a"], -g["a"] * d["a"])
  omega = snv.si_importance(path, p1, p0, damping=0.1)
  np.testing.assert_allclose(omega["a"], path["a"] / ((p1["a"] - p0["a"]) ** 2 + 0.1), rtol=1e-6)
  pen = snv.quadratic_penalty(p1, p0, {"a": np.abs(g["a"])})
  np.testing.assert_allclose(pen, np.sum(np.abs(g["a"]) * (p1["a"] - p0["a"]) ** 2), rtol=1e-5)


def test_rank_correlation_equals_scipy_with_ties():
  a = np.array([1.0, 2.0, 2.0, 5.0, 0.0, 3.0], np.float32)
  b = np.array([0.5, 0.1, 0.9, 0.9, 0.0, 1.0], np.float32)
  np.testing.assert_allclose(snv.rank_correlation(a, b), scipy.stats.spearmanr(a, b)[0], rtol=1e-5)


def test_mask_keeps_or_mean_ablates():
  model = maskable_mlp.MaskableMLP(hidden=(5, 4), num_classes=3)
  x = jax.random.normal(jax.random.key(0), (6, 2))
  params = model.init(jax.random.key(1), x)
  logits, pre = model.apply(params, x, hidden_out=True)
  fill = pre.mean(0)
  np.testing.assert_allclose(model.apply(params, x, jnp.ones(9), fill), logits, atol=1e-6)
  none = model.apply(params, x, jnp.zeros(9), fill)
  np.testing.assert_allclose(none, np.broadcast_to(none[0], none.shape), atol=1e-6)


def test_bad_input():
  with pytest.raises(ValueError, match="fraction"):
    snv.top_fraction(jnp.ones(4), 1.5)
  with pytest.raises(ValueError, match="frozen_N"):
    snv.top_fraction(jnp.ones(4), 0.5, jnp.zeros(5, bool))
  opt = snv.freeze(optax.adam(1e-3))
  p = {"w": jnp.ones((2, 3))}
  with pytest.raises(ValueError, match="trainable"):
    opt.update(p, opt.init(p), p, trainable={"w": jnp.ones((3, 2))})
  with pytest.raises(ValueError, match="perms_PxN"):
    snv.shapley_from_permutations(game, _net(), np.zeros((2, N), np.int32))
  with pytest.raises(ValueError, match="value_fn"):
    snv.exact_shapley(lambda m, w: m * w, (np.ones(N, np.float32),), num_players=N)
  with pytest.raises(ValueError, match="keep_N"):
    maskable_mlp.MaskableMLP(hidden=(3,)).init(jax.random.key(0), jnp.ones((1, 2)), jnp.ones(4),
                                                jnp.ones(4))


def test_adaptive_subnetwork_on_a_hand_made_phi():
  """SNV-A's S_t: the smallest top-phi prefix of positive neurons covering the share of the
  positive mass, phi <= 0 never taken, newly frozen neurons capped, frozen ones free."""
  phi = np.array([0.5, -0.1, 0.3, 0.0, 0.2], np.float32)  # positive mass 1.0
  none = np.zeros(5, bool)
  pick = lambda cov, cap, frozen=none, lo=0.0: np.flatnonzero(  # noqa: E731
      np.asarray(snv.adaptive_subnetwork(phi, frozen, cov, cap, lo))).tolist()
  assert pick(0.9, 1.0) == [0, 2, 4]  # partial sums 0.5, 0.8 < 0.9 <= 1.0
  assert pick(0.7, 1.0) == [0, 2]  # 0.5 < 0.7 <= 0.8
  assert pick(1.0, 1.0) == [0, 2, 4]  # never the neurons with phi <= 0
  assert pick(0.9, 0.2) == [0]  # at most floor(0.2 * 5) = 1 new neuron
  assert pick(0.9, 0.2, np.array([1, 0, 0, 0, 0], bool)) == [0, 2]  # neuron 0 is free
  assert pick(0.3, 1.0, lo=0.4) == [0, 2]  # at least floor(0.4 * 5) = 2 neurons
  assert pick(0.9, 1.0, np.zeros(5, bool)) == pick(0.9, 1.0)
  assert not np.asarray(snv.adaptive_subnetwork(-np.abs(phi), none)).any()  # no positive phi
  with pytest.raises(ValueError, match="coverage"):
    snv.adaptive_subnetwork(phi, none, 1.5)
  with pytest.raises(ValueError, match="frozen_N"):
    snv.adaptive_subnetwork(phi, np.zeros(4, bool))


def test_route_reads_each_class_from_its_own_subnetwork():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(2, 5, 4)).astype(np.float32)  # (T, B, K)
  ct, seen = np.array([0, 0, 1, 1]), np.ones(4, bool)
  concat = np.concatenate([logits[0][:, :2], logits[1][:, 2:]], -1)
  np.testing.assert_array_equal(snv.route(logits, ct, seen, "concat"), concat.argmax(-1))
  lsm = lambda z: z - np.log(np.exp(z).sum(-1, keepdims=True))  # noqa: E731
  prob = np.concatenate([lsm(logits[0][:, :2]), lsm(logits[1][:, 2:])], -1)
  np.testing.assert_array_equal(snv.route(logits, ct, seen, "maxprob"), prob.argmax(-1))
  only0 = np.array([True, True, False, False])
  assert np.all(np.asarray(snv.route(logits, ct, only0, "maxprob")) < 2)
  with pytest.raises(ValueError, match="rule"):
    snv.route(logits, ct, seen, "energy")
  with pytest.raises(ValueError, match="class_task_K"):
    snv.route(logits, np.array([0, 0, 1, 2]), seen)


def test_wsn_mask_top_share_and_straight_through():
  s = {"w": jnp.array([[0.3, -1.0], [2.0, 0.1]]), "b": jnp.array([0.5, 0.7, -0.2])}
  m = snv.wsn_mask(s, 0.5)
  np.testing.assert_array_equal(m["w"], [[1, 0], [1, 0]])  # the 2 largest of 4
  np.testing.assert_array_equal(m["b"], [1, 1, 0])  # ceil(1.5) = 2 of 3
  g = jax.grad(lambda sc: jnp.sum(snv.wsn_mask(sc, 0.5)["w"] * jnp.arange(4.0).reshape(2, 2)))(s)
  np.testing.assert_array_equal(g["w"], np.arange(4.0).reshape(2, 2))  # identity backward
  with pytest.raises(ValueError, match="capacity"):
    snv.wsn_mask(s, 0.0)


def test_wsn_two_task_toy_learns_the_known_masks_and_forgets_nothing():
  """Task A: y = 2 x0, task B: y = -3 x1, one weight per task (capacity 1/2). WSN must
  pick weight 0 for A and weight 1 for B, fit them, and leave A's function bit-identical."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(256, 2)).astype(np.float32)
  targets = (2.0 * x[:, 0], -3.0 * x[:, 1])
  params = {"w": jnp.array([0.5, -0.5])}
  scores = {"w": jnp.array([0.0, 0.1])}  # task A starts on the wrong weight
  used = {"w": jnp.zeros(2)}
  opt_w, opt_s = snv.freeze(optax.adam(0.05)), optax.adam(0.05)

  def loss(p, sc, y):
    w = snv.wsn_apply(p, snv.wsn_mask(sc, 0.5))["w"]
    return jnp.mean((x @ w - y) ** 2)

  @jax.jit
  def fit(params, scores, used, y):
    def step(carry, _):
      params, scores, sw, ss = carry
      gp, gs = jax.grad(loss, argnums=(0, 1))(params, scores, y)
      u, sw = opt_w.update(gp, sw, params, trainable=jax.tree.map(lambda m: 1 - m, used))
      params = optax.apply_updates(params, u)
      u, ss = opt_s.update(gs, ss, scores)
      return (params, optax.apply_updates(scores, u), sw, ss), None
    carry = (params, scores, opt_w.init(params), opt_s.init(scores))
    return jax.lax.scan(step, carry, None, length=400)[0][:2]

  masks, outs = [], []
  for y in targets:
    params, scores = fit(params, scores, used, y)
    m = jax.tree.map(jax.lax.stop_gradient, snv.wsn_mask(scores, 0.5))
    masks.append(m)
    outs.append(x @ snv.wsn_apply(params, m)["w"])
    used = jax.tree.map(jnp.maximum, used, m)
  np.testing.assert_array_equal(masks[0]["w"], [1, 0])
  np.testing.assert_array_equal(masks[1]["w"], [0, 1])
  np.testing.assert_allclose(params["w"], [2.0, -3.0], atol=0.05)
  # task A through its stored mask after task B: exactly what it was
  np.testing.assert_array_equal(x @ snv.wsn_apply(params, masks[0])["w"], outs[0])


def test_pec_errors_and_prediction():
  rng = np.random.default_rng(0)
  net = lambda d, h, e: {"w1": rng.normal(size=(d, h)).astype(np.float32),  # noqa: E731
                         "b1": rng.normal(size=(h,)).astype(np.float32),
                         "w2": rng.normal(size=(h, e)).astype(np.float32),
                         "b2": rng.normal(size=(e,)).astype(np.float32)}
  teacher = net(3, 8, 4)
  students = jax.tree.map(lambda *a: np.stack(a), net(3, 5, 4), net(3, 5, 4))
  x = rng.normal(size=(6, 3)).astype(np.float32)
  relu = lambda z: np.maximum(z, 0)  # noqa: E731
  f = lambda p: relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]  # noqa: E731
  want = np.stack([np.mean((f(jax.tree.map(lambda a: a[c], students)) - f(teacher)) ** 2, -1)
                   for c in range(2)], -1)
  err = np.asarray(snv.pec_errors(teacher, students, x))
  np.testing.assert_allclose(err, want, rtol=1e-5)
  np.testing.assert_array_equal(snv.pec_predict(err, np.array([True, True])), want.argmin(-1))
  np.testing.assert_array_equal(snv.pec_predict(err, np.array([False, True])), np.ones(6))
  # a student fitted to the teacher on its class's region errs least there
  xa, xb = x + 3.0, x - 3.0
  fitted = []
  opt = optax.adam(0.02)

  @jax.jit
  def fit(s, xc):
    def step(carry, _):
      s, st = carry
      g = jax.grad(lambda p: jnp.mean((snv.pec_net(p, xc) - snv.pec_net(teacher, xc)) ** 2))(s)
      u, st = opt.update(g, st)
      return (optax.apply_updates(s, u), st), None
    return jax.lax.scan(step, (s, opt.init(s)), None, length=300)[0][0]

  for xc in (xa, xb):
    fitted.append(fit(net(3, 16, 4), xc))
  both = jax.tree.map(lambda *a: jnp.stack(a), *fitted)
  pred = np.concatenate([snv.pec_predict(snv.pec_errors(teacher, both, xc), np.ones(2, bool))
                         for xc in (xa, xb)])
  assert np.mean(pred == np.repeat([0, 1], 6)) >= 0.9
  with pytest.raises(ValueError, match="teacher"):
    snv.pec_errors({"w1": teacher["w1"]}, students, x)
