"""DistSeal's figure (called from ``experiment.run``).

``tradeoff.png``: bit accuracy after the edits (mean over them) against PSNR, for the latent
and the pixel watermarker along their strength grids (mean over seeds; the marker at each
one's training strength), and bit accuracy per edit at that strength.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting


def plot_tradeoff(workdir, config, curves, edits):
  fig, (ax1, ax2) = plotting.subplots(1, 2, figsize=(11, 4))
  grid = np.asarray(config.strength_grid, np.float64)
  one = int(np.argmin(np.abs(grid - 1.0)))
  names = [e for e, _ in edits]
  width = 0.38
  for i, (method, runs) in enumerate(curves.items()):
    psnr = np.mean([r["psnr"] for r in runs], axis=0)
    acc = np.mean([np.mean([r[f"acc_{e}"] for e in names[1:]], axis=0) for r in runs], axis=0)
    line, = ax1.plot(psnr, acc, "o-", ms=3, label=method)
    ax1.plot(psnr[one], acc[one], "*", ms=12, color=line.get_color())
    per_edit = [np.mean([r[f"acc_{e}"][one] for r in runs]) for e in names]
    ax2.bar(np.arange(len(names)) + (i - 0.5) * width, per_edit, width, label=method)
  ax1.set(xlabel="PSNR (dB) to the unwatermarked image", ylabel="bit accuracy, mean over edits")
  ax1.legend(fontsize=7)
  ax2.set_xticks(np.arange(len(names)), names, fontsize=7)
  ax2.set(ylabel="bit accuracy at the training strength", ylim=(0.4, 1.01))
  ax2.legend(fontsize=7)
  fig.suptitle(f"DistSeal on {config.dataset} at {int(config.image_size)} px, {int(config.bits)} bits, "
               f"{len(next(iter(curves.values())))} seeds")
  fig.tight_layout()
  plotting.save(fig, workdir, "tradeoff.png")
