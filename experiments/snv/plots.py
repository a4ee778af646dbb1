"""The SNV experiment's figures (called from ``experiment.run``).

``methods.png``: final average test accuracy of every method (its picked
hyperparameter) in the task- and class-incremental protocols, mean +- s.e. over
seeds: the dense arms, then Algorithm 1 and SNV-A scored by Eq. (1), and the
mask-based baseline of each protocol (WSN in task-IL, PEC in class-IL). ``snv_accuracy_matrix.png``: SNV's test accuracy on task j after learning
task i, both protocols.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting

LABELS = (("finetune", "fine-tune"), ("ewc", "EWC"), ("si", "SI"), ("mas", "MAS"),
          ("magnitude", "magnitude\n(PackNet-style)"), ("random", "random"),
          ("activation", "activation"), ("snv", "SNV\n(dense)"), ("snv_alg1", "SNV Alg. 1\nEq. (1)"),
          ("snv_a", "SNV-A\nEq. (1)"), ("wsn", "WSN"), ("pec", "PEC"))


def plot_methods(workdir, config, m):
  fig, axes = plotting.subplots(1, 2, figsize=(12, 4), squeeze=False)
  for ax, p in zip(axes[0], ("task", "class")):
    shown = [(k, lab) for k, lab in LABELS if f"{p}_{k}_acc" in m]
    vals = [m[f"{p}_{k}_acc"] for k, _ in shown]
    errs = [m[f"{p}_{k}_acc_se"] for k, _ in shown]
    colors = ["tab:red" if k.startswith("snv") else "tab:gray" if k in ("random", "activation")
              else "tab:green" if k in ("wsn", "pec") else "tab:blue" for k, _ in shown]
    ax.bar(np.arange(len(shown)), vals, yerr=errs, color=colors, capsize=3)
    ax.set_xticks(np.arange(len(shown)), [lab for _, lab in shown], fontsize=6)
    ax.set(ylabel="final average test accuracy", ylim=(0, 1),
           title=f"{p}-incremental, split digits, {config.num_seeds} seeds")
  fig.tight_layout()
  plotting.save(fig, workdir, "methods.png")


def plot_matrix(workdir, config, m):
  t = int(config.num_tasks)
  fig, axes = plotting.subplots(1, 2, figsize=(9, 4), squeeze=False)
  for ax, p in zip(axes[0], ("task", "class")):
    mat = np.array([[m[f"snv_acc_matrix_{p}_{i}_{j}"] if j <= i else np.nan for j in range(t)]
                    for i in range(t)])
    im = ax.imshow(mat, vmin=0, vmax=1, cmap="viridis")
    for i in range(t):
      for j in range(i + 1):
        ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w")
    ax.set(xlabel="task evaluated", ylabel="after learning task", title=f"SNV, {p}-IL")
  fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
  plotting.save(fig, workdir, "snv_accuracy_matrix.png")
