"""The tail_sched experiment's figures (called from ``experiment.run``).

* ``p99_ttlt_vs_gamma.png``: per trace, at its headline load, P99 TTLT of the
  gamma-Boost variants against gamma, with FCFS, SRPT and SJF (perfect lengths) as lines;
* ``p99_ttlt_vs_load.png``: per trace, P99 TTLT against load for FCFS, SRPT and the
  prediction-free gamma-Boost on the remaining service at its best gamma (in sample),
  one line style per preemption mode.
"""

from __future__ import annotations

from reprojax.experiments import plotting

_STYLE = {"priority": ":", "cache_aware": "-", "running_first": "--"}


def _key(trace, mode, policy, gamma, load, stat, swept):
  g = f"{gamma:g}" if policy in swept else "-"
  return f"{trace}/{mode}/{policy}/{g}/{load:g}/base/{stat}"


def write_all(workdir, config, metrics,
              swept=("gamma_boost", "gamma_boost_attained", "gamma_boost_remaining")):
  """Writes both figures into ``workdir`` (process 0 only)."""
  m = metrics
  traces = tuple(config.traces)
  mode = "cache_aware" if "cache_aware" in config.modes else config.modes[0]
  fig, axes = plotting.subplots(1, len(traces), figsize=(5.5 * len(traces), 4))
  axes = list(axes) if len(traces) > 1 else [axes]
  for ax, tr in zip(axes, traces):
    load = m[f"{tr}/{mode}/headline_load"]
    for p in swept:
      if p in config.policies:
        ax.plot(config.gammas, [m[_key(tr, mode, p, g, load, "ttlt_p99", swept)]
                                for g in config.gammas], "o-", label=p)
    for p, c in (("fcfs", "k"), ("srpt", "r"), ("sjf_perfect", "g")):
      if p in config.policies:
        ax.axhline(m[_key(tr, mode, p, 0, load, "ttlt_p99", swept)], color=c, ls="--", label=p,
                   lw=4 if p == "fcfs" else 1.5, alpha=0.5 if p == "fcfs" else 1.0)
    ax.set(xscale="log", yscale="log", xlabel="gamma (1/s of service)", ylabel="P99 TTLT (s)",
           title=f"{tr}, load {load:g}, {mode}")
    ax.legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "p99_ttlt_vs_gamma.png")

  fig, axes = plotting.subplots(1, len(traces), figsize=(5.5 * len(traces), 4))
  axes = list(axes) if len(traces) > 1 else [axes]
  for ax, tr in zip(axes, traces):
    loads = list(config.loads[tr])
    for md in config.modes:
      for p, c in (("fcfs", "k"), ("srpt", "r"), ("gamma_boost_remaining", "b")):
        if p not in config.policies or (md != mode and p in config.claims_mode_only):
          continue
        if p in swept:
          ys = [min(m[_key(tr, md, p, g, l, "ttlt_p99", swept)] for g in config.gammas)
                for l in loads]
        else:
          ys = [m[_key(tr, md, p, 0, l, "ttlt_p99", swept)] for l in loads]
        wide = dict(lw=5, alpha=0.35) if p == "fcfs" else {}  # visible under an equal line
        ax.plot(loads, ys, color=c, ls=_STYLE.get(md, "-"), marker="o", label=f"{p} ({md})",
                **wide)
    ax.set(yscale="log", xlabel="load factor", ylabel="P99 TTLT (s)", title=tr)
    ax.legend(fontsize=6)
  fig.tight_layout()
  plotting.save(fig, workdir, "p99_ttlt_vs_load.png")
