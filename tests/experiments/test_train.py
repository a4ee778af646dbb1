"""The training loop: sharded equals unsharded, deterministic batches, the non-finite guard;
the cache of trained weights by fingerprint."""

import logging as pylogging
import os
import threading

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.models import fno


def _problem():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(48, 32)).astype(np.float32)
  y = np.roll(x, 3, axis=1) ** 2  # a translation and a nonlinearity to learn
  model = fno.FNO(modes=(6,), width=8, projection=16)

  def loss_fn(params, batch, key):
    del key
    xb, yb = batch
    return jnp.mean((model.apply(params, xb) - yb) ** 2, axis=-1), {}  # per example

  return model, loss_fn, (x, y)


def _fit(workdir, mesh, **kw):
  model, loss_fn, arrays = _problem()
  args = dict(workdir=str(workdir), mesh=mesh, init_params=lambda k: model.init(k, arrays[0][:1]),
              loss_fn=loss_fn, optimizer=optax.adam(3e-3), train_arrays=arrays, batch_size=16,
              num_steps=9, seed=0, log_every=3, checkpoint_every=4)
  args.update(kw)
  return train.fit(**args)


def test_sharded_equals_unsharded(tmp_path):
  """1 device, 8 devices on 'data', and a 4 x 2 'data' x 'model' mesh train alike."""
  assert jax.device_count() == 8, "tests run on 8 fake CPU devices (tests/conftest.py)"
  one = _fit(tmp_path / "one", sharding.make_mesh(devices=jax.devices()[:1]))
  eight = _fit(tmp_path / "eight", sharding.make_mesh())
  tp = _fit(tmp_path / "tp", sharding.make_mesh({"data": 4, "model": 2}))
  assert int(one.step) == int(eight.step) == int(tp.step) == 9
  model, _, (x, _) = _problem()
  init = model.init(jax.random.split(jax.random.key(0))[0], x[:1])  # fit's initialisation
  moved = jax.tree.map(lambda a, b: np.abs(np.asarray(a) - np.asarray(b)).max(), one.params, init)
  assert max(jax.tree.leaves(moved)) > 1e-3  # training moved the parameters
  for other in (eight, tp):
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6),
                 one.params, other.params)
  # Data parallel: parameters replicated over all 8 devices.
  leaf = jax.tree.leaves(eight.params)[0]
  assert len(leaf.sharding.device_set) == 8 and leaf.sharding.is_fully_replicated
  # Data x model: wide leaves split over 'model', the rest replicated.
  specs = {l.sharding.spec for l in jax.tree.leaves(tp.params)}
  assert jax.sharding.PartitionSpec() in specs and any("model" in tuple(s) for s in specs)


def test_batch_that_does_not_divide_the_mesh_is_padded_and_masked(tmp_path):
  """A global batch of 12 on 8 devices (padded to 16, masked) trains as on 1 device.

  Plain SGD, so the comparison sees the gradients themselves: Adam divides each update
  by its gradient's size, which turns float32 reduction-order noise in a near-zero
  gradient into a visible parameter difference (1.6e-4 relative on one of 384 weights
  with jax 0.10.2, padded or not).
  """
  sgd = optax.sgd(0.3)
  one = _fit(tmp_path / "one", sharding.make_mesh(devices=jax.devices()[:1]), batch_size=12,
             optimizer=sgd)
  eight = _fit(tmp_path / "eight", sharding.make_mesh(), batch_size=12, optimizer=sgd)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6),
               one.params, eight.params)
  # The padding is masked out: a batch of 16 (no padding) trains differently.
  sixteen = _fit(tmp_path / "sixteen", sharding.make_mesh(), batch_size=16, optimizer=sgd)
  gaps = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max()),
                      one.params, sixteen.params)
  gap = max(jax.tree.leaves(gaps))
  assert gap > 1e-4


def test_fit_from_given_params_with_step_compiles_once(tmp_path):
  """``init_params`` may be the parameters themselves (fine-tuning), ``with_step`` hands
  the loss each step number, and a second run with the same loss and optimizer objects
  reuses the compiled step."""
  model, loss_fn, arrays = _problem()
  mesh = sharding.make_mesh(devices=jax.devices()[:1])
  start = jax.device_get(model.init(jax.random.key(3), arrays[0][:1]))
  seen = []

  def scaled(params, batch, key, t):  # a schedule: only steps from 5 on move the parameters
    jax.debug.callback(lambda t_: seen.append(int(t_)), t)
    loss, aux = loss_fn(params, batch, key)
    return jnp.where(t >= 5, 1.0, 0.0) * loss, aux

  sgd = optax.sgd(0.3)
  common = dict(mesh=mesh, loss_fn=scaled, optimizer=sgd, train_arrays=arrays, batch_size=16,
                seed=0, log_every=3, checkpoint_every=9, with_step=True)
  frozen = train.fit(workdir=str(tmp_path / "a"), init_params=start, num_steps=5, **common)
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(frozen.params), start)
  assert seen == [0, 1, 2, 3, 4]
  traces = []
  build = train._build_train_step
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(train, "_build_train_step", lambda **kw: traces.append(1) or build(**kw))
    moved = train.fit(workdir=str(tmp_path / "b"), init_params=start, num_steps=7, **common)
  assert not traces  # the step of the first run, reused
  gap = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - b).max()),
                     jax.device_get(moved.params), start)
  assert max(jax.tree.leaves(gap)) > 1e-4


def test_a_checkpoint_of_another_structure_is_refused_clearly(tmp_path):
  """A workdir written with other parameters (older code, other settings) is not restored
  into this run's state: a ValueError that names the folder to remove."""
  model, loss_fn, arrays = _problem()
  mesh = sharding.make_mesh(devices=jax.devices()[:1])
  start = jax.device_get(model.init(jax.random.key(3), arrays[0][:1]))
  common = dict(workdir=str(tmp_path), mesh=mesh, optimizer=optax.sgd(0.1), train_arrays=arrays,
                loss_fn=lambda p, b, k: loss_fn(p["model"], b, k), batch_size=16, num_steps=2,
                seed=0, checkpoint_every=2)
  train.fit(init_params={"model": start, "extra": {"w": np.zeros(3, np.float32)}}, **common)
  with pytest.raises(ValueError, match="does not match this run's training state.*remove"):
    train.fit(init_params={"model": start}, **common)


def test_batches_are_deterministic_epoch_permutations():
  a = [train.batch_indices(0, t, 10, 3) for t in range(6)]
  assert all(np.array_equal(x, y) for x, y in zip(a, [train.batch_indices(0, t, 10, 3)
                                                       for t in range(6)]))
  epoch0 = np.concatenate(a[:3])
  assert len(set(epoch0)) == 9  # no repeats within an epoch
  assert not np.array_equal(a[0], a[3])  # a new permutation each epoch


def test_nonfinite_loss_stops_without_checkpoint(tmp_path):
  with pytest.raises(train.NonFiniteLossError, match="non-finite loss"):
    _fit(tmp_path / "nan", sharding.make_mesh(), optimizer=optax.sgd(1e30))
  ckpt = tmp_path / "nan" / "checkpoints"
  assert not ckpt.exists() or not any(ckpt.iterdir())


def test_bad_batch_and_mesh():
  with pytest.raises(ValueError):
    sharding.make_mesh({"data": 3})
  with pytest.raises(ValueError):
    sharding.make_mesh({"model": 8})


# fit_replicas: R seed replicas in one program.

_R, _N, _D = 3, 20, 4


def _replica_problem():
  """Per-replica linear regressions with a stochastic, per-replica-weighted loss."""
  rng = np.random.default_rng(1)
  x_NxD = rng.normal(size=(_N, _D)).astype(np.float32)  # one design, shared by the replicas
  w_RxD = rng.normal(size=(_R, _D)).astype(np.float32)
  y_RxN = (x_NxD @ w_RxD.T).T.astype(np.float32) + 0.1
  scale_R = np.array([1.0, 0.5, 2.0], np.float32)  # replica_args: a per-replica loss weight

  def init_params(key):
    return {"w": 0.1 * jax.random.normal(key, (_D,)), "b": jnp.zeros(())}

  def loss_fn(params, batch, key, scale):
    x_B, y_B = batch
    pred_B = x_B @ params["w"] + params["b"]
    noise_B = 1.0 + 0.1 * jax.random.normal(key, y_B.shape)  # uses the step key
    return scale * noise_B * (pred_B - y_B) ** 2, {"abs_err": jnp.abs(pred_B - y_B)}

  def eval_fn(params, arrays, scale):
    x, y = arrays
    return {"mse": jnp.mean((x @ params["w"] + params["b"] - y) ** 2), "scale": scale}

  return x_NxD, y_RxN, scale_R, init_params, loss_fn, eval_fn


def _replica_fit(mesh, shared_x: bool, **kw):
  x, y, scale, init_params, loss_fn, eval_fn = _replica_problem()
  keys = jax.random.split(jax.random.key(0), 2 * _R)
  x_train = x if shared_x else np.stack([x] * _R)
  args = dict(mesh=mesh, init_params=init_params, loss_fn=loss_fn, optimizer=optax.adam(0.05),
              init_keys=keys[:_R], step_keys=keys[_R:], train_arrays=(x_train, y),
              stacked=(not shared_x, True), batch_size=5, num_steps=6, batch_seeds=[4, 5, 6],
              num_examples=[_N, 12, _N], replica_args=scale, eval_fn=eval_fn,
              eval_arrays=(x, y), eval_stacked=(False, True))
  args.update(kw)
  return train.fit_replicas(**args), keys


def test_fit_replicas_equals_a_python_loop_and_8_devices_equal_1():
  """Each replica trains as a plain loop of the same optax steps would; 8 devices = 1 device."""
  one, keys = _replica_fit(sharding.make_mesh(devices=jax.devices()[:1]), shared_x=False)
  x, y, scale, init_params, loss_fn, eval_fn = _replica_problem()
  opt = optax.adam(0.05)
  idx = train.sample_batch_indices([4, 5, 6], [_N, 12, _N], 6, 5)

  @jax.jit
  def ref_step(params, opt_state, x_B, y_B, key, s):
    def mean_loss(p):
      loss_B, aux = loss_fn(p, (x_B, y_B), key, s)
      return jnp.mean(loss_B), jnp.mean(aux["abs_err"])
    (loss, abs_err), g = jax.value_and_grad(mean_loss, has_aux=True)(params)
    upd, opt_state = opt.update(g, opt_state, params)
    return optax.apply_updates(params, upd), opt_state, loss, abs_err

  for r in range(_R):  # the reference: one replica at a time, step by step
    params = init_params(keys[r])
    opt_state = opt.init(params)
    for t in range(6):
      b = idx[r, t]
      params, opt_state, loss, abs_err = ref_step(params, opt_state, x[b], y[r, b],
                                                  jax.random.fold_in(keys[_R + r], t), scale[r])
      np.testing.assert_allclose(one.metrics["loss"][r, t], loss, rtol=1e-5)
      np.testing.assert_allclose(one.metrics["abs_err"][r, t], abs_err, rtol=1e-5)
    for name in params:
      np.testing.assert_allclose(one.params[name][r], params[name], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one.evals["mse"][r], eval_fn(params, (x, y[r]), scale[r])["mse"],
                               rtol=1e-5)
  assert one.metrics["loss"].shape == (_R, 6) and one.evals["scale"].tolist() == scale.tolist()
  assert one.params["w"].shape == (_R, _D) and one.step_s > 0
  # 8 devices (3 replicas padded to 8), the design shared (replicated, not stacked): the same.
  eight, _ = _replica_fit(sharding.make_mesh(), shared_x=True)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
               (one.params, one.metrics, one.evals), (eight.params, eight.metrics, eight.evals))


def test_fit_replicas_with_step_hands_each_step_number_to_the_loss():
  """``with_step``: step t's loss gets t after its key (a schedule inside the loss); the
  problem's loss scaled by a schedule that is 1 at every step trains as without it."""
  mesh = sharding.make_mesh(devices=jax.devices()[:1])
  base, _ = _replica_fit(mesh, shared_x=True)
  _, _, _, _, loss_fn, _ = _replica_problem()

  def scheduled(params, batch, key, t, scale):
    loss_B, aux = loss_fn(params, batch, key, scale)
    ones_B = jnp.ones_like(loss_B)
    return loss_B * (1.0 + 0.0 * t), {**aux, "t": t * ones_B}

  got, _ = _replica_fit(mesh, shared_x=True, loss_fn=scheduled, with_step=True)
  np.testing.assert_array_equal(got.metrics["t"], np.tile(np.arange(6.0), (_R, 1)))
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6),
               (base.params, base.metrics["loss"]), (got.params, got.metrics["loss"]))


def test_replica_step_is_the_trainers_step():
  """make_replica_step (the every-paper test's step) is one step of make_replica_trainer's loop."""
  mesh = sharding.make_mesh()
  x, y, scale, init_params, loss_fn, _ = _replica_problem()
  opt = optax.sgd(0.1)
  keys = jax.random.split(jax.random.key(3), 2 * _R)
  idx_RxTxB = train.sample_batch_indices([1, 2, 3], [_N] * _R, 1, 5)
  trainer = train.make_replica_trainer(mesh=mesh, init_params=init_params, loss_fn=loss_fn,
                                       optimizer=opt, stacked=(False, True))
  params_T, metrics_T, evals = trainer(keys[:_R], keys[_R:], idx_RxTxB, (x, y), scale)
  assert evals is None
  params0 = jax.jit(jax.vmap(init_params))(keys[:_R])
  step = train.make_replica_step(mesh=mesh, loss_fn=loss_fn, optimizer=opt, stacked=(False, True))
  params1, _, metrics1 = step(params0, jax.vmap(opt.init)(params0), keys[_R:], np.int32(0),
                              idx_RxTxB[:, 0], (x, y), scale)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7),
               params_T, params1)
  np.testing.assert_allclose(metrics_T["loss"][:, 0], metrics1["loss"], rtol=1e-6)


def test_fit_replicas_names_the_nonfinite_replica_and_checks_shapes():
  x, y, *_ = _replica_problem()
  y = y.copy()
  y[2] = np.nan
  with pytest.raises(train.NonFiniteLossError, match="loss at step 0 of replica 2"):
    _replica_fit(sharding.make_mesh(), shared_x=True, train_arrays=(x, y))
  for bad, match in ((dict(num_examples=[_N, 0, _N]), "num_examples"),
                     (dict(batch_seeds=[1, 2]), "leading size"),
                     (dict(train_arrays=(x, y[:, :10])), "disagree"),
                     (dict(stacked=(True,)), "stacked flags")):
    with pytest.raises(ValueError, match=match):
      _replica_fit(sharding.make_mesh(), shared_x=True, **bad)


def test_sample_batch_indices_per_replica_seed():
  idx = train.sample_batch_indices([0, 1, 0], [10, 4, 10], 50, 8)
  assert idx.shape == (3, 50, 8) and idx.dtype.kind == "i"
  assert idx[1].max() < 4 and idx[0].max() < 10 and idx.min() >= 0
  np.testing.assert_array_equal(idx[0], idx[2])  # a replica's draws depend on its seed alone
  alone = train.sample_batch_indices([1], [4], 50, 8)
  np.testing.assert_array_equal(alone[0], idx[1])
  assert len(np.unique(idx[0])) == 10  # with replacement, all examples drawn over 400 draws


def test_quiet_blocks_overlapping_in_threads_leave_logging_as_it_was():
  """Two threads' saves overlap (``common.map_seeds``): orbax's INFO stays dropped until the
  last block closes, our lines and orbax's warnings pass, and nothing is left changed (a
  global verbosity saved and restored by each block was left at WARNING)."""
  handler = logging.get_absl_handler()
  before = (logging.get_verbosity(), list(handler.filters))

  def record(level, path):
    return pylogging.LogRecord("absl", level, path, 1, "m", None, None)

  orbax_info = record(pylogging.INFO, "/site-packages/orbax/checkpoint/manager.py")
  orbax_warning = record(pylogging.WARNING, "/site-packages/orbax/checkpoint/manager.py")
  ours = record(pylogging.INFO, "/reprojax/experiments/metrics.py")
  a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
  seen = []

  def first():
    with train.quiet():
      a_in.set()
      b_in.wait(5)
    a_out.set()

  def second():
    a_in.wait(5)
    with train.quiet():
      b_in.set()
      a_out.wait(5)  # the first block has closed, this one is still open
      seen.extend(bool(handler.filter(r)) for r in (orbax_info, orbax_warning, ours))

  threads = [threading.Thread(target=f) for f in (first, second)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(10)
  assert seen == [False, True, True]
  assert bool(handler.filter(orbax_info))
  assert (logging.get_verbosity(), list(handler.filters)) == before


def test_cached_pytree_restores_without_building_and_rebuilds_or_refuses_on_a_new_fingerprint(
    tmp_path):
  """The shared cache of trained weights: a second call with the same fingerprint restores
  the same arrays without calling ``build``; another fingerprint rebuilds (``retrain``, the
  default) or raises naming a fresh workdir (``raise``); a mapping fingerprint is its sorted
  JSON, so the order of its fields does not matter."""
  calls = []

  def build():
    calls.append(1)
    k = len(calls)
    return {"base": np.arange(3, dtype=np.float32) + k,
            "experts": {"w": np.full((4, 3), k, np.float32), "n": np.int32(7 * k)}}

  path = str(tmp_path / "zoo" / "oscillator")
  first = train.cached_pytree(path, {"seed": 0, "steps": 5}, build)
  assert len(calls) == 1 and (tmp_path / "zoo" / "oscillator.json").is_file()
  again = train.cached_pytree(path, {"steps": 5, "seed": 0}, build)
  assert len(calls) == 1
  jax.tree.map(np.testing.assert_array_equal, again, first)
  assert isinstance(again["experts"]["w"], np.ndarray)
  with pytest.raises(ValueError, match="fresh workdir"):
    train.cached_pytree(path, {"seed": 0, "steps": 6}, build, on_mismatch="raise")
  assert len(calls) == 1
  other = train.cached_pytree(path, {"seed": 0, "steps": 6}, build)
  assert len(calls) == 2 and float(other["experts"]["w"][0, 0]) == 2.0
  restored = train.cached_pytree(path, {"seed": 0, "steps": 6}, build, on_mismatch="raise")
  assert len(calls) == 2 and int(restored["experts"]["n"]) == 14
  os.remove(path + ".json")  # a checkpoint without its stamp is rebuilt
  train.cached_pytree(path, "a string fingerprint", build)
  assert len(calls) == 3
  with pytest.raises(ValueError, match="on_mismatch"):
    train.cached_pytree(path, "a string fingerprint", build, on_mismatch="keep")
