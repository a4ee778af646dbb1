"""The ROCP experiment's figures: every metric against alpha, per task and loss matrix."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib
import numpy as np

from reprojax.experiments import plotting


def metrics_vs_alpha(workdir: str, table: Mapping[tuple[str, str], tuple[np.ndarray, np.ndarray]],
                     alphas: np.ndarray, *, tasks: Sequence[str],
                     losses: Mapping[str, Sequence[str]], methods: Sequence[str],
                     metrics: Sequence[str], index: Mapping[str, int]) -> None:
  """Writes ``rocp_<task>_vs_alpha.png``: rows are loss matrices, columns metrics.

  ``table[(task, loss)]`` is ``(mean, se)``, each (len(alphas), all methods, metrics):
  means and standard errors over the random splits; ``methods`` are the lines drawn,
  ``index`` their rows in the table. The alpha axis is logarithmic.
  """
  colors = dict(zip(methods, matplotlib.colormaps["tab10"].colors))
  for task in tasks:
    rows = losses[task]
    fig, axes = plotting.subplots(len(rows), len(metrics),
                                  figsize=(3.6 * len(metrics), 3.5 * len(rows)), squeeze=False)
    for r, lname in enumerate(rows):
      mean, se = table[(task, lname)]
      for c, metric in enumerate(metrics):
        ax = axes[r, c]
        for method in methods:
          mi = index[method]
          if method.startswith("best_response") and metric in ("coverage", "set_size"):
            continue
          ax.errorbar(alphas, mean[:, mi, c], yerr=se[:, mi, c], label=method, marker="o",
                      ms=3, capsize=2, color=colors[method],
                      lw=2.2 if method.startswith("rocp") else 1.0)
        ax.set_xscale("log")
        if metric == "coverage":
          ax.plot(alphas, 1 - alphas, "k--", lw=1, label="1 - alpha")
        ax.set_title(f"{task} / {lname} loss: {metric}")
        ax.set_xlabel("alpha")
        ax.grid(alpha=0.3)
    axes[0, list(metrics).index("robust_risk")].legend(fontsize=7)
    fig.tight_layout()
    plotting.save(fig, workdir, f"rocp_{task}_vs_alpha.png", dpi=110)
