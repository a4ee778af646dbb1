"""TEAM's experiment: the training resumes bit-identically, and the claims read the metrics."""

import pytest

from reprojax.experiments import registry
from reprojax.experiments import results
from reprojax.algorithms import team
from reprojax.experiments.team import claims
from reprojax.experiments.team import experiment
from reprojax.experiments.team import programs


def test_stop_and_resume_is_bit_identical(resumes_bit_identically):
  """The model's training stopped after a checkpoint and resumed ends bit-identical to an
  uninterrupted run (the check is ``conftest.resumes_bit_identically``)."""
  config = registry.load_config("team", "tiny")
  with config.unlocked():
    config.train_steps = 8
  resumes_bit_identically(
      lambda workdir, mesh, stop_after: programs.train_model(
          config, str(workdir), 0, mesh, stop_after=stop_after, checkpoint_every=4),
      lambda workdir: workdir / "model" / "seed0" / "checkpoints")


def _metrics(**changes):
  m = {"num_seeds": 1.0, "vanilla_acc": 0.8, "team_acc": 0.8, "team_acc_gap": 0.0,
       "vanilla_passes_per_token": 0.4, "team_passes_per_token": 0.3,
       "team_speedup_memory": 2.0, "team_speedup_compute": 0.8, "team_speedup_wall": 1.0,
       "reuse_speedup_memory": 1.1, "limit_speedup_memory": 1.0,
       "speculate_speedup_memory": 1.5, "num_problem_sets": 8.0}
  m.update({k + "_se": 0.0 for k in ("team_acc_gap", "team_speedup_memory",
                                     "reuse_speedup_memory", "limit_speedup_memory",
                                     "speculate_speedup_memory")})
  for s in ("reuse", "limit", "speculate"):  # paired per problem set, each 5 s.e. above 0
    m.update({f"loo_{s}_gain": 0.05, f"loo_{s}_gain_se": 0.01,
              f"alone_{s}_gap": 0.5, f"alone_{s}_gap_se": 0.1})
  return {**m, **changes}


def test_claims_follow_the_metrics():
  """The speed-up claim needs both the speed-up and the accuracy; the leave-one-out claim
  needs every strategy's removal to cost more than 2 s.e. (paired over problem sets), the
  check every strategy alone below all three by the same rule."""
  config = registry.load_config("team", "quick")
  m = _metrics()
  got = {c.id: c.holds for c in claims.claims(config, m)}
  assert got == {"team_speedup": True, "each_strategy_contributes": True,
                 "alone_below_all_three": True}
  ev = {c.id: c.evidence for c in claims.claims(config, m)}
  assert ev["team_speedup"].seeds == 1 and ev["team_speedup"].margin_se is None
  assert ev["each_strategy_contributes"].seeds == 8
  assert abs(ev["each_strategy_contributes"].margin_se - 5.0) < 1e-9
  assert results.grade(ev["each_strategy_contributes"]) == "strong"
  three = {**m, "num_seeds": 3.0, "team_speedup_memory_se": 0.1, "team_acc_gap_se": 0.01}
  ev = {c.id: c.evidence for c in claims.claims(config, three)}
  assert abs(ev["team_speedup"].margin_se - 2.0) < 1e-9  # the accuracy part: 0.02 / 0.01
  got = {c.id: c.holds for c in claims.claims(config, {**m, "team_acc_gap": -0.1})}
  assert not got["team_speedup"]
  # limiting that adds nothing (0 +- 0), or adds inside 2 s.e.: the ablation claim fails, its
  # margin measured from the rule's 2 s.e. (none without a s.e.; (0.02 - 0.015) / 0.01)
  for change, margin in ((dict(loo_limit_gain=0.0, loo_limit_gain_se=0.0), None),
                         (dict(loo_limit_gain=0.015, loo_limit_gain_se=0.01), 0.5)):
    c = {c.id: c for c in claims.claims(config, _metrics(**change))}
    assert not c["each_strategy_contributes"].holds and c["alone_below_all_three"].holds
    assert c["each_strategy_contributes"].evidence.margin_se == pytest.approx(margin)
  got = {c.id: c.holds for c in claims.claims(config, _metrics(alone_speculate_gap=-0.1))}
  assert not got["alone_below_all_three"] and got["each_strategy_contributes"]


def test_the_claims_strategies_are_teams():
  """The claims module names the strategies itself (it imports no JAX): the same as TEAM's."""
  assert claims.STRATEGIES == team.STRATEGIES and set(programs.MODES) >= set(team.STRATEGIES)


def test_problem_sets_must_divide_the_problems():
  config = registry.load_config("team", "tiny")
  with config.unlocked():
    config.problem_sets = 3
  with pytest.raises(ValueError, match="problem_sets"):
    experiment._check_config(config)
