"""The CausalDPO experiment's figures (called from ``experiment.run``).

``methods.png``: HR@10 and NDCG@10 of every method (one negative per pair unless
labelled K=4, beta 0.1 unless labelled) in distribution and in each
out-of-distribution setting (mean +- s.e. over seeds). ``invariance_grid.png``:
over CausalDPO's invariance weight, the validation score that picks it (worst
training environment's NDCG@10) and the OOD score of CausalDPO and of its
ablations at that weight.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting

METHODS = (("sft", "SFT (reference)"), ("dpo", "DPO"), ("causal", "CausalDPO"),
           ("causal_no_backdoor", "w/o backdoor"), ("causal_no_invariance", "w/o invariance"),
           ("causal_random", "random envs"), ("causal_oracle", "oracle envs"),
           ("causal_mmd", "MMD penalty"), ("b_dpo", "DPO, beta 1"),
           ("b_causal", "CausalDPO, beta 1"), ("k_sdpo", "S-DPO, K=4 (ext.)"),
           ("k_causal", "CausalDPO, K=4 (ext.)"))


def plot_methods(workdir, config, m):
  splits = ("id",) + tuple(config.ood.keys())
  fig, axes = plotting.subplots(1, 2, figsize=(12, 4.2), squeeze=False)
  width = 0.8 / len(METHODS)
  x = np.arange(len(splits))
  for ax, metric in zip(axes[0], ("hr", "ndcg")):
    for i, (key, label) in enumerate(METHODS):
      vals = [m[f"{key}_{s}_{metric}"] for s in splits]
      errs = [m[f"{key}_{s}_{metric}_se"] for s in splits]
      ax.bar(x + (i - len(METHODS) / 2 + 0.5) * width, vals, width, yerr=errs, label=label,
             capsize=2)
    ax.set_xticks(x, ["in distribution"] + [f"OOD: {s}" for s in splits[1:]])
    ax.set(ylabel=f"{metric.upper()}@10", title=f"{metric.upper()}@10, {config.num_seeds} seeds")
  axes[0][1].legend(fontsize=7, ncol=2)
  fig.tight_layout()
  plotting.save(fig, workdir, "methods.png")


def plot_grid(workdir, config, m):
  ws = list(config.invariance_weights)
  fig, axes = plotting.subplots(1, 2, figsize=(10, 3.8), squeeze=False)
  axes[0][0].plot(ws, [m[f"grid_{w:g}_val"] for w in ws], "o-", color="k")
  axes[0][0].plot(ws, [m[f"grid_b_{w:g}_val"] for w in ws], "o-.", color="C4", label="beta 1")
  axes[0][0].plot(ws, [m[f"grid_k_{w:g}_val"] for w in ws], "s--", color="C5", label="K=4")
  axes[0][0].legend(fontsize=7)
  axes[0][0].axvline(m["causal_weight"], color="grey", ls=":")
  axes[0][0].set(xscale="log", xlabel="invariance weight",
                 ylabel="validation: worst environment's NDCG@10", title="the pick (dotted)")
  for kind, label in (("", "CausalDPO"), ("no_backdoor_", "w/o backdoor"),
                      ("oracle_", "oracle envs"), ("random_", "random envs"),
                      ("b_", "CausalDPO, beta 1"), ("k_", "CausalDPO, K=4 (ext.)"),
                      ("k_oracle_", "oracle envs, K=4 (ext.)")):
    key = (lambda w: f"grid_{kind}{w:g}_ood") if kind in ("b_", "k_") else (
        (lambda w: f"grid_k_{w:g}_oracle_ood") if kind == "k_oracle_" else
        (lambda w: f"grid_{w:g}_{kind}ood"))
    axes[0][1].plot(ws, [m[key(w)] for w in ws], "o-" if kind[:1] != "k" else "s--",
                    label=label)
  for key, label, style in (("dpo", "DPO", "--"), ("b_dpo", "DPO, beta 1", "-."),
                            ("k_sdpo", "S-DPO, K=4", ":")):
    axes[0][1].axhline(m[f"{key}_ood"], ls=style, color="grey", label=label)
  axes[0][1].set(xscale="log", xlabel="invariance weight",
                 ylabel="OOD score (mean HR/NDCG@10/@20)", title="out of distribution (test)")
  axes[0][1].legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "invariance_grid.png")
