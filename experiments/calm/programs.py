"""CALM's programs: what the experiment computes, with no claims and no result files.

The tokenizer and the shapes a config sets (:func:`lengths`, :func:`model_config`); the
training rows and the base corpus; :func:`fit_lm`, the checkpointed fine-tuning that the base
model and every SFT model go through (refusing a workdir trained on other settings); the
model as CALM's generator and the solver-scored metric (:class:`Scorer`, :func:`evaluate`);
the GRPO run with the solver reward (:func:`rl`) and its per-step metrics; and the four
token-matched SFT sets (:func:`sft_sets`). :mod:`.experiment` strings them into the run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any, Mapping, Sequence

import jax
import numpy as np
import optax

from reprojax.algorithms import calm
from reprojax.data import calm as calm_data
from reprojax.experiments import common
from reprojax.experiments import train
from reprojax.models import llama
from reprojax.models import transformer

METHODS = ("base", "direct", "styled", "calm", "random", "direct_rl", "calm_rl")
SFT_SETS = ("direct", "styled", "calm", "random")

TOKENIZER = transformer.Tokenizer(symbols=calm_data.SYMBOLS)
EOS = TOKENIZER.special("<eos>")
PAD = TOKENIZER.pad_id


def sft_names(config) -> tuple[str, ...]:
  """The SFT sets of a run: :data:`SFT_SETS` and, per ``config.extra_styles``, direct SFT on
  the gold in that style (``direct_<style>``: the teacher's differences one at a time)."""
  return SFT_SETS + tuple(f"direct_{s}" for s in config.get("extra_styles", ()))


def methods(config) -> tuple[str, ...]:
  """Every model a run evaluates: :data:`METHODS` and the extra styles' SFT models."""
  return METHODS + sft_names(config)[len(SFT_SETS):]




def lengths(config) -> tuple[int, int]:
  """``(prompt pad, row length)``: prompts are left-padded to the first; a training row
  (prompt, trajectory with up to ``max_hints`` hints, eos) fits in the second."""
  p, f = calm_data.max_lengths(tuple(config.eval_levels) + tuple(config.base_levels))
  prompt_pad = -(-p // 8) * 8
  return prompt_pad, -(-(p + f + 2 * int(config.max_hints) + 1) // 8) * 8


def new_tokens(config) -> int:
  """The most tokens a generation call writes (a whole attempt, with room for hints)."""
  _, f = calm_data.max_lengths(tuple(config.eval_levels) + tuple(config.base_levels))
  return f + 2 * int(config.max_hints) + 1


def model_config(config) -> llama.LlamaConfig:
  m = config.model
  _, row = lengths(config)
  # a prefix of CALM's later rounds holds earlier continuations: room for every round
  return transformer.decoder_config(TOKENIZER.vocab_size, d_model=int(m.d_model),
                                    n_layers=int(m.n_layers), n_heads=int(m.n_heads),
                                    max_len=(int(config.max_hints) + 2) * row
                                    + new_tokens(config))


# ----------------------------------------------------------------------------- rows


def rows(prompts: Sequence[Sequence[Any]], answers: Sequence[Sequence[Any]], length: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """``prompt + answer + eos`` rows (the answer and its eos the targets), right-padded."""
  p = [TOKENIZER.encode(x) for x in prompts]
  t = [TOKENIZER.encode(a) + (EOS,) for a in answers]
  return transformer.pack(p, t, length)


def base_corpus(config, seed: int):
  n = max(256, int(config.base_steps) * int(config.batch_size) // 4)
  probs = calm_data.sample(config.base_levels, n, 1000 + seed, config.base_weights)
  rng = np.random.default_rng([seed, 11])
  answers = [calm_data.with_hints(p.gold, float(config.hint_rate), rng, int(config.max_hints))
             for p in probs]
  _, row = lengths(config)
  return rows([p.prompt for p in probs], answers, row)


@functools.lru_cache(maxsize=None)
def _objective(cfg: llama.LlamaConfig, steps: int, lr: float):
  """The loss and optimizer objects of a fine-tuning run (one per shape and schedule, so that
  ``train.fit``'s memoised step compiles once for every seed and variant)."""
  optimizer = optax.adamw(optax.warmup_cosine_decay_schedule(0.0, lr, max(1, steps // 10),
                                                             steps), weight_decay=0.01)

  def loss_fn(params, batch, key):
    del key
    return transformer.lm_loss(cfg, params, *batch), {}

  return loss_fn, optimizer


def fit_lm(config, mesh, workdir: str, init, arrays, *, steps: int, lr: float, seed: int,
           batch_size: int, stop_after: int | None = None):
  """``steps`` AdamW steps of the masked next-token loss from ``init`` (a key function or
  parameters) on ``arrays``, checkpointed under ``workdir``: a rerun restores it, a killed
  one resumes (``stop_after``: stop there, for tests), and a workdir trained with other
  settings or data is refused (:func:`_guard`)."""
  cfg = model_config(config)
  _guard(workdir, cfg, arrays, init, steps=int(steps), lr=float(lr), seed=int(seed),
         batch_size=int(batch_size))
  loss_fn, optimizer = _objective(cfg, int(steps), float(lr))
  state = train.fit(workdir=workdir, mesh=mesh, init_params=init, loss_fn=loss_fn,
                    optimizer=optimizer, train_arrays=arrays,
                    batch_size=int(batch_size), num_steps=int(steps), seed=seed,
                    log_every=max(1, int(steps) // 4), checkpoint_every=int(steps),
                    stop_after=stop_after)
  return jax.device_get(state.params)


def _guard(workdir: str, cfg, arrays, init, **settings) -> None:
  """Checkpoints in ``workdir`` are resumed only if they were trained with the same model,
  data, start and schedule (a digest in ``settings.json``); else a clear error, never a
  silent restore of another run's model (CALM's training sets depend on the base model)."""
  h = hashlib.sha256(repr((cfg, sorted(settings.items()))).encode())
  for a in arrays:
    h.update(np.ascontiguousarray(a).tobytes())
  if not callable(init):
    for leaf in jax.tree.leaves(init):
      h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
  digest = h.hexdigest()
  path = os.path.join(workdir, "settings.json")
  if os.path.isfile(path):
    with open(path) as f:
      saved = json.load(f)["digest"]
    if saved != digest:
      raise ValueError(f"{workdir} holds a training with other settings or data (another "
                       "config or code version); use a fresh --workdir")
    return
  if os.path.isdir(os.path.join(workdir, "checkpoints")):
    raise ValueError(f"{workdir} holds checkpoints without settings.json; use a fresh "
                     "--workdir")
  if jax.process_index() == 0:
    os.makedirs(workdir, exist_ok=True)
    with open(path, "w") as f:
      json.dump({"digest": digest}, f)


def train_base(config, mesh, workdir: str):
  cfg = model_config(config)
  seed = int(config.seed)
  return fit_lm(config, mesh, os.path.join(workdir, "base"),
                lambda key: llama.init(cfg, key), base_corpus(config, seed),
                steps=int(config.base_steps), lr=float(config.learning_rate), seed=seed,
                batch_size=int(config.batch_size))


# ----------------------------------------------------------------------------- generation


def generator(config, params, temperature: float):
  """The model as CALM's generator: ``(prefixes, key) -> continuations`` (symbols, eos and
  anything after it dropped), all prefixes in one ``llama.generate`` call, left-padded to a
  multiple of the prompt pad and the batch to a multiple of 32 (few compiled shapes)."""
  cfg = model_config(config)
  pad, _ = lengths(config)
  n_new = new_tokens(config)

  def call(prefixes, key):
    seqs = [TOKENIZER.encode(p) for p in prefixes]
    b = len(seqs)
    seqs += [seqs[0]] * (-b % 32)
    ids, mask = llama.pad_batch(seqs, PAD, "left", pad)
    gen = llama.generate(cfg, params, ids, mask, max_new_tokens=n_new, eos_ids=(EOS,),
                         pad_id=PAD, temperature=temperature, key=key)
    tokens, n = np.asarray(gen.tokens_BxN), np.asarray(gen.lengths_B)
    out = []
    for i in range(b):
      row = [int(t) for t in tokens[i, :n[i]]]
      cut = next((j for j, t in enumerate(row) if t < len(TOKENIZER.specials)), len(row))
      out.append(TOKENIZER.decode(row[:cut]))
    return out

  return call


class Scorer:
  """The paper's metric with a memo: a trajectory that writes the gold lines (as a set) is
  right without a solve; any other is parsed and solved once per distinct text."""

  def __init__(self):
    self.memo: dict[tuple, calm.Verdict] = {}
    self.solves = 0

  def __call__(self, trajectory, problem: calm_data.Problem) -> calm.Verdict:
    if calm.first_error(trajectory, problem.gold.lines()) is None:
      return calm.Verdict(True, "correct", problem.optimum)
    key = (tuple(trajectory), problem.optimum)
    if key not in self.memo:
      self.solves += 1
      self.memo[key] = calm.verify(trajectory, problem.optimum)
    return self.memo[key]


def reason_class(v: calm.Verdict) -> str:
  if v.correct:
    return "correct"
  if v.reason.startswith("parse"):
    return "parse"
  return v.reason if v.reason in ("infeasible", "unbounded") else "wrong_optimum"


def evaluate(config, params, problems, scorer) -> tuple[np.ndarray, list[calm.Verdict],
                                                        list[tuple]]:
  gen = generator(config, params, 0.0)
  outs = gen([p.prompt for p in problems], jax.random.key(0))
  verdicts = [scorer(o, p) for o, p in zip(outs, problems)]
  return np.array([v.correct for v in verdicts]), verdicts, outs


# ----------------------------------------------------------------------------- RL


RL_LOG = ("reward", "unparsed", "kl", "clipped", "informative")
"""What :func:`rl` logs per GRPO step: the mean solver reward of the step's samples (the
share that are right: the reward is 1 exactly when the written model's optimum is the
gold one), the share that do not parse (a parse error, or no finished formulation), the
mean k3 KL to the reference and the clipped fraction (the update's
:class:`reprojax.algorithms.policy_gradient.GrpoAux`, at the parameters that sampled the
step: step 1's KL is 0, the policy being the reference), and the share of groups whose
rewards differ (the others have zero advantage and give no policy gradient)."""


def rl(config, sft_params, seed: int, scorer, mesh=None
       ) -> tuple[Any, float, dict[str, list[float]]]:
  """``rl_steps`` GRPO steps from ``sft_params`` with the solver reward (the update's rows
  split over ``mesh``'s ``data`` axis when given; sampling runs on one device); returns the
  parameters, the mean reward of the last quarter of the steps and the per-step log
  (``{name: [one value per step]}`` for each name of :data:`RL_LOG`)."""
  cfg = model_config(config)
  optimizer, step = train.grpo_step(cfg, float(config.rl_learning_rate),
                                    float(config.rl_beta), 0.2, mesh, with_aux=True)
  params, opt_state = sft_params, optimizer.init(sft_params)
  pad, _ = lengths(config)
  n_new = new_tokens(config)
  nq, g = int(config.rl_questions), int(config.group)
  log: dict[str, list[float]] = {k: [] for k in RL_LOG}
  for t in range(int(config.rl_steps)):
    probs = calm_data.sample(config.eval_levels, nq, 7_000_000 + 1000 * seed + t)
    ids, mask = llama.pad_batch([TOKENIZER.encode(p.prompt) for p in probs for _ in range(g)],
                                PAD, "left", pad)
    gen = llama.generate(cfg, params, ids, mask, max_new_tokens=n_new, eos_ids=(EOS,),
                         pad_id=PAD, temperature=float(config.rl_temperature),
                         key=jax.random.fold_in(jax.random.key(seed), t))
    tokens, lengths_b = np.asarray(gen.tokens_BxN), np.asarray(gen.lengths_B)
    n_act = lengths_b + np.asarray(gen.stopped_B)
    acts = np.arange(tokens.shape[1])[None] < n_act[:, None]
    r = np.zeros(nq * g, np.float32)
    unparsed = np.ones(nq * g, bool)  # a special token inside the answer: no formulation
    for i in range(nq * g):
      row = [int(x) for x in tokens[i, :lengths_b[i]]]
      if all(x >= len(TOKENIZER.specials) for x in row):
        v = scorer(TOKENIZER.decode(row), probs[i // g])
        r[i] = float(v.correct)
        unparsed[i] = reason_class(v) == "parse"
    seq = np.concatenate([ids, tokens], 1).astype(np.int32)
    smask = np.concatenate([mask, acts], 1)
    sacts = np.concatenate([np.zeros_like(mask), acts], 1)
    r_PxG = r.reshape(nq, g)
    params, opt_state, _, aux = step(params, opt_state, sft_params, seq, smask, sacts, r_PxG)
    log["reward"].append(float(r.mean()))
    log["unparsed"].append(float(unparsed.mean()))
    log["kl"].append(float(aux.kl))
    log["clipped"].append(float(aux.clipped_fraction))
    log["informative"].append(float(np.mean(r_PxG.max(1) > r_PxG.min(1))))
  seen = log["reward"]
  tail = seen[-max(1, len(seen) // 4):] if seen else [np.nan]
  return jax.device_get(params), float(np.mean(tail)), log


def rl_step_metrics(name: str, log: Mapping[str, Sequence[float]]) -> dict[str, float]:
  """One seed's per-step metrics of the RL run from ``name`` (``calm`` or ``direct``):
  ``<name>_rl_step<k>_<x>`` for step k (from 1) and each ``x`` of :data:`RL_LOG`, and
  ``<name>_rl_<x>_slope`` for the reward, the unparsed share and the KL, the least-squares
  slope over the steps (per step; 0 for one step)."""
  out = {}
  for x in RL_LOG:
    v = np.asarray(log[x], np.float64)
    for k, y in enumerate(v, 1):
      out[f"{name}_rl_step{k}_{x}"] = float(y)
    if x in ("reward", "unparsed", "kl"):
      out[f"{name}_rl_{x}_slope"] = (float(np.polyfit(np.arange(len(v)), v, 1)[0])
                                     if len(v) > 1 else 0.0)
  return out


# ----------------------------------------------------------------------------- SFT sets


def sft_sets(config, gen, problems, seed: int, scorer):
  """The four training sets on ``problems`` (``{name: (prompts, answers)}``, answers
  without eos, cut to equal target tokens): CALM's and the control's (``gen``, the base
  model as :func:`generator`, attempts and continues), direct SFT's (teacher style) and the
  styled ablation's (gold in the base's style); and the correction statistics."""
  _, row = lengths(config)
  key = jax.random.key(seed)
  prompts = [p.prompt for p in problems]
  golds = [p.gold.lines() for p in problems]
  drafts = gen(prompts, jax.random.fold_in(key, 0))
  stats = {}
  sets = {}
  for name, position in (("calm", "first"), ("random", "random")):
    fixes = calm.correct(gen, prompts, golds, max_hints=int(config.max_hints),
                         key=jax.random.fold_in(key, 1), position=position, drafts=drafts,
                         accept=lambda i, t: scorer(t, problems[i]).correct)
    ok = [scorer(c.trajectory, p).correct for c, p in zip(fixes, problems)]
    draft_ok = [scorer(c.draft, p).correct for c, p in zip(fixes, problems)]
    # a verified trajectory too long for a training row (extra lines that happen not to
    # change the optimum, after several hints) is not kept
    fits = [len(p.prompt) + len(c.trajectory) + 1 <= row for c, p in zip(fixes, problems)]
    kept = [i for i, o in enumerate(ok) if o and fits[i]]
    sets[name] = kept, [fixes[i].trajectory for i in kept]
    hinted = [i for i in kept if fixes[i].hints]
    stats[f"{name}_kept"] = len(kept) / len(problems)
    stats[f"{name}_repaired"] = (sum(1 for i, o in enumerate(ok) if o and not draft_ok[i])
                                 / max(1, sum(1 for o in draft_ok if not o)))
    stats[f"{name}_modified_fraction"] = calm.modified_fraction(sets[name][1])
    stats[f"{name}_modified_fraction_hinted"] = calm.modified_fraction(
        [fixes[i].trajectory for i in hinted])
    stats[f"{name}_hints_per_fixed"] = (float(np.mean([fixes[i].hints for i in hinted]))
                                        if hinted else 0.0)
    stats[f"{name}_hint_copies"] = float(sum(calm.copies_gold(h, golds[i])
                                             for i in kept for h in calm.hints_of(
                                                 fixes[i].trajectory)))
    for lv in config.eval_levels:
      sel = [i for i, p in enumerate(problems) if p.level == lv]
      stats[f"{name}_kept_L{lv}"] = float(np.mean([i in kept for i in sel])) if sel else 0.0
    stats["draft_acc"] = float(np.mean(draft_ok))
  sets["direct"] = (list(range(len(problems))),
                    [calm.render(p.gold, "teacher") for p in problems])
  sets["styled"] = (list(range(len(problems))), [calm.render(p.gold, "base") for p in problems])
  for style in config.get("extra_styles", ()):
    sets[f"direct_{style}"] = (list(range(len(problems))),
                               [calm.render(p.gold, style) for p in problems])
  budget = min(sum(len(a) + 1 for a in answers) for _, answers in sets.values())
  stats["sft_tokens"] = float(budget)
  out = {}
  order = ("calm", "direct", "random", "styled") + tuple(sorted(sets))  # a fixed key per set
  for name, (idx, answers) in sets.items():
    sub = calm.token_matched_subset(np.array([len(a) + 1 for a in answers], np.int64), budget,
                                    jax.random.fold_in(key, 100 + order.index(name)))
    out[name] = ([prompts[idx[i]] for i in sub], [answers[i] for i in sub])
    stats[f"{name}_sft_rows"] = float(len(sub))
    stats[f"{name}_sft_tokens"] = float(sum(len(answers[i]) + 1 for i in sub))
  return out, stats



# ----------------------------------------------------------------------------- summary


def paired_gaps(per: Mapping[str, Sequence[float]], levels: Sequence[int]) -> dict[str, float]:
  """The paired per-seed accuracy gaps the claims read, from ``per`` (``{metric: [one value
  per seed]}``): ``gap_<a>_vs_<b><suffix>`` (mean over the seeds) and its ``_se`` (0 for one
  seed), on the hardest and easiest of ``levels`` and over all of them."""
  hard = max(levels)
  easy = min(levels)
  m = {}
  for a, b, suffix in (("calm", "direct", f"_L{hard}"), ("calm", "direct", ""),
                       ("calm", "random", f"_L{hard}"), ("calm", "random", ""),
                       ("calm_rl", "calm", ""), ("calm_rl", "calm", f"_L{hard}"),
                       ("calm_rl", "direct_rl", f"_L{hard}"), ("calm_rl", "direct_rl", ""),
                       ("direct", "base", f"_L{easy}"), ("direct", "base", f"_L{hard}"),
                       ("calm", "base", f"_L{hard}"), ("calm", "styled", f"_L{hard}"),
                       ("styled", "direct", f"_L{hard}")):
    d = np.asarray(per[f"{a}_acc{suffix}"]) - np.asarray(per[f"{b}_acc{suffix}"])
    m[f"gap_{a}_vs_{b}{suffix}"] = float(d.mean())
    m[f"gap_{a}_vs_{b}{suffix}_se"] = float(common.standard_error(d)) if d.size > 1 else 0.0
  return m
