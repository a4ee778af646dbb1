"""A small text-conditioned U-Net with cross-attention (Flax Linen), for flow or diffusion models.

The suite's conditional image generator (``shared/STYLE.md``, "One of each"): a
velocity (or noise) network ``f(x_t, t, prompt)`` for small images, shaped like
Stable Diffusion's U-Net at toy size, so that methods which edit its
cross-attention (concept erasure: ``reprojax.algorithms.oce``) act on the same
kind of layer:

* :class:`TextEncoder`: token embedding plus learned positions, then
  ``num_layers`` pre-norm transformer blocks (causal by default, as CLIP's text
  encoder, so a prompt's last content token sees the whole prompt and nothing
  after it) and a final LayerNorm: per-token context vectors ``(B, L, text_width)``.
* :class:`CrossAttention`: queries from the image features, keys and values from
  the context tokens (padding masked out). Its value projection ``to_v`` (no bias)
  is the ``W0`` of the editing methods: ``v = W0 c`` with ``W0`` of shape
  ``(width, text_width)`` (Flax stores the kernel as ``W0.T``); the inner width is
  the block's channels (as in Stable Diffusion) times ``attn_multiplier``.
* :class:`CondUNet`: a convolutional U-Net over ``len(channels)`` resolutions with
  one residual block and one cross-attention block per resolution on the way down,
  one of each in the middle and on the way up (skip connections concatenated), a
  sinusoidal time embedding added in every residual block. With
  ``channels=(32, 64)`` on 8x8 images it has four cross-attention layers, two of
  width 32 and two of width 64.

:func:`value_weights` and :func:`with_value_weights` read and write every ``to_v``
as ``W0`` matrices ``(d_out, d_in)`` by their parameter path, for edits of the
form ``W_new = R W0``.

Token id 0 is padding (ignored by every attention); the caller's tokenizer
(``reprojax.data.digits``) fixes the rest of the vocabulary.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

PAD = 0  # the padding token id


def _attend(q_BxNxHxK, k_BxLxHxK, v_BxLxHxK, mask_BxNxL):
  logits = jnp.einsum("bnhk,blhk->bhnl", q_BxNxHxK, k_BxLxHxK) / math.sqrt(q_BxNxHxK.shape[-1])
  logits = jnp.where(mask_BxNxL[:, None], logits, jnp.finfo(logits.dtype).min)
  w = jax.nn.softmax(logits, axis=-1)
  return jnp.einsum("bhnl,blhk->bnhk", w, v_BxLxHxK)


class TextEncoder(nn.Module):
  """Prompt tokens ``(B, L)`` -> context vectors ``(B, L, width)`` and the token mask ``(B, L)``."""

  vocab_size: int
  width: int = 64
  max_len: int = 8
  num_layers: int = 1
  num_heads: int = 4
  causal: bool = True

  @nn.compact
  def __call__(self, tokens_BxL: jax.Array) -> tuple[jax.Array, jax.Array]:
    _, length = tokens_BxL.shape
    if length > self.max_len:
      raise ValueError(f"tokens_BxL must have at most max_len={self.max_len} tokens, got {length}")
    mask_BxL = tokens_BxL != PAD
    pos = self.param("pos", nn.initializers.normal(0.02), (self.max_len, self.width))
    x = nn.Embed(self.vocab_size, self.width, name="embed")(tokens_BxL) + pos[:length]
    allowed = mask_BxL[:, None, :]
    if self.causal:
      allowed = allowed & jnp.tril(jnp.ones((length, length), bool))[None]
    allowed = allowed | jnp.eye(length, dtype=bool)[None]  # a padded query attends to itself
    head = self.width // self.num_heads
    for i in range(self.num_layers):
      h = nn.LayerNorm(name=f"ln_attn{i}")(x)
      qkv = nn.Dense(3 * self.width, use_bias=False, name=f"qkv{i}")(h)
      q, k, v = (a.reshape(*a.shape[:2], self.num_heads, head) for a in jnp.split(qkv, 3, -1))
      o = _attend(q, k, v, allowed).reshape(x.shape)
      x = x + nn.Dense(self.width, name=f"proj{i}")(o)
      h = nn.LayerNorm(name=f"ln_mlp{i}")(x)
      x = x + nn.Dense(self.width, name=f"mlp_out{i}")(
          nn.gelu(nn.Dense(4 * self.width, name=f"mlp_in{i}")(h)))
    return nn.LayerNorm(name="ln_final")(x), mask_BxL


class CrossAttention(nn.Module):
  """Image features attend to the prompt: ``x + to_out(attn(to_q(norm x), to_k c, to_v c))``."""

  num_heads: int = 4
  width: int | None = None  # inner width of q, k, v (the d_out of to_v); None: the channels

  @nn.compact
  def __call__(self, x_BxHxWxC, ctx_BxLxD, mask_BxL):
    b, hh, ww, c = x_BxHxWxC.shape
    inner = self.width or c
    head = inner // self.num_heads
    h = nn.LayerNorm(name="norm")(x_BxHxWxC.reshape(b, hh * ww, c))
    q = nn.Dense(inner, use_bias=False, name="to_q")(h).reshape(b, hh * ww, self.num_heads, head)
    k = nn.Dense(inner, use_bias=False, name="to_k")(ctx_BxLxD).reshape(
        b, -1, self.num_heads, head)
    v = nn.Dense(inner, use_bias=False, name="to_v")(ctx_BxLxD).reshape(
        b, -1, self.num_heads, head)
    o = _attend(q, k, v, jnp.broadcast_to(mask_BxL[:, None, :], (b, hh * ww, mask_BxL.shape[1])))
    return x_BxHxWxC + nn.Dense(c, name="to_out")(o.reshape(b, hh * ww, inner)).reshape(
        x_BxHxWxC.shape)


class ResBlock(nn.Module):
  """GroupNorm -> SiLU -> 3x3 conv, twice, plus the time embedding and a (1x1) skip."""

  channels: int
  groups: int = 8

  @nn.compact
  def __call__(self, x, temb):
    h = nn.Conv(self.channels, (3, 3))(nn.silu(nn.GroupNorm(min(self.groups, x.shape[-1]))(x)))
    h = h + nn.Dense(self.channels)(nn.silu(temb))[:, None, None, :]
    h = nn.Conv(self.channels, (3, 3))(nn.silu(nn.GroupNorm(self.groups)(h)))
    if x.shape[-1] != self.channels:
      x = nn.Conv(self.channels, (1, 1), name="skip")(x)
    return x + h


def time_embedding(t_B: jax.Array, dim: int, max_period: float = 1000.0) -> jax.Array:
  """Sinusoidal features of ``t`` in [0, 1] (scaled by ``max_period``): ``(B, dim)``."""
  half = dim // 2
  freqs = jnp.exp(-math.log(max_period) * jnp.arange(half) / half)
  args = (max_period * t_B)[:, None] * freqs[None]
  return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=-1)


class CondUNet(nn.Module):
  """``f(x_BxHxWxC, t_B, tokens_BxL) -> (B, H, W, C)``: a text-conditioned U-Net.

  ``H`` and ``W`` must be divisible by ``2 ** (len(channels) - 1)``.
  """

  vocab_size: int
  channels: Sequence[int] = (32, 64)
  text_width: int = 64
  text_layers: int = 1
  max_len: int = 8
  num_heads: int = 4
  time_dim: int = 64
  attn_multiplier: int = 1  # cross-attention inner width = attn_multiplier x the block's channels

  def text_encoder(self) -> TextEncoder:
    """The text encoder, whose parameters are ``params["params"]["text"]``."""
    return TextEncoder(self.vocab_size, self.text_width, self.max_len, self.text_layers,
                       self.num_heads, parent=None)

  def encode(self, params: Mapping[str, Any], tokens_BxL: jax.Array):
    """The prompt's context vectors ``(B, L, text_width)`` and mask: the inputs of every ``to_v``."""
    return self.text_encoder().apply({"params": params["params"]["text"]}, tokens_BxL)

  @nn.compact
  def __call__(self, x_BxHxWxC: jax.Array, t_B: jax.Array, tokens_BxL: jax.Array) -> jax.Array:
    ctx, mask = TextEncoder(self.vocab_size, self.text_width, self.max_len, self.text_layers,
                            self.num_heads, name="text")(tokens_BxL)
    temb = nn.Dense(self.time_dim)(nn.silu(nn.Dense(self.time_dim)(
        time_embedding(t_B, self.time_dim))))
    h = nn.Conv(self.channels[0], (3, 3), name="conv_in")(x_BxHxWxC)
    skips = []
    for i, c in enumerate(self.channels):
      if i:
        h = nn.Conv(c, (3, 3), strides=(2, 2), name=f"down{i}")(h)
      h = ResBlock(c, name=f"down_res{i}")(h, temb)
      h = CrossAttention(self.num_heads, self.attn_multiplier * c,
                         name=f"down_attn{i}")(h, ctx, mask)
      skips.append(h)
    h = ResBlock(self.channels[-1], name="mid_res")(h, temb)
    h = CrossAttention(self.num_heads, self.attn_multiplier * self.channels[-1],
                       name="mid_attn")(h, ctx, mask)
    for i in reversed(range(len(self.channels) - 1)):
      b, hh, ww, c = h.shape
      h = jax.image.resize(h, (b, 2 * hh, 2 * ww, c), "nearest")
      h = jnp.concatenate([h, skips[i]], axis=-1)
      h = ResBlock(self.channels[i], name=f"up_res{i}")(h, temb)
      h = CrossAttention(self.num_heads, self.attn_multiplier * self.channels[i],
                         name=f"up_attn{i}")(h, ctx, mask)
    h = nn.silu(nn.GroupNorm(8)(h))
    return nn.Conv(x_BxHxWxC.shape[-1], (3, 3), name="conv_out",
                   kernel_init=nn.initializers.zeros)(h)


def _paths(params: Mapping[str, Any]) -> list[tuple[str, ...]]:
  flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
  return sorted(k[:-1] for k in flat if k[-2:] == ("to_v", "kernel"))


def value_weights(params: Mapping[str, Any]) -> dict[str, jax.Array]:
  """Every cross-attention value projection as ``W0 (d_out, d_in)``, keyed by its module path.

  The keys (``"params/down_attn0/to_v"``, ...) are sorted, so layers come in one
  fixed order; :func:`with_value_weights` takes the same keys back.
  """
  flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
  return {"/".join(p): flat[p + ("kernel",)].T for p in _paths(params)}


def with_value_weights(params: Mapping[str, Any], weights: Mapping[str, Any]) -> Any:
  """``params`` with the named value projections replaced by ``weights[path]`` ``(d_out, d_in)``.

  Raises ``ValueError`` for an unknown path or a matrix of another shape.
  """
  flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
  known = {"/".join(p): p for p in _paths(params)}
  for name, w in weights.items():
    if name not in known:
      raise ValueError(f"weights has unknown value projection {name!r}; known: {sorted(known)}")
    key = known[name] + ("kernel",)
    if tuple(np.shape(w)) != tuple(flat[key].shape[::-1]):
      raise ValueError(f"weights[{name!r}] must have shape {flat[key].shape[::-1]} (d_out, d_in), "
                       f"got {np.shape(w)}")
    flat[key] = jnp.asarray(w, flat[key].dtype).T
  return flax.traverse_util.unflatten_dict(flat)
