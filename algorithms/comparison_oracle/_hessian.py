r"""Normalized-Hessian estimation from comparisons (classical, and quantum simulated classically).

Derivation. Comparisons see :math:`f` only up to an increasing transformation
:math:`\psi`, and :math:`\nabla^2(\psi\circ f) = \psi' H + \psi'' g g^\top`: the
Hessian is identifiable only as a *ratio to the gradient scale*, which is also
what a second-order step needs. We estimate :math:`R = H/\|g\|` (and report
:math:`H/\|H\|_F = R/\|R\|_F`) from normalized gradients, which comparisons do give.

For a unit :math:`v_k` and a scale :math:`s>0`, with
:math:`\hat d_k^{\pm} = \nabla f(x\pm s v_k)/\|\nabla f(x\pm s v_k)\|` and :math:`\hat g = g/\|g\|`,

.. math:: \alpha_k \hat d_k^+ = g + sHv_k + \tfrac{s^2}{2}T[v_k,v_k] + O(s^3),\qquad
          \beta_k \hat d_k^- = g - sHv_k + \tfrac{s^2}{2}T[v_k,v_k] + O(s^3),

so :math:`\alpha_k\hat d^+_k + \beta_k\hat d^-_k = 2\|g\|\hat g + O(\rho s^2)`: the two
unknown lengths follow from a 2x2 least-squares solve in units of :math:`\|g\|`,
and :math:`H v_k/\|g\| = (\alpha_k \hat d^+_k - \beta_k \hat d^-_k)/(2s\|g\|)`. With a random
orthonormal basis :math:`Q = [v_1..v_n]` (so that no :math:`Hv_k` is parallel to
:math:`g`), :math:`R \approx \mathrm{sym}(C Q^\top)`, :math:`C = [Hv_1..Hv_n]/\|g\|`.

Errors. Direction errors :math:`\delta_g` are amplified by
:math:`\kappa_k = \max(s\|Hv_k\|/\|g\|, \|g\|/(s\|Hv_k\|))` (near-parallel
:math:`\hat d^\pm_k`), and the Taylor remainder adds :math:`O(\rho s^2/\|g\|)`. The scale
:math:`s\approx\|g\|/\|H\|` balances both; :func:`find_scale` finds it with
:math:`J` comparisons: along :math:`-\hat g` the function decreases up to
:math:`t_0 = 2\|g\|/\hat g^\top H\hat g`, and we take :math:`s = t_0/2` (or the
cap when the curvature along :math:`\hat g` is not positive).

Cost. :math:`2n+1` normalized gradients (at :math:`x` and :math:`x\pm sv_k`) at
:math:`K = \lceil\log_2(\sqrt n/\delta_g)\rceil` bits plus :math:`J` for the scale:
:math:`(2n+1)(2n-1+(n-1)K) + J = O(n^2\log(n/\delta))` comparisons classically (the
paper's :math:`\tilde O(n^2\log(1/\delta))`), and :math:`2n \cdot O(\log(n/\delta))` with the
quantum estimator of :mod:`._quantum` (simulated classically), the :math:`\tilde O(n)`
that turns :math:`n^2/\epsilon^{1.5}` into :math:`n/\epsilon^{1.5}`.

This construction is ours (the paper's subroutine is not public); it meets the
stated query orders. It needs :math:`g\ne 0` and degrades as :math:`\|g\|\to0`
in finite precision (comparisons of values that differ by less than rounding).

References:
  Wang, Zhang, Tao, Zhang & Li, "Finding Stationary Points by Comparisons" (ICML 2026).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg
from reprojax.algorithms.comparison_oracle import _gradient
from reprojax.algorithms.comparison_oracle import _jit
from reprojax.algorithms.comparison_oracle import _oracle
from reprojax.algorithms.comparison_oracle import _quantum


def _check_scale(arguments) -> None:
  for name in ("x_N", "g_hat_N"):
    arguments[name] = _oracle.validate_point(name, arguments[name], arguments["oracle"].n)
  _oracle.validate_positive("t_max", arguments["t_max"])


@_jit.jit_when_eager(static_argnames=("oracle", "J"), check=_check_scale)
def find_scale(oracle, state, x_N, g_hat_N, t_max, J: int = 24):
  r"""Scale :math:`s \approx \|g\|/\|H\|` from ``J`` nonadaptive comparisons.

  Asks :math:`f(x) > f(x - t_j\hat g)` for :math:`t_j = t_{\max}2^{-j}`, :math:`j < J`, and
  returns :math:`s = t_0/2` with :math:`t_0` the largest :math:`t_j` that still decreases
  :math:`f` (the smallest :math:`t_j` when none does); see the module docstring.

  Args:
    oracle: comparison oracle (static).
    state: oracle state; charged ``J`` comparisons.
    x_N: the point, shape ``(n,)``.
    g_hat_N: the normalized gradient at ``x`` (a descent direction is ``-g_hat``).
    t_max: the largest step tried (the cap of ``s`` is ``t_max / 2``).
    J: number of comparisons (static; an eager call compiles once per oracle, J and shape).

  Returns:
    ``(s, state)``.
  """
  x_N = _oracle.validate_point("x_N", x_N, oracle.n)
  g_hat_N = _oracle.validate_point("g_hat_N", g_hat_N, oracle.n)
  t_J = t_max * 2.0 ** (-jnp.arange(J, dtype=x_N.dtype))
  pts = x_N[None, :] - t_J[:, None] * g_hat_N[None, :]
  dec, state = _oracle.compare(oracle, state, jnp.broadcast_to(x_N, pts.shape), pts)
  t0 = jnp.max(jnp.where(dec, t_J, t_J[-1]))
  return 0.5 * t0, state


def _batch(oracle, state, X_BxN, gamma, bits, estimator, qparams):
  """Estimates at B points; returns (u_BxN, per-point charges_B, state with key advanced only)."""
  B = X_BxN.shape[0]
  key, sub = jax.random.split(state.key)
  keys = jax.random.split(sub, B)
  zeros = _oracle.OracleState(count=jnp.zeros((B,), jnp.int32), key=keys)
  if estimator == "classical":
    u, st = jax.vmap(lambda s, x: _gradient._normalized_gradient_core(oracle, s, x, gamma, bits))(
        zeros, X_BxN)
  elif estimator == "quantum":
    u, st = jax.vmap(lambda s, x, k: _quantum._quantum_core(oracle, s, x, k, gamma, qparams))(
        zeros, X_BxN, keys)
  else:
    raise ValueError(f"estimator must be 'classical' or 'quantum', got {estimator!r}")
  return u, st.count, state._replace(key=key)


def estimate_all(oracle, state, x_N, key, gamma, bits, estimator, qparams, *, scale=None,
                 t_max=1.0, J: int = 24):
  r"""Normalized gradient, scale and the :math:`2n` displaced directions, with ONE traced estimator.

  Two passes of the same batched estimator over :math:`2n+1` points: pass 0 estimates
  :math:`\hat g` at :math:`x` (one charged point; the rest is padding and uncharged),
  then :func:`find_scale` gives :math:`s` (unless ``scale`` is given); pass 1 estimates
  the directions at :math:`x \pm s v_k`. (One traced copy of the estimator keeps XLA
  compiles short; the charges are exactly those of the separate calls.)

  Returns ``(g_hat_N, s, V_NxN, D_2NxN, state)``.
  """
  n = x_N.shape[0]
  Qm = _linalg.qr_q(jax.random.normal(key, (n, n), x_N.dtype))
  V = Qm.T  # row k is v_k
  fixed = scale is not None
  s0 = jnp.asarray(scale if fixed else t_max, x_N.dtype)
  tmax = jnp.asarray(t_max, x_N.dtype)

  def body(i, carry):
    g_hat, s, st, _ = carry
    first = i == 0
    disp = jnp.concatenate([x_N[None], x_N + s * V, x_N - s * V], axis=0)
    pts = jnp.where(first, jnp.broadcast_to(x_N, disp.shape), disp)
    mask = jnp.where(first, jnp.arange(2 * n + 1) == 0, jnp.arange(2 * n + 1) > 0)
    D, charges, st = _batch(oracle, st, pts, gamma, bits, estimator, qparams)
    st = st._replace(count=st.count + jnp.sum(jnp.where(mask, charges, 0), dtype=jnp.int32))
    g_hat = jnp.where(first, D[0], g_hat)
    if fixed:
      return g_hat, s, st, D
    s_new, st2 = find_scale(oracle, st, x_N, g_hat, tmax, J)
    st = st2._replace(count=jnp.where(first, st2.count, st.count), key=st.key)
    return g_hat, jnp.where(first, s_new, s), st, D

  init = (jnp.zeros((n,), x_N.dtype), s0, state, jnp.zeros((2 * n + 1, n), x_N.dtype))
  g_hat, s, state, D = jax.lax.fori_loop(0, 2, body, init)
  return g_hat, s, V, D[1:], state


def hessian_from_directions(g_hat_N, s, V_NxN, D_2NxN):
  """R = H / ||g|| from the directions at x +- s v_k (see module docstring)."""
  n = g_hat_N.shape[0]
  dp, dm = D_2NxN[:n], D_2NxN[n:]
  A_Nx2xN = jnp.stack([dp, dm], axis=1)  # per k: rows d+, d-
  AtA = jnp.einsum("kin,kjn->kij", A_Nx2xN, A_Nx2xN) + 1e-12 * jnp.eye(2, dtype=dp.dtype)
  Atb = 2.0 * jnp.einsum("kin,n->ki", A_Nx2xN, g_hat_N)
  ab = _linalg.solve(AtA, Atb)
  C_KxN = (ab[:, :1] * dp - ab[:, 1:] * dm) / (2.0 * s)  # row k: H v_k / ||g||
  R = jnp.einsum("kn,km->nm", C_KxN, V_NxN)  # H Q Q^T = sum_k (H v_k) v_k^T
  return 0.5 * (R + R.T)


@functools.partial(jax.jit, static_argnames=("oracle", "estimator", "qparams"))
def _hessian_jit(oracle, state, x_N, key, scale, gamma, bits, estimator, qparams):
  g_hat, s, V, D, state = estimate_all(oracle, state, x_N, key, gamma, bits, estimator, qparams,
                                       scale=scale)
  R = hessian_from_directions(g_hat, s, V, D)
  return R / jnp.linalg.norm(R), R, g_hat, state


def normalized_hessian(oracle, state, x_N, key, *, gamma, bits=20, scale=None,
                       estimator: str = "classical", delta: float = 1e-6):
  r"""Estimates :math:`H/\|H\|_F` (and :math:`H/\|\nabla f\|`) at ``x`` from comparisons.

  Args:
    oracle: comparison oracle (static); exact for ``estimator="quantum"``.
    state: oracle state (charged every comparison; quantum queries for the quantum estimator).
    x_N: point, shape ``(n,)``; needs ``grad f(x) != 0``.
    key: PRNG key (random basis, quantum measurement outcomes).
    gamma: finite-difference radius of the gradient estimates.
    bits: bisection steps of each classical normalized-gradient estimate.
    scale: displacement ``s``; ``None`` finds it with :func:`find_scale` (cap 1).
    estimator: ``"classical"`` (``O(n^2 log)``) or ``"quantum"`` (``O(n log)``, simulated).
    delta: angle accuracy of each quantum gradient estimate.

  Returns:
    ``(H_hat_NxN, R_NxN, g_hat_N, state)``: the Frobenius-normalized Hessian, the
    Hessian in units of ``||grad f||``, the normalized gradient, and the state.
  """
  x_N = _oracle.validate_point("x_N", x_N, oracle.n)
  _common.check_key("key", key)
  _oracle.validate_positive("gamma", gamma)
  if scale is not None:
    _oracle.validate_positive("scale", scale)
    scale = jnp.asarray(scale, x_N.dtype)
  if estimator not in ("classical", "quantum"):
    raise ValueError(f"estimator must be 'classical' or 'quantum', got {estimator!r}")
  qparams = None
  if estimator == "quantum":
    _quantum._check_exact(oracle)
    qparams = _quantum.quantum_params(oracle.n, delta)
  return _hessian_jit(oracle, state, x_N, key, scale, jnp.asarray(gamma, x_N.dtype),
                      jnp.asarray(bits, jnp.int32), estimator, qparams)


def hessian_queries(n: int, bits: int, J: int = 24) -> int:
  """Classical charge of :func:`normalized_hessian` with ``scale=None``:
  ``(2n + 1) Q_grad(n, K) + J`` (host-side, Python ints)."""
  _gradient._check_count("J", J, 0)
  return (2 * n + 1) * _gradient.gradient_queries(n, bits) + J
