"""The comparison-oracle experiment's figure (all of it; called from ``experiment.run``).

``query_scaling.png``, four panels: queries to an eps-stationary point against the
dimension n (ours, the quantum simulation, the baseline and CMA-ES where run, with
the fitted log-log slopes and n^2 / n guides); against eps at n = ``n_eps``; the
Hessian estimator's queries / n^2 against log(1/delta); and the queries on the
hard chain of Carmon et al. against eps, with the worst-case exponents.
"""

from __future__ import annotations

import math

import numpy as np

from reprojax.experiments import plotting


def write_all(workdir, config, m, *, grids, fits, eps_grid, eps_meds, cross, hard, hq,
              have_cma):
  """Writes ``query_scaling.png`` into ``workdir`` (process 0 only).

  Args:
    workdir: output folder.
    config: the run's config.
    m: the metrics.
    grids: ``{method: dimensions}`` of the n-scaling.
    fits: ``{(method, "n" | "eps" | "hard"): (slope, ci95, intercept)}`` of the log-log fits.
    eps_grid: the targets of the eps-scaling; eps_meds: ``{method: median queries per eps}``.
    cross: the crossover eps (NaN when none).
    hard: ``{method: (T_B, eps_B, queries_B, steps_B, reached_B)}`` on the hard chain.
    hq: ``{(n, delta): Hessian-estimator queries}``.
    have_cma: whether the CMA-ES comparison ran.
  """
  fig, ax = plotting.subplots(1, 4, figsize=(21, 4.6))
  for name, color in (("ours", "C0"), ("quantum_sim", "C2")):
    ns = np.asarray(grids[name], float)
    meds = [m[f"{name}_queries_n{n}"] for n in grids[name]]
    s, ci, c0 = fits[(name, "n")]
    ax[0].loglog(ns, meds, "o", color=color)
    ax[0].loglog(ns, np.exp(c0) * ns ** s, "-", color=color,
                 label=f"{name}: slope {s:.2f} ± {ci:.2f}")
  if ("zhang_li", "n") in fits:
    ns = np.asarray(config.n_grid, float)
    s, ci, c0 = fits[("zhang_li", "n")]
    ax[0].loglog(ns, [m[f"zhang_li_queries_n{n}"] for n in config.n_grid], "o", color="C1")
    ax[0].loglog(ns, np.exp(c0) * ns ** s, "-", color="C1",
                 label=f"zhang_li: slope {s:.2f} ± {ci:.2f}")
  if have_cma and config.cma_n_grid:
    ax[0].loglog(np.asarray(config.cma_n_grid, float),
                 [m[f"cma_comparisons_n{n}"] for n in config.cma_n_grid], "s--", color="C3",
                 label="CMA-ES (sorting comparisons)")
  ns = np.asarray(config.n_grid, float)
  ax[0].loglog(ns, m["ours_queries_n%d" % config.n_grid[0]] * (ns / ns[0]) ** 2, ":",
               color="gray", label="n^2 / n^1 guides")
  nq = np.asarray(config.n_grid_quantum, float)
  ax[0].loglog(nq, m["quantum_sim_queries_n%d" % config.n_grid_quantum[0]] * (nq / nq[0]), ":",
               color="gray")
  ax[0].set(xlabel="n", ylabel="queries to ||grad f|| <= eps", title=f"eps = {config.eps_n:g}")
  ax[0].legend(fontsize=8)
  for name, color in (("ours", "C0"), ("quantum_sim", "C2"), ("zhang_li", "C1")):
    if (name, "eps") not in fits:
      continue
    s, ci, c0 = fits[(name, "eps")]
    ax[1].loglog(eps_grid, eps_meds[name], "o", color=color)
    ax[1].loglog(eps_grid, np.exp(c0) * eps_grid ** s, "-", color=color,
                 label=f"{name}: slope {s:.2f} ± {ci:.2f}")
  ce = np.asarray(config.cma_eps, float)
  if have_cma and config.cma_n == config.n_eps:
    ax[1].loglog(ce, [m[f"cma_comparisons_eps{e:g}"] for e in config.cma_eps], "s--",
                 color="C3", label="CMA-ES (sorting comparisons)")
  if np.isfinite(cross):
    ax[1].axvline(cross, color="gray", ls=":", label=f"crossover eps ~ {cross:.2g}")
  ax[1].set(xlabel="eps", ylabel="queries", title=f"n = {config.n_eps}")
  ax[1].invert_xaxis()
  ax[1].legend(fontsize=8)
  for name, color, p in (("ours", "C0", 1.5), ("zhang_li", "C1", 2.0)):
    T_B, e_B, q, _, ok = hard[name]
    s, ci, c0 = fits[(name, "hard")]
    es = np.unique(e_B)
    ax[3].loglog(e_B[ok], q[ok], "o", color=color, alpha=0.6)
    ax[3].loglog(es, np.exp(c0) * es ** s, "-", color=color,
                 label=f"{name}: slope {s:.2f} ± {ci:.2f} (bound -{p:g})")
  ax[3].set(xlabel="eps", ylabel="queries",
            title=f"hard chain (Carmon et al.), n = {config.hard_n}, T = {list(config.hard_links)}")
  ax[3].invert_xaxis()
  ax[3].legend(fontsize=8)
  for n in config.hess_n_grid:
    ds = [d for d in config.hess_deltas if np.isfinite(hq[(n, d)])]
    ax[2].plot([math.log(1 / d) for d in ds], [hq[(n, d)] / n ** 2 for d in ds], "o-",
               label=f"n = {n}")
  ax[2].set(xlabel="log(1/delta)", ylabel="Hessian queries / n^2",
            title=f"Hessian estimator: R^2 = {m['hessian_log_delta_r2']:.3f}")
  ax[2].legend(fontsize=8)
  fig.tight_layout()
  plotting.save(fig, workdir, "query_scaling.png", dpi=110)
