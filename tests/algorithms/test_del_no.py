"""Golden tests of del-NO's fractional derivatives, features and optimal-order theory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from reprojax.algorithms import del_no

L = 2 * np.pi


def _grid(n):
  return np.arange(n) * L / n


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("beta", [1, 2, 3])
def test_integer_orders_match_analytic(dtype, tol, beta):
  with jax.enable_x64(bool(dtype == np.float64)):
    n, k = 32, 3  # float32 round-off grows like (n/2)^beta: n = 32 keeps beta = 3 within 1e-5
    x = _grid(n)
    u = (np.sin(k * x) + np.cos(2 * x)).astype(dtype)
    # d^b/dx^b sin(kx) = k^b sin(kx + b pi/2), likewise cos; normalise by k^b to compare at O(1).
    want = k**beta * np.sin(k * x + beta * np.pi / 2) + 2**beta * np.cos(2 * x + beta * np.pi / 2)
    got = del_no.fractional_derivative(jnp.asarray(u), beta, dx=L / n)
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got) / k**beta, want / k**beta, atol=tol)


@pytest.mark.parametrize("beta", [0.3, 0.5, 1.25, 2.7])
def test_fractional_sine_shift(beta):
  with jax.enable_x64(True):
    n, k = 128, 5
    x = _grid(n)
    got = del_no.fractional_derivative(jnp.asarray(np.sin(k * x)), beta, dx=L / n)
    np.testing.assert_allclose(got, k**beta * np.sin(k * x + beta * np.pi / 2), atol=1e-10)


def test_semigroup():
  with jax.enable_x64(True):
    n = 64
    x = _grid(n)
    u = np.sin(x) + 0.3 * np.cos(4 * x) - 0.2 * np.sin(7 * x)
    for a, b in [(0.4, 0.9), (1.3, 0.5), (0.7, 1.8)]:
      ab = del_no.fractional_derivative(
          del_no.fractional_derivative(jnp.asarray(u), a, dx=L / n), b, dx=L / n)
      np.testing.assert_allclose(ab, del_no.fractional_derivative(jnp.asarray(u), a + b, dx=L / n),
                                 atol=1e-10)


def test_gl_first_order_convergence():
  with jax.enable_x64(True):
    beta, errs, ns = 1.5, [], [32, 64, 128, 256]
    for n in ns:
      x = _grid(n)
      u = jnp.asarray(np.sin(x) + 0.5 * np.cos(2 * x))
      ref = del_no.fractional_derivative(u, beta, dx=L / n)
      gl = del_no.fractional_derivative(u, beta, dx=L / n, method="gl", gl_terms=64 * n)
      errs.append(float(jnp.max(jnp.abs(gl - ref))))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    print(f"GL vs spectral, beta={beta}: errors {errs}, observed orders {orders}")
    assert np.all(np.abs(orders - 1.0) < 0.1), orders


def test_gl_weights_match_binomial():
  from scipy.special import binom
  with jax.enable_x64(True):
    w = del_no.gl_weights(jnp.asarray(1.3), 10)
    np.testing.assert_allclose(w, [(-1) ** j * binom(1.3, j) for j in range(10)], rtol=1e-12)
    # Integer order: the stencil is the backward difference, exact taps beyond beta vanish.
    np.testing.assert_allclose(del_no.gl_weights(jnp.asarray(2.0), 5), [1, -2, 1, 0, 0], atol=1e-14)


def test_gl_zero_boundary_is_causal_and_matches_backward_difference():
  with jax.enable_x64(True):
    u = jnp.asarray(np.random.default_rng(0).normal(size=12))
    got = del_no.fractional_derivative(u, 1.0, dx=0.5, method="gl", boundary="zero", gl_terms=16)
    want = np.diff(np.concatenate([[0.0], np.asarray(u)])) / 0.5
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("method", ["spectral", "gl"])
def test_d_dbeta_matches_finite_differences(method):
  with jax.enable_x64(True):
    n = 32
    x = _grid(n)
    u = jnp.asarray(np.sin(x) + 0.4 * np.cos(3 * x))
    w = jnp.asarray(np.random.default_rng(1).normal(size=n))

    def f(b):
      return jnp.sum(w * del_no.fractional_derivative(u, b, dx=L / n, method=method))

    for b in (0.6, 1.4, 2.3):
      eps = 1e-6
      fd = (f(b + eps) - f(b - eps)) / (2 * eps)
      np.testing.assert_allclose(jax.grad(f)(b), fd, rtol=1e-6, atol=1e-8)


def test_features_1d_and_2d():
  with jax.enable_x64(True):
    n = 16
    u = jnp.asarray(np.random.default_rng(2).normal(size=(3, n)))
    betas, scales = jnp.asarray([0.5, 1.5]), jnp.asarray([2.0, -1.0])
    f = del_no.derivative_features(u, betas, scales, method="spectral", dx=0.1, include_h=True)
    assert f.shape == (3, n, 2)
    np.testing.assert_allclose(f[..., 1], -del_no.fractional_derivative(u, 1.5, dx=0.1), atol=1e-12)
    # include_h=False drops exactly h^-beta.
    g = del_no.derivative_features(u, betas, scales, dx=0.1, method="gl", include_h=False)
    h = del_no.derivative_features(u, betas, scales, dx=0.1, method="gl", include_h=True)
    np.testing.assert_allclose(g * 0.1 ** -np.asarray(betas), h, rtol=1e-10)
    v = jnp.asarray(np.random.default_rng(3).normal(size=(2, 8, 8)))
    f2 = del_no.derivative_features_2d(v, betas, betas, scales, scales, jnp.asarray([1.0, 1.0]),
                                       jnp.asarray(1.0), method="spectral", dx=0.5, dy=0.5,
                                       include_h=True)
    assert f2.shape == (2, 8, 8, 5)
    np.testing.assert_allclose(f2[..., 0], 2 * del_no.fractional_derivative(v, 0.5, dx=0.5, axis=1),
                               atol=1e-12)
    np.testing.assert_allclose(f2[..., 2], 2 * del_no.fractional_derivative(v, 0.5, dx=0.5, axis=2),
                               atol=1e-12)
    # Mixed first derivatives: the spectral d2/dxdy of the field, computed by numpy FFT.
    kx = 2 * np.pi * np.fft.fftfreq(8, 0.5)
    kx = np.where(np.abs(kx) == np.abs(kx).max(), 0.0, kx)  # Nyquist of odd derivatives is dropped
    want = np.real(np.fft.ifft2(np.fft.fft2(np.asarray(v)) * (1j * kx)[:, None] * (1j * kx)[None, :]))
    np.testing.assert_allclose(f2[..., 4], want, atol=1e-10)


@pytest.mark.parametrize("kwargs", [
    dict(beta=-0.1), dict(beta=4.5), dict(beta=np.nan), dict(beta=np.ones(2)),
    dict(dx=np.array([0.0, 0.1, 0.3, 0.35, 0.5, 0.6, 0.7, 0.8])),  # non-uniform grid
    dict(dx=-1.0), dict(u=np.ones((3,))), dict(u=np.full((8,), np.nan)),
    dict(u=np.ones((8,), np.int32)), dict(axis=2), dict(method="fourier"),
    dict(method="spectral", boundary="zero"), dict(method="gl", gl_terms=0),
])
def test_bad_inputs_raise(kwargs):
  args = dict(u=np.sin(np.arange(8.0)), beta=1.0, dx=0.1)
  args.update(kwargs)
  u, beta = args.pop("u"), args.pop("beta")
  with pytest.raises(ValueError):
    del_no.fractional_derivative(u, beta, **args)


def test_uniform_grid_coordinates_accepted():
  x = np.linspace(0, 1, 16, endpoint=False)
  u = np.sin(2 * np.pi * x)
  np.testing.assert_allclose(del_no.fractional_derivative(u, 1.0, dx=x),
                             del_no.fractional_derivative(u, 1.0, dx=1 / 16), atol=1e-6)


@pytest.mark.parametrize("params", [
    dict(m=2.0, n=1000.0, sigma=0.05, xi_c=8.0, xi_max=64.0),
    dict(m=1.0, n=100.0, sigma=0.3, xi_c=3.0, xi_max=20.0, c_b=0.5, c_v=2.0),
    dict(m=3.0, n=5000.0, sigma=0.01, xi_c=16.0, xi_max=128.0),
])
def test_closed_form_optimal_order_matches_numerical_minimum(params):
  with jax.enable_x64(True):
    beta_star, delta = del_no.optimal_order(**params)
    m = params["m"]
    res = optimize.minimize_scalar(lambda b: float(del_no.spectral_risk(b, **params)),
                                   bounds=(0.0, m), method="bounded",
                                   options=dict(xatol=1e-10))
    np.testing.assert_allclose(beta_star, res.x, atol=1e-6)
    assert 0 < float(beta_star) < m and float(delta) > 0  # beta* strictly below m


def test_optimal_order_trends():
  with jax.enable_x64(True):
    base = dict(m=2.0, n=1000.0, sigma=0.05, xi_c=8.0, xi_max=64.0)
    sig = jax.vmap(lambda s: del_no.optimal_order(**{**base, "sigma": s})[0])(
        jnp.asarray([0.01, 0.05, 0.1, 0.3]))
    ns = jax.vmap(lambda n: del_no.optimal_order(**{**base, "n": n})[0])(
        jnp.asarray([100.0, 1000.0, 1e4, 1e5]))
    xs = jax.vmap(lambda x: del_no.optimal_order(**{**base, "xi_max": x})[0])(
        jnp.asarray([16.0, 32.0, 64.0, 128.0]))
    assert np.all(np.diff(sig) < 0) and np.all(np.diff(ns) > 0) and np.all(np.diff(xs) < 0)
