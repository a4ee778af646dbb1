"""PDR's figure (called from ``experiment.run``).

``frontier.png``: exact-match accuracy (mean +- s.e. over replicates) against mean
sequential tokens per question (left: the latency proxy) and against mean total tokens
(right), for the long pass, SR, PDR in the headline mode, best-of-N, and PDR's other modes
and the shuffled control at the largest budget.
"""

from __future__ import annotations

from reprojax.experiments import plotting

_FAMILIES = (("long_", "long pass", "tab:gray", "o-"), ("sr_", "SR", "tab:blue", "s-"),
             ("bon_", "best-of-N", "tab:olive", "^-"))


def plot_frontier(workdir, config, names, m):
  head = f"pdr_{config.headline_mode}_"
  families = list(_FAMILIES) + [(head, f"PDR ({config.headline_mode})", "tab:red", "D-")]
  fig, axes = plotting.subplots(1, 2, figsize=(11, 4))
  for ax, cost, label in ((axes[0], "seq_tokens", "sequential tokens per question"),
                          (axes[1], "total_tokens", "total generated tokens per question")):
    for prefix, name, color, style in families:
      group = [n for n in names if n.startswith(prefix)]
      ax.errorbar([m[f"{n}_{cost}"] for n in group], [m[f"{n}_acc"] for n in group],
                  yerr=[m[f"{n}_acc_se"] for n in group], fmt=style, color=color, label=name,
                  capsize=2, ms=4)
    for n in names:
      if n.startswith("pdr_") and not n.startswith(head) or n.startswith("shuffled_"):
        ax.errorbar([m[f"{n}_{cost}"]], [m[f"{n}_acc"]], yerr=[m[f"{n}_acc_se"]], fmt="x",
                    capsize=2, label=n.replace("_", " "))
    ax.axhline(m["greedy_acc"], color="k", lw=0.8, ls=":", label="greedy, one draft")
    ax.set(xlabel=label, ylabel="exact-match accuracy")
  axes[0].legend(fontsize=6, loc="best")
  fig.suptitle(f"PDR on sorting {int(config.task.length)} values: "
               f"{int(m['replicates'])} replicates of {int(config.num_questions)} questions")
  fig.tight_layout()
  plotting.save(fig, workdir, "frontier.png")
