r"""Benchmark: a PDR round as one batched generation against one call per draft.

    python -m reprojax.experiments.bench --papers=pdr

``make bench``'s row: the drafts of one PDR round of the quick config's decoder (2 layers,
width 48; random weights) for 64 sorting questions x 4 parallel drafts, each prompt
holding a full workspace (left-padded to 59 tokens), decoded greedily for the draft's 11
tokens with no stop token, so both sides generate exactly 256 x 11 = 2,816 tokens: ours,
one :func:`reprojax.models.llama.generate` call over all 256 prompts (what
``pdr.pdr_batch`` makes of a round); the peer, the same function called once per draft
(batch 1, the way a per-sample orchestration loop calls a model). The drafts must be
equal token for token (greedy decoding of the same prompt; the batch only changes the
order of floating-point sums, so a flipped near-tie would show here).
"""

from __future__ import annotations

import jax
import numpy as np

from reprojax.data import pdr as pdr_data
from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.pdr import programs
from reprojax.models import llama


def _setup(num_questions: int = 64):
  config = registry.load_config("pdr", "quick")
  cfg = programs.model_config(config)
  task = programs.sorting_task(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(0)))
  qs = pdr_data.questions(task, num_questions, 123)
  rng = np.random.default_rng(0)
  prompts = []
  for x, y in zip(qs.values_QxN, qs.answers_QxN):
    ws: list[int] = []
    for _ in range(int(config.width)):
      ws += ([pdr_data.SEP] if ws else []) + list(pdr_data.encode(pdr_data.corrupt(rng, y, x)))
    prompts += [pdr_data.prompt(pdr_data.encode(x), ws)] * int(config.width)
  return cfg, params, prompts, task.draft_tokens, programs.prompt_pad(config)


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  cfg, params, prompts, n_new, pad = _setup()
  ids, mask = llama.pad_batch(prompts, pdr_data.PAD, "left", pad)

  def ours():
    return np.asarray(llama.generate(cfg, params, ids, mask, max_new_tokens=n_new).tokens_BxN)

  def peer():
    return np.stack([np.asarray(llama.generate(cfg, params, ids[i:i + 1], mask[i:i + 1],
                                               max_new_tokens=n_new).tokens_BxN[0])
                     for i in range(len(prompts))])

  def agree(o, p):
    same = np.all(o == p, axis=1)
    return bool(same.all()), f"{int(same.sum())} of {len(same)} drafts identical"

  tokens = len(prompts) * n_new
  return [bench.Workload(
      paper="pdr",
      name=f"one PDR round: {len(prompts)} drafts ({len(prompts) // 4} questions x 4) of "
           f"{n_new} tokens, prompts of {ids.shape[1]} tokens, quick decoder",
      ours=ours, peer=peer, peer_name="the same generate, one call per draft",
      agree=agree, repeats=3,
      note=f"{tokens:,} generated tokens per call; tokens/s = {tokens:,} / time; greedy, "
           "KV-cached, no stop token")]
