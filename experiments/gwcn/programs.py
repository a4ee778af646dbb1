"""GWCN's computation: the synthetic transfer errors against the graphon limit (and the
bound's parts), the degree sweep, the real-graph subgraph densities and readout errors, and
the SBM node classification, each a jitted (vmapped, mesh-sharded) program that
``experiment.run`` calls. No claims and no result files here.
"""

from __future__ import annotations

import functools

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import gwcn
from reprojax.data import gwcn as gwcn_data
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.models import gcn


# ============================================================== Part 1: synthetic transfer

def _intermediate_inputs(model, params, x, shift):
  """The limit network's input to each layer, ``[f_0, f_1, ...]``, and its output."""
  out, state = model.apply(params, x, shift, capture_intermediates=True)
  inter = state["intermediates"]
  fs = [x]
  for i in range(len(model.features) - 1):
    fs.append(jax.nn.relu(inter[f"layer_{i}"]["__call__"][0]))
  return fs, out


def synthetic_one(key, rho, params, quad_V, kernel_VV, *, n, graphon, model, delta):
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
  """:func:`synthetic_one` over ``R`` replicas (graph keys and their ``rho``), split over ``data``.

  The replicas run ``batch`` at a time (``None``: all at once) through one
  compiled :func:`reprojax.experiments.sharding.vmap_sharded` call per batch shape;
  returns the per-replica dict of arrays, each of leading size ``R``.
  """
  fn = functools.partial(synthetic_one, n=n, graphon=graphon, model=model, delta=delta)
  run_ = sharding.vmap_sharded(fn, mesh, in_axes=(0, 0, None, None, None))
  r = keys_R.shape[0]
  batch = r if batch is None else batch
  parts = [run_(keys_R[i:i + batch], rhos_R[i:i + batch], params, quad_V, kernel_VV)
           for i in range(0, r, batch)]
  return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


def synthetic_setup(config):
  """The sphere graphon, the untrained GCN and the quadrature points of the synthetic part."""
  graphon = gwcn_data.sphere_gaussian(config.bandwidth)
  model = gcn.GCN(features=(config.hidden, config.out_features), num_taps=2)
  return graphon, model, graphon.quadrature(config.num_quadrature)


def init_params(model, graphon, quad_V, key):
  """The untrained network's parameters, drawn from ``key`` (shared by every replica)."""
  return model.init(key, graphon.features(quad_V[:4]), jnp.eye(4))


def schedule_densities(config, n):
  """``rho(n)`` of each schedule of ``config.schedules`` (float32, as the replicas see it)."""
  return np.array([gwcn.sparsity(n, s, c)
                   for s, c in zip(config.schedules, config.schedule_scales)], np.float32)


def synthetic_transfer(config, key, mesh=None):
  """:func:`synthetic_errors` at every ``n`` of ``config.sizes`` and every schedule of
  ``config.schedules`` (``config.num_graphs`` graphs each, one network): returns
  ``{schedule: {n: per-graph dict, with the schedule's "rho"}}``."""
  graphon, model, quad_V = synthetic_setup(config)
  kernel_VV = graphon.kernel(quad_V, quad_V)
  k_param, k_graphs = jax.random.split(key)
  params = init_params(model, graphon, quad_V, k_param)
  sched = list(config.schedules)
  out = {s: {} for s in sched}
  for n in config.sizes:
    # every (schedule, graph) pair of this n: the replica axis, split over the mesh
    rhos = schedule_densities(config, n)
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
  graphon, model, quad_V = synthetic_setup(config)
  k_param, k_graphs = jax.random.split(key)
  params = init_params(model, graphon, quad_V, k_param)
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
  """Degree-ordered, BFS and uniform subgraphs of ``config.real_graph`` at each size of
  ``config.real_sizes``: their edge densities (and fitted laws) and the GWCN / c-GCN readout
  and node transfer errors to the full graph. Returns ``({scheme: entry}, nodes, edges)``."""
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
  """The SBM node classification at each subgraph size of ``config.cls_sizes``
  (``config.cls_num_trials`` vmapped trials, the same targets at every size): returns
  ``({m: per-trial dict}, rho)``."""
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
