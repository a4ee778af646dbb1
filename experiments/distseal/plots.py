"""DistSeal's figure (called from ``experiment.run``).

``tradeoff.png``: bit accuracy after the edits (mean over them) against PSNR, for the latent
and the pixel watermarker along their strength grids (mean over seeds; the marker at each
one's training strength), and bit accuracy per edit at that strength.

``generator_curve.png`` (when ``gen_curve_steps`` is set): the fine-tuned generator's TPR at
the config's FPR and bit accuracy, no edit, against fine-tuning steps (mean and s.e. over
seeds; the EMA the recipe samples and the last weights), and the samples' nearest-neighbour
distance ratio to the training latents (memorisation).
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


def plot_generator_curve(workdir, config, steps, per):
  """``per[f"generator_curve_{name}_{k}"]``: one value per seed at step ``k`` of ``steps``."""
  fig, axes = plotting.subplots(1, 3, figsize=(14, 4))
  k = np.asarray(steps, np.float64)

  def band(ax, name, label, style):
    key = [f"generator_curve_{name}_{s}" for s in steps]
    if key[0] not in per:
      return
    v = np.asarray([per[x] for x in key], np.float64)  # steps x seeds
    mean = v.mean(1)
    se = v.std(1, ddof=1) / np.sqrt(v.shape[1]) if v.shape[1] > 1 else np.zeros_like(mean)
    ax.errorbar(k, mean, yerr=se, fmt=style, ms=4, capsize=2, label=label)

  for ax, name, what in ((axes[0], "tpr_identity", f"TPR at FPR {config.fpr:g}, no edit"),
                         (axes[1], "acc_identity", "bit accuracy, no edit")):
    band(ax, name, "EMA of the weights (sampled)", "o-")
    band(ax, f"raw_{name}", "last weights", "s--")
    ax.set(xscale="log", xlabel="fine-tuning steps", ylabel=what)
    ax.legend(fontsize=7)
  axes[0].axhline(0.9, color="grey", lw=0.8, ls=":")
  axes[0].set_ylim(-0.02, 1.02)
  band(axes[2], "nn_ratio", "samples", "o-")
  axes[2].axhline(1.0, color="grey", lw=0.8, ls=":")
  axes[2].set(xscale="log", xlabel="fine-tuning steps",
              ylabel="nearest training latent: samples / held-out")
  n = len(per[f"generator_curve_tpr_identity_{steps[0]}"])
  fig.suptitle(f"DistSeal: the latent watermark distilled into the generator "
               f"(recipe {config.gen_recipe}, batch {int(config.batch_size)}, {n} seeds)")
  fig.tight_layout()
  plotting.save(fig, workdir, "generator_curve.png")
