"""PDR's computation: the sorting task and the decoder's shapes, the decoder's training
(``experiments.train.fit``, orbax-checkpointed), the model as PDR's batched token generator,
and every method's traces on a batch of questions (the single long pass, SR, PDR in each
distillation mode, best-of-N, the shuffled control) with their exact-match scores.
``experiment.run`` calls these; GRPO consistent with PDR is in ``rl.py``. No claims and no
result files here.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import optax

from reprojax.algorithms import pdr
from reprojax.data import pdr as pdr_data
from reprojax.experiments import train
from reprojax.models import llama
from reprojax.models import transformer


def sorting_task(config) -> pdr_data.SortingTask:
  t = config.task
  return pdr_data.SortingTask(length=int(t.length), num_values=int(t.num_values),
                              max_drafts=int(t.max_drafts), p_correct=float(t.p_correct))


def prompt_pad(config) -> int:
  """Every prompt is left-padded to this length (one compiled program per batch size): the
  longest prompt, whose workspace holds ``max(width, rounds - 1, k)`` drafts."""
  task = sorting_task(config)
  most = max(int(config.width), int(config.rounds) - 1, int(config.k), task.max_drafts)
  return task.prompt_tokens(most)


def model_config(config) -> llama.LlamaConfig:
  task = sorting_task(config)
  longest = prompt_pad(config) + max(task.draft_tokens, task.workspace_tokens(int(config.k)))
  m = config.model
  return transformer.decoder_config(task.vocab_size, d_model=int(m.d_model),
                                    n_layers=int(m.n_layers), n_heads=int(m.n_heads),
                                    max_len=longest)


def training_arrays(config, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  task = sorting_task(config)
  prompts, targets = pdr_data.training_pairs(task, int(config.train_steps) *
                                             int(config.batch_size), seed)
  length = task.prompt_tokens(task.max_drafts) + task.draft_tokens
  return transformer.pack(prompts, targets, length)


def train_model(config, mesh, workdir: str, seed: int, stop_after: int | None = None) -> Any:
  """The trained decoder's parameters: ``train.fit`` checkpoints every
  ``config.checkpoint_every`` steps under ``workdir``, so a rerun restores the trained
  model and a killed one resumes, bit-identical to an uninterrupted run."""
  cfg = model_config(config)
  arrays = training_arrays(config, 1000 + seed)
  steps = int(config.train_steps)
  optimizer = optax.adamw(optax.warmup_cosine_decay_schedule(
      0.0, float(config.learning_rate), max(1, steps // 10), steps), weight_decay=0.01)

  def loss_fn(params, batch, key):
    del key
    return transformer.lm_loss(cfg, params, *batch), {}

  state = train.fit(workdir=workdir, mesh=mesh, init_params=lambda key: llama.init(cfg, key),
                    loss_fn=loss_fn, optimizer=optimizer, train_arrays=arrays,
                    batch_size=int(config.batch_size), num_steps=steps, seed=seed,
                    log_every=100, checkpoint_every=int(config.checkpoint_every),
                    stop_after=stop_after)
  return jax.device_get(state.params)


def token_generator(model: llama.LlamaConfig, params, *, temperature: float = 0.7,
                    eos_ids=(), pad_id: int = 0, multiple: int = 32):
  """A LLaMA-architecture model as PDR's batched token generator
  (:func:`reprojax.algorithms.pdr.pdr`'s ``generate``): ``(prompts, max_new_tokens, key) ->
  [pdr.Draft(tokens, score)]``, all prompts in one :func:`reprojax.models.llama.generate`
  call (left-padded to a multiple of ``multiple``), each draft sampled at ``temperature``
  and scored by its mean token log-probability (the model's own confidence; 0 for an empty
  draft). Any checkpoint the model loads runs PDR through it (SmolLM2 included)."""
  def call(prompts, max_new_tokens, key):
    ids, mask = llama.pad_batch([list(p) for p in prompts], pad_id, "left", multiple)
    gen = llama.generate(model, params, ids, mask, max_new_tokens=max_new_tokens,
                         eos_ids=eos_ids, pad_id=pad_id, temperature=temperature, key=key)
    tokens, lengths, logp = (np.asarray(x) for x in (gen.tokens_BxN, gen.lengths_B,
                                                     gen.logprob_B))
    return [pdr.Draft(tuple(int(t) for t in tokens[b, :lengths[b]]),
                      float(logp[b] / lengths[b]) if lengths[b] else 0.0)
            for b in range(len(prompts))]

  return call


def generator(config, params, temperature: float):
  return token_generator(model_config(config), params, temperature=temperature,
                         eos_ids=(pdr_data.EOS,), pad_id=pdr_data.PAD,
                         multiple=prompt_pad(config))


def methods(config) -> list[str]:
  r_max = int(config.rounds)
  out = ["greedy"] + [f"long_{r}" for r in range(1, r_max + 1)]
  out += [f"sr_{r}" for r in range(1, r_max + 1)]
  out += [f"pdr_{config.headline_mode}_{r}" for r in range(2, r_max + 1)]
  out += [f"pdr_{m}_{r_max}" for m in config.modes if m != config.headline_mode]
  out += [f"bon_{r}" for r in range(1, r_max + 1)] + [f"shuffled_{r_max}"]
  return out


def answer_all(config, params, qs: pdr_data.Questions, key: jax.Array
               ) -> dict[str, tuple[list[pdr.Trace], str]]:
  """Every method's traces on the questions (see the module docstring)."""
  gen = generator(config, params, float(config.temperature))
  task = sorting_task(config)
  questions = qs.tokens
  r_max, width = int(config.rounds), int(config.width)
  common = dict(draft_tokens=task.draft_tokens, separator=(pdr_data.SEP,),
                prompt=pdr_data.prompt)
  kw = dict(common, workspace_tokens=task.workspace_tokens(int(config.k)), k=int(config.k),
            summary_prompt=pdr_data.summary_prompt)
  out: dict[str, list[pdr.Trace]] = {}
  out["greedy"] = list(pdr.pdr_batch(generator(config, params, 0.0), questions, (1,),
                                     key=key, **kw))
  # the long pass and SR: a run of r_max rounds holds every shorter one (same keys per
  # round), so budget r reads its first r rounds
  long_full = pdr.long_pass_batch(gen, questions, r_max, key=key, **common)
  sr_full = pdr.pdr_batch(gen, questions, (1,) * r_max, key=key, **kw)
  for r in range(1, r_max + 1):
    out[f"long_{r}"] = [_prefix(t, r, len(q)) for t, q in zip(long_full, questions)]
    out[f"sr_{r}"] = [_prefix(t, r, len(q)) for t, q in zip(sr_full, questions)]
  for name in methods(config):
    if name.startswith("pdr_"):
      mode, r = name[4:].rsplit("_", 1)
      out[name] = list(pdr.pdr_batch(gen, questions, (width,) * (int(r) - 1) + (1,), key=key,
                                     mode=mode, **kw))
    elif name.startswith("bon_"):
      n = width * (int(name[4:]) - 1) + 1
      out[name] = list(pdr.pdr_batch(gen, questions, (n,), key=key, **kw))
    elif name.startswith("shuffled_"):
      out[name] = list(pdr.pdr_batch(gen, questions, (width,) * (r_max - 1) + (1,), key=key,
                                     mode=config.headline_mode, control="shuffled", **kw))
  return out


def _prefix(trace: pdr.Trace, r: int, question_tokens: int) -> pdr.Trace:
  """The trace cut after round ``r`` (one draft a round): its answer and budget (a prompt
  is the question, the workspace and the two markers of ``pdr_data.prompt``)."""
  rounds = trace.rounds[:r]
  seq = sum(len(x.drafts[0].tokens) for x in rounds)
  ctx = max(question_tokens + 2 + len(x.workspaces[0]) + len(x.drafts[0].tokens)
            for x in rounds)
  return pdr.Trace(rounds[-1].drafts[0].tokens, rounds,
                   pdr.Budget(seq, seq, ctx, len(rounds)))


def score(traces, qs: pdr_data.Questions) -> np.ndarray:
  return np.array([pdr_data.is_correct(t.answer, a) for t, a in zip(traces, qs.answers_QxN)],
                  np.float64)
