"""The GWCN experiment's figures (all of them; called from ``experiment.run``).

* ``synthetic_transfer.png``: node-level and readout transfer errors of GWCN and
  c-GCN against n for every sparsity schedule, the GWCN error beside the bound's
  size and density parts, and the degree sweep (error against c = n rho at the
  largest n, beside (n rho)^-1/2);
* ``real_graph.png``: the real graph's subgraph densities (with the best of the
  three fitted forms) and readout transfer errors against the subgraph size;
* ``node_classification.png``: accuracy, macro-F1, cross-entropy and transfer
  error of the SBM classification against the training subgraph size.
"""

from __future__ import annotations

import matplotlib
from matplotlib import ticker
import numpy as np

from reprojax.experiments import plotting


def write_all(workdir, config, syn, sweep, real, cls):
  """Writes the three figures into ``workdir`` (process 0 only).

  Args:
    workdir: output folder.
    config: the run's config.
    syn: ``{schedule: {n: per-graph dict}}`` of ``programs.synthetic_transfer``.
    sweep: ``{c: per-graph dict}`` of ``programs.degree_sweep``.
    real: ``{scheme: entry}`` of ``programs.real_graph_transfer``.
    cls: ``{m: per-trial dict}`` of ``programs.classification``.
  """
  synthetic(syn, sweep, config, workdir)
  real_graph(real, workdir, config.real_graph)
  classification(cls, workdir)


def synthetic(syn, sweep, config, workdir):
  fig, axes = plotting.subplots(1, 4, figsize=(21, 4.5))
  sizes = np.asarray(config.sizes)
  colors = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(config.schedules)))
  for s, c in zip(config.schedules, colors):
    for ax, key in ((axes[0], "err"), (axes[1], "readout_err")):
      g = [syn[s][n][f"gwcn_{key}"].mean() for n in sizes]
      cg = [syn[s][n][f"cgcn_{key}"].mean() for n in sizes]
      ax.loglog(sizes, g, "o-", color=c, label=f"GWCN {s}")
      ax.loglog(sizes, cg, "s--", color=c, alpha=0.7, label=f"c-GCN {s}")
    meas = [syn[s][n]["gwcn_err"].mean() for n in sizes]
    bs = [syn[s][n]["bound_size"].mean() for n in sizes]
    bd = [syn[s][n]["bound_density"].mean() for n in sizes]
    axes[2].loglog(sizes, meas, "o-", color=c, label=f"measured {s}")
    axes[2].loglog(sizes, bd, ":", color=c, label=f"density part {s}")
    axes[2].loglog(sizes, bs, "k--", lw=0.8)
  cs = np.asarray(sorted(sweep))
  err_c = np.asarray([sweep[c]["gwcn_err"].mean() for c in cs])
  ro_c = np.asarray([sweep[c]["gwcn_readout_err"].mean() for c in cs])
  axes[3].loglog(cs, err_c, "o-", label="GWCN node-level")
  axes[3].loglog(cs, ro_c, "s--", label="GWCN readout")
  axes[3].loglog(cs, err_c[0] * np.sqrt(cs[0] / cs), "k:", label="(n rho)^-1/2")
  axes[3].set_title(f"rho = c/n at n = {config.sizes[-1]}: error vs c = n rho")
  axes[3].set_xlabel("c = n rho")
  axes[3].set_xticks(cs, [f"{c:g}" for c in cs])
  axes[3].xaxis.set_minor_formatter(ticker.NullFormatter())
  axes[3].legend(fontsize=7)
  axes[0].set_title("node-level relative transfer error")
  axes[1].set_title("readout (mean-pooled) relative transfer error")
  axes[2].set_title("GWCN: measured vs bound parts (black dashed: size part)")
  for ax in axes[:3]:
    ax.set_xlabel("n")
  axes[0].legend(fontsize=6, ncol=2)
  axes[2].legend(fontsize=6, ncol=2)
  fig.tight_layout()
  plotting.save(fig, workdir, "synthetic_transfer.png", dpi=110)


def real_graph(real, workdir, name):
  fig, axes = plotting.subplots(1, 2, figsize=(11, 4.5))
  for scheme, e in real.items():
    m = e["m"]
    l, = axes[0].loglog(m, e["density"], "o-", label=f"{scheme} (best fit {e['fits']['best']})")
    best = e["fits"]["best"]
    a = e["fits"][best][0]
    f = {"1/n": 1 / m, "logn/n": np.log(m) / m, "const": np.ones_like(m, dtype=float)}[best]
    axes[0].loglog(m, a * f, ":", color=l.get_color())
    axes[1].loglog(m[:-1], e["gwcn_readout_err"][:-1], "o-", color=l.get_color(),
                   label=f"GWCN {scheme}")
    axes[1].loglog(m[:-1], e["cgcn_readout_err"][:-1], "s--", color=l.get_color(), alpha=0.6,
                   label=f"c-GCN {scheme}")
  axes[0].set_title(f"{name}: subgraph edge density (dotted: best fit)")
  axes[1].set_title("readout transfer error to the full graph")
  for ax in axes:
    ax.set_xlabel("subgraph size m")
    ax.legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "real_graph.png", dpi=110)


def classification(cls, workdir):
  ms = np.asarray(sorted(cls))
  fig, axes = plotting.subplots(1, 4, figsize=(16, 3.8))
  for ax, key, title in zip(axes, ("acc", "macro_f1", "ce", "transfer_err"),
                            ("accuracy", "macro-F1", "cross-entropy", "transfer error")):
    mu = np.array([cls[m][key].mean() for m in ms])
    sd = np.array([cls[m][key].std() for m in ms])
    ax.errorbar(ms, mu, yerr=sd, fmt="o-", capsize=3)
    ax.set_xscale("log")
    ax.set_title(title)
    ax.set_xlabel("training subgraph size m")
  fig.tight_layout()
  plotting.save(fig, workdir, "node_classification.png", dpi=110)
