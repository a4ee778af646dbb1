"""The ALFT experiment's figures (all of them; called from ``experiment.run``).

* ``synthetic_rmse_vs_density.png``: held-out RMSE against the observed density at the
  planted rank, per method and tensorly's parafac, for the aligned and control kinds;
* ``synthetic_offset_function.png``: ALFT's recovered offset function ``h(d)`` (seed 0,
  aligned kind, each density) against the planted one-sided response;
* ``kinetic_heldout.png``: held-out RMSE and MAE of every method on Kinetic.
"""

from __future__ import annotations

import numpy as np

from reprojax.experiments import plotting


def write_all(workdir, config, kinds, synth, tl_synth, grid, h_B, kin):
  """Writes the three figures into ``workdir`` (process 0 only).

  Args:
    workdir: output folder.
    config: the run's config.
    kinds: the names of the kinds, in the order of ``grid[:, 0]``.
    synth: ``{method: (rmse (B, n_ranks), mae (B, n_ranks))}`` of the synthetic replicas.
    tl_synth: tensorly's ``(rmse (B,), mae (B,))`` at the planted rank.
    grid: ``(B, 3)`` (kind, seed, density) indices of the replicas.
    h_B: ALFT's offset function per replica at the planted rank, ``(B, K)``.
    kin: ``{method: (rmse, mae)}`` on Kinetic, each ``(n_splits,)``.
  """
  kin_tl_issue = config.kinetic.issue_tensorly_rmse
  dens = np.asarray(config.densities)
  r_idx = list(config.ranks).index(config.synth.rank)
  fig, axes = plotting.subplots(1, 2, figsize=(11, 4), sharey=True)
  for ki, (ax, kind) in enumerate(zip(axes, kinds)):
    for name, (rmse, _) in synth.items():
      vals = [rmse[(grid[:, 0] == ki) & (grid[:, 2] == di), r_idx].mean() for di in range(dens.size)]
      ax.plot(dens, vals, "o-", label=name)
    vals = [tl_synth[0][(grid[:, 0] == ki) & (grid[:, 2] == di)].mean() for di in range(dens.size)]
    ax.plot(dens, vals, "k--", label="tensorly parafac")
    ax.axhline(config.synth.noise_std, color="gray", lw=0.8, ls=":", label="noise std")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("observed density")
    ax.set_title(f"{kind} modes (rank {config.synth.rank})")
  axes[0].set_ylabel("held-out RMSE")
  axes[1].legend(fontsize=8)
  fig.tight_layout()
  plotting.save(fig, workdir, "synthetic_rmse_vs_density.png", dpi=120)

  fig, ax = plotting.subplots(figsize=(6, 3.5))
  c = config.synth
  d = np.arange(-(c.size - 1), c.size)
  planted = np.where(d >= c.onset, c.aligned_scale * np.exp(-(d - c.onset) / c.decay), 0.0)
  ax.plot(d, planted / np.abs(planted).max(), "k-", lw=2, label="planted h(d)")
  for di in range(dens.size):
    sel = np.flatnonzero((grid[:, 0] == 0) & (grid[:, 1] == 0) & (grid[:, 2] == di))[0]
    h = h_B[sel]
    peak = h[np.argmax(np.abs(h))]  # (C, V) -> (-C, -V) leaves the model unchanged: fix the sign
    ax.plot(d, h / (peak + 1e-12), ".-", lw=0.8, label=f"ALFT, {100 * dens[di]:.0f}%")
  ax.set_xlabel("offset d = i_1 - i_0")
  ax.set_ylabel("h(d) / h(peak)")
  ax.legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "synthetic_offset_function.png", dpi=120)

  if not kin:  # the Kinetic part was switched off (config.kinetic.n_init_seeds = 0)
    return
  fig, ax = plotting.subplots(figsize=(7, 3.5))
  names = list(kin)
  x = np.arange(len(names))
  for off, j, label in ((-0.2, 0, "RMSE"), (0.2, 1, "MAE")):  # mean over splits, each split a dot
    vals = [np.atleast_1d(kin[n][j]) for n in names]
    ax.bar(x + off, [v.mean() for v in vals], 0.4, label=label)
    for xi, v in zip(x, vals):
      ax.plot(np.full(v.size, xi + off), v, "k.", ms=3)
  ax.axhline(kin_tl_issue, color="k", ls="--", lw=0.8, label=f"issue's tensorly CP ({kin_tl_issue})")
  ax.set_xticks(x, names, fontsize=8)
  ax.set_ylabel("held-out error")
  n_s = int(config.kinetic.n_splits)
  seeds = f"split seeds {config.kinetic.split_seed}-{config.kinetic.split_seed + n_s - 1}"
  ax.set_title(f"Kinetic, rank {config.kinetic.rank}, 20% held out ({n_s} splits, {seeds}; "
               "dots: each split)", fontsize=9)
  ax.legend(fontsize=8)
  fig.tight_layout()
  plotting.save(fig, workdir, "kinetic_heldout.png", dpi=120)
