"""A LLaMA-style decoder (Flax Linen) with a KV-cached, batched greedy ``generate``.

The suite's pretrained-language-model architecture, shared by the papers that run a real
small LM (``llm4ph``, ``pdr``); :mod:`reprojax.models.smollm2` loads SmolLM2-135M-Instruct
into it. It is the architecture of Touvron et al. (2023) as Hugging Face's ``LlamaModel``
computes it, so weights in that layout load unchanged:

* token embedding ``E (V, D)``; ``n_layers`` pre-norm blocks
  ``x += Attn(RMSNorm(x)); x += MLP(RMSNorm(x))``; a final RMSNorm; logits ``h E^T`` when the
  embeddings are tied, else a separate ``lm_head``.
* ``RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g``.
* grouped-query attention: ``n_heads`` query heads share ``n_kv_heads`` key/value heads
  (query head ``i`` reads key/value head ``i // (n_heads / n_kv_heads)``), causal, scaled by
  ``1 / sqrt(head_dim)``, no biases.
* rotary position embedding in the "rotate half" form: with ``x = [x1, x2]`` (the two halves of
  a head), ``rope(x, p) = [x1 cos - x2 sin, x2 cos + x1 sin]``, angles ``p theta^(-2j/H)``,
  ``j < H/2``. (llama.cpp's GGUF files store Q and K rows permuted for the interleaved form;
  the loader undoes that, see :mod:`reprojax.models.smollm2`.)
* SwiGLU MLP: ``down(silu(gate(x)) * up(x))``.

Parameter paths (layer ``i`` in ``layers_{i}``; kernels are ``(in, out)``, the transpose of a
PyTorch ``Linear`` weight)::

  params["params"]["embed"]                                      (V, D)
  params["params"]["layers_{i}"]["attn_norm"]["scale"]           (D,)
  params["params"]["layers_{i}"]["attn"]["q_proj"]["kernel"]     (D, N*H); k_proj, v_proj (D, K*H)
  params["params"]["layers_{i}"]["attn"]["o_proj"]["kernel"]     (N*H, D)
  params["params"]["layers_{i}"]["mlp_norm"]["scale"]            (D,)
  params["params"]["layers_{i}"]["mlp"]["gate_proj"]["kernel"]   (D, F); up_proj (D, F); down_proj (F, D)
  params["params"]["final_norm"]["scale"]                        (D,)
  params["params"]["lm_head"]["kernel"]                          (D, V), untied only

The layers are a Python loop, not an ``nn.scan`` over stacked weights: scanning slices every
layer's weights out of the stack at each step, a copy on CPU (SmolLM2's decode step took 2x
longer fully optimised, 5x with the test suite's ``JAX_DISABLE_MOST_OPTIMIZATIONS``); the
price is a longer trace and compile (SmolLM2's ``generate``: about 3.5 s on 2 cores).

Padding. Every entry takes an optional ``mask_BxT`` (1 for a real token, 0 for padding);
padding is never attended to, and the rotary positions count real tokens only (a token's
position is the number of real tokens before it), so a left-padded, right-padded or unpadded
prompt gives its real tokens the same logits.

Precision: float32 by default (``LlamaConfig.dtype``); RMSNorm, RoPE, the attention softmax
and the logits are computed in float32 whatever the dtype. On GPUs XLA may run float32
matmuls in TF32 unless ``jax.default_matmul_precision("highest")`` is set; the agreement with
transformers in ``tests/models/test_llama.py`` (max |logit difference| 1e-4) is on CPU.

References:
  Touvron et al., "LLaMA: Open and Efficient Foundation Language Models", 2023;
  Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021;
  Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models", 2023;
  Shazeer, "GLU Variants Improve Transformer", 2020.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
  """Sizes of a LLaMA decoder. Frozen (hashable), so it can be a static argument of ``jit``."""

  vocab_size: int  # V
  d_model: int  # D
  n_layers: int  # L
  n_heads: int  # N query heads; head_dim H = D / N
  n_kv_heads: int  # key/value heads, dividing n_heads (n_heads: plain multi-head attention)
  d_ff: int  # hidden width of the SwiGLU MLP
  rope_theta: float = 10000.0  # rotary base theta
  norm_eps: float = 1e-5  # RMSNorm epsilon
  tie_embeddings: bool = True  # logits = h E^T (True) or a separate lm_head
  max_len: int = 2048  # longest sequence (prompt plus generated tokens) that is accepted
  dtype: str = "float32"  # parameter and activation dtype
  causal: bool = True  # False: every token attends to every real token (a masked or
  # diffusion LM's denoiser; the forward pass only: decode and generate need causal)
  n_experts: int = 0  # > 0: each layer's MLP is a mixture of n_experts SwiGLU experts
  experts_top_k: int = 2  # experts each token is routed to (MoE only)

  def __post_init__(self):
    for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_len"):
      value = getattr(self, name)
      if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"LlamaConfig.{name} must be a positive int, got {value!r}")
    if self.d_model % self.n_heads:
      raise ValueError(f"LlamaConfig.d_model={self.d_model} must be divisible by "
                       f"n_heads={self.n_heads}")
    if self.head_dim % 2:
      raise ValueError(f"LlamaConfig head_dim = d_model / n_heads must be even for the rotary "
                       f"embedding, got {self.head_dim}")
    if self.n_heads % self.n_kv_heads:
      raise ValueError(f"LlamaConfig.n_heads={self.n_heads} must be a multiple of "
                       f"n_kv_heads={self.n_kv_heads}")
    if not (self.rope_theta > 1.0 and math.isfinite(self.rope_theta)):
      raise ValueError(f"LlamaConfig.rope_theta must be a finite number > 1, got "
                       f"{self.rope_theta!r}")
    if not (self.norm_eps > 0.0):
      raise ValueError(f"LlamaConfig.norm_eps must be > 0, got {self.norm_eps!r}")
    for name in ("n_experts", "experts_top_k"):
      value = getattr(self, name)
      if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise ValueError(f"LlamaConfig.{name} must be an int >= 0, got {value!r}")
    if self.n_experts and not 1 <= self.experts_top_k <= self.n_experts:
      raise ValueError(f"LlamaConfig.experts_top_k must lie in [1, n_experts={self.n_experts}],"
                       f" got {self.experts_top_k}")
    if not isinstance(self.causal, bool):
      raise ValueError(f"LlamaConfig.causal must be a bool, got {self.causal!r}")
    if self.dtype not in ("float32", "bfloat16", "float16"):
      raise ValueError(f"LlamaConfig.dtype must be 'float32', 'bfloat16' or 'float16', "
                       f"got {self.dtype!r}")

  @property
  def head_dim(self) -> int:
    return self.d_model // self.n_heads


class KVCache(NamedTuple):
  """Keys and values by cache slot: one ``(B, S, n_kv_heads, head_dim)`` array per layer."""

  k_BxSxKxH: tuple[jax.Array, ...]
  v_BxSxKxH: tuple[jax.Array, ...]

  @classmethod
  def zeros(cls, config: "LlamaConfig", batch: int, slots: int) -> "KVCache":
    shape = (batch, slots, config.n_kv_heads, config.head_dim)
    return cls(*(tuple(jnp.zeros(shape, config.dtype) for _ in range(config.n_layers))
                 for _ in range(2)))


class Generation(NamedTuple):
  """What :func:`generate` returns.

  ``tokens_BxN``: the new tokens of each row, the stopping eos included when one came, then
  ``pad_id``. ``lengths_B``: how many new tokens come before the stop (the eos excluded), so
  ``tokens_BxN[b, :lengths_B[b]]`` is the text. ``stopped_B``: whether the row stopped at an
  eos (else it ran into ``max_new_tokens``). ``logprob_B``: the summed log-probability
  (temperature 1) of the row's ``lengths_B`` tokens, the model's own score of its text.
  """

  tokens_BxN: jax.Array
  lengths_B: jax.Array
  stopped_B: jax.Array
  logprob_B: jax.Array | None = None


def _is_concrete(x) -> bool:
  return not isinstance(x, jax.core.Tracer)


def _check_ids(ids_BxT, vocab_size: int, name: str = "ids_BxT"):
  """Rank always; dtype and range when the values are concrete (outside ``jit``)."""
  if jnp.ndim(ids_BxT) != 2:
    raise ValueError(f"{name} must be a (batch, length) array of token ids, got shape "
                     f"{jnp.shape(ids_BxT)}")
  if not jnp.issubdtype(jnp.result_type(ids_BxT), jnp.integer):
    raise ValueError(f"{name} must hold integer token ids, got dtype {jnp.result_type(ids_BxT)}")
  if _is_concrete(ids_BxT) and np.size(ids_BxT):
    ids = np.asarray(ids_BxT)
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
      raise ValueError(f"{name} must lie in [0, vocab_size={vocab_size}), got values in "
                       f"[{lo}, {hi}]")


def _check_mask(mask_BxT, shape, name: str = "mask_BxT"):
  if tuple(jnp.shape(mask_BxT)) != tuple(shape):
    raise ValueError(f"{name} must have the shape of ids_BxT {tuple(shape)}, got "
                     f"{tuple(jnp.shape(mask_BxT))}")


def rope_angles(positions_BxT: jax.Array, head_dim: int, theta: float):
  """``(sin, cos)`` of the rotary angles ``p theta^(-2j/H)``, each ``(B, T, H/2)``, float32."""
  inv_freq_J = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
  angles_BxTxJ = positions_BxT.astype(jnp.float32)[..., None] * inv_freq_J
  return jnp.sin(angles_BxTxJ), jnp.cos(angles_BxTxJ)


def apply_rope(x_BxTxNxH: jax.Array, sin_BxTxJ: jax.Array, cos_BxTxJ: jax.Array) -> jax.Array:
  """Rotate-half RoPE: ``[x1 cos - x2 sin, x2 cos + x1 sin]`` over the two halves of a head."""
  x1, x2 = jnp.split(x_BxTxNxH.astype(jnp.float32), 2, axis=-1)
  sin, cos = sin_BxTxJ[:, :, None, :], cos_BxTxJ[:, :, None, :]
  return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).astype(x_BxTxNxH.dtype)


class RMSNorm(nn.Module):
  """``x / sqrt(mean(x^2) + eps) * scale`` over the last axis, computed in float32."""

  eps: float
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, x_BxTxD):
    scale_D = self.param("scale", nn.initializers.ones, (x_BxTxD.shape[-1],), self.dtype)
    x = x_BxTxD.astype(jnp.float32)
    x = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + self.eps)
    return (x * scale_D.astype(jnp.float32)).astype(x_BxTxD.dtype)


class Attention(nn.Module):
  """Causal grouped-query self-attention over a KV cache (or over the input alone)."""

  config: LlamaConfig

  @nn.compact
  def __call__(self, x_BxTxD, sin_BxTxJ, cos_BxTxJ, allowed_BxTxS, cache_kv, index,
               prefix_kv=None):
    """``cache_kv``: ``None`` (attend within ``x``) or per-layer ``(k, v)`` ``(B, S, K, H)``
    into which this call's keys and values are written at slot ``index`` first.
    ``prefix_kv`` (with ``cache_kv=None``): per-layer ``(k, v)`` ``(B, S, K, H)`` read, not
    written: the keys are the prefix's ``S`` then this call's ``T`` (``allowed_BxTxS`` is
    then ``(B, T, S + T)``).

    Returns the output ``(B, T, D)`` and ``(k, v)``: the updated per-layer cache, or (no
    cache) this call's keys and values ``(B, T, K, H)``.
    """
    c = self.config
    b, t, _ = x_BxTxD.shape
    h, kv, g = c.head_dim, c.n_kv_heads, c.n_heads // c.n_kv_heads
    dense = functools.partial(nn.Dense, use_bias=False, dtype=c.dtype, param_dtype=c.dtype,
                              kernel_init=nn.initializers.normal(0.02))
    q_BxTxNxH = dense(c.n_heads * h, name="q_proj")(x_BxTxD).reshape(b, t, c.n_heads, h)
    k_BxTxKxH = dense(kv * h, name="k_proj")(x_BxTxD).reshape(b, t, kv, h)
    v_BxTxKxH = dense(kv * h, name="v_proj")(x_BxTxD).reshape(b, t, kv, h)
    q_BxTxNxH = apply_rope(q_BxTxNxH, sin_BxTxJ, cos_BxTxJ)
    k_BxTxKxH = apply_rope(k_BxTxKxH, sin_BxTxJ, cos_BxTxJ)
    if cache_kv is None and prefix_kv is None:
      keys_BxSxKxH, values_BxSxKxH = k_BxTxKxH, v_BxTxKxH
    elif cache_kv is None:
      keys_BxSxKxH = jnp.concatenate([prefix_kv[0].astype(k_BxTxKxH.dtype), k_BxTxKxH], axis=1)
      values_BxSxKxH = jnp.concatenate([prefix_kv[1].astype(v_BxTxKxH.dtype), v_BxTxKxH], axis=1)
    else:
      keys_BxSxKxH = jax.lax.dynamic_update_slice_in_dim(cache_kv[0], k_BxTxKxH, index, axis=1)
      values_BxSxKxH = jax.lax.dynamic_update_slice_in_dim(cache_kv[1], v_BxTxKxH, index, axis=1)
    q_BxTxKxGxH = q_BxTxNxH.reshape(b, t, kv, g, h)
    logits = jnp.einsum("btkgh,bskh->bkgts", q_BxTxKxGxH, keys_BxSxKxH,
                        preferred_element_type=jnp.float32) / math.sqrt(h)
    logits = jnp.where(allowed_BxTxS[:, None, None], logits, jnp.finfo(jnp.float32).min)
    weights = jax.nn.softmax(logits, axis=-1).astype(values_BxSxKxH.dtype)
    out_BxTxKxGxH = jnp.einsum("bkgts,bskh->btkgh", weights, values_BxSxKxH)
    out = dense(c.d_model, name="o_proj")(out_BxTxKxGxH.reshape(b, t, c.n_heads * h))
    if prefix_kv is not None:
      return out, (k_BxTxKxH, v_BxTxKxH)
    return out, (keys_BxSxKxH, values_BxSxKxH)


class Block(nn.Module):
  """One pre-norm decoder layer: ``x += Attn(RMSNorm(x)); x += Mlp(RMSNorm(x))``."""

  config: LlamaConfig

  @nn.compact
  def __call__(self, x_BxTxD, sin_BxTxJ, cos_BxTxJ, allowed_BxTxS, cache_kv=None, index=0,
               prefix_kv=None, moe_controls=None):
    """``prefix_kv``: see :class:`Attention`; ``moe_controls``: keyword arguments of
    :class:`MoeMlp` (``route``, ``reuse_BxT``, ``reuse_out_BxTxD``), MoE layers only."""
    c = self.config
    a, new_kv = Attention(c, name="attn")(RMSNorm(c.norm_eps, c.dtype, name="attn_norm")(x_BxTxD),
                                          sin_BxTxJ, cos_BxTxJ, allowed_BxTxS, cache_kv, index,
                                          prefix_kv)
    x_BxTxD = x_BxTxD + a
    normed = RMSNorm(c.norm_eps, c.dtype, name="mlp_norm")(x_BxTxD)
    if c.n_experts:
      x_BxTxD = x_BxTxD + MoeMlp(c, name="moe")(normed, **(moe_controls or {}))
    else:
      x_BxTxD = x_BxTxD + Mlp(c, name="mlp")(normed)
    return x_BxTxD, new_kv


class MoeMlp(nn.Module):
  """A mixture of SwiGLU experts with top-k routing (Mixtral's form).

  A bias-free router scores the ``E = n_experts`` experts per token; the token goes to its
  ``k = experts_top_k`` best, weighted by the softmax of their router logits (renormalised
  over the k), and the output is the weighted sum of those experts' SwiGLU outputs. Every
  expert is computed densely and the unselected ones weighted 0 (toy sizes: simple, and the
  same FLOPs on every token). The router logits ``(B, T, E)`` and the chosen experts
  ``(B, T, k)`` are sown into the ``"intermediates"`` collection (``router_logits``,
  ``experts``), for routing analyses and load-balancing losses.

  Two controls (both off by default, and then the layer is exactly the above), for decoders
  that skip or restrict experts (TEAM's MoE diffusion decoding):

  * ``reuse_BxT`` with ``reuse_out_BxTxD``: marked tokens take ``reuse_out`` as the layer's
    output; they are not routed (their sown experts are ``-1``, their weights 0);
  * ``route``: the router's choice in place of plain top-k, a function
    ``(logits_BxTxE, k, routed_BxT) -> (values_BxTxK, experts_BxTxK)``; a ``-inf`` value
    leaves its slot unused (``-1`` in the sown experts), the gates renormalised over the
    rest. A paper's rule lives with the paper (TEAM's expert limiting:
    ``reprojax.algorithms.team.limited_top_k``).

  The layer's output ``moe_out`` ``(B, T, D)`` is sown too (what a later call reuses).

  Parameters: ``router`` ``(D, E)``; ``gate_proj``, ``up_proj`` ``(E, D, F)``; ``down_proj``
  ``(E, F, D)``.
  """

  config: LlamaConfig

  @nn.compact
  def __call__(self, x_BxTxD, route=None, reuse_BxT=None, reuse_out_BxTxD=None):
    c = self.config
    init = nn.initializers.normal(0.02)
    e, d, f = c.n_experts, c.d_model, c.d_ff
    if (reuse_BxT is None) != (reuse_out_BxTxD is None):
      raise ValueError("MoeMlp: reuse_BxT and reuse_out_BxTxD go together")
    logits_BxTxE = nn.Dense(e, use_bias=False, dtype=jnp.float32, param_dtype=c.dtype,
                            kernel_init=init, name="router")(x_BxTxD).astype(jnp.float32)
    routed_BxT = jnp.ones(x_BxTxD.shape[:2], bool) if reuse_BxT is None else ~reuse_BxT
    if route is None:
      top_BxTxK, experts_BxTxK = jax.lax.top_k(logits_BxTxE, c.experts_top_k)
    else:
      top_BxTxK, experts_BxTxK = route(logits_BxTxE, c.experts_top_k, routed_BxT)
    usable_BxTxK = jnp.isfinite(top_BxTxK) & routed_BxT[..., None]
    # a finite fill: a reused row (nothing usable) gets uniform gates, zeroed next, and no
    # NaN that a gradient through the where could pick up
    gates_BxTxK = jax.nn.softmax(jnp.where(usable_BxTxK, top_BxTxK, -1e30), axis=-1)
    gates_BxTxK = jnp.where(usable_BxTxK, gates_BxTxK, 0.0)
    experts_BxTxK = jnp.where(usable_BxTxK, experts_BxTxK, -1)
    weights_BxTxE = jnp.sum(jax.nn.one_hot(experts_BxTxK, e) * gates_BxTxK[..., None], axis=-2)
    self.sow("intermediates", "router_logits", logits_BxTxE)
    self.sow("intermediates", "experts", experts_BxTxK)
    w_gate = self.param("gate_proj", init, (e, d, f), c.dtype)
    w_up = self.param("up_proj", init, (e, d, f), c.dtype)
    w_down = self.param("down_proj", init, (e, f, d), c.dtype)
    # Every expert at once as plain matrix products: the tokens against all experts' columns,
    # the gates scaling each expert's hidden units, then one product over (expert, unit) that
    # sums the weighted experts: the layer's forward and backward at 64 x 32 tokens take
    # 17.3 ms on XLA:CPU, where four-index einsums of the same sum took 36.5 ms.
    b, t = x_BxTxD.shape[:2]
    x_NxD = x_BxTxD.reshape(b * t, d)
    every = lambda w_ExDxF: jnp.transpose(w_ExDxF, (1, 0, 2)).reshape(d, e * f)  # noqa: E731
    h_NxExF = (nn.silu((x_NxD @ every(w_gate)).reshape(b * t, e, f))
               * (x_NxD @ every(w_up)).reshape(b * t, e, f))
    h_NxExF = h_NxExF * weights_BxTxE.reshape(b * t, e, 1).astype(h_NxExF.dtype)
    out_BxTxD = (h_NxExF.reshape(b * t, e * f) @ w_down.reshape(e * f, d)).reshape(
        b, t, d).astype(x_BxTxD.dtype)
    if reuse_BxT is not None:
      out_BxTxD = jnp.where(reuse_BxT[..., None], reuse_out_BxTxD.astype(out_BxTxD.dtype),
                            out_BxTxD)
    self.sow("intermediates", "moe_out", out_BxTxD)
    return out_BxTxD


class Mlp(nn.Module):
  """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``."""

  config: LlamaConfig

  @nn.compact
  def __call__(self, x_BxTxD):
    c = self.config
    dense = functools.partial(nn.Dense, use_bias=False, dtype=c.dtype, param_dtype=c.dtype,
                              kernel_init=nn.initializers.normal(0.02))
    gate = dense(c.d_ff, name="gate_proj")(x_BxTxD)
    up = dense(c.d_ff, name="up_proj")(x_BxTxD)
    return dense(c.d_model, name="down_proj")(nn.silu(gate) * up)


def _positions(mask_BxT):
  """A token's rotary position: the number of real tokens before it (0 for padding)."""
  return jnp.maximum(jnp.cumsum(mask_BxT.astype(jnp.int32), axis=1) - 1, 0)


class Llama(nn.Module):
  """``Llama(config).apply(params, ids_BxT, mask_BxT=None) -> logits_BxTxV`` (float32).

  ``mask_BxT`` (default: all ones) marks real tokens; padding is not attended to, and the
  logits at padded positions are meaningless. ``ids_BxT`` outside ``[0, vocab_size)`` raise
  ``ValueError`` when called eagerly; under ``jit`` (values unknown) they give NaN logits.
  :meth:`decode` is the cached form that :func:`generate` uses.
  """

  config: LlamaConfig

  def setup(self):
    c = self.config
    self.embed = self.param("embed", nn.initializers.normal(0.02), (c.vocab_size, c.d_model),
                            c.dtype)
    self.layers = [Block(c, name=f"layers_{i}") for i in range(c.n_layers)]
    self.final_norm = RMSNorm(c.norm_eps, c.dtype)
    if not c.tie_embeddings:
      self.lm_head = nn.Dense(c.vocab_size, use_bias=False, dtype=c.dtype, param_dtype=c.dtype,
                              kernel_init=nn.initializers.normal(0.02))

  def _embed(self, ids_BxT):
    # mode="fill": an out-of-range id under jit gives NaN rather than a clipped, wrong token
    return jnp.take(self.embed, ids_BxT, axis=0, mode="fill", fill_value=jnp.nan)

  def _logits(self, h_BxTxD):
    h_BxTxD = self.final_norm(h_BxTxD)
    if self.config.tie_embeddings:
      out = jnp.einsum("btd,vd->btv", h_BxTxD, self.embed, preferred_element_type=jnp.float32)
    else:
      out = self.lm_head(h_BxTxD)
    return out.astype(jnp.float32)

  def __call__(self, ids_BxT: jax.Array, mask_BxT: jax.Array | None = None) -> jax.Array:
    c = self.config
    _check_ids(ids_BxT, c.vocab_size)
    b, t = jnp.shape(ids_BxT)
    if t > c.max_len:
      raise ValueError(f"ids_BxT has {t} tokens, more than config.max_len={c.max_len}")
    if mask_BxT is None:
      mask_BxT = jnp.ones((b, t), bool)
    _check_mask(mask_BxT, (b, t))
    mask_BxT = jnp.asarray(mask_BxT).astype(bool)
    sin, cos = rope_angles(_positions(mask_BxT), c.head_dim, c.rope_theta)
    order_TxT = jnp.tril(jnp.ones((t, t), bool)) if c.causal else jnp.ones((t, t), bool)
    allowed_BxTxT = order_TxT[None] & mask_BxT[:, None, :]
    h_BxTxD = self._embed(ids_BxT)
    for layer in self.layers:
      h_BxTxD, _ = layer(h_BxTxD, sin, cos, allowed_BxTxT)
    return self._logits(h_BxTxD)

  def extend(self, ids_BxT, positions_BxT, allowed_BxTxS, prefix_kv=None, *, route=None,
             reuse_BxT=None, reuse_out_LxBxTxD=None):
    """A forward pass under an explicit attention pattern, optionally after a read-only
    prefix of cached keys and values: what block-diffusion decoders need (block-causal
    attention, speculative copies of a block side by side).

    ``positions_BxT``: rotary positions; ``allowed_BxTxS``: which keys each token attends
    to, ``S = T`` without a prefix, ``S = P + T`` with one (the prefix's slots first);
    ``prefix_kv``: per layer ``(k, v)`` ``(B, P, K, H)``, as this method returns them.
    ``route``, ``reuse_BxT`` and ``reuse_out_LxBxTxD`` (per layer) are
    :class:`MoeMlp`'s controls (MoE models only).

    Returns the logits ``(B, T, V)`` and this call's per-layer ``(k, v)`` ``(B, T, K, H)``
    (the prefix is not written). Apply with ``mutable="intermediates"`` for the MoE layers'
    sown routing and outputs.
    """
    c = self.config
    _check_ids(ids_BxT, c.vocab_size)
    b, t = jnp.shape(ids_BxT)
    p = 0 if prefix_kv is None else prefix_kv[0][0].shape[1]
    if jnp.shape(allowed_BxTxS) != (b, t, p + t) or jnp.shape(positions_BxT) != (b, t):
      raise ValueError(f"extend: ids {(b, t)} with a prefix of {p} slots needs positions_BxT "
                       f"{(b, t)} and allowed_BxTxS {(b, t, p + t)}, got "
                       f"{jnp.shape(positions_BxT)} and {jnp.shape(allowed_BxTxS)}")
    if prefix_kv is not None and len(prefix_kv) != c.n_layers:
      raise ValueError(f"extend: prefix_kv has {len(prefix_kv)} layers, the model "
                       f"{c.n_layers}")
    moe = dict(route=route, reuse_BxT=reuse_BxT)
    if not c.n_experts and (route is not None or reuse_BxT is not None):
      raise ValueError("extend: route and reuse_BxT need a MoE model (n_experts > 0)")
    sin, cos = rope_angles(positions_BxT, c.head_dim, c.rope_theta)
    h_BxTxD = self._embed(ids_BxT)
    kvs = []
    for i, layer in enumerate(self.layers):
      controls = None
      if c.n_experts:
        controls = dict(moe, reuse_out_BxTxD=None if reuse_BxT is None else reuse_out_LxBxTxD[i])
      h_BxTxD, kv = layer(h_BxTxD, sin, cos, jnp.asarray(allowed_BxTxS, bool), None, 0,
                          None if prefix_kv is None else prefix_kv[i], controls)
      kvs.append(kv)
    return self._logits(h_BxTxD), tuple(kvs)

  def decode(self, ids_BxT, positions_BxT, cache: KVCache, index, key_mask_BxS, last_only=True):
    """Runs ``ids_BxT`` at cache slots ``index .. index+T-1``.

    ``positions_BxT``: their rotary positions; ``key_mask_BxS``: which cache slots hold real
    tokens (this call's slots included). A query at slot ``s`` attends to real slots ``<= s``.
    Returns the logits ``(B, V)`` of the last slot (``last_only``) or ``(B, T, V)``, and the
    cache with this call's keys and values written in.
    """
    c = self.config
    if not c.causal:
      raise ValueError("decode needs a causal model (LlamaConfig.causal=True): a "
                       "bidirectional model has no left-to-right cache")
    t, s = ids_BxT.shape[1], key_mask_BxS.shape[1]
    sin, cos = rope_angles(positions_BxT, c.head_dim, c.rope_theta)
    slot_T = index + jnp.arange(t)
    allowed_BxTxS = (jnp.arange(s)[None, :] <= slot_T[:, None])[None] & key_mask_BxS[:, None, :]
    h = self._embed(ids_BxT)
    ks, vs = [], []
    for layer, k_BxSxKxH, v_BxSxKxH in zip(self.layers, cache.k_BxSxKxH, cache.v_BxSxKxH):
      h, (k_BxSxKxH, v_BxSxKxH) = layer(h, sin, cos, allowed_BxTxS, (k_BxSxKxH, v_BxSxKxH), index)
      ks.append(k_BxSxKxH)
      vs.append(v_BxSxKxH)
    cache = KVCache(tuple(ks), tuple(vs))
    if last_only:
      h = h[:, -1:]
    logits = self._logits(h)
    return (logits[:, 0] if last_only else logits), cache


@functools.partial(jax.jit, static_argnames=("config",))
def init(config: LlamaConfig, key: jax.Array) -> Any:
  """Random parameters (normal(0.02) weights, unit norm scales) of ``Llama(config)``.

  Compiled (one program per config; eagerly, flax's init would compile one per op)."""
  return Llama(config).init(key, jnp.zeros((1, 1), jnp.int32))


def logits(config: LlamaConfig, params: Any, ids_BxT, mask_BxT=None) -> jax.Array:
  """``Llama(config).apply(params, ids_BxT, mask_BxT)``, checked, then compiled once per
  config and shape (eagerly, every op of the forward compiles a program of its own)."""
  _check_ids(ids_BxT, config.vocab_size)
  b, t = jnp.shape(ids_BxT)
  mask_BxT = jnp.ones((b, t), bool) if mask_BxT is None else mask_BxT
  _check_mask(mask_BxT, (b, t))
  return _logits_program(params, ids_BxT, jnp.asarray(mask_BxT).astype(bool), config=config)


@functools.partial(jax.jit, static_argnames=("config",))
def _logits_program(params, ids_BxT, mask_BxT, *, config):
  return Llama(config).apply(params, ids_BxT, mask_BxT)


def param_shapes(config: LlamaConfig) -> Any:
  """The parameter pytree of ``Llama(config)`` as ``jax.ShapeDtypeStruct``s (no compute)."""
  return jax.eval_shape(lambda: init(config, jax.random.key(0)))


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = 0, side: str = "left",
              multiple: int = 1) -> tuple[np.ndarray, np.ndarray]:
  """Token lists -> ``(ids_BxT, mask_BxT)`` numpy arrays, padded on ``side`` to one length.

  The length is the longest sequence rounded up to ``multiple`` (fewer distinct shapes, so
  fewer compiles).
  """
  if side not in ("left", "right"):
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")
  if not seqs or any(len(s) == 0 for s in seqs):
    raise ValueError(f"seqs must be a non-empty list of non-empty token lists, got lengths "
                     f"{[len(s) for s in seqs]}")
  if multiple < 1:
    raise ValueError(f"multiple must be >= 1, got {multiple}")
  t = -(-max(len(s) for s in seqs) // multiple) * multiple
  ids = np.full((len(seqs), t), pad_id, np.int32)
  mask = np.zeros((len(seqs), t), bool)
  for i, s in enumerate(seqs):
    sl = slice(t - len(s), t) if side == "left" else slice(0, len(s))
    ids[i, sl] = s
    mask[i, sl] = True
  return ids, mask


@functools.partial(jax.jit, static_argnames=("config", "max_new_tokens", "eos_ids", "pad_id",
                                             "temperature"))
def _generate(params, ids_BxT, mask_BxT, key, *, config, max_new_tokens, eos_ids, pad_id,
              temperature):
  model = Llama(config)
  b, t = ids_BxT.shape
  s = t + max_new_tokens
  # Move every row's real tokens to the end (stable), so the last prompt token of every
  # row sits at slot t - 1 whatever the padding; new tokens then go to slots t, t+1, ...
  order_BxT = jnp.argsort(mask_BxT.astype(jnp.int32), axis=1, stable=True)
  ids_BxT = jnp.take_along_axis(ids_BxT, order_BxT, axis=1)
  mask_BxT = jnp.take_along_axis(mask_BxT, order_BxT, axis=1)
  n_real_B = mask_BxT.sum(axis=1).astype(jnp.int32)
  key_mask_BxS = jnp.concatenate([mask_BxT, jnp.ones((b, max_new_tokens), bool)], axis=1)
  logits_BxV, cache = model.apply(params, ids_BxT, _positions(mask_BxT), KVCache.zeros(config, b, s),
                                  0, key_mask_BxS, method=Llama.decode)
  eos_E = jnp.asarray(eos_ids if eos_ids else (-1,), jnp.int32)

  def cond(state):
    i, _, _, _, done_B, _, _ = state
    return (i < max_new_tokens) & ~jnp.all(done_B)

  def body(state):
    i, logits_BxV, cache, tokens_BxN, done_B, lengths_B, logprob_B = state
    logits_BxV = logits_BxV.astype(jnp.float32)
    if temperature > 0:
      next_B = jax.random.categorical(jax.random.fold_in(key, i), logits_BxV / temperature)
    else:
      next_B = jnp.argmax(logits_BxV, axis=-1)
    next_B = next_B.astype(jnp.int32)
    is_eos_B = jnp.isin(next_B, eos_E)
    counted_B = ~done_B & ~is_eos_B
    token_lp_B = jnp.take_along_axis(jax.nn.log_softmax(logits_BxV), next_B[:, None], 1)[:, 0]
    logprob_B = logprob_B + jnp.where(counted_B, token_lp_B, 0.0)
    tokens_BxN = tokens_BxN.at[:, i].set(jnp.where(done_B, pad_id, next_B))
    lengths_B = lengths_B + counted_B
    done_B = done_B | is_eos_B
    logits_BxV, cache = model.apply(params, next_B[:, None], (n_real_B + i)[:, None], cache,
                                    t + i, key_mask_BxS, method=Llama.decode)
    return i + 1, logits_BxV, cache, tokens_BxN, done_B, lengths_B, logprob_B

  state = (jnp.int32(0), logits_BxV, cache, jnp.full((b, max_new_tokens), pad_id, jnp.int32),
           jnp.zeros((b,), bool), jnp.zeros((b,), jnp.int32), jnp.zeros((b,), jnp.float32))
  _, _, _, tokens_BxN, done_B, lengths_B, logprob_B = jax.lax.while_loop(cond, body, state)
  return Generation(tokens_BxN, lengths_B, done_B, logprob_B)


def generate(config: LlamaConfig, params: Any, ids_BxT, mask_BxT=None, *, max_new_tokens: int,
             eos_ids: Sequence[int] = (), pad_id: int = 0, temperature: float = 0.0,
             key: jax.Array | None = None) -> Generation:
  """Greedy or sampled decoding of a batch of prompts with a KV cache, in one jitted program.

  Args:
    config: the model's sizes.
    params: ``Llama(config)``'s parameters.
    ids_BxT: int prompt tokens, padded on either side (or both) to one length ``T``.
    mask_BxT: 1 for real tokens (default: all real); every row needs at least one.
    max_new_tokens: ``N``, the most tokens generated per row.
    eos_ids: tokens that end a row (the row then emits ``pad_id``); the loop ends early when
      every row has ended.
    pad_id: the filler after a row's end in ``tokens_BxN``.
    temperature: 0 (default) decodes greedily; above 0 samples each token from
      ``softmax(logits / temperature)`` with ``fold_in(key, step)`` (rows drawn independently).
    key: the sampling key (needed when ``temperature > 0``).

  Returns:
    :class:`Generation` ``(tokens_BxN, lengths_B, stopped_B)``. Each row is what greedy
    decoding of that prompt alone would give: the step is ``argmax`` of the next-token
    logits, the padding is invisible to the model (masked keys, positions counting real
    tokens only). Compiles once per ``(B, T, N)`` and config; pad ``T`` to a few bucket
    sizes (:func:`pad_batch`'s ``multiple``) to reuse programs.
  """
  if not config.causal:
    raise ValueError("generate needs a causal model (LlamaConfig.causal=True)")
  _check_ids(ids_BxT, config.vocab_size)
  b, t = np.shape(ids_BxT)
  if b < 1 or t < 1:
    raise ValueError(f"ids_BxT must have at least one row and one token, got shape {(b, t)}")
  if mask_BxT is None:
    mask_BxT = np.ones((b, t), bool)
  _check_mask(mask_BxT, (b, t))
  if _is_concrete(mask_BxT):
    m = np.asarray(mask_BxT)
    if not np.all(m.any(axis=1)):
      raise ValueError(f"mask_BxT must mark at least one real token per row; rows "
                       f"{np.nonzero(~m.any(axis=1))[0].tolist()} are all padding")
  if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
    raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
  if t + max_new_tokens > config.max_len:
    raise ValueError(f"prompt length {t} + max_new_tokens {max_new_tokens} exceeds "
                     f"config.max_len={config.max_len}")
  eos_ids = tuple(int(e) for e in eos_ids)
  bad = [e for e in eos_ids if not 0 <= e < config.vocab_size]
  if bad:
    raise ValueError(f"eos_ids must lie in [0, vocab_size={config.vocab_size}), got {bad}")
  if (isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating))
      or not 0.0 <= float(temperature) < float("inf")):
    raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
  if temperature > 0 and key is None:
    raise ValueError("key is needed to sample (temperature > 0)")
  key = jax.random.key(0) if key is None else key
  return _generate(params, jnp.asarray(ids_BxT, jnp.int32), jnp.asarray(mask_BxT, bool), key,
                   config=config, max_new_tokens=int(max_new_tokens), eos_ids=eos_ids,
                   pad_id=int(pad_id), temperature=float(temperature))
