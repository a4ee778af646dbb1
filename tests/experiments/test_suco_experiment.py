"""SuCo experiment: the checks of the tiny run end to end (every model, MSC at the paper's
threshold and at the true-level ablation's, truncation at its budget, the cached base; the
notebook's run), the claims and the ablation's reading on hand-made metrics, bad config."""

import os

import numpy as np
import pytest

from reprojax.experiments import registry
from reprojax.experiments.suco import claims
from reprojax.experiments.suco import experiment
from reprojax.experiments.suco import programs


RERUN = True  # tests/test_notebooks.py reruns the notebook's experiment in its folder


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run (``tests/test_notebooks.py`` runs it and calls this): every
  model scored, MSC within the chains, truncation at its budget, the figure, and a rerun
  in the same folder (``again``) that restores every seed's base model."""
  assert m["base_restored"] == 0.0
  for name in experiment.METHODS:
    for lv in config.eval_levels:
      assert 0.0 <= m[f"{name}_acc_L{lv}"] <= 1.0
      assert m[f"{name}_tokens_L{lv}"] >= 0.0
  # the truncated base never thinks past its budget (MFT's mean length, rounded)
  assert m["truncated_tokens"] <= m["truncation_budget"] + 1e-9
  for lv in config.train_levels:
    for pre in ("", claims.ORACLE):  # the paper's threshold and the true-level ablation
      assert 0 <= m[f"{pre}msc_steps_L{lv}"] <= 2 * lv + 1  # within the question's chain
      assert 0 <= m[f"{pre}msc_agree_L{lv}"] <= 1 and 0 <= m[f"{pre}msc_fallback_L{lv}"] <= 1
    assert 0 < m[f"complexity_L{lv}"] <= 1  # a percentile rank among the MSC questions
  assert m["oracle_level_truncated_tokens"] <= m["oracle_level_truncation_budget"] + 1e-9
  assert -1 <= m["complexity_level_rank_corr"] <= 1
  assert os.path.isfile(workdir / "levels.png")
  ids = [c.id for c in claims.claims(config, m)]
  assert ids == ["msc_grows", "mft_shortens_noninferior", "sapo_shortens_noninferior",
                 "heldout_holds_noninferior", "beats_truncation"]
  assert [c.id for c in claims.ablation_claims(config, m)] == ids
  # registry.CHECKPOINTED: the rerun restored every seed's base model from its orbax
  # checkpoint and ended with the same metrics, bit for bit
  assert again.pop("base_restored") == 1.0 and m.pop("base_restored") == 0.0
  np.testing.assert_equal(again, m)


def test_the_base_models_cache_key():
  """Other base settings give another key, so the cached model is not reused; settings the
  base does not depend on keep it."""
  config = registry.load_config("suco", "tiny")
  key = programs.base_key(config, 0)
  with config.unlocked():
    config.sapo_steps += 1
  assert programs.base_key(config, 0) == key
  with config.unlocked():
    config.base_steps += 1
  assert programs.base_key(config, 0) != key
  assert programs.base_key(config, 1) != programs.base_key(config, 0)


def _metrics(acc_gap=0.0, se=0.01, tokens=5.0, steps=(1.0, 2.0, 3.0, 4.0), trunc_gap=0.3):
  m = {"num_seeds": 3.0, "base_tokens": 11.0, "base_acc": 0.99, "truncation_budget": 5.0,
       "base_more_acc": 0.99, "base_more_tokens": 11.0,
       "truncated_acc": 0.5, "truncated_tokens": 5.0, "gap_acc_sapo_vs_truncated": trunc_gap,
       "gap_acc_sapo_vs_truncated_se": 0.05}
  for lv, s in zip((1, 2, 3, 4), steps):
    m[f"msc_steps_L{lv}"], m[f"msc_agree_L{lv}"], m[f"msc_steps_L{lv}_se"] = s, 1.0, 0.1
  for a in ("mft", "sapo"):
    m.update({f"{a}_tokens": tokens, f"{a}_acc": 0.99 + acc_gap,
              f"gap_acc_{a}_vs_base": acc_gap, f"gap_acc_{a}_vs_base_se": se,
              f"gap_acc_{a}_vs_base_L5": acc_gap, f"gap_acc_{a}_vs_base_L5_se": se,
              f"{a}_acc_L5": 0.5, f"{a}_tokens_L5": tokens})
    for sfx in ("", "_L5"):  # the tokens' s.e., the paired gap's equal to the model's
      m[f"{a}_tokens{sfx}_se"] = m[f"gap_tokens_{a}_vs_base{sfx}_se"] = 0.5
  m.update({"base_acc_L5": 0.5, "base_tokens_L5": 20.0, "base_tokens_se": 0.0,
            "base_tokens_L5_se": 0.0})
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("suco", "quick")
  c = {x.id: x for x in claims.claims(config, _metrics())}
  assert all(x.holds for x in c.values()), [x.id for x in c.values() if not x.holds]
  assert all(x.evidence is not None and x.evidence.seeds == 3 for x in c.values())
  assert c["msc_grows"].evidence.by_construction  # the chain lengths are planted
  assert c["beats_truncation"].evidence.margin_se == pytest.approx(6.0)  # 0.3 / 0.05
  # equal accuracy (gap 0, s.e. 0.01) lies 2 s.e. inside the 0.02 margin, whatever the
  # token cut's
  assert c["mft_shortens_noninferior"].evidence.margin_se == pytest.approx(2.0)
  c = {x.id: x for x in claims.claims(config, _metrics(acc_gap=0.05))}
  # the nearer part: accuracy 7 s.e. above -0.02, tokens (7.7 - 5) / (0.5 sqrt(0.3 + 0.7))
  # = 5.4 s.e. under 0.7x
  assert c["mft_shortens_noninferior"].evidence.margin_se == pytest.approx(5.4)
  c = {x.id: x for x in claims.claims(config, _metrics(
      acc_gap=-0.05, tokens=9.0, steps=(1.0, 2.0, 2.0, 4.0), trunc_gap=0.05))}
  assert not any(x.holds for x in c.values())
  # a failing conjunction: the failing part farthest from passing (accuracy, 5 s.e.
  # below; tokens 9.0 against 7.7: 2.6 s.e.)
  # (the lower bound -0.07 is 5 s.e. below -0.02)
  assert c["mft_shortens_noninferior"].evidence.margin_se == pytest.approx(5.0)
  # non-inferiority within 0.02: the gap minus 2 s.e. must stay at or above -0.02
  held = lambda **kw: {x.id: x for x in claims.claims(config, _metrics(**kw))}[  # noqa: E731
      "mft_shortens_noninferior"].holds
  assert not held(acc_gap=-0.03) and not held(acc_gap=-0.015)
  assert held(acc_gap=-0.015, se=0.002)
  # a wide s.e. is not "equal" (the case: s.e. 0.09 on a held-out level)
  assert not held(acc_gap=0.0, se=0.09)


def test_the_ablation_is_read_under_the_same_rules_and_counts_nothing():
  """``ablation_claims`` reads the ``oracle_level_`` metrics in place of the paper's rule's
  (the base, its control and the seeds shared); ``claims`` never reads them."""
  config = registry.load_config("suco", "quick")
  m = _metrics()
  m.update({"complexity_level_rank_corr": 0.8, **{f"msc_fallback_L{lv}": 0.1 for lv in
                                                   (1, 2, 3, 4)}})
  assert claims.ablation_claims(config, m) == []  # a run without the ablation
  bad = _metrics(acc_gap=-0.05, tokens=9.0, steps=(1.0, 2.0, 2.0, 4.0), trunc_gap=0.05)
  oracle = {claims.ORACLE + k: v for k, v in bad.items()
            if k.startswith(("msc_", "mft_", "sapo_", "gap_", "trunc"))}
  with_ablation = {**m, **oracle}
  paper = {c.id: c for c in claims.claims(config, with_ablation)}
  assert paper == {c.id: c for c in claims.claims(config, m)}  # the ablation decides nothing
  assert all(c.holds for c in paper.values())
  assert "0.6 + 0.3 C" in paper["msc_grows"].ours and "Spearman 0.80" in paper["msc_grows"].ours
  ablation = {c.id: c for c in claims.ablation_claims(config, with_ablation)}
  assert list(ablation) == list(paper) and not any(c.holds for c in ablation.values())
  assert "true level (0.6 to 0.9)" in ablation["msc_grows"].ours


def test_bad_config():
  for key, value, match in (("train_levels", (0, 2), "train_levels"),
                            ("eval_levels", (1, 9), "eval_levels"), ("tau_lo", 0.95, "tau"),
                            ("alpha", 0.5, "delta0")):
    config = registry.load_config("suco", "tiny")
    with config.unlocked():
      setattr(config, key, value)
    with pytest.raises(ValueError, match=match):
      experiment.run(config, "/tmp/unused")
