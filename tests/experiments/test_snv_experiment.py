"""SNV experiment: the task stream, one short run through two tasks, the accuracy
summaries and the claims on hand-made metrics."""

import numpy as np
import pytest

from reprojax.data import continual
from reprojax.experiments import registry
from reprojax.experiments import sharding
from reprojax.experiments.snv import experiment


def test_digits_stream_is_split_by_class_without_overlap():
  s = continual.digits_stream(num_tasks=3, classes_per_task=3, seed=1)
  assert s.x_train.shape == (3, 3 * 104, 64) and s.x_val.shape == (3, 3 * 35, 64)
  for t in range(3):
    for y in (s.y_train[t], s.y_val[t], s.y_test[t]):
      assert set(np.unique(y)) == set(s.classes_TxC[t])
    rows = [tuple(r) for fold in (s.x_train, s.x_val, s.x_test) for r in fold[t]]
    assert len(rows) == 3 * 174  # every class cut to the rarest class's count
  assert 0.0 <= s.x_train.min() and s.x_train.max() <= 1.0
  with pytest.raises(ValueError, match="num_tasks"):
    continual.digits_stream(num_tasks=6, classes_per_task=2)
  p = continual.permuted_digits_stream(num_tasks=3, seed=0)
  assert p.x_train.shape == (3, 10 * 104, 64) and p.classes_TxC[2].tolist() == list(range(20, 30))
  # task 1 is task 0's digits with one fixed pixel order: its pixels' mean image is a permutation
  m0, m1 = p.x_train[0].mean(0), p.x_train[1].mean(0)
  assert not np.allclose(m0, m1) and np.allclose(np.sort(m0), np.sort(m1), atol=0.05)
  with pytest.raises(ValueError, match="fractions"):
    continual.split_by_class(s.x_train[0], s.y_train[0], s.classes_TxC[:1], (0.5, 0.5))


def test_two_tasks_run_freezes_exactly_and_fills_the_matrices():
  config = registry.load_config("snv", "tiny")
  config.num_tasks, config.num_seeds, config.train_steps = 2, 1, 5
  reps = experiment.replicas(config)
  acc, loss, evals, drift, num_frozen, frozen, first = experiment.run_stream(
      config, sharding.make_mesh(), experiment.make_stream(config), reps)
  r = len(reps.seed_R)
  assert acc["test_task"].shape == (r, 2, 2) and np.all(np.isfinite(loss))
  assert drift == 0.0 and num_frozen > 0
  freezer = np.isin(reps.method_R, [experiment.METHODS.index(m) for m in experiment.FREEZERS])
  # after one task each freezer froze floor(c * N) neurons; nobody else froze any
  want = np.floor(reps.hyper_R * frozen.shape[1] + 1e-6)
  np.testing.assert_array_equal(frozen.sum(1)[freezer], want[freezer])
  assert not frozen[~freezer].any()
  assert evals and first is not None


def test_summaries():
  acc = np.array([[[0.9, 0.0], [0.5, 0.8]]])  # after task 0: 0.9 on it; after task 1: 0.5, 0.8
  np.testing.assert_allclose(experiment.final_average(acc), [0.65])
  np.testing.assert_allclose(experiment.backward_transfer(acc), [-0.4])
  ct = np.array([0, 0, 1, 1])
  np.testing.assert_array_equal(experiment.active_classes(ct, 1, 0), [False, False, True, True])
  np.testing.assert_array_equal(experiment.active_classes(ct, 1, 1), [True] * 4)


def _metrics(gain=0.03, se=0.005, drift=0.0, rho=0.9):
  m = {"num_seeds": 5, "frozen_drift": drift, "num_frozen_entries": 10,
       "rank_correlation": rho, "efficiency_gap": 1e-7}
  for p in ("task", "class"):
    m[f"{p}_best_baseline"] = 1
    m[f"{p}_snv_gain"], m[f"{p}_snv_gain_se"] = gain, se
    m[f"{p}_snv_pick"] = 0.1
    for k in ("snv", "ewc"):
      m[f"{p}_{k}_acc"], m[f"{p}_{k}_acc_se"] = 0.9, 0.01
    for o in ("random", "activation"):
      m[f"{p}_snv_vs_{o}"], m[f"{p}_snv_vs_{o}_se"] = gain, se
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("snv", "quick")
  holds = lambda m: {c.id: c.holds for c in experiment.claims(config, m)}  # noqa: E731
  assert all(holds(_metrics()).values())
  weak = holds(_metrics(gain=0.008))  # under 2 s.e.
  assert not any(weak[k] for k in ("class_il_gain", "task_il_gain", "beats_random",
                                   "beats_activation"))
  assert not holds(_metrics(gain=-0.03))["task_il_gain"]
  assert not holds(_metrics(drift=1e-7))["frozen_bit_identical"]
  assert not holds(_metrics(rho=0.3))["ranking_stable"]
  kinds = {c.id: c.kind for c in experiment.claims(config, _metrics())}
  assert kinds["task_il_gain"] == "paper" and kinds["frozen_bit_identical"] == "check"
  assert kinds["beats_random"] == "check"  # the abstract reports no ablation figure
