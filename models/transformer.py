"""The suite's small decoder for synthetic tasks: a LLaMA block stack at toy size, a
symbol tokenizer, and the masked next-token loss.

The architecture is :mod:`reprojax.models.llama` (pre-norm blocks, RoPE, SwiGLU, grouped-query
attention, KV-cached batched ``generate``), so a model trained here decodes, samples and
scores its drafts exactly as the pretrained SmolLM2 does, through the same code. What this
module adds is what a synthetic task needs:

* :func:`decoder_config`: a small :class:`~reprojax.models.llama.LlamaConfig` (tied
  embeddings, full multi-head attention, float32);
* :class:`Tokenizer`: special tokens first (``<pad>`` is id 0), then the task's symbols;
* :func:`lm_loss`: per-example mean cross-entropy of the tokens a mask marks as targets
  (the answer after a prompt, say), the other tokens being context only; :func:`pack` lays
  prompt-target pairs out for it;
* :func:`grpo_loss`: one on-policy GRPO step on sampled completions (the suite's
  policy-gradient module on the decoder's token log-probabilities: pdr's, suco's and calm's
  RL).

``causal=False`` gives the bidirectional mode (masked and block diffusion LMs);
``n_experts > 0`` a mixture-of-experts feed-forward with top-k routing whose router logits
and choices are sown for analysis (``STYLE.md``, "One of each"); TEAM's decoder takes the
two together (``reprojax.experiments.team.moe``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import policy_gradient as pg
from reprojax.models import llama


def decoder_config(vocab_size: int, *, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                   d_ff: int | None = None, max_len: int = 256, causal: bool = True,
                   n_experts: int = 0, experts_top_k: int = 2) -> llama.LlamaConfig:
  """A small LLaMA-style decoder: ``d_ff`` defaults to ``2 d_model`` (SwiGLU's three
  matrices then hold as many weights as a 3x ReLU MLP), float32. ``causal=False`` is the
  bidirectional mode (every token sees every real token: a masked or diffusion LM's
  denoiser; the forward pass and :func:`lm_loss`-style losses only, no ``generate``).
  ``n_experts > 0`` makes every MLP a mixture of experts with top-``experts_top_k`` routing
  (:class:`reprojax.models.llama.MoeMlp`)."""
  return llama.LlamaConfig(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers,
                           n_heads=n_heads, n_kv_heads=n_heads,
                           d_ff=2 * d_model if d_ff is None else d_ff, max_len=max_len,
                           causal=causal, n_experts=n_experts, experts_top_k=experts_top_k)


@dataclasses.dataclass(frozen=True)
class Tokenizer:
  """Ids ``0 .. len(specials) - 1`` are the special tokens (``specials[0]`` is padding), then
  one id per symbol. ``encode`` / ``decode`` map symbols and ids both ways."""

  symbols: tuple[Any, ...]
  specials: tuple[str, ...] = ("<pad>", "<eos>")

  def __post_init__(self):
    if not self.specials:
      raise ValueError("specials must name at least the padding token")
    names = list(self.specials) + list(self.symbols)
    if len(set(names)) != len(names):
      raise ValueError(f"the specials and symbols must be distinct, got {names}")

  @property
  def vocab_size(self) -> int:
    return len(self.specials) + len(self.symbols)

  @property
  def pad_id(self) -> int:
    return 0

  def special(self, name: str) -> int:
    if name not in self.specials:
      raise ValueError(f"unknown special token {name!r}; specials: {self.specials}")
    return self.specials.index(name)

  def encode(self, symbols: Sequence[Any]) -> tuple[int, ...]:
    index = {s: i + len(self.specials) for i, s in enumerate(self.symbols)}
    try:
      return tuple(index[s] for s in symbols)
    except KeyError as e:
      raise ValueError(f"symbol {e.args[0]!r} is not in the tokenizer's symbols") from e

  def decode(self, ids: Sequence[int]) -> tuple[Any, ...]:
    """Symbols of ``ids``; a special token raises ``ValueError``."""
    out = []
    for i in ids:
      j = int(i) - len(self.specials)
      if not 0 <= j < len(self.symbols):
        raise ValueError(f"id {int(i)} is not a symbol (specials are 0..{len(self.specials) - 1})")
      out.append(self.symbols[j])
    return tuple(out)


def lm_loss(config: llama.LlamaConfig, params: Any, ids_BxT: jax.Array, mask_BxT: jax.Array,
            target_BxT: jax.Array) -> jax.Array:
  """Per-example mean cross-entropy ``(B,)`` of predicting token ``t`` from the tokens
  before it, over the positions ``t`` where ``target_BxT`` is set (0 for a row with none).

  ``mask_BxT`` marks real tokens (padding is never attended to); ``target_BxT`` must lie
  within it.
  """
  if jnp.ndim(ids_BxT) != 2 or jnp.shape(mask_BxT) != jnp.shape(ids_BxT) or \
      jnp.shape(target_BxT) != jnp.shape(ids_BxT):
    raise ValueError(f"ids_BxT, mask_BxT and target_BxT must share one (batch, length) shape, "
                     f"got {jnp.shape(ids_BxT)}, {jnp.shape(mask_BxT)}, {jnp.shape(target_BxT)}")
  logits_BxTxV = llama.Llama(config).apply(params, ids_BxT, mask_BxT)
  ce_BxT = optax.softmax_cross_entropy_with_integer_labels(logits_BxTxV[:, :-1], ids_BxT[:, 1:])
  w_BxT = (jnp.asarray(target_BxT)[:, 1:] & jnp.asarray(mask_BxT, bool)[:, 1:]).astype(jnp.float32)
  return jnp.sum(ce_BxT * w_BxT, axis=1) / jnp.maximum(jnp.sum(w_BxT, axis=1), 1.0)


def pack(prompts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], length: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """``prompt + target`` rows right-padded to ``length``: ``(ids, mask, target)`` numpy
  arrays, ``target`` marking the target tokens (what :func:`lm_loss` scores)."""
  if len(prompts) != len(targets):
    raise ValueError(f"prompts and targets must pair up, got {len(prompts)} and {len(targets)}")
  ids = np.zeros((len(prompts), length), np.int32)
  mask = np.zeros((len(prompts), length), bool)
  target = np.zeros((len(prompts), length), bool)
  for b, (p, t) in enumerate(zip(prompts, targets)):
    n = len(p) + len(t)
    if n > length:
      raise ValueError(f"row {b} holds {n} tokens, more than length={length}")
    ids[b, :n] = list(p) + list(t)
    mask[b, :n] = True
    target[b, len(p):n] = True
  return ids, mask, target


def token_logprobs(config: llama.LlamaConfig, params: Any, ids_BxT: jax.Array,
                   mask_BxT: jax.Array) -> jax.Array:
  """``log p(ids[t] | ids[:t])`` per position ``(B, T)`` (0 at position 0 and wherever
  ``mask_BxT`` is 0): the per-token log-probabilities a policy gradient needs."""
  if jnp.ndim(ids_BxT) != 2 or jnp.shape(mask_BxT) != jnp.shape(ids_BxT):
    raise ValueError(f"ids_BxT and mask_BxT must share one (batch, length) shape, got "
                     f"{jnp.shape(ids_BxT)} and {jnp.shape(mask_BxT)}")
  logits_BxTxV = llama.Llama(config).apply(params, ids_BxT, mask_BxT)
  logp_BxTxV = jax.nn.log_softmax(logits_BxTxV[:, :-1], axis=-1)
  lp = jnp.take_along_axis(logp_BxTxV, ids_BxT[:, 1:, None], axis=-1)[..., 0]
  lp = jnp.where(jnp.asarray(mask_BxT, bool)[:, 1:], lp, 0.0)
  return jnp.concatenate([jnp.zeros_like(lp[:, :1]), lp], axis=1)


def grpo_loss(config: llama.LlamaConfig, params: Any, ref_params: Any, ids_BxT: jax.Array,
              mask_BxT: jax.Array, actions_BxT: jax.Array, rewards_PxG: jax.Array, *,
              clip_eps: float, beta: float):
  """One on-policy GRPO step's loss on sampled completions: rows ``p * G + g`` of the
  ``(P G, T)`` sequences are prompt ``p``'s ``G`` samples, ``actions_BxT`` marks the
  sampled tokens (the stopping eos included), ``rewards_PxG`` their rewards; the KL
  penalty ``beta`` is to ``ref_params``. Returns :func:`reprojax.algorithms.policy_gradient.grpo_loss`'s
  ``(loss, aux)``."""
  p, g = jnp.shape(rewards_PxG)
  lp = token_logprobs(config, params, ids_BxT, mask_BxT).reshape(p, g, -1)
  lp_ref = token_logprobs(config, ref_params, ids_BxT, mask_BxT).reshape(p, g, -1)
  return pg.grpo_loss(lp, jax.lax.stop_gradient(lp), lp_ref, rewards_PxG,
                      jnp.reshape(actions_BxT, (p, g, -1)), clip_eps=clip_eps, beta=beta)
