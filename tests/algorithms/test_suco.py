"""SuCo's core against independent references: on constructed chains with a scripted model
that can answer only once the last value is stated, the minimal sufficient prefix is the
planted one; on scripted per-prefix probabilities it equals a brute-force scan (both
fallbacks); the paper's length-percentile threshold and fallback on a case computed by hand; forced
answering equals the model's own greedy decoding of the same prompt; the reward and the
tracker equal their definitions computed by hand and by a loop; the task's answers equal a
recomputation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import suco
from reprojax.data import suco as task_lib
from reprojax.models import llama
from reprojax.models import transformer

TASK = task_lib.ArithmeticTask(max_ops=4)


def _oracle_logits(vocab):
  """A scripted model: at the answer marker it puts all its mass on the value stated last,
  but only if the chain so far states as many values as the question has operations (the
  answer is then on the page); before that, a uniform guess."""

  def logits_fn(ids, mask):
    del mask
    ids = np.asarray(ids)
    out = np.zeros(ids.shape + (vocab,), np.float32)
    for n, row in enumerate(ids):
      (pos,) = np.nonzero(row == task_lib.ANS)
      think = int(np.nonzero(row == task_lib.THINK)[0][0])
      n_ops = think - 2  # <q> x_0 op_1 .. op_L <think>
      chain = row[think + 1:pos[0]]
      values = [t for t in chain if task_lib.VALUE0 <= t < TASK.op0]
      if len(values) >= n_ops:
        out[n, pos[0], values[n_ops - 1]] = 50.0
    return jnp.asarray(out)

  return logits_fn


def test_msc_is_the_planted_minimal_prefix_under_a_scripted_model():
  ch = task_lib.sample(TASK, 40, seed=0)
  p, greedy = suco.forced_answer_probs(_oracle_logits(TASK.vocab_size), ch.prompt_QxP,
                                       ch.prompt_len_Q, ch.cot_QxC, ch.step_ends_QxS,
                                       ch.answer_Q, task_lib.ANS)
  assert p.shape == (40, 2 * TASK.max_ops + 2)
  tau = suco.adaptive_threshold(ch.difficulty_Q, TASK.max_ops, 0.6, 0.9)
  msc = np.asarray(suco.minimal_sufficient_steps(p, tau, ch.num_steps_Q, fallback="full"))
  np.testing.assert_array_equal(msc, ch.difficulty_Q)
  # the paper's rule, thresholds from the chains' own lengths, finds the same prefixes (the
  # scripted model is certain from the planted step on, so any threshold in (0, 1] will do)
  delta = suco.sufficiency_threshold(suco.length_percentile(ch.cot_len_Q, ch.cot_len_Q))
  np.testing.assert_array_equal(
      np.asarray(suco.minimal_sufficient_steps(p, delta, ch.num_steps_Q)), ch.difficulty_Q)
  # from the planted prefix on, the greedy forced answer is the answer
  for q in range(40):
    assert np.all(np.asarray(greedy)[q, ch.difficulty_Q[q]:ch.num_steps_Q[q] + 1]
                  == ch.answer_Q[q])


def test_msc_equals_a_brute_force_scan_of_every_prefix():
  """Both fallbacks against a loop over the prefixes (ties in p are planted, so the most
  probable prefix's tie rule is exercised)."""
  rng = np.random.default_rng(1)
  p = np.round(rng.uniform(size=(200, 9)), 1).astype(np.float32)
  tau = rng.uniform(0.3, 1.0, size=200).astype(np.float32)
  n = rng.integers(0, 9, size=200)
  got = {f: np.asarray(suco.minimal_sufficient_steps(p, tau, n, fallback=f))
         for f in ("most_probable", "full")}
  fell_back = 0
  for b in range(200):
    found = None
    for j in range(n[b] + 1):
      if p[b, j] >= tau[b]:
        found = j
        break
    best = max(range(n[b] + 1), key=lambda j, b=b: (p[b, j], -j))  # the shortest of ties
    fell_back += found is None
    assert got["full"][b] == (n[b] if found is None else found), b
    assert got["most_probable"][b] == (best if found is None else found), b
  assert 20 < fell_back < 180  # both branches ran


def test_the_papers_threshold_on_a_hand_computed_case():
  """Five questions whose own chains took 12, 4, 30, 4 and 9 tokens: percentile ranks
  (how many of the five are no longer) 4/5, 2/5, 5/5, 2/5 (a tie shares the higher rank)
  and 3/5; thresholds 0.6 + 0.3 C = 0.84, 0.72, 0.90, 0.72, 0.78. On the forced answers'
  probabilities below, the first prefix at or above each threshold: 2 steps (0.85 >= 0.84),
  1 (0.72 >= 0.72, equality counts), none for the third (the most probable prefix, 3 steps
  at 0.89, is taken: the full chain would be 4), 0 (0.8 already), and for the fifth none
  within its 2 steps (the 0.95 beyond them is ignored): its most probable, step 1 of the
  two tied at 0.7."""
  lengths = np.array([12, 4, 30, 4, 9])
  c = np.asarray(suco.length_percentile(lengths, lengths))
  np.testing.assert_allclose(c, [0.8, 0.4, 1.0, 0.4, 0.6], rtol=1e-6)
  delta = np.asarray(suco.sufficiency_threshold(c, 0.6, 0.3))
  np.testing.assert_allclose(delta, [0.84, 0.72, 0.90, 0.72, 0.78], rtol=1e-6)
  p = np.array([[0.1, 0.5, 0.85, 0.9, 0.2],
                [0.3, 0.72, 0.9, 0.9, 0.9],
                [0.1, 0.4, 0.6, 0.89, 0.7],
                [0.8, 0.1, 0.1, 0.1, 0.1],
                [0.2, 0.7, 0.7, 0.95, 0.95]], np.float32)
  n = np.array([4, 4, 4, 4, 2])
  np.testing.assert_array_equal(np.asarray(suco.minimal_sufficient_steps(p, delta, n)),
                                [2, 1, 3, 0, 1])
  np.testing.assert_array_equal(
      np.asarray(suco.minimal_sufficient_steps(p, delta, n, fallback="full")), [2, 1, 4, 0, 2])
  # a length ranked in another pool: 9 is no shorter than 3 of the 5
  np.testing.assert_allclose(np.asarray(suco.length_percentile(np.array([9.0, 0.0, 31.0]),
                                                               lengths)), [0.6, 0.0, 1.0])


def test_prefix_rows_are_the_prompt_the_first_steps_and_the_marker():
  ch = task_lib.sample(TASK, 5, seed=2)
  ids, mask, pos = (np.asarray(x) for x in suco.prefix_batch(
      ch.prompt_QxP, ch.prompt_len_Q, ch.cot_QxC, ch.step_ends_QxS, task_lib.ANS))
  for q in range(5):
    prompt = list(ch.prompt_QxP[q, :ch.prompt_len_Q[q]])
    for j in range(ch.num_steps_Q[q] + 1):
      end = 0 if j == 0 else ch.step_ends_QxS[q, j - 1]
      want = prompt + list(ch.cot_QxC[q, :end]) + [task_lib.ANS]
      assert list(ids[q, j, :len(want)]) == want
      assert mask[q, j].sum() == len(want) and pos[q, j] == len(want) - 1
      assert np.all(ids[q, j, len(want):] == task_lib.PAD)


def test_forced_answer_equals_the_models_greedy_decoding():
  cfg = transformer.decoder_config(TASK.vocab_size, d_model=32, n_layers=2, n_heads=2,
                                   max_len=64)
  params = jax.jit(llama.Llama(cfg).init)(jax.random.key(0), jnp.zeros((1, 8), jnp.int32))
  ch = task_lib.sample(TASK, 3, seed=3)
  p, greedy = suco.forced_answer_probs(
      lambda ids, mask: llama.logits(cfg, params, ids, mask), ch.prompt_QxP,
      ch.prompt_len_Q, ch.cot_QxC, ch.step_ends_QxS, ch.answer_Q, task_lib.ANS)
  ids, mask, pos = (np.asarray(x) for x in suco.prefix_batch(
      ch.prompt_QxP, ch.prompt_len_Q, ch.cot_QxC, ch.step_ends_QxS, task_lib.ANS))
  b, j, t = ids.shape
  # every prefix through the KV-cached generate at once (right-padded prompts, their masks)
  gen = llama.generate(cfg, params, ids.reshape(b * j, t), mask.reshape(b * j, t),
                       max_new_tokens=1)
  np.testing.assert_array_equal(np.asarray(gen.tokens_BxN[:, 0]).reshape(b, j),
                                np.asarray(greedy))
  # and the longest prefix alone, unpadded
  for q, jj in ((1, int(ch.num_steps_Q[1])),):
    n = int(pos[q, jj]) + 1
    logits = llama.logits(cfg, params, ids[q, jj, :n][None])
    want = jax.nn.softmax(logits[0, -1])[ch.answer_Q[q]]
    np.testing.assert_allclose(p[q, jj], want, rtol=1e-4, atol=1e-6)


def test_threshold_grows_with_difficulty():
  tau = np.asarray(suco.adaptive_threshold(np.arange(1, 7), 6, 0.5, 0.8))
  np.testing.assert_allclose(tau, 0.5 + 0.3 * np.arange(6) / 5, rtol=1e-6)
  assert np.all(np.diff(tau) > 0)


def test_sapo_reward_on_hand_computed_cases():
  correct = np.array([True, True, True, False, False, False])
  length = np.array([10.0, 15.0, 40.0, 5.0, 10.0, 12.0])
  tracked = np.array([10.0, 10.0, 10.0, 10.0, 10.0, 10.0])
  r = np.asarray(suco.sapo_reward(correct, length, tracked, over=0.4, under=0.3))
  # on budget; 50% over: 1 - 0.4 * 0.5; 300% over, clipped at 1: 1 - 0.4;
  # short and wrong: -0.3; wrong at and beyond the budget: 0
  np.testing.assert_allclose(r, [1.0, 0.8, 0.6, -0.3, 0.0, 0.0], rtol=1e-6)
  assert np.asarray(suco.sapo_reward(np.array([True]), np.array([3.0]), np.array([0.0])))[0] \
      == pytest.approx(1.0 - 0.5 * 1.0)  # a zero estimate counts as one token


def test_tracker_is_a_running_mean_per_question():
  rng = np.random.default_rng(4)
  state = suco.tracker_init(5)
  sums, counts = np.zeros(5), np.zeros(5)
  for _ in range(6):
    q = rng.integers(0, 5, size=8)
    n = rng.uniform(1, 20, size=8).astype(np.float32)
    v = rng.uniform(size=8) < 0.7
    state = suco.tracker_update(state, q, n, v)
    for qi, ni, vi in zip(q, n, v):  # the loop the segment sums replace
      if vi:
        sums[qi] += ni
        counts[qi] += 1
  got = np.asarray(suco.tracked_length(state, np.arange(5), np.full(5, -1.0)))
  want = np.where(counts > 0, sums / np.maximum(counts, 1), -1.0)
  np.testing.assert_allclose(got, want, rtol=1e-5)


def test_task_answers_and_training_rows():
  ch = task_lib.sample(TASK, 50, seed=5)
  for q in range(50):
    n_ops = ch.difficulty_Q[q]
    x = ch.prompt_QxP[q, 1] - task_lib.VALUE0
    for t in ch.prompt_QxP[q, 2:2 + n_ops]:
      x = task_lib.apply_op(x, task_lib.OPS[t - TASK.op0], TASK.modulus)
    assert ch.answer_Q[q] == x + task_lib.VALUE0
    assert ch.num_steps_Q[q] == 2 * n_ops + 1 and ch.cot_len_Q[q] == 4 * n_ops + 1
  ids, mask, target = task_lib.training_rows(ch, steps_kept=ch.difficulty_Q)
  for q in range(5):
    row = ids[q, mask[q]]
    assert row[-3] == task_lib.ANS and row[-2] == ch.answer_Q[q] and row[-1] == task_lib.EOS
    assert len(row) == ch.prompt_len_Q[q] + 2 * ch.difficulty_Q[q] + 3
    assert target[q].sum() == 2 * ch.difficulty_Q[q] + 3


def test_bad_input_raises_clear_errors():
  with pytest.raises(ValueError, match="delta0"):
    suco.sufficiency_threshold(np.array([0.2, 0.5]), 0.8, 0.3)  # 1.1 at C = 1
  with pytest.raises(ValueError, match="complexity_B"):
    suco.sufficiency_threshold(np.array([0.2, 1.5]))
  with pytest.raises(ValueError, match="pool_N"):
    suco.length_percentile(np.array([3.0]), np.array([1.0, -2.0]))
  with pytest.raises(ValueError, match="fallback"):
    suco.minimal_sufficient_steps(np.zeros((2, 3)), np.array([0.5, 0.5]), np.array([2, 2]),
                                  fallback="longest")
  with pytest.raises(ValueError, match="lo"):
    suco.adaptive_threshold(np.array([1, 2]), 4, 0.0, 0.9)
  with pytest.raises(ValueError, match="lo"):
    suco.adaptive_threshold(np.array([1, 2]), 4, 0.5, 1.2)
  with pytest.raises(ValueError, match="threshold_B"):
    suco.minimal_sufficient_steps(np.zeros((2, 3)), np.array([0.5, 1.5]), np.array([2, 2]))
  with pytest.raises(ValueError, match="step_ends_BxS"):  # an empty chain: no steps at all
    suco.prefix_batch(np.ones((2, 3), np.int32), np.array([3, 3]), np.ones((2, 4), np.int32),
                      np.zeros((2, 0), np.int32), 4)
  with pytest.raises(ValueError, match="non-decreasing"):
    suco.prefix_batch(np.ones((1, 3), np.int32), np.array([3]), np.ones((1, 4), np.int32),
                      np.array([[3, 2]]), 4)
  with pytest.raises(ValueError, match="difficulties"):
    task_lib.sample(TASK, 3, 0, difficulties=[0, 2])
  with pytest.raises(ValueError, match="max_ops"):
    task_lib.ArithmeticTask(max_ops=0)
