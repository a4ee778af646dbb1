"""The ising_aggregation experiment's trial axis on a mesh: 8 fake CPU devices equal one device."""

import jax
import numpy as np

from reprojax.experiments import sharding
from reprojax.experiments.ising_aggregation import experiment


def test_synthetic_trials_on_8_devices_equal_one_device():
  keys = jax.random.split(jax.random.key(3), 3)  # 3 trials: padded to 8 on the 8-device mesh
  args = dict(k=4, n=64, max_iters=3, clique_frac=0.6, num_starts=3, regime="bloc")
  mesh8 = sharding.make_mesh({"data": -1})
  assert mesh8.shape["data"] == 8
  got = experiment.synthetic_trials(keys, 1e-3, 1e-4, mesh=mesh8, **args)
  one = experiment.synthetic_trials(keys, 1e-3, 1e-4,
                                    mesh=sharding.make_mesh(devices=jax.devices()[:1]), **args)
  assert got.shape == (3, len(experiment.METHODS) + 1, 3)
  assert np.all(np.isfinite(np.asarray(got)))
  # replicas never communicate: the same numbers up to the compiler's float order
  np.testing.assert_allclose(np.asarray(got), np.asarray(one), rtol=1e-5, atol=1e-6)
