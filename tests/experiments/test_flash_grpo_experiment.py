"""Flash-GRPO experiment: the checks of the tiny run end to end (the notebook's run: every
arm, equal compute, the diagnostics), the compute accounting, the claims on hand-made
metrics, bad config."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.data import digits
from reprojax.experiments import digit_generator
from reprojax.experiments import registry
from reprojax.experiments import sharding
from reprojax.experiments.flash_grpo import claims
from reprojax.experiments.flash_grpo import experiment
from reprojax.experiments.flash_grpo import programs
from reprojax.experiments.flash_grpo.configs import digits as digits_config
from reprojax.models import mlp_classifier


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run (``tests/test_notebooks.py`` runs it and calls this): every
  arm trained at equal compute, the diagnostics, the figure."""
  del again
  for arm in config.arms:
    assert m[f"{arm}_compute"] <= config.budget
    assert m[f"{arm}_compute"] > config.budget - programs.cost_per_iteration(config, arm)
    assert m[f"{arm}_reward"] <= 0.0  # minus a squared distance
  assert m["flash_iterations"] > m["flow_grpo_iterations"]
  assert 0.0 <= m["k_share_independent"] <= 1.0
  assert m["grad_norm_spread"] >= 1.0 and m["grad_norm_spread_rectified"] >= 1.0
  assert os.path.isfile(workdir / "curves.png")
  ids = [c.id for c in claims.claims(config, m)]
  assert ids == ["flash_beats_flow_grpo", "rectified_norms_flat", "iso_lowers_variance",
                 "flash_beats_full_control", "compute_matched"]


def test_compute_accounting():
  config = registry.load_config("flash_grpo", "quick")
  n = config.num_steps
  assert programs.cost_per_iteration(config, "full") == n + 3 * (n - 1)
  assert programs.cost_per_iteration(config, "flow_grpo") == n + 3 * (n - 1)
  assert programs.cost_per_iteration(config, "window") == n + 3 * config.window
  assert programs.cost_per_iteration(config, "flash") == n + 3
  assert programs.iterations(config, "flash") == config.budget // (n + 3)
  assert (programs.iterations(config, "single") > programs.iterations(config, "window")
          > programs.iterations(config, "full"))


def _metrics(gap=0.01, se=0.002, rect=1.1, ratio=0.8, ratio_se=0.05, control_gap=0.01,
             share=0.2):
  m = {"num_seeds": 3.0, "budget": 4000.0, "gap_flash_vs_flow_grpo": gap,
       "gap_flash_vs_flow_grpo_se": se, "gap_flash_vs_full": control_gap,
       "gap_flash_vs_full_se": se, "grad_norm_spread": 2.0, "grad_norm_spread_rectified": rect,
       "variance_ratio_iso": ratio, "variance_ratio_iso_se": ratio_se,
       "k_share_independent": share, "k_share_independent_se": 0.01, "k_share_chance": 0.004}
  for arm in programs.ARMS:
    m.update({f"{arm}_reward": -0.01, f"{arm}_start_reward": -0.3, f"{arm}_iterations": 100.0,
              f"{arm}_compute": 3990.0})
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("flash_grpo", "quick")
  c = {x.id: x for x in claims.claims(config, _metrics())}
  assert all(x.holds for x in c.values())
  assert c["flash_beats_flow_grpo"].kind == "paper" and c["compute_matched"].kind == "check"
  assert c["flash_beats_full_control"].kind == "check"
  assert "is tested" in c["iso_lowers_variance"].evidence.note
  c = {x.id: x for x in claims.claims(config, _metrics(gap=0.003, rect=1.3, ratio=0.95,
                                                           share=0.02))}
  assert not c["flash_beats_flow_grpo"].holds  # within 2 s.e.
  assert c["flash_beats_full_control"].holds  # decided by its own gap alone
  assert not c["rectified_norms_flat"].holds and not c["iso_lowers_variance"].holds
  # 0.02 - 0.004 < 2 s.e.: the task cannot test it, and the grade says so
  assert c["iso_lowers_variance"].evidence.to_json()["grade"] == "not testable"
  c = {x.id: x for x in claims.claims(config, _metrics(control_gap=-0.01, share=0.005))}
  assert c["flash_beats_flow_grpo"].holds and not c["flash_beats_full_control"].holds
  assert c["iso_lowers_variance"].evidence.untestable  # under 1%
  m = _metrics()
  m["flow_grpo_compute"] = 4100.0
  assert not {x.id: x for x in claims.claims(config, m)}["compute_matched"].holds


def test_k_share_by_hand():
  """Between-step over total sum of squares: 1 when the step decides the advantage, 0 when
  every step has the same mean, and numpy's one-way decomposition on random data."""
  k = jnp.array([0, 0, 1, 1, 2, 2])
  assert float(programs.k_share(jnp.array([1.0, 1.0, 0.0, 0.0, -1.0, -1.0]), k, 3)) == 1.0
  assert abs(float(programs.k_share(jnp.array([1.0, -1.0, 2.0, -2.0, 0.5, -0.5]), k, 3))) < 1e-7
  rng = np.random.default_rng(0)
  a, kk = rng.normal(size=200), rng.integers(0, 4, size=200)
  between = sum((kk == j).sum() * (a[kk == j].mean() - a.mean()) ** 2 for j in range(4))
  np.testing.assert_allclose(programs.k_share(jnp.asarray(a), jnp.asarray(kk), 4),
                             between / ((a - a.mean()) ** 2).sum(), rtol=1e-5)


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


def test_digits_task_velocity_reward_and_correctness_by_hand():
  """The digits task: the U-Net's velocity on flattened images under each label's prompt;
  the reward is the classifier's log-probability of the label minus ink_weight x mean ink
  (numpy by hand); a sample is correct when the classifier's argmax is its label."""
  config = digits_config.get_config()
  with config.unlocked():
    config.generator.channels, config.generator.text_width = (8,), 8
    config.generator.classifier_hidden = (8,)
  model = digit_generator.make_model(config.generator)
  clf_model = mlp_classifier.MLPClassifier(hidden=(8,), num_classes=10)
  params, clf_params = jax.jit(lambda k1, k2: (digit_generator.init_params(model, k1),
                                               clf_model.init(k2, jnp.zeros((1, 64)))))(
      jax.random.key(0), jax.random.key(1))
  task = programs.digits_task(config, model, (clf_model, clf_params))
  assert task.dim == 64
  labels = jnp.array([3, 0, 9])
  x = 1.5 * jax.random.normal(jax.random.key(2), (3, 64))  # some pixels beyond [-1, 1]
  t = jnp.array([0.1, 0.5, 0.9])
  tokens = jnp.asarray(digits.tokenize([digits.prompt(d) for d in (3, 0, 9)]))

  @jax.jit  # one program (one compile of the U-Net) for the task's outputs and the plain call
  def outputs(params, x, t):
    return (task.velocity(params, labels)(x, t), task.reward(x, labels), task.correct(x, labels),
            model.apply(params, x.reshape(3, 8, 8, 1), t, tokens).reshape(3, 64),
            clf_model.apply(clf_params, jnp.clip(x, -1.0, 1.0)))

  velocity, reward, correct, want, logits = outputs(params, x, t)
  np.testing.assert_allclose(velocity, want, rtol=1e-6, atol=1e-6)
  xc = np.clip(np.asarray(x), -1.0, 1.0)
  logits = np.asarray(logits, np.float64)
  log_p = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
  want_r = log_p[np.arange(3), [3, 0, 9]] - config.ink_weight * ((xc + 1) / 2).mean(1)
  np.testing.assert_allclose(reward, want_r, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(correct, logits.argmax(1) == [3, 0, 9])


def test_digits_config_main_step_lowers_on_8_devices():
  step = experiment.main_step(digits_config.get_config(), None)
  assert step.build(sharding.make_mesh()).lower(*step.args).as_text()


def test_bad_task():
  config = registry.load_config("flash_grpo", "tiny")
  with config.unlocked():
    config.task = "images"
  with pytest.raises(ValueError, match="task"):
    experiment.run(config, "/tmp/unused")
  config = digits_config.get_config()
  with config.unlocked():
    config.num_modes = 8
  with pytest.raises(ValueError, match="all 10"):
    experiment.run(config, "/tmp/unused")


def test_a_warm_up_longer_than_the_generators_training_is_a_clear_error():
  config = digits_config.get_config().generator
  with config.unlocked():
    config.num_steps = 20
  with pytest.raises(ValueError, match="warmup_steps=100 must be in"):
    digit_generator.make_optimizer(config)
