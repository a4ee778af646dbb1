"""Viscous Burgers' equation on the unit circle: a JAX pseudo-spectral ETDRK4 solver.

    u_t + (u^2 / 2)_x = nu u_xx,   x in [0, 1) periodic,   t in (0, T].

The FNO benchmark (Li et al., ICLR 2021, section 5.1) maps u(., 0) ~ GRF to
u(., 1) with nu = 0.1. We solve in Fourier space, u_hat' = L u_hat + N(u_hat)
with L = -nu (2 pi k)^2 and N(u_hat) = -(i 2 pi k / 2) FFT(u^2) (2/3-rule
dealiased), by exponential time differencing RK4 (Cox & Matthews 2002) with the
contour-integral coefficients of Kassam & Trefethen (2005), which treats the stiff
diffusion exactly and is fourth order in dt for the rest. Everything jits and
vmaps over initial conditions.

:func:`cole_hopf` gives the exact solution for initial conditions that are sums of
sines, the independent reference of ``tests/data/test_burgers.py``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np


def etdrk4_coefficients(L: np.ndarray, dt: float, contour_points: int = 32):
  """E, E2, Q, f1, f2, f3 of ETDRK4 for a diagonal operator ``L`` (real or complex), in numpy.

  The phi-functions are evaluated as means over a circle of radius 1 around each
  ``dt L`` (Kassam & Trefethen 2005), which avoids their cancellation near 0. The
  full circle is used, so the mean is exact for complex ``L`` (dispersive terms);
  for real ``L`` the imaginary parts vanish.
  """
  r = np.exp(1j * np.pi * (np.arange(1, contour_points + 1) - 0.5) / contour_points)
  r = np.concatenate([r, np.conj(r)])
  LR = dt * np.asarray(L, complex)[:, None] + r[None, :]
  Q = dt * np.mean((np.exp(LR / 2) - 1) / LR, axis=1)
  f1 = dt * np.mean((-4 - LR + np.exp(LR) * (4 - 3 * LR + LR**2)) / LR**3, axis=1)
  f2 = dt * np.mean((2 + LR + np.exp(LR) * (-2 + LR)) / LR**3, axis=1)
  f3 = dt * np.mean((-4 - 3 * LR - LR**2 + np.exp(LR) * (4 - LR)) / LR**3, axis=1)
  return np.exp(dt * np.asarray(L, complex)), np.exp(dt * np.asarray(L, complex) / 2), Q, f1, f2, f3


@functools.partial(jax.jit, static_argnames=("num_steps",))
def _etdrk4_run(u0, coefs, num_steps: int):
  s = u0.shape[-1]
  E, E2, Q, f1, f2, f3 = coefs
  k = jnp.asarray(2 * np.pi * np.arange(s // 2 + 1), u0.dtype)
  dealias = jnp.asarray(np.arange(s // 2 + 1) < s / 3, u0.dtype)
  g = -0.5j * k * dealias

  def nonlinear(v):
    u = jnp.fft.irfft(v * dealias, n=s, axis=-1)
    return g * jnp.fft.rfft(u * u, axis=-1)

  def step(_, v):
    nv = nonlinear(v)
    a = E2 * v + Q * nv
    na = nonlinear(a)
    b = E2 * v + Q * na
    nb = nonlinear(b)
    c = E2 * a + Q * (2 * nb - nv)
    nc = nonlinear(c)
    return E * v + nv * f1 + 2 * (na + nb) * f2 + nc * f3

  v = jax.lax.fori_loop(0, num_steps, step, jnp.fft.rfft(u0, axis=-1))
  return jnp.fft.irfft(v, n=s, axis=-1).astype(u0.dtype)


def solve_conservative(u0_NxS: jax.Array, linear_symbol, *, t_final: float,
                       num_steps: int) -> jax.Array:
  """Solves ``u_t + (u^2 / 2)_x = L u`` on [0, 1) periodic by ETDRK4 (2/3-rule dealiased).

  Args:
    u0_NxS: initial conditions ``(S,)`` or ``(N, S)``, S even; float32 or float64.
    linear_symbol: ``k -> L(k)``, the Fourier symbol of the linear operator at the
      angular wavenumbers k = 2 pi (0..S/2) (numpy, real or complex): ``-nu k^2``
      for viscous Burgers, ``1j * delta * k^3`` for KdV's ``-delta u_xxx``.
    t_final: final time.
    num_steps: steps of size ``t_final / num_steps``.
  """
  u0 = jnp.asarray(u0_NxS)
  if u0.ndim not in (1, 2) or u0.shape[-1] % 2 or u0.shape[-1] < 4:
    raise ValueError(f"u0 must be (S,) or (N, S) with S even >= 4, got shape {u0.shape}")
  if not jnp.issubdtype(u0.dtype, jnp.floating):
    raise ValueError(f"u0 must be a float array, got {u0.dtype}")
  if t_final <= 0 or num_steps < 1:
    raise ValueError(f"need t_final > 0 and num_steps >= 1, got {t_final}, {num_steps}")
  s = u0.shape[-1]
  cdtype = jnp.complex128 if u0.dtype == jnp.float64 else jnp.complex64
  L = linear_symbol(2 * np.pi * np.arange(s // 2 + 1))
  coefs = tuple(jnp.asarray(c, cdtype)
                for c in etdrk4_coefficients(L, t_final / num_steps))
  return _etdrk4_run(u0, coefs, num_steps)


def solve(u0_NxS: jax.Array, *, nu: float = 0.1, t_final: float = 1.0,
          num_steps: int = 1000) -> jax.Array:
  """Solves viscous Burgers' equation from ``u0_NxS`` (or one ``u0_S``) to ``t_final``.

  Args:
    u0_NxS: initial conditions on the grid x_j = j / S, S even; float32 or float64
      (the solve runs in that precision).
    nu: viscosity.
    t_final: final time T.
    num_steps: ETDRK4 steps of size T / num_steps.

  Returns:
    u(., T) with the shape and dtype of ``u0_NxS``.
  """
  if nu <= 0:
    raise ValueError(f"need nu > 0, got {nu}")
  return solve_conservative(u0_NxS, lambda k: -nu * k**2, t_final=t_final, num_steps=num_steps)


def cole_hopf(amplitudes, phases, x: np.ndarray, t: float, *, nu: float = 0.1,
              fine: int = 4096) -> np.ndarray:
  """Exact solution for ``u0(x) = sum_m a_m sin(2 pi m x + p_m)`` (m = 1, 2, ...), float64.

  Cole-Hopf: u = -2 nu phi_x / phi where phi solves the heat equation
  phi_t = nu phi_xx from phi_0 = exp(-(1 / 2nu) int_0^x u0). For a zero-mean u0,
  phi_0 is smooth and periodic, so the heat equation is solved exactly mode by
  mode on a fine Fourier grid (its spectrum decays faster than exponentially, so
  ``fine`` points give machine precision), then evaluated at ``x`` by the
  Fourier series.
  """
  a = np.asarray(amplitudes, np.float64)
  p = np.asarray(phases, np.float64)
  m = np.arange(1, a.size + 1)
  xf = np.arange(fine) / fine
  integral = np.sum(a[:, None] * (np.cos(p)[:, None] - np.cos(2 * np.pi * m[:, None] * xf + p[:, None]))
                    / (2 * np.pi * m[:, None]), axis=0)
  phi0 = np.exp(-integral / (2 * nu))
  freq = np.fft.rfftfreq(fine, 1.0 / fine)
  phi_hat = np.fft.rfft(phi0) * np.exp(-nu * (2 * np.pi * freq) ** 2 * t) / fine
  x = np.asarray(x, np.float64)
  basis = np.exp(2j * np.pi * freq[None, :] * x[:, None])
  w = np.where((freq == 0) | (freq == fine // 2), 1.0, 2.0)
  phi = np.real(basis @ (w * phi_hat))
  phi_x = np.real(basis @ (w * phi_hat * 2j * np.pi * freq))
  return -2 * nu * phi_x / phi


def sines(amplitudes, phases, x: np.ndarray) -> np.ndarray:
  """``sum_m a_m sin(2 pi m x + p_m)`` on ``x`` (the initial condition of :func:`cole_hopf`)."""
  a = np.asarray(amplitudes, np.float64)
  p = np.asarray(phases, np.float64)
  m = np.arange(1, a.size + 1)
  return np.sum(a[:, None] * np.sin(2 * np.pi * m[:, None] * x[None, :] + p[:, None]), axis=0)
