"""The watermarker's embedding rule and the objectives of its training and distillations.

Symbols (the public code's, ``distseal/models/wam.py`` and ``losses/detperceptual.py``):
``z`` a latent of the generator's autoencoder, ``D`` its decoder, ``E(z, m)`` the
embedder's output for message ``m`` (bounded: the embedder ends in ``tanh``), ``s`` the
strength, ``X`` the extractor (pixels -> one logit per bit), ``A`` a random edit.

* Post-hoc latent watermarking: ``z_w = z + s E(z, m)``, ``x_w = D(z_w)``; the embedder
  and extractor minimise ``BCE(X(A(x_w)), m)``, ``D`` frozen but differentiated through.
  The public code's image-loss weight is 0 (imperceptibility comes from the ``tanh``
  bound, ``s``, and an adversarial term from its epoch 200); :func:`watermark_loss`
  keeps an optional MSE to the unwatermarked decode ``D(z)`` (weight 0 by default).
* The pixel baseline: ``x_w = x + s E_pix(x, m)``, the same loss.
* Decoder distillation: a fine-tuned decoder ``D_theta(z)`` learns the watermarked decode
  of a fixed message ``m*``, ``D(z + s E(z, m*))``, from the plain latent, with
  ``L1 + w_e BCE(X(D_theta(z)), m*)`` (no edit before the extractor); only the decoder
  trains.
* Generator distillation: the generator is fine-tuned with its own loss on watermarked
  latents ``z + s E(z, m*)`` (a flow or diffusion generator: its usual objective,
  ``reprojax.algorithms.flow_matching``), so what it samples decodes watermarked.

Every objective is per example ``(B,)``; the caller takes the mean.

References:
  DistSeal (ICML 2026; github.com/facebookresearch/distseal: ``models/wam.py``,
  ``losses/detperceptual.py``, ``deps/efficientvit/aecore/trainer.py``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common
from reprojax.algorithms.distseal import _augment
from reprojax.algorithms.distseal import _detect


def embed(latents_BxHxWxC, residual_BxHxWxC, strength) -> jax.Array:
  """The additive blend ``z + s E``: the watermarked latents (or pixels, for the pixel
  baseline, clipped by the caller). ``strength`` ``s`` >= 0, a scalar."""
  a = _common.check_arrays({"latents_BxHxWxC": latents_BxHxWxC,
                            "residual_BxHxWxC": residual_BxHxWxC})
  strength = _augment.scalar("strength", strength, 0.0)
  return a["latents_BxHxWxC"] + strength * a["residual_BxHxWxC"]


def watermark_loss(bit_logits_BxK, messages_BxK, watermarked_BxHxWxC=None,
                   reference_BxHxWxC=None, image_weight: float = 0.0) -> jax.Array:
  """The post-hoc objective per example: ``BCE(logits, m) + image_weight * MSE(x_w, x_ref)``
  (the image term only when both images are given; the public code's weight is 0)."""
  bce = _detect.bit_loss(bit_logits_BxK, messages_BxK)
  if (watermarked_BxHxWxC is None) != (reference_BxHxWxC is None):
    raise ValueError("watermarked_BxHxWxC and reference_BxHxWxC go together")
  if watermarked_BxHxWxC is None:
    return bce
  a = _common.check_arrays({"watermarked_BxHxWxC": watermarked_BxHxWxC,
                            "reference_BxHxWxC": reference_BxHxWxC})
  if a["watermarked_BxHxWxC"].shape[0] != bce.shape[0]:
    raise ValueError(f"the images and bit_logits_BxK must share the batch axis, got "
                     f"{a['watermarked_BxHxWxC'].shape[0]} and {bce.shape[0]}")
  image_weight = _augment.scalar("image_weight", image_weight, 0.0)
  mse = jnp.mean((a["watermarked_BxHxWxC"] - a["reference_BxHxWxC"]) ** 2, axis=(1, 2, 3))
  return bce + image_weight * mse


def decoder_distill_loss(student_BxHxWxC, teacher_BxHxWxC, bit_logits_BxK, messages_BxK,
                         bit_weight: float = 0.1) -> jax.Array:
  """Decoder distillation per example: ``mean |D_theta(z) - D(z + s E(z, m*))| +
  bit_weight * BCE(X(D_theta(z)), m*)`` (the public code's DC-AE weight: 0.1)."""
  a = _common.check_arrays({"student_BxHxWxC": student_BxHxWxC,
                            "teacher_BxHxWxC": teacher_BxHxWxC})
  bce = _detect.bit_loss(bit_logits_BxK, messages_BxK)
  if a["student_BxHxWxC"].shape[0] != bce.shape[0]:
    raise ValueError(f"student_BxHxWxC and bit_logits_BxK must share the batch axis, got "
                     f"{a['student_BxHxWxC'].shape[0]} and {bce.shape[0]}")
  bit_weight = _augment.scalar("bit_weight", bit_weight, 0.0)
  l1 = jnp.mean(jnp.abs(a["student_BxHxWxC"] - a["teacher_BxHxWxC"]), axis=(1, 2, 3))
  return l1 + bit_weight * bce
