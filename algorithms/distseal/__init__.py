"""DistSeal (ICML 2026): latent-space watermarking, distilled into the decoder or the generator.

The pieces every DistSeal experiment composes: the edits a watermark must survive and the
image-quality metrics (``_augment``), messages, the bit loss and detection by a binomial
test (``_detect``), the embedding rule and the objectives of post-hoc training and of the
two distillations (``_losses``). The networks (autoencoder, embedder, extractor,
generator) are Flax modules in ``reprojax.models``; these functions take their outputs.

Public API::

    from reprojax.algorithms import distseal
    m_BxK = distseal.random_messages(key, num, bits)
    z_w = distseal.embed(z, embedder_out, strength)                # z + s E(z, m)
    loss_B = distseal.watermark_loss(extractor(distseal.augment(key, decoder(z_w))), m_BxK)
    loss_B = distseal.decoder_distill_loss(student(z), teacher_images, extractor(student(z)), m)
    p_B, flagged_B = distseal.detect(bit_logits_BxK, m_BxK, fpr=1e-3)
    psnr_B, ssim_B = distseal.psnr(x_w, x), distseal.ssim(x_w, x)
    x_jpeg = distseal.jpeg_like(x, quality=50)                      # gradients pass through

References:
  DistSeal: latent-space watermarking distilled into generators, ICML 2026
  (github.com/facebookresearch/distseal).
  Fernandez et al. The Stable Signature, ICCV 2023. Wang et al. SSIM, IEEE TIP 2004.
"""

from reprojax.algorithms.distseal._augment import EDITS
from reprojax.algorithms.distseal._augment import JPEG_LUMA_8x8
from reprojax.algorithms.distseal._augment import EditRanges
from reprojax.algorithms.distseal._augment import apply_edit
from reprojax.algorithms.distseal._augment import augment
from reprojax.algorithms.distseal._augment import brightness
from reprojax.algorithms.distseal._augment import gaussian_blur
from reprojax.algorithms.distseal._augment import gaussian_noise
from reprojax.algorithms.distseal._augment import jpeg_like
from reprojax.algorithms.distseal._augment import jpeg_table
from reprojax.algorithms.distseal._augment import psnr
from reprojax.algorithms.distseal._augment import shift
from reprojax.algorithms.distseal._augment import ssim
from reprojax.algorithms.distseal._detect import binomial_pvalue
from reprojax.algorithms.distseal._detect import bit_accuracy
from reprojax.algorithms.distseal._detect import bit_loss
from reprojax.algorithms.distseal._detect import detect
from reprojax.algorithms.distseal._detect import flag_threshold
from reprojax.algorithms.distseal._detect import matching_bits
from reprojax.algorithms.distseal._detect import random_messages
from reprojax.algorithms.distseal._losses import decoder_distill_loss
from reprojax.algorithms.distseal._losses import embed
from reprojax.algorithms.distseal._losses import watermark_loss

__all__ = (
    "EDITS", "JPEG_LUMA_8x8", "EditRanges", "apply_edit", "augment", "binomial_pvalue",
    "bit_accuracy", "bit_loss", "brightness", "decoder_distill_loss", "detect", "embed",
    "flag_threshold", "gaussian_blur", "gaussian_noise", "jpeg_like", "jpeg_table",
    "matching_bits", "psnr", "random_messages", "shift", "ssim", "watermark_loss",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.distseal import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
