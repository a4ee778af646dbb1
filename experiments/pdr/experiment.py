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
from typing import Any, Mapping

import jax
import ml_collections
import numpy as np
import optax

from reprojax.algorithms import pdr
from reprojax.data import pdr as pdr_data
from reprojax.experiments import common
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.pdr import plots
from reprojax.experiments.pdr import rl
from reprojax.models import llama
from reprojax.models import transformer

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


def frontier_markdown(config, metrics, prefix: str = "") -> str:
  names = [prefix + n for n in methods(config)]
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
  names = methods(config)
  prefixes = ("", "rl_") if use_rl else ("",)
  per_rep: dict[str, list[float]] = {p + n: [] for p in prefixes for n in names}
  sums: dict[str, list[float]] = {n: [0.0, 0.0, 0.0] for n in per_rep}
  ws_max, t_train, t_rl, t_eval, count = 0, 0.0, 0.0, 0.0, 0
  fixes, keeps = [0, 0], [0, 0]  # SR's second draft: right after a wrong / a right first
  for ms in config.model_seeds:
    t0 = time.perf_counter()
    policies = {"": train_model(config, mesh, os.path.join(workdir, f"model_seed{int(ms)}"),
                                int(ms))}
    t_train += time.perf_counter() - t0
    if use_rl:
      t0 = time.perf_counter()
      policies["rl_"], summary = rl.train_rl(
          config, policies[""], os.path.join(workdir, f"rl_seed{int(ms)}"), int(ms),
          cfg=model_config(config), task=sorting_task(config), pad=prompt_pad(config),
          mesh=mesh)
      for k_, v in summary.items():
        metrics[f"{k_}_seed{int(ms)}"] = v
      t_rl += time.perf_counter() - t0
    for es in config.eval_seeds:
      t0 = time.perf_counter()
      qs = pdr_data.questions(sorting_task(config), int(config.num_questions),
                              10_000 * int(ms) + int(es) + 7)
      for prefix, params in policies.items():
        traces = answer_all(config, params, qs, jax.random.key(int(es)))
        if not prefix:
          first = score(traces["sr_1"], qs).astype(bool)
          second = score(traces["sr_2"], qs).astype(bool)
          fixes[0] += int(np.sum(~first & second))
          fixes[1] += int(np.sum(~first))
          keeps[0] += int(np.sum(first & second))
          keeps[1] += int(np.sum(first))
        for name, ts in traces.items():
          key = prefix + name
          per_rep[key].append(float(score(ts, qs).mean()))
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
  metrics["workspace_bound"] = float(sorting_task(config).workspace_tokens(int(config.k)))
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


def _sig(m, a: str, b: str) -> tuple[bool, str]:
  g, se = m[f"gap_{a}_vs_{b}"], m[f"gap_{a}_vs_{b}_se"]
  return bool(g > 0 and g > 2 * se), f"{m[f'{a}_acc']:.3f} vs {m[f'{b}_acc']:.3f}: {g:+.3f} +- {se:.3f}"


def _evidence(m, config, a: str, b: str, note: str = "") -> results.Evidence:
  """The facts behind ``_sig(m, a, b)``'s verdict: the trained decoders, and the paired gap's
  distance from zero in s.e. on the verdict's side (0 for a gap above zero but inside 2
  s.e., which fails for want of evidence, not by evidence against; the rule's 2 s.e. is
  not counted as margin: the grade reads 2 and 3 s.e. itself); None with one replicate."""
  g, se = m[f"gap_{a}_vs_{b}"], m[f"gap_{a}_vs_{b}_se"]
  reps = int(m["replicates"])
  holds = _sig(m, a, b)[0]
  margin = (None if reps < 2 else results.margin_in_se(g, 0.0, se) if (g > 0) == holds
            else 0.0)
  models = len(config.model_seeds)
  return results.Evidence(  # independent: the trained decoders (evaluation seeds reuse one)
      seeds=models, margin_se=margin,
      note=(f"{reps} replicates: {len(config.eval_seeds)} evaluation seeds (fresh questions) "
            f"x {models} trained decoder{'s' if models > 1 else ''}"
            + (f"; {note}" if note else "")))


_BEATS = ("the paired accuracy difference over the replicates (evaluation seeds x trained "
          "decoders), {a} minus {b}, is above 0 and above 2 s.e.")
CLAIMS = results.declare(
    results.Declared(
        "sr_beats_long", "paper",
        "at matched sequential budget Sequential Refinement beats the single long pass",
        "SR beats long chain-of-thought at matched sequential budget (AIME 2024/2025)",
        _BEATS.format(a="SR", b="the long pass, both at `rounds` drafts of sequential budget")),
    results.Declared(
        "pdr_beats_long", "paper",
        "at matched sequential budget PDR (headline mode) beats the single long pass",
        "PDR +11% on AIME 2024 and +9% on AIME 2025 over long chain-of-thought",
        _BEATS.format(a="PDR in headline_mode",
                      b="the long pass, both at `rounds` drafts of sequential budget")),
    results.Declared(
        "pdr_beats_sr", "paper",
        "at matched sequential budget PDR beats SR (PDR the most)",
        "PDR gives the largest gains of the three",
        _BEATS.format(a="PDR in headline_mode",
                      b="SR, both at `rounds` drafts of sequential budget")),
    results.Declared(
        "pdr_vs_best_of_n", "paper",
        "PDR is not less accurate than best-of-N sampling of the same total draft count",
        "(no figure in the abstract; PDR against best-of-N at equal total tokens)",
        "the paired accuracy difference PDR in headline_mode minus best-of-N at PDR's total "
        "draft count is at least -2 s.e."),
    results.Declared(
        "shuffled_control_loses_gain", "check",
        "PDR refined on another question's drafts does worse than PDR (the gain comes from "
        "the drafts' content)",
        "(our control)",
        _BEATS.format(a="PDR", b="PDR on another question's drafts")),
    results.Declared(
        "rl_moves_frontier", "paper",
        "training consistent with PDR (GRPO on the model's own PDR rounds) raises PDR's "
        "accuracy at the same budget",
        "RL training consistent with PDR shifts the Pareto frontier further (8B model)",
        _BEATS.format(a="PDR after GRPO training", b="PDR before it, same questions and budget"),
        config="rl"),
    results.Declared(
        "workspace_bounded", "check", "no workspace exceeds its bound",
        "(our check of the orchestration)",
        "the longest workspace of the run is at most the workspace bound"),
)


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]
           ) -> list[results.Claim]:
  """The claims, from the config and :func:`run`'s metrics alone (pure).

  A method "beats" another when the paired accuracy difference over the replicates is
  positive and above 2 s.e. (fixed before any run). ``sr_beats_long``,
  ``pdr_beats_long`` and ``pdr_beats_sr`` (paper) compare at ``rounds`` drafts of
  sequential budget; ``pdr_vs_best_of_n`` (paper) asks that PDR be no worse than best-of-N
  at PDR's total draft count by more than 2 s.e. (the rule it had when first declared, as a
  baseline; removed from the claims when the first quick run failed it, and restored:
  the frontier the paper draws places PDR against parallel sampling at equal total
  tokens); ``shuffled_control_loses_gain`` (check) asks that PDR beat its
  shuffled-workspace control; ``workspace_bounded`` (check): no workspace passed its bound;
  ``rl_moves_frontier`` (paper, run by ``configs/rl.py``; reported as not run by other
  configs): PDR after training consistent with PDR beats PDR before it, at the same
  budget and on the same questions. Each paper claim declares its evidence
  (:func:`_evidence`); :data:`CLAIMS` declares them all.
  """
  m = metrics
  r = int(config.rounds)
  head = f"pdr_{config.headline_mode}_{r}"
  reps = int(m["replicates"])
  out = []
  holds, txt = _sig(m, f"sr_{r}", f"long_{r}")
  out.append(CLAIMS["sr_beats_long"].claim(
      statement=f"at matched sequential budget ({r} drafts) Sequential Refinement beats the "
      "single long pass",
      ours=(f"{txt} over {reps} replicates; SR's second draft is right after {m['sr_fix_rate']:.0%} "
            f"of wrong first drafts and {m['sr_keep_rate']:.0%} of right ones"),
      holds=holds, evidence=_evidence(m, config, f"sr_{r}", f"long_{r}")))
  holds, txt = _sig(m, head, f"long_{r}")
  out.append(CLAIMS["pdr_beats_long"].claim(
      statement=f"at matched sequential budget PDR ({config.headline_mode}, width "
      f"{int(config.width)}) beats the single long pass",
      ours=f"{txt} over {reps} replicates", holds=holds,
      evidence=_evidence(m, config, head, f"long_{r}")))
  holds, txt = _sig(m, head, f"sr_{r}")
  out.append(CLAIMS["pdr_beats_sr"].claim(
      ours=f"{txt} over {reps} replicates", holds=holds,
      evidence=_evidence(m, config, head, f"sr_{r}",
                         note=(f"PDR writes {int(config.width) * (r - 1) + 1} drafts to SR's "
                               f"{r} (matched sequential, not total, budget)"))))
  g, se = m[f"gap_{head}_vs_bon_{r}"], m[f"gap_{head}_vs_bon_{r}_se"]
  holds = bool(g >= -2 * se)
  out.append(CLAIMS["pdr_vs_best_of_n"].claim(
      ours=(f"PDR {m[f'{head}_acc']:.3f} ({m[f'{head}_seq_tokens']:.0f} sequential, "
            f"{m[f'{head}_total_tokens']:.0f} total tokens) vs best-of-"
            f"{int(config.width) * (r - 1) + 1} {m[f'bon_{r}_acc']:.3f} "
            f"({m[f'bon_{r}_seq_tokens']:.0f} sequential, {m[f'bon_{r}_total_tokens']:.0f} "
            f"total): {g:+.3f} +- {se:.3f} over {reps} replicates"),
      holds=holds,
      evidence=results.Evidence(
          seeds=len(config.model_seeds),
          margin_se=None if reps < 2 else results.margin_in_se(g, -2 * se, se),
          note=(f"{reps} replicates over {len(config.model_seeds)} trained decoder(s); "
                "first declared as a baseline with this rule, removed after the first quick "
                "run failed it, restored as a paper claim"))))
  holds, txt = _sig(m, head, f"shuffled_{r}")
  out.append(CLAIMS["shuffled_control_loses_gain"].claim(
      ours=f"{txt} over {reps} replicates", holds=holds))
  if f"rl_{head}_acc" in m:
    holds, txt = _sig(m, f"rl_{head}", head)
    out.append(CLAIMS["rl_moves_frontier"].claim(
        statement=f"training consistent with PDR (GRPO on the model's own PDR rounds, "
        f"{int(config.rl.steps)} steps) raises PDR's accuracy at the same budget",
        ours=(f"PDR {txt}; SR {m[f'rl_sr_{r}_acc']:.3f} vs {m[f'sr_{r}_acc']:.3f}; long pass "
              f"{m[f'rl_long_{r}_acc']:.3f} vs {m[f'long_{r}_acc']:.3f}; one sampled draft "
              f"{m['rl_long_1_acc']:.3f} vs {m['long_1_acc']:.3f}"),
        holds=holds, evidence=_evidence(m, config, f"rl_{head}", head)))
  out.append(CLAIMS["workspace_bounded"].claim(
      ours=f"longest workspace {m['workspace_max_tokens']:.0f} tokens, bound "
           f"{m['workspace_bound']:.0f}",
      holds=bool(m["workspace_max_tokens"] <= m["workspace_bound"])))
  return results.as_declared(out, CLAIMS)


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one PDR round, the
  ``width`` drafts of ``num_questions`` questions, each row a prompt with a full workspace
  decoded to a draft, rows split over ``data`` (a ``vmap`` of the KV-cached sampler, so
  every row is what the one-device batched call gives it). With a key: random parameters
  and prompts drawn from it; with None: ``jax.ShapeDtypeStruct`` args only."""
  cfg = model_config(config)
  task = sorting_task(config)
  t = prompt_pad(config)
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
