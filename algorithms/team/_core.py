"""TEAM's decoding of a mixture-of-experts block-diffusion LM, as pure functions.

Block diffusion (SDAR's layout): the sequence is cut into blocks of ``block_len``
positions; attention is bidirectional within a block and causal across blocks, so finished
blocks live in a key/value cache. A block starts fully masked; each denoising pass predicts
every position of it, commits the masked positions whose top probability exceeds
``threshold`` (the single most confident one when none does) and never remasks; a last
pass over the finished block writes its keys and values to the cache. ``<mask>`` itself is
never predicted (its probability is set to 0 first).

TEAM's three strategies (Wei et al., ICML 2026), all within the block being decoded:

* ``reuse`` (temporal): a token committed two or more passes ago takes its MoE layers'
  outputs from the previous pass, without routing or experts (attention is still run);
* ``limit`` (spatial): a masked token far (``> limit_distance`` positions) from every
  filled position of the block, below ``limit_confidence`` at the previous pass and not
  one of the two most confident masked positions may only use experts that the other
  routed tokens of the pass chose (per layer);
* ``speculate``: one pass runs four copies of the block side by side (attention within a
  copy only): as is, with the most confident masked position filled with its previous
  prediction, with the second, and with both. A filled token is accepted when the vanilla
  rule on a copy without it would commit the same token there; the copy with the most
  accepted fills is kept, committing up to two tokens beyond the vanilla rule per pass.

The first pass of every block is a plain one in every mode (there is no previous pass).
The decoders return the generation region and per-row counters (:class:`Stats`) from which
:func:`cost` models decode time.

Our construction where the public code is silent or model-specific: a prompt is a whole
number of blocks (left-padded), rows of a batch decode one after another (batch one, as
SDAR's evaluation decodes), and decoding stops after the block in which
``<eos>`` first appears.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

STRATEGIES = ("reuse", "limit", "speculate")
_BRANCHES = 4  # speculate: the block as is, + first fill, + second fill, + both


class Stats(NamedTuple):
  """Per-row decoding counters, each ``(N,)`` (sums over the row's forward passes; "layer
  tokens" count a token once per MoE layer).

  ``passes``: denoising passes (the cache-writing pass of each block excluded; the
  prompt's prefill, the same in every mode, is not counted anywhere);
  ``store_passes``: cache-writing passes; ``tokens``: tokens run through the model;
  ``prefix_slots``: cached keys read (per pass, the real slots before the block);
  ``attended``: query-key pairs; ``routed``: layer tokens routed to experts;
  ``dispatches``: (layer token, expert) pairs computed; ``expert_loads``: distinct experts
  used per pass, summed over layers and passes (the weights a memory-bound pass reads);
  ``reused`` / ``reused_consistent``: layer tokens that took the previous pass's output /
  and whose router would have chosen the same experts as when they were last routed;
  ``limited`` / ``limited_consistent``: limited layer tokens / whose unrestricted choice
  already lay in the allowed set; ``speculated``: tokens committed by accepted fills.
  """

  passes: jax.Array
  store_passes: jax.Array
  tokens: jax.Array
  prefix_slots: jax.Array
  attended: jax.Array
  routed: jax.Array
  dispatches: jax.Array
  expert_loads: jax.Array
  reused: jax.Array
  reused_consistent: jax.Array
  limited: jax.Array
  limited_consistent: jax.Array
  speculated: jax.Array


def limited_top_k(logits_BxTxE: jax.Array, k: int, routed_BxT: jax.Array,
                  limited_BxT: jax.Array) -> tuple[jax.Array, jax.Array]:
  """TEAM's spatial expert limiting as a router's choice: each token's top-``k`` experts
  ``(values_BxTxK, experts_BxTxK)`` from its router logits ``(B, T, E)``, where a
  ``limited`` token may only take experts that some routed, unlimited token of its row
  chose (its plain top-k); it gets fewer when fewer are allowed (the rest ``-inf``
  values). A row with no such donor token leaves its limited tokens unrestricted.
  What a mixture-of-experts layer takes as its ``route``
  (``reprojax.models.llama.MoeMlp``)."""
  shape = jnp.shape(logits_BxTxE)
  if len(shape) != 3 or not 1 <= int(k) <= shape[-1]:
    raise ValueError(f"limited_top_k: logits_BxTxE must be (B, T, E) with 1 <= k <= E, got "
                     f"{shape} and k={k}")
  for name, x in (("routed_BxT", routed_BxT), ("limited_BxT", limited_BxT)):
    if jnp.shape(x) != shape[:2] or jnp.asarray(x).dtype != jnp.bool_:
      raise ValueError(f"limited_top_k: {name} must be a bool array of shape {shape[:2]}, "
                       f"got {jnp.asarray(x).dtype} {jnp.shape(x)}")
  if not jnp.issubdtype(jnp.asarray(logits_BxTxE).dtype, jnp.floating):
    raise ValueError(f"limited_top_k: logits_BxTxE must be floating, got "
                     f"{jnp.asarray(logits_BxTxE).dtype}")
  e = shape[-1]
  top_BxTxK, experts_BxTxK = jax.lax.top_k(logits_BxTxE, k)
  chosen_BxTxE = jnp.any(jax.nn.one_hot(experts_BxTxK, e, dtype=bool), axis=-2)
  donors_BxT = routed_BxT & ~limited_BxT
  allowed_BxE = jnp.any(chosen_BxTxE & donors_BxT[..., None], axis=1)
  allowed_BxE = allowed_BxE | ~jnp.any(allowed_BxE, axis=-1, keepdims=True)
  blocked_BxTxE = limited_BxT[..., None] & ~allowed_BxE[:, None, :]
  return jax.lax.top_k(jnp.where(blocked_BxTxE, -jnp.inf, logits_BxTxE), k)


class MoeLM(NamedTuple):
  """What TEAM needs of a mixture-of-experts block-diffusion LM: a pure forward pass and its
  sizes (``reprojax.experiments.team.moe.moe_lm`` builds one for the suite's transformer).

  ``forward(params, ids_BxT, positions_BxT, allowed_BxTxS, prefix_kv, limited_BxT,
  reuse_BxT, reuse_out_LxBxTxD)`` returns ``(logits_BxTxV, kv, experts_LxBxTxK,
  router_logits_LxBxTxE, moe_out_LxBxTxD)``: ``allowed`` covers the prefix's ``P`` cached
  slots then the call's ``T`` tokens; ``prefix_kv`` (or ``None``) and the returned ``kv`` are
  per layer ``(k, v)``, ``(B, P or T, n_kv_heads, head_dim)``; the MoE controls are
  ``None`` or per token (reused tokens: output given, experts ``-1``, as
  ``reprojax.models.llama.MoeMlp``'s ``reuse_BxT``; limited tokens: routed by
  :func:`limited_top_k`).
  The sizes serve the cache (``n_kv_heads``, ``head_dim``, ``max_len``), the counters
  (``n_layers``, ``n_experts``, ``top_k``) and :func:`cost` (parameter and FLOP counts).
  """

  forward: Callable[..., Any]
  n_layers: int
  n_experts: int
  top_k: int
  n_kv_heads: int
  head_dim: int
  max_len: int
  dense_params: int  # read by every pass: attention, router, norms, embedding
  expert_params: int  # one expert's weights
  dense_flops_per_token: float  # 2 x multiply-adds of the dense projections and the logits
  attention_flops_per_pair: float  # 2 x multiply-adds per (query, key) pair, all layers


def _zero_stats():
  return Stats(*(jnp.zeros((), jnp.int32) for _ in Stats._fields))


def check_strategies(strategies: Sequence[str]) -> tuple[str, ...]:
  """``strategies`` as a sorted tuple; ``ValueError`` naming any unknown one."""
  if isinstance(strategies, str):
    strategies = (strategies,) if strategies else ()
  unknown = [s for s in strategies if s not in STRATEGIES]
  if unknown:
    raise ValueError(f"unknown TEAM strategy {unknown}; choose from {STRATEGIES}")
  return tuple(s for s in STRATEGIES if s in strategies)


def _check_decode_args(model, prompt_len, gen_len, block_len, threshold, limit_confidence,
                       limit_distance):
  if not isinstance(model, MoeLM):
    raise ValueError(f"model must be a team.MoeLM (reprojax.experiments.team.moe.moe_lm), got "
                     f"{type(model).__name__}")
  if not isinstance(block_len, (int, np.integer)) or block_len < 1:
    raise ValueError(f"block_len must be an int >= 1, got {block_len!r}")
  for name, n in (("prompt length", prompt_len), ("gen_len", gen_len)):
    if n < 1 or n % block_len:
      raise ValueError(f"block_len={block_len} must divide the {name} ({n}): prompts and "
                       "the generation region are whole blocks")
  if prompt_len + gen_len > model.max_len:
    raise ValueError(f"prompt + generation = {prompt_len + gen_len} tokens exceeds the "
                     f"model's max_len={model.max_len}")
  for name, v in (("threshold", threshold), ("limit_confidence", limit_confidence)):
    if not 0.0 <= float(v) <= 1.0:
      raise ValueError(f"{name} must lie in [0, 1], got {v!r}")
  if not isinstance(limit_distance, (int, np.integer)) or limit_distance < 0:
    raise ValueError(f"limit_distance must be an int >= 0, got {limit_distance!r}")


def block_causal(block_S: jax.Array, real_S: jax.Array) -> jax.Array:
  """``(S, S)``: query ``q`` sees key ``k`` iff ``k`` is real and its block is not later."""
  a = _common.check_arrays(dict(block_S=block_S, real_S=real_S),
                           kinds=dict(block_S="int", real_S="bool"))
  block_S, real_S = jnp.asarray(a["block_S"]), jnp.asarray(a["real_S"])
  return (block_S[None, :] <= block_S[:, None]) & real_S[None, :]


def prompt_positions(prompt_mask_P: jax.Array, gen_len: int) -> jax.Array:
  """Rotary positions of a left-padded prompt's slots (0 for padding) then of the
  generation region's ``gen_len`` slots (continuing after the last real prompt token)."""
  a = _common.check_arrays(dict(prompt_mask_P=prompt_mask_P), kinds=dict(prompt_mask_P="bool"))
  gen_len = _common.check_int("gen_len", gen_len)
  m = jnp.asarray(a["prompt_mask_P"], jnp.int32)
  n = jnp.sum(m)
  return jnp.concatenate([jnp.maximum(jnp.cumsum(m) - 1, 0), n + jnp.arange(gen_len)])


# ---------------------------------------------------------------------------------- training


def training_batch(prompt_NxP, prompt_mask_NxP, target_NxG, key, *, block_len: int,
                   mask_id: int):
  """One block-diffusion training batch (BD3-LM's two-copy layout, our construction).

  Each row is ``[prompt | clean answer | noisy answer]``: every answer block of the noisy
  copy has its own masking rate ``t ~ U(0, 1]``, each token masked with probability ``t``
  (at least one per block). A noisy block attends to the clean prompt and clean earlier
  answer blocks and to itself; clean tokens attend block-causally among clean tokens. The
  noisy copy shares the clean answer's positions. One pass trains every block.

  Returns ``(ids_NxT, positions_NxT, allowed_NxTxT, labels_NxT, weights_NxT)``, ``T = P +
  2G``; ``weights`` marks the masked tokens (the loss's targets).
  """
  a = _common.check_arrays(dict(prompt_NxP=prompt_NxP, prompt_mask_NxP=prompt_mask_NxP,
                                target_NxG=target_NxG),
                           kinds=dict(prompt_NxP="int", prompt_mask_NxP="bool", target_NxG="int"))
  key = _common.check_key("key", key)
  block_len = _common.check_int("block_len", block_len, 1)
  prompt = jnp.asarray(a["prompt_NxP"], jnp.int32)
  pmask = jnp.asarray(a["prompt_mask_NxP"], bool)
  target = jnp.asarray(a["target_NxG"], jnp.int32)
  n, p = prompt.shape
  g = target.shape[1]
  if p % block_len or g % block_len:
    raise ValueError(f"block_len={block_len} must divide the prompt ({p}) and the answer "
                     f"({g}) lengths")
  return _training_batch(prompt, pmask, target, key, mask_id, block_len=block_len)


@functools.partial(jax.jit, static_argnames="block_len")
def _training_batch(prompt, pmask, target, key, mask_id, *, block_len):
  n, p = prompt.shape
  g = target.shape[1]
  nb = g // block_len
  k_rate, k_tok, k_force = jax.random.split(key, 3)
  rate_NxB = jax.random.uniform(k_rate, (n, nb), minval=1e-3, maxval=1.0)
  noise_NxG = jax.random.uniform(k_tok, (n, g))
  masked_NxG = noise_NxG < jnp.repeat(rate_NxB, block_len, axis=1)
  # at least one masked token per block: force a uniformly chosen position
  forced_NxB = jax.random.randint(k_force, (n, nb), 0, block_len)
  forced_NxG = jax.nn.one_hot(forced_NxB, block_len, dtype=bool).reshape(n, g)
  masked_NxG = masked_NxG | forced_NxG
  noisy = jnp.where(masked_NxG, mask_id, target)
  ids = jnp.concatenate([prompt, target, noisy], axis=1)
  pos = jax.vmap(lambda m: prompt_positions(m, g))(pmask)
  positions = jnp.concatenate([pos, pos[:, p:]], axis=1)
  block_S = jnp.arange(p + g) // block_len
  real = jnp.concatenate([pmask, jnp.ones((n, g), bool)], axis=1)
  clean = jax.vmap(lambda r: block_causal(block_S, r))(real)  # (N, P+G, P+G)
  nblk = block_S[p:]  # blocks of the noisy copy
  noisy_to_clean = (block_S[None, :] < nblk[:, None])[None] & real[:, None, :]
  noisy_to_noisy = jnp.broadcast_to(nblk[None, :] == nblk[:, None], (n, g, g))
  top = jnp.concatenate([clean, jnp.zeros((n, p + g, g), bool)], axis=2)
  bottom = jnp.concatenate([noisy_to_clean, noisy_to_noisy], axis=2)
  allowed = jnp.concatenate([top, bottom], axis=1)
  labels = jnp.concatenate([prompt, target, target], axis=1)
  weights = jnp.concatenate([jnp.zeros((n, p + g), bool), masked_NxG], axis=1)
  return ids, positions, allowed, labels, weights


def diffusion_loss(model: MoeLM, params, batch) -> jax.Array:
  """Per row ``(N,)``: the mean cross-entropy of its masked tokens in a
  :func:`training_batch` (average over rows for the batch loss)."""
  return _diffusion_loss(model, params, tuple(batch))


@functools.partial(jax.jit, static_argnums=0)
def _diffusion_loss(model, params, batch):
  ids, positions, allowed, labels, weights = batch
  logits = model.forward(params, ids, positions, allowed, None, None, None, None)[0]
  logp = jax.nn.log_softmax(logits)
  nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
  w = weights.astype(jnp.float32)
  return jnp.sum(nll * w, axis=1) / jnp.maximum(jnp.sum(w, axis=1), 1.0)


# ---------------------------------------------------------------------------------- decoding


def commit_rule(masked_W, conf_W, threshold):
  """The vanilla rule: masked positions with confidence ``> threshold``, or the single
  most confident masked position when none is (none when nothing is masked)."""
  a = _common.check_arrays(dict(masked_W=masked_W, conf_W=conf_W),
                           kinds=dict(masked_W="bool"))
  masked_W, conf_W = jnp.asarray(a["masked_W"]), jnp.asarray(a["conf_W"])
  above = masked_W & (conf_W > threshold)
  best = jax.nn.one_hot(jnp.argmax(jnp.where(masked_W, conf_W, -1.0)), conf_W.shape[0],
                        dtype=bool) & masked_W
  return jnp.where(jnp.any(above), above, best)


def _same_set(a_LxWxK, b_LxWxK):
  return jnp.all(jnp.sort(a_LxWxK, axis=-1) == jnp.sort(b_LxWxK, axis=-1), axis=-1)


def _decode_row(model, params, prompt_P, pmask_P, *, gen_len, block_len, threshold,
                strategies, limit_distance, limit_confidence, mask_id, eos_id, stop_at_eos):
  p, lb, n_layers = prompt_P.shape[0], block_len, model.n_layers
  e, k = model.n_experts, model.top_k
  s_total = p + gen_len
  positions_S = prompt_positions(pmask_P, gen_len)
  real_S = jnp.concatenate([pmask_P, jnp.ones((gen_len,), bool)])
  block_S = jnp.arange(s_total) // lb
  reuse_on, limit_on, spec_on = (s in strategies for s in STRATEGIES)
  nb = _BRANCHES if spec_on else 1

  def forward(ids_W, start, cache, limited_W=None, reuse_W=None, reuse_out_LxWxD=None):
    """Runs ``nb`` copies (or one) of a block at slots ``start..``; returns logits, this
    call's keys/values, the MoE intermediates and the pass's counters."""
    w = ids_W.shape[0]
    copies = w // lb
    pos_W = jnp.tile(jax.lax.dynamic_slice_in_dim(positions_S, start, lb), copies)
    prefix_S = real_S & (jnp.arange(s_total) < start)
    copy_W = jnp.arange(w) // lb
    own_WxW = copy_W[:, None] == copy_W[None, :]
    allowed = jnp.concatenate([jnp.broadcast_to(prefix_S, (w, s_total)), own_WxW], axis=1)
    prefix = tuple((cache[0][i][None], cache[1][i][None]) for i in range(n_layers))
    logits, kv, experts, router, moe_out = model.forward(
        params, ids_W[None], pos_W[None], allowed[None], prefix,
        None if limited_W is None else limited_W[None],
        None if reuse_W is None else reuse_W[None],
        None if reuse_W is None else reuse_out_LxWxD[:, None])
    experts_LxWxK, router_LxWxE, moe_out_LxWxD = experts[:, 0], router[:, 0], moe_out[:, 0]
    routed_LxW = jnp.any(experts_LxWxK >= 0, axis=-1)
    used_LxE = jnp.any(jax.nn.one_hot(experts_LxWxK, e, dtype=bool), axis=(1, 2))
    free_LxWxK = jax.lax.top_k(router_LxWxE, k)[1]
    lim_LxW = (jnp.zeros((n_layers, w), bool) if limited_W is None
               else jnp.broadcast_to(limited_W, (n_layers, w)) & routed_LxW)
    n_prefix = jnp.sum(prefix_S)
    stats = _zero_stats()._replace(
        tokens=jnp.int32(w), prefix_slots=n_prefix.astype(jnp.int32),
        attended=(w * (n_prefix + lb)).astype(jnp.int32),
        routed=jnp.sum(routed_LxW, dtype=jnp.int32),
        dispatches=jnp.sum(experts_LxWxK >= 0, dtype=jnp.int32),
        expert_loads=jnp.sum(used_LxE, dtype=jnp.int32),
        limited=jnp.sum(lim_LxW, dtype=jnp.int32),
        limited_consistent=jnp.sum(lim_LxW & _same_set(experts_LxWxK, free_LxWxK),
                                   dtype=jnp.int32))
    return logits[0], kv, (experts_LxWxK, free_LxWxK, moe_out_LxWxD), stats

  def add(a, b):
    return jax.tree.map(jnp.add, a, b)

  def predict(logits_WxV):
    # <mask> is never a prediction (a committed <mask> would stay masked forever)
    probs = jax.nn.softmax(logits_WxV.at[..., mask_id].set(-jnp.inf), axis=-1)
    return jnp.argmax(probs, axis=-1).astype(jnp.int32), jnp.max(probs, axis=-1)

  def plain_step(block, start, cache):
    logits, _, (experts, free, moe_out), st = forward(block, start, cache)
    x0, conf = predict(logits)
    sel = commit_rule(block == mask_id, conf, threshold)
    carry = dict(x0=x0, conf=conf, transfer=sel, moe_out=moe_out, record=free)
    return jnp.where(sel, x0, block), carry, st._replace(passes=jnp.int32(1))

  def team_step(block, start, cache, carry):
    masked = block == mask_id
    n_masked = jnp.sum(masked)
    cmask = jnp.where(masked, carry["conf"], -1.0)
    p1 = jnp.argmax(cmask)
    p2 = jnp.argmax(jnp.where(jnp.arange(lb) == p1, -2.0, cmask))
    has2 = n_masked >= 2
    one1 = jax.nn.one_hot(p1, lb, dtype=bool)
    one2 = jax.nn.one_hot(p2, lb, dtype=bool) & has2
    if spec_on:
      b1 = jnp.where(one1, carry["x0"], block)
      b2 = jnp.where(one2, carry["x0"], block)
      b3 = jnp.where(one2, carry["x0"], b1)
      branches = jnp.stack([block, b1, b2, b3])
    else:
      branches = block[None]
    reuse_W = reuse_out = None
    if reuse_on:
      reuse_W = jnp.tile(~masked & ~carry["transfer"], nb)
      reuse_out = jnp.tile(carry["moe_out"], (1, nb, 1))
    limited_W = None
    if limit_on:
      filled = branches[-1] != mask_id
      gap = jnp.abs(jnp.arange(lb)[:, None] - jnp.arange(lb)[None, :])
      dist = jnp.where(jnp.any(filled), jnp.min(jnp.where(filled[None, :], gap, lb), axis=1), 0)
      top2 = one1 | one2
      limited = masked & (dist > limit_distance) & ~top2 & (carry["conf"] < limit_confidence)
      limited_W = jnp.tile(limited, nb)
    logits, _, (experts, free, moe_out), st = forward(branches.reshape(-1), start, cache,
                                                      limited_W, reuse_W, reuse_out)
    x0_NxL, conf_NxL = predict(logits.reshape(nb, lb, -1))
    masked_NxL = branches == mask_id
    commit_NxL = jax.vmap(lambda m, c: commit_rule(m, c, threshold))(masked_NxL, conf_NxL)
    if spec_on:
      y = jnp.where(masked_NxL, x0_NxL, branches)
      acc1 = commit_NxL[0, p1] & (y[0, p1] == y[1, p1])
      acc2 = has2 & commit_NxL[0, p2] & (y[0, p2] == y[2, p2])
      acc21 = acc2 & commit_NxL[2, p1] & (y[2, p1] == y[1, p1])
      acc12 = has2 & commit_NxL[1, p2] & (y[1, p2] == y[2, p2])
      both = (acc1 & acc2) | (acc1 & acc12) | (acc2 & acc21)
      choice = jnp.where(both, 3, jnp.where(acc1, 1, jnp.where(acc2, 2, 0)))
    else:
      choice = jnp.int32(0)
    chosen = branches[choice]
    sel = commit_NxL[choice]
    new_block = jnp.where(sel, x0_NxL[choice], chosen)
    sl = lambda a: jax.lax.dynamic_slice_in_dim(a, choice * lb, lb, axis=1)  # noqa: E731
    routed = jnp.any(sl(experts) >= 0, axis=-1)  # (L, lb): routed this pass, chosen copy
    record = jnp.where(routed[..., None], sl(free), carry["record"])
    # reuse consistency: a reused token's fresh router choice against its last routed one
    reused_LxW = (jnp.zeros((n_layers, lb * nb), bool) if reuse_W is None
                  else jnp.broadcast_to(reuse_W, (n_layers, lb * nb)))
    same = _same_set(free, jnp.tile(carry["record"], (1, nb, 1)))
    st = st._replace(passes=jnp.int32(1), reused=jnp.sum(reused_LxW, dtype=jnp.int32),
                     reused_consistent=jnp.sum(reused_LxW & same, dtype=jnp.int32),
                     speculated=jnp.sum((chosen != block), dtype=jnp.int32))
    new_carry = dict(x0=x0_NxL[choice], conf=conf_NxL[choice], transfer=sel,
                     moe_out=sl(moe_out), record=record)
    return new_block, new_carry, st

  def block_body(state):
    i, canvas, cache, _, stats = state
    start = p + i * lb
    block = jax.lax.dynamic_slice_in_dim(canvas, start, lb)
    block, carry, st = plain_step(block, start, cache)
    stats = add(stats, st)

    def cond(s):
      return jnp.any(s[0] == mask_id)

    def body(s):
      blk, c, acc = s
      if strategies:
        blk, c, st = team_step(blk, start, cache, c)
      else:
        blk, c, st = plain_step(blk, start, cache)
      return blk, c, add(acc, st)

    block, _, stats = jax.lax.while_loop(cond, body, (block, carry, stats))
    _, kv, _, st = forward(block, start, cache)  # the cache-writing pass
    stats = add(stats, st._replace(store_passes=jnp.int32(1)))
    cache = (jnp.stack([jax.lax.dynamic_update_slice_in_dim(cache[0][j], kv[j][0][0], start, 0)
                        for j in range(n_layers)]),
             jnp.stack([jax.lax.dynamic_update_slice_in_dim(cache[1][j], kv[j][1][0], start, 0)
                        for j in range(n_layers)]))
    canvas = jax.lax.dynamic_update_slice_in_dim(canvas, block, start, 0)
    done = stop_at_eos & jnp.any((canvas == eos_id) & (jnp.arange(s_total) >= p))
    return i + 1, canvas, cache, done, stats

  # prefill: the prompt's blocks, block-causally, into the cache
  allowed_PxP = block_causal(block_S[:p], pmask_P)
  kv = model.forward(params, prompt_P[None], positions_S[None, :p], allowed_PxP[None], None,
                     None, None, None)[1]
  kvh = (model.n_kv_heads, model.head_dim)
  zeros = jnp.zeros((n_layers, s_total) + kvh, jnp.float32)
  cache = (zeros.at[:, :p].set(jnp.stack([kv[j][0][0] for j in range(n_layers)])),
           zeros.at[:, :p].set(jnp.stack([kv[j][1][0] for j in range(n_layers)])))
  canvas = jnp.concatenate([prompt_P, jnp.full((gen_len,), mask_id, jnp.int32)])
  n_blocks = gen_len // lb
  state = (jnp.int32(0), canvas, cache, jnp.bool_(False), _zero_stats())
  _, canvas, _, _, stats = jax.lax.while_loop(lambda s: (s[0] < n_blocks) & ~s[3], block_body,
                                              state)
  return canvas[p:], stats


def decode(model: MoeLM, params, prompt_NxP, prompt_mask_NxP, *, gen_len: int,
           block_len: int, mask_id: int, eos_id: int, threshold: float = 0.95,
           strategies: Sequence[str] = (), limit_distance: int = 3,
           limit_confidence: float = 0.7, stop_at_eos: bool = True):
  """Block-diffusion decoding of ``N`` left-padded prompts, vanilla (``strategies=()``) or
  with any of TEAM's :data:`STRATEGIES`; jitted (one program per shape and setting).

  Returns the generation region ``(N, gen_len)`` (``mask_id`` where decoding stopped
  before reaching it) and :class:`Stats`.
  """
  a = _common.check_arrays(dict(prompt_NxP=prompt_NxP, prompt_mask_NxP=prompt_mask_NxP),
                           kinds=dict(prompt_NxP="int", prompt_mask_NxP="bool"))
  prompt, prompt_mask_NxP = jnp.asarray(a["prompt_NxP"], jnp.int32), a["prompt_mask_NxP"]
  _check_decode_args(model, prompt.shape[1], gen_len, block_len, threshold,
                     limit_confidence, limit_distance)
  return _decode(model, params, prompt, jnp.asarray(prompt_mask_NxP, bool),
                 gen_len=int(gen_len), block_len=int(block_len), threshold=float(threshold),
                 strategies=check_strategies(strategies), limit_distance=int(limit_distance),
                 limit_confidence=float(limit_confidence), mask_id=int(mask_id),
                 eos_id=int(eos_id), stop_at_eos=bool(stop_at_eos))


@functools.partial(jax.jit, static_argnames=(
    "model", "gen_len", "block_len", "threshold", "strategies", "limit_distance",
    "limit_confidence", "mask_id", "eos_id", "stop_at_eos"))
def _decode(model, params, prompt_NxP, pmask_NxP, **kw):
  # One row at a time (batch-one decoding, as SDAR's evaluation runs): under vmap the two
  # data-dependent while loops would run every row to the slowest row's pass count, and
  # XLA:CPU's fusion emitters take minutes to compile the batched form.
  return jax.lax.map(lambda a: _decode_row(model, params, a[0], a[1], **kw),
                     (prompt_NxP, pmask_NxP))


def reference_decode(model: MoeLM, params, prompt_P, prompt_mask_P, *,
                     gen_len: int, block_len: int, mask_id: int, eos_id: int,
                     threshold: float = 0.95, speculate: bool = False, log: list | None = None
                     ) -> np.ndarray:
  """One prompt decoded by a plain loop (no cache, no jit): the independent check of
  :func:`decode` without reuse and limiting. Every pass runs the whole sequence so far
  under the block-causal mask (a speculative copy of the block is its own pass) and picks
  in numpy. ``log``, if given, receives ``(block_start, block_before, copy_kept,
  block_after)`` per denoising pass after a block's first.
  """
  a = _common.check_arrays(dict(prompt_P=prompt_P, prompt_mask_P=prompt_mask_P),
                           kinds=dict(prompt_P="int", prompt_mask_P="bool"))
  prompt = np.asarray(a["prompt_P"], np.int32)
  pmask = np.asarray(a["prompt_mask_P"], bool)
  p = len(prompt)
  _check_decode_args(model, p, gen_len, block_len, threshold, 0.5, 0)
  positions = np.asarray(prompt_positions(pmask, gen_len))
  canvas = np.concatenate([prompt, np.full(gen_len, mask_id, np.int32)])
  real = np.concatenate([pmask, np.ones(gen_len, bool)])

  def vanilla(block, start):
    """The rule on one copy of the block: (prediction, confidence, committed positions)."""
    end = start + block_len
    seq = np.concatenate([canvas[:start], block])
    blocks = np.arange(end) // block_len
    allowed = (blocks[None, :] <= blocks[:, None]) & real[None, :end]
    logits = model.forward(params, seq[None], positions[None, :end], allowed[None], None,
                           None, None, None)[0]
    z = np.asarray(logits[0, start:end], np.float64)
    z[:, mask_id] = -np.inf
    probs = np.exp(z - z.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    x0, conf = probs.argmax(-1), probs.max(-1)
    masked = block == mask_id
    sel = masked & (conf > threshold)
    if not sel.any() and masked.any():
      sel[np.argmax(np.where(masked, conf, -1.0))] = True
    return x0, conf, sel

  for start in range(p, p + gen_len, block_len):
    end = start + block_len
    block = canvas[start:end].copy()
    x0, conf, sel = vanilla(block, start)
    block = np.where(sel, x0, block)
    while (block == mask_id).any():
      masked = block == mask_id
      if not speculate:
        x0, conf, sel = vanilla(block, start)
        kept, new = block, np.where(sel, x0, block)
      else:
        order = np.argsort(-np.where(masked, conf, -1.0), kind="stable")
        p1, p2 = order[0], order[1] if masked.sum() >= 2 else None
        copies = [block.copy() for _ in range(4)]
        copies[1][p1] = copies[3][p1] = x0[p1]
        if p2 is not None:
          copies[2][p2] = copies[3][p2] = x0[p2]
        runs = [vanilla(cp, start) for cp in copies]
        y = [np.where(cp == mask_id, r[0], cp) for cp, r in zip(copies, runs)]
        t = [r[2] for r in runs]
        acc1 = t[0][p1] and y[0][p1] == y[1][p1]
        acc2 = p2 is not None and t[0][p2] and y[0][p2] == y[2][p2]
        acc21 = acc2 and t[2][p1] and y[2][p1] == y[1][p1]
        acc12 = p2 is not None and t[1][p2] and y[1][p2] == y[2][p2]
        if (acc1 and acc2) or (acc1 and acc12) or (acc2 and acc21):
          c = 3
        else:
          c = 1 if acc1 else 2 if acc2 else 0
        x0, conf, sel = runs[c]
        kept, new = copies[c], np.where(sel, x0, copies[c])
      if log is not None:
        log.append((start, block.copy(), kept.copy(), new.copy()))
      block = new
    canvas[start:end] = block
    if (canvas[p:end] == eos_id).any():
      break
  return canvas[p:]


# ---------------------------------------------------------------------------------- cost


def cost(model: MoeLM, stats: Stats, bytes_per_param: int = 4) -> dict:
  """Modelled cost of decoding from :class:`Stats` (summed over rows), two ways.

  * ``bytes``: memory-bound (batch-one decoding on an accelerator): every pass reads the
    dense weights (attention, router, norms, embedding), the weights of each distinct
    expert it uses, and the cached keys and values it attends to;
  * ``flops``: compute-bound: 2 x multiply-adds of the dense projections per token, of
    attention per query-key pair, and of each (token, expert) dispatch.

  Time is either divided by a bandwidth or a peak rate; a speed-up is a ratio of two such
  sums and needs neither.
  """
  if not isinstance(model, MoeLM):
    raise ValueError(f"model must be a team.MoeLM, got {type(model).__name__}")
  if not isinstance(stats, Stats):
    raise ValueError(f"stats must be a team.Stats, got {type(stats).__name__}")
  named = {f"stats.{k}_N": a for k, a in stats._asdict().items()}  # one length N: the rows
  checked = _common.check_arrays(named, kinds={k: "int" for k in named})
  for name, a in checked.items():
    if np.any(np.asarray(a) < 0):
      raise ValueError(f"{name}: counters must be >= 0")
  tot = Stats(*(float(np.sum(np.asarray(a, np.float64))) for a in checked.values()))
  passes = tot.passes + tot.store_passes
  kv_per_slot = model.n_layers * 2 * model.n_kv_heads * model.head_dim
  bytes_read = bytes_per_param * (passes * model.dense_params
                                  + tot.expert_loads * model.expert_params
                                  + tot.prefix_slots * kv_per_slot)
  flops = (tot.tokens * model.dense_flops_per_token
           + tot.attended * model.attention_flops_per_pair
           + tot.dispatches * 2.0 * model.expert_params)
  return {"bytes": bytes_read, "flops": flops, "passes": passes}
