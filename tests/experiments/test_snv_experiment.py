"""SNV experiment: the task stream, one short run through two tasks, the accuracy
summaries and the claims on hand-made metrics."""

import numpy as np
import pytest

from reprojax.data import continual
from reprojax.experiments import registry
from reprojax.experiments import sharding
from reprojax.experiments.snv import claims
from reprojax.experiments.snv import programs


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
  reps = programs.replicas(config)
  st = programs.run_stream(config, sharding.make_mesh(), programs.make_stream(config), reps)
  acc, loss, evals, drift, num_frozen, frozen, first = st[:7]
  r = len(reps.seed_R)
  assert acc["test_task"].shape == (r, 2, 2) and np.all(np.isfinite(loss))
  assert drift == 0.0 and num_frozen > 0
  freezer = np.isin(reps.method_R, [programs.METHODS.index(m) for m in programs.FREEZERS])
  # after each task a freezer freezes floor(c * N) neurons (cumulatively); nobody else any
  a = reps.method_R == programs.METHODS.index("snv_a")
  fixed = freezer & ~a
  want = np.floor(reps.hyper_R * frozen.shape[1] + 1e-6)
  assert np.all(frozen.sum(1)[fixed] >= want[fixed])
  assert np.all(frozen.sum(1)[fixed] <= 2 * want[fixed])
  # SNV-A: at least one neuron a task, at most floor(0.2 N) new ones
  assert np.all(frozen.sum(1)[a] >= 1)
  assert np.all(frozen.sum(1)[a] <= 2 * np.floor(config.snv_a_max_new * frozen.shape[1]))
  # Eq. (1): a task's subnetwork is frozen once learnt, so its task-IL accuracy never moves
  m = np.searchsorted(st.masked_idx, np.flatnonzero(a))
  np.testing.assert_array_equal(st.acc_masked["test_task"][m, 1, 0],
                                st.acc_masked["test_task"][m, 0, 0])
  assert not frozen[~freezer].any()
  assert evals and first is not None


def test_summaries():
  acc = np.array([[[0.9, 0.0], [0.5, 0.8]]])  # after task 0: 0.9 on it; after task 1: 0.5, 0.8
  np.testing.assert_allclose(programs.final_average(acc), [0.65])
  np.testing.assert_allclose(programs.backward_transfer(acc), [-0.4])
  ct = np.array([0, 0, 1, 1])
  np.testing.assert_array_equal(programs.active_classes(ct, 1, 0), [False, False, True, True])
  np.testing.assert_array_equal(programs.active_classes(ct, 1, 1), [True] * 4)


def _metrics(gain=0.03, se=0.005, drift=0.0, rho=0.9, bwt=0.0):
  m = {"num_seeds": 5, "frozen_drift": drift, "num_frozen_entries": 10,
       "rank_correlation": rho, "efficiency_gap": 1e-7}
  for p in ("task", "class"):
    m[f"{p}_best_baseline"] = 1
    m[f"{p}_snv_gain"], m[f"{p}_snv_gain_se"] = gain, se
    m[f"{p}_snv_pick"] = 0.1
    m[f"{p}_snv_a_best_baseline"] = 5  # wsn (task), pec (class)
    m[f"{p}_snv_a_gain"], m[f"{p}_snv_a_gain_se"] = gain, se
    for k in ("snv", "ewc", "snv_a", "snv_alg1", "wsn", "pec"):
      m[f"{p}_{k}_acc"], m[f"{p}_{k}_acc_se"] = 0.9, 0.01
      m[f"{p}_{k}_bwt"], m[f"{p}_{k}_bwt_max_abs"] = -bwt, bwt
    for o in ("random", "activation"):
      m[f"{p}_snv_vs_{o}"], m[f"{p}_snv_vs_{o}_se"] = gain, se
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("snv", "quick")
  holds = lambda m: {c.id: c.holds for c in claims.claims(config, m)}  # noqa: E731
  assert all(holds(_metrics()).values())
  weak = holds(_metrics(gain=0.008))  # under 2 s.e.
  assert not any(weak[k] for k in ("snv_a_class_il_gain", "snv_a_task_il_gain",
                                   "dense_snv_class_il_gain", "dense_snv_task_il_gain",
                                   "beats_random", "beats_activation"))
  assert not holds(_metrics(gain=-0.03))["snv_a_task_il_gain"]
  assert not holds(_metrics(bwt=1e-9))["masked_bwt_zero"]
  ours = {c.id: c.ours for c in claims.claims(config, _metrics())}
  assert "wsn" in ours["snv_a_task_il_gain"] and "pec" in ours["snv_a_class_il_gain"]
  assert not holds(_metrics(drift=1e-7))["frozen_bit_identical"]
  assert not holds(_metrics(rho=0.3))["ranking_stable"]
  kinds = {c.id: c.kind for c in claims.claims(config, _metrics())}
  assert kinds["snv_a_task_il_gain"] == "paper" and kinds["frozen_bit_identical"] == "check"
  assert kinds["dense_snv_task_il_gain"] == "check"  # the dense ablation
  assert kinds["beats_random"] == "check"  # the abstract reports no ablation figure
  # the pools the metrics' best-baseline indices point into are methods the programs run
  assert set(claims.BASELINES) <= set(programs.METHODS)


def _np_net(params, x, keep, fill):
  """A hand-built forward pass: the neurons outside ``keep`` replaced by ``fill``."""
  p = params["params"]
  h, start = x.astype(np.float64), 0
  for i in range(2):
    w, b = np.asarray(p[f"Dense_{i}"]["kernel"], np.float64), np.asarray(p[f"Dense_{i}"]["bias"])
    z = h @ w + b
    width = w.shape[1]
    z = np.where(keep[start:start + width], z, fill[start:start + width])
    h, start = np.maximum(z, 0.0), start + width
  return h @ np.asarray(p["Dense_2"]["kernel"], np.float64) + np.asarray(p["Dense_2"]["bias"])


def test_masked_evaluation_equals_a_hand_built_network():
  """Eq. (1): task j through S_j with the other neurons at their stored means, against a
  numpy network built by hand; class-IL routing by concatenated logits and by max-prob."""
  import jax
  config = registry.load_config("snv", "tiny")
  config.num_tasks, config.classes_per_task, config.hidden = 2, 2, (3, 2)
  fns = programs.make_fns(config, sharding.make_mesh())
  model = programs.make_model(config)
  rng = np.random.default_rng(0)
  params = model.init(jax.random.key(0), np.zeros((1, 4), np.float32))
  params = jax.tree.map(lambda a: rng.normal(size=a.shape).astype(np.float32), params)
  x = rng.normal(size=(1, 2, 7, 4)).astype(np.float32)  # (S, T, M, D)
  y = rng.integers(0, 2, size=(1, 2, 7)).astype(np.int32) + np.array([0, 2])[None, :, None]
  subnets = np.array([[[1, 0, 1, 1, 0], [0, 1, 1, 0, 1]]], bool)  # (R, T, N)
  fills = rng.normal(size=(1, 2, 5)).astype(np.float32)
  batched = jax.tree.map(lambda a: a[None], params)
  for routing in (0, 1):
    til, cil = fns.evaluate_masked(batched, subnets, fills, np.array([routing], np.int32),
                                   np.int32(1), np.zeros(1, np.int32), x, y)
    logits = np.stack([[_np_net(params, x[0, j], subnets[0, c], fills[0, c]) for j in range(2)]
                       for c in range(2)])  # (T c, T j, M, K)
    own = np.array([[0, 1], [2, 3]])
    want_til = [np.mean(own[j][np.argmax(logits[j, j][:, own[j]], -1)] == y[0, j])
                for j in range(2)]
    np.testing.assert_allclose(np.asarray(til)[0], want_til)
    want_cil = []
    for j in range(2):
      sc = np.concatenate([logits[c, j][:, own[c]] for c in range(2)], -1)
      if routing:
        sc = np.concatenate([logits[c, j][:, own[c]] - np.log(np.exp(
            logits[c, j][:, own[c]]).sum(-1, keepdims=True)) for c in range(2)], -1)
      want_cil.append(np.mean(np.argmax(sc, -1) == y[0, j]))
    np.testing.assert_allclose(np.asarray(cil)[0], want_cil)
  # the same subnetwork through the model equals the hand-built one
  np.testing.assert_allclose(
      np.asarray(model.apply(params, x[0, 0], subnets[0, 1].astype(np.float32), fills[0, 1])),
      _np_net(params, x[0, 0], subnets[0, 1], fills[0, 1]), rtol=1e-5, atol=1e-5)
