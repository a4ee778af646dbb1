"""del-NO experiment: the replica trainer is per-replica (alone = batched) and mesh-independent (8 devices = 1)."""

import jax
import numpy as np

from experiments import sharding
from experiments.del_no import experiment
from experiments.fno.experiment import Normalizer
from models import deeponet
from models import del_no


def _problem():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(3, 12, 16)).astype(np.float32)
  y = np.roll(x, 2, axis=-1) + 0.1
  model = del_no.DelNO(deeponet.DeepONet(branch=(8,), trunk=(8,), basis=4))
  return model, del_no.optimizer(1e-2), x, y, Normalizer(y[0], True)


def test_replicas_sharded_over_8_devices_equal_1_device_and_separate_runs():
  model, opt, x, y, yn = _problem()
  n_R, seeds_R = np.array([12, 6, 9]), np.array([3, 4, 5])
  mesh8 = sharding.make_mesh({"data": -1})
  assert mesh8.shape["data"] == 8
  mesh1 = sharding.make_mesh(devices=jax.devices()[:1])
  p8, loss8, _ = experiment.train_replicas(model, opt, x, y, n_R, seeds_R, yn, 4, 4, mesh=mesh8)
  p1, loss1, _ = experiment.train_replicas(model, opt, x, y, n_R, seeds_R, yn, 4, 4, mesh=mesh1)
  assert loss8.shape == (4, 3)
  # Replicas never communicate: the 8-device run (3 replicas padded to 8) equals the 1-device
  # run up to the compiler's floating-point order over 4 Adam steps.
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), p8, p1)
  np.testing.assert_allclose(loss8, loss1, rtol=1e-5)
  e8 = experiment._evaluate(model, p8, x, y, yn, mesh8)
  e1 = experiment._evaluate(model, p1, x, y, yn, mesh1)
  np.testing.assert_allclose(e8, e1, rtol=1e-5)
  # A replica trains alike alone: its minibatches and initialisation depend on its seed only.
  one, _, _ = experiment.train_replicas(model, opt, x[1:2], y[1:2], n_R[1:2], seeds_R[1:2], yn,
                                        4, 4, mesh=mesh1)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a[1], b[0], rtol=2e-5, atol=2e-6), p1, one)
  orders = del_no.learned_orders(p8)["beta"]
  assert orders.shape == (3, 2) and not np.allclose(orders[0], orders[1])
