"""The suite's transformer as TEAM's mixture-of-experts block-diffusion LM.

:func:`moe_lm` adapts a bidirectional MoE :class:`reprojax.models.llama.LlamaConfig` (built
by :func:`reprojax.models.transformer.decoder_config`) to :class:`reprojax.algorithms.team.MoeLM`:
the model stays generic, TEAM's routing rule stays with TEAM.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp

from reprojax.algorithms import team
from reprojax.models import llama


@functools.lru_cache(maxsize=None)
def moe_lm(config: llama.LlamaConfig) -> team.MoeLM:
  """A bidirectional MoE ``config`` as :class:`reprojax.algorithms.team.MoeLM`: the forward
  pass is :meth:`reprojax.models.llama.Llama.extend` with the MoE layers' sown experts,
  router logits and outputs stacked over layers, limited tokens routed by
  :func:`reprojax.algorithms.team.limited_top_k`. Cached per config, so that jitted decoders
  compile once per model."""
  c = config
  if c.causal or not c.n_experts:
    raise ValueError("moe_lm needs a bidirectional mixture-of-experts config "
                     "(causal=False, n_experts > 0)")
  model = llama.Llama(c)

  def forward(params, ids, positions, allowed, prefix_kv, limited, reuse, reuse_out):
    route = None if limited is None else functools.partial(team.limited_top_k,
                                                           limited_BxT=limited)
    (logits, kv), state = model.apply(params, ids, positions, allowed, prefix_kv,
                                      route=route, reuse_BxT=reuse,
                                      reuse_out_LxBxTxD=reuse_out,
                                      method=llama.Llama.extend, mutable="intermediates")
    inter = state["intermediates"]
    stack = lambda name: jnp.stack([inter[f"layers_{i}"]["moe"][name][0]  # noqa: E731
                                    for i in range(c.n_layers)])
    return logits, kv, stack("experts"), stack("router_logits"), stack("moe_out")

  d, e = c.d_model, c.n_experts
  attn = d * c.n_heads * c.head_dim * 2 + d * c.n_kv_heads * c.head_dim * 2
  return team.MoeLM(
      forward=forward, n_layers=c.n_layers, n_experts=e, top_k=c.experts_top_k,
      n_kv_heads=c.n_kv_heads, head_dim=c.head_dim, max_len=c.max_len,
      dense_params=c.n_layers * (attn + d * e + 2 * d) + c.vocab_size * d + d,
      expert_params=3 * d * c.d_ff,
      dense_flops_per_token=2.0 * (c.n_layers * (attn + d * e) + c.vocab_size * d),
      attention_flops_per_pair=2.0 * c.n_layers * 2 * c.n_heads * c.head_dim)
