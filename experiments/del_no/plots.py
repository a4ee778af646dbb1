"""The del-NO figures: every plot of the reproduction, in one place (called from ``run``).

* :func:`plot_grid`: relative L2 test error of the backbone and of del-NO per cell
  (PDE x backbone x clean/noisy), mean and standard error over seeds;
* :func:`plot_sweeps`: the learned top order against the noise level, the
  training-set size and the input's spectral decay, beside the closed form beta*.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from reprojax.experiments import plotting

SWEEP_LABELS = {"sigma": "input noise sigma", "n": "training-set size n",
                "alpha": "input spectral decay alpha (smaller: more high frequencies)"}


def plot_grid(workdir: str, cells: Sequence[Mapping]) -> None:
  """``del_no_grid.png``: backbone vs del-NO test error per cell (log scale, s.e. bars)."""
  fig, ax = plotting.subplots(figsize=(max(6, 0.9 * len(cells)), 3.8))
  xs = np.arange(len(cells))
  ax.bar(xs - 0.2, [c["base"] for c in cells], 0.4, yerr=[c["base_se"] for c in cells],
         label="backbone")
  ax.bar(xs + 0.2, [c["delno"] for c in cells], 0.4, yerr=[c["delno_se"] for c in cells],
         label="del-NO")
  ax.set_xticks(xs, [f"{c['pde']}\n{c['backbone']}\n{c['cond']}" for c in cells], fontsize=7)
  ax.set_ylabel("relative L2 test error")
  ax.set_yscale("log")
  ax.legend()
  fig.tight_layout()
  plotting.save(fig, workdir, "del_no_grid.png")


def plot_sweeps(workdir: str, sweeps: Mapping[str, tuple[np.ndarray, np.ndarray]], m: int,
                theory: Mapping[str, Sequence[float]]) -> None:
  """``del_no_sweeps.png``: per sweep kind, the learned top order (mean +- s.e. over seeds,
  ``sweeps[kind] = (values_V, top_VxSeeds)``), the PDE order m and the closed form beta*."""
  fig, axes = plotting.subplots(1, len(sweeps), figsize=(4.2 * len(sweeps), 3.4), squeeze=False)
  for ax, (kind, (vals, top)) in zip(axes[0], sweeps.items()):
    ax.errorbar(vals, top.mean(1), yerr=top.std(1) / np.sqrt(top.shape[1]), marker="o",
                label="learned top order")
    ax.axhline(m, color="k", ls=":", label=f"PDE order m={m}")
    if kind in theory:
      ax2 = ax.twinx()
      ax2.plot(vals, theory[kind], "g--", label="closed form beta*")
      ax2.set_ylabel("closed-form beta* (model)", color="g")
    ax.set_xscale("log" if kind == "n" else "linear")
    ax.set_xlabel(SWEEP_LABELS[kind])
    ax.set_ylabel("learned beta")
    ax.legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "del_no_sweeps.png")
