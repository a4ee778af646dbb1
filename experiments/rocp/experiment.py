"""ROCP experiments: methods x alpha levels x splits on the medical and hazard tasks.

For each task (breast-cancer diagnosis, static hazard decisions) and each loss
matrix (mild, severe), one jitted call evaluates every method on
``num_splits`` random calibration/test splits (``vmap``, split over the mesh's
``data`` axis by :func:`reprojax.experiments.sharding.vmap_sharded`) at every alpha
(``vmap``): ROCP (Algorithm 1, the finite-sample variant the claims use), ROCP
with one global beta (the released code's variant), the oracle risk-optimal
sets (beta fitted to the model's own coverage on unlabelled calibration inputs),
split conformal LAC, APS and RAPS with the minimax action, RAC, and best
response. Metrics are means +- standard errors over the splits.
"""

from __future__ import annotations

import functools
import time
from typing import Mapping

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import rocp
from reprojax.data import rocp as rocp_data
from reprojax.experiments import sharding
from reprojax.experiments.common import standard_error
from reprojax.experiments.results import Claim
from reprojax.experiments.rocp import classifier
from reprojax.experiments.rocp import plots

METHODS = ("rocp", "rocp_global", "oracle", "lac", "aps", "raps", "rac", "best_response")
BASELINES = ("lac", "aps", "raps", "rac", "best_response")
CONFORMAL = ("lac", "aps", "raps")
METRICS = ("coverage", "set_size", "robust_risk", "realized_loss", "critical_rate",
           "marginal_robust_risk")
TASKS = ("medical", "hazard")
LOSSES = ("mild", "severe")


# Open intervals of config fields beyond the naming rules (experiments/config_check.py).
CONFIG_RANGES = {"alphas": (0.0, 1.0), "report_alpha": (0.0, 1.0)}


def all_methods(path: rocp.CoveragePath, opath: rocp.CoveragePath, pc: jax.Array, yc: jax.Array,
                pt: jax.Array, loss: jax.Array, alpha: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Sets and actions of every method of :data:`METHODS` for one split and one alpha.

  Args:
    path: :func:`reprojax.algorithms.rocp.calibrate` of the calibration split.
    opath: :func:`reprojax.algorithms.rocp.oracle_calibrate` of its inputs.
    pc, yc: calibration probabilities (n, Y) and labels (n,).
    pt: test probabilities (m, Y).
    loss: loss matrix (A, Y).
    alpha: miscoverage level.

  Returns:
    Sets bool (methods, m, Y) and actions int32 (methods, m); best response has
    the whole label space as its set.
  """
  preds = [
      rocp.predict(path, pt, loss, alpha, "full"),
      rocp.predict(path, pt, loss, alpha, "global"),
      rocp.predict(opath, pt, loss, alpha, "oracle"),
      rocp.lac(pc, yc, pt, loss, alpha),
      rocp.aps(pc, yc, pt, loss, alpha),  # deterministic scores (u = 0)
      rocp.raps(pc, yc, pt, loss, alpha),
      rocp.rac(pc, yc, pt, loss, alpha),
  ]
  sets = [p.sets_NxY for p in preds] + [jnp.ones(pt.shape, bool)]
  actions = [p.actions_N for p in preds] + [rocp.best_response(pt, loss)]
  return jnp.stack(sets), jnp.stack(actions)


def _evaluate_split(key, probs, labels, loss, critical, alphas, n_cal):
  """All methods on one random split, vmapped over alphas: metrics (L, methods, len(METRICS))."""
  perm = jax.random.permutation(key, probs.shape[0])
  cal, test = perm[:n_cal], perm[n_cal:]
  pc, yc, pt, yt = probs[cal], labels[cal], probs[test], labels[test]
  path = rocp.calibrate(pc, yc, loss)  # alpha-free: shared by the vmap over alpha
  opath = rocp.oracle_calibrate(pc, loss)

  def per_alpha(alpha):
    sets, actions = all_methods(path, opath, pc, yc, pt, loss, alpha)
    m = jax.vmap(rocp.decision_metrics, in_axes=(0, 0, None, None, None, None))(
        sets, actions, yt, loss, critical, alpha)
    return jnp.stack(m, axis=-1)  # (methods, len(METRICS))

  return jax.vmap(per_alpha)(alphas)


@functools.lru_cache(maxsize=None)
def _sharded_evaluate(n_cal: int, mesh: jax.sharding.Mesh):
  """One compiled evaluation per calibration size and mesh: splits over ``data``."""
  return sharding.vmap_sharded(functools.partial(_evaluate_split, n_cal=n_cal), mesh,
                               in_axes=(0, None, None, None, None, None))


def evaluate(keys_S, probs_NxY, labels_N, loss_AxY, critical_AxY, alphas_L, n_cal: int,
             mesh: jax.sharding.Mesh | None = None):
  """Metrics (S, L, methods, len(METRICS)) over S splits and L alphas in one call.

  The S splits are independent replicas, spread over the ``data`` axis of
  ``mesh`` (default: every device); each device runs its splits' vmap over alpha.
  """
  mesh = sharding.make_mesh() if mesh is None else mesh
  return _sharded_evaluate(int(n_cal), mesh)(keys_S, probs_NxY, labels_N, loss_AxY,
                                             critical_AxY, alphas_L)


def _medical_n_cal(config: ml_collections.ConfigDict, pool: int) -> int:
  """Calibration patients per split: ``medical_cal_fraction`` of the held-out pool."""
  return int(round(config.medical_cal_fraction * pool))


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  With a key: concrete, valid inputs drawn from it (synthetic is fine: no dataset
  loading, no data generation, no files); with None: ``jax.ShapeDtypeStruct`` args only.

  The step is :func:`evaluate` (the program :func:`run` compiles) for one cell of
  the grid: every method on all ``num_splits`` random calibration/test splits at
  every alpha, on the medical task (the held-out pool of the 569 patients less
  ``medical_n_train``, two labels) with the severe loss. The hazard cells run the
  same program at larger sizes (8 labels, ``hazard_pool`` scenes): compiling it
  takes about as long, running it about ten times longer.
  The synthetic classifier probabilities are ``softmax(2 z)`` with standard
  normal z, and the labels are drawn from them.
  """
  pool = rocp_data.MEDICAL_PATIENTS - int(config.medical_n_train)
  num_labels, s = len(rocp_data.MEDICAL_LABELS), int(config.num_splits)
  loss = rocp_data.medical_losses()["severe"]
  critical = rocp_data.medical_critical()
  alphas = np.asarray(config.alphas, np.float32)
  build = functools.partial(_sharded_evaluate, _medical_n_cal(config, pool))
  if key is None:
    sds = jax.ShapeDtypeStruct
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), s))
    args = (keys, sds((pool, num_labels), jnp.float32), sds((pool,), jnp.int32),
            sds(loss.shape, loss.dtype), sds(critical.shape, critical.dtype),
            sds(alphas.shape, alphas.dtype))
  else:
    k_keys, k_p, k_y = jax.random.split(key, 3)
    probs = jax.nn.softmax(2.0 * jax.random.normal(k_p, (pool, num_labels)), axis=-1)
    labels = jax.random.categorical(k_y, jnp.log(probs)).astype(jnp.int32)
    args = (jax.random.split(k_keys, s), probs, labels, loss, critical, alphas)
  return sharding.Step(build, args)


def _tasks(config, key):
  k_med, k_haz = jax.random.split(key)
  med = classifier.medical_task(k_med, n_train=config.medical_n_train,
                                manual_dir=config.manual_dir or None,
                                hidden=tuple(config.medical_hidden), steps=config.medical_steps)
  logging.info("medical: classifier accuracy train %.3f, held-out pool %.3f (%d patients)",
               med.train_accuracy, med.pool_accuracy, len(med.labels_N))
  haz = rocp_data.hazard_benchmark(k_haz, config.hazard_pool,
                                   temperature=config.hazard_temperature)
  n_med_cal = _medical_n_cal(config, len(med.labels_N))
  return {
      "medical": (jnp.asarray(med.probs_NxY), jnp.asarray(med.labels_N), rocp_data.medical_losses(),
                  rocp_data.medical_critical(), n_med_cal),
      "hazard": (haz.probs_NxY, haz.labels_N, rocp_data.hazard_losses(),
                 rocp_data.hazard_critical(), config.hazard_n_cal),
  }, med


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Both tasks x both loss matrices; writes the plots and returns the flat metrics.

  Metrics are at ``report_alpha`` (means and standard errors over the splits),
  plus paired ROCP - baseline differences, each method's miscoverage at every
  alpha and its largest excess over alpha in standard errors.
  """
  if float(config.report_alpha) not in [float(a) for a in config.alphas]:
    raise ValueError(f"report_alpha {config.report_alpha} must be one of alphas {config.alphas}")
  key = jax.random.key(config.seed)
  k_data, k_split = jax.random.split(key)
  tasks, med = _tasks(config, k_data)
  alphas = np.asarray(config.alphas, np.float32)
  ia = int(np.argmin(np.abs(alphas - config.report_alpha)))
  keys = jax.random.split(k_split, config.num_splits)
  mesh = sharding.config_mesh(config)
  table = {}
  metrics: dict[str, float] = {"medical_pool_accuracy": med.pool_accuracy,
                               "medical_train_accuracy": med.train_accuracy}
  for task in TASKS:
    probs, labels, losses, critical, n_cal = tasks[task]
    for lname in LOSSES:
      t0 = time.time()
      res = np.asarray(evaluate(keys, probs, labels, jnp.asarray(losses[lname]),
                                jnp.asarray(critical), jnp.asarray(alphas), n_cal=n_cal,
                                mesh=mesh))
      mean = res.mean(0)
      se = standard_error(res, axis=0)
      table[(task, lname)] = (mean, se)
      logging.info("%s/%s: %d splits x %d alphas in %.1f s", task, lname, res.shape[0],
                   len(alphas), time.time() - t0)
      for mi, method in enumerate(METHODS):
        for c, metric in enumerate(METRICS):
          if method == "best_response" and metric in ("coverage", "set_size"):
            continue
          metrics[f"{task}/{lname}/{method}/{metric}"] = float(mean[ia, mi, c])
          metrics[f"{task}/{lname}/{method}/{metric}_se"] = float(se[ia, mi, c])
      for b in BASELINES:  # paired over splits: is a gap more than noise?
        for metric in ("robust_risk", "critical_rate"):
          c = METRICS.index(metric)
          d = res[:, ia, METHODS.index("rocp"), c] - res[:, ia, METHODS.index(b), c]
          metrics[f"{task}/{lname}/rocp_minus_{b}/{metric}"] = float(d.mean())
          metrics[f"{task}/{lname}/rocp_minus_{b}/{metric}_se"] = float(standard_error(d))
      for method in ("rocp", "rocp_global", "lac"):
        mi = METHODS.index(method)
        miscov = 1 - res[:, :, mi, 0]  # (S, L)
        z = (miscov.mean(0) - alphas) / np.maximum(standard_error(miscov, axis=0), 1e-12)
        metrics[f"{task}/{lname}/{method}/max_miscoverage_excess_z"] = float(z.max())
        for a, m in zip(alphas, miscov.mean(0)):
          metrics[f"{task}/{lname}/{method}/miscoverage@{a:g}"] = float(m)
  plots.metrics_vs_alpha(workdir, table, alphas, tasks=TASKS, losses=LOSSES, methods=METHODS,
                         metrics=METRICS)
  return metrics


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]) -> list[Claim]:
  """The paper's claims, decided from the metrics of :func:`run` alone (pure)."""
  return _claims(metrics, config.report_alpha)


def _claims(m, report_alpha):
  claims = []
  zs = {f"{t}/{l}": m[f"{t}/{l}/rocp/max_miscoverage_excess_z"] for t in TASKS for l in LOSSES}
  claims.append(Claim(
      id="coverage",
      statement="ROCP keeps marginal coverage >= 1 - alpha (miscoverage within binomial error "
                "of alpha, never systematically above)",
      paper="coverage at or above 1 - alpha for every alpha (plots)",
      ours="max over tasks/losses/7 alphas of (mean miscoverage - alpha)/s.e.: "
           + ", ".join(f"{k} {v:.2f}" for k, v in zs.items()),
      holds=all(v <= 2.0 for v in zs.values()), kind="paper"))
  rr_ok, cm_ok, rr_txt, cm_txt = [], [], [], []
  for t in TASKS:
    for l in LOSSES:
      r = m[f"{t}/{l}/rocp/robust_risk"]
      best_b = min(BASELINES, key=lambda b: m[f"{t}/{l}/{b}/robust_risk"])
      best = m[f"{t}/{l}/{best_b}/robust_risk"]
      rr_ok.append(r <= best)
      rr_txt.append(f"{t}/{l} {r:.3f} vs best baseline {best:.3f} ({best_b}; paired diff "
                    f"{m[f'{t}/{l}/rocp_minus_{best_b}/robust_risk']:+.4f} +- "
                    f"{m[f'{t}/{l}/rocp_minus_{best_b}/robust_risk_se']:.4f})")
      c = m[f"{t}/{l}/rocp/critical_rate"]
      worst_gap = min(m[f"{t}/{l}/{b}/critical_rate"] - c for b in BASELINES)
      cm_ok.append(worst_gap >= 0)
      cm_txt.append(f"{t}/{l} {c:.4f} vs " + "/".join(
          f"{m[f'{t}/{l}/{b}/critical_rate']:.4f}" for b in BASELINES))
  claims.append(Claim(
      id="robust_risk",
      statement=f"ROCP has the lowest worst-case (robust) risk among RAC, best response, "
                f"LAC, APS, RAPS (alpha = {report_alpha})",
      paper="lowest robust risk (plots)", ours="; ".join(rr_txt), holds=all(rr_ok), kind="paper"))
  claims.append(Claim(
      id="critical_mistakes",
      statement=f"ROCP makes no more critical mistakes than LAC/APS/RAPS/RAC/best response "
                f"(alpha = {report_alpha})",
      paper="fewer critical mistakes than baselines (plots)",
      ours="; ".join(cm_txt) + " (order lac/aps/raps/rac/br)", holds=all(cm_ok), kind="paper"))
  gains, ok = [], []
  for t in TASKS:
    g, d = {}, {}
    for l in LOSSES:
      best = min(m[f"{t}/{l}/{b}/robust_risk"] for b in CONFORMAL)
      d[l] = best - m[f"{t}/{l}/rocp/robust_risk"]
      g[l] = d[l] / best
    ok.append(g["severe"] > g["mild"])  # relative gain, fixed before the first run
    gains.append(f"{t}: mild {100 * g['mild']:.1f}% ({d['mild']:.3f}), "
                 f"severe {100 * g['severe']:.1f}% ({d['severe']:.3f})")
  claims.append(Claim(
      id="larger_gain_when_costly",
      statement="ROCP's relative robust-risk gain over the best conformal baseline is larger "
                "when out-of-set errors are costly (severe vs mild loss)",
      paper="larger gains when out-of-set errors are costly",
      ours="relative (absolute) gain " + "; ".join(gains), holds=all(ok), kind="paper"))
  return claims
