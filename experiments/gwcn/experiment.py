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
import optax

from reprojax.algorithms import gwcn
from reprojax.data import gwcn as gwcn_data
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.gwcn import plots
from reprojax.experiments.results import Claim, Evidence, margin_in_se
from reprojax.models import gcn

_TAG = {"const": "const", "n^-1/4": "n-0.25", "n^-1/2": "n-0.5", "logn/n": "logn_n", "1/n": "1_n"}


# ============================================================== Part 1: synthetic transfer

def _intermediate_inputs(model, params, x, shift):
  """The limit network's input to each layer, ``[f_0, f_1, ...]``, and its output."""
  out, state = model.apply(params, x, shift, capture_intermediates=True)
  inter = state["intermediates"]
  fs = [x]
  for i in range(len(model.features) - 1):
    fs.append(jax.nn.relu(inter[f"layer_{i}"]["__call__"][0]))
  return fs, out


def _synthetic_one(key, rho, params, quad_V, kernel_VV, *, n, graphon, model, delta):
  """One sampled graph: node/readout errors of GWCN and c-GCN and the bound's parts.

  ``key`` and ``rho`` (this replica's graph and sparsity) are mapped by
  :func:`synthetic_errors`; ``params``, ``quad_V`` (quadrature points, ``V x 3``)
  and ``kernel_VV`` are shared by every replica.
  """
  k_lat, k_adj = jax.random.split(key)
  u = graphon.sample_latents(k_lat, n)
  p = graphon.kernel(u, u)
  adj = gwcn.sample_adjacency(k_adj, p, rho)
  x = graphon.features(u)
  x_union = jnp.concatenate([graphon.features(quad_V), x], axis=0)
  kernel_QV = graphon.kernel(u, quad_V)
  nq = quad_V.shape[0]
  res = {}
  for name, shift, lim in (
      ("gwcn", adj / (n * rho), gwcn.limit_shift(kernel_VV, kernel_QV)),
      ("cgcn", gwcn.normalized_shift_dense(adj), gwcn.limit_shift(kernel_VV, kernel_QV, True))):
    out_g = model.apply(params, x, shift)
    fs, out_l_union = _intermediate_inputs(model, params, x_union, lim)
    out_l = out_l_union[nq:]
    res[f"{name}_err"] = gwcn.transfer_error(out_g, out_l)
    res[f"{name}_readout_err"] = (jnp.linalg.norm(out_g.mean(0) - out_l.mean(0)) /
                                  jnp.linalg.norm(out_l.mean(0)))
    if name == "gwcn":
      weights = gcn.layer_weights(params)
      h0 = jnp.stack([jnp.linalg.norm(w[0], 2) for w in weights])
      h1 = jnp.stack([jnp.linalg.norm(w[1], 2) for w in weights])
      f_sup = jnp.stack([jnp.sqrt(jnp.sum(jnp.max(jnp.abs(f), axis=0) ** 2)) for f in fs])
      f_rms = jnp.stack([gwcn.rms(f[nq:]) for f in fs])
      s_norm = gwcn.operator_norm(shift, n, 60)
      size_c = gwcn.size_term(n, graphon.w_max, delta, max(model.features))
      dens_c = gwcn.density_term(n, rho, gwcn.bernoulli_variance(p, rho), delta)
      b_size, b_dens = gwcn.transfer_bound(h0, h1, f_sup, f_rms, s_norm, size_c, dens_c)
      scale = gwcn.rms(out_l)
      res["bound_size"] = b_size / scale
      res["bound_density"] = b_dens / scale
      res["shift_norm"] = s_norm
  return res


def synthetic_errors(keys_R, rhos_R, params, quad_V, kernel_VV, *, n, graphon, model, delta,
                     mesh=None, batch=None):
  """:func:`_synthetic_one` over ``R`` replicas (graph keys and their ``rho``), split over ``data``.

  The replicas run ``batch`` at a time (``None``: all at once) through one
  compiled :func:`reprojax.experiments.sharding.vmap_sharded` call per batch shape;
  returns the per-replica dict of arrays, each of leading size ``R``.
  """
  fn = functools.partial(_synthetic_one, n=n, graphon=graphon, model=model, delta=delta)
  run_ = sharding.vmap_sharded(fn, mesh, in_axes=(0, 0, None, None, None))
  r = keys_R.shape[0]
  batch = r if batch is None else batch
  parts = [run_(keys_R[i:i + batch], rhos_R[i:i + batch], params, quad_V, kernel_VV)
           for i in range(0, r, batch)]
  return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


def _synthetic_setup(config):
  """The sphere graphon, the untrained GCN and the quadrature points of the synthetic part."""
  graphon = gwcn_data.sphere_gaussian(config.bandwidth)
  model = gcn.GCN(features=(config.hidden, config.out_features), num_taps=2)
  return graphon, model, graphon.quadrature(config.num_quadrature)


def _init_params(model, graphon, quad_V, key):
  return model.init(key, graphon.features(quad_V[:4]), jnp.eye(4))


def _schedule_densities(config, n):
  """``rho(n)`` of each schedule of ``config.schedules`` (float32, as the replicas see it)."""
  return np.array([gwcn.sparsity(n, s, c)
                   for s, c in zip(config.schedules, config.schedule_scales)], np.float32)


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is one batch of the synthetic part (:func:`synthetic_errors`): at the
  smallest size ``n = config.sizes[0]``, the first ``min(config.graph_batch, R)`` of the
  ``R = len(config.schedules) * config.num_graphs`` (schedule, graph) replicas,
  vmapped and split over ``data``; each samples a graph from the sphere graphon at
  its schedule's density and returns the GWCN and c-GCN transfer errors to the
  ``config.num_quadrature``-point limit and the bound's parts. The run makes the
  same call for every batch and every size.

  With a key: the replicas' keys and the network's parameters drawn from it; with
  None: ``jax.ShapeDtypeStruct`` args only.
  """
  graphon, model, quad_V = _synthetic_setup(config)
  n = config.sizes[0]
  fn = functools.partial(_synthetic_one, n=n, graphon=graphon, model=model, delta=config.delta)
  r = len(config.schedules) * config.num_graphs
  b = min(config.graph_batch or r, r)
  rhos = np.repeat(_schedule_densities(config, n), config.num_graphs)[:b]
  if key is None:
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), b))
    params = jax.eval_shape(lambda: _init_params(model, graphon, quad_V, jax.random.key(0)))
    v = config.num_quadrature
    args = (keys, jax.ShapeDtypeStruct((b,), jnp.float32), params,
            jax.ShapeDtypeStruct((v, 3), jnp.float32), jax.ShapeDtypeStruct((v, v), jnp.float32))
  else:
    k_param, k_graphs = jax.random.split(key)
    args = (jax.random.split(k_graphs, b), jnp.asarray(rhos),
            _init_params(model, graphon, quad_V, k_param), quad_V, graphon.kernel(quad_V, quad_V))
  return sharding.Step(
      build=lambda mesh: sharding.vmap_sharded(fn, mesh, in_axes=(0, 0, None, None, None)),
      args=args)


def synthetic_transfer(config, key, mesh=None):
  graphon, model, quad_V = _synthetic_setup(config)
  kernel_VV = graphon.kernel(quad_V, quad_V)
  k_param, k_graphs = jax.random.split(key)
  params = _init_params(model, graphon, quad_V, k_param)
  sched = list(config.schedules)
  out = {s: {} for s in sched}
  for n in config.sizes:
    # every (schedule, graph) pair of this n: the replica axis, split over the mesh
    rhos = _schedule_densities(config, n)
    keys = jax.random.split(jax.random.fold_in(k_graphs, n), len(sched) * config.num_graphs)
    rho_b = jnp.repeat(jnp.asarray(rhos), config.num_graphs)
    res = synthetic_errors(keys, rho_b, params, quad_V, kernel_VV, n=n, graphon=graphon,
                           model=model, delta=config.delta, mesh=mesh, batch=config.graph_batch)
    for i, s in enumerate(sched):
      sl = slice(i * config.num_graphs, (i + 1) * config.num_graphs)
      out[s][n] = {k: v[sl] for k, v in res.items()} | {"rho": float(rhos[i])}
    logging.info("synthetic n=%d done", n)
  return out


def degree_sweep(config, key, mesh=None):
  """GWCN at the largest ``n`` with ``rho = c / n`` for each ``c`` of ``config.degree_sweep_scales``.

  At bounded expected degree ``n rho`` a node's aggregation
  ``(1 / (n rho)) sum_j A_ij f(u_j)`` averages O(``n rho``) neighbours, so its
  error to ``(T_W f)(u_i)`` has standard deviation ``~ (n rho)^{-1/2}`` whatever
  ``n`` is. The sweep measures that slope; ``-1/2`` says the ``1/n`` plateau is
  the neighbourhood noise, not a defect of the operator or of the limit.
  Returns ``{c: per-graph dict}``.
  """
  graphon, model, quad_V = _synthetic_setup(config)
  k_param, k_graphs = jax.random.split(key)
  params = _init_params(model, graphon, quad_V, k_param)
  n = config.sizes[-1]
  cs = np.asarray(config.degree_sweep_scales, np.float32)
  keys = jax.random.split(jax.random.fold_in(k_graphs, 0), cs.size * config.num_graphs)
  rho_b = jnp.repeat(jnp.asarray(cs / n), config.num_graphs)
  res = synthetic_errors(keys, rho_b, params, quad_V, graphon.kernel(quad_V, quad_V), n=n,
                         graphon=graphon, model=model, delta=config.delta, mesh=mesh,
                         batch=config.graph_batch)
  return {float(c): {k: v[i * config.num_graphs:(i + 1) * config.num_graphs]
                     for k, v in res.items()} for i, c in enumerate(cs)}


# ============================================================== Part 2: real graphs

def _real_graph(name):
  if name == "minnesota":
    return gwcn_data.load_pygsp_graph("minnesota")
  return gwcn_data.load_networkx_graph(name)


def real_graph_transfer(config, key, mesh=None):
  s, r, n = _real_graph(config.real_graph)
  w = np.ones(s.size, np.float32)
  s, r, w = jnp.asarray(s), jnp.asarray(r), jnp.asarray(w)
  sizes = [m for m in config.real_sizes if m < n] + [n]
  k_feat, k_perm, k_param = jax.random.split(key, 3)
  x = jnp.concatenate([jnp.ones((n, 1)), jax.random.normal(k_feat, (n, 3))], axis=1)
  model = gcn.GCN(features=(config.hidden, config.out_features), num_taps=2)
  params = model.init(k_param, x[:4], jnp.eye(4))
  orders = {"degree": gwcn.degree_order(s, r, w, n), "bfs": gwcn.bfs_order(s, r, w, n),
            "random": gwcn.random_order(k_perm, n)}

  def one(order, m):
    ss, rr, ww = gwcn.induced_subgraph(s, r, w, order, m)
    xo = x[order]
    mask = jnp.arange(n) < m
    dens = gwcn.edge_density(ww, m)
    outs = {}
    for name, op in (("gwcn", gwcn.gwcn_shift(ss, rr, ww, m)),
                     ("cgcn", gwcn.normalized_shift(ss, rr, ww, n))):
      o = model.apply(params, xo, op)
      outs[name] = (jnp.sum(o * mask[:, None], 0) / m, o)
    return dens, outs

  res = {}
  m_arr = jnp.asarray(sizes)
  for scheme, order in orders.items():
    dens, outs = sharding.vmap_sharded(one, mesh, in_axes=(None, 0))(order, m_arr)
    entry = {"m": np.asarray(sizes), "density": np.asarray(dens)}
    for name, (readout, nodes) in outs.items():
      full_r, full_nodes = readout[-1], nodes[-1]
      entry[f"{name}_readout_err"] = np.asarray(
          jnp.linalg.norm(readout - full_r, axis=1) / jnp.linalg.norm(full_r))
      node_err = []
      for i, m in enumerate(sizes):  # error on the subgraph's own nodes, vs the full graph
        mask = jnp.arange(n) < m
        node_err.append(float(gwcn.rms(nodes[i] - full_nodes, mask) / gwcn.rms(full_nodes, mask)))
      entry[f"{name}_node_err"] = np.asarray(node_err)
    entry["fits"] = gwcn.fit_density_curves(entry["m"], entry["density"])
    entry["exponent"] = -gwcn.fit_power_law(entry["m"], entry["density"])[0]
    res[scheme] = entry
  return res, n, int(s.size // 2)


# ============================================================== Part 3: classification

def _macro_f1(pred, labels, k):
  f1s = []
  for c in range(k):
    tp = jnp.sum((pred == c) & (labels == c))
    fp = jnp.sum((pred == c) & (labels != c))
    fn = jnp.sum((pred != c) & (labels == c))
    f1s.append(2.0 * tp / jnp.maximum(2.0 * tp + fp + fn, 1.0))
  return jnp.mean(jnp.stack(f1s))


def _classification_trial(key, *, m, config, block_probs, means, rho):
  n_t = config.cls_target_nodes
  k_task, k_init = jax.random.split(key)
  task = gwcn_data.sbm_node_classification(k_task, n_t, block_probs, means, rho,
                                           config.cls_noise)
  s_t = gwcn.gwcn_shift_dense(task.adj_NxN)  # empirical density: rho is unknown to the model
  adj_m = task.adj_NxN[:m, :m]  # nodes are exchangeable: the first m form a uniform subgraph
  # guard against an edgeless subgraph (density 0) without breaking jit
  dens_m = jnp.maximum(gwcn.edge_density_dense(adj_m), 1.0 / (m * (m - 1.0)))
  s_m = adj_m / (m * dens_m)
  x_m, y_m = task.x_NxF[:m], task.labels_N[:m]
  model = gcn.GCN(features=(config.hidden, config.cls_classes), num_taps=2)
  params = model.init(k_init, x_m, s_m)
  opt = optax.adam(config.cls_learning_rate)

  def loss_fn(p):
    logits = model.apply(p, x_m, s_m)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y_m).mean()

  params, losses = train.fit_full_batch(loss_fn, opt, params, config.cls_steps)
  logits_t = model.apply(params, task.x_NxF, s_t)
  test = jnp.arange(n_t) >= m  # target nodes unseen in training
  y_t = task.labels_N
  pred = jnp.argmax(logits_t, -1)
  acc = jnp.sum((pred == y_t) & test) / jnp.sum(test)
  big = jnp.where(test, pred, -1)
  f1 = _macro_f1(big, jnp.where(test, y_t, -2), config.cls_classes)
  ce = jnp.sum(optax.softmax_cross_entropy_with_integer_labels(logits_t, y_t) * test) / jnp.sum(test)
  logits_m = model.apply(params, x_m, s_m)
  terr = gwcn.transfer_error(logits_m, logits_t[:m])
  return {"acc": acc, "macro_f1": f1, "ce": ce, "transfer_err": terr, "train_loss": losses[-1]}


def classification(config, key, mesh=None):
  k = config.cls_classes
  block_probs = jnp.full((k, k), config.cls_p_out) + (config.cls_p_in - config.cls_p_out) * jnp.eye(k)
  k_means, k_trials = jax.random.split(key)
  means = jax.random.normal(k_means, (k, config.cls_feature_dim))
  means = means / jnp.linalg.norm(means, axis=1, keepdims=True)
  rho = gwcn.sparsity(config.cls_target_nodes, config.cls_schedule, config.cls_schedule_scale)
  out = {}
  keys = jax.random.split(k_trials, config.cls_num_trials)  # the same targets for every m
  for m in config.cls_sizes:
    fn = functools.partial(_classification_trial, m=m, config=config, block_probs=block_probs,
                           means=means, rho=rho)
    res = sharding.vmap_sharded(fn, mesh)(keys)  # the trials, split over the mesh
    out[m] = {kk: np.asarray(v) for kk, v in res.items()}
    logging.info("classification m=%d acc %.3f", m, float(out[m]["acc"].mean()))
  return out, rho


# ============================================================== plots and claims

def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Runs the three parts, writes the plots into ``workdir`` and returns the metrics."""
  t0 = time.time()
  key = jax.random.key(config.seed)
  k_syn, k_real, k_cls = jax.random.split(key, 3)
  mesh = sharding.config_mesh(config)
  syn = synthetic_transfer(config, k_syn, mesh)
  sweep = degree_sweep(config, k_syn, mesh)  # same network parameters as synthetic_transfer
  t_syn = time.time() - t0
  real, real_n, real_e = real_graph_transfer(config, k_real, mesh)
  t_real = time.time() - t0 - t_syn
  cls, cls_rho = classification(config, k_cls, mesh)
  t_cls = time.time() - t0 - t_syn - t_real
  plots.write_all(workdir, config, syn, sweep, real, cls)

  metrics = {}
  sizes = list(config.sizes)
  n_max = sizes[-1]
  rates = {}
  below = []
  for s in config.schedules:
    t = _TAG[s]
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
      metrics[f"real/{scheme}/density_fit_r2/{_TAG[name]}"] = e["fits"][name][1]
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
    return bool(a.mean() - b.mean() > z * se) and rates[(s, model, kind)] > thr

  for s in config.schedules:
    metrics[f"synthetic/gwcn_err_falls/{_TAG[s]}"] = int(falls("gwcn", "err", s))
    metrics[f"synthetic/cgcn_err_falls/{_TAG[s]}"] = int(falls("cgcn", "err", s))
    metrics[f"synthetic/gwcn_readout_err_falls/{_TAG[s]}"] = int(falls("gwcn", "readout_err", s))
  logging.info("gwcn run took %.1f s", time.time() - t0)
  return metrics


_DECAY_Z, _DECAY_THRESHOLD = 2.0, 0.05  # config.decay_z, config.decay_threshold: the rules'
_FALLS = (f"'falls' (a flag run() computes): the mean error over config.num_graphs sampled "
          f"graphs at the smallest n of config.sizes exceeds that at the largest by more than "
          f"config.decay_z = {_DECAY_Z:g} unpaired standard errors, and the rate r of a power "
          f"law n^-r fitted to the mean errors over config.sizes is above "
          f"config.decay_threshold = {_DECAY_THRESHOLD:g}")
CLAIMS = results.declare(
    results.Declared(
        "gwcn_decay_every_schedule", "paper",
        "GWCN's (node-level) transfer error falls as n grows under every sparsity schedule",
        "error vanishes with n in every regime (Fig., synthetic, n=100..1000)",
        f"holds when GWCN's node-level transfer error {_FALLS}, under every schedule of "
        "config.schedules"),
    results.Declared(
        "gwcn_decay_when_degree_grows", "check",
        "GWCN's transfer error falls under every schedule whose expected degree n rho grows",
        "error vanishes with n in every regime",
        f"holds when GWCN's node-level transfer error {_FALLS}, under every schedule of "
        "config.schedules but 1/n"),
    results.Declared(
        "gwcn_readout_decay_every_schedule", "check",
        "GWCN's graph-level (mean readout) transfer error falls under every schedule",
        "error vanishes with n in every regime",
        f"holds when GWCN's graph-level (mean readout) transfer error {_FALLS}, under every "
        "schedule of config.schedules"),
    results.Declared(
        "cgcn_stalls_when_sparsest", "paper",
        "the normalised c-GCN stalls or is biased under the sparsest schedule (1/n)",
        "c-GCN drifts under extreme sparsity; GWCN converges",
        "holds when, under the last (sparsest) schedule of config.schedules, c-GCN's "
        f"node-level transfer error does not 'fall' (as {_FALLS}) or its mean error at the "
        "largest n is above 1.5 times GWCN's"),
    results.Declared(
        "error_below_bound", "check",
        "the measured GWCN transfer error sits under the bound (size part + density part)",
        "bound = size-dependent + density-dependent term",
        "holds when, in every (schedule, n) cell, every sampled graph's GWCN node-level "
        "transfer error is at most its bound's size part plus density part"),
    results.Declared(
        "degree_core_density_falls", "check",
        "degree-ordered subgraphs form a dense core widening into a sparse tail",
        "subgraph density decays with size (fits of 1/n, log n / n, const)",
        "holds when the edge density of the degree-ordered subgraphs of the real graph falls "
        "strictly from each size of config.real_sizes to the next"),
    results.Declared(
        "cls_improves_with_subgraph", "paper",
        "node-classification accuracy rises and transfer error falls with the subgraph size",
        "accuracy / macro-F1 up, transfer error down with subgraph size (50 trials)",
        "holds when, at the largest training subgraph size of config.cls_sizes, the mean "
        "node-classification accuracy over config.cls_num_trials trials is above that at the "
        "smallest size and the mean transfer error below it (no significance test)"),
)


def claims(config: ml_collections.ConfigDict, m) -> list[Claim]:
  """The paper's claims, :data:`CLAIMS`, checked on the metrics ``m`` of :func:`run` (a pure
  function of both)."""
  if (config.decay_z, config.decay_threshold) != (_DECAY_Z, _DECAY_THRESHOLD):
    raise ValueError(f"config.decay_z and config.decay_threshold must be the declared rules' "
                     f"{_DECAY_Z} and {_DECAY_THRESHOLD} (a changed rule takes new claim ids), "
                     f"got {config.decay_z} and {config.decay_threshold}")
  sizes = list(config.sizes)
  n_max = sizes[-1]
  thr = config.decay_threshold
  z = config.decay_z
  sched = list(config.schedules)
  sparsest = sched[-1]
  cs = sorted(float(c) for c in np.asarray(config.degree_sweep_scales, np.float32))
  ms = sorted(config.cls_sizes)
  g_rates = {s: m[f"synthetic/gwcn_err_rate/{_TAG[s]}"] for s in sched}
  g_falls = {s: bool(m[f"synthetic/gwcn_err_falls/{_TAG[s]}"]) for s in sched}
  ro_rates = {s: m[f"synthetic/gwcn_readout_err_rate/{_TAG[s]}"] for s in sched}
  ro_falls = {s: bool(m[f"synthetic/gwcn_readout_err_falls/{_TAG[s]}"]) for s in sched}
  c_sp = m[f"synthetic/cgcn_err_rate/{_TAG[sparsest]}"]
  c_err = m[f"synthetic/cgcn_err_nmax/{_TAG[sparsest]}"]
  g_err = m[f"synthetic/gwcn_err_nmax/{_TAG[sparsest]}"]
  c_falls = bool(m[f"synthetic/cgcn_err_falls/{_TAG[sparsest]}"])
  laws = "; ".join(  # each sampler's density exponent and the R^2 of the two decaying laws
      f"{smp} ~m^{m[f'real/{smp}/density_exponent']:.2f}, R^2 of 1/n "
      f"{m[f'real/{smp}/density_fit_r2/1_n']:.2f}, of log n / n "
      f"{m[f'real/{smp}/density_fit_r2/logn_n']:.2f}"
      for smp in ("degree", "bfs", "random") if f"real/{smp}/density_exponent" in m)
  bound_ratio = ((m["synthetic/bound_size_nmax/1_n"] + m["synthetic/bound_density_nmax/1_n"])
                 / max(g_err, 1e-30))
  fmt = lambda d: ", ".join(f"{k}: {v:.2f}" for k, v in d.items())  # noqa: E731
  graphs = int(config.num_graphs)  # sampled graphs per (schedule, n); one network init
  trials = int(config.cls_num_trials)

  def cls_margin(kk, rises):
    """(largest - smallest size) of ``cls/<kk>_mean`` over the s.e. of that difference,
    from the per-size population stds (ddof 0) over the trials, unpaired."""
    lo, hi = ms[0], ms[-1]
    se = np.sqrt((m[f"cls/{kk}_std/m{lo}"] ** 2 + m[f"cls/{kk}_std/m{hi}"] ** 2)
                 / max(trials - 1, 1))
    gap = m[f"cls/{kk}_mean/m{hi}"] - m[f"cls/{kk}_mean/m{lo}"]
    on_side = gap > 0 if rises else gap < 0  # this part holds
    return margin_in_se(gap, 0.0, se), on_side

  cls_parts = [cls_margin("acc", True), cls_margin("transfer_err", False)]
  cls_holds = all(ok for _, ok in cls_parts)
  # a conjunction: holding, its weakest part decides; failing, its most clearly failing part
  cls_m = (min(v for v, _ in cls_parts) if cls_holds
           else max(v for v, ok in cls_parts if not ok))
  return results.as_declared([
      CLAIMS["gwcn_decay_every_schedule"].claim(
            f"fitted rates n^-r: {fmt(g_rates)}; falls (z>{z}, r>{thr}): "
            f"{', '.join(s for s in sched if g_falls[s]) or 'none'}; at n={n_max}, rho=c/n: "
            f"error ~ (n rho)^{m['synthetic/degree_sweep/gwcn_err_slope']:.2f} over "
            f"c={cs[0]:g}..{cs[-1]:g}",
            all(g_falls.values()),
            evidence=Evidence(seeds=graphs, note="per schedule, a z-test (n_min vs n_max over "
                              "the sampled graphs) and a fitted rate; the run stores neither z "
                              "nor the errors' s.e., so no margin")),
      CLAIMS["gwcn_decay_when_degree_grows"].claim(
            f"rates for {', '.join(s for s in sched if s != '1/n')}: "
            f"{fmt({s: g_rates[s] for s in sched if s != '1/n'})}",
            all(g_falls[s] for s in sched if s != "1/n")),
      CLAIMS["gwcn_readout_decay_every_schedule"].claim(
            f"readout rates: {fmt(ro_rates)}", all(ro_falls.values())),
      CLAIMS["cgcn_stalls_when_sparsest"].claim(
            f"c-GCN rate {c_sp:.2f}, error at n={n_max} {c_err:.3f} vs GWCN {g_err:.3f}",
            (not c_falls) or (c_err > 1.5 * g_err),
            evidence=Evidence(seeds=graphs, note="either part suffices (c-GCN not falling, or "
                              "1.5x GWCN's error at n_max); the run stores no s.e. of either")),
      CLAIMS["error_below_bound"].claim(
            f"{100 * m['synthetic/bound_holds_fraction']:.0f}% of (schedule, n) cells; at "
            f"n={n_max}, 1/n: size {m['synthetic/bound_size_nmax/1_n']:.2f} + density "
            f"{m['synthetic/bound_density_nmax/1_n']:.2f} vs measured {g_err:.3f} "
            f"(bound / error {bound_ratio:.0f}x; a relative error is at most about 1)",
            m["synthetic/bound_holds_fraction"] == 1.0),
      CLAIMS["degree_core_density_falls"].claim(
            f"density {m['real/degree/density_m_min']:.4f} -> "
            f"{m['real/degree/density_m_max']:.5f}; {laws} (a constant law has exponent 0)",
            bool(m["real/degree/density_decreasing"])),
      CLAIMS["cls_improves_with_subgraph"].claim(
            f"acc {m[f'cls/acc_mean/m{ms[0]}']:.3f} -> {m[f'cls/acc_mean/m{ms[-1]}']:.3f}, "
            f"transfer err {m[f'cls/transfer_err_mean/m{ms[0]}']:.3f} -> "
            f"{m[f'cls/transfer_err_mean/m{ms[-1]}']:.3f}",
            (m[f"cls/acc_mean/m{ms[-1]}"] > m[f"cls/acc_mean/m{ms[0]}"]) and
            (m[f"cls/transfer_err_mean/m{ms[-1]}"] < m[f"cls/transfer_err_mean/m{ms[0]}"]),
            evidence=Evidence(seeds=trials, margin_se=cls_m,
                              note="unpaired s.e. from the per-size stds (trials share "
                              "targets across sizes); the subgraph is the target's first m "
                              "nodes, so its transfer error is expected to shrink as m nears "
                              "the target's size")),
  ], CLAIMS)
