"""The training loop: sharded equals unsharded, deterministic batches, the non-finite guard."""

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
  """A global batch of 12 on 8 devices (padded to 16, masked) trains as on 1 device."""
  one = _fit(tmp_path / "one", sharding.make_mesh(devices=jax.devices()[:1]), batch_size=12)
  eight = _fit(tmp_path / "eight", sharding.make_mesh(), batch_size=12)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6),
               one.params, eight.params)
  # The padding is masked out: a batch of 16 (no padding) trains differently.
  sixteen = _fit(tmp_path / "sixteen", sharding.make_mesh(), batch_size=16)
  gaps = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max()),
                      one.params, sixteen.params)
  gap = max(jax.tree.leaves(gaps))
  assert gap > 1e-4


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
