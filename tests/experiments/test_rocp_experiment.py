"""The ROCP experiment's vmapped evaluation over random splits, on a mesh of many devices."""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.data import rocp as rocp_data
from reprojax.experiments import sharding
from reprojax.experiments.rocp import experiment


def test_evaluate_on_eight_devices_equals_one_device():
  """5 splits (padded to 8 on the 8 fake CPU devices) x 2 alphas, every method and metric."""
  rng = np.random.default_rng(0)
  n = 48
  p_mal = rng.beta(0.4, 0.6, size=n)
  probs = jnp.asarray(np.stack([1 - p_mal, p_mal], 1).astype(np.float32))
  labels = jnp.asarray((rng.uniform(size=n) < p_mal).astype(np.int32))
  loss = jnp.asarray(rocp_data.medical_losses()["mild"])
  critical = jnp.asarray(rocp_data.medical_critical())
  alphas = jnp.asarray([0.1, 0.2], jnp.float32)
  keys = jax.random.split(jax.random.key(0), 5)
  mesh8 = sharding.make_mesh({"data": -1})
  assert mesh8.shape["data"] == 8
  mesh1 = sharding.make_mesh(devices=jax.devices()[:1])
  args = (keys, probs, labels, loss, critical, alphas)
  got8 = np.asarray(experiment.evaluate(*args, n_cal=24, mesh=mesh8))
  got1 = np.asarray(experiment.evaluate(*args, n_cal=24, mesh=mesh1))
  assert got8.shape == (5, 2, len(experiment.METHODS), len(experiment.METRICS))
  assert np.all(np.isfinite(got8))
  # Splits never communicate and each runs the same per-split program, so the
  # results agree exactly (they did when this test was written; a compiler that
  # reorders the means' sums could need a 1e-6 tolerance here).
  np.testing.assert_array_equal(got8, got1)
