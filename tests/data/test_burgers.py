"""Burgers solver against the exact Cole-Hopf solution, with measured convergence orders."""

import jax
import numpy as np
import pytest

from reprojax.data import burgers
from reprojax.data import grf

AMPS, PHASES = (1.0, 0.5, 0.3), (0.0, 1.0, 2.0)


@pytest.fixture(autouse=True)
def x64():
  jax.config.update("jax_enable_x64", True)
  yield
  jax.config.update("jax_enable_x64", False)


def _error(s: int, num_steps: int, t: float = 1.0) -> float:
  x = np.arange(s) / s
  u = np.asarray(burgers.solve(burgers.sines(AMPS, PHASES, x), nu=0.1, t_final=t,
                               num_steps=num_steps))
  return float(np.abs(u - burgers.cole_hopf(AMPS, PHASES, x, t, nu=0.1)).max())


def test_fourth_order_in_time_against_cole_hopf():
  steps = [10, 20, 40, 80]
  errs = [_error(128, n) for n in steps]
  orders = [np.log2(a / b) for a, b in zip(errs, errs[1:])]
  print(f"\nBurgers ETDRK4 vs Cole-Hopf, max error at T=1 for {steps} steps: "
        f"{['%.2e' % e for e in errs]}; measured orders {['%.2f' % o for o in orders]}")
  assert errs[-1] < 1e-7
  assert np.mean(orders) > 3.5  # fourth-order scheme


def test_spectral_convergence_in_space():
  sizes = [8, 16, 32]
  errs = [_error(s, 400) for s in sizes]
  print(f"\nBurgers, max error for s={sizes}: {['%.2e' % e for e in errs]}")
  assert errs[0] > 100 * errs[1]  # faster than any power: spectral accuracy
  assert errs[2] < 1e-9


def test_float32_matches_float64():
  u0 = grf.periodic_grf_1d(jax.random.key(0), 4, 256, dtype=np.float64)
  u64 = np.asarray(burgers.solve(u0, num_steps=200))
  u32 = np.asarray(burgers.solve(u0.astype(np.float32), num_steps=200))
  assert u32.dtype == np.float32
  np.testing.assert_allclose(u32, u64, atol=2e-5 * np.abs(u64).max())


def test_grf_mode_variances():
  """Empirical variance of each Fourier mode against sigma^2 (lambda_k + tau^2)^-alpha."""
  s, n = 64, 4000
  u = np.asarray(grf.periodic_grf_1d(jax.random.key(1), n, s, dtype=np.float64))
  coef = np.fft.rfft(u, axis=-1) / s
  # u = c0 + sqrt2 sum_k (a_k cos + b_k sin) with a_k, b_k ~ N(0, theory_k), so the
  # normalised rfft coefficient c_k = (a_k - i b_k) / sqrt2 has E|c_k|^2 = theory_k.
  emp = (np.abs(coef[:, :5]) ** 2).mean(0)
  k = np.arange(5)
  theory = 625.0 * ((2 * np.pi * k) ** 2 + 25.0) ** -2.0
  np.testing.assert_allclose(emp, theory, rtol=0.1)


def _trig_coefficients(u, k_max):
  """Cosine and sine coefficients A_k, B_k of u(x_j), x_j = j / s, by direct projection."""
  s = u.shape[-1]
  x = np.arange(s) / s
  k = np.arange(k_max + 1)[:, None]
  return u @ np.cos(2 * np.pi * k * x).T * (2 / s), u @ np.sin(2 * np.pi * k * x).T * (2 / s)


@pytest.mark.parametrize("law", ["released", "text"])
def test_grf_trig_coefficient_variances(law):
  """Each cosine and sine coefficient against the released GRF1's law, sample by sample.

  gen_burgers1.m draws u0 = GRF1(s/2, 0, gamma=2.5, tau=7, sigma=49, "periodic"): the
  coefficients of cos(2 pi k x) and sin(2 pi k x) are sqrt(2) sigma ((2 pi k)^2 + tau^2)^(-gamma/2)
  times a standard normal, and the constant is its m = 0 exactly. The text's law keeps a
  random constant of variance sigma^2 tau^(-2 alpha) (the covariance's k = 0 eigenvalue).
  """
  sigma, tau, alpha = (49.0, 7.0, 2.5) if law == "released" else (25.0, 5.0, 2.0)
  s, n, k_max = 64, 8000, 8
  u = np.asarray(grf.periodic_grf_1d(jax.random.key(5), n, s, sigma=sigma, tau=tau, alpha=alpha,
                                     constant_mode=law == "text", dtype=np.float64))
  a, b = _trig_coefficients(u, k_max)
  k = np.arange(1, k_max + 1)
  std = np.sqrt(2) * sigma * ((2 * np.pi * k) ** 2 + tau**2) ** (-alpha / 2)
  # The sample variance of 8000 normals is within 4.5 standard errors (sqrt(2/n) = 1.6%) of its own.
  np.testing.assert_allclose(a[:, 1:].var(0), std**2, rtol=0.075)
  np.testing.assert_allclose(b[:, 1:].var(0), std**2, rtol=0.075)
  mean = a[:, 0] / 2  # A_0 / 2 is the spatial mean
  if law == "released":
    np.testing.assert_allclose(mean, 0.0, atol=1e-12)
  else:
    np.testing.assert_allclose(mean.var(), sigma**2 * tau ** (-2 * alpha), rtol=0.075)
  # Modes from different k, and cosine from sine, are uncorrelated.
  corr = np.corrcoef(np.concatenate([a[:, 1:], b[:, 1:]], axis=1), rowvar=False)
  np.testing.assert_allclose(corr, np.eye(2 * k_max), atol=0.06)


def test_bad_input():
  with pytest.raises(ValueError):
    burgers.solve(np.zeros((3, 7)))  # odd resolution
  with pytest.raises(ValueError):
    burgers.solve(np.zeros((2, 2, 8)))
  with pytest.raises(ValueError):
    burgers.solve(np.zeros(8), nu=-1.0)


def test_paper_text_law_is_nearly_trivial_released_law_is_not():
  """Why the FNO experiment uses the authors' released generator (data/pde.py).

  With the paper text's nu = 0.1 on (0, 1), diffusion leaves u(., 1) within a few
  percent of the spatial mean of u0; with the released nu = 1e-3 and its GRF,
  u(., 1) keeps a front and differs from its mean by tens of percent.
  """
  def spread(nu, sigma, tau, alpha):
    u0 = grf.periodic_grf_1d(jax.random.key(3), 16, 512, sigma=sigma, tau=tau, alpha=alpha)
    u1 = np.asarray(burgers.solve(u0, nu=nu, num_steps=500))
    return np.linalg.norm(u1 - u1.mean(-1, keepdims=True)) / np.linalg.norm(u1)
  text, released = spread(0.1, 25.0, 5.0, 2.0), spread(1e-3, 49.0, 7.0, 2.5)
  print(f"\n||u(1) - mean|| / ||u(1)||: paper text (nu=0.1) {text:.3f}, "
        f"released generator (nu=1e-3) {released:.3f}")
  assert text < 0.1 < 0.3 < released
