"""The registered examples of ``reprojax.algorithms.distseal`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.distseal.examples` is called, so importing the
package does no JAX work.
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import distseal as d
from reprojax.algorithms._common import Example

_B, _H, _W, _C, _K = 2, 16, 24, 3, 12  # distinct sizes; H and W multiples of 8 (JPEG)
_HOST = dict(jittable=False, vmappable=False)
_UNIT = (0.0, 1.0)


def _img(key, i=0, shape=(_B, _H, _W, _C)):
  return jax.random.uniform(jax.random.fold_in(key, i), shape)


def _msg(key):
  return jax.random.bernoulli(jax.random.fold_in(key, 7), 0.5, (_B, _K)).astype(jnp.int32)


def _logits(key):
  return 2.0 * jax.random.normal(jax.random.fold_in(key, 8), (_B, _K))


def _u(key, lo, hi, i=9):
  return jax.random.uniform(jax.random.fold_in(key, i), (), minval=lo, maxval=hi)


_BAD_IMG = np.full((_B, _H, _W, _C), 1.5, np.float32)

EXAMPLES = (
    Example("jpeg_like", d.jpeg_like, lambda key: (_img(key), _u(key, 10.0, 95.0)),
            bad_args=(_BAD_IMG, 50.0), ranges={0: _UNIT, 1: (1.0, 100.0)}),
    Example("jpeg_table", d.jpeg_table, lambda key: (_u(key, 10.0, 95.0),),
            bad_args=None),
    Example("gaussian_noise", d.gaussian_noise,
            lambda key: (key, _img(key), _u(key, 0.0, 0.1)),
            bad_args=(jax.random.key(0), np.ones((_H, _W), np.float32), 0.1),
            ranges={1: (0.0, None)}),
    Example("brightness", d.brightness, lambda key: (_img(key), _u(key, 0.5, 2.0)),
            bad_args=(np.ones((_B, _H, _W, _C), np.float32), -1.0), ranges={1: (0.0, None)}),
    Example("shift", d.shift,
            lambda key: (_img(key), jax.random.randint(key, (), -3, 4),
                         jax.random.randint(jax.random.fold_in(key, 1), (), -3, 4)),
            bad_args=(np.ones((_B, _H, _W, _C), np.float32), 0.5, 1),
            ranges={1: (-(_H - 1), _H - 1), 2: (-(_W - 1), _W - 1)}),
    Example("gaussian_blur", d.gaussian_blur, lambda key: (_img(key), _u(key, 0.5, 1.5)),
            bad_args=(np.ones((_B, _H, _W, _C), np.float32), 0.0), ranges={1: (0.0, None)}),
    Example("augment", d.augment, lambda key: (key, _img(key)),
            bad_args=(jax.random.key(0), np.ones((_B, 12, _W, _C), np.float32)),
            ranges={1: _UNIT}),
    Example("apply_edit_jpeg", lambda key, x: d.apply_edit(key, x, "jpeg"),
            lambda key: (key, _img(key)),
            bad_args=(jax.random.key(0), _BAD_IMG), ranges={1: _UNIT}),
    Example("psnr", d.psnr, lambda key: (_img(key, 0), _img(key, 1)),
            bad_args=(np.ones((_B, _H, _W, _C)), np.ones((_B, _H, _W + 1, _C)))),
    Example("ssim", d.ssim, lambda key: (_img(key, 0), _img(key, 1)),
            bad_args=(np.ones((_B, 4, 4, _C)), np.ones((_B, 4, 4, _C)))),
    Example("random_messages", lambda key: d.random_messages(key, _B, _K),
            lambda key: (key,), bad_args=(np.zeros((2,), np.float32),)),
    Example("bit_loss", d.bit_loss, lambda key: (_logits(key), _msg(key)),
            bad_args=(np.zeros((_B, _K)), np.full((_B, _K), 2, np.int32)), ranges={1: (0, 1)}),
    Example("matching_bits", d.matching_bits, lambda key: (_logits(key), _msg(key)),
            bad_args=(np.zeros((_B, _K)), np.zeros((_B, _K + 1), np.int32)),
            ranges={1: (0, 1)}),
    Example("bit_accuracy", d.bit_accuracy, lambda key: (_logits(key), _msg(key)),
            bad_args=(np.zeros((_B, _K)), np.full((_B, _K), -1, np.int32)),
            ranges={1: (0, 1)}),
    Example("binomial_pvalue", lambda k: d.binomial_pvalue(k, _K),
            lambda key: (jax.random.randint(key, (_B,), 0, _K + 1),),
            bad_args=(np.array([_K + 1, 0], np.int32),), ranges={0: (0, _K)}),
    Example("detect", lambda z, m, fpr: d.detect(z, m, fpr),
            lambda key: (_logits(key), _msg(key), _u(key, 1e-4, 0.1)),
            bad_args=(np.zeros((_B, _K)), np.zeros((_B, _K), np.int32), 0.0),
            ranges={1: (0, 1), 2: (0.0, 1.0)}),
    Example("flag_threshold", d.flag_threshold, lambda key: (32, 1e-3),
            bad_args=(32, 1.5), **_HOST),
    Example("embed", d.embed,
            lambda key: (jax.random.normal(key, (_B, 4, 4, _C)),
                         jnp.tanh(jax.random.normal(jax.random.fold_in(key, 1), (_B, 4, 4, _C))),
                         _u(key, 0.0, 2.0)),
            bad_args=(np.zeros((_B, 4, 4, _C)), np.zeros((_B, 4, 5, _C)), 1.0),
            ranges={2: (0.0, None)}),
    Example("watermark_loss", lambda z, m: d.watermark_loss(z, m), lambda key: (_logits(key), _msg(key)),
            bad_args=(np.zeros((_B, _K)), np.zeros((_B + 1, _K), np.int32)), ranges={1: (0, 1)}),
    Example("watermark_loss_with_image",
            lambda z, m, xw, x: d.watermark_loss(z, m, xw, x, image_weight=1.0),
            lambda key: (_logits(key), _msg(key), _img(key, 0), _img(key, 1)),
            bad_args=(np.zeros((_B, _K)), np.zeros((_B, _K), np.int32),
                      np.zeros((_B + 1, _H, _W, _C)), np.zeros((_B + 1, _H, _W, _C))),
            ranges={1: (0, 1)}),
    Example("decoder_distill_loss", d.decoder_distill_loss,
            lambda key: (_img(key, 0), _img(key, 1), _logits(key), _msg(key)),
            bad_args=(np.zeros((_B, _H, _W, _C)), np.zeros((_B, _H, _W, _C)),
                      np.zeros((_B + 1, _K)), np.zeros((_B + 1, _K), np.int32)),
            ranges={3: (0, 1)}),
)
