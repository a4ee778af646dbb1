"""CausalDPO against DPO and S-DPO on a synthetic recommendation world with confounders.

The pipeline, every stage one compiled program over all seeds
(:func:`reprojax.experiments.train.fit_replicas`, replicas split over the mesh):

1. **World** (``data/recsys.py``): per seed, items with a taste and a popularity
   feature; training, validation and in-distribution test sessions from two
   environments that weigh popularity differently in the click (the confounder,
   seen only through a noisy context token); out-of-distribution test sessions
   where popularity stops mattering (``no_popularity``) or repels (``flipped``).
2. **SFT**: the recommender (``models/recommender.py``) learns
   ``log pi(target | history, context)`` by cross-entropy; it is the reference
   model of every preference method.
3. **Environments**: k-means on the reference model's user representation of the
   training sessions, soft memberships by :func:`causal_dpo.soft_assign`; the
   adjusted Rand index against the true environments. Oracle environments (one-hot
   truth) and random ones (one-hot, uniform) are the controls.
4. **Preference optimisation** from the SFT weights, all variants and seeds in one
   program: DPO (one negative), S-DPO (all K negatives), CausalDPO (S-DPO losses,
   backdoor prior uniform, variance penalty) at each invariance weight of the
   grid, and at each weight its ablations: without the backdoor adjustment (prior
   = the batch's environment frequencies, i.e. the plain mean), with oracle
   environments, with random environments; CausalDPO without the invariance
   penalty; and the MMD penalty (the public code's) at one weight.
5. **Selection**: CausalDPO's invariance weight is picked on the validation
   sessions (training environments, labels known) by the worst environment's
   NDCG@10, a rule that never sees the test environments; its ablations are read
   at the same weight.

Metrics: HR@10 and NDCG@10 (history items excluded) in distribution and in each
out-of-distribution setting, mean and standard error over seeds; each model's
reliance on popularity, the slope of its mean logit over items against the
items' popularity.

:func:`main_step` is one optimizer step of stage 4's replica trainer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.causal_dpo import plots
from reprojax.experiments.causal_dpo import programs

_POS = (0.0, float("inf"))
# Fields whose names carry no rule of experiments/config_check.py (open intervals).
CONFIG_RANGES = {"taste_dim": (0.5, float("inf")), "history_len": (0.5, float("inf")),
                 "taste_scale": _POS, "context_accuracy": (0.0, 1.0 + 1e-9), "beta": _POS,
                 "cluster_temperature": _POS, "invariance_weights": _POS, "mmd_weight": _POS,
                 "mmd_bandwidth": _POS, "id_tolerance": _POS, "alt_beta": _POS, "env_probs": (0.0, 1.0),
                 "catalogue_shift": (-1e-9, float("inf"))}


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Draws the worlds, trains SFT and every preference variant, picks CausalDPO's
  invariance weight on validation, writes the figures and returns the metrics.

  Per method ``m`` and split ``x`` (``id``, each OOD setting), for each of
  :data:`.programs.METRICS` (HR and NDCG at 10 and 20): ``m_x_<metric>`` and its ``_se``;
  ``m_ood`` (the mean over OOD settings and the four metrics) with ``_se``;
  ``m_pop_slope``. Methods: ``sft``; the paper's family on one negative at
  ``config.beta``: ``dpo``, ``causal`` (the pick), ``causal_no_backdoor``,
  ``causal_no_invariance``, ``causal_oracle``, ``causal_random``, ``causal_mmd``; at
  ``config.alt_beta``: ``b_dpo``, ``b_causal``; the extension on K negatives:
  ``k_sdpo``, ``k_causal``, ``k_causal_oracle``, ``k_causal_no_invariance``. Also each
  family's pick ``<f>causal_weight`` and grid ``grid_<f><w>_val``, ``grid_*_ood``;
  ``ari`` (mean, ``ari_se``); comparisons ``<a>_vs_<b>_gain`` (mean relative OOD gain),
  ``_id_gain`` and ``_paired`` with ``_se`` (paired OOD difference); the ablation gaps
  ``<ablation>_ood_gap`` (CausalDPO minus the ablation, paired) with ``_se``.
  """
  if int(config.num_negatives) < 1 or len(config.world.env_probs) < 2:
    raise ValueError("num_negatives must be >= 1 and world.env_probs must name >= 2 "
                     "environments")
  probs = np.asarray(config.world.env_probs, np.float64)
  if abs(probs.sum() - 1.0) > 1e-6 or len(config.world.env_strengths) != len(probs):
    raise ValueError(f"config.world.env_probs must sum to 1 and config.world.env_strengths "
                     f"give one gamma per environment, got {tuple(config.world.env_probs)} "
                     f"and {tuple(config.world.env_strengths)}")
  if config.batch_size > config.world.num_train:
    raise ValueError(f"batch_size={config.batch_size} exceeds world.num_train="
                     f"{config.world.num_train}")
  mesh = sharding.config_mesh(config)
  data = programs.make_data(config)
  sft_params, sft_evals, sft_loss = programs.train_sft(config, data, mesh)
  ref = programs.reference(config, sft_params, data)
  envs, ari = programs.environments(config, ref, data)
  vs, fit = programs.train_preferences(config, data, sft_params, ref, envs, mesh)
  names = [v.name for v in vs]
  per_seed = programs.summarise(config, fit.evals, data.val.env_U, len(vs))
  sft_seed = programs.summarise(config, sft_evals, data.val.env_U, 1)

  grid = list(config.invariance_weights)
  ood = programs.ood_score(config, per_seed)
  metrics: dict[str, float] = {"ari": float(np.mean(ari)),
                               "ari_se": float(common.standard_error(ari)),
                               "num_seeds": int(config.num_seeds),
                               "sft_final_loss": float(np.mean(sft_loss[:, -50:])),
                               "pref_step_ms": 1e3 * fit.step_s}
  chosen = {"sft": None}
  for fam in programs.FAMILIES:  # each family picks its CausalDPO weight on validation
    val = [per_seed["val_worst_ndcg"][:, names.index(f"{fam}causal_{w:g}")].mean() for w in grid]
    pick = grid[int(np.argmax(val))]
    metrics[f"{fam}causal_weight"] = float(pick)
    for w, v in zip(grid, val):
      metrics[f"grid_{fam}{w:g}_val"] = float(v)
    chosen[f"{fam}causal"] = f"{fam}causal_{pick:g}"
  p0 = metrics["causal_weight"]
  chosen.update({"dpo": "dpo", "causal_no_backdoor": f"causal_no_backdoor_{p0:g}",
                 "causal_no_invariance": "causal_no_invariance",
                 "causal_oracle": f"causal_oracle_{p0:g}",
                 "causal_random": f"causal_random_{p0:g}", "causal_mmd": "causal_mmd",
                 "b_dpo": "b_dpo", "k_sdpo": "k_sdpo",
                 "k_causal_no_invariance": "k_causal_no_invariance",
                 "k_causal_oracle": f"k_causal_oracle_{metrics['k_causal_weight']:g}"})

  def put(method, table, col, ood_s):
    for split in ("id",) + tuple(config.ood):
      for m in programs.METRICS:
        v = table[f"{split}_{m}"][:, col]
        metrics[f"{method}_{split}_{m}"] = float(v.mean())
        metrics[f"{method}_{split}_{m}_se"] = float(common.standard_error(v))
    metrics[f"{method}_ood"] = float(ood_s.mean())
    metrics[f"{method}_ood_se"] = float(common.standard_error(ood_s))
    metrics[f"{method}_pop_slope"] = float(table["pop_slope"][:, col].mean())

  put("sft", sft_seed, 0, programs.ood_score(config, sft_seed)[:, 0])
  cols = {m: names.index(n) for m, n in chosen.items() if n is not None}
  for m, c in cols.items():
    put(m, per_seed, c, ood[:, c])

  def compare(prefix, a, b):
    """a against b: mean relative OOD and in-distribution gains, paired OOD difference."""
    ca, cb = cols[a], cols[b]
    metrics[f"{prefix}_gain"] = programs.relative_gain(config, per_seed, ca, cb)
    metrics[f"{prefix}_id_gain"] = float(np.mean(
        [per_seed[f"id_{m}"][:, ca].mean() / per_seed[f"id_{m}"][:, cb].mean() - 1
         for m in programs.METRICS]))
    diff = ood[:, ca] - ood[:, cb]
    metrics[f"{prefix}_paired"] = float(diff.mean())
    metrics[f"{prefix}_paired_se"] = float(common.standard_error(diff))

  compare("causal_vs_dpo", "causal", "dpo")  # the paper's claim: one negative, beta
  compare("b_causal_vs_dpo", "b_causal", "b_dpo")  # the same at alt_beta
  compare("k_causal_vs_sdpo", "k_causal", "k_sdpo")  # the extension: K negatives
  compare("k_sdpo_vs_dpo", "k_sdpo", "dpo")  # what K negatives alone buy over DPO
  compare("k_causal_vs_dpo", "k_causal", "dpo")  # the old headline's comparison
  compare("k_oracle_vs_sdpo", "k_causal_oracle", "k_sdpo")
  c = cols["causal"]
  for ab in ("causal_no_backdoor", "causal_no_invariance", "causal_random"):
    gap = ood[:, c] - ood[:, cols[ab]]
    metrics[f"{ab}_ood_gap"] = float(gap.mean())
    metrics[f"{ab}_ood_gap_se"] = float(common.standard_error(gap))
  slope_gap = per_seed["pop_slope"][:, cols["dpo"]] - sft_seed["pop_slope"][:, 0]
  metrics["dpo_minus_sft_pop_slope"] = float(slope_gap.mean())
  metrics["dpo_minus_sft_pop_slope_se"] = float(common.standard_error(slope_gap))
  for w in grid:
    for kind in ("", "no_backdoor_", "oracle_", "random_"):
      metrics[f"grid_{w:g}_{kind}ood"] = float(ood[:, names.index(f"causal_{kind}{w:g}")].mean())
    metrics[f"grid_b_{w:g}_ood"] = float(ood[:, names.index(f"b_causal_{w:g}")].mean())
    for kind in ("", "oracle_"):
      metrics[f"grid_k_{w:g}_{kind}ood"] = float(
          ood[:, names.index(f"k_causal_{kind}{w:g}")].mean())
  plots.plot_methods(workdir, config, metrics)
  plots.plot_grid(workdir, config, metrics)
  return metrics


# ------------------------------------------------------------------------- main step

def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """One optimizer step of stage 4's replica trainer at ``config``'s shapes.

  Every variant x seed replica (``num_seeds * len(programs.variants(config))``) takes one
  Adam step of the preference loss on its minibatch. With a key the inputs are
  synthetic and valid (random histories, log-probabilities and memberships, the
  parameters from ``model.init`` and a mid-training Adam state); with None they are
  ``jax.ShapeDtypeStruct``s.
  """
  vs = programs.variants(config)
  w = config.world
  r = int(config.num_seeds) * len(vs)
  u, lh, k, b = int(w.num_train), int(w.history_len), int(config.num_negatives), \
      int(config.batch_size)
  e = len(w.env_probs)
  model = programs.make_model(config)
  opt = optax.adam(config.pref_learning_rate)
  h0, c0 = np.zeros((1, lh), np.int32), np.zeros((1,), np.int32)
  init = lambda kk: model.init(kk, h0, c0)  # noqa: E731
  keys_abs = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), r))
  params = jax.eval_shape(jax.vmap(init), keys_abs)
  opt_state = jax.eval_shape(jax.vmap(opt.init), params)
  shapes = ((r, u, lh), (r, u), (r, u), (r, u, k), (r, u), (r, u, k), (r, u, e), (r, u, e),
            (r, u, e))
  dtypes = (jnp.int32,) * 4 + (jnp.float32,) * 5
  s = int(config.num_seeds)
  args_r = {kk: np.tile(v, (s,) + (1,) * (v.ndim - 1))
            for kk, v in programs.replica_args(config, vs).items()}
  if key is None:
    arrays = tuple(jax.ShapeDtypeStruct(sh, dt) for sh, dt in zip(shapes, dtypes))
    args = (params, opt_state, keys_abs, jax.ShapeDtypeStruct((), jnp.int32),
            jax.ShapeDtypeStruct((r, b), jnp.int32), arrays,
            jax.tree.map(lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype), args_r))
  else:
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)))
    params = jax.vmap(init)(jax.random.split(key, r))
    opt_state = train.mid_training_state(jax.vmap(opt.init)(params))
    n = int(w.num_items)
    # Consecutive items from a random offset: distinct within a session by construction.
    hist = (rng.integers(0, n, (r, u, 1)) + np.arange(lh + 1 + k)) % n
    probs = lambda: rng.dirichlet(np.ones(e), (r, u)).astype(np.float32)  # noqa: E731
    arrays = (hist[..., :lh].astype(np.int32), rng.integers(0, e, (r, u)).astype(np.int32),
              hist[..., lh].astype(np.int32), hist[..., lh + 1:].astype(np.int32),
              -rng.gamma(2.0, 2.0, (r, u)).astype(np.float32),
              -rng.gamma(2.0, 2.0, (r, u, k)).astype(np.float32), probs(), probs(), probs())
    idx = rng.integers(0, u, (r, b)).astype(np.int32)
    args = (params, opt_state, jax.random.split(key, r), np.int32(0), idx, arrays, args_r)

  def build(mesh):
    return train.make_replica_step(
        mesh=mesh,
        loss_fn=programs.preference_loss_fn(model, config.beta, config.mmd_bandwidth),
        optimizer=opt)

  return sharding.Step(build, args)
