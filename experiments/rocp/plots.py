"""The ROCP experiment's figures: every metric against alpha, per task and loss matrix."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib
import numpy as np

from reprojax.experiments import plotting


def metrics_vs_alpha(workdir: str, table: Mapping[tuple[str, str], tuple[np.ndarray, np.ndarray]],
                     alphas: np.ndarray, *, tasks: Sequence[str], losses: Sequence[str],
                     methods: Sequence[str], metrics: Sequence[str]) -> None:
  """Writes ``rocp_<task>_vs_alpha.png``: rows are loss matrices, columns metrics.

  ``table[(task, loss)]`` is ``(mean, se)``, each (len(alphas), methods, metrics):
  means and standard errors over the random splits.
  """
  colors = dict(zip(methods, matplotlib.colormaps["tab10"].colors))
  for task in tasks:
    fig, axes = plotting.subplots(len(losses), len(metrics), figsize=(3.6 * len(metrics), 7),
                                  squeeze=False)
    for r, lname in enumerate(losses):
      mean, se = table[(task, lname)]
      for c, metric in enumerate(metrics):
        ax = axes[r, c]
        for mi, method in enumerate(methods):
          if method == "best_response" and metric in ("coverage", "set_size"):
            continue
          ax.errorbar(alphas, mean[:, mi, c], yerr=se[:, mi, c], label=method, marker="o",
                      ms=3, capsize=2, color=colors[method],
                      lw=2.2 if method == "rocp" else 1.0)
        if metric == "coverage":
          ax.plot(alphas, 1 - alphas, "k--", lw=1, label="1 - alpha")
        ax.set_title(f"{task} / {lname} loss: {metric}")
        ax.set_xlabel("alpha")
        ax.grid(alpha=0.3)
    axes[0, list(metrics).index("robust_risk")].legend(fontsize=7)
    fig.tight_layout()
    plotting.save(fig, workdir, f"rocp_{task}_vs_alpha.png", dpi=110)
