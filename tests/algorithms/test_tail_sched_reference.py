"""The reference serving simulator: two schedules worked by hand, and the M/G/1 queue it reduces to."""

import numpy as np
import pytest

from reprojax.algorithms.tail_sched import reference as ref

UNIT = ref.LatencyModel(c_iter=1.0, c_prefill=0.0, c_ctx=0.0, c_seq=0.0)  # 1 s an iteration


def test_fcfs_five_requests_by_hand():
  """Batch of 2, 8 tokens an iteration. By hand (times in s):
  it 1 [0, 1]: r0 prefills 4, r1 prefills 3; both emit at 1 (r1 is done).
  it 2 [1, 2]: r0 decodes: its 2nd token at 2 (done). r2, r3 arrive at 1.5.
  it 3 [2, 3]: r2 prefills 2 (first token at 3), r3 prefills 6 of 10 (budget spent).
  it 4 [3, 4]: r2 decodes (token 2), r3 prefills its last 4 and emits at 4 (done).
  it 5 [4, 5]: r2's 3rd token at 5 (done). Idle until r4 at 10; it 6 [10, 11]: r4.
  """
  out = ref.simulate_reference([0.0, 0.0, 1.5, 1.5, 10.0], [4, 3, 2, 10, 1], [2, 1, 3, 1, 1],
                               ref.Policy("fcfs"), ref.Server(2, 8, 100, 4), UNIT)
  np.testing.assert_allclose(out.ttft_R, [1.0, 1.0, 1.5, 2.5, 1.0])
  np.testing.assert_allclose(out.ttlt_R, [2.0, 1.0, 3.5, 2.5, 1.0])
  np.testing.assert_allclose(out.max_tbt_R, [1.0, 0.0, 1.0, 0.0, 0.0])
  np.testing.assert_array_equal(out.preemptions_R, 0)
  assert out.iterations == 6


def test_srpt_preempts_by_recompute_by_hand():
  """3 KV blocks of 4 tokens. r0 (prompt 4, 5 tokens) is served alone in it 1 (token at 1,
  1 block). r1 (prompt 9, 1 token) arrives at 0.5 and is shorter, so it goes first:
  it 2: r1 prefills 8 (2 blocks: 3 held, the budget is spent);
  it 3: r1's last prompt token needs a 3rd block: r0 (lower priority, not in the batch) is
  preempted and loses its block; r1 emits at 3 (done: 2.5 s) and frees 3 blocks; r0 may
  not re-prefill in it 3 (no block is free then);
  it 4: r0 re-prefills its prompt and its emitted token (5 tokens, 2 blocks), token 2 at 4;
  it 5-7: tokens 3, 4, 5 at 5, 6, 7. r0: TTFT 1, TTLT 7, largest gap 3, one preemption.
  """
  out = ref.simulate_reference([0.0, 0.5], [4, 9], [5, 1], ref.Policy("srpt"),
                               ref.Server(2, 8, 3, 4), UNIT)
  np.testing.assert_allclose(out.ttft_R, [1.0, 2.5])
  np.testing.assert_allclose(out.ttlt_R, [7.0, 2.5])
  np.testing.assert_allclose(out.max_tbt_R, [3.0, 0.0])
  np.testing.assert_array_equal(out.preemptions_R, [1, 0])
  assert out.iterations == 7 and out.peak_blocks == 3


def test_running_first_never_preempts_for_a_waiting_request_by_hand():
  """The same two requests with ``running_first``: r0 holds a block, so it ranks above the
  waiting r1 whatever SRPT says. it 2: r0 decodes (a 2nd block), r1 would take 7 tokens
  and 2 blocks but only 1 is free and no holder ranks below it: it waits, as it does in
  its 3-4 while r0 decodes within its 2 blocks; r0's 5th token at 5 (done, 3 blocks free).
  it 6: r1 prefills 8 (2 blocks); it 7: its last prompt token (3rd block), token at 7.
  r0: TTLT 5, gaps of 1; r1: TTFT = TTLT = 6.5; no preemption."""
  out = ref.simulate_reference([0.0, 0.5], [4, 9], [5, 1], ref.Policy("srpt"),
                               ref.Server(2, 8, 3, 4, running_first=True), UNIT)
  np.testing.assert_allclose(out.ttft_R, [1.0, 6.5])
  np.testing.assert_allclose(out.ttlt_R, [5.0, 6.5])
  np.testing.assert_allclose(out.max_tbt_R, [1.0, 0.0])
  np.testing.assert_array_equal(out.preemptions_R, [0, 0])
  assert out.iterations == 7 and out.peak_blocks == 3


def _mg1(n, load, seed):
  rng = np.random.default_rng(seed)
  out_tokens = 1 + rng.geometric(0.25, n)  # mean 5 tokens
  step = 0.01
  rate = load / (out_tokens.mean() * step)
  arrival = np.cumsum(rng.exponential(1 / rate, n))
  return arrival - arrival[0], rng.integers(1, 50, n), out_tokens, step


def test_batch_one_fcfs_is_the_lindley_recursion():
  """Batch 1, no preemption, an iteration of 0.01 s: FCFS serves each request whole, its
  service S_j = 0.01 D_j, so W_{j+1} = max(0, W_j + S_j - (a_{j+1} - a_j)) exactly, and the
  mean wait is Pollaczek-Khinchine's lambda E[S^2] / (2 (1 - rho)) (ratios 0.97-1.04 over
  four seeds of 4,000 requests; 1.038 for this one)."""
  arrival, prompt, output, step = _mg1(4000, 0.6, 0)
  out = ref.simulate_reference(arrival, prompt, output, ref.Policy("fcfs"),
                               ref.Server(1, 64, 10**6, 16),
                               ref.LatencyModel(c_iter=step, c_prefill=0.0, c_ctx=0.0, c_seq=0.0))
  s = step * output
  w = np.zeros_like(s)
  for j in range(1, s.size):
    w[j] = max(0.0, w[j - 1] + s[j - 1] - (arrival[j] - arrival[j - 1]))
  np.testing.assert_allclose(out.ttlt_R, w + s, atol=1e-9)
  np.testing.assert_allclose(out.ttft_R, w + step, atol=1e-9)
  lam = (s.size - 1) / arrival[-1]
  pk = lam * np.mean(s**2) / (2 * (1 - lam * s.mean()))
  assert abs(w.mean() / pk - 1) < 0.1, (w.mean(), pk)


def test_conservation_on_a_loaded_trace():
  """Every request ends with all its tokens, KV never above the cap, and preemptions happen."""
  rng = np.random.default_rng(3)
  n = 200
  arrival = np.sort(rng.uniform(0, 5, n))
  prompt, output = rng.integers(1, 200, n), rng.integers(1, 60, n)
  for name in ("fcfs", "srpt", "mlfq"):
    for aware in (False, True):
      out = ref.simulate_reference(arrival, prompt, output, ref.Policy(name),
                                   ref.Server(16, 256, 40, 16, aware),
                                   ref.LatencyModel(0.01, 1e-4, 1e-6, 1e-4))
      assert np.all(np.isfinite(out.ttlt_R)) and np.all(out.ttlt_R >= out.ttft_R)
      assert out.peak_blocks <= 40
      if name == "srpt":
        assert out.preemptions_R.sum() > 0


def test_bad_input():
  with pytest.raises(ValueError, match="KV blocks"):
    ref.simulate_reference([0.0], [100], [10], ref.Policy("fcfs"), ref.Server(1, 8, 2, 4), UNIT)
  with pytest.raises(ValueError, match="non-decreasing"):
    ref.simulate_reference([1.0, 0.0], [1, 1], [1, 1], ref.Policy("fcfs"),
                           ref.Server(1, 8, 2, 4), UNIT)
  with pytest.raises(ValueError, match="policy.name"):
    ref.simulate_reference([0.0], [1], [1], ref.Policy("lifo"), ref.Server(1, 8, 2, 4), UNIT)
