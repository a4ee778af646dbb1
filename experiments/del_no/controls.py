r"""Controls for del-NO's FNO cells: why does the FNO fit worse with derivative channels?

    python -m reprojax.experiments.del_no.controls [--pdes=heat,burgers] [--variants=backbone,delno,...]
    python -m reprojax.experiments.del_no.controls --fno_size=paper --pdes=heat,burgers \
        --variants=backbone,delno,zero_channels
    python -m reprojax.experiments.del_no.controls --render_only [--fno_size=paper]
    python -m reprojax.experiments.del_no.controls --noisy --noise_protocol=authors \
        --variants=backbone,delno,zero_channels      # the noisy cells under the authors' noise

At the medium CPU scale (``configs/medium_cpu.py``: 64-point grid, 1000 pairs, 2000
steps) del-NO's FNO has a *higher training loss* than the plain FNO on heat and Burgers
(experiments/del_no/README.md). This trains, on the clean cells of the 1-D PDEs with the
medium config's data, seeds and schedule, the FNO (the medium config's, or with
``--fno_size=paper`` the full config's width 64, 4 layers, 16 modes) under six variants:

* ``backbone``: the plain FNO, input (u, x);
* ``delno``: del-NO as built, input (u, s_k D^{beta_k} u (GL, 16 taps), x);
* ``zero_channels``: the plain FNO fed K all-zero channels beside u, so its lifting has
  del-NO's fan-in (and LeCun init scale) but sees no derivative: the parameter and
  initialisation control;
* ``frozen_orders``: del-NO with the orders fixed at their initial integers (order
  learning rate 0): is order learning what hurts?
* ``spectral``: del-NO with the spectral (Fourier multiplier) derivative in place of GL:
  is it GL's O(h) high-frequency error?
* ``zero_scale``: del-NO with the scales s_k starting at 0, so it starts as the
  ``zero_channels`` control and the channels enter only as far as training pulls s_k
  from 0 (added after the first five had run; declared before its own run).

The hypotheses and what each outcome would mean are declared in the README ("Controls:
the FNO cells" and "At the paper's FNO size"), each written before its run. Writes a
JSON (controls.json, controls_paper_fno.json) and the README table between the matching
markers.
"""

from __future__ import annotations

import json
import os
import time

from absl import app
from absl import flags
import numpy as np

from reprojax.data import del_no_pdes
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.del_no import authors
from reprojax.experiments.del_no import programs
from reprojax.experiments.del_no.configs import medium_cpu
from reprojax.models import del_no

_HERE = os.path.dirname(os.path.abspath(__file__))
_OUT = flags.DEFINE_string("json_out", None,
                           "JSON output path (default controls.json, or controls_paper_fno.json).")
_README = flags.DEFINE_string("readme_table", os.path.join(_HERE, "README.md"),
                              "README whose controls table is replaced ('' to skip).")
_PDES = flags.DEFINE_list("pdes", ["advection", "heat", "burgers", "kdv"], "1-D PDEs to run.")
_SIZE = flags.DEFINE_enum("fno_size", "medium", ["medium", "paper"],
                          "medium: the medium config's FNO (width 24, 2 layers, 12 modes); paper: "
                          "the full config's (width 64, 4 layers, 16 modes), same data and steps.")
_VARIANTS = flags.DEFINE_list("variants", None, "Variants to train (default: all).")
_NOISY = flags.DEFINE_bool("noisy", False,
                           "Train on the noisy cells (the medium config's noise_sigma) instead of "
                           "the clean ones.")
_PROTOCOL = flags.DEFINE_enum("noise_protocol", "ours", list(programs.NOISE_PROTOCOLS),
                              "With --noisy: ours (train and test inputs, per sample) or the "
                              "authors' (training inputs only, one global std).")
_RENDER = flags.DEFINE_bool("render_only", False,
                            "Rewrite the README table from --json_out's JSON without training.")
VARIANTS = ("backbone", "delno", "zero_channels", "frozen_orders", "spectral", "zero_scale")
DERIVATIVE_VARIANTS = ("delno", "frozen_orders", "spectral", "zero_scale")


ZeroChannels = del_no.ZeroChannels  # the twin control (models/del_no.py)


def make_variant(variant: str, config, m: int):
  """(model, optimizer) of one variant for a 1-D periodic PDE of order m."""
  net = programs.make_backbone("fno", config.backbones, 1, True)
  sched = programs.schedule(config)
  orders = programs.initial_orders(m)
  if variant == "backbone":
    return programs.make_model("fno", config, m, False)
  if variant == "zero_channels":
    return ZeroChannels(net, len(orders)), programs.make_model("fno", config, m, False)[1]
  method = "spectral" if variant == "spectral" else "gl"
  model = del_no.DelNO(net, orders=orders, gl_terms=config.gl_terms, method=method,
                       init_scale=0.0 if variant == "zero_scale" else 1.0)
  mult = 0.0 if variant == "frozen_orders" else config.order_lr_multiplier
  return model, del_no.optimizer(sched, mult, config.weight_decay)


def run_variant(config, variant, pde, inputs, mesh, sigma: float = 0.0):
  """One variant on one PDE's cell (clean, or noisy at ``sigma`` under the config's noise
  protocol, the grid's draw of the noise), ``num_seeds`` seeds as one vmapped run."""
  alpha0 = float(del_no_pdes.GRF_DEFAULT[2])
  reps = [programs.Replica(pde, alpha0, sigma, config.n_train, int(config.seed + s))
          for s in range(config.num_seeds)]
  split, _, y_norm = inputs.dataset(pde, alpha0)
  x_train, x_test = inputs.inputs(pde, alpha0, sigma)
  model, opt = make_variant(variant, config, del_no_pdes.PDE_ORDER[pde])
  r = len(reps)
  out = programs.train_replicas(
      model, opt, np.stack([x_train] * r), np.stack([split.y_train] * r),
      np.asarray([x.n for x in reps]), np.asarray([x.seed for x in reps]), y_norm,
      config.steps, config.batch_size, mesh, np.stack([x_test] * r), np.stack([split.y_test] * r))
  tail = out.losses_TxR[-max(1, config.steps // 10):].mean(0)
  rec = dict(err=[float(e.mean()) for e in out.test_RxM], loss=[float(v) for v in tail],
             step_ms=1e3 * out.step_s / r)
  if variant in DERIVATIVE_VARIANTS:
    rec["orders"] = np.asarray(del_no.learned_orders(out.params)["beta"]).mean(0).tolist()
  return rec


_ms = programs.mean_se


def _worse(a, b) -> bool:
  """a's mean train loss above b's by more than the larger of their s.e. over seeds."""
  (ma, sa), (mb, sb) = _ms(a), _ms(b)
  return ma - mb > max(sa, sb)


def _variants(res) -> list[str]:
  """The variants present in ``res`` (every PDE runs the same ones), in VARIANTS order."""
  have = set.intersection(*(set(by) for by in res.values()))
  return [v for v in VARIANTS if v in have]


def verdicts(res) -> dict:
  """The declared readings (README, "Controls: the FNO cells") over the PDEs where del-NO trains worse.

  A reading whose variant was not run is left out.
  """
  have = _variants(res)
  loss = {p: {v: by[v]["loss"] for v in have} for p, by in res.items()}
  mean = {p: {v: _ms(x)[0] for v, x in by.items()} for p, by in loss.items()}
  worse = [p for p in loss if _worse(loss[p]["delno"], loss[p]["backbone"])]
  excess = {p: mean[p]["delno"] - mean[p]["backbone"] for p in worse}
  tests = {
      "fan_in": ("zero_channels",
                 lambda p: abs(mean[p]["zero_channels"] - mean[p]["delno"]) <= 0.25 * excess[p]),
      "order_learning": ("frozen_orders", lambda p: mean[p]["frozen_orders"] < mean[p]["delno"]),
      "gl_error": ("spectral", lambda p: mean[p]["spectral"] < mean[p]["delno"]),
      "start_away": ("zero_scale",
                     lambda p: not _worse(loss[p]["zero_scale"], loss[p]["backbone"])),
  }
  per = {k: [p for p in worse if f(p)] for k, (v, f) in tests.items() if v in have}
  most = lambda ps: len(ps) > len(worse) / 2  # noqa: E731
  out = {"delno_trains_worse": worse}
  for k, ps in per.items():
    out[k] = dict(pdes=ps, holds=bool(worse) and most(ps))
  out["none_holds"] = not any(v["holds"] for k, v in out.items() if k in per)
  return out


def paired_ratios(res) -> dict:
  """Test error of each derivative variant over ``zero_channels``, seed by seed.

  Those variants and ``zero_channels`` hold the backbone at the same module path, so a
  seed gives them the same backbone initialisation (tested) and the same minibatches:
  the ratio isolates what the derivative channels do. Added after the runs (post hoc).
  Returns ``{pde: {variant: (geometric mean, per-seed ratios)}}``.
  """
  out = {}
  for pde, by in res.items():
    if "zero_channels" not in by:
      continue
    z = np.asarray(by["zero_channels"]["err"])
    out[pde] = {}
    for v in DERIVATIVE_VARIANTS:
      if v in by:
        r = np.asarray(by[v]["err"]) / z
        out[pde][v] = (float(np.exp(np.mean(np.log(r)))), [float(x) for x in r])
  return out


def twin_readings(res) -> dict:
  """Per PDE: del-NO against its zero-channel twin and against the plain FNO, and the twin
  against the FNO (the init effect): the paired log test-error ratio over seeds (mean, s.e.)
  and the reading declared for the authors' runs (``authors.reading``: helps / ties / hurts
  at 2 s.e.). A del-NO win over the FNO that does not help against the twin is an init
  effect (declared in the README before the noisy runs)."""
  out = {}
  for pde, by in res.items():
    v = {}
    for a, b in (("delno", "zero_channels"), ("delno", "backbone"), ("zero_channels", "backbone")):
      if a in by and b in by:
        m, se = authors.paired(by[a]["err"], by[b]["err"])
        v[f"{a}_vs_{b}"] = dict(log_ratio=m, se=se, reading=authors.reading(m, se))
    if "delno_vs_backbone" in v and "delno_vs_zero_channels" in v:
      won = v["delno_vs_backbone"]["reading"] == "helps"
      twin = v["delno_vs_zero_channels"]["reading"]
      v["win"] = ("no win" if not won else "derivative" if twin == "helps" else
                  "init (ties or loses to its twin)")
    out[pde] = v
  return out


def table(res, with_twins: bool = False) -> str:
  have = _variants(res)
  head = ("| PDE | " + " | ".join(have) + " |\n|---|" + "---|" * len(have))
  rows = []
  for pde, by in res.items():
    cells = []
    for v in have:
      e, se = _ms(by[v]["err"])
      lo, _ = _ms(by[v]["loss"])
      cells.append(f"{e:.4f} +- {se:.4f} (train {lo:.4f})")
    rows.append(f"| {pde} | " + " | ".join(cells) + " |")
  orders = "; ".join(
      f"{pde}: " + ", ".join(f"{v} " + "/".join(f"{o:.2f}" for o in by[v]["orders"])
                             for v in ("delno", "spectral", "zero_scale") if v in have)
      for pde, by in res.items())
  v = verdicts(res)
  lines = ["", f"Learned orders (mean of seeds): {orders}.", "",
           "del-NO trains worse than the FNO (by more than the larger s.e.) on: "
           + (", ".join(v["delno_trains_worse"]) or "none") + "."]
  names = {"fan_in": "initialisation / fan-in (`zero_channels` as bad as `delno`)",
           "order_learning": "order learning (`frozen_orders` trains better)",
           "gl_error": "GL's high-frequency error (`spectral` trains better)",
           "start_away": "the start away from the backbone (`zero_scale` trains no worse than it)"}
  for k, name in names.items():
    if k not in v:
      continue
    if not v["delno_trains_worse"]:
      lines.append(f"* {name}: not applicable (nothing to explain)")
      continue
    ps = v[k]["pdes"]
    lines.append(f"* {name}: {'holds' if v[k]['holds'] else 'refuted'} "
                 f"(true on {len(ps)} of {len(v['delno_trains_worse'])}"
                 + (f": {', '.join(ps)})" if ps else ")"))
  pr = paired_ratios(res)
  if pr:
    lines += ["", "Post hoc (not declared): test error over `zero_channels` with the same backbone "
              "init and minibatches, geometric mean over seeds (per seed):", ""]
    for pde, by in pr.items():
      lines.append(f"* {pde}: " + "; ".join(
          f"{v} {g:.3f} ({', '.join(f'{x:.2f}' for x in r)})" for v, (g, r) in by.items()))
  if with_twins:
    lines += ["", "Paired over seeds, log of the test-error ratio (mean +- s.e.; readings declared "
              "before the run: helps / ties / hurts at 2 s.e.):", ""]
    for pde, v in twin_readings(res).items():
      parts = [f"{k} {d['log_ratio']:+.3f} +- {d['se']:.3f} ({d['reading']})"
               for k, d in v.items() if k != "win"]
      lines.append(f"* {pde}: " + "; ".join(parts) + (f"; win: {v['win']}" if "win" in v else ""))
  return "\n".join([head] + rows + lines)


def _marker() -> str:
  """The README markers and JSON name of a run: controls, controls_paper_fno, and with
  --noisy a suffix naming the noise protocol (controls_noisy_authors, ...)."""
  name = "controls" if _SIZE.value == "medium" else "controls_paper_fno"
  return f"{name}_noisy_{_PROTOCOL.value}" if _NOISY.value else name


def _json_path() -> str:
  return _OUT.value or os.path.join(_HERE, f"{_marker()}.json")


def main(argv):
  del argv
  marker = _marker()
  if _RENDER.value:
    with open(_json_path()) as f:
      out = json.load(f)
    out["verdicts"] = verdicts(out["results"])
    with open(_json_path(), "w") as f:
      json.dump(out, f, indent=1)
    _write_readme(table(out["results"], bool(out.get("sigma")))
                  + f"\n\nWall {out['wall_s']:.0f} s, CPU {out['cpu_s']:.0f} s.", marker)
    return
  config = medium_cpu.get_config()
  config.pdes = tuple(_PDES.value)
  config.noise_protocol = _PROTOCOL.value
  sigma = float(config.noise_sigma) if _NOISY.value else 0.0
  if _SIZE.value == "paper":
    config.backbones.fno_width, config.backbones.fno_depth, config.backbones.fno_modes = 64, 4, 16
  variants = _VARIANTS.value or list(VARIANTS)
  unknown = sorted(set(variants) - set(VARIANTS))
  if unknown or not {"backbone", "delno"} <= set(variants):
    raise ValueError(f"--variants must include backbone and delno and name only {VARIANTS}; "
                     f"got {variants}")
  mesh = sharding.config_mesh(config)
  inputs = programs.Inputs(config)
  t0, c0 = time.perf_counter(), time.process_time()
  res = {pde: {v: run_variant(config, v, pde, inputs, mesh, sigma) for v in variants}
         for pde in config.pdes}
  out = dict(results=res, wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
             steps=config.steps, n_train=config.n_train, seeds=config.num_seeds, sigma=sigma,
             noise_protocol=config.noise_protocol if sigma else None,
             fno=dict(width=config.backbones.fno_width, depth=config.backbones.fno_depth,
                      modes=config.backbones.fno_modes))
  out["verdicts"] = verdicts(res)
  with open(_json_path(), "w") as f:
    json.dump(out, f, indent=1)
  _write_readme(table(res, sigma > 0) + f"\n\nWall {out['wall_s']:.0f} s, CPU {out['cpu_s']:.0f} s.",
                marker)


def _write_readme(text: str, marker: str):
  print(text)
  if _README.value:
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    results.replace_between(_README.value, begin, end, f"{begin}\n{text}\n{end}")


if __name__ == "__main__":
  app.run(main)
