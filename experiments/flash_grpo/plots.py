"""Flash-GRPO's figure (called from ``experiment.run``).

``curves.png``: left, the reward of ODE samples against compute (forward equivalents per
sample) for every arm, mean over seeds; right, the single-step gradient norm per SDE step
at the pretrained model, unrectified and rectified.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting


def plot_curves(workdir, config, m):
  fig, (ax1, ax2) = plotting.subplots(1, 2, figsize=(11, 4))
  pts = int(config.curve_points)
  for arm in config.arms:
    total = m[f"{arm}_compute"]
    x = np.linspace(0, total, pts)
    ax1.plot(x, [m[f"{arm}_curve_{j}"] for j in range(pts)], "o-", ms=3, label=arm)
  ax1.set(xlabel="compute (forward equivalents per sample)", ylabel="reward of ODE samples")
  ax1.legend(fontsize=7)
  ks = np.arange(int(config.sde_high))
  ax2.plot(ks, [m[f"grad_norm_k{k}"] for k in ks], "o-", label="unrectified")
  ax2.plot(ks, [m[f"grad_norm_rectified_k{k}"] for k in ks], "s-", label="rectified")
  ax2.set(xlabel="SDE step k", ylabel="mean gradient norm")
  ax2.legend(fontsize=7)
  what = ("the digits U-Net" if config.task == "digits"
          else f"a {int(config.num_modes)}-mode 2-D mixture")
  fig.suptitle(f"Flash-GRPO on {what}, {int(m['num_seeds'])} seeds")
  fig.tight_layout()
  plotting.save(fig, workdir, "curves.png")
