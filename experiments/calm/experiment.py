"""CALM on template-generated OR problems: a base model, direct SFT on teacher solutions,
CALM-SFT on the base model's own hint-corrected attempts, the random-position control, and
RL with a solver-verified reward on top.

The run:

1. **Base model** (one, as the paper has one): the suite's small decoder
   (:mod:`reprojax.models.transformer`) trained with ``experiments.train.fit`` on
   ``data/calm.py`` problems of ``base_levels`` (weighted toward the easy ones by
   ``base_weights``), each answered in the base style (labelled lines, the model's own
   scaffold) with a hint ``? <label>`` in front of a line at rate ``hint_rate`` (so that a
   hint means "this line comes next" to it). Checkpointed under ``<workdir>/base``: a
   rerun restores it.
2. Per seed (``num_seeds``), on ``sft_problems`` fresh training problems of every
   ``eval_levels`` level:

   * **CALM**: the base model samples an attempt per problem (``temperature``); the
     intervener (:func:`reprojax.algorithms.calm.correct`) cuts at the first mistake, inserts
     the hint and lets the model continue, up to ``max_hints`` times; the attempts whose
     formulation then verifies (HiGHS) are CALM's training set;
   * **control**: the same attempts, cut at a random line boundary instead;
   * **direct SFT**: the problems' gold formulations in the teacher's style (unlabelled, the
     domain line last: a stronger model's written-out solution, not the base model's way);
   * **styled** (our ablation): the gold formulations in the base model's own style, what
     CALM would give if every attempt were repaired; and, per ``extra_styles``, direct SFT
     on the gold with one of the teacher's two differences (``configs/styles.py``);

   the sets cut to the same number of target tokens (the smallest set's,
   :func:`reprojax.algorithms.calm.token_matched_subset`), and each fine-tunes the base for
   ``sft_steps`` steps (same batch, same learning rate): equal training tokens;
3. **RL**: GRPO (:mod:`reprojax.algorithms.policy_gradient`, a k3 KL to the SFT model) with
   the solver reward (1 when the written model's optimum matches the gold one), from CALM-SFT
   and from direct SFT, ``rl_steps`` steps of ``rl_questions`` problems x ``group`` samples,
   each step logged (reward, unparsed share, KL to the reference, clipped fraction, groups
   with signal: :data:`.programs.RL_LOG`);
4. **Evaluation**: greedy answers to ``eval_per_level`` held-out problems per level, scored
   by the paper's metric (the optimal value matches), for the base, every SFT model and both
   RL models; the reasons of the failures (parse, infeasible, unbounded, wrong optimum).

The teacher's style differs from the base model's on purpose: it is the paper's premise
("written-out solutions ... interfere with the model's own way of solving the task"), and
the planted difference (no line labels, the ``bin`` line last) is ours.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.algorithms import calm
from reprojax.data import calm as calm_data
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.calm import plots
from reprojax.experiments.calm import programs
from reprojax.models import llama

_POS = (0.5, float("inf"))
CONFIG_RANGES = {"base_steps": _POS, "sft_steps": _POS, "batch_size": _POS,
                 "sft_batch_size": _POS, "learning_rate": (0.0, 1.0),
                 "sft_learning_rate": (0.0, 1.0),
                 "hint_rate": (0.0, 1.0), "sft_problems": _POS, "max_hints": (-0.5, 9.5),
                 "temperature": (0.0, float("inf")), "rl_temperature": (0.0, float("inf")),
                 "rl_steps": (-0.5, float("inf")),
                 "rl_questions": _POS, "group": (1.5, float("inf")),
                 "rl_learning_rate": (0.0, 1.0), "rl_beta": (0.0, float("inf")),
                 "eval_per_level": _POS, "num_seeds": _POS}



def _check_config(config) -> None:
  for name in ("base_levels", "eval_levels"):
    lv = tuple(config[name])
    if not lv or any(x not in calm_data.LEVELS for x in lv):
      raise ValueError(f"config.{name} must name levels of {tuple(calm_data.LEVELS)}, got {lv}")
  extra = tuple(config.get("extra_styles", ()))
  if any(x not in calm.STYLES[2:] for x in extra) or len(set(extra)) != len(extra):
    raise ValueError(f"config.extra_styles must name distinct styles of {calm.STYLES[2:]}, "
                     f"got {extra}")
  if len(tuple(config.base_weights)) != len(tuple(config.base_levels)):
    raise ValueError(f"config.base_weights must give one weight per base level, got "
                     f"{tuple(config.base_weights)} for {tuple(config.base_levels)}")



# ----------------------------------------------------------------------------- the run


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  if int(config.rl_steps) > 0:
    sharding.check_rows(int(config.rl_questions) * int(config.group), mesh,
                        "config.rl_questions x config.group")
  _, row = programs.lengths(config)
  scorer = programs.Scorer()
  per: dict[str, list[float]] = {}
  times = {"base": 0.0, "correct": 0.0, "sft": 0.0, "rl": 0.0, "eval": 0.0}

  def add(k, v):
    per.setdefault(k, []).append(float(v))

  t0 = time.perf_counter()
  base = programs.train_base(config, mesh, workdir)
  times["base"] += time.perf_counter() - t0
  levels = tuple(config.eval_levels)
  # the gold formulations re-solve to their stored optima (the language round trip)
  roundtrip = []
  reasons: dict[str, dict[str, float]] = {m: {} for m in programs.methods(config)}
  rl_logs: dict[str, list[dict[str, list[float]]]] = {}  # start -> per seed, RL_LOG's lists
  for s in range(int(config.num_seeds)):
    seed = int(config.seed) + s
    t0 = time.perf_counter()
    train_probs = calm_data.sample(levels, int(config.sft_problems), 2000 + seed)
    gen = programs.generator(config, base, float(config.temperature))
    sets, stats = programs.sft_sets(config, gen, train_probs, seed, scorer)
    for k, v in stats.items():
      add(k, v)
    times["correct"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    models = {"base": base}
    for name in programs.sft_names(config):
      prompts, answers = sets[name]
      if not prompts:  # nothing kept (an untrained base in a tiny run): no fine-tuning
        models[name] = base
        continue
      models[name] = programs.fit_lm(
          config, mesh, os.path.join(workdir, f"seed{seed}", name), base,
          programs.rows(prompts, answers, row), steps=int(config.sft_steps),
          lr=float(config.sft_learning_rate), seed=seed,
          batch_size=min(int(config.sft_batch_size), len(prompts)))
    times["sft"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    for name in ("direct", "calm"):
      if int(config.rl_steps) > 0:
        models[f"{name}_rl"], reward, log = programs.rl(config, models[name], seed, scorer,
                                                        mesh)
        rl_logs.setdefault(name, []).append(log)
        for k, v in programs.rl_step_metrics(name, log).items():
          add(k, v)
      else:
        models[f"{name}_rl"], reward = models[name], np.nan
      add(f"{name}_rl_reward", reward)
    times["rl"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    ev = calm_data.sample(levels, int(config.eval_per_level) * len(levels), 3000 + seed)
    roundtrip.extend(calm.verify(calm.render(p.gold, st), p.optimum).correct
                     for p in ev[:20] for st in ("base", "teacher"))
    lv_of = np.array([p.level for p in ev])
    for name in programs.methods(config):
      correct, verdicts, outs = programs.evaluate(config, models[name], ev, scorer)
      add(f"{name}_acc", np.mean([correct[lv_of == lv].mean() for lv in levels]))
      for lv in levels:
        add(f"{name}_acc_L{lv}", correct[lv_of == lv].mean())
      add(f"{name}_self_hints", calm.modified_fraction(outs))
      for v in verdicts:
        c = programs.reason_class(v)
        reasons[name][c] = reasons[name].get(c, 0.0) + 1.0 / (len(ev) * int(config.num_seeds))
    times["eval"] += time.perf_counter() - t0
  m: dict[str, float] = {"num_seeds": float(config.num_seeds), **common.mean_and_se(per)}
  m.update(programs.paired_gaps(per, levels))
  for name, rs in reasons.items():
    for c, v in rs.items():
      m[f"{name}_share_{c}"] = v
  m["roundtrip_ok"] = float(np.mean(roundtrip))
  m["solves"] = float(scorer.solves)
  for k, v in times.items():
    m[f"time_{k}_s"] = v
  plots.plot_levels(workdir, config, m)
  if rl_logs:
    plots.plot_rl_steps(workdir, config, rl_logs)
  return m


# ----------------------------------------------------------------------------- main step


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one GRPO update with the
  solver reward's values on ``rl_questions x group`` sampled rows, the rows split over the
  mesh's ``data`` axis (parameters and optimizer state replicated). With a key: random
  parameters, rows and rewards drawn from it; with None: abstract."""
  cfg = programs.model_config(config)
  _, row = programs.lengths(config)
  seq = row + programs.new_tokens(config)
  nq, g = int(config.rl_questions), int(config.group)
  optimizer = optax.adam(float(config.rl_learning_rate))

  shapes = (jax.ShapeDtypeStruct((nq * g, seq), jnp.int32),
            jax.ShapeDtypeStruct((nq * g, seq), jnp.bool_),
            jax.ShapeDtypeStruct((nq * g, seq), jnp.bool_),
            jax.ShapeDtypeStruct((nq, g), jnp.float32))
  if key is None:
    params = llama.param_shapes(cfg)
    opt = jax.eval_shape(optimizer.init, params)
    args = (params, opt, params) + shapes
  else:
    k1, k2, k3 = jax.random.split(key, 3)
    params = jax.device_get(llama.init(cfg, k1))
    ids = np.asarray(jax.random.randint(k2, (nq * g, seq), len(programs.TOKENIZER.specials),
                                        programs.TOKENIZER.vocab_size), np.int32)
    mask = np.ones((nq * g, seq), bool)
    acts = np.zeros((nq * g, seq), bool)
    acts[:, row:] = True
    rewards = np.asarray(jax.random.bernoulli(k3, 0.5, (nq, g)), np.float32)
    args = (params, optimizer.init(params), params, ids, mask, acts, rewards)

  def build(mesh):
    return train.grpo_step(cfg, float(config.rl_learning_rate), float(config.rl_beta), 0.2,
                           mesh)[1]

  return sharding.Step(build=build, args=args)
