"""del-NO experiment: the vmapped replica trainer equals training each replica alone."""

import jax
import numpy as np

from experiments.del_no import experiment
from experiments.fno.experiment import Normalizer
from models import deeponet
from models import del_no


def test_replicas_equal_separate_runs():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(2, 12, 16)).astype(np.float32)
  y = np.roll(x, 2, axis=-1) + 0.1
  yn = Normalizer(y[0], True)
  model = del_no.DelNO(deeponet.DeepONet(branch=(8,), trunk=(8,), basis=4))
  opt = del_no.optimizer(1e-2)
  n_R, seeds_R = np.array([12, 6]), np.array([3, 4])
  both, _, _ = experiment.train_replicas(model, opt, x, y, n_R, seeds_R, yn, 4, 4)
  for r in range(2):
    one, _, _ = experiment.train_replicas(model, opt, x[r:r + 1], y[r:r + 1], n_R[r:r + 1],
                                          seeds_R[r:r + 1], yn, 4, 4)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a[r], b[0], rtol=2e-5, atol=2e-6),
                 both, one)
  orders = del_no.learned_orders(both)["beta"]
  assert orders.shape == (2, 2) and not np.allclose(orders[0], orders[1])
