"""TEAM's computation: the digit task and the MoE block-diffusion model's shapes, its
training (``experiments.train.fit``, orbax-checkpointed, the block-diffusion loss through
``moe.py``'s adapter), and the decoding of a problem set by every mode of :data:`MODES`
(vanilla, each strategy alone, all three, all three but one) with its counters and
wall-clock time. ``experiment.run`` calls these; no claims and no result files here.
"""

from __future__ import annotations

import time

import jax
import numpy as np
import optax

from reprojax.algorithms import team
from reprojax.data import team as team_data
from reprojax.experiments import train
from reprojax.experiments.team import moe
from reprojax.models import llama
from reprojax.models import transformer

MODES = {"vanilla": (), "reuse": ("reuse",), "limit": ("limit",),
         "speculate": ("speculate",), "team": team.STRATEGIES,
         # leave one out: all three but one (the ablation each_strategy_contributes reads)
         **{f"no_{s}": tuple(x for x in team.STRATEGIES if x != s) for s in team.STRATEGIES}}


def task_of(config) -> team_data.DigitTask:
  t = config.task
  return team_data.DigitTask(min_digits=int(t.min_digits), max_digits=int(t.max_digits),
                             prompt_len=int(t.prompt_len), gen_len=int(t.gen_len))


def model_config(config) -> llama.LlamaConfig:
  m, t = config.model, config.task
  return transformer.decoder_config(team_data.VOCAB_SIZE, d_model=int(m.d_model),
                                    n_layers=int(m.n_layers), n_heads=int(m.n_heads),
                                    d_ff=int(m.d_ff), causal=False,
                                    n_experts=int(m.n_experts),
                                    experts_top_k=int(m.experts_top_k),
                                    max_len=int(t.prompt_len) + int(t.gen_len))


def loss_fn(cfg, block_len: int):
  """The block-diffusion loss of ``cfg``'s MoE model, per row (``train.fit``'s loss)."""
  def loss(params, batch, key):
    prompt, pmask, target = batch
    per_row = team.diffusion_loss(moe.moe_lm(cfg), params, team.training_batch(
        prompt, pmask, target, key, block_len=block_len, mask_id=team_data.MASK))
    return per_row, {}
  return loss


def train_model(config, workdir: str, seed: int, mesh, stop_after: int | None = None,
                checkpoint_every: int | None = None):
  """The seed's model: trained by :func:`reprojax.experiments.train.fit` (checkpointed under
  ``<workdir>/model/seed<seed>``; a rerun restores the last step instead of training)."""
  cfg = model_config(config)
  pr = task_of(config).sample(1000 + seed, int(config.train_problems))
  steps = int(config.train_steps)
  opt = optax.adamw(optax.warmup_cosine_decay_schedule(0.0, float(config.learning_rate),
                                                       max(1, steps // 10), steps),
                    weight_decay=0.01)
  state = train.fit(workdir=f"{workdir}/model/seed{seed}", mesh=mesh,
                    init_params=lambda key: llama.init(cfg, key),
                    loss_fn=loss_fn(cfg, int(config.block_len)), optimizer=opt,
                    train_arrays=(pr.prompt_NxP, pr.prompt_mask_NxP, pr.target_NxG),
                    batch_size=int(config.batch_size), num_steps=steps, seed=seed,
                    log_every=100, checkpoint_every=checkpoint_every or steps,
                    stop_after=stop_after)
  return jax.device_get(state.params)


def decode_kwargs(config) -> dict:
  return dict(gen_len=int(config.task.gen_len), block_len=int(config.block_len),
              mask_id=team_data.MASK, eos_id=team_data.EOS, threshold=float(config.threshold),
              limit_distance=int(config.limit_distance),
              limit_confidence=float(config.limit_confidence))


def evaluate(config, params, problems: team_data.Problems) -> dict[str, dict]:
  """Every mode of :data:`MODES` on ``problems``: outputs, counters, wall-clock seconds."""
  cfg = model_config(config)
  kw = decode_kwargs(config)
  out = {}
  for name, strategies in MODES.items():
    run_once = lambda: jax.block_until_ready(team.decode(  # noqa: E731
        moe.moe_lm(cfg), params, problems.prompt_NxP, problems.prompt_mask_NxP, strategies=strategies,
        **kw))
    run_once()  # compile
    t0 = time.perf_counter()
    gen, stats = run_once()
    out[name] = dict(gen=np.asarray(gen), stats=jax.tree.map(np.asarray, stats),
                     seconds=time.perf_counter() - t0)
  return out
