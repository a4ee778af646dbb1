"""The registered examples of ``reprojax.algorithms.team``."""

import functools

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.team import _core as c

_HOST = dict(jittable=False, vmappable=False)
_MASK, _EOS, _V = 2, 1, 12
_D, _E, _K = 8, 4, 2


def _toy_forward(params, ids, positions, allowed, prefix_kv, limited, reuse, reuse_out):
  """A one-layer toy MoE LM (one attention head, tanh experts) honouring the MoeLM
  contract, routed by :func:`limited_top_k` as the real one is
  (``reprojax.experiments.team.moe.moe_lm``; models/ sits above algorithms/, so the
  examples carry their own)."""
  x = params["embed"][ids] + 0.01 * positions[..., None]
  q, k, v = x @ params["q"], x @ params["k"], x @ params["v"]
  keys, values = k, v
  if prefix_kv is not None:
    keys = jnp.concatenate([prefix_kv[0][0][:, :, 0], k], axis=1)
    values = jnp.concatenate([prefix_kv[0][1][:, :, 0], v], axis=1)
  att = jnp.where(allowed, jnp.einsum("btd,bsd->bts", q, keys), -1e9)
  h = x + jnp.einsum("bts,bsd->btd", jax.nn.softmax(att, -1), values)
  router = h @ params["router"]
  routed = jnp.ones(ids.shape, bool) if reuse is None else ~reuse
  top, experts = (jax.lax.top_k(router, _K) if limited is None
                  else c.limited_top_k(router, _K, routed, limited))
  use = jnp.isfinite(top) & routed[..., None]
  gates = jnp.where(use, jax.nn.softmax(jnp.where(use, top, -1e9), -1), 0.0)
  experts = jnp.where(use, experts, -1)
  outs = jnp.tanh(jnp.einsum("btd,edf->btef", h, params["experts"]))
  weights = jnp.sum(jax.nn.one_hot(experts, _E) * gates[..., None], -2)
  moe = jnp.einsum("btef,bte->btf", outs, weights)
  if reuse is not None:
    moe = jnp.where(reuse[..., None], reuse_out[0], moe)
  logits = (h + moe) @ params["out"]
  return logits, ((k[:, :, None], v[:, :, None]),), experts[None], router[None], moe[None]


_MODEL = c.MoeLM(forward=_toy_forward, n_layers=1, n_experts=_E, top_k=_K, n_kv_heads=1,
                 head_dim=_D, max_len=32, dense_params=3 * _D * _D + 2 * _V * _D + _D * _E,
                 expert_params=_D * _D, dense_flops_per_token=2.0 * (3 * _D * _D + _V * _D),
                 attention_flops_per_pair=4.0 * _D)


@functools.cache
def _params():
  """Concrete even when first called under a trace (a cached tracer would leak)."""
  shapes = dict(embed=(_V, _D), q=(_D, _D), k=(_D, _D), v=(_D, _D), router=(_D, _E),
                experts=(_E, _D, _D), out=(_D, _V))
  with jax.ensure_compile_time_eval():
    ks = jax.random.split(jax.random.key(0), 7)
    return {n: jax.random.normal(kk, sh) for kk, (n, sh) in zip(ks, shapes.items())}


def _prompts(key, n=2, p=8):
  ids = jax.random.randint(key, (n, p), 3, _V)
  mask = jnp.arange(p)[None, :] >= jax.random.randint(jax.random.fold_in(key, 1), (n, 1), 0, 3)
  return jnp.where(mask, ids, 0), mask


def _batch_args(key):
  prompt, mask = _prompts(key)
  return prompt, mask, jax.random.randint(jax.random.fold_in(key, 2), (2, 8), 3, _V)


def _train(prompt, mask, target):
  return c.training_batch(prompt, mask, target, jax.random.key(1), block_len=4, mask_id=_MASK)


def _decode(prompt, mask, strategies=c.STRATEGIES):
  return c.decode(_MODEL, _params(), prompt, mask, gen_len=8, block_len=4, mask_id=_MASK,
                  eos_id=_EOS, threshold=0.3, strategies=strategies, limit_distance=1)


def _stats(key):
  keys = jax.random.split(key, len(c.Stats._fields))
  return (c.Stats(*(jax.random.randint(k, (3,), 0, 50) for k in keys)),)


EXAMPLES = (
    Example("limited_top_k", lambda lg, r, lim: c.limited_top_k(lg, 2, r, lim),
            lambda key: (jax.random.normal(key, (2, 5, 4)),
                         jax.random.bernoulli(key, 0.8, (2, 5)),
                         jax.random.bernoulli(jax.random.fold_in(key, 1), 0.4, (2, 5))),
            bad_args=lambda: (jnp.zeros((2, 5, 4)), jnp.ones((2, 4), bool),
                              jnp.ones((2, 5), bool))),
    Example("block_causal", c.block_causal,
            lambda key: (jnp.arange(8) // 4, jax.random.bernoulli(key, 0.8, (8,))),
            bad_args=(jnp.arange(8) // 4, jnp.ones((7,), bool))),
    Example("prompt_positions", lambda m: c.prompt_positions(m, 4),
            lambda key: (jax.random.bernoulli(key, 0.7, (6,)),), derived_sizes=True,
            bad_args=(jnp.ones((2, 3), bool),)),
    Example("commit_rule", lambda m, conf: c.commit_rule(m, conf, 0.5),
            lambda key: (jax.random.bernoulli(key, 0.6, (8,)), jax.random.uniform(key, (8,))),
            bad_args=(jnp.ones((8,), bool), jnp.ones((7,)))),
    Example("training_batch", _train, _batch_args, derived_sizes=True,
            bad_args=(jnp.zeros((2, 6), jnp.int32), jnp.ones((2, 6), bool),
                      jnp.zeros((2, 8), jnp.int32))),
    Example("diffusion_loss", lambda p, m, t: c.diffusion_loss(_MODEL, _params(), _train(p, m, t)),
            _batch_args, derived_sizes=True,
            bad_args=(jnp.zeros((2, 8), jnp.int32), jnp.ones((2, 8), bool),
                      jnp.zeros((2, 6), jnp.int32))),
    Example("decode_vanilla", lambda p, m: _decode(p, m, ()), _prompts, vmappable=False,
            derived_sizes=True,
            bad_args=(jnp.zeros((2, 6), jnp.int32), jnp.ones((2, 6), bool))),
    Example("decode_team", _decode, _prompts, vmappable=False, derived_sizes=True,
            bad_args=(jnp.zeros((2, 8), jnp.int32), jnp.ones((2, 7), bool))),
    Example("reference_decode", lambda p, m: c.reference_decode(
        _MODEL, _params(), p, m, gen_len=8, block_len=4, mask_id=_MASK, eos_id=_EOS,
        threshold=0.3), lambda key: tuple(a[0] for a in _prompts(key)), derived_sizes=True,
            bad_args=(jnp.zeros((6,), jnp.int32), jnp.ones((6,), bool)), **_HOST),
    Example("cost", lambda s: c.cost(_MODEL, s), _stats,
            bad_args=(c.Stats(*(-jnp.ones((3,), jnp.int32) for _ in c.Stats._fields)),),
            **_HOST),
)
