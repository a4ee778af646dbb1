r"""Test functions for comparison-based optimization, with their stationary points where known.

Each factory returns a pure ``f: R^n -> R`` (jit/vmap/grad-able). Stationary
points are checked with ``jax.grad`` by the evaluator only; optimizers receive
a comparison oracle of ``f``.

* :func:`quadratic_quartic`: :math:`\tfrac12 x^\top A x + \tfrac14\|x\|^4`, :math:`A`
  symmetric indefinite. Stationary points: :math:`0` and :math:`\pm\sqrt{-\lambda_i}\,v_i`
  for each negative eigenpair :math:`(\lambda_i, v_i)`; the minimisers are those of the
  most negative :math:`\lambda`, the others are strict saddles.
* :func:`rosenbrock`: :math:`\sum_i 100(x_{i+1}-x_i^2)^2 + (1-x_i)^2`, minimiser :math:`\mathbf 1`.
* :func:`octopus`: a smooth strict-saddle chain in the spirit of the "octopus" of
  Du et al. (2017): :math:`\sum_i \tfrac14 x_i^4 - \tfrac{\tau_i}{2}x_i^2`,
  :math:`\tau_i = 1 + i/n`; the origin is a strict saddle of every order, minimisers are
  :math:`x_i = \pm\sqrt{\tau_i}`. (A smooth simplification, not Du et al.'s piecewise construction.)
* :func:`sparse_quadric`: SCOBO's :math:`\sum_{i\le s} x_i^2` (only :math:`s` of :math:`n`
  coordinates matter); stationary set :math:`x_{1..s}=0`.
* :func:`skewed_quartic`: SCOBO's :math:`\|Bx\|^2 + 0.1\sum (Bx)_i^3 + 0.01\sum (Bx)_i^4`
  with :math:`B` the tridiagonal (1, 2, 1)/2 matrix (our choice of the skewing matrix);
  minimiser :math:`0` (a local one; the cubic makes it non-convex far away).
* :func:`mlp_loss`: mean-squared error of a 2-3-1 tanh MLP (13 parameters, flattened)
  on 16 fixed points of :math:`\sin(x_1) + x_2^2/2`, plus :math:`10^{-3}\|\theta\|^2`.

References:
  Cai, McKenzie, Yin & Zhang, "A one-bit, comparison-based gradient estimator" (SCOBO, 2022);
  Du, Jin, Lee, Jordan, Singh & Poczos, "Gradient descent can take exponential time to escape
  saddle points" (2017).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def quadratic_quartic(A_NxN):
  """``f(x) = x^T A x / 2 + ||x||^4 / 4``."""
  A = jnp.asarray(A_NxN)
  return lambda x: 0.5 * x @ A @ x + 0.25 * jnp.sum(x ** 2) ** 2


def indefinite_matrix(n: int, key, low: float = -1.0, high: float = 2.0):
  """A random rotation of ``diag(linspace(low, high, n))`` (indefinite when low < 0)."""
  Q, _ = jnp.linalg.qr(jax.random.normal(key, (n, n)))
  lam = jnp.linspace(low, high, n)
  return (Q * lam) @ Q.T


def rosenbrock(x):
  return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def octopus(x):
  n = x.shape[0]
  tau = 1.0 + jnp.arange(n, dtype=x.dtype) / n
  return jnp.sum(0.25 * x ** 4 - 0.5 * tau * x ** 2)


def sparse_quadric(s: int):
  """SCOBO's sparse quadric: the first ``s`` coordinates."""
  return lambda x: jnp.sum(x[:s] ** 2)


def skewed_quartic(x):
  n = x.shape[0]
  B = (2.0 * jnp.eye(n) + jnp.eye(n, k=1) + jnp.eye(n, k=-1)) / 2.0
  y = B.astype(x.dtype) @ x
  return jnp.sum(y ** 2) + 0.1 * jnp.sum(y ** 3) + 0.01 * jnp.sum(y ** 4)


MLP_SIZES = (2, 3, 1)
MLP_NUM_PARAMS = 2 * 3 + 3 + 3 * 1 + 1


def _mlp_data():
  rng = np.random.default_rng(1234)
  X = rng.uniform(-1.0, 1.0, size=(16, 2))
  y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2
  return X, y


def mlp_loss(theta):
  """MSE of a 2-3-1 tanh MLP with flattened parameters ``theta`` (13,), plus 1e-3 ||theta||^2."""
  X, y = _mlp_data()
  X = jnp.asarray(X, theta.dtype)
  y = jnp.asarray(y, theta.dtype)
  W1 = theta[:6].reshape(2, 3)
  b1 = theta[6:9]
  W2 = theta[9:12]
  b2 = theta[12]
  h = jnp.tanh(X @ W1 + b1)
  pred = h @ W2 + b2
  return jnp.mean((pred - y) ** 2) + 1e-3 * jnp.sum(theta ** 2)
