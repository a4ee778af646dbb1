"""SNV's programs: what the experiment computes, each stage a function over all replicas.

The digits stream and the maskable MLP, SNV's game (the authors' loss payoff with mean
ablation), the per-replica stages (a task's training with its penalty and frozen
neurons, the Shapley valuation, the consolidation that scores and freezes neurons for
``magnitude``, ``random``, ``activation``, ``snv`` (Algorithm 1) and ``snv_a`` (SNV-A, with
its masked consolidation), dense and Eq. (1) masked evaluation), the loop of every replica
through every task (:func:`run_stream`), the mask-based baselines' own loops (WSN,
:func:`run_wsn`; PEC, :func:`run_pec`; their maths is ``algorithms/snv``'s ``wsn_*`` and
``pec_*``), the estimator's rank stability and the accuracy summaries. No claims, no
result files: ``experiment.run`` orchestrates these, ``claims.py`` judges the metrics.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import snv
from reprojax.data import continual
from reprojax.experiments import sharding
from reprojax.models import maskable_mlp

PROTOCOLS = ("task", "class")
PENALTIES = ("ewc", "si", "mas")
FREEZERS = ("magnitude", "random", "activation", "snv", "snv_a")
METHODS = ("finetune",) + PENALTIES + FREEZERS
MASKED = ("snv", "snv_a")  # scored also by Eq. (1): each task through its own subnetwork
VALUED = ("snv", "snv_a")  # the methods whose neurons get Shapley values


class Variant(NamedTuple):
  protocol: str
  method: str
  hyper: float  # lam for a penalty, c for a freezer, 0 for finetune

  @property
  def name(self) -> str:
    return f"{self.protocol}_{self.method}_{self.hyper:g}"


def variants(config) -> list[Variant]:
  grids = {"finetune": (0.0,), "ewc": config.ewc_lambdas, "si": config.si_strengths,
           "mas": config.mas_lambdas, "snv_a": (config.snv_a_coverage,)}
  out = []
  for p in PROTOCOLS:
    for m in METHODS:
      for h in grids.get(m, config.freeze_fractions):
        out.append(Variant(p, m, float(h)))
  return out


def make_stream(config) -> continual.TaskStream:
  """The seeds' splits stacked: every array ``(S, T, ...)``; classes ``(S, T, C)``."""
  first = int(config.seed)
  return continual.stack_streams([
      seed_stream(config, s) for s in range(first, first + int(config.num_seeds))])


def seed_stream(config, seed: int) -> continual.TaskStream:
  """One seed's split of ``config.dataset``."""
  if config.dataset == "digits":
    return continual.digits_stream(int(config.num_tasks), int(config.classes_per_task), seed=seed)
  if config.dataset == "permuted_digits":
    if int(config.classes_per_task) != 10:
      raise ValueError(f"permuted_digits has 10 classes per task; set config.classes_per_task"
                       f"=10, got {config.classes_per_task}")
    return continual.permuted_digits_stream(int(config.num_tasks), seed=seed)
  raise ValueError(f"config.dataset must be 'digits' or 'permuted_digits', got "
                   f"{config.dataset!r}")


def make_model(config) -> maskable_mlp.MaskableMLP:
  return maskable_mlp.MaskableMLP(hidden=tuple(int(h) for h in config.hidden),
                                  num_classes=int(config.num_tasks * config.classes_per_task))


def _class_task(config) -> np.ndarray:
  """The task of every class, ``(K,)``."""
  return np.repeat(np.arange(int(config.num_tasks)), int(config.classes_per_task)).astype(np.int32)


def active_classes(class_task_K, task, protocol):
  """The classes a loss or a prediction ranges over after ``task``: its own (task-IL,
  protocol 0) or every class seen so far (class-IL, protocol 1)."""
  return jnp.where(protocol == 0, class_task_K == task, class_task_K <= task)


def _masked(logits, active):
  return jnp.where(active, logits, -1e9)


def trainable_masks(model, params, frozen_N, head_frozen_K):
  """0/1 masks like ``params``: frozen neurons' incoming weights and biases, frozen head units."""
  inner = dict(params["params"])
  start, sizes = 0, list(model.hidden) + [model.num_classes]
  for i, width in enumerate(sizes):
    layer = f"Dense_{i}"
    frozen = head_frozen_K if i == len(model.hidden) else frozen_N[start:start + width]
    k, b = snv.dense_trainable(frozen, inner[layer]["kernel"].shape[0])
    inner[layer] = {"kernel": k, "bias": b}
    start += width if i < len(model.hidden) else 0
  return {"params": inner}


def make_game(model):
  """SNV's game on ``model``: ``game(mask_N, params, fill_N, x, y, active)`` is minus the
  cross-entropy over the ``active`` classes with the neurons outside the mask replaced by
  ``fill_N`` (the authors' loss payoff, mean ablation). One function per model, so
  every valuation of a run reuses one compiled estimator."""

  def game(mask_N, params, fill_N, x, y, active):
    logits = _masked(model.apply(params, x, mask_N, fill_N), active)
    return -jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))

  return game


def game_args(model, params, x, y, active) -> tuple:
  """The game's arguments after the mask; the fill is each neuron's mean pre-activation on ``x``."""
  _, pre = model.apply(params, x, hidden_out=True)
  return (params, pre.mean(0), x, y, active)


class Fns(NamedTuple):
  train: Any
  shapley: Any
  consolidate: Any
  evaluate: Any
  evaluate_masked: Any
  consolidate_a: Any


def make_fns(config, mesh) -> Fns:
  """The four per-replica stages, each ``vmap_sharded`` over replicas (shared data: None)."""
  model = make_model(config)
  class_task = jnp.asarray(_class_task(config))
  steps, batch, lr = int(config.train_steps), int(config.batch_size), float(config.learning_rate)
  opt = snv.freeze(optax.adam(lr))

  def ce(params, x, y, active):
    logits = _masked(model.apply(params, x), active)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y)

  def train_one(params, frozen_N, head_K, anchor, omega, lam, protocol, task, seed_idx, key,
                x_all, y_all):
    x, y = x_all[seed_idx, task], y_all[seed_idx, task]
    active = active_classes(class_task, task, protocol)
    masks = trainable_masks(model, params, frozen_N, head_K)

    def body(carry, t):
      p, s, path = carry
      idx = jax.random.randint(jax.random.fold_in(key, t), (batch,), 0, x.shape[0])
      loss, g = jax.value_and_grad(lambda q: jnp.mean(ce(q, x[idx], y[idx], active)))(p)
      total = jax.tree.map(lambda gi, pi, ai, wi: gi + lam * wi * (pi - ai), g, p, anchor, omega)
      u, s = opt.update(total, s, p, trainable=masks)
      return (optax.apply_updates(p, u), s, snv.si_path_step(path, g, u)), loss

    zeros = jax.tree.map(jnp.zeros_like, params)
    (params, _, path), losses = jax.lax.scan(body, (params, opt.init(params), zeros),
                                             jnp.arange(steps))
    return params, path, losses

  game = make_game(model)

  def shapley_one(params, protocol, task, seed_idx, key, x_all, y_all):
    x, y = x_all[seed_idx, task], y_all[seed_idx, task]
    active = active_classes(class_task, task, protocol)
    est = snv.tmc_shapley(game, game_args(model, params, x, y, active), key,
                          num_players=sum(model.hidden),
                          num_permutations=int(config.num_permutations),
                          tolerance=float(config.truncation), chunk=int(config.shapley_chunk))
    return est.values_N, est.num_evaluations

  def consolidate_one(params, start, path, omega, frozen_N, head_K, method, hyper, protocol,
                      task, seed_idx, shap_N, key, xt_all, yt_all, xv_all):
    x, y = xt_all[seed_idx, task], yt_all[seed_idx, task]
    active = active_classes(class_task, task, protocol)
    act_B = jnp.broadcast_to(active, (x.shape[0],) + active.shape)

    def nll(p, ex):
      xi, yi, ai = ex
      return ce(p, xi[None], yi[None], ai)[0]

    def out(p, ex):
      xi, ai = ex
      return jnp.where(ai, model.apply(p, xi[None])[0], 0.0)

    m = method  # every importance is computed for every replica (cheap here), one kept
    fisher = snv.fisher_diagonal(nll, params, (x, y, act_B))
    mas = snv.mas_importance(out, params, (x, act_B))
    si = snv.si_importance(path, params, start, damping=float(config.si_damping))
    add = jax.tree.map(lambda f, a, s: jnp.where(m == METHODS.index("ewc"), f,
                                                 jnp.where(m == METHODS.index("mas"), a,
                                                           jnp.where(m == METHODS.index("si"),
                                                                     s, 0.0))),
                       fisher, mas, si)
    omega = jax.tree.map(jnp.add, omega, add)
    xv = xv_all[seed_idx, task]
    _, pre = model.apply(params, xv, hidden_out=True)
    kernels = [params["params"][f"Dense_{i}"]["kernel"] for i in range(len(model.hidden))]
    scores = jnp.stack([
        jnp.concatenate([snv.magnitude_importance(k) for k in kernels]),
        jax.random.uniform(key, (pre.shape[-1],)),
        snv.activation_importance(jax.nn.relu(pre)),
        shap_N])
    score = scores[jnp.clip(m - METHODS.index("magnitude"), 0, 3)]
    freezer = m >= METHODS.index("magnitude")
    picked_N = jnp.where(
        m == METHODS.index("snv_a"),  # SNV-A: the adaptive S_t, hyper is its coverage
        snv.adaptive_subnetwork(shap_N, frozen_N, hyper, float(config.snv_a_max_new),
                                float(config.snv_a_min_share)),
        snv.top_fraction(score, hyper)) & freezer  # S_t (Algorithm 1: top c by score)
    frozen_N = frozen_N | picked_N
    head_K = jnp.where(freezer, head_K | (class_task == task), head_K)
    fill_N = pre.mean(0)  # the mean responses Eq. (1) clamps the neurons outside S_t to
    return (omega, frozen_N, head_K, trainable_masks(model, params, frozen_N, head_K), picked_N,
            fill_N)

  cons_steps = int(config.consolidation_steps)

  def consolidate_a_one(params, frozen_N, head_K, keep_N, fill_N, task, seed_idx, key, x_all,
                        y_all):
    """SNV-A's masked consolidation: ``consolidation_steps`` Adam steps (a fresh Adam) on
    task t's own classes through S_t (``keep_N``, the others clamped to ``fill_N``); only
    what earlier tasks left plastic moves (``frozen_N``, ``head_K`` before this task)."""
    x, y = x_all[seed_idx, task], y_all[seed_idx, task]
    own = class_task == task
    masks = trainable_masks(model, params, frozen_N, head_K)

    def loss_fn(p, idx):
      logits = _masked(model.apply(p, x[idx], keep_N, fill_N), own)
      return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y[idx]))

    def body(carry, t):
      p, s = carry
      idx = jax.random.randint(jax.random.fold_in(key, t), (batch,), 0, x.shape[0])
      g = jax.grad(loss_fn)(p, idx)
      u, s = opt.update(g, s, p, trainable=masks)
      return (optax.apply_updates(p, u), s), None

    (params, _), _ = jax.lax.scan(body, (params, opt.init(params)), jnp.arange(cons_steps))
    return params

  def evaluate_one(params, task, seed_idx, x_all, y_all):
    x, y = x_all[seed_idx], y_all[seed_idx]  # (T, M, D), (T, M)
    logits = jax.vmap(lambda xt: model.apply(params, xt))(x)  # (T, M, K)
    tasks = jnp.arange(x.shape[0])
    own = class_task[None, :] == tasks[:, None]  # (T, K)
    seen = class_task <= task
    til = jnp.argmax(_masked(logits, own[:, None, :]), -1) == y
    cil = jnp.argmax(_masked(logits, seen), -1) == y
    return til.mean(-1), cil.mean(-1)

  def evaluate_masked_one(params, subnets_TxN, fills_TxN, routing, task, seed_idx, x_all, y_all):
    """Eq. (1): task j scored through its own S_j, the other neurons clamped to the means
    stored when j froze (task-IL); class-IL routes over the seen tasks' subnetworks
    (``routing`` 0: concatenated logits, 1: max-probability)."""
    x, y = x_all[seed_idx], y_all[seed_idx]  # (T, M, D), (T, M)
    # logits of subnetwork c on task j's examples: (T c, T j, M, K)
    logits = jax.vmap(lambda keep, fill: jax.vmap(
        lambda xt: model.apply(params, xt, keep, fill))(x))(subnets_TxN, fills_TxN)
    t_num = x.shape[0]
    tasks = jnp.arange(t_num)
    own = class_task[None, :] == tasks[:, None]  # (T, K)
    mine = logits[tasks, tasks]  # (T j, M, K): task j through S_j
    til = jnp.argmax(_masked(mine, own[:, None, :]), -1) == y
    seen = class_task <= task
    pred = jax.vmap(lambda lg: jnp.where(routing == 1, snv.route(lg, class_task, seen, "maxprob"),
                                         snv.route(lg, class_task, seen, "concat")),
                    in_axes=1)(logits)  # (T j, M)
    cil = pred == y
    return til.mean(-1), cil.mean(-1)

  vs = functools.partial(sharding.vmap_sharded, mesh=mesh)
  return Fns(
      train=vs(train_one, in_axes=(0,) * 10 + (None, None)),
      shapley=vs(shapley_one, in_axes=(0,) * 5 + (None, None)),
      consolidate=vs(consolidate_one, in_axes=(0,) * 13 + (None, None, None)),
      evaluate=vs(evaluate_one, in_axes=(0, None, 0, None, None)),
      evaluate_masked=vs(evaluate_masked_one, in_axes=(0, 0, 0, 0, None, 0, None, None)),
      consolidate_a=vs(consolidate_a_one, in_axes=(0,) * 8 + (None, None)))


class Replicas(NamedTuple):
  variants: list  # of Variant
  protocol_R: np.ndarray
  method_R: np.ndarray
  hyper_R: np.ndarray
  seed_R: np.ndarray  # index into the seeds' streams


def replicas(config) -> Replicas:
  vs = variants(config)
  s = int(config.num_seeds)
  rep = lambda f: np.repeat(np.asarray([f(v) for v in vs]), s)  # noqa: E731
  return Replicas(vs, rep(lambda v: PROTOCOLS.index(v.protocol)).astype(np.int32),
                  rep(lambda v: METHODS.index(v.method)).astype(np.int32),
                  rep(lambda v: v.hyper).astype(np.float32),
                  np.tile(np.arange(s), len(vs)).astype(np.int32))


def _keys(config, stage: int, task: int, r: int):
  base = jax.random.fold_in(jax.random.fold_in(jax.random.key(int(config.seed)), stage), task)
  return jax.random.split(base, r)


class Stream(NamedTuple):
  acc: dict  # "test_task", "val_class", ...: (R, T after, T task) accuracies, dense network
  final_loss: np.ndarray  # (R, T) mean loss over the last tenth of each task's steps
  evals: list  # per valuation, (R_snv,) coalitions evaluated
  drift: float  # largest change of a frozen parameter after it froze (0 when freezing holds)
  num_frozen: int  # parameter entries frozen at the end
  frozen: np.ndarray  # (R, N) bool, neurons frozen at the end
  first: Any  # (params, protocol, seed) of SNV's first valued network
  masked_idx: np.ndarray  # rows scored also by Eq. (1) (methods in MASKED)
  acc_masked: dict  # like acc, (len(masked_idx), T, T): task j through its S_j


def run_stream(config, mesh, stream: continual.TaskStream, reps: Replicas) -> Stream:
  """Every replica through every task: train, value (SNV), consolidate and freeze, then
  test. Each task is valued and frozen, the last too. Returns a :class:`Stream`."""
  fns = make_fns(config, mesh)
  model = make_model(config)
  r, t_num = len(reps.seed_R), int(config.num_tasks)
  init_keys = jax.random.split(jax.random.fold_in(jax.random.key(int(config.seed)), 99), r)
  # replicas of one seed start from the same weights: variants differ only by method
  init_keys = init_keys[reps.seed_R]
  x0 = jnp.zeros((1, stream.x_train.shape[-1]))
  params = jax.vmap(lambda k: model.init(k, x0))(init_keys)
  n, k = sum(model.hidden), model.num_classes
  frozen = jnp.zeros((r, n), bool)
  head = jnp.zeros((r, k), bool)
  omega = jax.tree.map(jnp.zeros_like, params)
  anchor = params
  snv_idx = np.flatnonzero(np.isin(reps.method_R, [METHODS.index(m) for m in VALUED]))
  a_idx = np.flatnonzero(reps.method_R == METHODS.index("snv_a"))
  # SNV-A is task-local (the authors' task_local): it trains and is valued on the task's
  # own classes (its own head) in both protocols; class-IL is decided at inference (routing)
  train_protocol = np.where(reps.method_R == METHODS.index("snv_a"), 0, reps.protocol_R
                            ).astype(np.int32)
  acc = {f"{split}_{p}": np.zeros((r, t_num, t_num)) for split in ("test", "val")
         for p in PROTOCOLS}
  final_loss = np.zeros((r, t_num))
  masked_idx = np.flatnonzero(np.isin(reps.method_R, [METHODS.index(m) for m in MASKED]))
  routing = (reps.method_R == METHODS.index("snv_a")).astype(np.int32) if "snv_a" in METHODS \
      else np.zeros((r,), np.int32)
  acc_masked = {k: np.zeros((len(masked_idx), t_num, t_num)) for k in acc}
  subnets, fills = np.zeros((r, t_num, n), bool), np.zeros((r, t_num, n), np.float32)
  evals, shap_first = [], None
  reference = jax.tree.map(lambda x: np.full(x.shape, np.nan, np.float32), params)
  for t in range(t_num):
    task = np.full((r,), t, np.int32)
    params, path, losses = fns.train(params, frozen, head, anchor, omega, reps.hyper_R *
                                     np.isin(reps.method_R, [METHODS.index(m) for m in
                                                             PENALTIES]),
                                     train_protocol, task, reps.seed_R, _keys(config, 0, t, r),
                                     stream.x_train, stream.y_train)
    final_loss[:, t] = np.asarray(losses)[:, -max(1, int(config.train_steps) // 10):].mean(1)
    # every task is valued and frozen, the last too: Eq. (1) scores it through its S_t
    shap = np.zeros((r, n), np.float32)
    if len(snv_idx):
      sub = jax.tree.map(lambda x: x[snv_idx], params)
      values, n_eval = fns.shapley(sub, train_protocol[snv_idx], task[snv_idx],
                                   reps.seed_R[snv_idx], _keys(config, 1, t, len(snv_idx)),
                                   stream.x_val, stream.y_val)
      shap[snv_idx] = np.asarray(values)
      evals.append(np.asarray(n_eval))
      if shap_first is None:
        shap_first = (jax.tree.map(lambda x: x[snv_idx[0]], params), int(train_protocol[
            snv_idx[0]]), int(reps.seed_R[snv_idx[0]]))
    frozen_before, head_before = frozen, head
    omega, frozen, head, masks, picked, fill = fns.consolidate(
        params, anchor, path, omega, frozen, head, reps.method_R, reps.hyper_R, reps.protocol_R,
        task, reps.seed_R, shap, _keys(config, 2, t, r), stream.x_train, stream.y_train,
        stream.x_val)
    subnets[:, t], fills[:, t] = np.asarray(picked), np.asarray(fill)
    if len(a_idx):  # SNV-A retrains task t through S_t before S_t freezes
      take = lambda tree: jax.tree.map(lambda x: x[a_idx], tree)  # noqa: E731
      new = fns.consolidate_a(take(params), np.asarray(frozen_before)[a_idx],
                              np.asarray(head_before)[a_idx], subnets[a_idx, t],
                              fills[a_idx, t], task[a_idx], reps.seed_R[a_idx],
                              _keys(config, 3, t, len(a_idx)), stream.x_train, stream.y_train)
      params = jax.tree.map(lambda x, y: jnp.asarray(x).at[a_idx].set(y), params, new)
    # where an entry has just frozen, remember its value: it must never change again
    reference = jax.tree.map(
        lambda ref, m, p: np.where((np.asarray(m) == 0) & np.isnan(ref), np.asarray(p), ref),
        reference, masks, params)
    for split, xs, ys in (("test", stream.x_test, stream.y_test),
                          ("val", stream.x_val, stream.y_val)):
      til, cil = fns.evaluate(params, np.int32(t), reps.seed_R, xs, ys)
      acc[f"{split}_task"][:, t] = np.asarray(til)
      acc[f"{split}_class"][:, t] = np.asarray(cil)
      if len(masked_idx):
        sub = jax.tree.map(lambda x: x[masked_idx], params)
        til, cil = fns.evaluate_masked(sub, subnets[masked_idx], fills[masked_idx],
                                       routing[masked_idx], np.int32(t), reps.seed_R[masked_idx],
                                       xs, ys)
        acc_masked[f"{split}_task"][:, t] = np.asarray(til)
        acc_masked[f"{split}_class"][:, t] = np.asarray(cil)
    anchor = params
  drift = max(float(np.nanmax(np.abs(np.where(np.isnan(ref), np.nan, np.asarray(p) - ref)),
                              initial=0.0))
              for ref, p in zip(jax.tree.leaves(reference), jax.tree.leaves(params)))
  num_frozen = int(sum(np.sum(~np.isnan(ref)) for ref in jax.tree.leaves(reference)))
  return Stream(acc, final_loss, evals, drift, num_frozen, np.asarray(frozen), shap_first,
                masked_idx, acc_masked)


def run_wsn(config, mesh, stream: continual.TaskStream) -> tuple[list, dict]:
  """WSN in the task-IL protocol, every capacity in ``config.wsn_capacities`` and seed as
  one replica: a score per parameter entry, task t's mask the top ``capacity`` share of
  each array's scores (``snv.wsn_mask``), weights used by earlier tasks frozen, task t
  scored through its stored mask. Returns the capacities and ``{"test_task", "val_task"}``
  accuracy matrices ``(C * S, T, T)`` (capacity-major)."""
  model = make_model(config)
  class_task = jnp.asarray(_class_task(config))
  caps = [float(c) for c in config.wsn_capacities]
  s, t_num = int(config.num_seeds), int(config.num_tasks)
  cap_R = np.repeat(np.asarray(caps, np.float32), s)
  seed_R = np.tile(np.arange(s), len(caps)).astype(np.int32)
  r = len(seed_R)
  steps, batch, lr = int(config.train_steps), int(config.batch_size), float(config.learning_rate)
  opt_w, opt_s = snv.freeze(optax.adam(lr)), optax.adam(lr)

  def train_one(params, scores, used, cap, task, seed_idx, key, x_all, y_all):
    x, y = x_all[seed_idx, task], y_all[seed_idx, task]
    own = class_task == task

    def loss(p, sc, idx):
      logits = _masked(model.apply(snv.wsn_apply(p, snv.wsn_mask(sc, cap)), x[idx]), own)
      return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y[idx]))

    trainable = jax.tree.map(lambda m: 1.0 - m, used)

    def body(carry, i):
      p, sc, sw, ss = carry
      idx = jax.random.randint(jax.random.fold_in(key, i), (batch,), 0, x.shape[0])
      gp, gs = jax.grad(loss, argnums=(0, 1))(p, sc, idx)
      u, sw = opt_w.update(gp, sw, p, trainable=trainable)
      p = optax.apply_updates(p, u)
      u, ss = opt_s.update(gs, ss, sc)
      return (p, optax.apply_updates(sc, u), sw, ss), None

    carry = (params, scores, opt_w.init(params), opt_s.init(scores))
    params, scores, _, _ = jax.lax.scan(body, carry, jnp.arange(steps))[0]
    mask = jax.tree.map(jax.lax.stop_gradient, snv.wsn_mask(scores, cap))
    return params, scores, jax.tree.map(jnp.maximum, used, mask), mask

  def eval_one(params, masks_T, seed_idx, x_all, y_all):
    x, y = x_all[seed_idx], y_all[seed_idx]
    tasks = jnp.arange(x.shape[0])
    logits = jax.vmap(lambda m, xt: model.apply(snv.wsn_apply(params, m), xt))(masks_T, x)
    own = class_task[None, :] == tasks[:, None]
    return (jnp.argmax(_masked(logits, own[:, None, :]), -1) == y).mean(-1)

  vs = functools.partial(sharding.vmap_sharded, mesh=mesh)
  train = vs(train_one, in_axes=(0,) * 7 + (None, None))
  evaluate = vs(eval_one, in_axes=(0, 0, 0, None, None))
  keys = jax.random.split(jax.random.fold_in(jax.random.key(int(config.seed)), 98), r)
  x0 = jnp.zeros((1, stream.x_train.shape[-1]))
  params = jax.vmap(lambda k: model.init(k, x0))(keys)
  scores = jax.tree.map(lambda p: 0.1 * jax.random.normal(jax.random.fold_in(keys[0], 1),
                                                          p.shape), params)
  used = jax.tree.map(jnp.zeros_like, params)
  masks = jax.tree.map(lambda p: jnp.zeros((p.shape[0], t_num) + p.shape[1:]), params)
  acc = {f"{split}_task": np.zeros((r, t_num, t_num)) for split in ("test", "val")}
  for t in range(t_num):
    task = np.full((r,), t, np.int32)
    params, scores, used, m = train(params, scores, used, cap_R, task, seed_R,
                                    _keys(config, 4, t, r), stream.x_train, stream.y_train)
    masks = jax.tree.map(lambda a, b: jnp.asarray(a).at[:, t].set(b), masks, m)
    for split, xs, ys in (("test", stream.x_test, stream.y_test),
                          ("val", stream.x_val, stream.y_val)):
      acc[f"{split}_task"][:, t] = np.asarray(evaluate(params, masks, seed_R, xs, ys))
  return caps, acc


def run_pec(config, mesh, stream: continual.TaskStream) -> dict:
  """PEC in the class-IL protocol: per seed a random teacher, per class a student fitted for
  ``config.pec_steps`` Adam steps on that class's training examples only; a test input goes
  to the seen class whose student errs least. Returns ``{"test_class", "val_class"}``
  accuracy matrices ``(S, T, T)``."""
  class_task = np.asarray(_class_task(config))
  s, k_num = int(config.num_seeds), len(class_task)
  d = stream.x_train.shape[-1]
  hid, emb, teach = int(config.pec_hidden), int(config.pec_outputs), int(config.pec_teacher_hidden)
  opt = optax.adam(float(config.learning_rate))
  batch = int(config.batch_size)

  def net(key, h):
    k = jax.random.split(key, 2)
    return {"w1": jax.random.normal(k[0], (d, h)) / np.sqrt(d), "b1": jnp.zeros((h,)),
            "w2": jax.random.normal(k[1], (h, emb)) / np.sqrt(h), "b2": jnp.zeros((emb,))}

  def fit_one(student, teacher, k, seed_idx, key, x_all, y_all):
    task = jnp.asarray(class_task)[k]
    x, y = x_all[seed_idx, task], y_all[seed_idx, task]
    prob = (y == k) / jnp.maximum(jnp.sum(y == k), 1)

    def body(carry, i):
      p, st = carry
      idx = jax.random.choice(jax.random.fold_in(key, i), x.shape[0], (batch,), p=prob)
      g = jax.grad(lambda q: jnp.mean((snv.pec_net(q, x[idx]) -
                                       snv.pec_net(teacher, x[idx])) ** 2))(p)
      u, st = opt.update(g, st)
      return (optax.apply_updates(p, u), st), None

    return jax.lax.scan(body, (student, opt.init(student)), jnp.arange(int(config.pec_steps)))[0][0]

  base = jax.random.fold_in(jax.random.key(int(config.seed)), 97)
  teachers = jax.vmap(lambda i: net(jax.random.fold_in(base, i), teach))(jnp.arange(s))
  seed_R = np.repeat(np.arange(s), k_num).astype(np.int32)
  class_R = np.tile(np.arange(k_num), s).astype(np.int32)
  students = jax.vmap(lambda i: net(jax.random.fold_in(base, 1000 + i), hid))(
      jnp.arange(s * k_num))
  fit = sharding.vmap_sharded(fit_one, mesh=mesh, in_axes=(0,) * 5 + (None, None))
  teacher_R = jax.tree.map(lambda a: a[seed_R], teachers)
  students = fit(students, teacher_R, class_R, seed_R, _keys(config, 5, 0, s * k_num),
                 stream.x_train, stream.y_train)
  students = jax.tree.map(lambda a: a.reshape((s, k_num) + a.shape[1:]), students)
  t_num = int(config.num_tasks)
  acc = {}
  for split, xs, ys in (("test", stream.x_test, stream.y_test),
                        ("val", stream.x_val, stream.y_val)):
    err = jax.vmap(lambda te, stu, x: jax.vmap(lambda xt: snv.pec_errors(te, stu, xt))(x))(
        teachers, students, jnp.asarray(xs))  # (S, T, M, K)
    err = np.asarray(err)
    a = np.zeros((s, t_num, t_num))
    for t in range(t_num):
      pred = np.argmin(np.where(class_task <= t, err, np.inf), -1)
      a[:, t] = (pred == ys).mean(-1)
    acc[f"{split}_class"] = a
  return acc


def rank_stability(config, stream, first) -> tuple[float, float]:
  """Spearman's rho between two estimator seeds on one trained network (SNV's first
  valuation), and the efficiency gap of an untruncated estimate relative to v(N) - v(empty)."""
  params, protocol, seed = first
  model = make_model(config)
  class_task = jnp.asarray(_class_task(config))
  game = make_game(model)
  args = game_args(model, params, stream.x_val[seed, 0], stream.y_val[seed, 0],
                   active_classes(class_task, 0, protocol))
  kw = dict(num_players=sum(model.hidden), num_permutations=int(config.num_permutations),
            chunk=int(config.shapley_chunk))
  a = snv.tmc_shapley(game, args, jax.random.key(1), tolerance=float(config.truncation), **kw)
  b = snv.tmc_shapley(game, args, jax.random.key(2), tolerance=float(config.truncation), **kw)
  full = snv.tmc_shapley(game, args, jax.random.key(3), tolerance=0.0, **kw)
  n = sum(model.hidden)
  total = float(game(jnp.ones(n), *args) - game(jnp.zeros(n), *args))
  gap = abs(float(jnp.sum(full.values_N)) - total) / max(abs(total), 1e-12)
  return float(snv.rank_correlation(a.values_N, b.values_N)), gap


def final_average(acc_RxTxT: np.ndarray) -> np.ndarray:
  """Average accuracy over all tasks after the last one, ``(R,)``."""
  return acc_RxTxT[:, -1].mean(-1)


def backward_transfer(acc_RxTxT: np.ndarray) -> np.ndarray:
  """Mean over earlier tasks of (final accuracy - accuracy right after learning it)."""
  t = acc_RxTxT.shape[1]
  return np.mean([acc_RxTxT[:, -1, j] - acc_RxTxT[:, j, j] for j in range(t - 1)], axis=0)


class Arm(NamedTuple):
  hyper: float
  final: np.ndarray  # (S,) final average test accuracy
  val: np.ndarray  # (S,) final average validation accuracy
  bwt: np.ndarray  # (S,) backward transfer (test)
  bwt_all: np.ndarray  # (S, T - 1) A[T-1, j] - A[j, j] (test)
  rows: np.ndarray  # (S,) replica rows (into reps), for the dense arms


def arm(h, a_test, a_val, rows) -> Arm:
  """One grid point of a method: its summaries over seeds from its ``(S, T, T)`` test and
  validation accuracy matrices."""
  t = a_test.shape[1]
  return Arm(h, final_average(a_test), final_average(a_val), backward_transfer(a_test),
             np.stack([a_test[:, -1, j] - a_test[:, j, j] for j in range(t - 1)], -1), rows)


def arms(reps: Replicas, st: Stream, protocol: str) -> dict[str, list[Arm]]:
  """Each method's grid points in ``protocol``: the dense arms from ``st.acc``; from
  ``st.acc_masked`` (Eq. (1)), ``snv_alg1``, Algorithm 1 as written (SNV's replicas,
  concatenated-logit routing in class-IL), and ``snv_a`` (max-probability routing)."""
  s = int(np.max(reps.seed_R)) + 1
  out: dict[str, list[Arm]] = {}

  for i, v in enumerate(reps.variants):
    if v.protocol != protocol:
      continue
    rows = np.arange(i * s, i * s + s)
    if v.method != "snv_a":  # SNV-A is scored by Eq. (1) only, as its authors score it
      out.setdefault(v.method, []).append(arm(v.hyper, st.acc[f"test_{protocol}"][rows],
                                              st.acc[f"val_{protocol}"][rows], rows))
    if v.method in MASKED:
      pos = np.searchsorted(st.masked_idx, rows)
      name = "snv_alg1" if v.method == "snv" else v.method
      out.setdefault(name, []).append(arm(v.hyper, st.acc_masked[f"test_{protocol}"][pos],
                                          st.acc_masked[f"val_{protocol}"][pos], rows))
  return out
