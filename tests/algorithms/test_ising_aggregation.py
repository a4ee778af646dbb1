"""Tests of algorithms.ising_aggregation against brute force, crowd-kit, hand-computed EM and published figures."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

from reprojax.algorithms import ising_aggregation as ia
from reprojax.data import ising_aggregation as data_ia


def _rand_model(rng, k, scale=0.6):
  h = rng.normal(0, 0.7, k)
  w = np.triu(rng.normal(0, scale, (k, k)), 1)
  return h, w + w.T


def _brute_logw(h, w):
  states = np.array(list(itertools.product([0, 1], repeat=len(h))), np.float64)
  return states, states @ h + 0.5 * np.einsum("sk,kl,sl->s", states, w, states)


def _toy_votes(rng, n, k, missing=0.25):
  y = rng.random(n) < 0.4
  acc = rng.uniform(0.6, 0.9, k)
  correct = rng.random((n, k)) < acc
  v = np.where(correct, y[:, None], ~y[:, None]).astype(np.int32)
  miss = rng.random((n, k)) < missing
  miss[:, 0] = False
  return np.where(miss, -1, v), y.astype(np.int32)


# ---------------------------------------------------------------- 1. exact enumeration

def test_ising_marginals_match_brute_force():
  rng = np.random.default_rng(0)
  h, w = _rand_model(rng, 6)
  states, logw = _brute_logw(h, w)
  log_z = special.logsumexp(logw)
  p = np.exp(logw - log_z)
  got = ia.ising_marginals(jnp.asarray(h, jnp.float32), jnp.asarray(w, jnp.float32))
  np.testing.assert_allclose(got.log_partition, log_z, rtol=1e-5)
  np.testing.assert_allclose(got.mean_K, p @ states, atol=1e-5)
  np.testing.assert_allclose(got.second_KxK, states.T @ (p[:, None] * states), atol=1e-5)


def test_ising_posterior_matches_brute_force_with_missing_votes():
  rng = np.random.default_rng(1)
  k = 5
  h0, w0 = _rand_model(rng, k)
  h1, w1 = _rand_model(rng, k)
  prior = 0.35
  votes, _ = _toy_votes(rng, 40, k, missing=0.3)
  states, lw0 = _brute_logw(h0, w0)
  _, lw1 = _brute_logw(h1, w1)
  lw0 -= special.logsumexp(lw0)
  lw1 -= special.logsumexp(lw1)
  want = []
  for v in votes:  # sum P(J | y) over the completions of the missing votes
    ok = np.all((v[None, :] < 0) | (states == v[None, :]), axis=1)
    l1, l0 = special.logsumexp(lw1[ok]), special.logsumexp(lw0[ok])
    want.append(special.expit(np.log(prior / (1 - prior)) + l1 - l0))
  args = [jnp.asarray(a, jnp.float32) for a in (h0, h1, w0, w1)]
  got = ia.ising_posterior(jnp.asarray(votes), *args, prior)
  np.testing.assert_allclose(got, want, atol=2e-5)
  # fully observed rows take the direct (quadratic log-odds) path: same answer
  full = votes[(votes >= 0).all(1)]
  np.testing.assert_allclose(ia.ising_posterior(jnp.asarray(full), *args, prior),
                             np.asarray(want)[(votes >= 0).all(1)], atol=2e-5)


def test_class_independent_posterior_is_linear_in_votes():
  rng = np.random.default_rng(2)
  k = 4
  h0, w = _rand_model(rng, k)
  h1 = h0 + rng.normal(0, 1, k)
  states = np.array(list(itertools.product([0, 1], repeat=k)), np.int32)
  p = np.asarray(ia.ising_posterior(jnp.asarray(states), jnp.asarray(h0, jnp.float32),
                                    jnp.asarray(h1, jnp.float32), jnp.asarray(w, jnp.float32),
                                    jnp.asarray(w, jnp.float32), 0.5), np.float64)
  logit = special.logit(p)
  design = np.concatenate([np.ones((len(states), 1)), states], 1)
  coef, *_ = np.linalg.lstsq(design, logit, rcond=None)
  np.testing.assert_allclose(design @ coef, logit, atol=1e-4)
  np.testing.assert_allclose(coef[1:], h1 - h0, atol=1e-4)  # weights = field difference


def test_gibbs_marginals_within_monte_carlo_error():
  rng = np.random.default_rng(3)
  h, w = _rand_model(rng, 6, scale=0.8)
  hj, wj = jnp.asarray(h, jnp.float32), jnp.asarray(w, jnp.float32)
  exact = ia.ising_marginals(hj, wj)
  chains = 20000
  samples = np.asarray(ia.ising_gibbs(jax.random.key(0), hj, wj, num_chains=chains, num_sweeps=30),
                       np.float64)
  mean = samples.mean(0)
  se = np.sqrt(exact.mean_K * (1 - exact.mean_K) / chains)
  assert np.all(np.abs(mean - exact.mean_K) < 4.5 * se), (mean, exact.mean_K, se)
  pair = samples.T @ samples / chains
  se2 = np.sqrt(exact.second_KxK * (1 - exact.second_KxK) / chains)
  assert np.all(np.abs(pair - exact.second_KxK) < 4.5 * se2 + 1e-6)
  # exact sampler too
  ex = np.asarray(ia.ising_sample(jax.random.key(1), hj, wj, chains), np.float64)
  assert np.all(np.abs(ex.mean(0) - exact.mean_K) < 4.5 * se)


# ---------------------------------------------------------------- 2. Dawid-Skene

def _numpy_ds_step(votes, q1, eps=1e-10, two_coin=True):
  """One hand-written EM iteration (E-step from M-step of q1), float64, for the toy set."""
  v1, v0 = (votes == 1).astype(float), (votes == 0).astype(float)

  def m_step(q):
    qc = np.stack([1 - q, q], 1)
    c1, c0 = v1.T @ qc, v0.T @ qc
    if two_coin:
      c1, c0 = np.maximum(c1, eps), np.maximum(c0, eps)
      return c1 / (c1 + c0), c0 / (c1 + c0)  # P(J=1|c), P(J=0|c), [k, c]
    s = np.clip((c1[:, 1] + c0[:, 0]) / (v1 + v0).sum(0), eps, 1 - eps)
    return np.stack([1 - s, s], 1), np.stack([s, 1 - s], 1)

  pj1, pj0 = m_step(q1)
  prior = q1.mean()
  ll = v1 @ np.log(pj1) + v0 @ np.log(pj0)
  q_new = special.expit(np.log(prior) - np.log(1 - prior) + ll[:, 1] - ll[:, 0])
  return q_new


@pytest.mark.parametrize("two_coin", [True, False])
def test_dawid_skene_matches_hand_computed_em_steps(two_coin):
  rng = np.random.default_rng(4)
  votes, _ = _toy_votes(rng, 50, 6)
  with jax.enable_x64(True):
    state = ia.dawid_skene_init(jnp.asarray(votes), two_coin=two_coin)
    v1, v0 = (votes == 1).sum(1), (votes == 0).sum(1)
    q = v1 / (v1 + v0)  # majority-vote start
    np.testing.assert_allclose(state.posterior_N, q, atol=1e-12)
    for _ in range(4):
      q = _numpy_ds_step(votes, q, two_coin=two_coin)
      state = ia.dawid_skene_step(jnp.asarray(votes), state, two_coin=two_coin)
      np.testing.assert_allclose(state.posterior_N, q, atol=1e-6)


@pytest.mark.parametrize("two_coin", [True, False])
def test_dawid_skene_matches_crowdkit_each_iteration(two_coin):
  import pandas as pd  # test extra  # pylint: disable=g-import-not-at-top
  from crowdkit import aggregation as agg  # test extra (installed --no-deps by the Makefile)
  rng = np.random.default_rng(5)
  votes, _ = _toy_votes(rng, 80, 7)
  rows = [(f"t{i}", f"w{k}", int(votes[i, k])) for i in range(votes.shape[0])
          for k in range(votes.shape[1]) if votes[i, k] >= 0]
  df = pd.DataFrame(rows, columns=["task", "worker", "label"])
  cls = agg.DawidSkene if two_coin else agg.OneCoinDawidSkene
  with jax.enable_x64(True):
    for it in (1, 2, 3):
      ref = cls(n_iter=it, tol=-np.inf).fit_predict_proba(df)
      want = ref.loc[[f"t{i}" for i in range(votes.shape[0])], 1].to_numpy()
      got = ia.dawid_skene(jnp.asarray(votes), two_coin=two_coin, max_iters=it, tol=-np.inf)
      assert int(got.num_iters) == it
      np.testing.assert_allclose(got.posterior_N, want, atol=1e-6, err_msg=f"iteration {it}")


def test_one_coin_in_float32_survives_a_judge_who_is_never_wrong():
  """In float32, 1 - 1e-10 rounds to 1: a clipped skill of 1 once gave -inf logs and NaN posteriors."""
  rng = np.random.default_rng(3)
  votes, truth = _toy_votes(rng, 60, 5)
  votes = np.concatenate([votes, truth[:, None]], axis=1)  # a sixth judge, always right
  got = ia.dawid_skene(jnp.asarray(votes), two_coin=False, max_iters=20, tol=-np.inf)
  assert np.isfinite(np.asarray(got.posterior_N)).all()
  with jax.enable_x64(True):
    ref = ia.dawid_skene(jnp.asarray(votes), two_coin=False, max_iters=20, tol=-np.inf)
  np.testing.assert_allclose(got.posterior_N, ref.posterior_N, atol=1e-4)


# ---------------------------------------------------------------- 3. EM recovery

def test_em_recovers_class_dependent_ising_parameters_error_shrinks_with_n():
  # K = 7: a two-component mixture of Ising models on {0,1}^K has 1 + K(K+1) = 57
  # parameters against 2^K - 1 = 127 cell probabilities (K = 4 would be unidentifiable).
  k = 7
  h0 = jnp.array([-1.0, -0.8, -1.2, -0.6, -0.9, -1.1, -0.7])
  h1 = jnp.array([0.8, 1.0, 0.4, 0.9, 0.7, 0.6, 1.1])
  w0, w1 = np.zeros((k, k), np.float32), np.zeros((k, k), np.float32)
  w0[0, 1], w0[1, 2], w0[0, 2], w0[4, 5] = 1.0, 0.8, 0.5, 0.6
  w1[1, 3], w1[5, 6] = -0.4, 0.7
  w0, w1 = jnp.asarray(w0 + w0.T), jnp.asarray(w1 + w1.T)
  truth = np.concatenate([np.stack([h0, h1]).ravel(), np.stack([w0, w1]).ravel()])
  rms = {}
  big = data_ia.sample_ising_judges(jax.random.key(8000), 8000, h0, h1, w0, w1, 0.45).votes_NxK
  for n in (1000, 8000):
    # n = 1000: the first 1000 items repeated 8 times, the same estimate as on the 1000 items
    # (the objective is an average over items) at the same shape, so one compilation serves both
    votes = jnp.tile(big[:n], (8000 // n, 1))
    fit = ia.fit_ising_em(votes, e_step="exact", l2=1e-4, l2_field=1e-5, max_iters=100)
    est = np.concatenate([np.asarray(fit.params.h_2xK).ravel(),
                          np.asarray(fit.params.W_2xKxK).ravel()])
    rms[n] = float(np.sqrt(np.mean((est - truth) ** 2)))
    print(f"EM recovery n={n:6d}: rms error {rms[n]:.3f}, max {np.max(np.abs(est - truth)):.3f}, "
          f"prior {float(fit.params.prior):.3f} (true 0.45), {int(fit.num_iters)} iterations")
  assert rms[8000] < 0.7 * rms[1000]
  assert rms[8000] < 0.3


def test_supervised_fit_recovers_parameters():
  rng = np.random.default_rng(6)
  h0, w0 = _rand_model(rng, 5, 0.5)
  h1, w1 = _rand_model(rng, 5, 0.5)
  args = [jnp.asarray(a, jnp.float32) for a in (h0, h1, w0, w1)]
  d = data_ia.sample_ising_judges(jax.random.key(7), 20000, *args, 0.5)
  p = ia.fit_ising_supervised(d.votes_NxK, d.labels_N, l2=0.0, l2_field=0.0)
  np.testing.assert_allclose(p.h_2xK, np.stack([h0, h1]), atol=0.2)
  np.testing.assert_allclose(p.W_2xKxK, np.stack([w0, w1]), atol=0.25)


def _bloc_data(k=6, n=4000, seed=3):
  """A class-independent panel with a strongly coupled bloc (couplings ~ 1.5-2, regime B)."""
  pan = data_ia.bloc_panel(jax.random.key(seed), k, bloc_frac=0.5)
  d = data_ia.sample_ising_judges(jax.random.key(seed + 1), n, *pan)
  return d, pan


def test_exact_m_step_matches_brute_force_moments_with_strong_couplings():
  # Fully labelled, no ridge, max_iters=0: the fit is the first (exact) M-step alone, the
  # per-class maximum likelihood, where the model's moments E[J_k], E[J_k J_l] equal the
  # data's (brute-force numpy enumeration). Strong couplings: the first M-step starts at zero,
  # so too few Newton steps there (the earlier 6) would leave a visible gap.
  d, _ = _bloc_data()
  v, y = np.asarray(d.votes_NxK), np.asarray(d.labels_N)
  for cd in (True, False):
    fit = ia.fit_ising_em(d.votes_NxK, d.labels_N, class_dependent=cd, m_step="exact", l2=0.0,
                          l2_field=0.0, max_iters=0)
    h, w = np.asarray(fit.params.h_2xK, np.float64), np.asarray(fit.params.W_2xKxK, np.float64)
    pair_data, pair_model = 0.0, 0.0
    for c in (0, 1):
      states, logw = _brute_logw(h[c], w[c])
      p = np.exp(logw - special.logsumexp(logw))
      vc = v[y == c].astype(np.float64)
      np.testing.assert_allclose(p @ states, vc.mean(0), atol=2e-4)  # fields: per class always
      second = states.T @ (p[:, None] * states)
      if cd:
        np.testing.assert_allclose(second, vc.T @ vc / len(vc), atol=2e-4)
      pair_data = pair_data + vc.T @ vc
      pair_model = pair_model + len(vc) * second
    if not cd:  # one shared W: the pooled pair moments match
      np.testing.assert_allclose(pair_model / len(v), pair_data / len(v), atol=2e-4)
    assert np.max(np.abs(w)) > 1.0  # the couplings are strong


def test_missing_votes_expected_statistics_match_brute_force():
  # The exact M-step's E-step over missing votes: E[(J_k, J_k J_l) | observed votes] under (h, W).
  from reprojax.algorithms.ising_aggregation import _fit  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(4)
  k = 4
  h, w = _rand_model(rng, k, 0.8)
  votes, _ = _toy_votes(rng, 12, k, missing=0.4)
  iu = np.triu_indices(k, 1)
  got = np.asarray(_fit._expected_phi_N(jnp.asarray(votes), jnp.asarray(h, jnp.float32),
                                        jnp.asarray(w, jnp.float32), iu, True))
  states, logw = _brute_logw(h, w)
  phi = np.concatenate([states, states[:, iu[0]] * states[:, iu[1]]], axis=1)
  for i, v in enumerate(votes):
    ok = np.all((v < 0) | (states == v), axis=1)
    p = np.exp(logw[ok] - special.logsumexp(logw[ok]))
    np.testing.assert_allclose(got[i], p @ phi[ok], atol=1e-5)


def test_multistart_reports_the_exact_likelihood_and_orients_the_classes():
  d, _ = _bloc_data(n=1000)
  v = d.votes_NxK
  multi = ia.fit_ising_em(v, num_starts=4, key=jax.random.key(0), max_iters=20)
  p = multi.params
  logp = []
  for c in (0, 1):
    states, logw = _brute_logw(np.asarray(p.h_2xK[c], np.float64), np.asarray(p.W_2xKxK[c], np.float64))
    lp = logw - special.logsumexp(logw)
    idx = np.asarray(v) @ (1 << np.arange(v.shape[1]))[::-1]  # itertools order: judge 0 = top bit
    logp.append(lp[idx])
    del states
  pi = float(p.prior)
  brute = np.mean(np.logaddexp(np.log(pi) + logp[1], np.log1p(-pi) + logp[0]))
  np.testing.assert_allclose(float(multi.log_lik), brute, rtol=1e-5)
  mv = np.asarray(ia.majority_vote(v))
  assert np.corrcoef(np.asarray(multi.posterior_N), mv)[0, 1] > 0
  # the same fit from the public pieces (starts, vmapped runs, selection), as the experiment does
  starts = ia.ising_em_starts(jax.random.key(0), v, 4)
  runs = ia.fit_ising_em_runs(v, -jnp.ones(starts.shape, jnp.int32), starts, jnp.ones((4,), bool),
                              max_iters=20)
  np.testing.assert_allclose(float(ia.best_ising_fit(runs, v).log_lik), float(multi.log_lik),
                             rtol=1e-6)
  np.testing.assert_allclose(ia.best_ising_fit(runs, v).posterior_N, multi.posterior_N, atol=1e-5)
  np.testing.assert_allclose(ia.ising_mixture_log_lik(v, multi.params), multi.log_lik, rtol=1e-5)


# ---------------------------------------------------------------- other references

def test_ci_posterior_equals_paper_weights():
  rng = np.random.default_rng(8)
  votes, _ = _toy_votes(rng, 30, 4, missing=0.0)
  a, b, pi = rng.uniform(0.6, 0.9, 4), rng.uniform(0.6, 0.9, 4), 0.3
  w = np.log(a * b / ((1 - a) * (1 - b)))
  logit = np.log(pi / (1 - pi)) + np.log((1 - a) / b).sum() + votes @ w
  got = ia.ci_posterior(jnp.asarray(votes), jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32), pi)
  np.testing.assert_allclose(got, special.expit(logit), atol=1e-5)


def test_latent_factor_posterior_matches_numerical_integration():
  rng = np.random.default_rng(9)
  k = 4
  a0, a1, lam = rng.normal(-1, 0.3, k), rng.normal(1, 0.3, k), rng.normal(0, 1.0, k)
  votes = np.array([[1, 0, 1, -1], [0, 0, 0, 1], [1, 1, 1, 1]], np.int32)

  def lik(v, a):
    def f(z):
      p = special.expit(a + lam * z)
      o = v >= 0
      return np.prod(np.where(v[o] == 1, p[o], 1 - p[o])) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    return integrate.quad(f, -10, 10)[0]

  want = [0.4 * lik(v, a1) / (0.4 * lik(v, a1) + 0.6 * lik(v, a0)) for v in votes]
  got = ia.latent_factor_posterior(jnp.asarray(votes), *[jnp.asarray(x, jnp.float32) for x in (a0, a1, lam)],
                                   0.4, num_nodes=40)
  np.testing.assert_allclose(got, want, atol=1e-5)


def test_curie_weiss_sampler_matches_pmf():
  k, n = 12, 8000
  d = data_ia.sample_curie_weiss(jax.random.key(0), n, k, -0.8, -2.0, 0.0, 4.0, 0.5)
  s = np.asarray(d.votes_NxK).sum(1)
  y = np.asarray(d.labels_N)
  for cls, (h, th) in ((0, (-0.8, 0.0)), (1, (-2.0, 4.0))):
    pmf = np.exp(data_ia.curie_weiss_log_pmf(k, h, th))
    emp = np.bincount(s[y == cls], minlength=k + 1) / (y == cls).sum()
    se = np.sqrt(pmf * (1 - pmf) / (y == cls).sum())
    assert np.all(np.abs(emp - pmf) < 5 * se + 1e-3)


def test_metrics():
  p = jnp.array([0.9, 0.2, 0.6, 0.4])
  y = jnp.array([1, 0, 0, 0])
  assert float(ia.accuracy(p, y)) == 0.75
  np.testing.assert_allclose(ia.log_loss(p, y), -np.mean(np.log([0.9, 0.8, 0.4, 0.6])), rtol=1e-6)
  # bins of confidence: {0.9}, {0.8}, {0.6, 0.6}: |1-0.9|/4 + |1-0.8|/4 + |1-1.2|/4
  np.testing.assert_allclose(ia.expected_calibration_error(p, y), (0.1 + 0.2 + 0.2) / 4, atol=1e-6)


# ---------------------------------------------------------------- 5. bad inputs

def test_bad_inputs_raise_value_error():
  good = np.array([[1, 0, -1], [0, 0, 1]], np.int32)
  h, w = np.zeros(3, np.float32), np.zeros((3, 3), np.float32)
  with pytest.raises(ValueError, match="in \\{-1"):
    ia.dawid_skene(np.array([[1, 2, 0]], np.int32))
  with pytest.raises(ValueError, match="no vote"):
    ia.majority_vote(np.array([[1, 0, 1], [-1, -1, -1]], np.int32))
  with pytest.raises(ValueError, match="no vote"):
    ia.fit_ising_em(np.array([[1, 0, 1], [-1, -1, -1]], np.int32))
  with pytest.raises(ValueError, match="integer"):
    ia.majority_vote(good.astype(np.float32))
  big = np.zeros(ia.MAX_EXACT_K + 1, np.float32)
  big_w = np.zeros((big.size, big.size), np.float32)
  for fn in (lambda: ia.ising_marginals(big, big_w),
             lambda: ia.ising_sample(jax.random.key(0), big, big_w, 4),
             lambda: ia.ising_posterior(np.ones((2, big.size), np.int32), big, big, big_w, big_w, 0.5),
             lambda: ia.fit_ising_em(np.ones((2, big.size), np.int32), e_step="exact")):
    with pytest.raises(ValueError, match="K <= 20"):
      fn()
  asym = w.copy()
  asym[0, 1] = 1.0
  with pytest.raises(ValueError, match="symmetric"):
    ia.ising_posterior(good, h, h, asym, w, 0.5)
  with pytest.raises(ValueError, match="symmetric"):
    ia.ising_gibbs(jax.random.key(0), h, asym)
  diag = w.copy()
  diag[1, 1] = 0.3
  with pytest.raises(ValueError, match="diagonal"):
    ia.ising_marginals(h, diag)
  with pytest.raises(ValueError, match="prior"):
    ia.ising_posterior(good, h, h, w, w, 1.5)
  votes = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1]], np.int32)
  with pytest.raises(ValueError, match="num_starts"):
    ia.fit_ising_em(votes, num_starts=0)
  with pytest.raises(ValueError, match="key"):
    ia.fit_ising_em(votes, num_starts=3)
  with pytest.raises(ValueError, match="m_step"):
    ia.fit_ising_em(votes, m_step="newton")


# ---------------------------------------------------------------- real crowd data

def test_crowd_loader_and_published_baselines(manual_dataset):
  folder = manual_dataset(data_ia.CROWD_NAME, "answer.csv", "truth.csv")
  d = data_ia.load_crowd_binary(folder)
  assert d.votes_NxK.shape == (8315, 176)
  assert int((d.votes_NxK >= 0).sum()) == 24945
  votes = jnp.asarray(d.votes_NxK)
  mv = float(ia.accuracy(ia.majority_vote(votes), d.labels_N))
  ds = float(ia.accuracy(ia.dawid_skene(votes).posterior_N, d.labels_N))
  print(f"jn_product: MV {mv:.4f} (published 0.897), DS {ds:.4f} (published 0.940)")
  assert abs(mv - 0.897) < 0.005 and abs(ds - 0.940) < 0.01


def test_crowd_loader_missing_folder_is_clear(tmp_path):
  with pytest.raises(FileNotFoundError, match="answer.csv"):
    data_ia.load_crowd_binary(str(tmp_path))
