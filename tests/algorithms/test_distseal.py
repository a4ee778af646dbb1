"""Tests of algorithms.distseal against independent references (issue 23's checks).

PSNR and SSIM against scikit-image's; the JPEG-like edit against Pillow's JPEG encoder
and decoder at matched quality; the binomial p-value against ``scipy.stats.binomtest``;
under the null (random logits, no watermark) bit accuracy sits at chance and the
p-values are uniform (Kolmogorov-Smirnov); the edits' own properties (a shift moves
pixels, a blur keeps the mean of a constant image, gradients pass the JPEG rounding).
"""

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from PIL import Image
from skimage.metrics import peak_signal_noise_ratio
from skimage.metrics import structural_similarity
from sklearn.datasets import load_digits

from reprojax.algorithms import distseal


def _digits(n=6, noise=0.0, seed=0):
  """sklearn's digits, 4x upsampled to 32x32, on 8-bit levels (what a JPEG encoder takes)."""
  d = load_digits().images[:n] / 16.0
  x = np.kron(d, np.ones((4, 4)))[..., None]
  if noise:
    x = np.clip(x + noise * np.random.default_rng(seed).normal(size=x.shape), 0, 1)
  return (np.round(x * 255) / 255).astype(np.float32)


def _pillow_jpeg(images, quality):
  out = []
  for im in images[..., 0]:
    buf = io.BytesIO()
    Image.fromarray(np.round(im * 255).astype(np.uint8), "L").save(buf, "JPEG",
                                                                   quality=quality)
    buf.seek(0)
    out.append(np.asarray(Image.open(buf), np.float32))
  return np.stack(out)[..., None]  # 0..255


@pytest.mark.parametrize("noise", [0.0, 0.1])
@pytest.mark.parametrize("quality", [30, 50, 75, 90])
def test_jpeg_like_is_pillows_jpeg_up_to_its_integer_dct(noise, quality):
  x = _digits(noise=noise)
  ours = np.round(np.asarray(distseal.jpeg_like(x, quality)) * 255)
  pil = _pillow_jpeg(x, quality)
  gap = np.abs(ours - pil).mean()
  jpeg_error = np.abs(x * 255 - pil).mean()
  # libjpeg's integer DCT rounds differently (and a coefficient on a rounding tie moves a
  # whole quantisation step): measured under the suite's flags 0.09-0.81 grey levels apart,
  # at most 0.10 of what JPEG itself changes (0.9-12 levels), 77-94% of pixels equal
  assert gap < 0.15 * jpeg_error, (gap, jpeg_error)
  assert (ours == pil).mean() > 0.7, (ours == pil).mean()


def test_jpeg_table_follows_libjpeg_scaling():
  t50 = np.asarray(distseal.jpeg_table(50))
  np.testing.assert_array_equal(t50, distseal.JPEG_LUMA_8x8)
  np.testing.assert_array_equal(np.asarray(distseal.jpeg_table(100)), np.ones((8, 8)))
  # quality 10: scale 500; quality 80: scale 40
  np.testing.assert_array_equal(np.asarray(distseal.jpeg_table(10)),
                                np.clip(np.floor((distseal.JPEG_LUMA_8x8 * 500 + 50) / 100), 1, 255))
  np.testing.assert_array_equal(np.asarray(distseal.jpeg_table(80)),
                                np.clip(np.floor((distseal.JPEG_LUMA_8x8 * 40 + 50) / 100), 1, 255))


def test_jpeg_gradient_passes_the_rounding():
  x = jnp.asarray(_digits(2))
  g = jax.grad(lambda v: jnp.sum(distseal.jpeg_like(v, 75.0)))(x * 0.5 + 0.25)
  assert np.all(np.isfinite(np.asarray(g))) and float(jnp.abs(g).mean()) > 0.5


def test_psnr_and_ssim_equal_scikit_image():
  x = _digits()
  y = np.clip(x + 0.05 * np.random.default_rng(1).normal(size=x.shape), 0, 1).astype(np.float32)
  want_psnr = [peak_signal_noise_ratio(x[i], y[i], data_range=1.0) for i in range(len(x))]
  want_ssim = [structural_similarity(y[i, ..., 0], x[i, ..., 0], data_range=1.0)
               for i in range(len(x))]
  np.testing.assert_allclose(np.asarray(distseal.psnr(y, x)), want_psnr, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(distseal.ssim(y, x)), want_ssim, atol=2e-5)
  # colour: scikit-image averages the channels
  rgb_x, rgb_y = np.repeat(x, 3, -1), np.concatenate([y, x, y], -1)
  want = structural_similarity(rgb_y[0], rgb_x[0], data_range=1.0, channel_axis=-1)
  np.testing.assert_allclose(float(distseal.ssim(rgb_y[:1], rgb_x[:1])[0]), want, atol=2e-5)


def test_binomial_pvalue_equals_scipy_binomtest():
  for n in (8, 32, 48):
    k = np.arange(0, n + 1)
    want = [scipy.stats.binomtest(int(i), n, 0.5, alternative="greater").pvalue for i in k]
    np.testing.assert_allclose(np.asarray(distseal.binomial_pvalue(k, n)), want, rtol=2e-4,
                               atol=1e-7)


def test_flag_threshold_is_the_exact_cut():
  for n, fpr in ((32, 1e-3), (48, 1e-6), (16, 0.05)):
    k = distseal.flag_threshold(n, fpr)
    assert scipy.stats.binom.sf(k - 1, n, 0.5) <= fpr < scipy.stats.binom.sf(k - 2, n, 0.5)


def test_under_the_null_bits_are_at_chance_and_pvalues_uniform():
  key = jax.random.key(0)
  n, bits = 4000, 32
  msgs = distseal.random_messages(jax.random.fold_in(key, 1), n, bits)
  logits = jax.random.normal(jax.random.fold_in(key, 2), (n, bits))  # no watermark
  acc = np.asarray(distseal.bit_accuracy(logits, msgs))
  assert abs(acc.mean() - 0.5) < 0.01
  p, flagged = distseal.detect(logits, msgs, fpr=0.01)
  # discrete p-values: randomised between our p(k + 1) and p(k) they are exactly uniform
  # under the null, whatever the number of bits
  k = np.asarray(distseal.matching_bits(logits, msgs))
  upper = np.asarray(p, np.float64)
  lower = np.where(k < bits, np.asarray(distseal.binomial_pvalue(np.minimum(k + 1, bits), bits)),
                   0.0)
  u = lower + np.random.default_rng(0).uniform(size=n) * (upper - lower)
  assert scipy.stats.kstest(u, "uniform").pvalue > 0.01
  assert np.asarray(flagged).mean() <= 0.01 + 3 * np.sqrt(0.01 / n)


def test_bit_loss_equals_optax_sigmoid_cross_entropy():
  import optax  # pylint: disable=g-import-not-at-top
  z = jax.random.normal(jax.random.key(3), (5, 16)) * 3
  m = distseal.random_messages(jax.random.key(4), 5, 16)
  want = optax.sigmoid_binary_cross_entropy(z, m.astype(jnp.float32)).mean(-1)
  np.testing.assert_allclose(np.asarray(distseal.bit_loss(z, m)), np.asarray(want), rtol=1e-6)


def test_edits():
  x = _digits(4)
  moved = np.asarray(distseal.shift(x, 2, -3))
  np.testing.assert_array_equal(moved[:, 2:, :-3], x[:, :-2, 3:])
  assert np.all(moved[:, :2] == 0) and np.all(moved[:, :, -3:] == 0)
  flat = np.full((1, 16, 16, 1), 0.4, np.float32)
  np.testing.assert_allclose(np.asarray(distseal.gaussian_blur(flat, 1.0)), flat, atol=1e-6)
  blurred = np.asarray(distseal.gaussian_blur(x, 1.0))
  assert np.abs(np.diff(blurred, axis=2)).mean() < np.abs(np.diff(x, axis=2)).mean()
  np.testing.assert_allclose(np.asarray(distseal.brightness(x, 0.5)), x * 0.5, rtol=1e-6)
  out = np.asarray(distseal.augment(jax.random.key(0), x))
  assert out.shape == x.shape and out.min() >= 0 and out.max() <= 1
  for e in distseal.EDITS:
    y = np.asarray(distseal.apply_edit(jax.random.key(1), x, e))
    assert y.shape == x.shape and np.all(np.isfinite(y))
    assert (e == "identity") == np.array_equal(y, x), e


@pytest.mark.parametrize("call,match", [
    (lambda: distseal.jpeg_like(np.ones((1, 12, 16, 1), np.float32), 50), "multiples of 8"),
    (lambda: distseal.jpeg_like(np.full((1, 8, 8, 1), 1.5, np.float32), 50), r"<= 1\.0"),
    (lambda: distseal.jpeg_like(np.ones((1, 8, 8, 1), np.float32), 0.5), "quality"),
    (lambda: distseal.detect(np.zeros((2, 8)), np.zeros((2, 9), np.int32), 0.01), "axis K"),
    (lambda: distseal.detect(np.zeros((2, 8)), np.full((2, 8), 2, np.int32), 0.01),
     "messages_BxK"),
    (lambda: distseal.detect(np.zeros((2, 8)), np.zeros((2, 8), np.int32), 1.5), "fpr"),
    (lambda: distseal.apply_edit(jax.random.key(0), np.ones((1, 8, 8, 1)), "rotate"), "edit"),
    (lambda: distseal.shift(np.ones((1, 8, 8, 1)), 0.5, 1), "dy"),
])
def test_bad_input_names_the_argument(call, match):
  with pytest.raises(ValueError, match=match):
    call()
