"""The dynamics-informed prompter's features: physical and spectral summaries of a short
observed sequence.

DynaDiff conditions its weight generator on a prompt extracted from a few observed
states of the new environment (no parameters are given). The paper names "physical and
spectral features"; its public demo conditions on one learned scalar regressed from a
snapshot. Our reconstruction, for an observed sequence ``x_t`` (``t = 0..T-1``, state
dimension D), concatenates

* moments: the mean and standard deviation of each coordinate over time;
* rates: the mean absolute increment ``mean_t |x_{t+1} - x_t|`` over the standard
  deviation, and the lag-1 autocorrelation, per coordinate;
* the fitted linear operator: the least-squares ``A`` of ``x_{t+1} ~ A x_t + c`` and its
  spectral invariants ``tr(A^k) / D`` for ``k = 1..D`` (sums of powers of its
  eigenvalues: decay rate and rotation frequency for an oscillator) and ``log |det A|``;
* the spectrum: the magnitudes of the first ``num_freqs`` non-constant Fourier
  coefficients of each demeaned coordinate, normalised to sum to one, and their
  centroid (the dominant frequency).

A learned MLP (``models.dynadiff.LatentDenoiser``'s prompter) maps these to the
generator's condition. Everything is smooth and runs on any backend (no eigen
decomposition, which XLA offers only on CPU).

References:
  DynaDiff (ICML 2026): "a dynamics-informed prompter that extracts cross-domain physical
  and spectral features from observation sequences".
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common


def min_length(num_freqs: int, dim: int) -> int:
  """The shortest sequence :func:`dynamics_features` accepts: ``num_freqs`` non-constant
  Fourier bins need ``T >= 2 num_freqs + 1`` and the linear fit ``T >= dim + 3``."""
  num_freqs, dim = _common.check_int("num_freqs", num_freqs, 1), _common.check_int("dim", dim, 1)
  return max(2 * num_freqs + 1, dim + 3)


def num_features(num_freqs: int, dim: int) -> int:
  """The length of :func:`dynamics_features`' output."""
  num_freqs, dim = _common.check_int("num_freqs", num_freqs, 1), _common.check_int("dim", dim, 1)
  return 4 * dim + dim + 1 + dim * (num_freqs + 1)


def dynamics_features(obs_TxD, num_freqs: int = 8) -> jax.Array:
  """The prompt features ``(F,)`` of one observed sequence ``obs_TxD`` (see the module
  docstring; ``F = num_features(num_freqs, D)``). Leading batch axes are allowed
  (``(..., T, D) -> (..., F)``).

  Raises:
    ValueError: when the sequence is shorter than :func:`min_length` (too short for the
      spectrum or the linear fit), or not finite.
  """
  num_freqs = _common.check_int("num_freqs", num_freqs, 1)
  x = _common.check_arrays({"obs_TxD": obs_TxD}, batch=("obs_TxD",))["obs_TxD"]
  t, d = x.shape[-2], x.shape[-1]
  need = min_length(num_freqs, d)
  if t < need:
    raise ValueError(f"obs_TxD must hold at least {need} observed states for num_freqs="
                     f"{num_freqs} and state dimension {d} (the spectrum and the linear fit), "
                     f"got {t}")
  return _features(jnp.asarray(x, jnp.float32), num_freqs)


@functools.partial(jax.jit, static_argnames="num_freqs")  # eagerly, one program per operation
def _features(x, num_freqs):
  eps = 1e-6
  mean = jnp.mean(x, axis=-2)
  xc = x - mean[..., None, :]
  std = jnp.sqrt(jnp.mean(xc**2, axis=-2) + eps)
  rate = jnp.mean(jnp.abs(jnp.diff(x, axis=-2)), axis=-2) / std
  autocorr = jnp.mean(xc[..., 1:, :] * xc[..., :-1, :], axis=-2) / std**2
  # Least squares x_{t+1} = A x_t + c: past and future each on their own mean (the
  # intercept c), ridge-regularised (a 2-D normal-equation solve, well conditioned for the
  # short sequences used here).
  past, future = x[..., :-1, :], x[..., 1:, :]
  past = past - jnp.mean(past, axis=-2, keepdims=True)
  future = future - jnp.mean(future, axis=-2, keepdims=True)
  gram = jnp.einsum("...ti,...tj->...ij", past, past)
  cross = jnp.einsum("...ti,...tj->...ij", past, future)
  reg = 1e-4 * (jnp.trace(gram, axis1=-2, axis2=-1)[..., None, None] / x.shape[-1] + 1e-6)
  a_t = jnp.linalg.solve(gram + reg * jnp.eye(x.shape[-1]), cross)  # A^T
  a = jnp.swapaxes(a_t, -1, -2)
  powers, ak = [], a
  for _ in range(x.shape[-1]):
    powers.append(jnp.trace(ak, axis1=-2, axis2=-1) / x.shape[-1])
    ak = ak @ a
  logdet = jnp.log(jnp.abs(jnp.linalg.det(a)) + eps)
  spec = jnp.abs(jnp.fft.rfft(xc, axis=-2))[..., 1:num_freqs + 1, :]  # (..., K, D)
  spec = spec / (jnp.sum(spec, axis=-2, keepdims=True) + eps)
  freqs = jnp.arange(1, num_freqs + 1, dtype=x.dtype)
  centroid = jnp.einsum("...kd,k->...d", spec, freqs) / num_freqs
  spec_flat = jnp.reshape(jnp.swapaxes(spec, -1, -2), spec.shape[:-2] + (-1,))
  return jnp.concatenate([mean, std, rate, autocorr, jnp.stack(powers, -1), logdet[..., None],
                          spec_flat, centroid], axis=-1)



def spatial_modes(obs_TxS, num_modes: int) -> jax.Array:
  """A field's low spatial Fourier modes over time ``(T, 2 num_modes)``: the real then the
  imaginary parts of modes ``1..num_modes`` of ``rfft(u_t) / S`` (the mean, mode 0, is left
  out), the reduced state a PDE family's prompter reads. For a linear PDE each mode evolves
  alone, so :func:`dynamics_features`' fitted operator reads its decay and rotation."""
  num_modes = _common.check_int("num_modes", num_modes, 1)
  u = _common.check_arrays({"obs_TxS": obs_TxS}, batch=("obs_TxS",))["obs_TxS"]
  s = u.shape[-1]
  if num_modes > s // 2 - 1:
    raise ValueError(f"num_modes must be at most S / 2 - 1 = {s // 2 - 1} for obs_TxS with S = "
                     f"{s} points, got {num_modes}")
  c = jnp.fft.rfft(jnp.asarray(u, jnp.float32), axis=-1)[..., 1:num_modes + 1] / s
  return jnp.concatenate([c.real, c.imag], axis=-1)
