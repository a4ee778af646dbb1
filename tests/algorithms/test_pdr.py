"""PDR's orchestration on scripted generators: the token accounting against a hand count,
bounded workspaces, determinism, PDR with one round equal to best-of-N, selection by the
model's own scores and never by a verifier, and bad input."""

import itertools

import jax
import pytest

from reprojax.algorithms import pdr
from reprojax.algorithms.pdr._examples import toy_generator


class Scripted:
  """Returns scripted drafts call by call: ``script[c]`` lists (length, score) per prompt;
  each draft's tokens are its call and position, so workspaces can be read back."""

  def __init__(self, script):
    self.script, self.prompts = list(script), []

  def __call__(self, prompts, max_new_tokens, key):
    del key
    c = len(self.prompts)
    self.prompts.append([tuple(p) for p in prompts])
    spec = self.script[c]
    assert len(spec) == len(prompts)
    return [pdr.Draft(tuple([10 * (c + 1) + i] * n), s) for i, (n, s) in enumerate(spec)]


def test_accounting_equals_a_hand_count():
  gen = Scripted([[(3, 0.1), (5, 0.9), (4, 0.5)],   # round 1: three drafts
                  [(2, 0.3), (5, 0.2)],             # round 2: two
                  [(4, 0.0)]])                      # round 3: the refinement
  trace = pdr.pdr(gen, (1, 2, 3), (3, 2, 1), draft_tokens=5, workspace_tokens=12,
                  key=jax.random.key(0), mode="shared_top_k", k=2, separator=(0,))
  # round 2's workspace: drafts 1 (score .9, 5 tokens) and 2 (.5, 4), joined: 5 + 1 + 4 = 10
  ws2 = (11,) * 5 + (0,) + (12,) * 4
  assert gen.prompts[1] == [(1, 2, 3, 0) + ws2] * 2
  # round 3's: round 2's drafts 0 (.3, 2 tokens) and 1 (.2, 5): 2 + 1 + 5 = 8
  ws3 = (20,) * 2 + (0,) + (21,) * 5
  assert gen.prompts[2] == [(1, 2, 3, 0) + ws3]
  assert trace.answer == (30,) * 4
  # sequential: the longest draft of each round, 5 + 5 + 4; total: 12 + 7 + 4;
  # context: round 2's prompt (3 + 1 + 10) plus its longest draft (5) = 19
  assert trace.budget == pdr.Budget(sequential_tokens=14, total_tokens=23, max_context=19, calls=3)
  assert [len(r.drafts) for r in trace.rounds] == [3, 2, 1]


def test_global_summary_is_one_more_sequential_call():
  gen = Scripted([[(3, 0.1), (5, 0.9)], [(9, 0.0)], [(4, 0.0)]])  # drafts, summary, refine
  trace = pdr.pdr(gen, (1,), (2, 1), draft_tokens=5, workspace_tokens=6, key=jax.random.key(0),
                  mode="global_summary", summary_prompt=lambda q, ds: (99,) + tuple(ds[0]))
  assert gen.prompts[1] == [(99, 10, 10, 10)]  # the summary call sees the drafts
  assert trace.rounds[0].summary.tokens == (20,) * 6  # truncated to the workspace bound
  assert gen.prompts[2] == [(1, 0) + (20,) * 6]
  # context: the refinement's prompt (1 + 1 + 6) and its 4 tokens; the summary call's 4 + 6
  assert trace.budget == pdr.Budget(sequential_tokens=5 + 6 + 4, total_tokens=8 + 6 + 4,
                                    max_context=1 + 1 + 6 + 4, calls=3)


@pytest.mark.parametrize("mode", pdr.DISTILL_MODES)
def test_workspaces_stay_bounded_and_runs_are_deterministic(mode):
  summary = (lambda q, ds: tuple(t for d in ds for t in d)) if mode == "global_summary" else None
  for widths, bound in itertools.product([(4, 3, 1), (1, 1, 1), (5,), (2, 6, 2)], (6, 9, 20)):
    kw = dict(draft_tokens=6, workspace_tokens=bound, mode=mode, k=3, summary_prompt=summary)
    a = pdr.pdr(toy_generator, (5, 6), widths, key=jax.random.key(1), **kw)
    assert a == pdr.pdr(toy_generator, (5, 6), widths, key=jax.random.key(1), **kw)
    for r in a.rounds:
      assert len(r.workspaces) == len(r.drafts)
      assert all(len(w) <= bound for w in r.workspaces)
      assert all(1 <= len(d.tokens) <= 6 for d in r.drafts)
    assert a.budget.max_context <= 2 + 1 + bound + 6 or mode == "global_summary"
    b = pdr.pdr(toy_generator, (5, 6), widths, key=jax.random.key(2), **kw)
    assert a.budget.calls == b.budget.calls


def test_one_round_is_best_of_n():
  for n, seed in itertools.product((1, 3, 8), range(4)):
    key = jax.random.key(seed)
    a = pdr.pdr(toy_generator, (4, 4), (n,), draft_tokens=7, workspace_tokens=7, key=key)
    b = pdr.best_of_n(toy_generator, (4, 4), n, draft_tokens=7, key=key)
    assert a == b
    assert a.answer == max(a.rounds[0].drafts, key=lambda d: d.score).tokens


def test_selection_follows_the_models_scores_never_a_verifier():
  """A verifier-only signal (which drafts are correct) is planted against the model's scores:
  the workspace carries the drafts the model prefers, whichever are correct."""
  correct = {10: True, 11: False, 12: False, 13: True}  # by token id; the model never sees it
  scores = [0.1, 0.9, 0.8, 0.2]  # the model prefers the wrong drafts
  gen = Scripted([[(2, s) for s in scores], [(1, 0.0)]])
  trace = pdr.pdr(gen, (1,), (4, 1), draft_tokens=2, workspace_tokens=5,
                  key=jax.random.key(0), mode="shared_top_k", k=2)
  carried = {t for t in trace.rounds[1].workspaces[0] if t}
  assert carried == {11, 12} and not any(correct[t] for t in carried)
  # per-sample top-k over bootstrap resamples: how often each draft is carried follows the
  # model's scores, not the verifier's labels (10 and 13 correct). With k = 2 the two best
  # (11, 12) are carried whenever resampled; 13 only when one of them is missing; 10 least.
  counts = dict.fromkeys((10, 11, 12, 13), 0)
  for seed in range(50):
    for w in pdr.distill("per_sample_top_k", trace.rounds[0].drafts, 4, 5,
                         jax.random.key(seed), k=2):
      for t in set(w) - {0}:
        counts[t] += 1
  assert min(counts[11], counts[12]) > counts[13] > counts[10]


def test_sequential_refinement_and_join():
  gen = Scripted([[(3, 0.0)], [(2, 0.0)], [(4, 0.0)]])
  trace = pdr.sequential_refinement(gen, (1,), 3, draft_tokens=4, workspace_tokens=4,
                                    key=jax.random.key(0))
  assert gen.prompts[1:] == [[(1, 0, 10, 10, 10)], [(1, 0, 20, 20)]]
  assert trace.budget.sequential_tokens == trace.budget.total_tokens == 9
  assert pdr.join_drafts([(1, 2), (3, 4, 5), (6,)], 6, (0,)) == (1, 2, 0, 3, 4, 5)
  assert pdr.join_drafts([(1, 2), (3, 4, 5)], 1, (0,)) == ()


def test_bad_input():
  kw = dict(draft_tokens=4, workspace_tokens=8, key=jax.random.key(0))
  with pytest.raises(ValueError, match="empty width schedule"):
    pdr.pdr(toy_generator, (1,), (), **kw)
  with pytest.raises(ValueError, match="below one draft"):
    pdr.pdr(toy_generator, (1,), (2, 1), draft_tokens=8, workspace_tokens=4,
            key=jax.random.key(0))
  with pytest.raises(ValueError, match="mode"):
    pdr.pdr(toy_generator, (1,), (2, 1), mode="vote", **kw)
  with pytest.raises(ValueError, match="summary_prompt"):
    pdr.pdr(toy_generator, (1,), (2, 1), mode="global_summary", **kw)
  with pytest.raises(ValueError, match="widths"):
    pdr.pdr(toy_generator, (1,), (2, 0), **kw)
  with pytest.raises(ValueError, match="drafts for"):
    pdr.pdr(lambda p, n, k: [], (1,), (2,), **kw)


def prompt_only_generator(prompts, max_new_tokens, key):
  """Drafts that depend on the prompt and the key only (not on the batch position)."""
  import zlib  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  base = np.asarray(jax.random.key_data(key)).ravel().tolist()
  out = []
  for p in prompts:
    rng = np.random.default_rng(base + [zlib.crc32(np.asarray(p, np.int64).tobytes())])
    n = int(rng.integers(1, max_new_tokens + 1))
    out.append(pdr.Draft(tuple(int(t) for t in rng.integers(1, 51, n)), float(rng.random())))
  return out


@pytest.mark.parametrize("mode", ["shared_top_k", "global_summary"])
def test_a_batch_is_the_questions_one_by_one_in_one_call_per_round(mode):
  """With a generator that reads only the prompt, each question of a batch gets the trace
  it gets alone (the deterministic modes), and each round is one call for all questions."""
  calls = []

  def counting(prompts, n, key):
    calls.append(len(prompts))
    return prompt_only_generator(prompts, n, key)

  questions = [(1, 2), (3,), (4, 5, 6)]
  summary = (lambda q, ds: tuple(q) + tuple(t for d in ds for t in d))
  kw = dict(draft_tokens=5, workspace_tokens=11, key=jax.random.key(3), mode=mode, k=2,
            summary_prompt=summary)
  batch = pdr.pdr_batch(counting, questions, (3, 2, 1), **kw)
  per_round = 2 if mode == "global_summary" else 1
  assert calls[:2 * per_round + 1] == ([9, 3] if per_round == 2 else [9]) + (
      [6, 3] if per_round == 2 else [6]) + [3]
  for q, t in zip(questions, batch):
    assert t == pdr.pdr(prompt_only_generator, q, (3, 2, 1), **kw)


def test_shuffled_control_refines_on_another_questions_drafts():
  gen = Scripted([[(2, 0.5), (3, 0.1)], [(1, 0.0), (1, 0.0)]])  # q0's drafts 10, q1's 11
  traces = pdr.pdr_batch(gen, [(1,), (2,)], (1, 1), draft_tokens=3, workspace_tokens=3,
                         key=jax.random.key(0), control="shuffled")
  # question 0 now refines on question 1's draft, and question 1 on question 0's
  assert gen.prompts[1] == [(1, 0, 11, 11, 11), (2, 0, 10, 10)]
  assert traces[0].rounds[1].workspaces == ((11, 11, 11),)
  # each question's budget counts its own drafts only: 2 + 1 and 3 + 1
  assert [t.budget.total_tokens for t in traces] == [3, 4]
  with pytest.raises(ValueError, match="two questions"):
    pdr.pdr_batch(gen, [(1,)], (1, 1), draft_tokens=3, workspace_tokens=3,
                  key=jax.random.key(0), control="shuffled")


def test_long_pass_keeps_every_draft_in_its_context():
  gen = Scripted([[(3, 0.0)], [(2, 0.0)], [(4, 0.0)]])
  trace = pdr.long_pass(gen, (1, 2), 3, draft_tokens=4, key=jax.random.key(0))
  assert gen.prompts[1:] == [[(1, 2, 0, 10, 10, 10)], [(1, 2, 0, 10, 10, 10, 0, 20, 20)]]
  assert trace.answer == (30,) * 4
  # sequential = total = 3 + 2 + 4; context: the last prompt (2 + 1 + 3 + 1 + 2) + 4
  assert trace.budget == pdr.Budget(9, 9, 9 + 4, 3)
  # SR at the same budget: the same first round (same key), a bounded context
  sr = pdr.sequential_refinement(prompt_only_generator, (1, 2), 3, draft_tokens=4,
                                 workspace_tokens=4, key=jax.random.key(5))
  lp = pdr.long_pass(prompt_only_generator, (1, 2), 3, draft_tokens=4, key=jax.random.key(5))
  assert sr.rounds[0].drafts == lp.rounds[0].drafts
  assert sr.budget.max_context <= 2 + 1 + 4 + 4  # question, separator, workspace, draft
  n = [len(r.drafts[0].tokens) for r in lp.rounds]
  assert lp.budget.max_context == max(2 + n[0], 2 + 1 + n[0] + n[1],
                                      2 + 1 + n[0] + 1 + n[1] + n[2])


def test_pareto_front():
  # (cost, accuracy): (1, .2) (2, .5) (2, .4) dominated, (3, .5) dominated, (4, .9)
  front = pdr.pareto_front([1, 2, 2, 3, 4], [0.2, 0.5, 0.4, 0.5, 0.9])
  assert front.tolist() == [True, True, False, False, True]
  assert pdr.pareto_front([1.0], [0.0]).tolist() == [True]
  assert pdr.pareto_front([1, 1], [0.3, 0.3]).tolist() == [True, True]  # ties both stay
  with pytest.raises(ValueError, match="equal-length"):
    pdr.pareto_front([1, 2], [0.1])
