"""Darcy finite differences against a manufactured solution, with the measured order."""

import jax
import numpy as np
import pytest

from reprojax.data import darcy


def _manufactured_error(s: int) -> float:
  x = np.linspace(0.0, 1.0, s)
  X, Y = np.meshgrid(x, x, indexing="ij")
  a = 1.0 + X**2 + Y
  u = np.sin(np.pi * X) * np.sin(np.pi * Y)
  # f = -div(a grad u) = -(a_x u_x + a_y u_y + a (u_xx + u_yy)), a_x = 2x, a_y = 1.
  f = -(2 * X * np.pi * np.cos(np.pi * X) * np.sin(np.pi * Y)
        + np.pi * np.sin(np.pi * X) * np.cos(np.pi * Y) - 2 * np.pi**2 * a * u)
  return float(np.abs(darcy.solve(a, f) - u).max())


def test_second_order_on_manufactured_solution():
  sizes = [17, 33, 65, 129]
  errs = [_manufactured_error(s) for s in sizes]
  orders = [np.log2(a / b) for a, b in zip(errs, errs[1:])]
  print(f"\nDarcy FD vs manufactured solution, max error for s={sizes}: "
        f"{['%.2e' % e for e in errs]}; measured orders {['%.2f' % o for o in orders]}")
  assert all(1.9 < o < 2.1 for o in orders)


def test_constant_coefficient_matches_series_solution():
  """-Laplacian u = 1 with a = 1: compare with the double sine series of the exact solution."""
  s = 65
  u = darcy.solve(np.ones((s, s)))
  x = np.linspace(0.0, 1.0, s)
  odd = np.arange(1, 800, 2)  # series truncation error ~1e-7
  sx = np.sin(np.pi * np.outer(x, odd))
  coef = 16.0 / (np.pi**4 * np.outer(odd, odd) * (odd[:, None] ** 2 + odd[None, :] ** 2))
  exact = sx @ coef @ sx.T
  h = 1.0 / (s - 1)
  assert np.abs(u - exact).max() < h**2 * np.abs(exact).max()  # O(h^2), measured ~1.4e-5


def test_coefficients_are_binary_and_balanced():
  a = darcy.sample_coefficients(jax.random.key(0), 64, 33)
  assert set(np.unique(a)) == {3.0, 12.0}
  assert 0.35 < (a == 12.0).mean() < 0.65  # zero-mean field: about half above 0


def test_bad_input():
  with pytest.raises(ValueError):
    darcy.solve(np.ones((5, 6)))
  with pytest.raises(ValueError):
    darcy.solve(-np.ones((5, 5)))
  with pytest.raises(ValueError):
    darcy.solve(np.full((5, 5), np.nan))
