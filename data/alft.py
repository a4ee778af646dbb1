"""Data of the ALFT paper: synthetic HDI tensors with aligned ordered modes, and tensorly's Kinetic tensor.

* :func:`aligned_tensor`: a 3-way tensor ``(I, I, K)`` whose modes 0 and 1 index
  the same ordered grid (positions ``0..I-1``) and whose mode 2 is ordered too
  (time). Its signal is a smooth rank-R CP part plus an *aligned* part
  ``h(j - i) v[k]`` with an asymmetric one-sided offset response
  ``h(d) = a exp(-(d - d0) / tau)`` for ``d >= d0`` and 0 below. The *unordered
  control* (``control=True``) applies independent random permutations to modes 0
  and 1 of the same tensor: the values and the CP rank are unchanged, but the
  order and the alignment between the modes are gone.
* :func:`observation_masks`: high-dimensional-and-incomplete (HDI) splits: a
  training mask observing a fraction ``density`` (5% .. 60%) of the entries, and
  the held-out mask of all other entries.
* :func:`load_kinetic`: the kinetic fluorescence tensor of Nikolajsen, Booksh,
  Hansen & Bro (2003), 64 measurements x 12 emission x 10 excitation wavelengths
  x 60 time points, which ships inside the tensorly PyPI package
  (``tensorly/datasets/data/Kinetic.npy`` and ``Kinetic_missing.npy``); it is read
  from those files directly (no network), from a folder given explicitly, or from
  ``$REPROJAX_MANUAL_DIR/kinetic``.
* :func:`holdout_split`: a seeded random split of the observed entries (20% held out).

References:
  Nikolajsen, Booksh, Hansen & Bro, "Quantifying catecholamines using multi-way
  kinetic modelling", Analytica Chimica Acta 475 (2003) 137-150.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.data import paths

KINETIC_FILES = ("Kinetic.npy", "Kinetic_missing.npy")


class AlignedTensor(NamedTuple):
  """A synthetic tensor with planted aligned structure."""

  y: jax.Array  # (I, I, K) noisy tensor
  truth: jax.Array  # (I, I, K) noiseless signal
  aligned: jax.Array  # (I, I, K) the planted aligned part h(j - i) v[k] (permuted in the control)
  h_D: jax.Array  # (2I - 1,) planted offset response at offsets d = -(I-1) .. I-1
  v_K: jax.Array  # (K,) planted modulation of the aligned part over mode 2


def _smooth_factors(key, n, rank, dtype):
  """Smooth positive factors: sums of two Gaussian bumps at random centres, ``(n, rank)``."""
  kc, kw, ka = jax.random.split(key, 3)
  t = jnp.linspace(0.0, 1.0, n, dtype=dtype)[:, None, None]
  c = jax.random.uniform(kc, (1, rank, 2), dtype)
  w = 0.1 + 0.25 * jax.random.uniform(kw, (1, rank, 2), dtype)
  a = 0.5 + jax.random.uniform(ka, (1, rank, 2), dtype)
  return jnp.sum(a * jnp.exp(-0.5 * ((t - c) / w) ** 2), axis=-1)


def aligned_tensor(key: jax.Array, size: int = 30, n_time: int = 20, rank: int = 3, *,
                   aligned_scale: float = 1.0, onset: int = 1, decay: float = 2.0,
                   noise_std: float = 0.05, control=False,
                   dtype=jnp.float32) -> AlignedTensor:
  """Synthetic HDI tensor with aligned ordered modes 0 and 1 (module docstring).

  Args:
    key: PRNG key (factors, modulation, noise, control permutations).
    size: ``I``, the size of the two aligned modes. n_time: ``K``, size of mode 2.
    rank: rank of the smooth CP part (each factor a sum of Gaussian bumps, values O(1)).
    aligned_scale: amplitude ``a`` of the aligned part. onset: ``d0``, the first offset
      with a response. decay: ``tau`` of the one-sided exponential response.
    noise_std: std of the i.i.d. Gaussian noise added to ``truth``.
    control: permute modes 0 and 1 independently (the unordered control); a bool or a
      traced bool array (vmappable).

  Returns:
    :class:`AlignedTensor`; the planted CP part is ``truth - aligned``.
  """
  if size < 2 or n_time < 1 or rank < 1:
    raise ValueError(f"need size >= 2, n_time >= 1, rank >= 1; got {size}, {n_time}, {rank}")
  if noise_std < 0 or decay <= 0:
    raise ValueError(f"need noise_std >= 0 and decay > 0; got {noise_std}, {decay}")
  return _aligned_tensor(key, size, n_time, rank, aligned_scale, onset, decay, noise_std,
                         jnp.asarray(control, bool), dtype)


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 9))
def _aligned_tensor(key, size, n_time, rank, aligned_scale, onset, decay, noise_std, control, dtype):
  k0, k1, k2, kv, kn, kp0, kp1 = jax.random.split(key, 7)
  a0 = _smooth_factors(k0, size, rank, dtype)
  a1 = _smooth_factors(k1, size, rank, dtype)
  a2 = _smooth_factors(k2, n_time, rank, dtype)
  cp = jnp.einsum("ir,jr,kr->ijk", a0, a1, a2) / rank
  d = jnp.arange(-(size - 1), size, dtype=dtype)
  h = jnp.where(d >= onset, aligned_scale * jnp.exp(-(d - onset) / decay), 0.0).astype(dtype)
  v = _smooth_factors(kv, n_time, 1, dtype)[:, 0]
  idx = jnp.arange(size)
  toeplitz = h[(idx[None, :] - idx[:, None]) + size - 1]
  aligned = toeplitz[:, :, None] * v[None, None, :]
  truth = cp + aligned
  y = truth + noise_std * jax.random.normal(kn, truth.shape, dtype)
  # control (a traced bool, so both kinds share one compilation): shuffle modes 0 and 1
  p0 = jnp.where(control, jax.random.permutation(kp0, size), jnp.arange(size))
  p1 = jnp.where(control, jax.random.permutation(kp1, size), jnp.arange(size))
  y, truth, aligned = (x[p0][:, p1] for x in (y, truth, aligned))
  return AlignedTensor(y, truth, aligned, h, v)


def observation_masks(key: jax.Array, shape, density) -> tuple[jax.Array, jax.Array]:
  """Training mask observing ``round(density * size)`` entries at random, and the held-out rest.

  ``density`` in (0, 1) may be a traced scalar (vmap over densities). Returns
  float masks ``(train, test)`` of ``shape``, disjoint, covering every entry.
  """
  if isinstance(density, (int, float)) and not 0.0 < density < 1.0:
    raise ValueError(f"density must be in (0, 1), got {density}")
  n = int(np.prod(shape))
  ranks = jnp.argsort(jax.random.uniform(key, (n,)))  # a random permutation's inverse order
  train = (ranks < jnp.round(density * n)).astype(jnp.float32).reshape(shape)
  return train, 1.0 - train


# ------------------------------------------------------------------- Kinetic

class Kinetic(NamedTuple):
  """The kinetic fluorescence tensor and its ordered-mode coordinates."""

  y: np.ndarray  # (64, 12, 10, 60) float64 fluorescence (0 where missing)
  observed: np.ndarray  # (64, 12, 10, 60) bool, False at the 1754 missing entries
  emission_nm: np.ndarray  # (12,) 472 .. 554.5 nm, mode 1
  excitation_nm: np.ndarray  # (10,) 362 .. 416 nm, mode 2
  time_min: np.ndarray  # (60,) 1/3 .. 20 minutes, mode 3


def _tensorly_data_dir() -> str | None:
  spec = importlib.util.find_spec("tensorly")
  if spec is None or not spec.submodule_search_locations:
    return None
  return os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data")


def kinetic_dir(manual_dir: str | None = None) -> str:
  """The folder holding ``Kinetic.npy`` and ``Kinetic_missing.npy``.

  Order: ``manual_dir`` if given; else the copy inside the installed tensorly package;
  else ``$REPROJAX_MANUAL_DIR/kinetic``. Raises ``FileNotFoundError`` saying how to get it.
  """
  how = ("The files ship in the tensorly package (pip install 'tensorly>=0.8'), under "
         "tensorly/datasets/data/; or copy them into $REPROJAX_MANUAL_DIR/kinetic/.")
  if manual_dir is not None:
    return paths.manual_dir("kinetic", manual_dir, required=KINETIC_FILES, how_to_get=how)
  tl_dir = _tensorly_data_dir()
  if tl_dir and all(os.path.isfile(os.path.join(tl_dir, f)) for f in KINETIC_FILES):
    return tl_dir
  return paths.manual_dir("kinetic", None, required=KINETIC_FILES, how_to_get=how)


def load_kinetic(manual_dir: str | None = None) -> Kinetic:
  """Loads the Kinetic tensor (see :func:`kinetic_dir` for where from).

  Modes: 0 measurement (64 samples; unordered), 1 emission wavelength, 2
  excitation wavelength, 3 time; the coordinates are those documented by tensorly
  (emission ``472 + 7.5 i`` nm, excitation ``362 + 6 i`` nm, time ``(i + 1) / 3`` min).
  """
  folder = kinetic_dir(manual_dir)
  y = np.load(os.path.join(folder, KINETIC_FILES[0]))
  missing = np.load(os.path.join(folder, KINETIC_FILES[1])).astype(bool)
  if y.shape != (64, 12, 10, 60) or missing.shape != y.shape:
    raise ValueError(f"unexpected Kinetic shapes {y.shape}, {missing.shape}; expected (64, 12, 10, 60)")
  return Kinetic(y.astype(np.float64), ~missing, 472.0 + 7.5 * np.arange(12),
                 362.0 + 6.0 * np.arange(10), (np.arange(60) + 1.0) / 3.0)


def holdout_split(observed: np.ndarray, seed: int, fraction: float = 0.2
                  ) -> tuple[np.ndarray, np.ndarray]:
  """Holds out ``fraction`` of the observed entries at random (numpy generator of ``seed``).

  Returns bool masks ``(train, test)``; disjoint, their union is ``observed``.
  """
  if not 0.0 < fraction < 1.0:
    raise ValueError(f"fraction must be in (0, 1), got {fraction}")
  observed = np.asarray(observed, bool)
  idx = np.flatnonzero(observed)
  rng = np.random.default_rng(seed)
  test_idx = rng.choice(idx, size=int(round(fraction * idx.size)), replace=False)
  test = np.zeros(observed.size, bool)
  test[test_idx] = True
  test = test.reshape(observed.shape)
  return observed & ~test, test
