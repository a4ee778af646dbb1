r"""Normalized-gradient estimation from comparisons (classical).

Derivation. For :math:`f` with :math:`\rho`-Lipschitz Hessian and a direction
:math:`v`, the symmetric comparison

.. math:: f(x+\gamma v) - f(x-\gamma v) = 2\gamma\,\nabla f(x)^\top v + r,\qquad
          |r| \le \rho\gamma^3\|v\|^3/3,

so :math:`O_f(x+\gamma v, x-\gamma v) = \mathbb 1[\nabla f(x)^\top v > 0]`
whenever :math:`|\nabla f(x)^\top v| > \rho\gamma^2\|v\|^3/6` (the Hessian term
cancels). Writing :math:`g=\nabla f(x)`, three kinds of one-bit tests follow:

1. sign of :math:`g_i`: :math:`v=e_i` (:math:`n` queries);
2. :math:`|g_i| > |g_j|`: :math:`v = s_i e_i - s_j e_j` with :math:`s_i=\mathrm{sign}(g_i)`;
   a knock-out tournament finds :math:`i^\star=\arg\max_i|g_i|` with :math:`n-1` queries;
3. :math:`g_i / |g_{i^\star}| < \alpha`: :math:`v = \alpha s_{i^\star} e_{i^\star} - e_i`.
   The ratio :math:`q_i = g_i/|g_{i^\star}| \in [-1, 1]` is found by bisection;
   :math:`K` steps leave an error at most :math:`2^{-K}`.

The estimate :math:`\hat u = v/\|v\|` with :math:`v_{i^\star} = s_{i^\star}`,
:math:`v_i = \hat q_i` satisfies :math:`\|v - g/|g_{i^\star}|\| \le \sqrt{n-1}\,2^{-K}`
and :math:`\|g\|/|g_{i^\star}|\ge 1`, so :math:`\sin\angle(\hat u, g) \le \sqrt{n-1}\,2^{-K}`:
accuracy :math:`\delta` costs :math:`K=\lceil\log_2(\sqrt{n}/\delta)\rceil` and in all

.. math:: Q_{\rm grad}(n, K) = n + (n-1) + (n-1)K = O(n \log(n/\delta))

comparisons, the Comparison-GDE bound of Zhang & Li (2024). (Tao et al. prove
:math:`\Theta(n\log(1/\delta))`; we keep the simpler coordinate bisection.)

References:
  Zhang & Li, "Comparisons Are All You Need for Optimizing Smooth Functions" (2024), Alg. 1;
  Tao, Zhang, Wang, Zhang & Li, "Gradient Testing and Estimation by Comparisons" (2024/2026).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms.comparison_oracle import _jit
from reprojax.algorithms.comparison_oracle import _oracle


def _check_count(name: str, v, lo: int) -> None:
  if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
    raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")


def gradient_queries(n: int, bits: int) -> int:
  """Comparisons charged by :func:`normalized_gradient` (before majority votes):
  ``Q_grad(n, K) = n + (n - 1) + (n - 1) K`` (host-side, Python ints)."""
  _check_count("n", n, 1)
  _check_count("bits", bits, 0)
  return n + (n - 1) + (n - 1) * bits


def bits_for_accuracy(n: int, delta: float) -> int:
  """Bisection steps for angle error at most ``delta``: ``ceil(log2(sqrt(n-1)/delta))``, at least 1.

  Host-side (Python numbers): the bound ``sin angle <= sqrt(n-1) 2^-K`` of the module docstring.
  """
  _check_count("n", n, 1)
  try:
    d = float(delta)
  except (TypeError, ValueError):  # also a tracer: the number of bits is a host-side choice
    d = math.nan
  if not (math.isfinite(d) and d > 0):
    raise ValueError(f"delta must be a finite number > 0, got {delta!r}")
  return max(1, math.ceil(math.log2(max(math.sqrt(max(n - 1, 1)), 1.0) / delta)))


def _tournament(oracle, state, x_N, gamma, sign_N):
  """Sequential knock-out for argmax_i |g_i| (n - 1 charged comparisons, one traced query)."""
  n = x_N.shape[0]
  eye = jnp.eye(n, dtype=x_N.dtype)

  def body(i, carry):
    best, st = carry
    d = sign_N[best] * eye[best] - sign_N[i] * eye[i]
    bit, st = _oracle.compare(oracle, st, (x_N + gamma * d)[None], (x_N - gamma * d)[None])
    # bit: g . d > 0  <=>  |g_best| > |g_i|
    return jnp.where(bit[0], best, i), st

  return jax.lax.fori_loop(1, n, body, (jnp.zeros((), jnp.int32), state))


def _normalized_gradient_core(oracle, state, x_N, gamma, bits):
  n = x_N.shape[0]
  eye = jnp.eye(n, dtype=x_N.dtype)
  if n == 1:
    bit, state = _oracle.compare(oracle, state, x_N[None] + gamma, x_N[None] - gamma)
    return jnp.where(bit, 1.0, -1.0).astype(x_N.dtype), state
  pos_N, state = _oracle.compare(oracle, state, x_N + gamma * eye, x_N - gamma * eye)
  sign_N = jnp.where(pos_N, 1.0, -1.0).astype(x_N.dtype)
  istar, state = _tournament(oracle, state, x_N, gamma, sign_N)
  sstar = sign_N[istar]
  active_N = jnp.arange(n) != istar

  def body(_, carry):
    lo_N, hi_N, st = carry
    alpha_N = 0.5 * (lo_N + hi_N)
    d_NxN = alpha_N[:, None] * sstar * eye[istar][None, :] - eye
    bit_N, st = _oracle.compare(oracle, st, x_N + gamma * d_NxN, x_N - gamma * d_NxN, active_N)
    # bit: alpha |g_*| - g_i > 0  <=>  q_i < alpha
    return jnp.where(bit_N, lo_N, alpha_N), jnp.where(bit_N, alpha_N, hi_N), st

  lo = -jnp.ones((n,), x_N.dtype)
  hi = jnp.ones((n,), x_N.dtype)
  lo, hi, state = jax.lax.fori_loop(0, bits, body, (lo, hi, state))
  v_N = jnp.where(active_N, 0.5 * (lo + hi), sstar)
  return v_N / jnp.linalg.norm(v_N), state


@functools.partial(jax.jit, static_argnames=("oracle",))
def _normalized_gradient_jit(oracle, state, x_N, gamma, bits):
  return _normalized_gradient_core(oracle, state, x_N, gamma, bits)


def normalized_gradient(oracle: _oracle.ComparisonOracle, state: _oracle.OracleState,
                        x_N: jax.Array, *, gamma, bits) -> tuple[jax.Array, _oracle.OracleState]:
  r"""Estimates :math:`\nabla f(x)/\|\nabla f(x)\|` from comparisons only.

  Args:
    oracle: comparison oracle for ``f`` (static).
    state: oracle state; the returned one is charged :func:`gradient_queries` ``* votes``.
    x_N: the point, shape ``(n,)``.
    gamma: finite-difference radius :math:`\gamma > 0`.
    bits: bisection steps :math:`K` (int, may be traced); angle error
      :math:`\le\sqrt{n-1}\,2^{-K}` up to the :math:`O(\rho\gamma^2)` bias.

  Returns:
    ``(u_N, state)`` with ``u_N`` a unit vector.
  """
  x_N = _oracle.validate_point("x_N", x_N, oracle.n)
  _oracle.validate_positive("gamma", gamma)
  return _normalized_gradient_jit(oracle, state, x_N, jnp.asarray(gamma, x_N.dtype),
                                  jnp.asarray(bits, jnp.int32))


def _check_batch(arguments) -> None:
  arguments["x_BxN"] = _oracle.validate_point("x_BxN", arguments["x_BxN"], arguments["oracle"].n,
                                              batch=True)


@_jit.jit_when_eager(static_argnames=("oracle",), check=_check_batch)
def normalized_gradient_batch(oracle: _oracle.ComparisonOracle, state: _oracle.OracleState,
                              x_BxN: jax.Array, gamma, bits) -> tuple[jax.Array,
                                                                      _oracle.OracleState]:
  """:func:`normalized_gradient` at ``B`` points at once.

  Each point gets its own noise key (split from ``state.key``); the returned state is
  charged the sum of the ``B`` estimates' comparisons. Shapes are checked; values are
  not (it is meant to run inside ``jit``/``vmap``; eager calls compile once per oracle
  and shape).

  Args:
    oracle: comparison oracle (static).
    state: oracle state.
    x_BxN: the points, shape ``(B, n)``.
    gamma: finite-difference radius.
    bits: bisection steps :math:`K` (may be traced).

  Returns:
    ``(u_BxN, state)``: unit vectors, one per point.
  """
  x_BxN = _oracle.validate_point("x_BxN", x_BxN, oracle.n, batch=True)
  B = x_BxN.shape[0]
  key, sub = jax.random.split(state.key)
  states = _oracle.OracleState(count=jnp.zeros((B,), jnp.int32),
                               key=jax.random.split(sub, B))
  u_BxN, st = jax.vmap(lambda s, x: _normalized_gradient_core(oracle, s, x, gamma, bits))(
      states, x_BxN)
  return u_BxN, _oracle.OracleState(count=state.count + jnp.sum(st.count, dtype=jnp.int32), key=key)
