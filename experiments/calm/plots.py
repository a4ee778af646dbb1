"""CALM's figure (called from ``experiment.run``).

``levels.png``: left, held-out accuracy by level for every model (mean and s.e. over seeds);
right, the share of each failure reason (parse error, infeasible, unbounded, wrong optimum)
per model, over all levels. ``rl_steps.png`` and ``rl_steps.md``: the GRPO runs per step and
seed (reward, unparsed share, KL to the reference), from CALM-SFT and from direct SFT.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from reprojax.experiments import plotting

_METHODS = ("base", "direct", "styled", "calm", "random", "direct_rl", "calm_rl")
_REASONS = ("parse", "infeasible", "unbounded", "wrong_optimum")


def plot_levels(workdir, config, m):
  fig, (ax1, ax2) = plotting.subplots(1, 2, figsize=(11, 4))
  levels = list(config.eval_levels)
  for i, name in enumerate(_METHODS):
    x = np.asarray(levels) + 0.06 * (i - len(_METHODS) / 2)
    ax1.errorbar(x, [m[f"{name}_acc_L{v}"] for v in levels],
                 yerr=[m[f"{name}_acc_L{v}_se"] for v in levels], fmt="o-", ms=3, capsize=2,
                 label=name)
  ax1.set(xlabel="level", ylabel="held-out accuracy (optimum matches)", ylim=(0, 1.05),
          xticks=levels)
  bottom = np.zeros(len(_METHODS))
  for r in _REASONS:
    h = np.array([m.get(f"{name}_share_{r}", 0.0) for name in _METHODS])
    ax2.bar(range(len(_METHODS)), h, bottom=bottom, label=r)
    bottom += h
  ax2.set_xticks(range(len(_METHODS)), _METHODS, rotation=30, fontsize=8)
  ax2.set(ylabel="share of held-out answers", title="why answers fail")
  for ax in (ax1, ax2):
    ax.legend(fontsize=7)
  fig.suptitle(f"CALM on template OR problems, {int(m['num_seeds'])} seeds")
  fig.tight_layout()
  plotting.save(fig, workdir, "levels.png")


_RL_PANELS = (("reward", "mean solver reward (share right)"),
              ("unparsed", "share of samples that do not parse"),
              ("kl", "mean k3 KL to the SFT model"))


def plot_rl_steps(workdir, config, logs):
  """``logs``: ``{start: [per seed {quantity: [per step]}]}``, as ``experiment.rl`` logs."""
  fig, axes = plotting.subplots(1, len(_RL_PANELS), figsize=(12, 3.6))
  colours = {"calm": "C3", "direct": "C0"}
  for ax, (q, label) in zip(axes, _RL_PANELS):
    for start, seeds in logs.items():
      v = np.asarray([s[q] for s in seeds])  # (seeds, steps)
      k = np.arange(1, v.shape[1] + 1)
      for row in v:
        ax.plot(k, row, color=colours.get(start, "k"), alpha=0.3, lw=0.8)
      ax.plot(k, v.mean(0), "o-", color=colours.get(start, "k"), ms=3,
              label=f"from {start} SFT (mean of {len(v)} seeds)")
    ax.set(xlabel="GRPO step", ylabel=label)
  axes[0].legend(fontsize=7)
  fig.suptitle(f"GRPO per step: {int(config.rl_questions)} problems x {int(config.group)} "
               f"samples, lr {float(config.rl_learning_rate):g}, beta {float(config.rl_beta):g}")
  fig.tight_layout()
  plotting.save(fig, workdir, "rl_steps.png")
  if jax.process_index() == 0:
    lines = [f"# GRPO per step and seed (calm, {config.scale} config; `experiment.rl`'s log)", "",
             "| start | seed | step | reward | unparsed | KL | clipped | groups with signal |",
             "|---|---|---|---|---|---|---|---|"]
    for start, seeds in logs.items():
      for i, s in enumerate(seeds):
        for t in range(len(s["reward"])):
          lines.append(f"| {start} | {int(config.seed) + i} | {t + 1} | {s['reward'][t]:.4f} | "
                       f"{s['unparsed'][t]:.4f} | {s['kl'][t]:.6f} | {s['clipped'][t]:.4f} | "
                       f"{s['informative'][t]:.3f} |")
    with open(os.path.join(workdir, "rl_steps.md"), "w") as f:
      f.write("\n".join(lines) + "\n")
