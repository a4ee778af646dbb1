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

from reprojax.algorithms import _common


def _point(x, n=None, min_n: int = 1):
  """A test function's argument: a finite float vector ``(n,)`` (values checked when concrete)."""
  x = _common.check_arrays({"x": x}, shapeless=("x",))["x"]
  if np.ndim(x) != 1 or (n is not None and np.shape(x)[0] != n) or np.shape(x)[0] < min_n:
    want = f"({n},)" if n is not None else f"(n,) with n >= {min_n}"
    raise ValueError(f"x must have shape {want}, got {np.shape(x)}")
  return x


def quadratic_quartic(A_NxN):
  """``f(x) = x^T A x / 2 + ||x||^4 / 4``."""
  A = jnp.asarray(_common.check_arrays({"A_NxN": A_NxN})["A_NxN"])

  def f(x):
    x = _point(x, A.shape[0])
    return 0.5 * x @ A @ x + 0.25 * jnp.sum(x ** 2) ** 2
  return f


def indefinite_matrix(n: int, key, low: float = -1.0, high: float = 2.0):
  """A random rotation of ``diag(linspace(low, high, n))`` (indefinite when low < 0)."""
  _common.check_key("key", key)
  Q, _ = jnp.linalg.qr(jax.random.normal(key, (n, n)))
  lam = jnp.linspace(low, high, n)
  return (Q * lam) @ Q.T


def rosenbrock(x):
  x = _point(x, min_n=2)
  return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def octopus(x):
  x = _point(x)
  n = x.shape[0]
  tau = 1.0 + jnp.arange(n, dtype=x.dtype) / n
  return jnp.sum(0.25 * x ** 4 - 0.5 * tau * x ** 2)


def sparse_quadric(s: int):
  """SCOBO's sparse quadric: the first ``s`` coordinates."""
  return lambda x: jnp.sum(_point(x, min_n=s)[:s] ** 2)


def skewed_quartic(x):
  x = _point(x)
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
  theta = _common.check_arrays({"theta": theta}, shapeless=("theta",))["theta"]
  if np.shape(theta) != (MLP_NUM_PARAMS,):
    raise ValueError(f"theta must have shape ({MLP_NUM_PARAMS},), got {np.shape(theta)}")
  return _mlp_loss(theta)


@jax.jit  # one program (eagerly, one per operation); the shape is checked above
def _mlp_loss(theta):
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


# ----------------------------------------------------------------------------- hard instance

#: Lipschitz constants l_1 (of the gradient) and l_2 (of the Hessian) of the unscaled chain.
#: l_1 = 152 is Carmon, Duchi, Hinder & Sidford's bound (2019, Lemma 3); for l_2 we use our
#: own numerical bound: the largest |D^3 f_T(x)[v, v, v]| (= ||D^3 f_T(x)|| for a symmetric
#: form) found by multi-start BFGS over (x, v) is 1.89e3 (l_1's analogue: 134 < 152), so we
#: take 2000. The tests check sampled difference quotients against both. (Any fixed
#: constants give the same eps-exponents; they set the eps at which a chain of T links lives.)
CHAIN_LIPSCHITZ = {1: 152.0, 2: 2000.0}
#: f_T(0) - inf f_T <= CHAIN_GAP_PER_LINK * T (same lemma).
CHAIN_GAP_PER_LINK = 12.0


def _chain_psi(t):
  r""":math:`\Psi(t) = 0` for :math:`t \le 1/2`, :math:`\exp(1 - 1/(2t-1)^2)` above (smooth)."""
  on = t > 0.5
  z = jnp.where(on, 2.0 * t - 1.0, 1.0)  # keeps the untaken branch (and its gradient) finite
  return jnp.where(on, jnp.exp(1.0 - 1.0 / z ** 2), 0.0)


def _chain_phi(t):
  r""":math:`\Phi(t) = \sqrt e\int_{-\infty}^t e^{-s^2/2}ds = \sqrt{e\pi/2}\,\mathrm{erfc}(-t/\sqrt2)`."""
  return jnp.sqrt(jnp.e * jnp.pi / 2.0) * jax.scipy.special.erfc(-t / jnp.sqrt(2.0))


def chain(x_N, num_links):
  r"""The unscaled zero-chain :math:`\bar f_T` of Carmon et al. on the first ``T`` coordinates.

  .. math:: \bar f_T(x) = -\Psi(1)\Phi(x_1) + \sum_{i=2}^{T}\big[\Psi(-x_{i-1})\Phi(-x_i)
            - \Psi(x_{i-1})\Phi(x_i)\big].

  Coordinates past ``T`` do not enter. ``T = num_links`` may be traced (links are
  masked, not sliced), so one compiled optimizer serves every ``T``. Properties
  (Carmon et al. 2019, Lemmas 2-3): the chain is *robustly zero-respecting*: while
  :math:`|x_j| < 1/2` for all :math:`j \ge k`, the derivatives of every order involve only
  coordinates :math:`\le k`, so any method that moves along its (estimated) derivatives
  reveals at most one new coordinate per step; :math:`\|\nabla\bar f_T(x)\| > 1` whenever
  :math:`|x_T| < 1`; :math:`\bar f_T(0)-\inf\bar f_T \le 12T`.
  """
  x_N = _common.check_arrays({"x_N": x_N})["x_N"]
  if np.ndim(num_links) != 0:
    raise ValueError(f"num_links must be a scalar, got shape {np.shape(num_links)}")
  return _chain(x_N, num_links)


@jax.jit
def _chain(x_N, num_links):
  n = x_N.shape[0]
  i = jnp.arange(1, n)  # link i + 1 couples x_i and x_{i+1} (1-based: links 2..n)
  on = (i + 1 <= num_links).astype(x_N.dtype)
  prev, cur = x_N[:-1], x_N[1:]
  links = _chain_psi(-prev) * _chain_phi(-cur) - _chain_psi(prev) * _chain_phi(cur)
  return -_chain_psi(jnp.ones((), x_N.dtype)) * _chain_phi(x_N[0]) + jnp.sum(on * links)


def hard_chain_params(num_links, order: int, gap: float, lipschitz: float):
  r"""``(eps, sigma, scale)`` of the order-``p`` hard instance with ``T`` links and gap ``Delta``.

  Carmon et al.'s scaled instance :math:`f(x) = c\,\bar f_T(x/\sigma)` with
  :math:`\sigma = (\ell_p\epsilon/L_p)^{1/p}`, :math:`c = L_p\sigma^{p+1}/\ell_p` has a
  :math:`L_p`-Lipschitz :math:`p`-th derivative, :math:`\|\nabla f\| = \epsilon\|\nabla\bar f_T\|`
  (so :math:`\|\nabla f(x)\| > \epsilon` until every :math:`x_i/\sigma` has travelled past 1)
  and gap :math:`\le 12Tc`. Spending the whole gap budget, :math:`12Tc = \Delta`, gives
  :math:`T = \Delta\,\ell_p^{1/p}/(12 L_p^{1/p}\epsilon^{(p+1)/p})`: :math:`T\propto\epsilon^{-1.5}`
  for :math:`p = 2` (Lipschitz Hessian; the class of the paper's bound) and
  :math:`\propto\epsilon^{-2}` for :math:`p = 1` (Lipschitz gradient; the Zhang-Li class).
  Here ``T`` is chosen and :math:`\epsilon` solved for.

  Args:
    num_links: :math:`T \ge 1`.
    order: :math:`p \in \{1, 2\}`.
    gap: :math:`\Delta > 0`.
    lipschitz: :math:`L_p > 0`.
  """
  if order not in CHAIN_LIPSCHITZ:
    raise ValueError(f"order must be 1 or 2, got {order!r}")
  for name, v in (("num_links", num_links), ("gap", gap), ("lipschitz", lipschitz)):
    if _common.is_concrete(v) and not np.all(np.isfinite(v) & (np.asarray(v) > 0)):
      raise ValueError(f"{name} must be finite and > 0, got {v}")
  ell = CHAIN_LIPSCHITZ[order]
  scale = gap / (CHAIN_GAP_PER_LINK * jnp.asarray(num_links, jnp.result_type(float)))
  sigma = (scale * ell / lipschitz) ** (1.0 / (order + 1))
  eps = lipschitz * sigma ** order / ell
  return eps, sigma, scale


def hard_chain(num_links, sigma, scale):
  r"""The scaled hard instance :math:`x\mapsto c\,\bar f_T(x/\sigma)` (see :func:`hard_chain_params`)."""
  got = _common.check_arrays({"sigma": sigma, "scale": scale}, scalars=("sigma", "scale"))
  _common.check_in_range("sigma", got["sigma"], 0.0, lo_open=True)
  sigma, scale = got["sigma"], got["scale"]
  return lambda x: scale * chain(x / sigma, num_links)
