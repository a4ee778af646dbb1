"""The SNV experiment's figures (called from ``experiment.run``).

``methods.png``: final average test accuracy of every method (its picked
hyperparameter) in the task- and class-incremental protocols, mean +- s.e. over
seeds. ``snv_accuracy_matrix.png``: SNV's test accuracy on task j after learning
task i, both protocols.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting

LABELS = (("finetune", "fine-tune"), ("ewc", "EWC"), ("si", "SI"), ("mas", "MAS"),
          ("magnitude", "magnitude\n(PackNet-style)"), ("random", "random"),
          ("activation", "activation"), ("snv", "SNV (Shapley)"))


def plot_methods(workdir, config, m):
  fig, axes = plotting.subplots(1, 2, figsize=(12, 4), squeeze=False)
  for ax, p in zip(axes[0], ("task", "class")):
    vals = [m[f"{p}_{k}_acc"] for k, _ in LABELS]
    errs = [m[f"{p}_{k}_acc_se"] for k, _ in LABELS]
    colors = ["tab:red" if k == "snv" else "tab:gray" if k in ("random", "activation")
              else "tab:blue" for k, _ in LABELS]
    ax.bar(np.arange(len(LABELS)), vals, yerr=errs, color=colors, capsize=3)
    ax.set_xticks(np.arange(len(LABELS)), [lab for _, lab in LABELS], fontsize=7)
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
