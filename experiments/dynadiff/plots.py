"""DynaDiff's figure (called from ``experiment.run``).

``errors.png``: per family (a row each), the rollout error of every method inside and
outside the training range (mean +- s.e. over seeds; dotted: the zoo's experts in their
own environments, and experts generated for those environments from a fresh prompt), and the generated, fine-tuned and nearest experts' error per test
environment against its first parameter (the training range shaded).
"""

from __future__ import annotations

import numpy as np

from reprojax.data import dynadiff as dyn_data
from reprojax.experiments import plotting

_SHOWN = ("dynadiff", "no_attention", "no_functional", "plain_encoder", "true_params",
          "shuffled", "nearest", "finetune", "coda", "base")


def errors_figure(workdir, config, per_family, metrics):
  fams = list(per_family)
  fig, axes = plotting.subplots(len(fams), 2, figsize=(12, 3.6 * len(fams)), squeeze=False)
  width = 0.4
  for row, fam in enumerate(fams):
    ax1, ax2 = axes[row]
    x = np.arange(len(_SHOWN))
    for i, region in enumerate(("inside", "outside")):
      mean = [metrics[f"{fam}_{m}_{region}"] for m in _SHOWN]
      se = [metrics[f"{fam}_{m}_{region}_se"] for m in _SHOWN]
      ax1.bar(x + (i - 0.5) * width, mean, width, yerr=se, label=region, capsize=2)
    ax1.axhline(metrics[f"{fam}_zoo_own_err"], color="k", ls=":", lw=1,
                label="zoo experts, own environments")
    ax1.axhline(metrics[f"{fam}_zoo_gen_dynadiff"], color="C3", ls=":", lw=1,
                label="generated, zoo environments")
    ax1.set_xticks(x, _SHOWN, rotation=35, fontsize=7, ha="right")
    ax1.set(ylabel="normalised rollout error", title=f"{fam}: new environments")
    ax1.legend(fontsize=7)
    out = per_family[fam]
    fam_info = dyn_data.any_family(fam)
    ax2.axvspan(fam_info.train_low[0], fam_info.train_high[0], color="0.9")
    for method, marker in (("dynadiff", "o"), ("finetune", "s"), ("nearest", "^"),
                           ("coda", "v")):
      p = np.concatenate([out[f"params_{r}"][:, 0] for r in ("inside", "outside")])
      e = np.concatenate([out[f"{method}_{r}_envs"] for r in ("inside", "outside")])
      ax2.plot(p, e, marker, ms=4, label=method, alpha=0.8)
    ax2.set(xlabel=fam_info.param_names[0], ylabel="rollout error (mean over seeds)",
            yscale="log", title="per environment (shaded: training range)")
    ax2.legend(fontsize=7)
  fig.suptitle(f"DynaDiff: generated experts vs baselines, {int(config.num_seeds)} seeds, "
               f"zoo of {int(config.num_zoo_envs)}")
  fig.tight_layout()
  plotting.save(fig, workdir, "errors.png")
