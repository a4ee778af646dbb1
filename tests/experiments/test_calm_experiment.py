"""CALM experiment: the checks of the tiny run end to end (every model scored, every
training checkpointed and restored by a rerun; the notebook's run), the generator, the
claims on hand-made metrics, bad config."""

import json
import os

import jax
import numpy as np
import pytest

from reprojax.algorithms import calm
from reprojax.data import calm as calm_data
from reprojax.experiments import registry
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.calm import claims
from reprojax.experiments.calm import experiment
from reprojax.experiments.calm import plots
from reprojax.experiments.calm import programs
from reprojax.models import llama
from reprojax.models import transformer

RERUN = True  # tests/test_notebooks.py reruns the notebook's experiment in its folder
_TIMINGS = ("time_base_s", "time_correct_s", "time_sft_s", "time_rl_s", "time_eval_s")


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run: every metric finite and in range, the figure, one checkpointed
  training for the base and each seed's four SFT sets (an SFT set may be empty when the
  untrained base repairs nothing: then no training), and a rerun in the same folder
  (``again``) that restores every training (no step logged twice) and ends with the same
  metrics, bit for bit, but the timings."""
  for name, v in m.items():
    assert np.isfinite(v), name
  for name in programs.METHODS:
    for lv in config.eval_levels:
      assert 0.0 <= m[f"{name}_acc_L{lv}"] <= 1.0
    shares = sum(v for k, v in m.items() if k.startswith(f"{name}_share_")
                 and not k.endswith("_se"))
    assert shares == pytest.approx(1.0)
  assert m["roundtrip_ok"] == 1.0
  assert os.path.isfile(workdir / "levels.png")
  runs = sorted(str(p.parent.relative_to(workdir)) for p in workdir.glob("**/checkpoints"))
  assert "base" in runs and all(r == "base" or r.split("/")[1] in programs.SFT_SETS
                                for r in runs), runs
  for run in runs:
    with open(workdir / run / "metrics.jsonl") as f:
      steps = [json.loads(line)["step"] for line in f]
    assert steps and len(steps) == len(set(steps)), (run, steps)  # the rerun trained nothing
  assert [c.id for c in claims.claims(config, m)] == [
      "calm_beats_direct_sft_hard", "direct_sft_easy_up_hard_down", "rl_adds",
      "calm_rl_beats_direct_rl", "hints_few_tokens", "random_position_loses",
      "hints_never_copy_gold", "gold_roundtrip"]
  for start in ("calm", "direct"):  # the RL runs' per-step log: step 1 samples the reference
    assert m[f"{start}_rl_step1_kl"] == pytest.approx(0.0, abs=1e-7)
    assert f"{start}_rl_step{int(config.rl_steps) + 1}_reward" not in m
    for x in programs.RL_LOG:
      assert 0.0 <= m[f"{start}_rl_step{int(config.rl_steps)}_{x}"] <= 1.0
  assert os.path.isfile(workdir / "rl_steps.png") and os.path.isfile(workdir / "rl_steps.md")
  np.testing.assert_equal({k: v for k, v in again.items() if k not in _TIMINGS},
                          {k: v for k, v in m.items() if k not in _TIMINGS})


def test_the_generator_pads_and_stops_at_eos():
  """Prefixes of any length and count give one continuation each, the same as generating
  each alone (padding is invisible), eos and what follows dropped."""
  config = registry.load_config("calm", "tiny")
  cfg = programs.model_config(config)
  params = llama.init(cfg, jax.random.key(0))
  gen = programs.generator(config, params, 0.0)
  probs = calm_data.sample((1, 2), 3, 0)
  prefixes = [probs[0].prompt, probs[1].prompt + ("o", "max"), probs[2].prompt]
  outs = gen(prefixes, jax.random.key(1))
  assert len(outs) == 3
  for p, o in zip(prefixes, outs):
    assert gen([p], jax.random.key(1))[0] == o
    assert all(s in calm_data.SYMBOLS for s in o)


def _metrics(gap=0.1, se=0.02, frac=0.02, copies=0.0):
  m = {"num_seeds": 3.0, "sft_tokens": 3000.0, "calm_modified_fraction": frac,
       "calm_modified_fraction_hinted": 2 * frac, "calm_hints_per_fixed": 1.5,
       "calm_kept": 0.5, "random_kept": 0.4, "draft_acc": 0.3, "calm_hint_copies": copies,
       "roundtrip_ok": 1.0, "calm_kept_se": 0.05, "calm_modified_fraction_se": 0.002}
  for name in programs.METHODS:
    m[f"{name}_acc"] = 0.5
    for lv in (1, 2, 3):
      m[f"{name}_acc_L{lv}"] = 0.5
  for a, b, suffix in (("calm", "direct", "_L3"), ("calm", "direct", ""),
                       ("calm", "random", "_L3"), ("calm_rl", "calm", ""),
                       ("calm_rl", "calm", "_L3"), ("calm_rl", "direct_rl", "_L3"),
                       ("calm", "styled", "_L3")):
    m[f"gap_{a}_vs_{b}{suffix}"], m[f"gap_{a}_vs_{b}{suffix}_se"] = gap, se
  m["gap_direct_vs_base_L1"], m["gap_direct_vs_base_L1_se"] = gap, se
  m["gap_direct_vs_base_L3"], m["gap_direct_vs_base_L3_se"] = -gap, se
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("calm", "quick")
  c = {x.id: x for x in claims.claims(config, _metrics())}
  assert all(x.holds for x in c.values()), [x.id for x in c.values() if not x.holds]
  assert all(x.evidence is not None for x in c.values() if x.kind == "paper")
  # the gap against zero in s.e. (0.1 / 0.02); the planted style gap is said
  assert c["rl_adds"].evidence.margin_se == pytest.approx(5.0)
  assert c["rl_adds"].evidence.seeds == 3
  assert c["calm_beats_direct_sft_hard"].evidence.by_construction
  # a conjunction that holds: its part nearest to failing (the 2.6% bound, 3 s.e. away)
  assert c["hints_few_tokens"].evidence.margin_se == pytest.approx(3.0)
  c = {x.id: x for x in claims.claims(config, _metrics(gap=-0.1, frac=0.05, copies=1))}
  assert [x.id for x in c.values() if x.holds] == ["gold_roundtrip"]
  # a failing verdict's margin is measured from the rule's bar: -0.1 is 7 s.e. below 2 s.e.
  assert c["rl_adds"].evidence.margin_se == pytest.approx(7.0)
  # a gap within 2 s.e. is no win; a fraction at the paper's bound is not under it
  c = {x.id: x for x in claims.claims(config, _metrics(gap=0.03, se=0.02, frac=0.026))}
  assert not c["calm_beats_direct_sft_hard"].holds and not c["hints_few_tokens"].holds
  assert c["direct_sft_easy_up_hard_down"].holds  # any drop on the hard level counts
  # a gap above zero but inside 2 s.e. fails by its distance from the bar (0.5 s.e. short)
  assert c["rl_adds"].evidence.margin_se == pytest.approx(0.5)
  with config.unlocked():
    config.rl_steps = 0
  c = {x.id: x for x in claims.claims(config, _metrics())}
  assert list(c) == list(claims.CLAIMS)  # every declared claim, in declaration order
  for i in ("rl_adds", "calm_rl_beats_direct_rl"):  # no RL: reported as not run, not held
    assert not c[i].holds and c[i].evidence.not_run == "quick"


def test_bad_config():
  for key, value, match in (("base_levels", (0, 2), "base_levels"),
                            ("eval_levels", (1, 9), "eval_levels"),
                            ("base_weights", (1.0,), "base_weights"),
                            ("extra_styles", ("teacher",), "extra_styles")):
    config = registry.load_config("calm", "tiny")
    with config.unlocked():
      setattr(config, key, value)
    with pytest.raises(ValueError, match=match):
      experiment.run(config, "/tmp/unused")


def test_a_planted_bad_hint_is_caught():
  """The claim's check is live: a kept trajectory whose hint wrote a gold line counts."""
  p = calm_data.sample((1,), 1, 3)[0]
  line = p.gold.lines()[-1]
  assert calm.copies_gold((calm.HINT,) + line.content(), p.gold.lines())


def _gold_rows(config, n=24):
  probs = calm_data.sample(config.eval_levels, n, 5)
  _, row = programs.lengths(config)
  return programs.rows([p.prompt for p in probs], [calm.render(p.gold) for p in probs], row)


def test_stop_and_resume_is_bit_identical(tmp_path):
  """An SFT run stopped after 3 of 6 steps and rerun in its folder ends bit-identical to an
  uninterrupted one (orbax restores parameters, Adam's moments and the step; batches and
  keys derive from the step), on 8 devices; its folder refuses a run on other data."""
  config = registry.load_config("calm", "tiny")
  mesh = sharding.config_mesh(config)
  cfg = programs.model_config(config)
  base = jax.device_get(llama.init(cfg, jax.random.key(0)))
  rows = _gold_rows(config)
  kw = dict(steps=6, lr=1e-3, seed=1, batch_size=8)
  whole = programs.fit_lm(config, mesh, str(tmp_path / "whole"), base, rows, **kw)
  programs.fit_lm(config, mesh, str(tmp_path / "cut"), base, rows, stop_after=3, **kw)
  resumed = programs.fit_lm(config, mesh, str(tmp_path / "cut"), base, rows, **kw)
  jax.tree.map(np.testing.assert_array_equal, resumed, whole)
  with pytest.raises(ValueError, match="other settings or data"):
    programs.fit_lm(config, mesh, str(tmp_path / "cut"), base, _gold_rows(config, 20), **kw)


def test_rl_runs_a_step_on_the_solver_reward():
  """One GRPO step from random parameters with a scorer that rewards every other sample
  (so a group's rewards differ): the parameters move, the reward is the
  scorer's mean; with every reward 0 (no advantage, the KL zero at the reference) they
  stay put but for rounding (Adam's first step is about its learning rate where a gradient
  is real, 3e-4 here)."""
  config = registry.load_config("calm", "tiny")
  cfg = programs.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(0)))

  class Half:  # right, wrong, right, ...: a group's samples are scored one after another
    calls = 0

    def __call__(self, trajectory, problem):
      del trajectory, problem
      self.calls += 1
      ok = self.calls % 2 == 1
      return calm.Verdict(ok, "correct" if ok else "wrong optimum", 0.0)

  def moved(new):
    return max(float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(new),
                                                            jax.tree.leaves(params)))

  new, reward, _ = programs.rl(config, params, 0, Half())
  assert 0.0 < reward < 1.0 and moved(new) > 1e-4
  new, reward, log = programs.rl(config, params, 0, programs.Scorer())
  assert reward == 0.0 and moved(new) < 1e-5
  assert log["informative"] == [0.0]  # every group's rewards equal: no advantage anywhere


def test_rl_logs_every_step():
  """The per-step log of three GRPO steps (a scorer that rewards every other sample, so
  every group has signal and the policy moves): one entry per step and quantity; step 1's
  KL is 0 (the policy that sampled it is the reference), later steps' positive (the
  policy moved); the rewards are the scorer's shares, the last quarter's mean returned; the
  clipped fraction is 0 (one update per batch: the ratio is 1); the step metrics and their
  least-squares slopes come from the log."""
  config = registry.load_config("calm", "tiny")
  with config.unlocked():
    config.rl_steps = 3
    config.rl_learning_rate = 1e-2  # a step that moves the policy well above float32's KL noise
  cfg = programs.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(0)))

  class Half:
    calls = 0

    def __call__(self, trajectory, problem):
      del trajectory, problem
      self.calls += 1
      ok = self.calls % 2 == 1
      return calm.Verdict(ok, "correct" if ok else "parse error: line 1", 0.0)

  scorer = Half()
  _, reward, log = programs.rl(config, params, 0, scorer)
  assert set(log) == set(programs.RL_LOG) and all(len(v) == 3 for v in log.values())
  assert log["kl"][0] == pytest.approx(0.0, abs=1e-7)
  assert all(k > 1e-9 for k in log["kl"][1:]), log["kl"]
  assert log["clipped"] == [0.0, 0.0, 0.0]
  n = int(config.rl_questions) * int(config.group)
  assert sum(log["reward"]) * n == pytest.approx((scorer.calls + 1) // 2)
  for r, u in zip(log["reward"], log["unparsed"]):  # scored wrong samples are parse errors,
    assert r + u == pytest.approx(1.0)              # the unscored ones count as unparsed
  assert reward == log["reward"][-1]
  m = programs.rl_step_metrics("calm", {**log, "kl": [0.0, 0.5, 1.0]})
  assert m["calm_rl_step2_kl"] == 0.5 and m["calm_rl_kl_slope"] == pytest.approx(0.5)
  assert m["calm_rl_step3_reward"] == log["reward"][2] and "calm_rl_step4_kl" not in m


def test_grpo_step_aux_leaves_the_update_unchanged():
  """``train.grpo_step(..., with_aux=True)``, which calm's RL uses, gives the parameters,
  optimizer state and loss of the step without it, bit for bit, on the 8-device mesh (the
  rows split over it, as calm's RL runs); its aux's KL is 0 where the policy is the
  reference and matches the k3 estimator recomputed by hand where it is not."""
  config = registry.load_config("calm", "tiny")
  cfg = programs.model_config(config)
  st = experiment.main_step(config, jax.random.key(0))
  params, opt, ref, ids, mask, acts, rewards = st.args
  mesh = sharding.config_mesh(config)
  _, plain = train.grpo_step(cfg, 3e-4, 0.02, 0.2, mesh)
  _, with_aux = train.grpo_step(cfg, 3e-4, 0.02, 0.2, mesh, with_aux=True)
  a = plain(params, opt, ref, ids, mask, acts, rewards)
  b = with_aux(params, opt, ref, ids, mask, acts, rewards)
  assert len(a) == 3 and len(b) == 4
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(a), jax.device_get(b[:3]))
  assert float(b[3].kl) == pytest.approx(0.0, abs=1e-7) and float(b[3].clipped_fraction) == 0.0
  other = jax.device_get(llama.init(cfg, jax.random.key(1)))
  aux = with_aux(params, opt, other, ids, mask, acts, rewards)[3]
  logprobs = jax.jit(lambda p: transformer.token_logprobs(cfg, p, ids, mask))
  lp, lr = (np.asarray(logprobs(p), np.float64) for p in (params, other))
  k3 = np.exp(lr - lp) - (lr - lp) - 1.0
  w = acts / acts.sum(1, keepdims=True) / acts.shape[0]  # per sample, then over samples
  assert float(aux.kl) == pytest.approx(float(np.sum(w * k3)), rel=1e-4)


def test_readme_rl_table_is_the_committed_runs():
  """The README's per-step RL table is :func:`plots.rl_table` of the committed quick
  run's metrics (regenerate: ``plots.update_readme_rl_table``)."""
  root = os.path.join(os.path.dirname(__file__), "..", "..")
  with open(os.path.join(root, "results", "calm", "results.json")) as f:
    res = json.load(f)
  with open(os.path.join(root, "experiments", "calm", "README.md")) as f:
    text = f.read()
  table = plots.rl_table(res["metrics"], int(res["config"]["rl_steps"]))
  assert table in text
  assert text.count(plots.RL_TABLE_BEGIN) == 1


def test_sft_sets_on_a_scripted_model():
  """With a model that miswrites the last line of every attempt and follows hints, CALM
  repairs every attempt with one hint, the control (a random cut) only some; the four sets
  hold the same number of target tokens (to one row), direct SFT's rows are the teacher's
  style and the styled ablation's the base's, and the statistics say so."""
  config = registry.load_config("calm", "tiny")
  probs = calm_data.sample((1, 2), 12, 4)
  by_prompt = {p.prompt: p for p in probs}

  def gen(prefixes, key):
    del key
    out = []
    for pre in prefixes:
      prompt = next(pr for pr in by_prompt if tuple(pre[:len(pr)]) == pr)
      lines = by_prompt[prompt].gold.lines()
      if pre[-2] == calm.HINT:
        k = [g.label for g in lines].index(pre[-1])
        out.append(tuple(t for g in lines[k:] for t in calm.render_line(g)))
      else:
        last = lines[-1]
        bad = calm.Line(last.kind, last.numbers[:-1] + (last.numbers[-1] + 7,), last.label)
        out.append(tuple(t for g in lines[:-1] + (bad,) for t in calm.render_line(g)))
    return out

  sets, stats = programs.sft_sets(config, gen, probs, 0, programs.Scorer())
  assert stats["draft_acc"] < 1.0 and stats["calm_repaired"] == 1.0 and stats["calm_kept"] == 1.0
  assert stats["random_kept"] <= 1.0 and stats["calm_hints_per_fixed"] == 1.0
  assert stats["calm_hint_copies"] == 0.0
  tokens = {n: sum(len(a) + 1 for a in answers) for n, (_, answers) in sets.items()}
  longest = max(len(a) + 1 for _, answers in sets.values() for a in answers)
  assert max(tokens.values()) <= stats["sft_tokens"] < min(tokens.values()) + longest
  for prompt, answer in zip(*sets["direct"]):
    assert answer == calm.render(by_prompt[prompt].gold, "teacher")
  for prompt, answer in zip(*sets["styled"]):
    assert answer == calm.render(by_prompt[prompt].gold, "base")


def test_rl_rows_must_divide_the_mesh():
  config = registry.load_config("calm", "tiny")
  with config.unlocked():
    config.rl_questions, config.group = 3, 3
  n = jax.device_count()  # the mesh takes them all; the tests run on 8
  with pytest.raises(ValueError, match=r"config.rl_questions x config.group \(9 rows\) must be "
                     rf"a multiple of the mesh's data axis \({n} devices\)"):
    experiment.run(config, "/tmp/unused")
