"""Steady Darcy flow on the unit square: a finite-difference solver and the FNO input law.

    -div(a(x) grad u(x)) = f(x),  x in (0, 1)^2,   u = 0 on the boundary.

The FNO benchmark (Li et al., ICLR 2021, section 5.2) maps the coefficient
``a = psi(g)``, ``g ~ N(0, (-Laplacian + 9 I)^-2)`` with Neumann boundary and
``psi`` = 12 where g >= 0 and 3 elsewhere, to the solution ``u`` for ``f = 1``.

The solver is the standard 5-point conservative scheme on the node grid
x_i = i h, h = 1 / (s - 1): the flux across each cell face uses the arithmetic
mean of the coefficient at the two nodes it joins. It is second order for smooth
coefficients (checked by a manufactured solution in ``tests/data/test_darcy.py``).
The sparse system is solved with SuperLU (``scipy.sparse.linalg.spsolve``): data
generation runs on the host, once, and is cached by the tfds builder.
"""

from __future__ import annotations

import jax
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from reprojax.data import grf


def solve(a_SxS: np.ndarray, f_SxS: np.ndarray | float = 1.0) -> np.ndarray:
  """Solves -div(a grad u) = f with u = 0 on the boundary of the s x s node grid.

  Args:
    a_SxS: positive coefficient at the nodes (boundary nodes included).
    f_SxS: right-hand side at the nodes, or a constant.

  Returns:
    ``u_SxS`` float64, zero on the boundary.
  """
  a = np.asarray(a_SxS, np.float64)
  if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 3:
    raise ValueError(f"a must be a square (s, s) grid with s >= 3, got shape {a.shape}")
  if not np.all(np.isfinite(a)) or np.any(a <= 0):
    raise ValueError("the coefficient a must be finite and strictly positive")
  s = a.shape[0]
  f = np.broadcast_to(np.asarray(f_SxS, np.float64), (s, s))
  m = s - 2  # interior nodes per side
  h2 = (1.0 / (s - 1)) ** 2
  idx = np.arange(m * m).reshape(m, m)
  ai = a[1:-1, 1:-1]
  # Face coefficients (arithmetic means) around each interior node.
  east = 0.5 * (ai + a[2:, 1:-1])
  west = 0.5 * (ai + a[:-2, 1:-1])
  north = 0.5 * (ai + a[1:-1, 2:])
  south = 0.5 * (ai + a[1:-1, :-2])
  rows = [idx.ravel()]
  cols = [idx.ravel()]
  vals = [(east + west + north + south).ravel() / h2]
  for coef, (di, dj) in ((east, (1, 0)), (west, (-1, 0)), (north, (0, 1)), (south, (0, -1))):
    ii, jj = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    ni, nj = ii + di, jj + dj
    inside = (ni >= 0) & (ni < m) & (nj >= 0) & (nj < m)  # boundary neighbours are 0
    rows.append(idx[inside])
    cols.append(idx[ni[inside], nj[inside]])
    vals.append(-coef[inside] / h2)
  A = scipy.sparse.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(m * m, m * m))
  u = np.zeros((s, s))
  u[1:-1, 1:-1] = scipy.sparse.linalg.spsolve(A, f[1:-1, 1:-1].ravel()).reshape(m, m)
  return u


def sample_coefficients(key: jax.Array, n: int, s: int, *, high: float = 12.0,
                        low: float = 3.0, tau: float = 3.0, alpha: float = 2.0) -> np.ndarray:
  """``n`` piecewise-constant coefficients psi(GRF) on the s x s node grid (float32)."""
  g = np.asarray(grf.neumann_grf_2d(key, n, s, tau=tau, alpha=alpha))
  return np.where(g >= 0, high, low).astype(np.float32)
