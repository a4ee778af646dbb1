"""CALM's figure (called from ``experiment.run``).

``levels.png``: left, held-out accuracy by level for every model (mean and s.e. over seeds);
right, the share of each failure reason (parse error, infeasible, unbounded, wrong optimum)
per model, over all levels.
"""

from __future__ import annotations

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
