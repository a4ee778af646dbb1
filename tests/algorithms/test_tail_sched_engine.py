"""The JAX serving engine equals the numpy reference request by request."""

import numpy as np
import pytest

from reprojax.algorithms.tail_sched import engine as eng
from reprojax.algorithms.tail_sched import reference as ref

UNIT = ref.LatencyModel(c_iter=1.0, c_prefill=0.0, c_ctx=0.0, c_seq=0.0)


def _assert_same_schedule(got, want, label=""):
  """The engine's outcome equals the reference's request by request (times within 1e-9 s)."""
  for f in ("ttft_R", "ttlt_R", "max_tbt_R"):
    np.testing.assert_allclose(getattr(got, f), getattr(want, f), rtol=0, atol=1e-9,
                               err_msg=f"{label} {f}")
  np.testing.assert_array_equal(got.preemptions_R, want.preemptions_R, err_msg=label)
  assert int(got.iterations) == want.iterations, label
  assert int(got.peak_blocks) == want.peak_blocks, label


def test_hand_schedules():
  """The two schedules of test_tail_sched_reference.py, worked by hand there."""
  out = eng.simulate([0.0, 0.0, 1.5, 1.5, 10.0], [4, 3, 2, 10, 1], [2, 1, 3, 1, 1],
                     ref.Policy("fcfs"), ref.Server(2, 8, 100, 4), UNIT, capacity=8)
  np.testing.assert_allclose(out.ttlt_R, [2.0, 1.0, 3.5, 2.5, 1.0])
  np.testing.assert_allclose(out.ttft_R, [1.0, 1.0, 1.5, 2.5, 1.0])
  assert int(out.iterations) == 6
  out = eng.simulate([0.0, 0.5], [4, 9], [5, 1], ref.Policy("srpt"), ref.Server(2, 8, 3, 4),
                     UNIT, capacity=4)
  np.testing.assert_allclose(out.ttlt_R, [7.0, 2.5])
  np.testing.assert_allclose(out.max_tbt_R, [3.0, 0.0])
  np.testing.assert_array_equal(out.preemptions_R, [1, 0])
  assert int(out.iterations) == 7 and int(out.peak_blocks) == 3
  out = eng.simulate([0.0, 0.5], [4, 9], [5, 1], ref.Policy("srpt"),
                     ref.Server(2, 8, 3, 4, running_first=True), UNIT, capacity=4)
  np.testing.assert_allclose(out.ttlt_R, [5.0, 6.5])
  np.testing.assert_array_equal(out.preemptions_R, [0, 0])


def test_engine_equals_reference_under_memory_pressure():
  """Each case in one test: the engine compiles once for all of them (the policy and the
  preemption mode are arguments of its program), also when pytest-xdist splits a file."""
  rng = np.random.default_rng(3)
  n = 150
  arrival = np.sort(rng.uniform(0, 4, n))
  prompt, output = rng.integers(1, 200, n), rng.integers(1, 60, n)
  edges = tuple(np.geomspace(1, 128, 9).tolist())
  latency = ref.LatencyModel(0.01, 1e-4, 1e-6, 1e-4)
  programs = eng._simulate._cache_size()  # pylint: disable=protected-access
  for name, cache_aware, running_first in (
      ("srpt", False, False), ("gamma_boost_attained", True, False), ("mlfq", False, False),
      ("srpt", True, True), ("gamma_boost_remaining", True, False)):
    case = f"{name}, cache_aware={cache_aware}, running_first={running_first}"
    policy = ref.Policy(name, gamma=2.0, hist_edges=edges, hist_prior=(1.0,) * 8,
                        class_edges=(1.0, 50.0, 100.0, 150.0), prefill_sec_per_token=1e-3)
    server = ref.Server(16, 256, 40, 16, cache_aware, running_first)
    want = ref.simulate_reference(arrival, prompt, output, policy, server, latency)
    got = eng.simulate(arrival, prompt, output, policy, server, latency, capacity=n)
    assert want.preemptions_R.sum() > 0, case  # the cap binds
    _assert_same_schedule(got, want, case)
    assert int(got.window_full) == 0 and int(got.finished) == n, case
  # three policies in three modes, one program (none if an earlier test compiled these shapes)
  assert eng._simulate._cache_size() - programs <= 1  # pylint: disable=protected-access


def _srpt_mean_response(sizes, probs, lam):
  """M/G/1 preemptive SRPT (Schrage & Miller 1966) for sizes on atoms: the mean over
  sizes x of lam m2(x) / (2 (1 - rho(x))^2) + integral_0^x dt / (1 - rho(t-)), with
  m2(x) = E[min(S, x)^2] and rho(x) = lam E[S; S <= x]."""
  total = 0.0
  for x, px in zip(sizes, probs):
    le = sizes <= x
    m2 = np.sum(probs[le] * sizes[le] ** 2) + x**2 * np.sum(probs[~le])
    rho_x = lam * np.sum(probs[le] * sizes[le])
    residence, lo = 0.0, 0.0
    for hi in sizes[le]:
      residence += (hi - lo) / (1 - lam * np.sum(probs[sizes <= lo] * sizes[sizes <= lo]))
      lo = hi
    total += px * (lam * m2 / (2 * (1 - rho_x) ** 2) + residence)
  return total


def test_batch_one_srpt_and_fcfs_match_their_mg1_formulas():
  """Batch 1, an iteration of 0.01 s, Poisson arrivals at load 0.6, geometric sizes of mean
  12 tokens: SRPT (preempting at iteration boundaries) against Schrage-Miller's mean
  response time, FCFS against Pollaczek-Khinchine. 3,000 requests: over four seeds the
  ratios spread over 0.93-1.06, and the two formulas are 34% apart."""
  rng = np.random.default_rng(0)
  n, q = 3000, 0.01
  d = np.minimum(rng.geometric(1 / 12, n), 80)
  vals, counts = np.unique(d, return_counts=True)
  probs, sizes = counts / n, q * vals
  lam = 0.6 / (q * d.mean())
  arrival = np.cumsum(rng.exponential(1 / lam, n))
  arrival -= arrival[0]
  latency = ref.LatencyModel(q, 0.0, 0.0, 0.0)
  server = ref.Server(1, 64, 10**6, 16)
  srpt = eng.simulate(arrival, np.ones(n, int), d, ref.Policy("srpt", sec_per_token=q), server,
                      latency, capacity=48)
  fcfs = eng.simulate(arrival, np.ones(n, int), d, ref.Policy("fcfs", sec_per_token=q), server,
                      latency, capacity=48)
  es, es2 = np.sum(probs * sizes), np.sum(probs * sizes**2)
  pk = lam * es2 / (2 * (1 - lam * es)) + es
  sm = _srpt_mean_response(sizes, probs, lam)
  assert sm < 0.7 * pk  # the check can tell the two policies apart
  assert int(srpt.window_full) == 0 and int(fcfs.window_full) == 0
  assert abs(srpt.ttlt_R.mean() / sm - 1) < 0.1, (srpt.ttlt_R.mean(), sm)
  assert abs(fcfs.ttlt_R.mean() / pk - 1) < 0.1, (fcfs.ttlt_R.mean(), pk)


def test_decode_runs_equal_one_iteration_at_a_time():
  """At light load most iterations are decode steps of the whole window, which the engine
  advances in closed form between events; it still equals the reference request by request
  (a small KV cap makes some runs stop for memory, and Poisson arrivals end the others),
  and the engine with decode runs off (one loop trip an iteration), for FCFS and the
  prediction-free gamma-Boost (one compile: decode runs on or off is an argument too)."""
  rng = np.random.default_rng(5)
  n = 200
  arrival = np.cumsum(rng.exponential(0.4, n))
  prompt = rng.integers(1, 300, n)
  output = np.minimum(rng.geometric(1 / 40, n), 300)
  edges = tuple(np.geomspace(1, 512, 10).tolist())
  server = ref.Server(32, 512, 48, 16)
  latency = ref.LatencyModel(9e-3, 7e-5, 3e-7, 6e-5)
  for name in ("fcfs", "gamma_boost_attained"):
    policy = ref.Policy(name, gamma=0.5, hist_edges=edges, hist_prior=(1.0,) * 9)
    want = ref.simulate_reference(arrival, prompt, output, policy, server, latency)
    got = eng.simulate(arrival, prompt, output, policy, server, latency, capacity=64)
    assert int(got.loop_steps) < want.iterations / 4, name  # runs of many iterations happened
    _assert_same_schedule(got, want, name)
    assert want.peak_blocks == server.kv_blocks and want.preemptions_R.sum() > 0, name  # binds
    one = eng.simulate(arrival, prompt, output, policy, server, latency, capacity=64,
                       decode_runs=False)
    assert int(one.loop_steps) >= want.iterations, name  # every iteration a trip of its own
    np.testing.assert_allclose(one.ttlt_R, want.ttlt_R, rtol=0, atol=1e-9, err_msg=name)
    np.testing.assert_array_equal(one.preemptions_R, want.preemptions_R, err_msg=name)


def test_views_of_the_window_give_the_same_schedule():
  """Trips run on the first 4 or 16 slots while they hold the whole window, on all 48
  otherwise: every branch is taken on a trace of bursts (20 requests within tens of
  milliseconds, every few seconds) under memory pressure, and the outcome equals the
  reference request by request (as the engine without views does: the tests above)."""
  rng = np.random.default_rng(11)
  n = 160
  gaps = np.where(np.arange(n) % 20 == 0, rng.exponential(4.0, n), rng.exponential(0.002, n))
  arrival = np.cumsum(gaps)
  prompt = rng.integers(1, 200, n)
  output = np.minimum(rng.geometric(1 / 30, n), 200)
  edges = tuple(np.geomspace(1, 512, 10).tolist())
  policy = ref.Policy("gamma_boost_attained", gamma=0.5, sec_per_token=9e-3, hist_edges=edges,
                      hist_prior=(1.0,) * 9)
  server = ref.Server(16, 256, 60, 16, cache_aware=True)
  latency = ref.LatencyModel(9e-3, 7e-5, 3e-7, 6e-5)
  want = ref.simulate_reference(arrival, prompt, output, policy, server, latency)
  got = eng.simulate(arrival, prompt, output, policy, server, latency, capacity=48,
                     views=(16, 4, 64))  # 64 >= the window: dropped
  assert got.view_trips.shape == (3,) and np.all(got.view_trips > 0), got.view_trips
  assert int(got.window_full) == 0 and want.preemptions_R.sum() > 0
  _assert_same_schedule(got, want, "views")
  with pytest.raises(ValueError, match="views"):
    eng.simulate(arrival, prompt, output, policy, server, latency, capacity=48, views=(0,))


@pytest.mark.parametrize("simulate", [eng.simulate, ref.simulate_reference],
                         ids=["engine", "reference"])
def test_inputs_it_cannot_simulate_raise_naming_the_argument(simulate):
  """Issue 68's four inputs, each of which the engine once ran to ``finished = 10``."""
  rng = np.random.default_rng(0)
  arrival, prompt, output = np.sort(rng.uniform(0, 5, 10)), np.full(10, 8), np.full(10, 4)
  policy, server = ref.Policy("fcfs"), ref.Server(4, 64, 100, 4)
  cases = [
      ("output_tokens_R", (arrival, prompt, output[:7], policy, server, UNIT)),
      ("arrival_s_R", (arrival[::-1], prompt, output, policy, server, UNIT)),
      ("prompt_tokens_R", (arrival, np.zeros(10, int), output, policy, server, UNIT)),
      ("c_prefill", (arrival, prompt, output, policy, server, UNIT._replace(c_prefill=-1e-4))),
      ("prompt_tokens_R", (arrival, prompt + 0.5, output, policy, server, UNIT)),
      ("sec_per_token", (arrival, prompt, output, policy._replace(sec_per_token=-1.0), server,
                         UNIT))]
  for name, args in cases:
    with pytest.raises(ValueError, match=name):
      simulate(*args)
