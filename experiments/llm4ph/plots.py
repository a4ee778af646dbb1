"""LLM4PH's figures (called from ``experiment.run``).

``tasks.png``: accuracy of every model on every task (all sizes and encodings pooled;
the language model on its own subset), tasks grouped by level. ``levels.png``: accuracy
per level in each prompt encoding, per model.
"""

from __future__ import annotations

import numpy as np

from reprojax.algorithms import llm4ph
from reprojax.experiments import plotting

_MODELS = (("oracle", "oracle (engine)", "tab:green"), ("skeleton", "1-skeleton", "tab:blue"),
           ("majority", "majority", "tab:gray"), ("random", "random", "tab:olive"),
           ("lm", "SmolLM2-135M", "tab:red"))


def _present(m):
  return [x for x in _MODELS if f"{x[0]}_parsed" in m]


def plot_tasks(workdir, config, m):
  tasks = [t for t in llm4ph.TASKS if t in config.tasks]
  models = _present(m)
  fig, ax = plotting.subplots(figsize=(12, 4))
  w = 0.8 / len(models)
  for i, (key, label, color) in enumerate(models):
    vals = [m.get(f"{key}_{t}_acc", np.nan) for t in tasks]
    ax.bar(np.arange(len(tasks)) + (i - (len(models) - 1) / 2) * w, vals, w, label=label,
           color=color)
  ax.set_xticks(np.arange(len(tasks)),
                [f"{t.replace('_', ' ')}\n({llm4ph.LEVEL_OF[t]})" for t in tasks], fontsize=7)
  ax.set(ylabel="exact-match accuracy", ylim=(0, 1.22),
         title=f"LLM4PH tasks, {int(m['num_instances'])} instances x "
               f"{len(config.encodings)} encodings")
  ax.legend(fontsize=7, ncol=len(models), loc="upper center")
  fig.tight_layout()
  plotting.save(fig, workdir, "tasks.png")


def plot_levels(workdir, config, m):
  models = _present(m)
  fig, axes = plotting.subplots(1, len(models), figsize=(3 * len(models), 3.2), squeeze=False)
  levels = list(llm4ph.LEVELS)
  for ax, (key, label, _) in zip(axes[0], models):
    encs = config.lm_encodings if key == "lm" else config.encodings
    for j, enc in enumerate(encs):
      vals = []
      for lv in levels:
        accs = [m[k] for t in llm4ph.LEVELS[lv]
                for k in [f"{key}_{t}_{s}_{enc}_acc" for s in llm4ph.SIZES] if k in m]
        vals.append(np.mean(accs) if accs else np.nan)
      ax.bar(np.arange(len(levels)) + (j - 0.5) * 0.4, vals, 0.4, label=enc.replace("_", " "))
    ax.set_xticks(np.arange(len(levels)), levels, fontsize=7, rotation=20)
    ax.set(ylim=(0, 1.05), title=label)
  axes[0][0].set_ylabel("accuracy")
  axes[0][0].legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "levels.png")
