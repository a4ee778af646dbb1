"""ROCP experiments: two protocols (the paper's evaluation and ours) x tasks x losses x alphas x splits.

Tasks: breast-cancer diagnosis (real data, mild and severe losses of ours), static
hazard decisions (our 3-action mild and severe losses, and the paper's 4-action driving
loss) and a synthetic 4-class radiograph stand-in with the paper's COVID losses Lambda0
and Lambda1. For each task and loss, one jitted call evaluates every method of
:data:`METHODS` on ``num_splits`` random calibration/test splits (``vmap``, spread over
the mesh's ``data`` axis by :func:`reprojax.experiments.sharding.vmap_sharded`) at every
alpha (``vmap``).

* **Ours** (:data:`OURS`): ROCP by the paper's Algorithm 1 (finite-sample valid), ROCP
  with one global beta at ceil((1-alpha)(n+1)) points, the oracle sets, LAC, APS as MAPIE,
  RAPS, RAC with one global level (our first reading), plain best response.
* **The paper's evaluation** (:data:`PAPER`), from the authors' evaluation code: ROCP with
  one global beta whose calibration coverage reaches 1 - alpha on the n points (no +1),
  the paper's RAC (a level per input from one bisected multiplier), LAC and APS with the
  mass strictly above the label and SOCOP at lambda 0.25 and 0.0625 (quantile clipped to
  the largest score), best response after decision calibration; critical mistakes per
  critical label at alpha = 0.05 against RAC and best response only.
* Every conformal baseline is scored with the minimax (ROCP's) action and, as
  ``<name>_maxmin``, with RAC's max-min action.

Metrics are means +- standard errors over the splits; each claim says which protocol it
follows.

What is computed (the methods, one split's evaluation, the sharded evaluation over the
splits, the tasks' data) is :mod:`reprojax.experiments.rocp.programs`; the claims and the
tasks, losses and comparisons they read are :mod:`reprojax.experiments.rocp.claims`.
"""

from __future__ import annotations

import functools
import time

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.data import rocp as rocp_data
from reprojax.experiments import sharding
from reprojax.experiments.common import standard_error
from reprojax.experiments.rocp import claims
from reprojax.experiments.rocp import plots
from reprojax.experiments.rocp import programs

# Open intervals of config fields beyond the naming rules (experiments/config_check.py).
CONFIG_RANGES = {"alphas": (0.0, 1.0), "report_alpha": (0.0, 1.0)}


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  With a key: concrete, valid inputs drawn from it (synthetic is fine: no dataset
  loading, no data generation, no files); with None: ``jax.ShapeDtypeStruct`` args only.

  The step is :func:`reprojax.experiments.rocp.programs.evaluate` (the program
  :func:`run` compiles) for one cell of the grid: every method on all ``num_splits``
  random calibration/test splits at every alpha, on the medical task (the held-out pool
  of the 569 patients less ``medical_n_train``, two labels) with the severe loss. The
  hazard cells run the same program at larger sizes (8 labels, ``hazard_pool`` scenes):
  compiling it takes about as long, running it about ten times longer.
  The synthetic classifier probabilities are ``softmax(2 z)`` with standard
  normal z, and the labels are drawn from them.
  """
  pool = rocp_data.MEDICAL_PATIENTS - int(config.medical_n_train)
  num_labels, s = len(rocp_data.MEDICAL_LABELS), int(config.num_splits)
  loss = rocp_data.medical_losses()["severe"]
  critical = rocp_data.medical_critical()
  alphas = np.asarray(config.alphas, np.float32)
  build = functools.partial(programs.sharded_evaluate, programs.medical_n_cal(config, pool))
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


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Every task x loss; writes the plots and returns the flat metrics.

  Metrics are at ``report_alpha`` (means and standard errors over the splits),
  plus paired ROCP - baseline differences under both protocols, per-label critical
  rates and their paired differences, robust risk at every alpha of the paper's grid,
  miscoverage at every alpha and its largest excess over alpha in standard errors.
  """
  alphas_cfg = [float(a) for a in config.alphas]
  if float(config.report_alpha) not in alphas_cfg:
    raise ValueError(f"report_alpha {config.report_alpha} must be one of alphas {config.alphas}")
  if not config.tasks or set(config.tasks) - set(claims.TASKS):
    raise ValueError(f"tasks must be a non-empty subset of {claims.TASKS}, got {config.tasks}")
  key = jax.random.key(config.seed)
  k_data, k_split = jax.random.split(key)
  tasks, med = programs.tasks(config, k_data)
  alphas = np.asarray(config.alphas, np.float32)
  ia = int(np.argmin(np.abs(alphas - config.report_alpha)))
  keys = jax.random.split(k_split, config.num_splits)
  mesh = sharding.config_mesh(config)
  table = {}
  metrics: dict[str, float] = {"medical_pool_accuracy": med.pool_accuracy,
                               "medical_train_accuracy": med.train_accuracy}
  idx = {m: i for i, m in enumerate(programs.METHODS)}
  for task in config.tasks:
    probs, labels, losses, n_cal = tasks[task]
    for lname in claims.LOSSES[task]:
      loss, critical = losses[lname]
      cell = f"{task}/{lname}"
      t0 = time.time()
      res, by_label = programs.evaluate(keys, probs, labels, jnp.asarray(loss),
                                        jnp.asarray(critical), jnp.asarray(alphas),
                                        n_cal=n_cal, mesh=mesh)
      res, by_label = np.asarray(res), np.asarray(by_label)
      mean = res.mean(0)
      se = standard_error(res, axis=0)
      table[(task, lname)] = (mean, se)
      logging.info("%s: %d splits x %d alphas in %.1f s", cell, res.shape[0], len(alphas),
                   time.time() - t0)
      for method in programs.METHODS:
        for c, metric in enumerate(programs.METRICS):
          if method in programs.NO_SET and metric in ("coverage", "set_size"):
            continue
          metrics[f"{cell}/{method}/{metric}"] = float(mean[ia, idx[method], c])
          metrics[f"{cell}/{method}/{metric}_se"] = float(se[ia, idx[method], c])
      rr = programs.METRICS.index("robust_risk")
      for ours, others in (("rocp", claims.BASELINES),
                           ("rocp_released", claims.PAPER_RISK_BASELINES)):
        for b in others:  # paired over splits: is a gap more than noise?
          for metric in ("robust_risk", "critical_rate"):
            c = programs.METRICS.index(metric)
            d = res[:, ia, idx[ours], c] - res[:, ia, idx[b], c]
            metrics[f"{cell}/{ours}_minus_{b}/{metric}"] = float(d.mean())
            metrics[f"{cell}/{ours}_minus_{b}/{metric}_se"] = float(standard_error(d))
      for method in (("rocp_released",) + claims.PAPER_RISK_BASELINES
                     + ("rocp", "rac_global_level")):
        for j, a in enumerate(alphas_cfg):
          if a in claims.PAPER_ALPHAS:
            metrics[f"{cell}/{method}/robust_risk@{claims.alpha_key(a)}"] = float(
                mean[j, idx[method], rr])
      critical_labels = [y for y in range(critical.shape[1]) if critical[:, y].any()]
      for y in critical_labels:
        for method in programs.PER_LABEL:
          metrics[f"{cell}/{method}/critical_rate@{y}"] = float(
              by_label[:, ia, idx[method], y].mean())
        for b in claims.PAPER_CRITICAL_BASELINES:
          d = by_label[:, ia, idx["rocp_released"], y] - by_label[:, ia, idx[b], y]
          metrics[f"{cell}/rocp_released_minus_{b}/critical_rate@{y}"] = float(d.mean())
          metrics[f"{cell}/rocp_released_minus_{b}/critical_rate@{y}_se"] = float(standard_error(d))
      for method in ("rocp", "rocp_global", "rocp_released", "lac"):
        miscov = 1 - res[:, :, idx[method], 0]  # (S, L)
        z = (miscov.mean(0) - alphas) / np.maximum(standard_error(miscov, axis=0), 1e-12)
        metrics[f"{cell}/{method}/max_miscoverage_excess_z"] = float(z.max())
        for a, m in zip(alphas_cfg, miscov.mean(0)):
          metrics[f"{cell}/{method}/miscoverage@{claims.alpha_key(a)}"] = float(m)
  plots.metrics_vs_alpha(workdir, table, alphas, tasks=config.tasks, losses=claims.LOSSES,
                         methods=PLOTTED, metrics=programs.METRICS, index=idx)
  return metrics


PLOTTED = ("rocp", "rocp_released", "rac", "rac_global_level", "lac", "aps_paper", "socop_0.25",
           "best_response_dc")  # the figures' lines (every method is in the metrics)
