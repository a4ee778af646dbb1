"""Tests of algorithms.alft against tensorly and planted structure (issue 7, "what this issue must show")."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from algorithms import alft
from data import alft as dalft

SHAPE = (6, 5, 4)


def _mask(key, shape, density):
  m = (jax.random.uniform(key, shape) < density).astype(jnp.float64)
  return m.at[(0,) * len(shape)].set(1.0)


# ------------------------------------------------------------ 1. tensorly parity

def test_cp_als_matches_tensorly_masked_parafac():
  import tensorly as tl  # pylint: disable=g-import-not-at-top
  from tensorly.decomposition import parafac
  with jax.enable_x64(True):
    y = alft.cp_to_tensor(alft.init_cp(jax.random.key(1), SHAPE, 3, dtype=jnp.float64))
    y = y + 0.05 * jax.random.normal(jax.random.key(4), SHAPE, jnp.float64)
    mask = _mask(jax.random.key(2), SHAPE, 0.7)
    f0 = alft.init_cp(jax.random.key(3), SHAPE, 3, dtype=jnp.float64)
    factors, trace = alft.cp_als(y, mask, f0, n_iter=25)
    ours = np.asarray(alft.cp_to_tensor(factors))
    m, yn = np.asarray(mask), np.asarray(y)
    # tensorly reads the missing entries of its input in the first sweep; ours fills
    # them with the initial reconstruction, so hand tensorly exactly that tensor.
    start = m * yn + (1 - m) * np.asarray(alft.cp_to_tensor(f0))
    init = tl.cp_tensor.CPTensor((np.ones(3), [np.asarray(a) for a in f0]))
    cp, errs = parafac(start, 3, init=init, mask=m, n_iter_max=25, tol=0, linesearch=False,
                       return_errors=True)
    theirs = tl.cp_to_tensor(cp)
  np.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=0)
  # tensorly's error: ||X_filled - [[A]]|| / ||X_filled|| after each sweep
  filled = m * yn + (1 - m) * ours
  rel_ours = np.linalg.norm(filled - ours) / np.linalg.norm(filled)
  assert abs(rel_ours - float(errs[-1])) < 1e-6
  assert np.all(np.diff(np.asarray(trace.train_rmse_T)) <= 1e-9)  # ALS never increases the fit


# --------------------------------------------------------- 2. noiseless recovery

def _lowrank(key, shape, rank):
  keys = jax.random.split(key, len(shape))
  return alft.cp_to_tensor(tuple(jax.random.normal(k, (s, rank), jnp.float64)
                                 for k, s in zip(keys, shape)))


def test_noiseless_recovery_every_als_method():
  """Held-out entries of a noiseless rank-2 tensor are recovered to ~1e-8 at the true rank.

  ALS on incomplete tensors has swamps (local minima); as in practice we restart
  from 3 seeds (one vmapped fit over seeds and ranks) and keep, for each rank,
  the restart with the lowest *training* error.
  """
  shape = (8, 7, 6)
  with jax.enable_x64(True):
    y = _lowrank(jax.random.key(0), shape, 2)
    train = _mask(jax.random.key(1), shape, 0.6)
    test = 1.0 - train
    scale = float(jnp.std(y))
    keys = jax.random.split(jax.random.key(2), 3)
    rms = alft.rank_mask(jnp.array([2]), 3)  # vmapped over ranks: rank 2 of R_max 3

    def best_over_seeds(fit_one):  # fit_one(key, rank_mask) -> (prediction, train trace)
      pred, tr = jax.vmap(lambda k: jax.vmap(lambda rm: fit_one(k, rm))(rms))(keys)
      best = jnp.argmin(tr[:, :, -1], axis=0)  # per rank, by training error only
      return [alft.heldout_errors(pred[best[j], j], y, test)[0] for j in range(rms.shape[0])]

    def cp_one(k, rm):
      f, tr = alft.cp_als(y, train, alft.init_cp(k, shape, 3, dtype=jnp.float64), rm, n_iter=300)
      return alft.cp_to_tensor(f), tr.train_rmse_T

    def lft_one(k, rm):
      p, tr = alft.alft_als(y, train, alft.init_alft(k, shape, 3, dtype=jnp.float64), (), rm,
                            n_iter=500, l2=0.0)
      return alft.alft_predict(p, ()), tr.train_rmse_T

    errs = {"cp_als": best_over_seeds(cp_one), "lft_als": best_over_seeds(lft_one)}
    core0, tf0 = alft.init_tucker(jax.random.key(4), shape, (2, 2, 2), dtype=jnp.float64)
    core, tf, _ = alft.tucker_als(y, train, core0, tf0, n_iter=300)
    errs["tucker_als"] = [alft.heldout_errors(alft.tucker_to_tensor(core, tf), y, test)[0]]
  for name, es in errs.items():
    for e in es:
      assert float(e) / scale < 1e-8, (name, float(e) / scale)


def _planted_aligned(key, size=9, n_time=5):
  """Noiseless rank-1 CP plus a one-sided aligned term h(j - i) v[k]."""
  k1, k2, k3, k4 = jax.random.split(key, 4)
  a = [jax.random.uniform(k, (s, 1), jnp.float64, 0.5, 1.5)
       for k, s in zip((k1, k2, k3), (size, size, n_time))]
  d = jnp.arange(-(size - 1), size)
  h = jnp.where((d >= 1) & (d <= 3), jnp.array([0.0, 2.0, 1.0, 0.5])[jnp.clip(d, 0, 3)], 0.0)
  v = jax.random.uniform(k4, (n_time,), jnp.float64, 0.5, 1.5)
  idx = jnp.arange(size)
  aligned = h[idx[None, :] - idx[:, None] + size - 1][:, :, None] * v
  return alft.cp_to_tensor(a) + aligned, aligned, h


def test_alft_recovers_planted_aligned_structure():
  size, n_time = 9, 5
  pairs = ((0, 1),)
  with jax.enable_x64(True):
    y, aligned, h = _planted_aligned(jax.random.key(0), size, n_time)
    train = _mask(jax.random.key(1), y.shape, 0.6)
    test = 1.0 - train
    w = jnp.asarray(alft.integer_offset_basis(size, size))
    p0 = alft.init_alft(jax.random.key(2), y.shape, 1, pairs=pairs, bases=(w,), dtype=jnp.float64)
    p, _ = alft.alft_als(y, train, p0, (w,), pairs=pairs, n_iter=800, l2=0.0, fit_bias=False)
    alft_err = float(alft.heldout_errors(alft.alft_predict(p, (w,), pairs), y, test)[0])
    got_h = np.asarray(p.offsets[0][:, 0])
  scale = float(jnp.std(y))
  assert alft_err / scale < 1e-7, alft_err / scale
  # the aligned term carries the band: without it the rank-1 CP part leaves a large error
  no_pair = float(alft.heldout_errors(alft.alft_predict(p._replace(offsets=(0 * p.offsets[0],)),
                                                        (w,), pairs), y, test)[0])
  assert no_pair / scale > 0.1
  # the recovered offset function is the planted one up to the scale traded with V
  want = np.asarray(h)
  corr = float(np.dot(got_h, want) / (np.linalg.norm(got_h) * np.linalg.norm(want)))
  assert abs(corr) > 1 - 1e-6, corr
  assert np.all(np.abs(got_h[want == 0]) < 1e-6 * np.abs(got_h).max())  # asymmetric: no response below the diagonal


# --------------------------------------------------------------- properties

def test_rank_mask_equals_smaller_rank():
  with jax.enable_x64(True):
    y = _lowrank(jax.random.key(0), SHAPE, 3)
    mask = _mask(jax.random.key(1), SHAPE, 0.7)
    f0 = alft.init_cp(jax.random.key(2), SHAPE, 4, dtype=jnp.float64)
    big, _ = alft.cp_als(y, mask, f0, alft.rank_mask(2, 4), n_iter=10)
    small, _ = alft.cp_als(y, mask, tuple(a[:, :2] for a in f0), n_iter=10)
  for a, b in zip(big, small):
    np.testing.assert_allclose(np.asarray(a[:, :2]), np.asarray(b), atol=1e-10)
    assert np.all(np.asarray(a[:, 2:]) == 0)


def test_missing_values_are_ignored():
  y = alft.cp_to_tensor(alft.init_cp(jax.random.key(0), SHAPE, 2))
  mask = _mask(jax.random.key(1), SHAPE, 0.6).astype(jnp.float32)
  f0 = alft.init_cp(jax.random.key(2), SHAPE, 2)
  a, _ = alft.cp_als(y, mask, f0, n_iter=5)
  b, _ = alft.cp_als(jnp.where(mask > 0, y, jnp.nan), mask, f0, n_iter=5)
  for u, v in zip(a, b):
    np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_offset_basis_is_asymmetric_toeplitz_and_interpolates():
  w = alft.integer_offset_basis(3, 4)
  assert w.shape == (3, 4, 6)
  assert np.all(w.sum(-1) == 1)
  idx = np.argmax(w, -1)
  assert all(idx[i, j] == j - i + 2 for i in range(3) for j in range(4))
  # piecewise-linear interpolation is exact on linear functions
  up, uq, kn = np.array([1.0, 2.5]), np.array([3.0, 4.2, 7.9]), np.linspace(-2, 8, 6)
  wi = alft.offset_basis(up, uq, kn)
  np.testing.assert_allclose(wi @ (3 * kn + 1), 3 * (uq[None] - up[:, None]) + 1, atol=1e-12)
  # the symmetric ablation folds d and -d onto one knot
  ws = alft.offset_basis(np.arange(3), np.arange(3), np.arange(3), symmetric=True)
  np.testing.assert_array_equal(ws, np.transpose(ws, (1, 0, 2)))


# -------------------------------------------------------------- 4. bad inputs

def _args():
  y = alft.cp_to_tensor(alft.init_cp(jax.random.key(0), SHAPE, 2))
  mask = jnp.ones(SHAPE)
  return y, mask, alft.init_cp(jax.random.key(1), SHAPE, 2)


def test_bad_inputs_raise_value_error():
  y, mask, f0 = _args()
  p0 = alft.init_alft(jax.random.key(2), SHAPE, 2)
  with pytest.raises(ValueError, match="mask shape"):
    alft.cp_als(y, jnp.ones((6, 5)), f0)
  with pytest.raises(ValueError, match="mask shape"):
    alft.alft_als(y, jnp.ones((6, 5, 3)), p0)
  with pytest.raises(ValueError, match=">= 1"):
    alft.init_cp(jax.random.key(0), SHAPE, 0)
  with pytest.raises(ValueError, match=">= 1"):
    alft.init_alft(jax.random.key(0), SHAPE, 0)
  with pytest.raises(ValueError, match="rank"):
    alft.cp_als(y, mask, tuple(a[:, :0] for a in f0))
  with pytest.raises(ValueError, match="rank must be >= 1"):
    alft.cp_als(y, mask, f0, jnp.zeros(2))
  with pytest.raises(ValueError, match=">= 1"):
    alft.rank_mask(jnp.array([0, 2]), 3)
  with pytest.raises(ValueError, match="all entries are missing"):
    alft.alft_als(y, jnp.zeros(SHAPE), p0)
  with pytest.raises(ValueError, match="all entries are missing"):
    alft.tucker_als(y, jnp.zeros(SHAPE), *alft.init_tucker(jax.random.key(0), SHAPE, (2, 2, 2)))
  with pytest.raises(ValueError, match="finite"):
    alft.cp_grad(y.at[1, 1, 1].set(jnp.inf), mask, f0)
  with pytest.raises(ValueError, match="finite"):
    alft.alft_grad(y.at[0, 1, 2].set(jnp.nan), mask, p0)
  with pytest.raises(ValueError, match="pair"):
    alft.init_alft(jax.random.key(0), SHAPE, 2, pairs=((0, 0),), bases=(np.zeros((6, 6, 3)),))
  with pytest.raises(ValueError, match="basis"):
    alft.init_alft(jax.random.key(0), SHAPE, 2, pairs=((0, 1),), bases=(np.zeros((6, 6, 3)),))


# ------------------------------------------------------------------- data

def test_observation_masks_density_and_split():
  train, test = dalft.observation_masks(jax.random.key(0), (10, 10, 4), 0.05)
  assert float(train.sum()) == 20 and float((train * test).sum()) == 0
  assert float((train + test).min()) == 1
  dens = jnp.array([0.05, 0.6])
  tr, _ = jax.vmap(lambda d: dalft.observation_masks(jax.random.key(0), (10, 10, 4), d))(dens)
  np.testing.assert_array_equal(tr.sum((1, 2, 3)), [20, 240])
  with pytest.raises(ValueError):
    dalft.observation_masks(jax.random.key(0), (3, 3), 1.5)


def test_aligned_tensor_and_control():
  d = dalft.aligned_tensor(jax.random.key(0), size=8, n_time=5, noise_std=0.0)
  c = dalft.aligned_tensor(jax.random.key(0), size=8, n_time=5, noise_std=0.0, control=True)
  assert d.y.shape == (8, 8, 5)
  # same values, only modes 0 and 1 permuted
  np.testing.assert_allclose(np.sort(np.asarray(d.y).ravel()), np.sort(np.asarray(c.y).ravel()))
  # aligned part is one-sided: nothing on or below the diagonal (onset 1)
  a = np.asarray(d.aligned)
  assert np.all(a[np.tril_indices(8)[0], np.tril_indices(8)[1]] == 0) and a.max() > 0


def test_kinetic_loader_and_holdout():
  k = dalft.load_kinetic()  # shipped inside the tensorly package (a dependency)
  assert k.y.shape == (64, 12, 10, 60) and k.observed.shape == k.y.shape
  assert 1500 < (~k.observed).sum() < 2000
  tr, te = dalft.holdout_split(k.observed, seed=0)
  assert not np.any(tr & te) and np.array_equal(tr | te, k.observed)
  assert abs(te.sum() / k.observed.sum() - 0.2) < 1e-4
  tr2, _ = dalft.holdout_split(k.observed, seed=0)
  assert np.array_equal(tr, tr2)
  with pytest.raises(FileNotFoundError):
    dalft.load_kinetic("/nonexistent/folder")


def test_gradient_fits_decrease_the_loss_and_respect_nonnegativity():
  y = alft.cp_to_tensor(alft.init_cp(jax.random.key(0), SHAPE, 2))
  mask = _mask(jax.random.key(1), SHAPE, 0.7).astype(jnp.float32)
  _, tr = alft.cp_grad(y, mask, alft.init_cp(jax.random.key(2), SHAPE, 2), n_iter=300, lr=0.05)
  assert float(tr.train_rmse_T[-1]) < 0.1 * float(tr.train_rmse_T[0])
  core, fs, tr = alft.tucker_grad(y, mask, *alft.init_tucker(jax.random.key(3), SHAPE, (2, 2, 2)),
                                  n_iter=300, lr=0.05)
  assert float(tr.train_rmse_T[-1]) < 0.1 * float(tr.train_rmse_T[0])
  assert core.shape == (2, 2, 2) and [f.shape for f in fs] == [(6, 2), (5, 2), (4, 2)]
  p, tr = alft.alft_grad(y, mask, alft.init_alft(jax.random.key(4), SHAPE, 2), n_iter=300,
                         lr=0.05, nonneg=True)
  assert float(tr.train_rmse_T[-1]) < 0.2 * float(tr.train_rmse_T[0])
  assert all(float(jnp.min(a)) >= 0 for a in p.factors + p.biases)  # non-negative LFT
