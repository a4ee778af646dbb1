"""TEAM's experiment: the training resumes bit-identically, and the claims read the metrics."""

from reprojax.experiments import registry
from reprojax.experiments import results
from reprojax.experiments.team import experiment


def test_stop_and_resume_is_bit_identical(resumes_bit_identically):
  """The model's training stopped after a checkpoint and resumed ends bit-identical to an
  uninterrupted run (the check is ``conftest.resumes_bit_identically``)."""
  config = registry.load_config("team", "tiny")
  with config.unlocked():
    config.train_steps = 8
  resumes_bit_identically(
      lambda workdir, mesh, stop_after: experiment.train_model(
          config, str(workdir), 0, mesh, stop_after=stop_after, checkpoint_every=4),
      lambda workdir: workdir / "model" / "seed0" / "checkpoints")


def test_claims_follow_the_metrics():
  """The speed-up claim needs both the speed-up and the accuracy; the ablation claim needs
  every strategy alone below all three."""
  config = registry.load_config("team", "quick")
  m = {"num_seeds": 1.0, "vanilla_acc": 0.8, "team_acc": 0.8, "team_acc_gap": 0.0,
       "vanilla_passes_per_token": 0.4, "team_passes_per_token": 0.3,
       "team_speedup_memory": 2.0, "team_speedup_compute": 0.8, "team_speedup_wall": 1.0,
       "reuse_speedup_memory": 1.1, "limit_speedup_memory": 1.0,
       "speculate_speedup_memory": 1.5}
  m.update({k + "_se": 0.0 for k in ("team_acc_gap", "team_speedup_memory",
                                     "reuse_speedup_memory", "limit_speedup_memory",
                                     "speculate_speedup_memory")})
  got = {c.id: c.holds for c in experiment.claims(config, m)}
  assert got == {"team_speedup": True, "each_alone_less": True}
  # One seed has no standard error: weak evidence; three seeds put the margins in s.e.
  ev = {c.id: c.evidence for c in experiment.claims(config, m)}
  assert ev["team_speedup"].seeds == 1 and ev["team_speedup"].margin_se is None
  assert results.grade(ev["each_alone_less"]) == "weak"
  three = {**m, "num_seeds": 3.0, "team_speedup_memory_se": 0.1, "team_acc_gap_se": 0.01,
           "speculate_speedup_memory_se": 0.1}
  ev = {c.id: c.evidence for c in experiment.claims(config, three)}
  assert abs(ev["team_speedup"].margin_se - 2.0) < 1e-9  # the accuracy part: 0.02 / 0.01
  assert abs(ev["each_alone_less"].margin_se - 0.5 / (0.1 * 2 ** 0.5)) < 1e-9
  got = {c.id: c.holds for c in experiment.claims(config, {**m, "team_acc_gap": -0.1})}
  assert not got["team_speedup"]
  got = {c.id: c.holds for c in experiment.claims(config, {**m, "speculate_speedup_memory": 2.1})}
  assert not got["each_alone_less"] and got["team_speedup"]
