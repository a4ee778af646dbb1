"""PDR's experiment: a small decoder trained here to refine its own sorting drafts, run as
the single long pass, Sequential Refinement, Parallel-Distill-Refine in each distillation
mode, and best-of-N, at matched sequential budgets.

The run:

1. trains, per model seed, the suite's small decoder (:mod:`reprojax.models.transformer`)
   on :mod:`reprojax.data.pdr`'s sorting task with ``experiments.train.fit`` (orbax
   checkpoints under ``<workdir>/model_seed<s>``: a rerun restores the trained model
   instead of training again);
2. per model seed and evaluation seed draws ``num_questions`` fresh questions and answers
   them, every round of every question in one batched generator call, sampled at
   ``temperature`` and scored by the model's mean token log-probability:

   * ``greedy``: one greedy draft (a reference point, not one of the compared methods);
   * ``long_r``: the single long pass, ``r`` drafts in one growing context (its last draft
     answers), ``r = 1 .. rounds``;
   * ``sr_r``: Sequential Refinement, ``r`` rounds of one draft on the last draft;
   * ``pdr_<mode>_r``: ``r - 1`` rounds of ``width`` parallel drafts, each distilled into a
     workspace of at most ``k`` drafts, then one refining draft (``r`` drafts of sequential
     budget); the headline mode at every ``r``, the others at ``r = rounds``;
   * ``bon_r``: best-of-N with ``N = width (r - 1) + 1``, PDR's total draft count at
     ``r``, the model's highest-scoring draft answering (sequential budget: one draft);
   * ``shuffled_<rounds>``: the headline PDR with every question refined on the drafts of
     another question (the control);

3. reports per method the exact-match accuracy (mean and s.e. over the ``model seeds x
   evaluation seeds`` replicates), mean sequential and total generated tokens per question,
   the longest context, and the Pareto front over sequential and over total tokens, in
   ``<workdir>/frontier.md`` and the metrics.

Metrics per method ``m``: ``m_acc``, ``m_acc_se``, ``m_seq_tokens``, ``m_total_tokens``,
``m_max_context``; paired differences ``gap_<a>_vs_<b>`` with ``_se``;
``workspace_max_tokens`` (the longest workspace any PDR or SR call saw); ``sr_fix_rate`` and
``sr_keep_rate``, how often SR's second draft is right after a wrong first draft and after a
right one (refining helps on average when ``fix (1 - acc) > (1 - keep) acc``).
"""

from __future__ import annotations

import os
import time
from typing import Mapping

import jax
import ml_collections
import numpy as np

from reprojax.algorithms import pdr
from reprojax.data import pdr as pdr_data
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.pdr import plots
from reprojax.experiments.pdr import programs
from reprojax.experiments.pdr import rl
from reprojax.models import llama

_POS = (0.5, float("inf"))
CONFIG_RANGES = {"num_questions": (1.5, float("inf")), "rounds": (1.5, float("inf")),
                 "rl.steps": (-0.5, float("inf")), "rl.questions": _POS, "rl.beta": (0.0, float("inf")),
                 "rl.checkpoint_every": _POS, "rl.learning_rate": (0.0, 1.0), "rl.clip_eps": (0.0, 1.0),
                 "width": _POS, "k": _POS, "temperature": (0.0, float("inf")),
                 "train_steps": _POS, "batch_size": _POS, "checkpoint_every": _POS, "learning_rate": (0.0, 1.0)}


def _check_config(config) -> None:
  bad = [m for m in config.modes if m not in pdr.DISTILL_MODES]
  if bad or config.headline_mode not in pdr.DISTILL_MODES:
    raise ValueError(f"config.modes and config.headline_mode must name modes in "
                     f"{pdr.DISTILL_MODES}, got {tuple(config.modes)}, {config.headline_mode!r}")
  if int(config.rounds) < 2:
    raise ValueError(f"config.rounds must be >= 2 (one round has nothing to refine), got "
                     f"{config.rounds}")
  if not config.model_seeds or not config.eval_seeds:
    raise ValueError("config.model_seeds and config.eval_seeds must name at least one seed")


def frontier_markdown(config, metrics, prefix: str = "") -> str:
  """The methods' budgets and accuracies as a markdown table, with each one's place on the
  Pareto front over sequential and over total tokens (``prefix``: ``"rl_"`` for the
  policies after GRPO)."""
  names = [prefix + n for n in programs.methods(config)]
  seq = [metrics[f"{n}_seq_tokens"] for n in names]
  tot = [metrics[f"{n}_total_tokens"] for n in names]
  acc = [metrics[f"{n}_acc"] for n in names]
  on_seq, on_tot = pdr.pareto_front(seq, acc), pdr.pareto_front(tot, acc)
  lines = ["| method | sequential tokens | total tokens | longest context | accuracy | "
           "front (sequential) | front (total) |", "|---|---|---|---|---|---|---|"]
  for i, n in enumerate(names):
    lines.append(f"| {n} | {seq[i]:.1f} | {tot[i]:.1f} | {metrics[f'{n}_max_context']:.0f} | "
                 f"{acc[i]:.3f} +- {metrics[f'{n}_acc_se']:.3f} | {'yes' if on_seq[i] else ''} | "
                 f"{'yes' if on_tot[i] else ''} |")
  return "\n".join(lines) + "\n"


def _paired(metrics, per_rep: Mapping[str, list[float]], a: str, b: str) -> None:
  d = np.asarray(per_rep[a]) - np.asarray(per_rep[b])
  metrics[f"gap_{a}_vs_{b}"] = float(d.mean())
  metrics[f"gap_{a}_vs_{b}_se"] = float(common.standard_error(d)) if d.size > 1 else 0.0


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  use_rl = int(config.rl.steps) > 0
  metrics: dict[str, float] = {}
  names = programs.methods(config)
  prefixes = ("", "rl_") if use_rl else ("",)
  per_rep: dict[str, list[float]] = {p + n: [] for p in prefixes for n in names}
  sums: dict[str, list[float]] = {n: [0.0, 0.0, 0.0] for n in per_rep}
  ws_max, t_train, t_rl, t_eval, count = 0, 0.0, 0.0, 0.0, 0
  fixes, keeps = [0, 0], [0, 0]  # SR's second draft: right after a wrong / a right first
  for ms in config.model_seeds:
    t0 = time.perf_counter()
    policies = {"": programs.train_model(
        config, mesh, os.path.join(workdir, f"model_seed{int(ms)}"), int(ms))}
    t_train += time.perf_counter() - t0
    if use_rl:
      t0 = time.perf_counter()
      policies["rl_"], summary = rl.train_rl(
          config, policies[""], os.path.join(workdir, f"rl_seed{int(ms)}"), int(ms),
          cfg=programs.model_config(config), task=programs.sorting_task(config),
          pad=programs.prompt_pad(config), mesh=mesh)
      for k_, v in summary.items():
        metrics[f"{k_}_seed{int(ms)}"] = v
      t_rl += time.perf_counter() - t0
    for es in config.eval_seeds:
      t0 = time.perf_counter()
      qs = pdr_data.questions(programs.sorting_task(config), int(config.num_questions),
                              10_000 * int(ms) + int(es) + 7)
      for prefix, params in policies.items():
        traces = programs.answer_all(config, params, qs, jax.random.key(int(es)))
        if not prefix:
          first = programs.score(traces["sr_1"], qs).astype(bool)
          second = programs.score(traces["sr_2"], qs).astype(bool)
          fixes[0] += int(np.sum(~first & second))
          fixes[1] += int(np.sum(~first))
          keeps[0] += int(np.sum(first & second))
          keeps[1] += int(np.sum(first))
        for name, ts in traces.items():
          key = prefix + name
          per_rep[key].append(float(programs.score(ts, qs).mean()))
          sums[key][0] += np.mean([t.budget.sequential_tokens for t in ts])
          sums[key][1] += np.mean([t.budget.total_tokens for t in ts])
          sums[key][2] = max(sums[key][2], max(t.budget.max_context for t in ts))
          if name != "greedy" and not name.startswith(("long_", "bon_")):
            ws_max = max([ws_max] + [len(w) for t in ts for x in t.rounds for w in x.workspaces])
      count += 1
      t_eval += time.perf_counter() - t0
  for name, accs in per_rep.items():
    a = np.asarray(accs)
    metrics[f"{name}_acc"] = float(a.mean())
    metrics[f"{name}_acc_se"] = float(common.standard_error(a)) if a.size > 1 else 0.0
    metrics[f"{name}_seq_tokens"] = sums[name][0] / count
    metrics[f"{name}_total_tokens"] = sums[name][1] / count
    metrics[f"{name}_max_context"] = float(sums[name][2])
  r = int(config.rounds)
  head = f"pdr_{config.headline_mode}_{r}"
  pairs = [(f"sr_{r}", f"long_{r}"), (head, f"long_{r}"), (head, f"sr_{r}"),
           (head, f"shuffled_{r}"), (head, f"bon_{r}"), (f"sr_{r}", "sr_1")]
  if use_rl:
    pairs += [(f"rl_{head}", head), (f"rl_sr_{r}", f"sr_{r}"), (f"rl_long_{r}", f"long_{r}"),
              (f"rl_{head}", f"rl_long_{r}"), ("rl_long_1", "long_1")]
  for a, b in pairs:
    _paired(metrics, per_rep, a, b)
  metrics["sr_fix_rate"] = fixes[0] / max(fixes[1], 1)
  metrics["sr_keep_rate"] = keeps[0] / max(keeps[1], 1)
  metrics["workspace_max_tokens"] = float(ws_max)
  metrics["workspace_bound"] = float(
      programs.sorting_task(config).workspace_tokens(int(config.k)))
  metrics["replicates"] = float(count)
  metrics["time_train_s"] = t_train
  metrics["time_rl_s"] = t_rl
  metrics["time_eval_s"] = t_eval
  if jax.process_index() == 0:
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "frontier.md"), "w") as f:
      f.write(frontier_markdown(config, metrics))
      if use_rl:
        f.write("\nAfter training consistent with PDR (GRPO, "
                f"{int(config.rl.steps)} steps):\n\n")
        f.write(frontier_markdown(config, metrics, prefix="rl_"))
  plots.plot_frontier(workdir, config, names, metrics)
  return metrics


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one PDR round, the
  ``width`` drafts of ``num_questions`` questions, each row a prompt with a full workspace
  decoded to a draft, rows split over ``data`` (a ``vmap`` of the KV-cached sampler, so
  every row is what the one-device batched call gives it). With a key: random parameters
  and prompts drawn from it; with None: ``jax.ShapeDtypeStruct`` args only."""
  cfg = programs.model_config(config)
  task = programs.sorting_task(config)
  t = programs.prompt_pad(config)
  n = int(config.num_questions) * int(config.width)
  temperature = float(config.temperature)

  def one(params, ids_T, key_):
    gen = llama.generate(cfg, params, ids_T[None], max_new_tokens=task.draft_tokens,
                         eos_ids=(pdr_data.EOS,), pad_id=pdr_data.PAD,
                         temperature=temperature, key=key_)
    return gen.tokens_BxN[0], gen.lengths_B[0], gen.logprob_B[0]

  if key is None:
    params = llama.param_shapes(cfg)
    args = (params, jax.ShapeDtypeStruct((n, t), np.int32),
            jax.eval_shape(lambda: jax.random.split(jax.random.key(0), n)))
  else:
    k_init, k_ids, k_keys = jax.random.split(key, 3)
    ids = np.asarray(jax.random.randint(k_ids, (n, t), pdr_data.OFFSET, task.vocab_size),
                     np.int32)
    args = (jax.device_get(llama.init(cfg, k_init)), ids, jax.random.split(k_keys, n))
  return sharding.Step(build=lambda mesh: sharding.vmap_sharded(one, mesh,
                                                                in_axes=(None, 0, 0)),
                       args=args)
