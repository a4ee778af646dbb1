"""What the SuCo experiment computes: the task and decoder builders, the jitted AdamW
training of the base model and of MFT (with the base model's orbax cache), greedy and
budget-truncated answering, the model's own thinking lengths, the forced-answer
probabilities and the minimal-sufficient-steps searches (the paper's threshold and the
true-level ablation's), SAPO's GRPO loop, and Spearman's rank correlation.
:mod:`reprojax.experiments.suco.experiment` orchestrates them per seed; no claims here.
"""

from __future__ import annotations

import functools
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from scipy import stats

from reprojax.algorithms import suco
from reprojax.data import suco as suco_data
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.models import llama
from reprojax.models import transformer


def task_of(config) -> suco_data.ArithmeticTask:
  return suco_data.ArithmeticTask(max_ops=int(config.max_ops), modulus=int(config.modulus))


def row_length(task: suco_data.ArithmeticTask) -> int:
  return task.prompt_tokens + task.cot_tokens + 3


def model_config(config) -> llama.LlamaConfig:
  task = task_of(config)
  m = config.model
  return transformer.decoder_config(task.vocab_size, d_model=int(m.d_model),
                                    n_layers=int(m.n_layers), n_heads=int(m.n_heads),
                                    max_len=row_length(task) + 4)


@functools.lru_cache(maxsize=None)
def _lm_step(cfg, steps: int, lr: float, mesh):
  """The jitted AdamW step for ``steps`` steps at peak ``lr``: the batch split over the
  mesh's ``data`` axis, the parameters and optimizer state replicated (one compile per
  shape and mesh, shared by every seed)."""
  opt = optax.adamw(optax.warmup_cosine_decay_schedule(0.0, lr, max(1, steps // 10), steps),
                    weight_decay=0.01)
  rep, data = sharding.replicated(mesh), sharding.data_sharding(mesh)

  def step(p, s, i, m, t):
    l, g = jax.value_and_grad(lambda p_: jnp.mean(transformer.lm_loss(cfg, p_, i, m, t)))(p)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l

  return opt, sharding.jit_placed(step, (rep, rep, data, data, data), (rep, rep, rep))


def train_lm(cfg, params, rows, *, steps: int, batch: int, lr: float, seed: int, mesh):
  """``steps`` AdamW steps (warm-up and cosine decay) of the masked next-token loss on
  minibatches of ``rows = (ids, mask, target)``, each batch split over ``mesh``'s ``data``
  axis; returns the parameters and the last loss."""
  if batch % mesh.shape[sharding.DATA]:
    raise ValueError(f"config.batch_size={batch} must be a multiple of the mesh's data axis "
                     f"({mesh.shape[sharding.DATA]} devices)")
  ids, mask, target = rows
  opt, step = _lm_step(cfg, int(steps), float(lr), mesh)
  params = jax.device_put(params, sharding.replicated(mesh))
  # placed as the step returns it, so its second call does not compile the step again
  state = jax.device_put(opt.init(params), sharding.replicated(mesh))
  rng = np.random.default_rng([seed, 5])
  loss = np.nan
  for _ in range(steps):
    idx = rng.integers(0, ids.shape[0], size=batch)
    params, state, loss = step(params, state, ids[idx], mask[idx], target[idx])
  return jax.device_get(params), float(loss)


def base_rows(config, seed: int):
  task = task_of(config)
  n = int(config.base_steps) * int(config.batch_size) // 4  # rows are revisited about 4 times
  ch = suco_data.sample(task, max(n, 64), 1000 + seed, config.train_levels)
  rng = np.random.default_rng([seed, 6])
  cut = np.where(rng.uniform(size=ch.num_steps_Q.shape) < float(config.cut_fraction),
                 rng.integers(0, ch.num_steps_Q + 1), ch.num_steps_Q)
  return suco_data.training_rows(ch, steps_kept=cut, length=row_length(task))


def base_key(config, seed: int) -> str:
  """What the base model depends on: a cached one is reused only when all of it matches."""
  fields = ("max_ops", "modulus", "train_levels", "cut_fraction", "model", "base_steps",
            "batch_size", "learning_rate")
  return json.dumps({"seed": seed, **{f: config[f].to_dict() if hasattr(config[f], "to_dict")
                                       else config[f] for f in fields}}, sort_keys=True,
                    default=list)


def cached_base(config, cfg, workdir: str, seed: int, mesh, rows):
  """The base model of ``seed``: restored from ``<workdir>/base/seed<seed>`` (an orbax
  checkpoint, the suite's manager) when it was trained there with the same settings, else
  trained on ``rows`` and saved there. Returns ``(params, last loss, restored?)``."""
  folder = os.path.join(workdir, "base", f"seed{seed}")
  key = base_key(config, seed)
  meta = os.path.join(folder, "settings.json")
  steps = int(config.base_steps)
  mngr = train.checkpoint_manager(folder, keep=1)
  try:
    if mngr.latest_step() == steps and os.path.isfile(meta):
      with open(meta) as f:
        saved = json.load(f)
      if saved["key"] == key:
        target = jax.eval_shape(lambda: llama.init(cfg, jax.random.key(0)))
        params = mngr.restore(steps, args=ocp.args.StandardRestore(target))
        return jax.device_get(params), float(saved["loss"]), True
    params0 = llama.init(cfg, jax.random.key(seed))
    params, loss = train_lm(cfg, params0, rows, steps=steps,
                            batch=int(config.batch_size), lr=float(config.learning_rate),
                            seed=seed, mesh=mesh)
    mngr.save(steps, args=ocp.args.StandardSave(params), force=True)
    mngr.wait_until_finished()
    if jax.process_index() == 0:
      os.makedirs(folder, exist_ok=True)
      with open(meta, "w") as f:
        json.dump({"key": key, "loss": loss}, f)
    return params, loss, False
  finally:
    mngr.close()


def _left_prompts(chains: suco_data.Chains):
  q, p = chains.prompt_QxP.shape
  ids = np.full((q, p), suco_data.PAD, np.int32)
  mask = np.zeros((q, p), bool)
  for i in range(q):
    n = chains.prompt_len_Q[i]
    ids[i, p - n:] = chains.prompt_QxP[i, :n]
    mask[i, p - n:] = True
  return ids, mask


def _parse(tokens: np.ndarray, lengths: np.ndarray, answers: np.ndarray):
  """Correct and thinking tokens (before ``<ans>``; all generated tokens if none came)."""
  correct = np.zeros(len(answers), bool)
  think = lengths.astype(np.float64).copy()
  for i in range(len(answers)):
    row = list(tokens[i, :lengths[i]])
    if suco_data.ANS in row:
      k = row.index(suco_data.ANS)
      think[i] = k
      correct[i] = k + 1 < len(row) and row[k + 1] == answers[i]
  return correct, think


def answer(cfg, params, chains: suco_data.Chains, budget: int | None = None):
  """Greedy answers: ``(correct_Q, thinking_tokens_Q)``. With ``budget``, thinking stops
  after ``budget`` tokens: a row that has not answered by then gets ``<ans>`` appended and
  its forced (greedy) answer read."""
  task_max = chains.cot_QxC.shape[1]
  ids, mask = _left_prompts(chains)
  n_new = task_max + 3 if budget is None else int(budget) + 2
  gen = llama.generate(cfg, params, ids, mask, max_new_tokens=n_new,
                       eos_ids=(suco_data.EOS,), pad_id=suco_data.PAD)
  tokens, lengths = np.asarray(gen.tokens_BxN), np.asarray(gen.lengths_B)
  correct, think = _parse(tokens, lengths, chains.answer_Q)
  if budget is None:
    return correct, think
  over = think > budget
  if over.any():
    b = int(budget)
    forced = np.concatenate([ids, tokens[:, :b], np.full((len(ids), 1), suco_data.ANS)], 1)
    fmask = np.concatenate([mask, np.ones((len(ids), b + 1), bool)], 1)
    logits = llama.logits(cfg, params, forced.astype(np.int32), fmask)
    guess = np.asarray(jnp.argmax(logits[:, -1], -1))
    correct = np.where(over, guess == chains.answer_Q, correct)
    think = np.where(over, b, think)
  return correct, think


def own_lengths(config, cfg, params, chains: suco_data.Chains, seed: int) -> np.ndarray:
  """The model's own thinking tokens on each question: one chain sampled at
  ``complexity_temperature`` (the paper's reasoning length ``|z|``, which a deployed method
  observes; the task's planted chain length would be the true level in disguise)."""
  ids, mask = _left_prompts(chains)
  # SAPO's rounds fold in 0 .. sapo_steps - 1; this draw folds in 2^20
  gen = llama.generate(cfg, params, ids, mask, max_new_tokens=chains.cot_QxC.shape[1] + 3,
                       eos_ids=(suco_data.EOS,), pad_id=suco_data.PAD,
                       temperature=float(config.complexity_temperature),
                       key=jax.random.fold_in(jax.random.key(seed), 1 << 20))
  _, think = _parse(np.asarray(gen.tokens_BxN), np.asarray(gen.lengths_B), chains.answer_Q)
  return think


def forced_probs(cfg, params, chains: suco_data.Chains) -> np.ndarray:
  """The correct answer's probability forced after every step prefix ``(Q, S + 1)``."""
  p, _ = suco.forced_answer_probs(lambda i, m: llama.logits(cfg, params, i, m),
                                  chains.prompt_QxP, chains.prompt_len_Q, chains.cot_QxC,
                                  chains.step_ends_QxS, chains.answer_Q, suco_data.ANS)
  return np.asarray(p)


def msc_search(config, chains: suco_data.Chains, p: np.ndarray, lengths: np.ndarray):
  """The paper's minimal sufficient steps of each question: threshold
  ``delta0 + alpha C`` with ``C`` the percentile rank of ``lengths`` (the model's own) among
  themselves, the most probable prefix where none reaches it. Returns ``(steps, C,
  fell_back)``."""
  c = suco.length_percentile(lengths, lengths)
  delta = suco.sufficiency_threshold(c, float(config.delta0), float(config.alpha))
  steps = suco.minimal_sufficient_steps(p, delta, chains.num_steps_Q, fallback="most_probable")
  return np.asarray(steps), np.asarray(c), ~_any_sufficient(p, np.asarray(delta), chains)


def oracle_msc_search(config, chains: suco_data.Chains, p: np.ndarray):
  """The ablation's minimal sufficient steps: threshold from the true difficulty level
  (``tau_lo`` to ``tau_hi``), the full chain where none reaches it. ``(steps, fell_back)``."""
  tau = suco.adaptive_threshold(chains.difficulty_Q, max(config.train_levels),
                                float(config.tau_lo), float(config.tau_hi))
  steps = suco.minimal_sufficient_steps(p, tau, chains.num_steps_Q, fallback="full")
  return np.asarray(steps), ~_any_sufficient(p, np.asarray(tau), chains)


def _any_sufficient(p, tau, chains) -> np.ndarray:
  within = np.arange(p.shape[1])[None] <= chains.num_steps_Q[:, None]
  return np.any((p >= tau[:, None]) & within, axis=1)


def tokens_of_steps(chains: suco_data.Chains, steps: np.ndarray) -> np.ndarray:
  ends = np.concatenate([np.zeros((len(steps), 1), np.int32), chains.step_ends_QxS], 1)
  return ends[np.arange(len(steps)), steps].astype(np.float64)


def sapo(config, cfg, mft_params, chains: suco_data.Chains, msc_tokens: np.ndarray, seed: int,
         mesh=None):
  """``sapo_steps`` GRPO steps from MFT on the MSC questions; returns the parameters and the
  mean reward of the last quarter of the steps."""
  optimizer, step = train.grpo_step(cfg, float(config.sapo_lr), float(config.sapo_beta), 0.2,
                                    mesh)
  params = mft_params
  if mesh is not None:  # placed as the step returns them: one compile of it and of generate
    params = jax.device_put(params, sharding.replicated(mesh))
  opt_state = optimizer.init(params)
  if mesh is not None:
    opt_state = jax.device_put(opt_state, sharding.replicated(mesh))
  tracker = suco.tracker_init(len(msc_tokens))
  nq, g = int(config.sapo_questions), int(config.group)
  ids_all, mask_all = _left_prompts(chains)
  rng = np.random.default_rng([seed, 7])
  rewards_seen = []
  for t in range(int(config.sapo_steps)):
    qi = rng.choice(len(msc_tokens), size=nq, replace=False)
    ids, mask = np.repeat(ids_all[qi], g, 0), np.repeat(mask_all[qi], g, 0)
    gen = llama.generate(cfg, params, ids, mask, max_new_tokens=chains.cot_QxC.shape[1] + 3,
                         eos_ids=(suco_data.EOS,), pad_id=suco_data.PAD, temperature=1.0,
                         key=jax.random.fold_in(jax.random.key(seed), t))
    tokens = np.asarray(gen.tokens_BxN)
    n_act = np.asarray(gen.lengths_B) + np.asarray(gen.stopped_B)
    acts = np.arange(tokens.shape[1])[None] < n_act[:, None]
    correct, think = _parse(tokens, np.asarray(gen.lengths_B), np.repeat(chains.answer_Q[qi], g))
    tracked = np.asarray(suco.tracked_length(tracker, np.repeat(qi, g),
                                             np.repeat(msc_tokens[qi], g)))
    r = np.asarray(suco.sapo_reward(correct, think, tracked, over=float(config.over),
                                    under=float(config.under))).reshape(nq, g)
    shortest = np.where(correct, think, np.inf).reshape(nq, g).min(1)
    tracker = suco.tracker_update(tracker, qi, np.where(np.isfinite(shortest), shortest, 0.0),
                                  np.isfinite(shortest))
    seq = np.concatenate([ids, tokens], 1).astype(np.int32)
    smask = np.concatenate([mask, acts], 1)
    sacts = np.concatenate([np.zeros_like(mask), acts], 1)
    params, opt_state, _ = step(params, opt_state, mft_params, seq, smask, sacts,
                                r.astype(np.float32))
    rewards_seen.append(float(r.mean()))
  tail = rewards_seen[-max(1, len(rewards_seen) // 4):] if rewards_seen else [np.nan]
  return params, float(np.mean(tail))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
  """Spearman's rank correlation (average ranks for ties); 0 where either is constant."""
  rx, ry = (stats.rankdata(v) for v in (x, y))
  if np.std(rx) == 0 or np.std(ry) == 0:
    return 0.0
  return float(np.corrcoef(rx, ry)[0, 1])

