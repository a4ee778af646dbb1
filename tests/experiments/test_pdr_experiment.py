"""PDR experiment: the checks of the tiny run end to end (the notebook's run: training
cached by orbax, every method, the frontier table), the sorting task and its prompts, the
budgets of each method, and the claims on hand-made metrics."""

import os

import numpy as np
import pytest

from reprojax.algorithms import pdr
from reprojax.data import pdr as pdr_data
from reprojax.experiments import registry
from reprojax.experiments import results as results_lib
from reprojax.experiments.pdr import claims
from reprojax.experiments.pdr import experiment
from reprojax.experiments.pdr import programs
from reprojax.models import transformer


RERUN = True  # tests/test_notebooks.py reruns the notebook's experiment in its folder


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run (``tests/test_notebooks.py`` runs it and calls this): the
  decoder trained once and cached by orbax, GRPO consistent with PDR (the tiny config's
  ``rl.steps``), every method within its budget, the frontier table; a rerun in the same
  folder (``again``) restores both policies and ends with the same metrics."""
  names = programs.methods(config)
  for n in names:
    assert 0.0 <= m[f"{n}_acc"] <= 1.0 and m[f"{n}_seq_tokens"] > 0
  task = programs.sorting_task(config)
  r, w = int(config.rounds), int(config.width)
  # budgets: long and SR spend r drafts in sequence; PDR r drafts in sequence and
  # w (r - 1) + 1 in all; best-of-N one in sequence; no draft passes its budget
  for n in (f"long_{r}", f"sr_{r}", f"pdr_shared_top_k_{r}"):
    assert m[f"{n}_seq_tokens"] <= r * task.draft_tokens
  assert m[f"pdr_shared_top_k_{r}_total_tokens"] <= (w * (r - 1) + 1) * task.draft_tokens
  assert m[f"bon_{r}_seq_tokens"] <= task.draft_tokens
  # SR's context stays bounded by one workspace (the long pass's growth is checked on a
  # scripted model in tests/algorithms/test_pdr.py)
  assert m[f"sr_{r}_max_context"] <= task.prompt_tokens(1) + task.draft_tokens
  assert m["workspace_max_tokens"] <= m["workspace_bound"]
  assert m["replicates"] == len(config.eval_seeds)
  table = (workdir / "frontier.md").read_text()
  assert table.count("\n| greedy |") == 1 and table.count("\n| rl_greedy |") == 1
  assert table.count("| method |") == 2 and table.count("\n| ") == 2 * len(names) + 1
  assert os.path.isfile(workdir / "frontier.png")
  assert os.path.isdir(workdir / "model_seed0" / "checkpoints")
  # the RL path ran: its policy evaluated on the same questions, its checkpoint written
  assert int(config.rl.steps) > 0 and os.path.isdir(workdir / "rl_seed0" / "checkpoints")
  assert all(f"rl_{n}_acc" in m for n in names) and "gap_rl_long_1_vs_long_1" in m
  ids = [c.id for c in claims.claims(config, m)]
  assert ids == ["sr_beats_long", "pdr_beats_long", "pdr_beats_sr", "pdr_vs_best_of_n",
                 "shuffled_control_loses_gain", "rl_moves_frontier", "workspace_bounded"]
  # the rerun restored the trained models from their orbax checkpoints: same numbers
  np.testing.assert_equal({k: v for k, v in again.items() if not k.startswith("time_")},
                          {k: v for k, v in m.items() if not k.startswith("time_")})


def test_stop_and_resume_is_bit_identical(resumes_bit_identically):
  """The decoder's training stopped after a checkpoint and resumed ends bit-identical to an
  uninterrupted run (the check is ``conftest.resumes_bit_identically``)."""
  config = registry.load_config("pdr", "tiny")
  with config.unlocked():
    config.train_steps, config.checkpoint_every = 12, 4
  resumes_bit_identically(
      lambda workdir, mesh, stop_after: programs.train_model(
          config, mesh, str(workdir), 0, stop_after=stop_after),
      lambda workdir: workdir / "checkpoints")


def test_rl_stop_and_resume_is_bit_identical_and_learns_from_rewards(tmp_path):
  """GRPO consistent with PDR: stopped after a checkpoint and resumed it ends bit-identical
  to an uninterrupted run, and its steps change the policy."""
  import jax  # pylint: disable=g-import-not-at-top
  from reprojax.experiments.pdr import rl  # pylint: disable=g-import-not-at-top
  from reprojax.models import llama  # pylint: disable=g-import-not-at-top
  config = registry.load_config("pdr", "tiny")
  with config.unlocked():
    config.rl.steps, config.rl.checkpoint_every = 4, 2
  sft = jax.device_get(llama.init(programs.model_config(config), jax.random.key(0)))
  kw = dict(cfg=programs.model_config(config), task=programs.sorting_task(config),
            pad=programs.prompt_pad(config))
  straight, summary = rl.train_rl(config, sft, str(tmp_path / "a"), 0, **kw)
  rl.train_rl(config, sft, str(tmp_path / "b"), 0, stop_after=2, **kw)
  assert sorted(p.name for p in (tmp_path / "b" / "checkpoints").iterdir()) == ["2"]
  resumed, _ = rl.train_rl(config, sft, str(tmp_path / "b"), 0, **kw)
  jax.tree.map(np.testing.assert_array_equal, straight, resumed)
  assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, straight, sft)))
  assert set(summary) == {"rl_reward_drafts", "rl_reward_refined"}


def test_token_logprobs_sum_to_the_samplers_score():
  """The policy's per-token log-probabilities of a sampled completion add up to the
  sampler's own log-probability of it (two independent code paths: the cached decoder and
  one full forward pass)."""
  import jax  # pylint: disable=g-import-not-at-top
  from reprojax.experiments.pdr import rl  # pylint: disable=g-import-not-at-top
  from reprojax.models import llama  # pylint: disable=g-import-not-at-top
  cfg = transformer.decoder_config(12, d_model=16, n_heads=2, max_len=24)
  params = jax.device_get(llama.init(cfg, jax.random.key(1)))
  prompts = [(5, 6, 7), (8, 9)]
  ids, mask = llama.pad_batch(prompts, 0, "left", 4)
  gen = llama.generate(cfg, params, ids, mask, max_new_tokens=6, eos_ids=(4,), pad_id=0,
                       temperature=1.0, key=jax.random.key(2))
  tokens, done = rl._completions(gen)  # pylint: disable=protected-access
  seq, seq_mask, acts = rl._sequences(prompts, tokens, done, 4)  # pylint: disable=protected-access
  lp = np.asarray(transformer.token_logprobs(cfg, params, seq, seq_mask))
  at = np.minimum(4 + np.asarray(gen.lengths_B), seq.shape[1] - 1)  # the eos, where one came
  eos_lp = np.where(np.asarray(gen.stopped_B), lp[np.arange(2), at], 0.0)
  np.testing.assert_allclose((lp * acts).sum(1) - eos_lp, np.asarray(gen.logprob_B), rtol=1e-4,
                             atol=1e-4)


def test_sorting_task_prompts_and_training_pairs():
  task = pdr_data.SortingTask(length=6, num_values=9, max_drafts=3)
  qs = pdr_data.questions(task, 50, 0)
  assert np.all(np.diff(qs.answers_QxN, axis=1) >= 0)
  assert np.all(np.sort(qs.values_QxN, 1) == qs.answers_QxN)
  prompts, targets = pdr_data.training_pairs(task, 400, 1)
  for p, t in zip(prompts, targets):
    assert t[-1] == pdr_data.EOS and p[task.length] == pdr_data.WS and p[-1] == pdr_data.ANS
    assert len(p) <= task.prompt_tokens(task.max_drafts)
    x = pdr_data.decode(p[:task.length])
    assert pdr_data.is_correct(t[:-1], sorted(x))  # the target is the sorted question
    drafts = p[task.length + 1:-1]
    assert drafts.count(pdr_data.SEP) <= task.max_drafts - 1
  # a workspace's drafts are of mixed quality: some right, most with sorting errors
  ws = [p[task.length + 1:-1] for p in prompts]
  n_drafts = sum(w.count(pdr_data.SEP) + 1 for w in ws if w)
  assert 0 < sum(1 for w in ws if w) < len(ws) and n_drafts > 300
  rng = np.random.default_rng(0)
  for _ in range(100):
    x = rng.integers(0, 9, 6)
    assert len(pdr_data.corrupt(rng, np.sort(x), x)) == 6
  tok = transformer.Tokenizer(tuple(range(9)), ("<pad>", "<sep>", "<ws>", "<ans>", "<eos>"))
  assert tok.encode((0, 8)) == pdr_data.encode((0, 8)) and tok.vocab_size == task.vocab_size
  with pytest.raises(ValueError, match="length"):
    pdr_data.SortingTask(length=1)


def test_lm_loss_scores_only_the_targets():
  import jax  # pylint: disable=g-import-not-at-top
  from reprojax.models import llama  # pylint: disable=g-import-not-at-top
  cfg = transformer.decoder_config(12, d_model=16, n_heads=2, max_len=16)
  params = llama.init(cfg, jax.random.key(0))
  ids, mask, target = transformer.pack([(5, 6, 7), (8,)], [(9, 1), (10, 11, 1)], 8)
  loss = transformer.lm_loss(cfg, params, ids, mask, target)
  logits = np.asarray(llama.Llama(cfg).apply(params, ids, mask))
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  want0 = -(logp[0, 2, 9] + logp[0, 3, 1]) / 2  # row 0's targets at positions 3, 4
  want1 = -(logp[1, 0, 10] + logp[1, 1, 11] + logp[1, 2, 1]) / 3
  np.testing.assert_allclose(np.asarray(loss), [want0, want1], rtol=1e-5)
  with pytest.raises(ValueError, match="more than length"):
    transformer.pack([(1, 2, 3)], [(4,)], 3)


def _metrics(sr=0.30, long=0.25, head=0.40, shuffled=0.05, bon=0.45, se=0.01, ws=23):
  m = {"replicates": 3.0, "workspace_max_tokens": float(ws), "workspace_bound": 23.0,
       "sr_fix_rate": 0.2, "sr_keep_rate": 0.8}
  accs = {"sr_4": sr, "long_4": long, "pdr_shared_top_k_4": head, "shuffled_4": shuffled,
          "bon_4": bon, "sr_1": 0.2}
  for n, a in accs.items():
    m.update({f"{n}_acc": a, f"{n}_acc_se": se, f"{n}_seq_tokens": 40.0,
              f"{n}_total_tokens": 130.0})
  for a, b in (("sr_4", "long_4"), ("pdr_shared_top_k_4", "long_4"),
               ("pdr_shared_top_k_4", "sr_4"), ("pdr_shared_top_k_4", "shuffled_4"),
               ("pdr_shared_top_k_4", "bon_4")):
    m[f"gap_{a}_vs_{b}"] = accs[a] - accs[b]
    m[f"gap_{a}_vs_{b}_se"] = se
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("pdr", "quick")
  c = {x.id: x for x in claims.claims(config, _metrics())}
  assert c["sr_beats_long"].holds and c["pdr_beats_long"].holds and c["pdr_beats_sr"].holds
  assert c["sr_beats_long"].kind == "paper" and c["shuffled_control_loses_gain"].kind == "check"
  assert c["shuffled_control_loses_gain"].holds and c["workspace_bounded"].holds
  assert "20% of wrong first drafts" in c["sr_beats_long"].ours
  # evidence: the trained decoders (one: its 3 evaluation seeds are not independent models),
  # the paired gap's distance from zero in s.e. (0.05 / 0.01)
  ev = c["sr_beats_long"].evidence
  assert ev.seeds == len(config.model_seeds) == 1 and ev.margin_se == pytest.approx(5.0)
  assert results_lib.grade(ev) == "weak"
  assert all(x.evidence is not None for x in c.values() if x.kind == "paper")
  c = {x.id: x for x in claims.claims(config, _metrics(sr=0.26, se=0.02, ws=24))}
  assert not c["sr_beats_long"].holds  # +0.01 within 2 s.e.
  # a failing verdict's margin is measured from the rule's bar: (0.04 - 0.01) / 0.02
  assert c["sr_beats_long"].evidence.margin_se == pytest.approx(1.5)
  assert not c["workspace_bounded"].holds
  c = {x.id: x for x in claims.claims(config, _metrics(head=0.2, bon=0.2))}
  assert not c["pdr_beats_long"].holds and not c["pdr_beats_sr"].holds
  assert c["pdr_beats_sr"].evidence.margin_se == pytest.approx(12.0)  # 0.1 below SR, 2 s.e.


def test_bad_config():
  config = registry.load_config("pdr", "tiny")
  with config.unlocked():
    config.headline_mode = "vote"
  with pytest.raises(ValueError, match="headline_mode"):
    experiment.run(config, "/tmp/unused")
  config = registry.load_config("pdr", "tiny")
  with config.unlocked():
    config.rounds = 1
  with pytest.raises(ValueError, match="rounds"):
    experiment.run(config, "/tmp/unused")


def test_pareto_front_of_the_methods_marks_the_frontier():
  config = registry.load_config("pdr", "tiny")
  names = programs.methods(config)
  m = {}
  for i, n in enumerate(names):
    m.update({f"{n}_seq_tokens": float(i), f"{n}_total_tokens": float(i),
              f"{n}_max_context": 1.0, f"{n}_acc": float(i % 3) / 3, f"{n}_acc_se": 0.0})
  table = experiment.frontier_markdown(config, m)
  front = pdr.pareto_front([m[f"{n}_seq_tokens"] for n in names],
                           [m[f"{n}_acc"] for n in names])
  assert table.count("| yes | yes |") == int(front.sum()) == 3  # accuracies 0, 1/3, 2/3
