"""Flash-GRPO experiment: the checks of the tiny run end to end (the notebook's run: every
arm, equal compute, the diagnostics), the compute accounting, the claims on hand-made
metrics, bad config."""

import os

import pytest

from reprojax.experiments import registry
from reprojax.experiments.flash_grpo import experiment


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run (``tests/test_notebooks.py`` runs it and calls this): every
  arm trained at equal compute, the diagnostics, the figure."""
  del again
  for arm in config.arms:
    assert m[f"{arm}_compute"] <= config.budget
    assert m[f"{arm}_compute"] > config.budget - experiment.cost_per_iteration(config, arm)
    assert m[f"{arm}_reward"] <= 0.0  # minus a squared distance
  assert m["flash_iterations"] > m["full_iterations"]
  assert m["grad_norm_spread"] >= 1.0 and m["grad_norm_spread_rectified"] >= 1.0
  assert os.path.isfile(workdir / "curves.png")
  ids = [c.id for c in experiment.claims(config, m)]
  assert ids == ["flash_beats_full", "rectified_norms_flat", "iso_lowers_variance",
                 "compute_matched"]


def test_compute_accounting():
  config = registry.load_config("flash_grpo", "quick")
  n = config.num_steps
  assert experiment.cost_per_iteration(config, "full") == n + 3 * (n - 1)
  assert experiment.cost_per_iteration(config, "window") == n + 3 * config.window
  assert experiment.cost_per_iteration(config, "flash") == n + 3
  assert experiment.iterations(config, "flash") == config.budget // (n + 3)
  assert (experiment.iterations(config, "single") > experiment.iterations(config, "window")
          > experiment.iterations(config, "full"))


def _metrics(gap=0.01, se=0.002, rect=1.1, ratio=0.8, ratio_se=0.05):
  m = {"num_seeds": 3.0, "budget": 4000.0, "gap_flash_vs_full": gap, "gap_flash_vs_full_se": se,
       "grad_norm_spread": 2.0, "grad_norm_spread_rectified": rect,
       "variance_ratio_iso": ratio, "variance_ratio_iso_se": ratio_se}
  for arm in ("full", "window", "single", "iso", "flash"):
    m.update({f"{arm}_reward": -0.01, f"{arm}_start_reward": -0.3, f"{arm}_iterations": 100.0,
              f"{arm}_compute": 3990.0})
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("flash_grpo", "quick")
  c = {x.id: x for x in experiment.claims(config, _metrics())}
  assert all(x.holds for x in c.values())
  assert c["flash_beats_full"].kind == "paper" and c["compute_matched"].kind == "check"
  c = {x.id: x for x in experiment.claims(config, _metrics(gap=0.003, rect=1.3, ratio=0.95))}
  assert not c["flash_beats_full"].holds  # within 2 s.e.
  assert not c["rectified_norms_flat"].holds and not c["iso_lowers_variance"].holds
  m = _metrics()
  m["full_compute"] = 4100.0
  assert not {x.id: x for x in experiment.claims(config, m)}["compute_matched"].holds


def test_bad_config():
  config = registry.load_config("flash_grpo", "tiny")
  with config.unlocked():
    config.arms = ("full", "ppo")
  with pytest.raises(ValueError, match="arms"):
    experiment.run(config, "/tmp/unused")
  config = registry.load_config("flash_grpo", "tiny")
  with config.unlocked():
    config.sde_high = config.num_steps
  with pytest.raises(ValueError, match="sde_high"):
    experiment.run(config, "/tmp/unused")
