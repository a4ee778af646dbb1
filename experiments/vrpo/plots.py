"""VRPO's figure (called from ``experiment.run``).

``curves.png``: per temperature, the MMD^2 to the exact tilted target against fine-tuning
steps for every arm (mean over seeds), with the reweighted-base-chain and oracle-score
floors as horizontal lines.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting


def plot_curves(workdir, config, m):
  etas = list(config.etas)
  fig, axes = plotting.subplots(1, len(etas), figsize=(5.5 * len(etas), 4), squeeze=False)
  pts = int(config.curve_points)
  x = np.linspace(0, m["steps"], pts)
  for i, ax in enumerate(axes[0]):
    p = f"eta{i}"
    for arm in config.arms:
      ax.plot(x, [max(m[f"{p}_{arm}_mmd_curve_{j}"], 1e-5) for j in range(pts)], "o-", ms=3,
              label=arm)
    ax.axhline(max(m[f"{p}_reweighted_mmd"], 1e-5), color="k", ls="--", lw=1,
               label="reweighted base chain")
    ax.axhline(max(m[f"{p}_oracle_mmd"], 1e-5), color="grey", ls=":", lw=1,
               label="oracle score")
    ax.set(yscale="log", xlabel="fine-tuning steps", ylabel="MMD^2 to the tilted target",
           title=f"eta = {m[f'{p}_eta']:g}")
    ax.legend(fontsize=7)
  fig.suptitle(f"VRPO and baselines on the {int(config.num_modes)}-mode mixture, "
               f"{int(m['num_seeds'])} seeds")
  fig.tight_layout()
  plotting.save(fig, workdir, "curves.png")
