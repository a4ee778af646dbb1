"""The registered examples of ``reprojax.algorithms.team``."""

import functools

import jax
import jax.numpy as jnp

from reprojax.algorithms._common import Example
from reprojax.algorithms.team import _core as c
from reprojax.models import llama
from reprojax.models import transformer

_HOST = dict(jittable=False, vmappable=False)
_MASK, _EOS, _V = 2, 1, 12
_CFG = transformer.decoder_config(_V, d_model=16, n_layers=1, n_heads=2, d_ff=16,
                                  causal=False, n_experts=4, experts_top_k=2, max_len=32)


@functools.cache
def _params():
  return llama.init(_CFG, jax.random.key(0))


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
  return c.decode(_CFG, _params(), prompt, mask, gen_len=8, block_len=4, mask_id=_MASK,
                  eos_id=_EOS, threshold=0.3, strategies=strategies, limit_distance=1)


def _stats(key):
  keys = jax.random.split(key, len(c.Stats._fields))
  return (c.Stats(*(jax.random.randint(k, (3,), 0, 50) for k in keys)),)


EXAMPLES = (
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
    Example("diffusion_loss", lambda p, m, t: c.diffusion_loss(_CFG, _params(), _train(p, m, t)),
            _batch_args, derived_sizes=True,
            bad_args=(jnp.zeros((2, 8), jnp.int32), jnp.ones((2, 8), bool),
                      jnp.full((2, 8), _V, jnp.int32))),
    Example("decode_vanilla", lambda p, m: _decode(p, m, ()), _prompts, vmappable=False,
            derived_sizes=True,
            bad_args=(jnp.zeros((2, 6), jnp.int32), jnp.ones((2, 6), bool))),
    Example("decode_team", _decode, _prompts, vmappable=False, derived_sizes=True,
            bad_args=(jnp.zeros((2, 8), jnp.int32), jnp.ones((2, 7), bool))),
    Example("reference_decode", lambda p, m: c.reference_decode(
        _CFG, _params(), p, m, gen_len=8, block_len=4, mask_id=_MASK, eos_id=_EOS,
        threshold=0.3), lambda key: tuple(a[0] for a in _prompts(key)), derived_sizes=True,
            bad_args=(jnp.zeros((6,), jnp.int32), jnp.ones((6,), bool)), **_HOST),
    Example("cost", lambda s: c.cost(_CFG, s), _stats,
            bad_args=(c.Stats(*(-jnp.ones((3,), jnp.int32) for _ in c.Stats._fields)),),
            **_HOST),
)
