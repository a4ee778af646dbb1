"""GWCN experiment: transfer error vs size at every sparsity, real graphs, SBM classification.

Three parts (the authors' public README, reduced in ``quick``):

1. ``synthetic``: an untrained 2-layer GCN (random weights, fixed seed) on graphs
   sampled from the Gaussian-kernel sphere graphon at five sparsity schedules,
   compared with the same network on the graphon limit (``N``-point quadrature),
   read at the graph's latents. GWCN uses the stretched shift ``A / (n rho_n)``
   (limit ``T_W``); the c-GCN uses ``D~^-1/2 (A + I) D~^-1/2`` (limit: the
   degree-normalised kernel). Node-level relative L2 error, graph-level (mean
   readout) error, fitted decay rates, and the bound's size / density parts.
2. ``real``: subgraphs of a real sparse network grown by degree ordering, BFS and
   uniform sampling; their edge densities fitted by ``a/m``, ``a log m / m``,
   ``a``; the readout transfer error to the full graph.
3. ``classification``: a GWCN trained on an ``m``-node subgraph of an SBM target
   graph and applied to the target: accuracy, macro-F1, cross-entropy, and the
   transfer error of the subgraph nodes' logits, over vmapped trials.
"""

from __future__ import annotations

import functools
import time

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import gwcn
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.gwcn import plots
from reprojax.experiments.gwcn import programs
from reprojax.experiments.gwcn.claims import TAG


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is one batch of the synthetic part (:func:`programs.synthetic_errors`): at the
  smallest size ``n = config.sizes[0]``, the first ``min(config.graph_batch, R)`` of the
  ``R = len(config.schedules) * config.num_graphs`` (schedule, graph) replicas,
  vmapped and split over ``data``; each samples a graph from the sphere graphon at
  its schedule's density and returns the GWCN and c-GCN transfer errors to the
  ``config.num_quadrature``-point limit and the bound's parts. The run makes the
  same call for every batch and every size.

  With a key: the replicas' keys and the network's parameters drawn from it; with
  None: ``jax.ShapeDtypeStruct`` args only.
  """
  graphon, model, quad_V = programs.synthetic_setup(config)
  n = config.sizes[0]
  fn = functools.partial(programs.synthetic_one, n=n, graphon=graphon, model=model,
                         delta=config.delta)
  r = len(config.schedules) * config.num_graphs
  b = min(config.graph_batch or r, r)
  rhos = np.repeat(programs.schedule_densities(config, n), config.num_graphs)[:b]
  if key is None:
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), b))
    params = jax.eval_shape(
        lambda: programs.init_params(model, graphon, quad_V, jax.random.key(0)))
    v = config.num_quadrature
    args = (keys, jax.ShapeDtypeStruct((b,), jnp.float32), params,
            jax.ShapeDtypeStruct((v, 3), jnp.float32), jax.ShapeDtypeStruct((v, v), jnp.float32))
  else:
    k_param, k_graphs = jax.random.split(key)
    args = (jax.random.split(k_graphs, b), jnp.asarray(rhos),
            programs.init_params(model, graphon, quad_V, k_param), quad_V,
            graphon.kernel(quad_V, quad_V))
  return sharding.Step(
      build=lambda mesh: sharding.vmap_sharded(fn, mesh, in_axes=(0, 0, None, None, None)),
      args=args)


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Runs the three parts, writes the plots into ``workdir`` and returns the metrics."""
  t0 = time.time()
  key = jax.random.key(config.seed)
  k_syn, k_real, k_cls = jax.random.split(key, 3)
  mesh = sharding.config_mesh(config)
  syn = programs.synthetic_transfer(config, k_syn, mesh)
  sweep = programs.degree_sweep(config, k_syn, mesh)  # the network parameters of syn
  t_syn = time.time() - t0
  real, real_n, real_e = programs.real_graph_transfer(config, k_real, mesh)
  t_real = time.time() - t0 - t_syn
  cls, cls_rho = programs.classification(config, k_cls, mesh)
  t_cls = time.time() - t0 - t_syn - t_real
  plots.write_all(workdir, config, syn, sweep, real, cls)

  metrics = {}
  sizes = list(config.sizes)
  n_max = sizes[-1]
  rates = {}
  below = []
  for s in config.schedules:
    t = TAG[s]
    for model in ("gwcn", "cgcn"):
      for kind in ("err", "readout_err"):
        errs = [float(syn[s][n][f"{model}_{kind}"].mean()) for n in sizes]
        rate, _ = gwcn.fit_power_law(sizes, errs)
        rates[(s, model, kind)] = rate
        metrics[f"synthetic/{model}_{kind}_rate/{t}"] = rate
        metrics[f"synthetic/{model}_{kind}_nmax/{t}"] = errs[-1]
        metrics[f"synthetic/{model}_{kind}_nmin/{t}"] = errs[0]
    for n in sizes:
      e = syn[s][n]
      below.append(bool(np.all(e["gwcn_err"] <= e["bound_size"] + e["bound_density"])))
    e = syn[s][n_max]
    metrics[f"synthetic/bound_size_nmax/{t}"] = float(e["bound_size"].mean())
    metrics[f"synthetic/bound_density_nmax/{t}"] = float(e["bound_density"].mean())
    metrics[f"synthetic/bound_size_rate/{t}"] = gwcn.fit_power_law(
        sizes, [float(syn[s][n]["bound_size"].mean()) for n in sizes])[0]
    metrics[f"synthetic/bound_density_rate/{t}"] = gwcn.fit_power_law(
        sizes, [float(syn[s][n]["bound_density"].mean()) for n in sizes])[0]
    metrics[f"synthetic/rho_nmax/{t}"] = syn[s][n_max]["rho"]
  metrics["synthetic/bound_holds_fraction"] = float(np.mean(below))
  cs = sorted(sweep)
  for c in cs:
    metrics[f"synthetic/degree_sweep/gwcn_err/c{c:g}"] = float(sweep[c]["gwcn_err"].mean())
    metrics[f"synthetic/degree_sweep/gwcn_readout_err/c{c:g}"] = float(
        sweep[c]["gwcn_readout_err"].mean())
  # slope of log error against log expected degree c = n rho at n = n_max (-1/2: neighbour noise)
  metrics["synthetic/degree_sweep/gwcn_err_slope"] = -gwcn.fit_power_law(
      cs, [metrics[f"synthetic/degree_sweep/gwcn_err/c{c:g}"] for c in cs])[0]
  metrics["synthetic/wall_s"] = t_syn
  metrics["real/wall_s"] = t_real
  metrics["cls/wall_s"] = t_cls
  for scheme, e in real.items():
    for name in ("1/n", "logn/n", "const"):
      metrics[f"real/{scheme}/density_fit_r2/{TAG[name]}"] = e["fits"][name][1]
    metrics[f"real/{scheme}/density_exponent"] = e["exponent"]
    metrics[f"real/{scheme}/density_m_min"] = float(e["density"][0])
    metrics[f"real/{scheme}/density_m_max"] = float(e["density"][-1])
    metrics[f"real/{scheme}/density_decreasing"] = int(np.all(np.diff(e["density"]) < 0))
    for name in ("gwcn", "cgcn"):
      metrics[f"real/{scheme}/{name}_readout_err_m_min"] = float(e[f"{name}_readout_err"][0])
      metrics[f"real/{scheme}/{name}_readout_err_m_last"] = float(e[f"{name}_readout_err"][-2])
      metrics[f"real/{scheme}/{name}_node_err_m_min"] = float(e[f"{name}_node_err"][0])
      metrics[f"real/{scheme}/{name}_node_err_m_last"] = float(e[f"{name}_node_err"][-2])
  metrics["real/num_nodes"] = real_n
  metrics["real/num_edges"] = real_e
  ms = sorted(cls)
  for m in ms:
    for kk in ("acc", "macro_f1", "ce", "transfer_err"):
      metrics[f"cls/{kk}_mean/m{m}"] = float(cls[m][kk].mean())
      metrics[f"cls/{kk}_std/m{m}"] = float(cls[m][kk].std())
  metrics["cls/rho"] = cls_rho

  thr = config.decay_threshold
  z = config.decay_z

  def falls(model, kind, s):
    """Error at the largest n below the smallest n's by > z standard errors, and rate > thr."""
    a = syn[s][sizes[0]][f"{model}_{kind}"]
    b = syn[s][n_max][f"{model}_{kind}"]
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return (results.exceeds(a.mean() - b.mean(), 0.0, se, k=z).holds
            and rates[(s, model, kind)] > thr)

  for s in config.schedules:
    metrics[f"synthetic/gwcn_err_falls/{TAG[s]}"] = int(falls("gwcn", "err", s))
    metrics[f"synthetic/cgcn_err_falls/{TAG[s]}"] = int(falls("cgcn", "err", s))
    metrics[f"synthetic/gwcn_readout_err_falls/{TAG[s]}"] = int(falls("gwcn", "readout_err", s))
  logging.info("gwcn run took %.1f s", time.time() - t0)
  return metrics
