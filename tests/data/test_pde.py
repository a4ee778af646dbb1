"""The tfds builders: generated once, cached, read back identically; a missing dataset is clear."""

import numpy as np
import pytest

from reprojax.data import pde


def test_generate_once_and_cache(tmp_path):
  kw = dict(resolution=16, solver_resolution=32, n_train=5, n_test=3, num_steps=50,
            data_dir=str(tmp_path))
  first = pde.load("burgers", **kw)
  assert first.x_train.shape == (5, 16) and first.y_test.shape == (3, 16)
  again = pde.load("burgers", generate=False, **kw)  # from the cache, no generation
  for a, b in zip(first, again):
    np.testing.assert_array_equal(a, b)
  # The training inputs are the GRF subsampled from the solver grid; examples are in id order.
  assert not np.allclose(first.x_train[0], first.x_train[1])


def test_cache_key_includes_the_constant_mode(tmp_path):
  """The released law fixes the input's mean at 0: its cache entry is not the old random-mean one.

  Generated with the constant mode, the released-law dataset cannot be read back as the
  zero-mean one (generate=False fails rather than serving the stale data), and the
  zero-mean inputs are the same draws less their means.
  """
  released = pde.BURGERS_RELEASED_CODE
  kw = dict(resolution=16, solver_resolution=32, n_train=5, n_test=3, num_steps=50,
            data_dir=str(tmp_path), viscosity=released["viscosity"], grf_params=released["grf"])
  names = {c: pde.builder("burgers", grf_constant_mode=c, **kw).builder_config.name
           for c in (True, False)}
  assert names[True] != names[False] and names[False].endswith("_mean0")
  old = pde.load("burgers", grf_constant_mode=True, **kw)
  with pytest.raises(FileNotFoundError, match="generate"):
    pde.load("burgers", grf_constant_mode=False, generate=False, **kw)
  new = pde.load("burgers", grf_constant_mode=False, **kw)
  np.testing.assert_allclose(new.x_train.mean(-1), 0.0, atol=1e-6)
  assert np.abs(old.x_train.mean(-1)).min() > 1e-3
  np.testing.assert_allclose(new.x_train, old.x_train - old.x_train.mean(-1, keepdims=True),
                             atol=1e-5)


def test_darcy_subsamples_solver_grid(tmp_path):
  d = pde.load("darcy", resolution=9, solver_resolution=17, n_train=3, n_test=1,
               data_dir=str(tmp_path))
  assert d.x_train.shape == (3, 9, 9)
  assert set(np.unique(d.x_train)) <= {3.0, 12.0}
  np.testing.assert_array_equal(d.y_train[:, 0, :], 0.0)  # Dirichlet boundary


def test_missing_dataset_is_a_clear_error(tmp_path):
  with pytest.raises(FileNotFoundError, match="generate"):
    pde.load("burgers", resolution=16, solver_resolution=32, n_train=2, n_test=1,
             data_dir=str(tmp_path), generate=False)


def test_bad_config():
  with pytest.raises(ValueError):
    pde.builder("navier_stokes", resolution=16)
  with pytest.raises(ValueError):
    pde.builder("burgers", resolution=16, solver_resolution=40)
  with pytest.raises(ValueError):
    pde.builder("darcy", resolution=10, solver_resolution=20)
