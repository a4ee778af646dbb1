"""Small image autoencoder and watermark networks (Flax Linen): DistSeal's pieces at toy size.

* :class:`AutoEncoder`: a convolutional autoencoder, ``(B, H, W, C)`` pixels in [0, 1] to
  latents ``(B, H / 2^d, W / 2^d, latent_channels)`` and back (``d`` stride-2 stages), the
  stand-in for a generator's latent autoencoder (DC-AE, MaskGIT's VQGAN). ``encode`` and
  ``decode`` are its two halves (``method=``).
* :class:`Embedder`: ``E(v, m)`` for an input ``v`` (a latent, or pixels for the pixel
  baseline) and a message ``m`` of ``bits`` bits: ``v`` mapped by ``2 v - 1``, an input
  residual block, the message's code concatenated at every position, ``blocks`` residual
  blocks, a 1x1 output convolution, ``tanh`` (so ``|E| <= 1`` and the strength ``s`` of
  ``v + s E`` bounds the change). The message code follows the public code's table: bit
  ``k`` with value ``b`` selects row ``2 k + b`` of a learned ``(2 bits, code_width)``
  table, the rows summed. No normalisation layer (the public code's BatchNorm would need
  mutable batch statistics; at this size it is not needed).
* :class:`Extractor`: pixels -> one logit per bit: ``2 x - 1``, stride-2 convolution
  stages with GELU, global average pooling, a linear head.

Widths are fields, so the latent and pixel embedders of a comparison can be given the
same capacity (same ``width`` and ``blocks``: the same weights but for the input and
output convolutions).

References:
  DistSeal (ICML 2026; github.com/facebookresearch/distseal: ``models/embedder.py``,
  ``modules/msg_processor.py``, ``models/extractor.py``), at toy size.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class ResBlock(nn.Module):
  """``x + conv(gelu(conv(gelu(x))))`` (3x3), a 1x1 projection when widths differ."""

  width: int

  @nn.compact
  def __call__(self, x):
    h = nn.Conv(self.width, (3, 3))(nn.gelu(x))
    h = nn.Conv(self.width, (3, 3))(nn.gelu(h))
    if x.shape[-1] != self.width:
      x = nn.Conv(self.width, (1, 1), name="skip")(x)
    return x + h


class AutoEncoder(nn.Module):
  """Pixels in [0, 1] <-> latents; ``channels`` per stride-2 stage (the encoder's order)."""

  latent_channels: int = 4
  channels: Sequence[int] = (16, 32)
  out_channels: int = 1

  def setup(self):
    self.enc = [nn.Conv(c, (3, 3), strides=(2, 2)) for c in self.channels]
    self.enc_res = [ResBlock(c) for c in self.channels]
    self.to_latent = nn.Conv(self.latent_channels, (1, 1))
    self.from_latent = nn.Conv(self.channels[-1], (3, 3))
    self.dec_res = [ResBlock(c) for c in reversed(self.channels)]
    self.dec = [nn.ConvTranspose(c, (3, 3), strides=(2, 2))
                for c in tuple(reversed(self.channels))[1:] + (self.channels[0],)]
    self.to_pixels = nn.Conv(self.out_channels, (3, 3))

  def encode(self, x_BxHxWxC):
    h = 2.0 * x_BxHxWxC - 1.0
    for conv, res in zip(self.enc, self.enc_res):
      h = res(conv(h))
    return self.to_latent(nn.gelu(h))

  def decode(self, z_BxhxwxL):
    h = self.from_latent(z_BxhxwxL)
    for res, up in zip(self.dec_res, self.dec):
      h = up(nn.gelu(res(h)))
    return jax.nn.sigmoid(self.to_pixels(nn.gelu(h)))

  def __call__(self, x_BxHxWxC):
    return self.decode(self.encode(x_BxHxWxC))


class Embedder(nn.Module):
  """``E(v, m)`` in [-1, 1] with ``v``'s shape: the watermark residual for message ``m``."""

  bits: int
  width: int = 32
  blocks: int = 2
  code_width: int = 16

  @nn.compact
  def __call__(self, v_BxHxWxC, messages_BxK):
    b, h, w, c = v_BxHxWxC.shape
    table = self.param("message_table", nn.initializers.normal(1.0),
                       (2 * self.bits, self.code_width))
    rows_BxK = 2 * jnp.arange(self.bits) + messages_BxK.astype(jnp.int32)
    code_BxE = jnp.sum(table[rows_BxK], axis=1)
    x = ResBlock(self.width, name="inc")(2.0 * v_BxHxWxC - 1.0)
    x = jnp.concatenate([x, jnp.broadcast_to(code_BxE[:, None, None, :],
                                             (b, h, w, self.code_width))], axis=-1)
    for i in range(self.blocks):
      x = ResBlock(self.width, name=f"block{i}")(x)
    return jnp.tanh(nn.Conv(c, (1, 1), name="outc")(nn.gelu(x)))


class Extractor(nn.Module):
  """Pixels in [0, 1] -> ``bits`` logits (positive: bit 1)."""

  bits: int
  channels: Sequence[int] = (16, 32, 64)

  @nn.compact
  def __call__(self, x_BxHxWxC):
    h = 2.0 * x_BxHxWxC - 1.0
    for c in self.channels:
      h = nn.gelu(nn.Conv(c, (3, 3), strides=(2, 2))(h))
      h = nn.gelu(nn.Conv(c, (3, 3))(h))
    h = jnp.mean(h, axis=(1, 2))
    return nn.Dense(self.bits, name="head")(nn.LayerNorm()(h))
