"""Fractional derivatives on uniform grids: the spectral (Weyl) multiplier and the Grunwald-Letnikov stencil.

Spectral (periodic domains). For ``u(x) = sum_k u_hat_k e^{i k x}`` on a period
``L = N dx`` (wavenumbers ``k = 2 pi f / L``), the Weyl derivative of order
``beta >= 0`` is the Fourier multiplier

    D^beta u = sum_k (i k)^beta u_hat_k e^{i k x},   (i k)^beta = |k|^beta e^{i sign(k) beta pi / 2},

so ``D^beta sin(k x) = k^beta sin(k x + beta pi / 2)``, integer ``beta`` gives the
classical derivative, and ``D^a D^b = D^(a+b)`` (the multipliers multiply). The
zero mode is annihilated for ``beta > 0`` (kept for ``beta = 0``), and the
Nyquist mode of an even grid keeps the real part ``|k|^beta cos(beta pi / 2)``
(``irfft`` drops the imaginary part), as is usual for odd integer derivatives.
``|k|^beta = exp(beta log|k|)`` is smooth in ``beta``, so ``d/dbeta`` is exact.

Grunwald-Letnikov (GL):

    D^beta u(x_n) ~ h^-beta sum_{j=0}^{K-1} w_j u(x_n - j h),
    w_0 = 1,  w_j = w_{j-1} (1 - (beta + 1) / j)  (= (-1)^j binom(beta, j)),

with ``K = gl_terms``. ``boundary="periodic"`` wraps the history around the
period (the stencil is a circular convolution, computed exactly by FFT for any
K); with ``K -> infinity`` its symbol is ``((1 - e^{-i k h}) / h)^beta``, which is
``(i k)^beta (1 + O(k h))``: GL is first order in h (tested). ``boundary="zero"``
takes ``u = 0`` left of the domain (the lower-terminal, Riemann-Liouville-like
form of non-periodic domains, which does not ring as the Fourier form does).
The weights are products of terms linear in beta, so GL is differentiable in beta.

Centred GL (``method="gl_centred"``, the authors' public notebooks): the mean of the
backward stencil and the forward one weighted by ``cos(pi beta)``,

    D^beta u(x_n) ~ h^-beta (1/2) [ sum_j w_j u(x_n - j h) + cos(pi beta) sum_j w_j u(x_n + j h) ],

which is the central difference ``(u_{n+1} - u_{n-1}) / 2h`` at beta = 1 and the mean
of the backward and forward second differences at beta = 2 (a 5-point stencil).
``boundary="periodic"`` wraps both histories (their notebook 1's circular padding),
``"zero"`` takes u = 0 outside the domain on both sides (their notebooks 2 and 3).

``include_h=False`` drops the ``h^-beta`` factor, as the paper's features do
(the factor is absorbed into the learned scale; for ``h`` ~ 1/256 and beta ~ 2
it is ~ 6.5e4 and drives early NaN losses otherwise).

References:
  Mehouachi & Jabari, "Fractional is Better: Learnable Derivative Orders in Neural
  Operator Learning", ICML 2026 (the features).
  Podlubny, "Fractional Differential Equations", 1999, sections 2.2 and 7.2 (GL).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

BETA_MAX = 4.0  # supported orders: 0 <= beta <= BETA_MAX
METHODS = ("spectral", "gl", "gl_centred")
BOUNDARIES = ("periodic", "zero")


def _grid_step(dx, n: int) -> float:
  """dx from a scalar or from grid coordinates (which must be uniformly spaced)."""
  if np.ndim(dx) == 0:
    if _common.is_concrete(dx):
      h = float(dx)
      if not np.isfinite(h) or h <= 0:
        raise ValueError(f"dx must be a positive finite float, got {dx}")
    return dx
  x = np.asarray(dx, np.float64)
  if x.ndim != 1 or x.size != n:
    raise ValueError(f"grid coordinates must be a 1-D array of the axis length {n}, got shape {x.shape}")
  _common.check_finite("grid", x)
  d = np.diff(x)
  if np.any(d <= 0) or np.max(np.abs(d - d.mean())) > 1e-6 * abs(d.mean()):
    raise ValueError(f"the grid must be uniform and increasing (spacing from {d.min():.3g} to "
                     f"{d.max():.3g}); resample onto a uniform grid first")
  return float(d.mean())


def _validate(u, beta, axis: int, method: str, gl_terms: int, boundary: str) -> int:
  if method not in METHODS:
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")
  if boundary not in BOUNDARIES:
    raise ValueError(f"boundary must be one of {BOUNDARIES}, got {boundary!r}")
  if method == "spectral" and boundary != "periodic":
    raise ValueError("the spectral derivative needs a periodic domain; use method='gl' with "
                     "boundary='zero' for non-periodic data")
  if not jnp.issubdtype(jnp.asarray(u).dtype, jnp.floating):
    raise ValueError(f"u must be a real float array, got dtype {jnp.asarray(u).dtype}")
  if np.ndim(u) < 1:
    raise ValueError(f"u must have at least one axis, got shape {np.shape(u)}")
  if not -np.ndim(u) <= axis < np.ndim(u):
    raise ValueError(f"axis {axis} is out of range for u of shape {np.shape(u)}")
  n = np.shape(u)[axis]
  if n < 4:
    raise ValueError(f"the derivative axis needs at least 4 points, got {n} (shape {np.shape(u)})")
  if np.ndim(beta) != 0:
    raise ValueError(f"beta must be a scalar, got shape {np.shape(beta)}")
  if not isinstance(gl_terms, (int, np.integer)) or gl_terms < 1:
    raise ValueError(f"gl_terms must be a positive int, got {gl_terms!r}")
  _common.check_in_range("beta", beta, 0.0, BETA_MAX)
  _common.check_finite("u", u)
  return n


def _spectral_multiplier(n: int, h, beta, dtype):
  """(i k)^beta on the rfft frequencies of an n-point grid of step h: shape (n // 2 + 1,)."""
  f = np.arange(n // 2 + 1)
  k = 2 * np.pi * f / n  # wavenumber times h
  kk = jnp.asarray(np.where(f == 0, 1.0, k), dtype) / h
  mag = jnp.exp(beta * jnp.log(kk))
  phase = beta * (np.pi / 2)
  mult = mag * jax.lax.complex(jnp.cos(phase), jnp.sin(phase))
  if n % 2 == 0:  # Nyquist: keep the real part (the sign of k is ambiguous there)
    mult = mult.at[-1].set(mag[-1] * jnp.cos(phase))
  zero = jnp.where(beta == 0, 1.0, 0.0).astype(dtype)
  return mult.at[0].set(zero.astype(mult.dtype))


def gl_weights(beta: jax.Array, gl_terms: int) -> jax.Array:
  """GL weights w_j = (-1)^j binom(beta, j), j = 0..gl_terms-1 (by the stable recursion).

  Args:
    beta: the order, a scalar.
    gl_terms: K, the number of taps (a positive int).

  Returns:
    ``(gl_terms,)`` weights in beta's float dtype (float32 for an integer beta).
  """
  if not isinstance(gl_terms, (int, np.integer)) or gl_terms < 1:
    raise ValueError(f"gl_terms must be a positive int, got {gl_terms!r}")
  beta = jnp.asarray(_common.check_arrays({"beta": beta}, scalars=("beta",),
                                          kinds={"beta": "number"})["beta"])
  dtype = beta.dtype if jnp.issubdtype(beta.dtype, jnp.floating) else jnp.float32
  j = jnp.arange(1, gl_terms, dtype=dtype)
  return jnp.concatenate([jnp.ones((1,), j.dtype), jnp.cumprod(1.0 - (beta + 1.0) / j)])


def _gl_last_axis(u, beta, h, gl_terms: int, boundary: str, include_h: bool):
  n = u.shape[-1]
  w = gl_weights(jnp.asarray(beta, u.dtype), gl_terms).astype(u.dtype)
  if boundary == "periodic":
    # Fold taps j >= n onto j mod n: the circular convolution is then exact for any K.
    w_n = jax.ops.segment_sum(w, jnp.arange(gl_terms) % n, num_segments=n)
    m = n
    u_pad = u
  else:
    m = n + gl_terms  # linear convolution without wrap
    w_n = jnp.pad(w, (0, m - gl_terms))
    u_pad = jnp.pad(u, [(0, 0)] * (u.ndim - 1) + [(0, m - n)])
  out = jnp.fft.irfft(jnp.fft.rfft(u_pad, axis=-1) * jnp.fft.rfft(w_n), n=m, axis=-1)[..., :n]
  if include_h:
    out = out * jnp.asarray(h, u.dtype) ** (-beta)
  return out.astype(u.dtype)


@functools.partial(jax.jit, static_argnames=("axis", "method", "gl_terms", "boundary",
                                             "include_h"))
def _derivative(u, beta, h, *, axis, method, gl_terms, boundary, include_h):
  u = jnp.moveaxis(u, axis, -1)
  beta = jnp.asarray(beta, u.dtype)
  if method == "spectral":
    mult = _spectral_multiplier(u.shape[-1], jnp.asarray(h, u.dtype), beta, u.dtype)
    if not include_h:
      mult = mult * jnp.asarray(h, u.dtype) ** beta
    out = jnp.fft.irfft(jnp.fft.rfft(u, axis=-1) * mult, n=u.shape[-1], axis=-1).astype(u.dtype)
  elif method == "gl":
    out = _gl_last_axis(u, beta, h, gl_terms, boundary, include_h)
  else:  # gl_centred: the forward history is the backward stencil of the reversed field
    back = _gl_last_axis(u, beta, h, gl_terms, boundary, include_h)
    fwd = jnp.flip(_gl_last_axis(jnp.flip(u, -1), beta, h, gl_terms, boundary, include_h), -1)
    out = (0.5 * (back + jnp.cos(jnp.pi * beta) * fwd)).astype(u.dtype)
  return jnp.moveaxis(out, -1, axis)


def fractional_derivative(u: jax.Array, beta: jax.Array | float, *, dx=1.0, axis: int = -1,
                          method: str = "spectral", gl_terms: int = 16,
                          boundary: str = "periodic", include_h: bool = True) -> jax.Array:
  """The order-``beta`` derivative of ``u`` along ``axis`` on a uniform grid.

  Args:
    u: real float array, any shape; the derivative axis needs >= 4 points.
    beta: scalar order in [0, BETA_MAX] (a traced value is fine: differentiable).
    dx: grid step h (> 0), or the grid coordinates along ``axis`` (must be uniform).
    axis: the axis to differentiate along.
    method: ``"spectral"`` (the (i k)^beta multiplier, periodic only), ``"gl"`` (the
      one-sided stencil) or ``"gl_centred"`` (the authors' notebooks' centred form).
    gl_terms: K, taps of the GL stencil (the paper's K_GL = 16).
    boundary: ``"periodic"`` or ``"zero"`` (GL only: u = 0 left of the domain).
    include_h: multiply by h^-beta (False: the paper's scale-free feature).

  Returns:
    ``D^beta u`` with the shape and dtype of ``u``.

  Raises:
    ValueError: beta outside [0, BETA_MAX] or not scalar, a non-uniform grid, an axis
      shorter than 4, an unknown method/boundary, non-finite u.
  """
  n = _validate(u, beta, axis, method, gl_terms, boundary)
  h = _grid_step(dx, n)
  return _derivative(jnp.asarray(u), beta, h, axis=axis % np.ndim(u), method=method,
                     gl_terms=int(gl_terms), boundary=boundary, include_h=include_h)


def derivative_features(u_BxN: jax.Array, betas_K: jax.Array, scales_K: jax.Array, *, dx=1.0,
                        method: str = "gl", gl_terms: int = 16, boundary: str = "periodic",
                        include_h: bool = False) -> jax.Array:
  """The del-NO channels of a 1-D field: ``f_k = s_k D^{beta_k} u`` along the last axis.

  Args:
    u_BxN: fields on a uniform grid (any leading axes).
    betas_K: K orders in [0, BETA_MAX] (learned; the paper starts at 1, 2 and 3 for KdV).
    scales_K: K scales s_k (learned; absorb h^-beta when ``include_h=False``).
    dx, method, gl_terms, boundary, include_h: as :func:`fractional_derivative`.

  Returns:
    ``features_BxNxK``.
  """
  got = _common.check_arrays({"u_BxN": u_BxN, "betas_K": betas_K, "scales_K": scales_K},
                             shapeless=("u_BxN",))
  u_BxN, betas_K, scales_K = got.values()
  if np.ndim(u_BxN) < 1:
    raise ValueError(f"u_BxN must have a grid axis (shape (..., N)), got shape {np.shape(u_BxN)}")
  kw = dict(dx=dx, axis=-1, method=method, gl_terms=gl_terms, boundary=boundary,
            include_h=include_h)
  feats = [scales_K[k] * fractional_derivative(u_BxN, betas_K[k], **kw)
           for k in range(np.shape(betas_K)[0])]
  return jnp.stack(feats, axis=-1)


def derivative_features_2d(u_BxHxW: jax.Array, betas_x_K: jax.Array, betas_y_K: jax.Array,
                           scales_x_K: jax.Array, scales_y_K: jax.Array, betas_mixed_2: jax.Array,
                           scale_mixed: jax.Array, *, dx=1.0, dy=1.0, method: str = "gl",
                           gl_terms: int = 16, boundary: str = "periodic",
                           include_h: bool = False) -> jax.Array:
  """The 2-D del-NO channels: directional terms along x (axis -2) and y (axis -1) and one mixed term.

      f = [s^x_k D_x^{beta^x_k} u]_k ++ [s^y_k D_y^{beta^y_k} u]_k ++ [s_xy D_x^{a} D_y^{b} u]

  The mixed partial's two orders (a, b) = ``betas_mixed_2`` share one scale, as in
  the paper (K = 2 per direction + 1 mixed = 5 channels).

  Returns:
    ``features_BxHxWx(2K+1)``.
  """
  got = _common.check_arrays(
      {"u_BxHxW": u_BxHxW, "betas_x_K": betas_x_K, "betas_y_K": betas_y_K,
       "scales_x_K": scales_x_K, "scales_y_K": scales_y_K, "betas_mixed_2": betas_mixed_2,
       "scale_mixed": scale_mixed}, shapeless=("u_BxHxW",), scalars=("scale_mixed",))
  (u_BxHxW, betas_x_K, betas_y_K, scales_x_K, scales_y_K, betas_mixed_2,
   scale_mixed) = got.values()
  _common.check_ndim("u_BxHxW", u_BxHxW, (2, 3, 4))
  kw = dict(method=method, gl_terms=gl_terms, boundary=boundary, include_h=include_h)
  fx = derivative_features(jnp.moveaxis(u_BxHxW, -2, -1), betas_x_K, scales_x_K, dx=dx, **kw)
  fx = jnp.moveaxis(fx, -2, -3)  # back to (..., H, W, K)
  fy = derivative_features(u_BxHxW, betas_y_K, scales_y_K, dx=dy, **kw)
  mixed = fractional_derivative(u_BxHxW, betas_mixed_2[0], dx=dx, axis=-2, **kw)
  mixed = fractional_derivative(mixed, betas_mixed_2[1], dx=dy, axis=-1, **kw)
  return jnp.concatenate([fx, fy, (scale_mixed * mixed)[..., None]], axis=-1)
