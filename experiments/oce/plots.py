"""The OCE experiment's figure (called from ``experiment.run``).

``erasure_vs_preservation.png``: per task, each method's validation curve over
its erase strength (the four arms of ``programs.METHODS``; erased digits' accuracy against the change to the other
digits' images, pixel MSE against the unedited model's; down-left is better), the validation pick circled and its test
score (mean +- s.e. over sampling seeds) as a cross, beside the unedited model.
"""

from __future__ import annotations

from reprojax.experiments import plotting

_STYLE = {"oce": ("tab:blue", "OCE (rotation)"),
          "oce_object": ("tab:cyan", "OCE, authors' object preset"),
          "uce_kv": ("tab:red", "UCE as its public code (to_k, to_v)"),
          "uce_v": ("tab:orange", "UCE, ours (to_v only)")}


def write_all(workdir, config, curves, m):
  """``curves[(task, method)] = (scales, validation metrics (K, 3), pick index)``, the metrics
  being ``programs.METRICS`` (erased accuracy, preserved accuracy, preserved change)."""
  names = list(config.erase_sets)
  fig, axes = plotting.subplots(1, len(names), figsize=(5.5 * len(names), 4.5), squeeze=False)
  for ax, name in zip(axes[0], names):
    for method, (color, label) in _STYLE.items():
      scales, vals, i = curves[(name, method)]
      ea, pa = vals[:, 0], vals[:, 2]
      ax.plot(ea, pa, "o-", color=color, label=f"{label}, validation sweep")
      for s, e, p in zip(scales, ea, pa):
        ax.annotate(f"{s:g}", (e, p), fontsize=7, color=color, xytext=(3, 3),
                    textcoords="offset points")
      ax.plot([ea[i]], [pa[i]], "o", ms=13, mfc="none", color=color)
      ax.errorbar([m[f"{name}/{method}/test/erased_acc"]], [m[f"{name}/{method}/test/preserved_change"]],
                  xerr=[m[f"{name}/{method}/test/erased_acc_se"]],
                  yerr=[m[f"{name}/{method}/test/preserved_change_se"]], fmt="x", ms=9, color=color,
                  label=f"{label}, pick on held-out prompts")
    ax.plot([m[f"{name}/unedited/erased_acc"]], [0.0], "k*",
            ms=10, label="unedited (held-out prompts)")
    ax.axvline(config.erase_target, color="grey", ls=":", lw=1)
    ax.set(xlabel="accuracy on the erased digit(s)  (lower: erased)",
           ylabel="change to the other digits' images  (lower: preserved)",
           title=f"erase {' and '.join(name)} (guide {config.guides[names.index(name)]})")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylim(bottom=0.0)
    ax.legend(fontsize=7, loc="upper right")
  fig.tight_layout()
  plotting.save(fig, workdir, "erasure_vs_preservation.png")
