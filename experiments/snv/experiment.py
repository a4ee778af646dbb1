"""SNV's experiment: buffer-free continual learning on split digits, SNV beside its baselines.

Stream: scikit-learn's digits cut into ``num_tasks`` tasks of ``classes_per_task``
classes (``data/continual.py``), each seed its own split. Network: an MLP whose
hidden neurons can be mean-ablated (``models/maskable_mlp.py``), one head over all
classes. Each task trains ``train_steps`` Adam steps (a fresh Adam per task) on the
cross-entropy over the protocol's active classes: the task's own classes in the
task-incremental protocol (a multi-head network), every class seen so far in the
class-incremental one. Tested after every task: task-IL accuracy (argmax over the
task's classes) and class-IL accuracy (argmax over every class seen so far).

Methods, each with one hyperparameter on a grid picked by the final validation
accuracy of its protocol (mean over seeds):

* ``finetune``: nothing kept.
* ``ewc``, ``si``, ``mas``: a quadratic penalty ``lam/2 sum omega (theta - theta*)^2``
  toward the previous task's end, omega accumulated over tasks (``snv.fisher_diagonal``
  on the task's training data, ``snv.si_importance`` of the task's path,
  ``snv.mas_importance``); the grid is ``lam``.
* ``magnitude`` (PackNet-style), ``random``, ``activation``, ``snv``: after each task,
  freeze the top ``c`` of all hidden neurons by a score (L1 norm of incoming weights,
  uniform noise, mean |activation| on validation, Shapley value), cumulatively,
  with the task's head units (``snv.top_fraction``, ``snv.freeze``, as the authors'
  code freezes earlier heads); the grid is ``c``.

SNV's game is the authors': v(S) = minus the cross-entropy, over the protocol's
active classes, on the current task's validation examples, with the neurons outside
S mean-ablated at their pre-activation (means over the same examples); the estimator
is ``snv.tmc_shapley`` with their reported setting (reverse order, 32 permutations,
truncation 0.05, no bandit). Not reproduced: the authors' SNV-A additions that
produced their numbers (masked consolidation training, per-task masked inference and
BN snapshots, rotation heads and routing for class-IL; see README.md).

Stages are programs over all replicas (variant x seed), split over the mesh's
``data`` axis by ``experiments.sharding.vmap_sharded``: a task's training (a
``lax.scan``), the Shapley values of the SNV replicas, the consolidation (importances,
freezing) and the evaluation, all in ``programs.py``; this module orchestrates them
(:func:`run`: the stream, the arms, the picks on validation, the metrics and figures) and
the claims are judged in ``claims.py``. :func:`main_step` is the training program.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.snv import claims
from reprojax.experiments.snv import plots
from reprojax.experiments.snv import programs

_POS = (0.5, float("inf"))
CONFIG_RANGES = {"num_tasks": (1.5, 20.5), "classes_per_task": (0.5, 10.5), "train_steps": _POS,
                 "batch_size": _POS, "learning_rate": (0.0, float("inf")),
                 "num_permutations": (2, float("inf")), "truncation": (0.0, 1.0),
                 "shapley_chunk": _POS, "si_damping": (0.0, float("inf")),
                 "snv_a_coverage": (0.0, 1.0), "snv_a_max_new": (0.0, 1.0),
                 "snv_a_min_share": (0.0, 1.0), "consolidation_steps": (-0.5, float("inf"))}


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Trains every variant and seed through the stream, picks each method's hyperparameter
  on validation, writes the figures and returns the metrics.

  Per protocol ``p`` (``task``, ``class``) and method ``m``: ``p_m_acc`` (final average
  test accuracy of the picked variant; mean over seeds) with ``_se``, ``p_m_bwt``,
  ``p_m_pick`` (the picked hyperparameter); every grid point's ``p_m_<h>_val`` and
  ``p_m_<h>_acc``. Per protocol: ``p_best_baseline`` (index into ``claims.BASELINES``
  of the strongest buffer-free baseline), ``p_snv_gain`` (SNV minus it, paired over seeds)
  with ``_se``; ``p_snv_vs_random`` and ``p_snv_vs_activation`` (paired gaps at SNV's
  picked fraction) with ``_se``. Also ``rank_correlation``, ``efficiency_gap``,
  ``frozen_drift`` (largest change of a frozen parameter, 0 when freezing holds),
  ``num_frozen_entries``, ``shapley_evals`` (mean coalitions per valuation), and
  ``snv_acc_matrix_<p>_<i>_<j>`` (SNV's mean test accuracy on task j after task i).
  """
  _check_config(config)
  mesh = sharding.config_mesh(config)
  stream = programs.make_stream(config)
  reps = programs.replicas(config)
  st = programs.run_stream(config, mesh, stream, reps)
  acc, final_loss, evals, drift, num_frozen, frozen, first = st[:7]
  s = int(config.num_seeds)
  metrics: dict[str, float] = {"num_seeds": s, "frozen_drift": drift,
                               "num_frozen_entries": num_frozen,
                               "final_loss_max": float(final_loss.max()),
                               "shapley_evals": float(np.mean(evals)) if evals else 0.0}
  caps, wsn_acc = programs.run_wsn(config, mesh, stream)
  pec_acc = programs.run_pec(config, mesh, stream)
  for p in programs.PROTOCOLS:
    table = programs.arms(reps, st, p)
    if p == "task":
      for i, c in enumerate(caps):
        rows = np.arange(i * s, i * s + s)
        table.setdefault("wsn", []).append(programs.arm(c, wsn_acc["test_task"][rows],
                                                        wsn_acc["val_task"][rows], rows))
    else:
      table["pec"] = [programs.arm(0.0, pec_acc["test_class"], pec_acc["val_class"],
                                   np.arange(s))]
    picks = {}
    for m, rows in table.items():
      for a in rows:
        metrics[f"{p}_{m}_{a.hyper:g}_val"] = float(a.val.mean())
        metrics[f"{p}_{m}_{a.hyper:g}_acc"] = float(a.final.mean())
      best = rows[int(np.argmax([a.val.mean() for a in rows]))]
      picks[m] = best
      metrics[f"{p}_{m}_pick"] = best.hyper
      metrics[f"{p}_{m}_acc"] = float(best.final.mean())
      metrics[f"{p}_{m}_acc_se"] = float(common.standard_error(best.final))
      metrics[f"{p}_{m}_bwt"] = float(best.bwt.mean())
      metrics[f"{p}_{m}_bwt_max_abs"] = float(np.max(np.abs(best.bwt_all)))
    pool = claims.MASK_BASELINES[p]
    best = int(np.argmax([picks[b].final.mean() for b in pool]))
    gain = picks["snv_a"].final - picks[pool[best]].final
    metrics[f"{p}_snv_a_best_baseline"] = best
    metrics[f"{p}_snv_a_gain"] = float(gain.mean())
    metrics[f"{p}_snv_a_gain_se"] = float(common.standard_error(gain))
    strongest = int(np.argmax([picks[b].final.mean() for b in claims.BASELINES]))
    gain = picks["snv"].final - picks[claims.BASELINES[strongest]].final
    metrics[f"{p}_best_baseline"] = strongest
    metrics[f"{p}_snv_gain"] = float(gain.mean())
    metrics[f"{p}_snv_gain_se"] = float(common.standard_error(gain))
    c = picks["snv"].hyper
    for other in ("random", "activation"):
      d = picks["snv"].final - next(a for a in table[other] if a.hyper == c).final
      metrics[f"{p}_snv_vs_{other}"] = float(d.mean())
      metrics[f"{p}_snv_vs_{other}_se"] = float(common.standard_error(d))
    rows = picks["snv"].rows
    mat = acc[f"test_{p}"][rows].mean(0)
    for i in range(mat.shape[0]):
      for j in range(mat.shape[1]):
        metrics[f"snv_acc_matrix_{p}_{i}_{j}"] = float(mat[i, j])
    metrics[f"{p}_snv_frozen_share"] = float(frozen[rows].mean())
  if first is not None:
    rho, gap = programs.rank_stability(config, stream, first)
    metrics["rank_correlation"], metrics["efficiency_gap"] = rho, gap
  plots.plot_methods(workdir, config, metrics)
  plots.plot_matrix(workdir, config, metrics)
  return metrics


def _check_config(config) -> None:
  if config.batch_size < 1 or config.train_steps < 1:
    raise ValueError("batch_size and train_steps must be >= 1")
  fr = np.asarray(config.freeze_fractions, np.float64)
  if fr.size == 0 or np.any(fr < 0) or np.any(fr > 1):
    raise ValueError(f"config.freeze_fractions must be in [0, 1], got {tuple(fr)}")


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """One task's training program over every replica at ``config``'s shapes.

  With a key: concrete inputs (a random stream of the digits' shapes, weights from
  ``model.init``, a third of the neurons frozen, importances drawn from it); with
  None: ``jax.ShapeDtypeStruct`` args only.
  """
  reps = programs.replicas(config)
  r, s, t = len(reps.seed_R), int(config.num_seeds), int(config.num_tasks)
  model = programs.make_model(config)
  # one split, for its shapes
  _, n_tr, d = programs.seed_stream(config, int(config.seed)).x_train.shape
  params = jax.eval_shape(jax.vmap(lambda k: model.init(k, jnp.zeros((1, d)))),
                          jax.eval_shape(lambda: jax.random.split(jax.random.key(0), r)))
  n, k = sum(model.hidden), model.num_classes
  shapes = ((r, n), (r, k))
  if key is None:
    sd = lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype)  # noqa: E731
    args = (params, jax.ShapeDtypeStruct(shapes[0], jnp.bool_),
            jax.ShapeDtypeStruct(shapes[1], jnp.bool_), params, params,
            jax.ShapeDtypeStruct((r,), jnp.float32), jax.ShapeDtypeStruct((r,), jnp.int32),
            jax.ShapeDtypeStruct((r,), jnp.int32), jax.ShapeDtypeStruct((r,), jnp.int32),
            jax.eval_shape(lambda: jax.random.split(jax.random.key(0), r)),
            jax.ShapeDtypeStruct((s, t, n_tr, d), jnp.float32),
            jax.ShapeDtypeStruct((s, t, n_tr), jnp.int32))
    args = jax.tree.map(sd, args)
  else:
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)))
    p = jax.vmap(lambda kk: model.init(kk, jnp.zeros((1, d))))(jax.random.split(key, r))
    draw = lambda shape: rng.normal(size=shape).astype(np.float32)  # noqa: E731
    anchor = jax.tree.map(lambda x: x + 0.01 * draw(x.shape), p)
    omega = jax.tree.map(lambda x: np.abs(draw(x.shape)), p)
    args = (p, rng.random(shapes[0]) < 0.3, rng.random(shapes[1]) < 0.3, anchor, omega,
            reps.hyper_R, reps.protocol_R, rng.integers(0, t, r).astype(np.int32), reps.seed_R,
            jax.random.split(key, r), rng.random((s, t, n_tr, d)).astype(np.float32),
            rng.integers(0, k, (s, t, n_tr)).astype(np.int32))

  def build(mesh):
    return programs.make_fns(config, mesh).train

  return sharding.Step(build, args)
