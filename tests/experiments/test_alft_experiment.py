"""The ALFT experiment's replica axis over a mesh: 8 fake CPU devices equal 1 device."""

import jax
import numpy as np

from reprojax.experiments import sharding
from reprojax.experiments.alft import experiment
from reprojax.experiments.alft.configs import quick


def _tiny_config():
  c = quick.get_config()
  c.n_seeds = 1
  c.densities = (0.3, 0.6)
  c.ranks = (3,)  # must hold synth.rank
  # every method runs through the same sharded call (experiment._fit_synthetic); LFT, the
  # ALS fit ALFT extends, compiles in half ALFT's time (test budget)
  c.methods = ("lft_als",)
  c.validation.methods = ()  # the validated fits run through the same sharded call
  c.n_iter_als = 4
  # the sizes of tests/algorithms/test_alft.py's data test: the generator compiles once per run
  c.synth.size, c.synth.n_time, c.synth.rank = 8, 5, 3
  return c


def test_synthetic_fits_on_eight_devices_equal_one_device():
  c = _tiny_config()
  y_B, tr_B, te_B, grid = experiment._synthetic_batch(c)  # 2 kinds x 1 seed x 2 densities = 4 replicas
  mesh8 = sharding.make_mesh(c.mesh.to_dict())
  assert mesh8.shape[sharding.DATA] == 8  # 4 replicas padded to 8, one per device
  eight, _ = experiment._fit_synthetic(c, y_B, tr_B, te_B, grid, mesh8)
  one, _ = experiment._fit_synthetic(c, y_B, tr_B, te_B, grid,
                                     sharding.make_mesh(devices=jax.devices()[:1]))
  (r8, m8), (r1, m1) = eight["lft_als"], one["lft_als"]
  assert r8.shape == (4, 1) and np.all(np.isfinite(r8))
  # independent replicas, one per device or four on one device: bitwise equal on CPU
  # (ALFT's fit, not run here, differs by at most 3e-7 on these inputs: float32 solve order)
  np.testing.assert_array_equal(r8, r1)
  np.testing.assert_array_equal(m8, m1)
