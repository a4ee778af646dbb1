"""Gaussian random fields N(0, sigma^2 (-Laplacian + tau^2 I)^-alpha) on the unit interval and square.

The FNO paper's input distributions (Li et al., ICLR 2021, sections 5.1-5.2):

* Burgers: periodic on (0, 1), ``N(0, 625 (-Laplacian + 25 I)^-2)``, i.e.
  ``sigma=25, tau=5, alpha=2`` (the paper's text). The authors' released generator
  (``GRF1(s/2, 0, 2.5, 7, 49, "periodic")`` in ``gen_burgers1.m``) draws
  ``sigma=49, tau=7, alpha=2.5`` and sets the constant mode to its second argument,
  0: ``periodic_grf_1d(..., constant_mode=False)``.
* Darcy: Neumann (cosine) on (0, 1)^2, ``N(0, (-Laplacian + 9 I)^-2)``, then
  thresholded; only the sign matters for the coefficient, so ``sigma`` is free.

A field is sampled from its Karhunen-Loeve expansion in the Laplacian's
orthonormal eigenfunctions: ``u = sum_k sigma (lambda_k + tau^2)^(-alpha/2) xi_k e_k``
with ``xi_k ~ N(0, 1)``, truncated to the modes the grid resolves.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def periodic_grf_1d(key: jax.Array, n: int, s: int, *, sigma: float = 25.0, tau: float = 5.0,
                    alpha: float = 2.0, constant_mode: bool = True,
                    dtype=jnp.float32) -> jax.Array:
  """``n`` samples of a periodic GRF on the grid ``x_j = j / s``, j = 0..s-1.

  Eigenfunctions of -d^2/dx^2 on the circle of length 1: 1, sqrt(2) cos(2 pi k x),
  sqrt(2) sin(2 pi k x) with eigenvalue (2 pi k)^2; modes k < s/2 are kept (the
  Nyquist mode is dropped so the field is real and resolved). So
  ``u = c0 + sum_k A_k cos(2 pi k x) + B_k sin(2 pi k x)`` with A_k, B_k independent
  N(0, 2 sigma^2 ((2 pi k)^2 + tau^2)^-alpha).

  The constant mode c0: with ``constant_mode`` (default) it is drawn like the others,
  c0 ~ N(0, sigma^2 tau^(-2 alpha)), as the covariance operator says (the paper
  text's law); without it c0 = 0 and every sample has mean exactly zero, as in the
  authors' released Burgers generator. Under the released sigma=49, tau=7, alpha=2.5
  a random c0 would have standard deviation 0.38, more than all other modes together,
  and Burgers being Galilean invariant, it would only translate the solution by c0 t.
  The draws of A_k and B_k do not depend on ``constant_mode``: for one key the two
  laws' samples differ by c0 exactly.

  Returns:
    ``u_NxS`` float array.
  """
  if s < 4 or s % 2:
    raise ValueError(f"resolution s must be an even integer >= 4, got {s}")
  k = np.arange(1, s // 2)
  std_k = sigma * ((2 * np.pi * k) ** 2 + tau**2) ** (-alpha / 2)
  std_0 = sigma * tau ** (-alpha)
  kc, ks, k0 = jax.random.split(key, 3)
  a = jax.random.normal(kc, (n, k.size), dtype) * std_k
  b = jax.random.normal(ks, (n, k.size), dtype) * std_k
  c0 = jax.random.normal(k0, (n, 1), dtype) * (std_0 if constant_mode else 0.0)
  # Real field from its rfft coefficients: u_j = c0 + sqrt2 sum_k (a cos + b sin).
  coef = jnp.zeros((n, s // 2 + 1), jnp.complex64 if dtype == jnp.float32 else jnp.complex128)
  coef = coef.at[:, 0].set(c0[:, 0] * s)
  coef = coef.at[:, 1:s // 2].set((a - 1j * b) * (np.sqrt(2.0) / 2) * s)
  return jnp.fft.irfft(coef, n=s, axis=-1).astype(dtype)


def neumann_grf_2d(key: jax.Array, n: int, s: int, *, sigma: float = 1.0, tau: float = 3.0,
                   alpha: float = 2.0, zero_mean: bool = True, dtype=jnp.float32) -> jax.Array:
  """``n`` samples of a GRF with Neumann boundary on the node grid ``x_i = i / (s - 1)``.

  Eigenfunctions cos(pi k1 x) cos(pi k2 y) (normalised) with eigenvalue
  pi^2 (k1^2 + k2^2); modes 0 <= k1, k2 < s are kept. Evaluated with two dense
  cosine matrices, which is exact on the nodes and cheap for s of a few hundred.
  With ``zero_mean`` (default) the constant mode is dropped: otherwise it dominates
  (std 1/tau^2) and psi(g) is one value over most of the domain (a mean of 11.1 of
  {3, 12} measured at s=85, against 7.4 without it). The authors' released generator
  drops it too (``L(1,1) = 0`` in ``data_generation/darcy/GRF.m``).

  Returns:
    ``u_NxSxS`` float array.
  """
  if s < 3:
    raise ValueError(f"resolution s must be >= 3, got {s}")
  k = np.arange(s)
  x = np.linspace(0.0, 1.0, s)
  norm = np.where(k == 0, 1.0, np.sqrt(2.0))
  c_SxK = (norm[None, :] * np.cos(np.pi * x[:, None] * k[None, :])).astype(np.float32)
  lam_KxK = np.pi**2 * (k[:, None] ** 2 + k[None, :] ** 2)
  std_KxK = (sigma * (lam_KxK + tau**2) ** (-alpha / 2)).astype(np.float32)
  if zero_mean:
    std_KxK[0, 0] = 0.0
  xi = jax.random.normal(key, (n, s, s), dtype) * std_KxK
  c = jnp.asarray(c_SxK, dtype)
  return jnp.einsum("ik,nkl,jl->nij", c, xi, c)
