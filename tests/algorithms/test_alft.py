"""Tests of algorithms.alft against tensorly and planted structure (issue 7, "what this issue must show")."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import alft
from reprojax.data import alft as dalft

SHAPE = (6, 5, 4)  # float32 tests
SHAPE64 = (8, 7, 6)  # float64 tests
N_ITER = 300  # sweeps of every float64 fit: one compiled CP-ALS (SHAPE64, R_max 3) serves three tests
R_MAX = 3


# Each test's computation is jitted as a whole (data, initialisation, fit): one compile
# instead of dozens of eagerly compiled small ops; errors are then computed in numpy.

@functools.partial(jax.jit, static_argnums=(1, 2))
def _mask(key, shape, density):
  m = (jax.random.uniform(key, shape) < density).astype(jnp.float64)
  return m.at[(0,) * len(shape)].set(1.0)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _lowrank(key, shape, rank):
  keys = jax.random.split(key, len(shape))
  return alft.cp_to_tensor(tuple(jax.random.normal(k, (s, rank), jnp.float64)
                                 for k, s in zip(keys, shape)))


@jax.jit
def _cp64(y, mask, key, rank_mask):
  """Float64 CP-ALS on SHAPE64 from ``init_cp(key)``: ``(factors0, factors, reconstruction, trace)``."""
  f0 = alft.init_cp(key, SHAPE64, R_MAX, dtype=jnp.float64)
  factors, trace = alft.cp_als(y, mask, f0, rank_mask, n_iter=N_ITER)
  return f0, factors, alft.cp_to_tensor(factors), trace


def _rel_heldout(pred, y, test):
  """Held-out RMSE relative to the tensor's std (numpy)."""
  pred, y, test = (np.asarray(a) for a in (pred, y, test))
  return float(np.sqrt(np.sum(test * (pred - y) ** 2) / test.sum()) / y.std())


# ------------------------------------------------------------ 1. tensorly parity

def _tensorly_parafac(y, mask, factors0, rank):
  """tensorly's masked parafac from ``factors0[:, :rank]``, no line search, N_ITER sweeps."""
  import tensorly as tl  # pylint: disable=g-import-not-at-top
  from tensorly.decomposition import parafac
  f0 = [np.asarray(a[:, :rank]) for a in factors0]
  # tensorly reads the missing entries of its input in the first sweep; ours fills
  # them with the initial reconstruction, so hand tensorly exactly that tensor.
  start = mask * y + (1 - mask) * tl.cp_to_tensor((np.ones(rank), f0))
  cp, errs = parafac(start, rank, init=tl.cp_tensor.CPTensor((np.ones(rank), f0)), mask=mask,
                     n_iter_max=N_ITER, tol=0, linesearch=False, return_errors=True)
  return tl.cp_to_tensor(cp), float(errs[-1])


def test_cp_als_matches_tensorly_masked_parafac():
  """Same iterates as tensorly from the same start; also at a rank set by a rank mask, and
  with NaN at the missing entries (which must be ignored)."""
  with jax.enable_x64(True):
    y = _lowrank(jax.random.key(1), SHAPE64, 2)  # (the noiseless test's compile)
    y = y + 0.05 * np.asarray(jax.random.normal(jax.random.key(4), SHAPE64, jnp.float64))
    mask = _mask(jax.random.key(2), SHAPE64, 0.7)
    full = alft.rank_mask(R_MAX, R_MAX)
    f0, factors, ours, trace = _cp64(y, mask, jax.random.key(3), full)
    _, with_nan, _, _ = _cp64(jnp.where(mask > 0, y, jnp.nan), mask, jax.random.key(3), full)
    _, rank2, ours2, _ = _cp64(y, mask, jax.random.key(3), alft.rank_mask(2, R_MAX))
  m, yn, ours = np.asarray(mask), np.asarray(y), np.asarray(ours)
  theirs, err = _tensorly_parafac(yn, m, f0, R_MAX)
  np.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=0)
  # tensorly's error: ||X_filled - [[A]]|| / ||X_filled|| after the last sweep
  filled = m * yn + (1 - m) * ours
  assert abs(np.linalg.norm(filled - ours) / np.linalg.norm(filled) - err) < 1e-6
  assert np.all(np.diff(np.asarray(trace.train_rmse_T)) <= 1e-9)  # ALS never increases the fit
  for u, v in zip(factors, with_nan):  # missing values are never read
    np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
  theirs2, _ = _tensorly_parafac(yn, m, f0, 2)  # R_max 3 with the third component off = rank 2
  np.testing.assert_allclose(np.asarray(ours2), theirs2, atol=1e-6, rtol=0)
  assert all(np.all(np.asarray(a[:, 2:]) == 0) for a in rank2)  # the switched-off column stays 0


# --------------------------------------------------------- 2. noiseless recovery

@jax.jit
def _lft64(y, mask, key, rank_mask):
  p, trace = alft.alft_als(y, mask, alft.init_alft(key, SHAPE64, R_MAX, dtype=jnp.float64), (),
                           rank_mask, n_iter=N_ITER, l2=0.0)
  return alft.alft_predict(p, ()), trace


@jax.jit
def _tucker64(y, mask, key):
  core, factors, _ = alft.tucker_als(y, mask, *alft.init_tucker(key, SHAPE64, (2, 2, 2),
                                                                  dtype=jnp.float64), n_iter=N_ITER)
  return alft.tucker_to_tensor(core, factors)


def test_noiseless_recovery_every_als_method():
  """Held-out entries of a noiseless rank-2 tensor are recovered to ~1e-8 at the true rank.

  ALS on incomplete tensors has swamps (local minima); as in practice we restart
  from 3 seeds and keep the restart with the lowest *training* error. CP and LFT
  allocate ``R_max = 3`` components and switch the third off with a rank mask.
  """
  with jax.enable_x64(True):
    y = _lowrank(jax.random.key(0), SHAPE64, 2)
    train = _mask(jax.random.key(1), SHAPE64, 0.6)
    rm = alft.rank_mask(2, R_MAX)
    keys = jax.random.split(jax.random.key(2), 3)
    cp = [_cp64(y, train, k, rm)[2:] for k in keys]  # one compile, three restarts
    lft = [_lft64(y, train, k, rm) for k in keys]
    tucker = _tucker64(y, train, jax.random.key(4))
  test = 1.0 - np.asarray(train)
  errs = {"tucker_als": _rel_heldout(tucker, y, test)}
  for name, fits in (("cp_als", cp), ("lft_als", lft)):
    pred = min(fits, key=lambda f: float(f[1].train_rmse_T[-1]))[0]  # by training error only
    errs[name] = _rel_heldout(pred, y, test)
  for name, e in errs.items():
    assert e < 1e-8, (name, e)


@functools.partial(jax.jit, static_argnums=(1, 2))  # one compile instead of many eager ops
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


@functools.partial(jax.jit, static_argnums=(0, 1))
def _fit_planted(size, n_time):
  """The planted tensor, its 60% training mask, the ALFT fit (rank 1, one aligned pair) and
  its predictions with and without the aligned term."""
  pairs = ((0, 1),)
  y, _, h = _planted_aligned(jax.random.key(0), size, n_time)
  train = _mask(jax.random.key(1), y.shape, 0.6)
  w = jnp.asarray(alft.integer_offset_basis(size, size))
  p0 = alft.init_alft(jax.random.key(2), y.shape, 1, pairs=pairs, bases=(w,), dtype=jnp.float64)
  p, _ = alft.alft_als(y, train, p0, (w,), pairs=pairs, n_iter=800, l2=0.0, fit_bias=False)
  no_pair = alft.alft_predict(p._replace(offsets=(0 * p.offsets[0],)), (w,), pairs)
  return y, train, h, p.offsets[0][:, 0], alft.alft_predict(p, (w,), pairs), no_pair


def test_alft_recovers_planted_aligned_structure():
  with jax.enable_x64(True):
    y, train, h, got_h, pred, no_pair = _fit_planted(9, 5)
  test = 1.0 - np.asarray(train)
  err = _rel_heldout(pred, y, test)
  assert err < 1e-7, err
  # the aligned term carries the band: without it the rank-1 CP part leaves a large error
  assert _rel_heldout(no_pair, y, test) > 0.1
  # the recovered offset function is the planted one up to the scale traded with V
  want, got_h = np.asarray(h), np.asarray(got_h)
  corr = float(np.dot(got_h, want) / (np.linalg.norm(got_h) * np.linalg.norm(want)))
  assert abs(corr) > 1 - 1e-6, corr
  assert np.all(np.abs(got_h[want == 0]) < 1e-6 * np.abs(got_h).max())  # asymmetric: no response below the diagonal


# --------------------------------------------------------------- properties

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


def test_cp_grad_first_step_follows_the_closed_form_gradient():
  """cp_grad's first Adam step is -lr * g / (|g| + eps), g the masked loss's gradient in closed form.

  The gradient of (1/2 sum_Omega (y - [[A, B, C]])^2 + l2/2 sum ||A_n||^2) / |Omega| with
  respect to A is (R_(1) (C kr B) + l2 A) / |Omega|, R the masked residual; numpy,
  independent of JAX's autodiff.
  """
  rng = np.random.default_rng(0)
  y = rng.normal(size=SHAPE)
  mask = (rng.uniform(size=SHAPE) < 0.6).astype(np.float64)
  f0 = [rng.normal(size=(n, 2)) for n in SHAPE]
  lr, l2 = 0.01, 0.3
  with jax.enable_x64(True):
    got, _ = alft.cp_grad(jnp.asarray(y), jnp.asarray(mask), [jnp.asarray(a) for a in f0],
                          n_iter=1, lr=lr, l2=l2)
  a, b, c = f0
  resid = (np.einsum("ir,jr,kr->ijk", a, b, c) - y) * mask
  n_obs = mask.sum()
  grads = [(np.einsum("ijk,jr,kr->ir", resid, b, c) + l2 * a) / n_obs,
           (np.einsum("ijk,ir,kr->jr", resid, a, c) + l2 * b) / n_obs,
           (np.einsum("ijk,ir,jr->kr", resid, a, b) + l2 * c) / n_obs]
  for g_got, f, g in zip(got, f0, grads):
    np.testing.assert_allclose(np.asarray(g_got), f - lr * g / (np.abs(g) + 1e-8), rtol=1e-12,
                               atol=1e-12)


def test_gradient_fit_decreases_the_loss_and_respects_nonnegativity():
  """Adam on the (A)LFT objective with the non-negative projection (non-negative LFT).

  (The CP gradient fit runs in the registry's common test; this one keeps the test
  budget by compiling one gradient fit.)
  """
  y = alft.cp_to_tensor(alft.init_cp(jax.random.key(0), SHAPE, 2))
  mask = (jax.random.uniform(jax.random.key(1), SHAPE) < 0.7).astype(jnp.float32)
  p, tr = alft.alft_grad(y, mask, alft.init_alft(jax.random.key(4), SHAPE, 2), n_iter=300,
                         lr=0.05, nonneg=True)
  assert float(tr.train_rmse_T[-1]) < 0.2 * float(tr.train_rmse_T[0])
  assert all(float(jnp.min(a)) >= 0 for a in p.factors + p.biases)  # non-negative LFT
