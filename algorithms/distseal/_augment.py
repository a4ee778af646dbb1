"""Image edits a watermark must survive, and the image-quality metrics, in JAX.

Images are ``images_BxHxWxC`` floats in ``[0, 1]`` (channels last). Every edit is a pure
function, differentiable where the edit is (the JPEG-like quantisation passes gradients
straight through its rounding, as watermark trainers do), so one training step can
apply them inside ``jit``; :func:`augment` draws one edit per image from a key.

The JPEG-like edit is baseline JPEG's lossy part on the luminance plane: 8x8 blocks,
level shift by 128, the orthonormal 2-D DCT-II, division by the Annex K luminance table
scaled to ``quality`` as libjpeg scales it (50 is the table itself), rounding, and the
inverse. The entropy coding is lossless and omitted; what is left out against a real
encoder is the rounding of the decoded pixels to integers (``tests`` compare with
Pillow's JPEG at matched quality). Colour images are quantised per channel with the
luminance table (no YCbCr conversion, no chroma subsampling).

References:
  ITU-T T.81 (JPEG), Annex K.1 (the luminance quantisation table); the Independent JPEG
  Group's ``jcparam.c`` (quality scaling).
  Wang, Bovik, Sheikh, Simoncelli. Image quality assessment: from error visibility to
  structural similarity. IEEE TIP 2004 (SSIM; ``win_size`` 7, uniform window, sample
  covariance: scikit-image's defaults).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

# ITU-T T.81 Annex K.1: the luminance quantisation table at quality 50.
JPEG_LUMA_8x8 = np.array([
    [16, 11, 10, 16, 24, 40, 51, 61],
    [12, 12, 14, 19, 26, 58, 60, 55],
    [14, 13, 16, 24, 40, 57, 69, 56],
    [14, 17, 22, 29, 51, 87, 80, 62],
    [18, 22, 37, 56, 68, 109, 103, 77],
    [24, 35, 55, 64, 81, 104, 113, 92],
    [49, 64, 78, 87, 103, 121, 120, 101],
    [72, 92, 95, 98, 112, 100, 103, 99]], np.float32)

EDITS = ("identity", "noise", "shift", "blur", "brightness", "jpeg")


def _images(name, x):
  return _common.check_arrays({name: x})[name]


def _check_range(name, x):
  _common.check_in_range(name, x, 0.0, 1.0)


def scalar(name, value, lo=None, hi=None, *, lo_open=False, hi_open=False, kind="float"):
  """A 0-d argument (a number or a 0-d array, traced or not), range-checked when concrete."""
  v = _common.check_arrays({name: value}, scalars=(name,), kinds={name: kind})[name]
  _common.check_in_range(name, v, lo, hi, lo_open=lo_open, hi_open=hi_open)
  return v


def jpeg_table(quality) -> jax.Array:
  """The 8x8 luminance table at ``quality`` in [1, 100], libjpeg's scaling: ``5000 / q``
  below 50, ``200 - 2 q`` from 50, entries ``floor((base * scale + 50) / 100)`` in [1, 255]."""
  q = jnp.asarray(scalar("quality", quality, 1.0, 100.0), jnp.float32)
  scale = jnp.where(q < 50, 5000.0 / q, 200.0 - 2.0 * q)
  return jnp.clip(jnp.floor((JPEG_LUMA_8x8 * scale + 50.0) / 100.0), 1.0, 255.0)


def _dct_8x8() -> np.ndarray:
  """The orthonormal DCT-II matrix ``D`` (rows: frequencies), ``D @ D.T = I``."""
  k, n = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
  d = np.cos(np.pi * (2 * n + 1) * k / 16.0) * np.sqrt(2.0 / 8.0)
  d[0] /= np.sqrt(2.0)
  return d.astype(np.float32)


def jpeg_like(images_BxHxWxC, quality) -> jax.Array:
  """JPEG's block-DCT quantisation at ``quality`` (1-100); ``H`` and ``W`` multiples of 8.

  Returns the decoded images, clipped to [0, 1] (not rounded to 8 bits). The rounding of
  the DCT coefficients passes gradients straight through.
  """
  x = _images("images_BxHxWxC", images_BxHxWxC)
  _check_range("images_BxHxWxC", x)
  _, h, w, _ = x.shape
  if h % 8 or w % 8:
    raise ValueError(f"images_BxHxWxC must have height and width multiples of 8 (JPEG's "
                     f"blocks), got shape {x.shape}")
  return _jpeg_like(x, scalar("quality", quality, 1.0, 100.0))


@jax.jit  # one program for the arithmetic (eagerly, one per operation): values checked above
def _jpeg_like(x, quality):
  b, h, w, c = x.shape
  d = jnp.asarray(_dct_8x8())
  t = jpeg_table(quality)
  blocks = x.reshape(b, h // 8, 8, w // 8, 8, c) * 255.0 - 128.0  # (b, i, y, j, x, c)
  coef = jnp.einsum("uy,biyjxc,vx->biujvc", d, blocks, d)
  scaled = coef / t[None, None, :, None, :, None]
  rounded = scaled + jax.lax.stop_gradient(jnp.round(scaled) - scaled)
  back = jnp.einsum("uy,biujvc,vx->biyjxc", d, rounded * t[None, None, :, None, :, None], d)
  return jnp.clip((back + 128.0) / 255.0, 0.0, 1.0).reshape(b, h, w, c)


def gaussian_noise(key, images_BxHxWxC, std) -> jax.Array:
  """Adds N(0, std^2) to every pixel and clips to [0, 1]."""
  x = _images("images_BxHxWxC", images_BxHxWxC)
  key = _common.check_key("key", key)
  std = scalar("std", std, 0.0)
  return jnp.clip(x + std * jax.random.normal(key, x.shape, x.dtype), 0.0, 1.0)


def brightness(images_BxHxWxC, factor) -> jax.Array:
  """Multiplies every pixel by ``factor`` (> 0) and clips to [0, 1]."""
  x = _images("images_BxHxWxC", images_BxHxWxC)
  factor = scalar("factor", factor, 0.0, lo_open=True)
  return jnp.clip(x * factor, 0.0, 1.0)


def shift(images_BxHxWxC, dy, dx) -> jax.Array:
  """Translates by ``(dy, dx)`` whole pixels (integers, traced or not); the uncovered
  border is 0 (black)."""
  x = _images("images_BxHxWxC", images_BxHxWxC)
  _, h, w, _ = x.shape
  dy = scalar("dy", dy, -(h - 1), h - 1, kind="int")
  dx = scalar("dx", dx, -(w - 1), w - 1, kind="int")
  return _shift(x, dy, dx)


@jax.jit
def _shift(x, dy, dx):
  _, h, w, _ = x.shape
  rows = jnp.arange(h) - dy
  cols = jnp.arange(w) - dx
  keep = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
  moved = x[:, jnp.clip(rows, 0, h - 1)][:, :, jnp.clip(cols, 0, w - 1)]
  return jnp.where(keep[None, :, :, None], moved, 0.0)


def gaussian_blur(images_BxHxWxC, sigma, size: int = 5) -> jax.Array:
  """Separable Gaussian blur, an odd ``size`` x ``size`` kernel of std ``sigma`` (> 0),
  normalised to sum 1; the border is extended by its edge pixels."""
  x = _images("images_BxHxWxC", images_BxHxWxC)
  size = _common.check_int("size", size, 1)
  if size % 2 == 0:
    raise ValueError(f"size must be odd, got {size}")
  sigma = scalar("sigma", sigma, 0.0, lo_open=True)
  r = size // 2
  k = jnp.exp(-0.5 * (jnp.arange(-r, r + 1, dtype=jnp.float32) / sigma) ** 2)
  k = k / k.sum()
  p = jnp.pad(x, ((0, 0), (r, r), (r, r), (0, 0)), mode="edge")
  h, w = x.shape[1], x.shape[2]
  p = sum(k[i] * p[:, i:i + h] for i in range(size))  # along H
  return sum(k[i] * p[:, :, i:i + w] for i in range(size))  # along W


class EditRanges:
  """The strengths :func:`augment` draws from (uniform within each range)."""

  noise_std = (0.02, 0.08)
  max_shift = 2  # pixels, each way
  blur_sigma = (0.5, 1.2)
  brightness = (0.5, 2.0)
  jpeg_quality = (40.0, 80.0)


def apply_edit(key, images_BxHxWxC, edit: str, strength=None) -> jax.Array:
  """One named edit of :data:`EDITS` at a given strength (``None``: drawn from
  :class:`EditRanges` with ``key``); the same edit and strength for the whole batch."""
  _common.check_choice("edit", edit, EDITS)
  x = _images("images_BxHxWxC", images_BxHxWxC)
  key = _common.check_key("key", key)
  k1, k2 = jax.random.split(key)
  u = lambda lo_hi: jax.random.uniform(k1, (), minval=lo_hi[0], maxval=lo_hi[1])  # noqa: E731
  if edit == "identity":
    return x
  if edit == "noise":
    return gaussian_noise(k2, x, u(EditRanges.noise_std) if strength is None else strength)
  if edit == "shift":
    m = EditRanges.max_shift
    if strength is None:
      dy, dx = jax.random.randint(k1, (2,), -m, m + 1)
    else:
      dy, dx = strength
    return shift(x, dy, dx)
  if edit == "blur":
    return gaussian_blur(x, u(EditRanges.blur_sigma) if strength is None else strength)
  if edit == "brightness":
    return brightness(x, u(EditRanges.brightness) if strength is None else strength)
  return jpeg_like(x, u(EditRanges.jpeg_quality) if strength is None else strength)


def augment(key, images_BxHxWxC, edits: tuple[str, ...] = EDITS) -> jax.Array:
  """A random edit of ``edits`` per image (each at a random strength): what a watermark
  trainer applies between the decoder and the extractor. ``jit``- and ``vmap``-able.

  Where we depart from the public code: it applies two edits in a row, each drawn from 14
  (flips, crops, resizes, rotations, perspective, median filter, colour jitter, JPEG at
  quality 40-80, blur), and no Gaussian noise; we draw one edit from the issue's five
  (JPEG's range and brightness's as there) on small grey images."""
  x = _images("images_BxHxWxC", images_BxHxWxC)
  key = _common.check_key("key", key)
  edits = tuple(edits)
  if not edits:
    raise ValueError("edits must name at least one edit")
  for e in edits:
    _common.check_choice("edits", e, EDITS)
  if "jpeg" in edits and (x.shape[1] % 8 or x.shape[2] % 8):
    raise ValueError(f"images_BxHxWxC must have height and width multiples of 8 (JPEG's "
                     f"blocks), got shape {x.shape}")
  return _augment(key, x, edits)


@functools.partial(jax.jit, static_argnames="edits")
def _augment(key, x, edits):
  choose, draw = jax.random.split(key)
  which_B = jax.random.randint(choose, (x.shape[0],), 0, len(edits))
  keys_B = jax.random.split(draw, x.shape[0])
  branches = [lambda k, im, e=e: apply_edit(k, im[None], e)[0] for e in edits]

  def one(i, k, im):
    return jax.lax.switch(i, branches, k, im)

  return jax.vmap(one)(which_B, keys_B, x)


def psnr(images_BxHxWxC, reference_BxHxWxC, data_range: float = 1.0) -> jax.Array:
  """Peak signal-to-noise ratio per image ``(B,)``, in dB: ``10 log10(range^2 / MSE)``
  (+inf for identical images)."""
  a = _common.check_arrays({"images_BxHxWxC": images_BxHxWxC,
                            "reference_BxHxWxC": reference_BxHxWxC})
  x, y = a["images_BxHxWxC"], a["reference_BxHxWxC"]
  mse = jnp.mean((x - y) ** 2, axis=(1, 2, 3))
  return 10.0 * jnp.log10(data_range ** 2 / mse)


def ssim(images_BxHxWxC, reference_BxHxWxC, data_range: float = 1.0,
         win_size: int = 7) -> jax.Array:
  """Structural similarity per image ``(B,)``: the mean SSIM over the windows that lie
  inside the image (``win_size`` square, uniform weights, sample covariance), averaged
  over channels; scikit-image's ``structural_similarity`` defaults."""
  a = _common.check_arrays({"images_BxHxWxC": images_BxHxWxC,
                            "reference_BxHxWxC": reference_BxHxWxC})
  x, y = a["images_BxHxWxC"], a["reference_BxHxWxC"]
  win_size = _common.check_int("win_size", win_size, 2)
  if x.shape[1] < win_size or x.shape[2] < win_size:
    raise ValueError(f"images must be at least win_size={win_size} pixels each way, got "
                     f"shape {x.shape}")
  n = win_size * win_size

  def mean(v):
    s = jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, win_size, win_size, 1), (1, 1, 1, 1),
                              "VALID")
    return s / n

  mx, my = mean(x), mean(y)
  cov = n / (n - 1.0)
  vx = cov * (mean(x * x) - mx * mx)
  vy = cov * (mean(y * y) - my * my)
  vxy = cov * (mean(x * y) - mx * my)
  c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
  s = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
  return jnp.mean(s, axis=(1, 2, 3))
