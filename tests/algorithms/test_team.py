"""TEAM's decoders against plain loops, and the MoE controls against per-token numpy loops."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import team
from reprojax.data import team as task_data
from reprojax.experiments.team import moe
from reprojax.models import llama
from reprojax.models import transformer

MASK, EOS = task_data.MASK, task_data.EOS
CFG = transformer.decoder_config(task_data.VOCAB_SIZE, d_model=32, n_layers=2, n_heads=2,
                                 d_ff=32, causal=False, n_experts=8, experts_top_k=2,
                                 max_len=32)
MODEL = moe.moe_lm(CFG)
KW = dict(gen_len=8, block_len=4, mask_id=MASK, eos_id=EOS, threshold=0.5)


@pytest.fixture(scope="module")
def model():
  """Random weights scaled up so predictions are peaked (some passes commit several
  tokens, some one), and three prompts of the digit task."""
  params = llama.init(CFG, jax.random.key(0))
  params = jax.tree.map(lambda a: a * 6.0 if a.ndim > 1 else a, params)
  probs = task_data.DigitTask(min_digits=2, max_digits=2, prompt_len=8, gen_len=8).sample(0, 3)
  return params, probs.prompt_NxP, probs.prompt_mask_NxP


def _vanilla(params, canvas, block, start, real, positions):
  """The vanilla rule on one copy of a block by a fresh full forward: (x0, committed)."""
  end = start + len(block)
  seq = np.concatenate([canvas[:start], block])
  blocks = np.arange(end) // len(block)
  allowed = (blocks[None, :] <= blocks[:, None]) & real[None, :end]
  logits, _ = llama.Llama(CFG).apply(params, seq[None], positions[None, :end], allowed[None],
                                     method=llama.Llama.extend)
  probs = np.asarray(jax.nn.softmax(logits[0, start:end].at[:, MASK].set(-jnp.inf)))
  masked = block == MASK
  sel = masked & (probs.max(-1) > KW["threshold"])
  if not sel.any():
    sel[np.argmax(np.where(masked, probs.max(-1), -1))] = True
  return probs.argmax(-1), sel


def test_vanilla_decoding_equals_the_plain_loop(model):
  """No strategy: the cached, jitted decoder gives the plain loop's tokens, and every pass
  routes every token (one expert set per token and layer, none reused or limited)."""
  params, prompts, masks = model
  got, stats = team.decode(MODEL, params, prompts, masks, **KW)
  for i in range(len(prompts)):
    want = team.reference_decode(MODEL, params, prompts[i], masks[i], **KW)
    np.testing.assert_array_equal(np.asarray(got[i]), want)
  s = jax.tree.map(np.asarray, stats)
  assert np.all(s.routed == CFG.n_layers * s.tokens)
  assert np.all(s.dispatches == CFG.experts_top_k * s.routed)
  assert not (s.reused.any() or s.limited.any() or s.speculated.any())
  assert np.all(s.store_passes >= 1) and np.all(s.passes >= s.store_passes)


def test_speculation_equals_its_plain_loop_and_commits_only_vanilla_tokens(model):
  """Four copies in one pass (block-diagonal attention) give what four separate passes
  give; and every accepted fill is the token the vanilla rule commits there on a copy
  without that fill (the block as it was, or with the other accepted fill)."""
  params, prompts, masks = model
  got, stats = team.decode(MODEL, params, prompts, masks, strategies=("speculate",), **KW)
  accepted = 0
  for i in range(len(prompts)):
    log = []
    want = team.reference_decode(MODEL, params, prompts[i], masks[i], speculate=True, log=log,
                                 **KW)
    np.testing.assert_array_equal(np.asarray(got[i]), want)
    positions = np.asarray(team.prompt_positions(masks[i], KW["gen_len"]))
    real = np.concatenate([masks[i], np.ones(KW["gen_len"], bool)])
    canvas = np.concatenate([prompts[i], want])
    for start, before, kept, _ in log:
      fills = np.flatnonzero(kept != before)
      for q in fills:
        bases = [before] + [np.where(np.arange(len(before)) == o, kept, before)
                            for o in fills if o != q]
        ok = False
        for base in bases:
          x0, sel = _vanilla(params, canvas, base, start, real, positions)
          ok |= bool(sel[q] and x0[q] == kept[q])
        assert ok, f"row {i}: fill {kept[q]} at {q} is not a vanilla commit"
        accepted += 1
  assert accepted == int(np.sum(stats.speculated)) > 0


def test_reused_tokens_never_reach_an_expert():
  """MoE layer: reused rows return the given output, with no experts (-1) and zero
  weight; the other rows are exactly the layer without controls."""
  cfg = dataclasses.replace(CFG, n_experts=4)
  x = np.random.default_rng(0).normal(size=(2, 5, cfg.d_model)).astype(np.float32)
  layer = llama.MoeMlp(cfg)
  params = layer.init(jax.random.key(1), x)
  reuse = np.array([[1, 0, 0, 1, 0], [0, 0, 0, 0, 1]], bool)
  prev = np.random.default_rng(2).normal(size=x.shape).astype(np.float32)
  plain, _ = layer.apply(params, x, mutable=["intermediates"])
  out, st = layer.apply(params, x, reuse_BxT=reuse, reuse_out_BxTxD=prev,
                        mutable=["intermediates"])
  experts = np.asarray(st["intermediates"]["experts"][0])
  np.testing.assert_array_equal(np.asarray(out)[reuse], prev[reuse])
  np.testing.assert_array_equal(np.asarray(out)[~reuse], np.asarray(plain)[~reuse])
  assert np.all(experts[reuse] == -1) and np.all(experts[~reuse] >= 0)


def test_decoding_with_reuse_counts_every_layer_token_once(model):
  """Each (layer, token) of a pass is routed or reused, never both: counted from the
  experts the layers sowed, not inferred from the masks."""
  params, prompts, masks = model
  _, stats = team.decode(MODEL, params, prompts, masks, strategies=("reuse",), **KW)
  s = jax.tree.map(np.asarray, stats)
  assert np.all(s.routed + s.reused == CFG.n_layers * s.tokens) and s.reused.sum() > 0
  assert np.all(s.reused_consistent <= s.reused)


def test_limited_tokens_use_only_experts_the_other_tokens_chose():
  """MoE layer with limiting against a per-token numpy loop: a limited token's top-k is
  taken over the experts the unlimited tokens of its row chose, gates renormalised."""
  cfg = dataclasses.replace(CFG, n_experts=6, experts_top_k=2)
  rng = np.random.default_rng(3)
  x = rng.normal(size=(2, 6, cfg.d_model)).astype(np.float32)
  layer = llama.MoeMlp(cfg)
  params = layer.init(jax.random.key(4), x)
  params = jax.tree.map(lambda a: (0.3 * rng.normal(size=a.shape)).astype(np.float32), params)
  limited = np.array([[0, 0, 1, 1, 0, 1], [1, 0, 1, 1, 1, 1]], bool)
  route = functools.partial(team.limited_top_k, limited_BxT=jnp.asarray(limited))
  out, st = layer.apply(params, x, route=route, mutable=["intermediates"])
  p = params["params"]
  silu = lambda z: z / (1 + np.exp(-z))  # noqa: E731
  want = np.zeros_like(x)
  for b in range(2):
    logits = x[b] @ p["router"]["kernel"]
    allowed = set()
    for t in np.flatnonzero(~limited[b]):
      allowed |= set(np.argsort(-logits[t])[:2].tolist())
    for t in range(6):
      pool = sorted(allowed) if limited[b, t] else list(range(6))
      top = sorted(pool, key=lambda e: -logits[t, e])[:2]
      g = np.exp(logits[t, top] - logits[t, top].max())
      g /= g.sum()
      for gate, e in zip(g, top):
        h = silu(x[b, t] @ p["gate_proj"][e]) * (x[b, t] @ p["up_proj"][e])
        want[b, t] += gate * (h @ p["down_proj"][e])
      chosen = set(np.asarray(st["intermediates"]["experts"][0])[b, t].tolist())
      assert chosen == set(top)
  np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4, atol=1e-5)


def test_training_batch_hides_what_a_noisy_block_must_not_see(model):
  """A noisy answer block's logits do not change when a later clean block, another noisy
  block, or the clean copy of its own block change; they do when an earlier clean block
  does. The targets are exactly the masked noisy tokens."""
  params, prompts, masks = model
  target = np.full((3, 8), 9, np.int32)
  ids, pos, allowed, labels, weights = team.training_batch(prompts, masks, target,
                                                           jax.random.key(0), block_len=4,
                                                           mask_id=MASK)
  p = prompts.shape[1]
  fwd = lambda x: np.asarray(llama.Llama(CFG).apply(params, x, pos, allowed,  # noqa: E731
                                                    method=llama.Llama.extend)[0])
  base = fwd(ids)
  first_noisy = slice(p + 8, p + 12)
  for col, moved in ((p + 4, False), (p + 13, False), (p + 1, False), (p - 1, True)):
    changed = np.asarray(ids).copy()
    changed[:, col] = 10
    same = np.allclose(fwd(changed)[:, first_noisy], base[:, first_noisy], atol=1e-6)
    assert same != moved, col
  np.testing.assert_array_equal(np.asarray(weights),
                                np.asarray(ids == MASK) & (np.arange(ids.shape[1]) >= p + 8))
  assert np.all(np.asarray(labels)[:, p + 8:] == target)


def test_cost_counts_expert_weights_once_per_pass():
  """Memory-bound bytes grow with distinct experts per pass, compute with dispatches."""
  zero = team.Stats(*(np.zeros(1, np.int32) for _ in team.Stats._fields))
  one = zero._replace(passes=np.ones(1, np.int32), tokens=np.array([4]))
  more = one._replace(expert_loads=np.array([3]))
  busy = one._replace(dispatches=np.array([8]))
  expert = 3 * CFG.d_model * CFG.d_ff
  assert team.cost(MODEL, more)["bytes"] - team.cost(MODEL, one)["bytes"] == 4 * 3 * expert
  assert team.cost(MODEL, busy)["flops"] - team.cost(MODEL, one)["flops"] == 2 * 8 * expert
  assert team.cost(MODEL, more)["flops"] == team.cost(MODEL, one)["flops"]


@pytest.mark.parametrize("bad, match", [
    (dict(block_len=3), "divide"),
    (dict(threshold=1.5), "threshold"),
    (dict(threshold=-0.1), "threshold"),
    (dict(limit_confidence=2.0), "limit_confidence"),
    (dict(strategies=("reuse", "warp")), "unknown TEAM strategy"),
])
def test_bad_settings_are_refused(model, bad, match):
  params, prompts, masks = model
  with pytest.raises(ValueError, match=match):
    team.decode(MODEL, params, prompts, masks, **{**KW, **bad})
