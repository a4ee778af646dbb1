r"""del-NO against the authors' own construction (issue 31): their variant, zero-channel twins, the init effect.

    python -m reprojax.experiments.del_no.authors                 # the CPU runs (README, "Against the authors' construction")
    python -m reprojax.experiments.del_no.authors --render_only   # rewrite the README table from authors.json
    python -m reprojax.experiments.del_no.authors --modes_sweep=8,16,32,64,128   # the Fourier-modes (k) sweep
    bash experiments/del_no/authors_gpu.sh                        # the authors' Burgers protocol at 1024 points (a lent GPU)

Every run trains the full config's FNO size (width 64, 4 layers, 16 modes) on 1-D
Burgers (the released law: nu = 1e-3, zero-mean GRF(49, 7, 2.5), as the FNO fidelity fix)
and heat, each clean and with the authors' noise (training inputs only, one global std,
test inputs clean), under seven variants:

* ``authors``: the authors' notebooks 2/3 construction: the centred GL stencil (16 taps,
  circular), orders ``exp(gamma)`` from 1 and 2, scales ``relu(s)`` from 1, raw inputs
  and outputs, PyTorch's default initialisation (``layer_init="torch"``), AdamW (weight
  decay 1e-5 on the network) with one-cycle rates per group (1e-3, and 1e-2 for orders and
  scales), cycled momentum and gradient clipping at 1 (:func:`models.del_no.authors_optimizer`);
* ``fno_torch_zero``: its zero-channel twin (the same network, initialisation and
  minibatches seed by seed, with the derivative channels replaced by zeros), which is also
  the FNO fed K = 2 zero channels under the authors' protocol; beside ``fno_torch``, the
  plain FNO under that protocol (both 5 seeds), it gives the size of the initialisation
  effect (the lifting's fan-in sets its PyTorch init bound, 1/sqrt(fan_in)) that a
  derivative win must exceed;
* ``ours``: del-NO as this repository builds it (one-sided GL, clipped orders, linear
  scales, scalar-normalised inputs and pointwise-normalised outputs, Flax init, Adam with
  10x on the orders and cosine decay); ``ours_zero`` its twin; ``ours_plain`` our FNO.

The readings, declared before the runs (README): a variant *helps* when its test error is
below its zero-channel twin's by more than two paired standard errors of the log ratio
over seeds, *hurts* when above by as much, and otherwise *ties*; a variant's win over its
protocol's plain FNO that ties its twin is an initialisation effect, not a derivative one.
Every run logs its final orders and scales: dead channels (relu scale exactly 0) and
orders above m = 2 are counted per run.
"""

from __future__ import annotations

import json
import os
import time
from typing import NamedTuple

from absl import app
from absl import flags
import flax.linen as nn
import jax
import numpy as np
import optax

from reprojax.data import del_no_pdes
from reprojax.data import pde as pde_data
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.common import Normalizer
from reprojax.experiments.del_no import programs
from reprojax.experiments.del_no.configs import full
from reprojax.models import del_no

_HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = flags.FLAGS


def define_flags():
  """The launcher's flags, defined when run as a program (importing defines none, so this
  module's functions can be imported beside controls.py, whose flags share names)."""
  flags.DEFINE_string("json_out", os.path.join(_HERE, "authors.json"), "JSON output path.")
  flags.DEFINE_string("readme_table", os.path.join(_HERE, "README.md"),
                      "README whose authors table is replaced ('' to skip).")
  flags.DEFINE_list("pdes", ["burgers", "heat"], "1-D PDEs (burgers: the released law).")
  flags.DEFINE_list("conditions", ["clean", "noisy"], "clean and/or noisy.")
  flags.DEFINE_list("variants", None, "Variants to train (default: all).")
  flags.DEFINE_integer("steps", 2000, "optimizer steps per run (the authors': 62,500).")
  flags.DEFINE_integer("batch_size", 8, "minibatch (the authors': 8).")
  flags.DEFINE_integer("resolution", 256, "grid points (the authors': 1024).")
  flags.DEFINE_integer("solver_resolution", 1024, "grid of the solves.")
  flags.DEFINE_integer("n_train", 1000, "training pairs (the authors': 1000).")
  flags.DEFINE_integer("n_test", 200, "test pairs (the authors': 200).")
  flags.DEFINE_integer("seeds", 3, "seeds of the del-NO variants and their twins.")
  flags.DEFINE_integer("init_seeds", 5, "seeds of the init-effect pair.")
  flags.DEFINE_float("sigma", 0.05, "the noisy condition's relative noise (global std).")
  flags.DEFINE_bool("render_only", False, "Rewrite the README table from the JSON.")
  flags.DEFINE_list("modes_sweep", [], "Run the Fourier-modes sweep at these FNO modes "
                    "instead of the variants table (the authors' k sweep).")
  flags.DEFINE_string("modes_json_out", os.path.join(_HERE, "authors_modes.json"),
                      "JSON output path of the modes sweep.")


VARIANTS = ("authors", "fno_torch", "fno_torch_zero", "ours", "ours_zero", "ours_plain")
# The authors' variant's zero-channel twin is exactly ``fno_torch_zero`` (the same network,
# init, optimizer and minibatches seed by seed), so it is run once, with the init pair's seeds.
TWINS = {"authors": "fno_torch_zero", "ours": "ours_zero", "fno_torch_zero": "fno_torch"}
PLAIN = {"authors": "fno_torch", "ours": "ours_plain"}  # each protocol's plain FNO
K = 2  # derivative channels (orders from 1 and 2)
M = 2  # the PDEs' order: Burgers and heat are second order


class Setup(NamedTuple):
  """The sizes of a run (flags)."""

  steps: int
  batch_size: int
  resolution: int
  solver_resolution: int
  n_train: int
  n_test: int
  sigma: float


def _fno(layer_init: str, modes: int | None = None) -> nn.Module:
  """The full config's FNO (width 64, 4 layers, 16 modes, or ``modes``) with the given
  pointwise init."""
  bc = full.get_config().backbones
  if modes is not None:
    bc.fno_modes = int(modes)
  return programs.make_backbone("fno", bc, layer_init=layer_init)


def make_variant(variant: str, steps: int, modes: int | None = None):
  """(model, optimizer, protocol) of one variant; protocol is ``"authors"`` or ``"ours"``;
  ``modes``: the FNO's Fourier modes (default the full config's 16)."""
  if variant.startswith("authors") or variant.startswith("fno_torch"):
    net, opt = _fno("torch", modes), del_no.authors_optimizer(steps)
    if variant == "authors":
      model = del_no.DelNO(net, orders=(1.0, 2.0), method="gl_centred", boundary="periodic",
                           order_param="exp", scale_param="relu")
    elif variant == "fno_torch_zero":
      model = del_no.ZeroChannels(net, K)
    else:
      model = _Plain(net)
    return model, opt, "authors"
  net = _fno("flax", modes)
  sched = _cosine(steps)
  if variant == "ours":
    return del_no.DelNO(net, orders=(1.0, 2.0)), del_no.optimizer(sched, 10.0), "ours"
  if variant == "ours_zero":
    return del_no.ZeroChannels(net, K), del_no.optimizer(sched, 10.0), "ours"
  if variant == "ours_plain":
    return _Plain(net), del_no.optimizer(sched, 10.0), "ours"
  raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")


def _cosine(steps):
  return optax.cosine_decay_schedule(1e-3, steps)


class _Plain(nn.Module):
  """The backbone on the input alone (one channel), under the attribute name the twins use,
  so every layer but the lifting draws the same initial weights as theirs."""

  backbone: nn.Module

  @nn.compact
  def __call__(self, a):
    return self.backbone(a[..., None])


def load_cell(pde: str, setup: Setup, seed: int = 0):
  """(x_train, y_train, x_test, y_test) of a PDE at the run's sizes (burgers: the released law)."""
  if pde == "burgers":
    split = pde_data.load("burgers", resolution=setup.resolution,
                          solver_resolution=setup.solver_resolution, n_train=setup.n_train,
                          n_test=setup.n_test, seed=seed, num_steps=1000,
                          viscosity=pde_data.BURGERS_RELEASED_CODE["viscosity"],
                          grf_params=pde_data.BURGERS_RELEASED_CODE["grf"],
                          grf_constant_mode=pde_data.BURGERS_RELEASED_CODE["grf_constant_mode"])
  else:
    split = del_no_pdes.load(pde, resolution=setup.resolution,
                             solver_resolution=setup.solver_resolution, n_train=setup.n_train,
                             n_test=setup.n_test, seed=seed)
  return split


def encode(split, protocol: str, condition: str, sigma: float, seed: int):
  """Inputs and output normaliser of a protocol: the authors' raw, ours scalar / pointwise.

  The noisy condition adds the authors' noise to the training inputs only (one global
  std, a draw per seed), before any encoding.
  """
  x_train = np.asarray(split.x_train, np.float32)
  if condition == "noisy":
    key = jax.random.fold_in(jax.random.key(31), seed)
    x_train = np.asarray(del_no_pdes.add_noise_global(key, x_train, sigma), np.float32)
  if protocol == "authors":
    return x_train, np.asarray(split.x_test, np.float32), Normalizer(split.y_train, False)
  xn = Normalizer(np.asarray(split.x_train).reshape(-1, 1), True)  # clean statistics
  return (xn.encode(x_train).astype(np.float32), xn.encode(split.x_test).astype(np.float32),
          Normalizer(split.y_train, True))


def run_variant(variant: str, cells, setup: Setup, mesh, seeds: int,
                modes: int | None = None) -> dict:
  """Trains one variant on every (pde, condition) cell and seed as one vmapped run."""
  model, opt, protocol = make_variant(variant, setup.steps, modes)
  reps, xs, ys, xts, yts, norms = [], [], [], [], [], []
  for (pde, condition), split in cells.items():
    for s in range(seeds):
      x, xt, yn = encode(split, protocol, condition, setup.sigma, s)
      reps.append((pde, condition, s))
      xs.append(x), xts.append(xt), norms.append(yn)
      ys.append(np.asarray(split.y_train, np.float32)), yts.append(np.asarray(split.y_test, np.float32))
  r = len(reps)
  t0 = time.perf_counter()
  out = programs.train_replicas(model, opt, np.stack(xs), np.stack(ys), np.full(r, setup.n_train),
                          np.arange(r) % seeds, norms, setup.steps, setup.batch_size, mesh,
                          np.stack(xts), np.stack(yts))
  wall = time.perf_counter() - t0
  tail = out.losses_TxR[-max(1, setup.steps // 10):].mean(0)
  orders = del_no.learned_orders(out.params).get("beta")
  scales = del_no.learned_scales(out.params).get("scale")
  res = {}
  for i, (pde, condition, s) in enumerate(reps):
    rec = res.setdefault(f"{pde}/{condition}", {"err": [], "loss": []})
    rec["err"].append(float(out.test_RxM[i].mean()))
    rec["loss"].append(float(tail[i]))
    if orders is not None:
      rec.setdefault("orders", []).append([float(v) for v in np.asarray(orders[i])])
      raw = np.asarray(scales[i])
      live = np.maximum(raw, 0.0) if variant == "authors" else raw
      rec.setdefault("scales", []).append([float(v) for v in live])
  for rec in res.values():
    rec["wall_s"] = wall / len(res)
  return res


def channel_log(rec: dict) -> dict:
  """Dead channels (scale exactly 0) and orders above m over a variant's runs in one cell."""
  scales = np.asarray(rec.get("scales", []))
  orders = np.asarray(rec.get("orders", []))
  if scales.size == 0:
    return {}
  dead = (scales == 0.0).sum(1)
  return {"runs": int(len(scales)), "both_dead": int((dead == K).sum()),
          "one_dead": int((dead == 1).sum()), "order_above_m": int((orders.max(1) > M).sum()),
          "max_order": float(orders.max())}


def paired(a, b) -> tuple[float, float]:
  """Mean and s.e. over seeds of log(a / b) (paired: same seeds, same minibatches)."""
  n = min(len(a), len(b))
  d = np.log(np.asarray(a[:n]) / np.asarray(b[:n]))
  return float(d.mean()), float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0


def reading(mean: float, se: float) -> str:
  """The declared reading of a paired log ratio: helps / hurts / ties (2 s.e.)."""
  if mean < -2 * se:
    return "helps"
  if mean > 2 * se:
    return "hurts"
  return "ties"


def verdicts(res: dict) -> dict:
  """For every cell: each derivative variant against its twin, against its protocol's plain
  FNO, and the init effect (FNO with zero channels against the FNO), with the readings."""
  out = {}
  for cell, by in res.items():
    v = {}
    for variant, twin in TWINS.items():
      if variant in by and twin in by:
        m, se = paired(by[variant]["err"], by[twin]["err"])
        v[f"{variant}_vs_{twin}"] = dict(log_ratio=m, se=se, reading=reading(m, se))
    for variant, plain in PLAIN.items():
      if variant in by and plain in by:
        m, se = paired(by[variant]["err"], by[plain]["err"])
        twin = v.get(f"{variant}_vs_{TWINS[variant]}", {}).get("reading")
        kind = {"helps": "derivative", "ties": "init or other (ties its twin)",
                "hurts": "init (the channels themselves hurt)"}.get(twin, "twin not run")
        kind = kind if m < -2 * se else "no win"
        v[f"{variant}_vs_{plain}"] = dict(log_ratio=m, se=se, reading=reading(m, se), win=kind)
    out[cell] = v
  return out


def table(res: dict) -> str:
  have = [v for v in VARIANTS if all(v in by for by in res.values())]
  lines = ["| cell | " + " | ".join(have) + " |", "|---|" + "---|" * len(have)]
  for cell, by in res.items():
    cells = []
    for v in have:
      e = np.asarray(by[v]["err"])
      cells.append(f"{e.mean():.4f} +- {e.std(ddof=1) / np.sqrt(len(e)):.4f}")
    lines.append(f"| {cell} | " + " | ".join(cells) + " |")
  lines += ["", "Paired over seeds, log of the test-error ratio (mean +- s.e.; readings declared "
            "before the runs: helps / ties / hurts at 2 s.e.):", ""]
  for cell, v in verdicts(res).items():
    parts = [f"{k} {d['log_ratio']:+.3f} +- {d['se']:.3f} ({d['reading']}"
             + (f"; win: {d['win']}" if "win" in d else "") + ")" for k, d in v.items()]
    lines.append(f"* {cell}: " + "; ".join(parts))
  lines += ["", "Channels at the end of every run (dead: relu scale exactly 0; orders above m = 2):",
            ""]
  for cell, by in res.items():
    for v in ("authors", "ours"):
      if v in by:
        log = channel_log(by[v])
        orders = np.asarray(by[v]["orders"])
        lines.append(f"* {cell} {v}: {log['both_dead']} of {log['runs']} runs both channels dead, "
                     f"{log['one_dead']} one; order above 2 in {log['order_above_m']} (max "
                     f"{log['max_order']:.2f}); beta_1 {orders[:, 0].mean():.2f}, top order "
                     f"{orders.max(1).mean():.2f} (means over seeds)")
  return "\n".join(lines)


# The Fourier-modes sweep (the paper's "k", the authors' notebook 3): the learned order should
# fall as k rises. Declared before its run: judged as the other sweeps (claims.py), over at
# least 5 levels, by the one-sided permutation p-value of Spearman's rho below 0.05; on
# beta_1 (the order started at 1, which their Fig. 2 plots) and on the top order (ours).
MODES_DIRECTION, MODES_P_VALUE, MODES_MIN_LEVELS = -1, 0.05, 5
MODES_VARIANTS = ("authors", "ours")


def modes_sweep(levels, setup: Setup, mesh, seeds: int) -> dict:
  """``{variant: {modes: record}}``: each del-NO variant trained on clean Burgers (the
  released law; noise-free, as the authors' n and k sweeps) with the FNO keeping ``modes``
  Fourier modes, ``seeds`` seeds per level (one vmapped run per variant and level)."""
  cells = {("burgers", "clean"): load_cell("burgers", setup)}
  out: dict = {}
  for v in MODES_VARIANTS:
    for k in levels:
      out.setdefault(v, {})[str(int(k))] = run_variant(v, cells, setup, mesh, seeds,
                                                       modes=int(k))["burgers/clean"]
  return out


def modes_verdicts(res: dict) -> dict:
  """Per variant and reading (``beta_1``, ``top``): the levels' mean orders, Spearman's rho
  over every run against its level, the one-sided p-value (falling) and whether it holds."""
  out = {}
  for v, by in res.items():
    levels = sorted(by, key=int)
    values = np.asarray([int(k) for k in levels], float)
    orders = [np.asarray(by[k]["orders"]) for k in levels]  # per level: seeds x K
    for name, pick in (("beta_1", lambda o: o[:, 0]), ("top", lambda o: o.max(1))):
      arr = np.stack([pick(o) for o in orders])
      rho, p = programs.sweep_significance(values, arr, MODES_DIRECTION)
      out.setdefault(v, {})[name] = dict(
          means=[float(a) for a in arr.mean(1)], rho=rho, p=p,
          holds=bool(len(levels) >= MODES_MIN_LEVELS and p < MODES_P_VALUE))
  return out


def modes_table(res: dict) -> str:
  verd = modes_verdicts(res)
  lines = ["| variant | modes | beta_1 | top order | test error | dead channels (both / one) |",
           "|---|---|---|---|---|---|"]
  for v, by in res.items():
    for k in sorted(by, key=int):
      o = np.asarray(by[k]["orders"])
      (b1, b1_se), (top, top_se), (e, e_se) = (programs.mean_se(a) for a in
                                                (o[:, 0], o.max(1), by[k]["err"]))
      log = channel_log(by[k])
      lines.append(f"| {v} | {k} | {b1:.2f} +- {b1_se:.2f} | {top:.2f} +- {top_se:.2f} | "
                   f"{e:.4f} +- {e_se:.4f} | {log['both_dead']} / {log['one_dead']} of "
                   f"{log['runs']} |")
  lines += ["", f"Spearman's rho over every run against its level, one-sided permutation p "
            f"(falling); holds at p < {MODES_P_VALUE} over at least {MODES_MIN_LEVELS} levels:", ""]
  for v, by in verd.items():
    parts = [f"{name} rho {d['rho']:+.2f}, p = {d['p']:.4f} ({'holds' if d['holds'] else 'does not hold'})"
             for name, d in by.items()]
    lines.append(f"* {v}: " + "; ".join(parts))
  return "\n".join(lines)


def main(argv):
  del argv
  if FLAGS.modes_sweep:
    _main_modes()
    return
  if FLAGS.render_only:
    with open(FLAGS.json_out) as f:
      out = json.load(f)
    _write_readme(table(out["results"]) + _footer(out))
    return
  setup = Setup(FLAGS.steps, FLAGS.batch_size, FLAGS.resolution, FLAGS.solver_resolution, FLAGS.n_train,
                FLAGS.n_test, FLAGS.sigma)
  variants = FLAGS.variants or list(VARIANTS)
  unknown = sorted(set(variants) - set(VARIANTS))
  if unknown or set(FLAGS.conditions) - {"clean", "noisy"}:
    raise ValueError(f"unknown variants {unknown} or conditions {FLAGS.conditions}")
  mesh = sharding.make_mesh()
  t0, c0 = time.perf_counter(), time.process_time()
  splits = {pde: load_cell(pde, setup) for pde in FLAGS.pdes}
  cells = {(pde, c): splits[pde] for pde in FLAGS.pdes for c in FLAGS.conditions}
  res: dict = {}
  for v in variants:
    seeds = FLAGS.init_seeds if v.startswith("fno_torch") else FLAGS.seeds
    for cell, rec in run_variant(v, cells, setup, mesh, seeds).items():
      res.setdefault(cell, {})[v] = rec
  out = dict(results=res, verdicts=verdicts(res), setup=setup._asdict(),
             wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
  with open(FLAGS.json_out, "w") as f:
    json.dump(out, f, indent=1)
  _write_readme(table(res) + _footer(out))


def _main_modes():
  if FLAGS.render_only:
    with open(FLAGS.modes_json_out) as f:
      out = json.load(f)
  else:
    setup = Setup(FLAGS.steps, FLAGS.batch_size, FLAGS.resolution, FLAGS.solver_resolution,
                  FLAGS.n_train, FLAGS.n_test, 0.0)
    levels = [int(k) for k in FLAGS.modes_sweep]
    if any(k < 1 or k > FLAGS.resolution // 2 for k in levels):
      raise ValueError(f"--modes_sweep levels must be in [1, resolution / 2 = "
                       f"{FLAGS.resolution // 2}], got {levels}")
    t0, c0 = time.perf_counter(), time.process_time()
    res = modes_sweep(levels, setup, sharding.make_mesh(), FLAGS.seeds)
    out = dict(results=res, verdicts=modes_verdicts(res), setup=setup._asdict(),
               seeds=FLAGS.seeds, wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
    with open(FLAGS.modes_json_out, "w") as f:
      json.dump(out, f, indent=1)
  s = out["setup"]
  text = modes_table(out["results"]) + (
      f"\n\nClean Burgers (released law), {s['steps']} steps at batch {s['batch_size']}, "
      f"{s['resolution']} points, {s['n_train']} training pairs, {out['seeds']} seeds per level. "
      f"Wall {out['wall_s']:.0f} s, CPU {out['cpu_s']:.0f} s.")
  print(text)
  if FLAGS.readme_table:
    begin, end = "<!-- authors_modes:begin -->", "<!-- authors_modes:end -->"
    results.replace_between(FLAGS.readme_table, begin, end, f"{begin}\n{text}\n{end}")


def _footer(out) -> str:
  s = out["setup"]
  return (f"\n\n{s['steps']} steps at batch {s['batch_size']}, {s['resolution']} points, "
          f"{s['n_train']} training pairs, noise {s['sigma']:g} (train only, global std). Wall "
          f"{out['wall_s']:.0f} s, CPU {out['cpu_s']:.0f} s.")


def _write_readme(text: str):
  print(text)
  if FLAGS.readme_table:
    begin, end = "<!-- authors:begin -->", "<!-- authors:end -->"
    results.replace_between(FLAGS.readme_table, begin, end, f"{begin}\n{text}\n{end}")


if __name__ == "__main__":
  define_flags()
  app.run(main)
