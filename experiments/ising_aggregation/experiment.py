"""The ising_aggregation experiment: dependence-aware vs conditional-independence aggregation.

Parts (each gives metrics; the claims are computed from them):

1. simulated dependent panels, 20 trials per cell, split over the mesh's data
   axis (``sharding.vmap_sharded``), K and the number of items varying:
   accuracy, log loss and ECE of uniform MV, CI weighted vote (two-coin
   Dawid-Skene), class-independent and class-dependent Ising EM (multi-start,
   exact M-step, best observed-data likelihood), and the Bayes oracle. Regime A ("clique"): a correlated
   clique of mediocre judges with class-dependent couplings plus independent
   better ones (``reprojax.data.ising_aggregation.dependent_panel``). Regime B ("bloc"): a supercritical
   bloc that votes as one, class-independent couplings, calibrated so that the
   Bayes rule is about 9-10 points above DS as in the paper's relevance task
   (``reprojax.data.ising_aggregation.bloc_panel``);
2. semi-real judges (scikit-learn classifiers on the digits data with shared
   folds and features), K varying, 20 trials;
3. Curie-Weiss separation: exact risks of the CI rule (exact marginals) and of
   the Bayes rule as K grows;
4. a finite-K example where CI with the exact marginals flips the Bayes label;
5. the real crowd labels jn_product: MV, one-coin and two-coin DS, the
   latent-factor model, beside the published MV and DS accuracies (skipped
   with ``config.use_crowd_data = False``, for a machine without the manual
   folder such as a fresh Colab: no ``crowd_*`` metrics, no crowd claims).
"""

from __future__ import annotations

import functools
import time

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.data import ising_aggregation as data_ia
from reprojax.experiments import sharding
from reprojax.experiments.ising_aggregation import plots
from reprojax.experiments.ising_aggregation import programs


# Open intervals of config fields beyond the naming rules (experiments/config_check.py):
# shares of a panel in (0, 1); sizes, iteration caps and ridges positive.
_POSITIVE = (0.0, float("inf"))
CONFIG_RANGES = {
    "clique_frac": (0.0, 1.0), "bloc_frac": (0.0, 1.0),
    **{name: _POSITIVE for name in ("synth_ks", "synth_items", "synth_item_grid", "bloc_ks",
                                    "semi_ks", "semi_train_size", "max_iters", "cw_ks",
                                    "crowd_lf_nodes", "l2", "l2_field")},
}


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is one cell of the simulated part (:func:`programs.synthetic_trials`): regime A
  (clique) with ``K = config.synth_ks[0]`` judges and ``config.synth_items`` items,
  ``config.num_trials`` trials vmapped and split over ``data``, each drawing a
  panel, sampling its items and running every aggregator (MV, DS, the multi-start
  Ising EM fits with ``config.num_starts`` starts and ``config.max_iters``
  iterations, the 10%-labelled fit) and the Bayes oracle; the output is
  ``[trial, method + bayes, (acc, log loss, ece)]``. The run makes the same call
  for every cell of the grid.

  With a key: the trials' keys drawn from it and the config's ridges; with None:
  ``jax.ShapeDtypeStruct`` args only.
  """
  trial = functools.partial(programs.synthetic_trial, k=config.synth_ks[0],
                            n=config.synth_items, max_iters=config.max_iters,
                            clique_frac=config.clique_frac, num_starts=config.num_starts,
                            regime="clique")
  if key is None:
    ridge = jax.ShapeDtypeStruct((), jnp.float32, weak_type=True)  # a Python float, as in run
    args = (jax.eval_shape(lambda: jax.random.split(jax.random.key(0), config.num_trials)),
            ridge, ridge)
  else:
    args = (jax.random.split(key, config.num_trials), float(config.l2), float(config.l2_field))
  return sharding.Step(
      build=lambda mesh: sharding.vmap_sharded(trial, mesh, in_axes=(0, None, None)), args=args)


def _mean_metrics(prefix, arr, names):
  out = {}
  m = np.asarray(arr).mean(0)
  for i, meth in enumerate(names):
    for j, met in enumerate(("acc", "logloss", "ece")):
      out[f"{prefix}_{meth}_{met}"] = float(m[i, j])
  return out


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Runs the five parts, writes the plots into ``workdir`` and returns the metrics.

  The real crowd labels (part 5) are read first, so a missing manual folder stops
  the run in its first second with the loader's message, not after the simulations.
  With ``config.use_crowd_data`` False, part 5 is skipped and nothing is read.
  """
  crowd = data_ia.load_crowd_binary(config.manual_dir or None) if config.use_crowd_data else None
  metrics: dict[str, float] = {}
  key = jax.random.key(config.seed)
  t0 = time.time()

  mesh = sharding.config_mesh(config)
  fit_args = dict(max_iters=config.max_iters, num_starts=config.num_starts, mesh=mesh)

  # 1. simulated dependent panels: regime A (clique, K and items varying), regime B (bloc)
  names = programs.METHODS + ("bayes",)
  cells = [("clique", k, config.synth_items) for k in config.synth_ks]
  cells += [("clique", config.synth_ks[-1], n) for n in config.synth_item_grid]
  cells += [("bloc", k, config.synth_items) for k in config.bloc_ks]
  synth, bloc = {}, {}
  for regime, k, n in cells:
    offset = 0 if regime == "clique" else 10 ** 6
    keys = jax.random.split(jax.random.fold_in(key, offset + 1000 * k + n), config.num_trials)
    frac = config.clique_frac if regime == "clique" else config.bloc_frac
    res = np.asarray(programs.synthetic_trials(keys, config.l2, config.l2_field, k=k, n=n,
                                               clique_frac=frac, regime=regime, **fit_args))
    (synth if regime == "clique" else bloc)[(k, n)] = res
    prefix = f"synth_K{k}_n{n}" if regime == "clique" else f"bloc_K{k}_n{n}"
    metrics.update(_mean_metrics(prefix, res, names))
    logging.info("%s K=%d n=%d acc %s (%.0f s)", regime, k, n, np.round(res[:, :, 0].mean(0), 3),
                 time.time() - t0)

  # 2. semi-real scikit-learn judges: one panel of max(K) judges per trial, nested sub-panels
  semi = {}
  kmax = max(config.semi_ks)
  full_panels = [data_ia.semi_real_judges(config.seed * 1000 + t, kmax,
                                          train_size=config.semi_train_size,
                                          feature_frac=config.semi_feature_frac)
                 for t in range(config.num_trials)]
  for k in config.semi_ks:
    panels = [programs.sub_panel(p, k) for p in full_panels]
    votes = jnp.asarray(np.stack([p.votes_NxK for p in panels]))
    labels = jnp.asarray(np.stack([p.labels_N for p in panels]))
    keys = jax.random.split(jax.random.fold_in(key, 2 * 10 ** 6 + k), config.num_trials)
    res = np.asarray(programs.semi_trials(keys, votes, labels, config.l2, config.l2_field,
                                          **fit_args))
    semi[k] = res
    metrics.update(_mean_metrics(f"semi_K{k}", res, programs.METHODS))
    metrics[f"semi_K{k}_best_judge_acc"] = float(np.mean(
        [(p.votes_NxK == p.labels_N[:, None]).mean(0).max() for p in panels]))
    logging.info("semi-real K=%d acc %s (%.0f s)", k, np.round(res[:, :, 0].mean(0), 3),
                 time.time() - t0)

  # 3. Curie-Weiss separation
  cw = programs.curie_weiss_risks(config.cw_ks)
  for k, rb, rc, _, _ in cw:
    metrics[f"cw_K{k}_bayes_risk"] = rb
    metrics[f"cw_K{k}_ci_risk"] = rc

  # 4. finite-K flip
  fb, fc, fa, fbeta = programs.flip_example()
  metrics.update(flip_bayes_posterior=fb, flip_ci_posterior=fc, flip_ci_sensitivity=fa,
                 flip_ci_specificity=fbeta)

  # 5. real crowd labels (read at the start; skipped without them)
  if crowd is not None:
    v = jnp.asarray(crowd.votes_NxK)
    y = jnp.asarray(crowd.labels_N)
    crowd_p = programs.crowd_posteriors(v, config.max_iters, config.crowd_lf_nodes)
    for name, p in crowd_p.items():
      s = np.asarray(programs.score_posterior(p, y))
      metrics.update({f"crowd_{name}_acc": float(s[0]), f"crowd_{name}_logloss": float(s[1]),
                      f"crowd_{name}_ece": float(s[2])})
    logging.info("crowd: %s (%.0f s)", {k: round(metrics[f"crowd_{k}_acc"], 4) for k in crowd_p},
                 time.time() - t0)

  plots.write_all(workdir, config, synth, semi, cw, bloc, programs.METHODS)
  return metrics
