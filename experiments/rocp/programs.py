"""What the ROCP experiment computes: the methods it compares (:data:`METHODS`: ours, the
paper's evaluation, and the conformal sets acted on by RAC's max-min rule), every method's
sets and actions on one split, the evaluation of all of them over random
calibration/test splits (sharded over the mesh) at every alpha, and the three tasks' data.
:mod:`reprojax.experiments.rocp.experiment` runs them over every task x loss and gathers
the metrics.
"""

from __future__ import annotations

import functools

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections

from reprojax.algorithms import rocp
from reprojax.data import rocp as rocp_data
from reprojax.experiments import sharding
from reprojax.experiments.rocp import classifier

OURS = ("rocp", "rocp_global", "oracle", "lac", "aps_mapie", "raps", "rac_global_level",
        "best_response")
PAPER = ("rocp_released", "rac", "lac_paper", "aps_paper", "socop_0.25", "socop_0.0625",
         "best_response_dc")
_TWINS = ("lac", "aps_mapie", "raps", "lac_paper", "aps_paper", "socop_0.25", "socop_0.0625")
MAXMIN = tuple(f"{m}_maxmin" for m in _TWINS)  # the same sets acted on by RAC's max-min rule
METHODS = OURS + PAPER + MAXMIN
NO_SET = ("best_response", "best_response_dc")  # no set: robust risk taken with C = Y
PER_LABEL = ("rocp", "rocp_released", "rac", "rac_global_level", "best_response",
             "best_response_dc")  # methods whose per-label critical rates are reported
METRICS = ("coverage", "set_size", "robust_risk", "realized_loss", "critical_rate",
           "marginal_robust_risk")


def all_methods(path: rocp.CoveragePath, opath: rocp.CoveragePath, pc: jax.Array, yc: jax.Array,
                pt: jax.Array, loss: jax.Array, alpha: jax.Array,
                dc: rocp.DecisionCalibration) -> tuple[jax.Array, jax.Array]:
  """Sets and actions of every method of :data:`METHODS` for one split and one alpha.

  Args:
    path: :func:`reprojax.algorithms.rocp.calibrate` of the calibration split.
    opath: :func:`reprojax.algorithms.rocp.oracle_calibrate` of its inputs.
    pc, yc: calibration probabilities (n, Y) and labels (n,).
    pt: test probabilities (m, Y).
    loss: loss matrix (A, Y).
    alpha: miscoverage level.
    dc: :func:`reprojax.algorithms.rocp.decision_calibrate` fitted on (pc, yc).

  Returns:
    Sets bool (methods, m, Y) and actions int32 (methods, m); the best responses have
    the whole label space as their set.
  """
  full = jnp.ones(pt.shape, bool)
  br = rocp.best_response(pt, loss)
  br_dc = rocp.best_response(rocp.recalibrate(dc, pt), loss)
  preds = {
      "rocp": rocp.predict(path, pt, loss, alpha, "full"),
      "rocp_global": rocp.predict(path, pt, loss, alpha, "global"),
      "oracle": rocp.predict(opath, pt, loss, alpha, "oracle"),
      "lac": rocp.lac(pc, yc, pt, loss, alpha),
      "aps_mapie": rocp.aps_mapie(pc, yc, pt, loss, alpha),  # deterministic scores (u = 0)
      "raps": rocp.raps(pc, yc, pt, loss, alpha),
      "rac_global_level": rocp.rac_global_level(pc, yc, pt, loss, alpha),
      "rocp_released": rocp.predict(path, pt, loss, alpha, "released"),
      "rac": rocp.rac(pc, yc, pt, loss, alpha),
      "lac_paper": rocp.lac(pc, yc, pt, loss, alpha, clip=True),
      "aps_paper": rocp.aps_paper(pc, yc, pt, loss, alpha),
      "socop_0.25": rocp.socop(pc, yc, pt, loss, alpha, lam=0.25),
      "socop_0.0625": rocp.socop(pc, yc, pt, loss, alpha, lam=0.0625),
  }
  sets, actions = {}, {}
  for name, pred in preds.items():
    sets[name], actions[name] = pred.sets_NxY, pred.actions_N
  sets["best_response"], actions["best_response"] = full, br
  sets["best_response_dc"], actions["best_response_dc"] = full, br_dc
  for name in _TWINS:
    sets[f"{name}_maxmin"] = sets[name]
    actions[f"{name}_maxmin"] = rocp.maxmin_action(loss, sets[name])
  return (jnp.stack([sets[m] for m in METHODS]), jnp.stack([actions[m] for m in METHODS]))


def evaluate_split(key, probs, labels, loss, critical, alphas, n_cal):
  """All methods on one random split, vmapped over alphas.

  Returns metrics (L, methods, len(METRICS)) and per-label critical rates (L, methods, Y).
  """
  k_perm, k_dc = jax.random.split(key)
  perm = jax.random.permutation(k_perm, probs.shape[0])
  cal, test = perm[:n_cal], perm[n_cal:]
  pc, yc, pt, yt = probs[cal], labels[cal], probs[test], labels[test]
  path = rocp.calibrate(pc, yc, loss)  # alpha-free: shared by the vmap over alpha
  opath = rocp.oracle_calibrate(pc, loss)
  dc = rocp.decision_calibrate(k_dc, pc, yc, num_actions=loss.shape[0])  # alpha-free too

  def per_alpha(alpha):
    sets, actions = all_methods(path, opath, pc, yc, pt, loss, alpha, dc)
    m = jax.vmap(rocp.decision_metrics, in_axes=(0, 0, None, None, None, None))(
        sets, actions, yt, loss, critical, alpha)
    by_label = jax.vmap(rocp.critical_rates_by_label, in_axes=(0, None, None))(
        actions, yt, critical)
    return jnp.stack(m, axis=-1), by_label

  return jax.vmap(per_alpha)(alphas)


@functools.lru_cache(maxsize=None)
def sharded_evaluate(n_cal: int, mesh: jax.sharding.Mesh):
  """One compiled evaluation per calibration size and mesh: splits over ``data``.

  Each device runs its splits one after another (``sequential``): the 22 methods x alphas
  of one split are already a wide vmap, and stacking the splits too multiplied the peak
  memory (quick: 4.0 GB against 1.4 GB, full: 16 GB) for no speed (73 s against 61 s).
  """
  return sharding.vmap_sharded(functools.partial(evaluate_split, n_cal=n_cal), mesh,
                               in_axes=(0, None, None, None, None, None), sequential=True)


def evaluate(keys_S, probs_NxY, labels_N, loss_AxY, critical_AxY, alphas_L, n_cal: int,
             mesh: jax.sharding.Mesh | None = None):
  """Metrics (S, L, methods, len(METRICS)) and per-label critical rates (S, L, methods, Y).

  Over S splits and L alphas in one call.

  The S splits are independent replicas, spread over the ``data`` axis of
  ``mesh`` (default: every device); each device runs its splits' vmap over alpha.
  """
  mesh = sharding.make_mesh() if mesh is None else mesh
  return sharded_evaluate(int(n_cal), mesh)(keys_S, probs_NxY, labels_N, loss_AxY,
                                             critical_AxY, alphas_L)


def medical_n_cal(config: ml_collections.ConfigDict, pool: int) -> int:
  """Calibration patients per split: ``medical_cal_fraction`` of the held-out pool."""
  return int(round(config.medical_cal_fraction * pool))


def tasks(config: ml_collections.ConfigDict, key: jax.Array):
  """task -> (probs, labels, {loss name: (loss, critical)}, n_cal), and the medical task."""
  k_med, k_haz, k_rad = jax.random.split(key, 3)
  med = classifier.medical_task(k_med, n_train=config.medical_n_train,
                                manual_dir=config.manual_dir or None,
                                hidden=tuple(config.medical_hidden), steps=config.medical_steps)
  logging.info("medical: classifier accuracy train %.3f, held-out pool %.3f (%d patients)",
               med.train_accuracy, med.pool_accuracy, len(med.labels_N))
  haz = rocp_data.hazard_benchmark(k_haz, config.hazard_pool,
                                   temperature=config.hazard_temperature)
  rad = rocp_data.radiograph_benchmark(k_rad, config.radiograph_pool,
                                       temperature=config.radiograph_temperature)
  hazard_losses = {name: (loss, rocp_data.hazard_critical())
                   for name, loss in rocp_data.hazard_losses().items()}
  hazard_losses["driving"] = (rocp_data.driving_loss(), rocp_data.driving_critical())
  return {
      "medical": (jnp.asarray(med.probs_NxY), jnp.asarray(med.labels_N),
                  {name: (loss, rocp_data.medical_critical())
                   for name, loss in rocp_data.medical_losses().items()},
                  medical_n_cal(config, len(med.labels_N))),
      "hazard": (haz.probs_NxY, haz.labels_N, hazard_losses, config.hazard_n_cal),
      "radiograph": (rad.probs_NxY, rad.labels_N,
                     {name: (loss, rocp_data.radiograph_critical(loss))
                      for name, loss in rocp_data.radiograph_losses().items()},
                     config.radiograph_n_cal),
  }, med
