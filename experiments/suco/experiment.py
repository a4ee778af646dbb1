"""SuCo on modular arithmetic chains: the base model, MSC-aligned fine-tuning (MFT), MFT +
SAPO, and fixed-budget truncation, by difficulty.

The run, per seed (``num_seeds`` seeds one after another; each trains its own models):

Training batches are split over the mesh's ``data`` axis (parameters replicated); the
generation of SAPO's groups and of the evaluation runs on one device.

1. **Base model**: the suite's small decoder (:mod:`reprojax.models.transformer`) trained
   on ``data/suco.py`` chains of difficulties ``train_levels``: most rows the full,
   redundant chain (every step, then a re-check of every step), a fraction
   ``cut_fraction`` cut at a random step and answered (so that forcing an answer mid-chain
   is a prompt the model has seen; its free generation stays the full chain). Cached: an
   orbax checkpoint under ``<workdir>/base/seed<s>``, restored by a rerun with the same
   settings (a run killed during this training starts it again).
2. **MSC search**: on ``msc_questions`` training questions, every step prefix forced to
   answer in one batch (:func:`reprojax.algorithms.suco.forced_answer_probs`); the minimal
   sufficient number of steps at the paper's threshold ``delta0 + alpha C(x)``, ``C`` the
   percentile rank of the base model's own thinking length on the question (one chain
   sampled at ``complexity_temperature``) among those ``msc_questions``
   (:func:`suco.length_percentile`, :func:`suco.sufficiency_threshold`), the most probable
   prefix where none is sufficient; how often it equals the planted one (the number of
   operations). The chains cut are the task's (the paper cuts a strong model's chains).
3. **MFT**: the base fine-tuned on those questions' chains cut at their MSC.
4. **SAPO**: GRPO from MFT (:mod:`reprojax.algorithms.policy_gradient`, a KL penalty to
   MFT) on groups of sampled answers, rewarded by :func:`suco.sapo_reward` against each
   question's tracked sufficient length (its MSC length at first, then the running mean of
   the shortest correct answer per round).
5. **Evaluation** (greedy) on ``eval_per_level`` fresh questions per level of
   ``eval_levels`` (the training levels and a harder held-out one): accuracy and thinking
   tokens (before the answer marker) of each model, and the base model truncated at MFT's
   mean thinking length (forced to answer at the budget).

With ``oracle_level_ablation``, steps 2-5 run a second time from the same base with our
earlier threshold, which reads the true difficulty level (``tau_lo`` at level 1 to
``tau_hi`` at the hardest training level, the full chain where no prefix is sufficient):
its metrics carry the prefix ``oracle_level_`` (:data:`ORACLE`) and decide no claim
(:func:`reprojax.experiments.suco.claims.ablation_claims` reads them under the same rules,
for the README).

What each step computes lives in :mod:`reprojax.experiments.suco.programs`; the claims in
:mod:`reprojax.experiments.suco.claims`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import suco
from reprojax.data import suco as suco_data
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.suco import plots
from reprojax.experiments.suco import programs
from reprojax.experiments.suco.claims import ORACLE
from reprojax.models import llama

METHODS = ("base", "base_more", "mft", "sapo", "truncated")
_POS = (0.5, float("inf"))
CONFIG_RANGES = {"max_ops": _POS, "base_steps": _POS, "mft_steps": _POS, "batch_size": _POS,
                 "msc_questions": _POS, "eval_per_level": _POS, "sapo_steps": (-0.5, float("inf")),
                 "sapo_questions": _POS, "group": (1.5, float("inf")),
                 "cut_fraction": (0.0, 1.0), "tau_lo": (0.0, 1.0), "tau_hi": (0.0, 1.0),
                 "delta0": (0.0, 1.0), "alpha": (-1e-12, 1.0),
                 "complexity_temperature": (0.0, float("inf"))}


def _check_config(config) -> None:
  task = programs.task_of(config)
  for name in ("train_levels", "eval_levels"):
    levels = list(config[name])
    if not levels or min(levels) < 1 or max(levels) > task.max_ops:
      raise ValueError(f"config.{name} must lie in 1..{task.max_ops}, got {levels}")
  if not 0 < float(config.tau_lo) <= float(config.tau_hi) <= 1:
    raise ValueError(f"config.tau_lo and tau_hi must satisfy 0 < lo <= hi <= 1, got "
                     f"{config.tau_lo} and {config.tau_hi}")
  if not (0 < float(config.delta0) <= 1 and float(config.alpha) >= 0
          and float(config.delta0) + float(config.alpha) <= 1):
    raise ValueError(f"config.delta0 and alpha must satisfy 0 < delta0 <= 1, alpha >= 0 and "
                     f"delta0 + alpha <= 1, got {config.delta0} and {config.alpha}")


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  task = programs.task_of(config)
  cfg = programs.model_config(config)
  mesh = sharding.config_mesh(config)
  if int(config.sapo_steps) > 0:
    sharding.check_rows(int(config.sapo_questions) * int(config.group), mesh,
                        "config.sapo_questions x config.group")
  levels = list(config.eval_levels)

  def one_seed(seed: int) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []

    def add(k, v):
      out.append((k, float(v)))

    rows = programs.base_rows(config, seed)
    base, loss, restored = programs.cached_base(config, cfg, workdir, seed, mesh, rows)
    add("base_loss", loss)
    add("base_restored", float(restored))
    msc_ch = suco_data.sample(task, int(config.msc_questions), 2000 + seed, config.train_levels)
    p = programs.forced_probs(cfg, base, msc_ch)
    lengths = programs.own_lengths(config, cfg, base, msc_ch, seed)
    msc, complexity, fell_back = programs.msc_search(config, msc_ch, p, lengths)
    runs = {"": msc}
    if config.get("oracle_level_ablation", False):
      runs[ORACLE], oracle_fell_back = programs.oracle_msc_search(config, msc_ch, p)
    for lv in config.train_levels:
      sel = msc_ch.difficulty_Q == lv
      add(f"msc_steps_L{lv}", msc[sel].mean())
      add(f"msc_agree_L{lv}", (msc[sel] == lv).mean())
      add(f"msc_fallback_L{lv}", fell_back[sel].mean())
      add(f"complexity_L{lv}", complexity[sel].mean())
      add(f"own_tokens_L{lv}", lengths[sel].mean())
      if ORACLE in runs:
        add(f"{ORACLE}msc_steps_L{lv}", runs[ORACLE][sel].mean())
        add(f"{ORACLE}msc_agree_L{lv}", (runs[ORACLE][sel] == lv).mean())
        add(f"{ORACLE}msc_fallback_L{lv}", oracle_fell_back[sel].mean())
    # how well the model's own length ranks the questions by their true level (Spearman)
    add("complexity_level_rank_corr", programs.spearman(complexity, msc_ch.difficulty_Q))
    # the control: the base trained as many more steps on its own rows (MFT's extra training
    # without the MSC cut)
    base_more, _ = programs.train_lm(cfg, base, rows, steps=int(config.mft_steps),
                                     batch=int(config.batch_size), lr=float(config.mft_lr),
                                     seed=seed + 7, mesh=mesh)
    ev = suco_data.sample(task, int(config.eval_per_level) * len(levels), 3000 + seed, levels)
    train_sel = np.isin(ev.difficulty_Q, list(config.train_levels))
    outs = {"base": programs.answer(cfg, base, ev),
            "base_more": programs.answer(cfg, base_more, ev)}
    for pre, steps in runs.items():  # the paper's rule, then the ablation's
      mft_rows = suco_data.training_rows(msc_ch, steps_kept=steps,
                                         length=programs.row_length(task))
      mft, _ = programs.train_lm(cfg, base, mft_rows, steps=int(config.mft_steps),
                                 batch=int(config.batch_size), lr=float(config.mft_lr),
                                 seed=seed + 7, mesh=mesh)
      msc_tokens = programs.tokens_of_steps(msc_ch, steps)
      sapo_params, reward = (programs.sapo(config, cfg, mft, msc_ch, msc_tokens, seed, mesh)
                             if int(config.sapo_steps) > 0 else (mft, np.nan))
      add(f"{pre}sapo_reward", reward)
      outs[f"{pre}mft"] = programs.answer(cfg, mft, ev)
      outs[f"{pre}sapo"] = programs.answer(cfg, sapo_params, ev)
      budget = int(round(outs[f"{pre}mft"][1][train_sel].mean()))
      add(f"{pre}truncation_budget", budget)
      outs[f"{pre}truncated"] = programs.answer(cfg, base, ev, budget=budget)
    for name, (correct, think) in outs.items():
      add(f"{name}_acc", correct[train_sel].mean())
      add(f"{name}_tokens", think[train_sel].mean())
      for lv in levels:
        sel = ev.difficulty_Q == lv
        add(f"{name}_acc_L{lv}", correct[sel].mean())
        add(f"{name}_tokens_L{lv}", think[sel].mean())
    return out

  per: dict[str, list[float]] = {}
  seeds = [int(config.seed) + s for s in range(int(config.num_seeds))]
  for out in common.map_seeds(one_seed, seeds):  # bit for bit the serial loop's
    for k, v in out:
      per.setdefault(k, []).append(v)
  m: dict[str, float] = {"num_seeds": float(config.num_seeds), **common.mean_and_se(per)}

  def gap(name, a, b):
    d = np.asarray(per[a]) - np.asarray(per[b])
    m[name] = float(d.mean())
    m[f"{name}_se"] = float(common.standard_error(d)) if len(d) > 1 else 0.0

  held = [lv for lv in levels if lv not in config.train_levels]
  for pre in ("", ORACLE) if config.get("oracle_level_ablation", False) else ("",):
    # the ablation's models against the shared base (its truncated base at its own budget)
    for a, b in (("mft", "base"), ("sapo", "base"), ("sapo", "truncated"), ("mft", "truncated"),
                 ("mft", "base_more")):
      bb = pre + b if b == "truncated" else b
      for q in ("acc", "tokens"):
        gap(f"{pre}gap_{q}_{a}_vs_{b}", f"{pre}{a}_{q}", f"{bb}_{q}")
    for lv in held:
      for a in ("mft", "sapo"):
        for q in ("acc", "tokens"):
          gap(f"{pre}gap_{q}_{a}_vs_base_L{lv}", f"{pre}{a}_{q}_L{lv}", f"base_{q}_L{lv}")
  plots.plot_levels(workdir, config, m)
  return m


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: the MSC search's forward
  pass, every step prefix of ``batch_size`` chains forced to answer, the chains split over
  ``data``. With a key: parameters drawn from it; with None: abstract."""
  task = programs.task_of(config)
  cfg = programs.model_config(config)
  b = int(config.batch_size)
  s = 2 * task.max_ops + 1

  def probs(params, prompt, plen, cot, ends, ans):
    return suco.forced_answer_probs(lambda i, m: llama.logits(cfg, params, i, m), prompt,
                                    plen, cot, ends, ans, suco_data.ANS)[0]

  shapes = (jax.ShapeDtypeStruct((b, task.prompt_tokens), jnp.int32),
            jax.ShapeDtypeStruct((b,), jnp.int32),
            jax.ShapeDtypeStruct((b, task.cot_tokens), jnp.int32),
            jax.ShapeDtypeStruct((b, s), jnp.int32), jax.ShapeDtypeStruct((b,), jnp.int32))
  if key is None:
    params = jax.eval_shape(lambda: llama.init(cfg, jax.random.key(0)))
    args = (params,) + shapes
  else:
    params = jax.device_get(llama.init(cfg, key))
    ch = suco_data.sample(task, b, 0, config.train_levels)
    args = (params, ch.prompt_QxP, ch.prompt_len_Q, ch.cot_QxC, ch.step_ends_QxS, ch.answer_Q)

  def build(mesh):
    fn = sharding.vmap_sharded(lambda p, *a: probs(p, *(x[None] for x in a))[0], mesh,
                               in_axes=(None, 0, 0, 0, 0, 0))
    return fn

  return sharding.Step(build=build, args=args)

