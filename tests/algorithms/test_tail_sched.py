"""tail_sched's priority keys and size distribution against closed forms and brute force."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import tail_sched as ts


def test_boost_closed_form_and_limits():
  s = np.array([0.01, 0.1, 0.5, 1.0, 3.0, 10.0])
  for gamma in (0.05, 1.0, 7.0):
    want = -np.log1p(-np.exp(-gamma * s)) / gamma  # float64: exact enough at both ends
    np.testing.assert_allclose(ts.boost(s, gamma), want, rtol=2e-5)
    assert np.all(np.diff(np.asarray(ts.boost(s, gamma))) < 0)  # smaller jobs, larger boost
    np.testing.assert_allclose(ts.boost_from_log_mgf(gamma * s, gamma), want, rtol=2e-5)
  np.testing.assert_array_equal(ts.boost(s, math.inf), 0.0)
  np.testing.assert_array_equal(ts.boost_from_log_mgf(s, math.inf), 0.0)


def test_gamma_to_infinity_is_fcfs_and_to_zero_is_sjf():
  rng = np.random.default_rng(0)
  arrival = np.sort(rng.uniform(0, 10, 200)).astype(np.float32)
  arrival += np.arange(200, dtype=np.float32) * 1e-2  # gaps >= 0.01 s
  size = rng.permutation(np.geomspace(0.05, 20, 200)).astype(np.float32)  # distinct by 3%
  fcfs_order = np.argsort(arrival, kind="stable")
  np.testing.assert_array_equal(np.argsort(ts.gamma_boost(arrival, size, math.inf),
                                           kind="stable"), fcfs_order)
  # gamma = 1e4 / s: every boost is below e^{-500} / 1e4, far under the 0.01 s gaps.
  np.testing.assert_array_equal(np.argsort(ts.gamma_boost(arrival, size, 1e4),
                                           kind="stable"), fcfs_order)
  # gamma = 1e-6: keys differ by (1/gamma) log(s_i / s_j) >= 3e4 s between sizes, beside
  # arrivals spread over 12 s.
  np.testing.assert_array_equal(np.argsort(ts.gamma_boost(arrival, size, 1e-6),
                                           kind="stable"), np.argsort(size, kind="stable"))


def _brute_log_mgf(samples, attained, gamma):
  out = []
  for x in attained:
    rest = samples[samples > x] - x
    out.append(np.log(np.mean(np.exp(gamma * rest))) if rest.size else np.nan)
  return np.array(out)


def test_log_mgf_remaining_against_brute_force():
  rng = np.random.default_rng(1)
  edges = np.linspace(0.0, 6.0, 61)
  mids = 0.5 * (edges[1:] + edges[:-1])
  samples = mids[rng.integers(0, 60, 500)]  # sizes on the midpoints: the histogram is exact
  hist = ts.observe(ts.histogram(edges), samples, np.ones(samples.size, bool))
  np.testing.assert_array_equal(hist.counts_B, np.histogram(samples, edges)[0])
  attained = np.array([0.0, 0.3, 1.21, 2.5, 4.0, 5.5])
  for gamma in (0.2, 1.0, 3.0):
    got = np.asarray(ts.log_mgf_remaining(hist, attained, gamma))
    np.testing.assert_allclose(got, _brute_log_mgf(samples, attained, gamma), rtol=1e-4)
  # Beyond every size seen: the last bin's width is what remains.
  np.testing.assert_allclose(ts.log_mgf_remaining(hist, np.array([7.0]), 2.0), 2.0 * 0.1,
                             rtol=1e-5)


def test_exponential_sizes_are_memoryless():
  """S ~ Exp(mu): M(x) = mu / (mu - gamma) at every age, so the boost is one constant and
  prediction-free gamma-Boost orders as FCFS (up to the bins' resolution)."""
  mu, gamma = 1.0, 0.4
  edges = np.linspace(0.0, 40.0, 4001)
  p = np.exp(-mu * edges[:-1]) - np.exp(-mu * edges[1:])
  hist = ts.histogram(edges, p * 1e6)
  x = np.array([0.0, 0.5, 2.0, 5.0, 10.0])
  np.testing.assert_allclose(ts.log_mgf_remaining(hist, x, gamma), np.log(mu / (mu - gamma)),
                             atol=2e-3)
  arrival = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
  keys = ts.gamma_boost_attained(arrival, ts.log_mgf_remaining(hist, x[::-1], gamma), gamma)
  np.testing.assert_array_equal(np.argsort(keys), np.arange(5))


def _conditional_hist():
  """A hand-made conditional histogram: 3 prompt classes on 6 size bins (1 s wide)."""
  edges = np.arange(7.0)
  class_edges = np.array([0.0, 100.0, 1000.0, 1e4])
  counts = np.array([[5, 3, 1, 0, 0, 0],   # short prompts: short answers
                     [0, 1, 2, 4, 2, 1],   # middle prompts
                     [0, 0, 0, 1, 3, 6]],  # long prompts: long answers
                    np.float32)
  return ts.conditional_histogram(edges, class_edges, counts), edges, counts


def test_remaining_service_boost_against_brute_force():
  """The new key against numpy: E[e^{gamma (S - x)} | S > x] over the class's row, each
  bin at its midpoint, times e^{gamma k} for the known prefill; then a - (1/gamma) log(M/(M-1))."""
  hist, edges, counts = _conditional_hist()
  mids = 0.5 * (edges[1:] + edges[:-1])
  prompt = np.array([50.0, 50.0, 500.0, 500.0, 5000.0, 2e4])  # 2e4: beyond, the last class
  attained = np.array([0.0, 1.7, 0.0, 3.2, 4.9, 0.0])
  known = np.array([0.3, 0.0, 0.3, 0.1, 0.0, 0.2])
  arrival = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
  row = np.array([0, 0, 1, 1, 2, 2])
  for gamma in (0.2, 1.0, 3.0):
    want_log_m = []
    for r, x in zip(row, attained):
      live = (mids > x) & (counts[r] > 0)
      p = counts[r][live] / counts[r][live].sum()
      want_log_m.append(np.log(np.sum(p * np.exp(gamma * (mids[live] - x)))))
    want_log_m = np.array(want_log_m)
    log_m = np.asarray(ts.log_mgf_conditional(hist, prompt, attained, gamma))
    np.testing.assert_allclose(log_m, want_log_m, rtol=1e-5)
    m_total = np.exp(gamma * known + want_log_m)
    want_key = arrival - np.log(m_total / (m_total - 1.0)) / gamma
    np.testing.assert_allclose(ts.gamma_boost_remaining(arrival, known, log_m, gamma), want_key,
                               rtol=1e-5, atol=1e-5)
  # Observing adds each size to its prompt's row.
  grown = ts.observe_conditional(hist, np.array([50.0, 5000.0]), np.array([0.5, 5.5]),
                                 np.array([True, True]))
  np.testing.assert_array_equal(np.asarray(grown.counts_KB) - counts,
                                [[1, 0, 0, 0, 0, 0], [0] * 6, [0, 0, 0, 0, 0, 1]])


def test_remaining_boost_limits_and_different_prompts():
  """gamma -> inf is FCFS; gamma -> 0 orders by the expected remaining service; two waiting
  requests (nothing attained) with different prompts get different keys."""
  hist, edges, counts = _conditional_hist()
  mids = 0.5 * (edges[1:] + edges[:-1])
  rng = np.random.default_rng(2)
  n = 30
  arrival = np.cumsum(rng.uniform(0.01, 0.2, n))
  prompt = rng.choice([50.0, 500.0, 5000.0], n)
  attained = np.zeros(n)
  known = rng.uniform(0.0, 0.5, n)
  row = np.searchsorted([0.0, 100.0, 1000.0], prompt, side="right") - 1
  mean_rest = np.array([np.sum(counts[r] * mids) / counts[r].sum() for r in row])
  expected = known + mean_rest
  for gamma, want in ((1e4, np.argsort(arrival, kind="stable")),
                      (1e-5, np.lexsort((np.arange(n), expected)))):
    log_m = ts.log_mgf_conditional(hist, prompt, attained, gamma)
    keys = np.asarray(ts.gamma_boost_remaining(arrival, known, log_m, gamma), np.float64)
    np.testing.assert_array_equal(np.lexsort((np.arange(n), keys)), want, err_msg=f"{gamma}")
  np.testing.assert_array_equal(
      ts.gamma_boost_remaining(arrival, known, np.full(n, np.inf), math.inf),
      arrival.astype(np.float32))  # gamma = inf: no boost, the arrival itself
  # Two requests waiting side by side, arrived together, nothing attained: different
  # prompts (and so prefill work and answer distribution), different keys; the short
  # prompt first. The attained-only rule gives them one key.
  two_prompts, two_known = np.array([50.0, 5000.0]), np.array([50.0, 5000.0]) * 6.67e-5
  for gamma in (0.1, 1.0):
    log_m = ts.log_mgf_conditional(hist, two_prompts, np.zeros(2), gamma)
    keys = np.asarray(ts.gamma_boost_remaining(np.zeros(2), two_known, log_m, gamma))
    assert keys[0] < keys[1] - 0.1, keys
    marginal = ts.histogram(edges, counts.sum(0))
    same = ts.gamma_boost_attained(np.zeros(2), ts.log_mgf_remaining(marginal, np.zeros(2),
                                                                     gamma), gamma)
    assert float(same[0]) == float(same[1])

def test_mlfq_levels_by_hand():
  service = np.array([0.0, 1.0, 2.0, 3.0, 3.5, 7.0, 100.0])
  # quantum 1: level l holds (2^{l-1} - 1, 2^l - 1]; 4 levels at most.
  want_levels = np.array([0, 1, 2, 2, 3, 3, 3])
  keys = np.asarray(ts.mlfq(np.zeros(7), service, 1.0, 4, 10.0))
  np.testing.assert_array_equal(keys, want_levels)
  arrivals = np.array([5.0, 1.0, 2.0])
  keys = np.asarray(ts.mlfq(arrivals, np.array([0.0, 3.0, 3.0]), 1.0, 4, 10.0))
  np.testing.assert_array_equal(np.argsort(keys), [0, 1, 2])  # level first, then arrival
  with pytest.raises(ValueError, match="horizon"):
    ts.mlfq(arrivals, np.zeros(3), 1.0, 4, 5.0)


def test_srpt_sjf_and_predictor():
  size = np.array([3.0, 1.0, 2.0])
  np.testing.assert_array_equal(ts.srpt(np.zeros(3), size, np.array([2.5, 0.0, 0.0])),
                                [0.5, 1.0, 2.0])
  np.testing.assert_array_equal(ts.sjf(np.zeros(3), size), size)
  np.testing.assert_allclose(ts.predicted_size(jax.random.key(0), size, 0.0), size)
  big = jnp.full(20000, 2.0)
  ratio = np.log(np.asarray(ts.predicted_size(jax.random.key(1), big, 0.5)) / 2.0)
  assert abs(ratio.std() - 0.5) < 0.01 and abs(ratio.mean()) < 0.01


def test_bad_input():
  with pytest.raises(ValueError, match="gamma"):
    ts.boost(np.ones(3), 0.0)
  with pytest.raises(ValueError, match="size_R"):
    ts.gamma_boost(np.zeros(3), np.array([1.0, 0.0, 2.0]), 1.0)
  with pytest.raises(ValueError, match="edges_B1"):
    ts.histogram(np.array([0.0, 2.0, 1.0]))
  with pytest.raises(ValueError, match="gamma"):
    ts.log_mgf_remaining(ts.histogram(np.array([0.0, 1.0, 2.0])), np.ones(2), math.inf)
  with pytest.raises(ValueError, match="share the length of axis R"):
    ts.gamma_boost(np.zeros(3), np.ones(4), 1.0)
