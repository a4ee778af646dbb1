"""The del-NO reproduction: backbone vs backbone + learnable derivative channels over PDEs, noise and seeds.

Every training run trains R *replicas* at once, ``jax.vmap``-ed and split over the
mesh's ``data`` axis: replicas differ by seed (initialisation and minibatches) and
by their data (PDE, clean or noisy inputs, a noise level, training-set size or
input law of a sweep). All replicas of one model (backbone, dimension, initial
orders) train as one ``jax.jit`` of a ``lax.scan`` over optimizer steps: one
compile per model, by the suite's replica trainer
(:func:`reprojax.experiments.train.fit_replicas`).

Metrics per cell (PDE x backbone x {clean, noisy}): relative L2 test error of
the backbone and of del-NO, mean and standard error over seeds; final training
losses; the learned orders (2-D: per axis and the mixed partial); the per-step
time of both. Sweeps (FNO del-NO on Burgers): the learned top order against the
noise level sigma, the training-set size n and the input's spectral decay alpha,
beside the closed-form optimum of :mod:`reprojax.algorithms.del_no`.

:func:`run` returns the metrics and writes the figures (:mod:`.plots`), calling
:mod:`.programs` (the models, the trainer, the run plan and the data cache) for the work;
:func:`main_step` is the sharded replica step the every-paper test checks; the claims,
a pure function of the config and those metrics, are :mod:`.claims`.
"""

from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from scipy import stats

from reprojax.data import del_no_pdes
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.del_no import claims
from reprojax.experiments.del_no import plots
from reprojax.experiments.del_no import programs
from reprojax.models import del_no

# Open intervals of config fields beyond the naming rules (experiments/config_check.py).
CONFIG_RANGES = {"sweep_p_value": (0.0, 1.0)}


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  With a key: concrete, valid inputs drawn from it (synthetic is fine: no dataset
  loading, no data generation, no files); with None: ``jax.ShapeDtypeStruct`` args only.

  The step is one optimizer step of the replica trainer
  (:func:`reprojax.experiments.train.make_replica_step`, the body of the loop that
  :func:`programs.train_replicas` compiles) over the seeds of the sweeps' cell: del-NO around
  ``sweep_backbone`` on ``sweep_pde`` (the group most of the runs train in),
  ``num_seeds`` replicas, each taking its minibatch of ``batch_size`` from its
  ``n_train`` pairs on the PDE's grid, with the experiment's loss, per-replica
  normalisers and optimizer. The synthetic inputs: Gaussian fields for the pairs,
  and a mid-training-like state (orders drawn in [0.5, 2.5], network weights
  N(0, 0.1^2), Adam at step 100 with second moments 1e-2: ``train.mid_training_state``).
  """
  pde, backbone = config.sweep_pde, config.sweep_backbone
  mk = programs.model_key(backbone, pde, True)
  sz = programs.pde_sizes(config, pde)
  grid = (sz.resolution,) * mk.dims
  r = int(config.num_seeds)
  # channel_norm="rms" needs channel statistics: a fixed stand-in field (a constant of the step).
  x_stats = np.random.default_rng(0).normal(size=(8,) + grid).astype(np.float32)
  model, opt = programs.make_model(backbone, config, int(max(mk.orders)), True, x_stats,
                                   mk.dims, periodic=mk.dims == 1)
  init_params, loss_fn, _ = programs.replica_fns(model, x_stats[:1])
  x_shape, norm_shape = (r, sz.n_train) + grid, (r,) + grid
  f32 = lambda shape: jax.ShapeDtypeStruct(shape, jnp.float32)  # noqa: E731
  keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), r))
  params = jax.eval_shape(jax.vmap(init_params), keys)
  opt_state = jax.eval_shape(jax.vmap(opt.init), params)
  if key is None:
    args = (params, opt_state, keys, jax.ShapeDtypeStruct((), jnp.int32),
            jax.ShapeDtypeStruct((r, int(sz.batch_size)), jnp.int32),
            (f32(x_shape), f32(x_shape)), (f32(norm_shape), f32(norm_shape)))
  else:
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)))
    orders = {path for path in flax.traverse_util.flatten_dict(params)
              if path[-1] in del_no.ORDER_PARAMS}

    def draw(path, s):
      if path in orders:
        return rng.uniform(0.5, 2.5, s.shape).astype(s.dtype)
      v = 0.1 * rng.normal(size=s.shape)
      if np.issubdtype(s.dtype, np.complexfloating):
        v = v + 0.1j * rng.normal(size=s.shape)
      return v.astype(s.dtype)

    params = flax.traverse_util.unflatten_dict(
        {p: draw(p, s) for p, s in flax.traverse_util.flatten_dict(params).items()})
    opt_state = train.mid_training_state(
        jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), opt_state))
    x, y = (rng.normal(size=x_shape).astype(np.float32) for _ in range(2))
    seeds = [int(config.seed) + s for s in range(r)]
    idx = train.sample_batch_indices(seeds, [sz.n_train] * r, 1, int(sz.batch_size))[:, 0]
    args = (params, opt_state, jax.random.split(key, r), np.int32(0), idx.astype(np.int32),
            (x, y), (y.mean(1), y.std(1) + np.float32(1e-5)))

  def build(mesh):
    return train.make_replica_step(mesh=mesh, loss_fn=loss_fn, optimizer=opt)

  return sharding.Step(build, args)



def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Trains the grid and the sweeps, writes the figures and returns the metrics.

  Per cell ``<pde>_<backbone>_<clean|noisy>``: ``base_rel_l2`` and ``delno_rel_l2``
  (mean test error over seeds) with their ``_se``, the final training losses, the
  learned orders and ``max_order`` (Darcy also ``xy_gap``); per PDE x backbone the
  ``step_overhead`` of del-NO's step time over the backbone's (a timing); overall
  ``wins``, ``cells``, ``cells_orders_below_m``, the overhead's median, min and max
  and ``xy_gap_mean`` (with Darcy); per sweep its points' mean top order
  ``sweep_<kind>_<value>_beta``, ``sweep_<kind>_spearman`` and, for alpha, each
  law's ``band_edge``.
  """
  for p in list(config.pdes) + [config.sweep_pde]:
    if p not in del_no_pdes.PDE_ORDER:
      raise ValueError(f"unknown PDE {p!r}; expected one of {sorted(del_no_pdes.PDE_ORDER)}")
    sz = programs.pde_sizes(config, p)
    if sz.n_train < sz.batch_size:
      raise ValueError(f"{p}: n_train={sz.n_train} is below batch_size={sz.batch_size}")
  if config.sweep_pde == "darcy":
    raise ValueError("the sweeps run on a 1-D PDE (advection, heat, burgers or kdv), not darcy")
  mesh = sharding.config_mesh(config)
  metrics: dict[str, Any] = {}
  inputs = programs.Inputs(config)
  per_replica, step_s = programs.train_groups(config, programs.requests(config), inputs, mesh)
  cells = programs.grid_cells(config, per_replica, step_s, metrics)
  overheads = [metrics[k] for k in metrics if k.endswith("_step_overhead")]
  metrics.update(wins=sum(c["win"] for c in cells), cells=len(cells),
                 cells_orders_below_m=sum(c["max_order"] < c["m"] for c in cells),
                 step_overhead_median=float(np.median(overheads)),
                 step_overhead_min=float(np.min(overheads)),
                 step_overhead_max=float(np.max(overheads)))
  cells_2d = [c for c in cells if np.isfinite(c["xy_gap"])]
  if cells_2d:
    metrics["xy_gap_mean"] = float(np.mean([c["xy_gap"] for c in cells_2d]))
  sweeps, edges, first = (programs.sweep_results(config, per_replica, inputs)
                          if config.sweep_num_seeds else ({}, {}, {}))
  m = del_no_pdes.PDE_ORDER[config.sweep_pde]
  theory = {}
  for kind, (vals, top) in sweeps.items():
    theory[kind] = programs.sweep_theory(config, kind, edges)  # the closed form's trend
    mean = top.mean(1)
    metrics.update({f"sweep_{kind}_{v:g}_beta": float(b) for v, b in zip(vals, mean)})
    # Beside the top order: beta_1 (the paper's Fig. 2 plots it) and how many replicas
    # end with an order above the PDE's m (the paper: beta* < m).
    metrics.update({f"sweep_{kind}_{v:g}_beta1": float(b)
                    for v, b in zip(vals, first[kind].mean(1))})
    metrics[f"sweep_{kind}_above_m"] = int((top > m).sum())
    metrics[f"sweep_{kind}_spearman"] = float(stats.spearmanr(vals, mean).statistic)
    rho, p_value = programs.sweep_significance(vals, top, claims.SWEEP_SIGN[kind])
    metrics.update({f"sweep_{kind}_levels": len(vals), f"sweep_{kind}_spearman_replicas": rho,
                    f"sweep_{kind}_p_value": p_value})
    if kind == "alpha":
      metrics.update({f"sweep_alpha_{a:g}_band_edge": e for a, e in edges.items()})
  plots.plot_grid(workdir, cells)
  if sweeps:
    plots.plot_sweeps(workdir, sweeps, m, theory)
  return metrics

