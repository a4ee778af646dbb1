r"""Channel-scale ablation of del-NO: channels as built (s_k D^beta u, s_k = 1) vs unit-RMS channels.

    python -m reprojax.experiments.del_no.ablation [--out=experiments/del_no/ablation.json] [--readme=...]

Runs the quick config's 1-D cells (Burgers, KdV x FNO, DeepONet x clean/noisy; its
seeds, data and 200 steps) and the alpha (spectral-content) sweep with
``channel_norm="none"`` (the default) and ``"rms"`` (a fixed 1/RMS factor per channel,
see :func:`reprojax.experiments.del_no.programs.channel_gains`). The plain backbones are
trained once. Each alpha of the sweep trains as its own group, so under ``"rms"`` it
gets the channel constants of its own input law. Writes a JSON and replaces the
table between the ablation markers of the README. About 3-4 minutes of CPU on 2 cores.
The hypothesis and the criteria are declared in the README ("Ablation: channel scale").
"""

from __future__ import annotations

import json
import os
import re
import time

from absl import app
from absl import flags
import numpy as np
from scipy import stats

from reprojax.data import del_no_pdes
from reprojax.experiments import sharding
from reprojax.experiments.del_no import claims
from reprojax.experiments.del_no import programs
from reprojax.experiments.del_no.configs import quick

_HERE = os.path.dirname(os.path.abspath(__file__))
_OUT = flags.DEFINE_string("out", os.path.join(_HERE, "ablation.json"), "JSON output path.")
_README = flags.DEFINE_string("readme", os.path.join(_HERE, "README.md"),
                              "README whose ablation table is replaced ('' to skip).")
MODES = ("none", "rms")


def ablation_config():
  """The quick config restricted to its 1-D PDEs (no Darcy), no sigma/n sweeps."""
  c = quick.get_config()
  c.pdes = tuple(p for p in c.pdes if p != "darcy")
  c.sweep_sigmas, c.sweep_ns = (), ()
  return c


def _cells(config, per_replica):
  alpha0 = float(del_no_pdes.GRF_DEFAULT[2])
  out = []
  for pde in config.pdes:
    for bb in claims.backbones_of(config, pde):
      kb, kd = programs.model_key(bb, pde, False), programs.model_key(bb, pde, True)
      for cname, sigma in claims.conditions(config):
        reps = [programs.Replica(pde, alpha0, sigma, config.n_train, int(config.seed + s))
                for s in range(config.num_seeds)]
        base = [per_replica[(kb, r)]["err"] for r in reps]
        base_loss = float(np.mean([per_replica[(kb, r)]["loss"] for r in reps]))
        dn = [per_replica[(kd, r)] for r in reps]
        b, bse = programs.mean_se(base)
        d, dse = programs.mean_se([x["err"] for x in dn])
        out.append(dict(cell=f"{pde} {bb} {cname}", m=del_no_pdes.PDE_ORDER[pde], base=b,
                        base_se=bse, delno=d, delno_se=dse, win=bool(d < b),
                        within_noise=bool(abs(d - b) < max(bse, dse)), base_loss=base_loss,
                        delno_loss=float(np.mean([x["loss"] for x in dn])),
                        orders=[float(v) for v in np.mean([x["orders"] for x in dn], 0)]))
  return out


def run_mode(config, mode, inputs, mesh, base_results):
  """del-NO (and, first time, the plain backbones) on the cells and the alpha sweep under one mode."""
  config = config.copy_and_resolve_references()
  config.channel_norm = mode
  grid_config = config.copy_and_resolve_references()
  grid_config.sweep_num_seeds = 0  # the alpha sweep trains below, one group per alpha
  grid = programs.requests(grid_config)
  if base_results is not None:
    grid = {k: v for k, v in grid.items() if k.orders}
  t0 = time.process_time()
  per_replica, _ = programs.train_groups(config, grid, inputs, mesh)
  if base_results is not None:
    per_replica.update(base_results)
  key = programs.model_key(config.sweep_backbone, config.sweep_pde, True)
  tops, gains = [], {}
  for alpha in config.sweep_alphas:
    reps = [programs.Replica(config.sweep_pde, float(alpha), float(config.sweep_sigma), config.n_train,
                       int(config.seed + s)) for s in range(config.sweep_num_seeds)]
    res, _ = programs.train_groups(config, {key: reps}, inputs, mesh)
    tops.append([res[(key, r)]["top"] for r in reps])
    x = inputs.inputs(config.sweep_pde, float(alpha), 0.0)[0]
    gains[f"{config.sweep_pde} alpha {alpha:g}"] = programs.channel_gains(
        x[:256], key.orders, 1, config.gl_terms, "periodic")
  for pde in config.pdes:
    if pde != config.sweep_pde:
      x = inputs.inputs(pde, float(del_no_pdes.GRF_DEFAULT[2]), 0.0)[0]
      gains[f"{pde} alpha {float(del_no_pdes.GRF_DEFAULT[2]):g}"] = programs.channel_gains(
          x[:256], programs.model_key("fno", pde, True).orders, 1, config.gl_terms, "periodic")
  cells = _cells(config, per_replica)
  top = np.mean(tops, 1)
  ratio = float(np.exp(np.mean([np.log(c["delno"] / c["base"]) for c in cells])))
  return dict(
      mode=mode, cells=cells, wins=int(sum(c["win"] for c in cells)), n_cells=len(cells),
      geo_mean_ratio=ratio,
      alpha=[float(a) for a in config.sweep_alphas], alpha_top=[float(t) for t in top],
      alpha_top_se=[float(np.std(t, ddof=1) / np.sqrt(len(t))) for t in tops],
      alpha_spearman=float(stats.spearmanr(config.sweep_alphas, top).statistic),
      channel_rms_at_init={a: [1.0 / g for g in v] for a, v in gains.items()},
      cpu_s=time.process_time() - t0), per_replica


def verdict(none, rms) -> str:
  wins_up = rms["wins"] >= 5 and rms["geo_mean_ratio"] < none["geo_mean_ratio"]
  trend_gone = rms["alpha_spearman"] >= 0
  if wins_up and trend_gone:
    return "supported"
  if (rms["wins"] <= 3 and rms["geo_mean_ratio"] >= none["geo_mean_ratio"]
      and rms["alpha_spearman"] <= -1 + 1e-9):
    return "refuted"
  return "mixed / not settled"


def table(none, rms) -> str:
  lines = ["| cell | backbone | del-NO, as built | del-NO, unit channels | orders as built | "
           "orders unit | train loss base / built / unit |", "|---|---|---|---|---|---|---|"]
  for a, b in zip(none["cells"], rms["cells"]):
    def fmt(c, k):
      bold = c["win"] if k == "delno" else False
      s = f"{c[k]:.4f} +- {c[k + '_se']:.4f}"
      return f"**{s}**" if bold else s
    lines.append(f"| {a['cell']} | {a['base']:.4f} +- {a['base_se']:.4f} | {fmt(a, 'delno')} | "
                 f"{fmt(b, 'delno')} | {', '.join(f'{o:.2f}' for o in a['orders'])} | "
                 f"{', '.join(f'{o:.2f}' for o in b['orders'])} | {a['base_loss']:.3f} / "
                 f"{a['delno_loss']:.3f} / {b['delno_loss']:.3f} |")
  lines += ["", "| | as built (`none`) | unit channels (`rms`) |", "|---|---|---|"]
  for name, f in (("wins / cells", lambda r: f"{r['wins']}/{r['n_cells']}"),
                  ("geo-mean del-NO / backbone", lambda r: f"{r['geo_mean_ratio']:.3f}"),
                  ("alpha sweep top order at alpha " + ", ".join(f"{a:g}" for a in none["alpha"]),
                   lambda r: ", ".join(f"{t:.2f} +- {s:.2f}" for t, s in
                                       zip(r["alpha_top"], r["alpha_top_se"]))),
                  ("Spearman(alpha, top order)", lambda r: f"{r['alpha_spearman']:+.2f}"),
                  ("CPU s (this mode's runs)", lambda r: f"{r['cpu_s']:.0f}")):
    lines.append(f"| {name} | {f(none)} | {f(rms)} |")
  rms0 = none["channel_rms_at_init"]
  lines += ["", "Channel RMS at init as built (s_k = 1, initial orders, clean training inputs; the "
            "encoded input has RMS ~1): "
            + "; ".join(f"{a}: {', '.join(f'{v:.3g}' for v in vs)}" for a, vs in rms0.items())
            + ". Under `rms` they are 1 by construction.",
            "", f"Verdict by the declared criteria: **{verdict(none, rms)}**."]
  return "\n".join(lines)


def main(argv):
  del argv
  config = ablation_config()
  mesh = sharding.config_mesh(config)
  inputs = programs.Inputs(config)
  none, per_replica = run_mode(config, "none", inputs, mesh, None)
  base = {k: v for k, v in per_replica.items() if not k[0].orders}
  rms, _ = run_mode(config, "rms", inputs, mesh, base)
  out = dict(none=none, rms=rms, verdict=verdict(none, rms))
  with open(_OUT.value, "w") as f:
    json.dump(out, f, indent=1)
  text = table(none, rms)
  print(text)
  if _README.value:
    with open(_README.value) as f:
      readme = f.read()
    new = re.sub(r"(<!-- ablation:begin -->\n).*?(\n<!-- ablation:end -->)",
                 lambda m: m.group(1) + text + m.group(2), readme, flags=re.S)
    with open(_README.value, "w") as f:
      f.write(new)


if __name__ == "__main__":
  app.run(main)
