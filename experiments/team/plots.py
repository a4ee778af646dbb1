"""TEAM's figure (called from ``experiment.run``).

``speedups.png``: left, the speed-up of every mode over vanilla decoding under the
memory-bound model, the compute-bound model and CPU wall-clock; right, passes per
generated token and distinct experts per pass (summed over layers).
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting


def plot_speedups(workdir, modes, m):
  fig, (ax1, ax2) = plotting.subplots(1, 2, figsize=(11, 4))
  x = np.arange(len(modes))
  for i, (kind, label) in enumerate((("memory", "memory-bound model"),
                                     ("compute", "compute-bound model"),
                                     ("wall", "CPU wall-clock"))):
    ax1.bar(x + (i - 1) * 0.27, [m[f"{k}_speedup_{kind}"] for k in modes], 0.27, label=label)
  ax1.axhline(1.0, color="k", lw=0.8)
  ax1.axhline(1.94, color="grey", lw=0.8, ls="--", label="paper: 1.94x on average")
  ax1.set(xticks=x, xticklabels=modes, ylabel="speed-up over vanilla")
  ax1.tick_params(axis="x", labelrotation=45)
  ax1.legend(fontsize=7)
  ax2.bar(x - 0.2, [m[f"{k}_passes_per_token"] for k in modes], 0.4, label="passes per token")
  ax3 = ax2.twinx()
  ax3.bar(x + 0.2, [m[f"{k}_experts_per_pass"] for k in modes], 0.4, color="C1",
          label="experts per pass")
  ax2.set(xticks=x, xticklabels=modes, ylabel="passes per generated token")
  ax2.tick_params(axis="x", labelrotation=45)
  ax3.set(ylabel="distinct experts per pass (all layers)")
  fig.legend(fontsize=7, loc="upper right")
  fig.suptitle(f"TEAM on a small MoE block-diffusion LM, {int(m['num_seeds'])} seed(s); "
               f"accuracy vanilla {m['vanilla_acc']:.3f}, TEAM {m['team_acc']:.3f}")
  fig.tight_layout()
  plotting.save(fig, workdir, "speedups.png")
