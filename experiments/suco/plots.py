"""SuCo's figure (called from ``experiment.run``).

``levels.png``: left, accuracy by difficulty level for every method (mean over seeds);
right, thinking tokens by level, with the MSC length found by forced answering (the paper's
threshold); in grey the true-level ablation's MSC and SAPO model, where the run has it.
"""

from __future__ import annotations

from reprojax.experiments import plotting

_METHODS = ("base", "base_more", "mft", "sapo", "truncated")


def plot_levels(workdir, config, m):
  fig, (ax1, ax2) = plotting.subplots(1, 2, figsize=(11, 4))
  levels = list(config.eval_levels)
  for name in _METHODS:
    ax1.plot(levels, [m[f"{name}_acc_L{x}"] for x in levels], "o-", ms=3, label=name)
    ax2.plot(levels, [m[f"{name}_tokens_L{x}"] for x in levels], "o-", ms=3, label=name)
  train = list(config.train_levels)
  ax2.plot(train, [2 * m[f"msc_steps_L{x}"] for x in train], "k--", lw=1,
           label="MSC (2 tokens a step)")
  if f"oracle_level_msc_steps_L{train[0]}" in m:  # the true-level ablation (not counted)
    ax1.plot(levels, [m[f"oracle_level_sapo_acc_L{x}"] for x in levels], ":", color="grey",
             lw=1, label="sapo, true-level threshold (ablation)")
    ax2.plot(levels, [m[f"oracle_level_sapo_tokens_L{x}"] for x in levels], ":", color="grey",
             lw=1, label="sapo, true-level threshold (ablation)")
    ax2.plot(train, [2 * m[f"oracle_level_msc_steps_L{x}"] for x in train], "--", color="grey",
             lw=1, label="MSC, true-level threshold (ablation)")
  ax1.set(xlabel="difficulty (operations)", ylabel="accuracy", ylim=(0, 1.05))
  ax2.set(xlabel="difficulty (operations)", ylabel="thinking tokens")
  for ax in (ax1, ax2):
    ax.axvline(max(train) + 0.5, color="grey", lw=0.8, ls=":")
    ax.legend(fontsize=7)
  fig.suptitle(f"SuCo on arithmetic chains, {int(m['num_seeds'])} seeds (right of the dotted "
               "line: held out)")
  fig.tight_layout()
  plotting.save(fig, workdir, "levels.png")
