"""ALFT experiments: held-out RMSE/MAE of CP, Tucker, LFT and ALFT on aligned HDI tensors and Kinetic.

Two parts (see README.md for what each claim means):

1. Synthetic (:func:`reprojax.data.alft.aligned_tensor`): tensors whose modes 0 and 1 are
   aligned ordered grids, and the unordered control (modes 0 and 1 randomly
   permuted). For every kind x seed x density (5% .. 60% observed) x rank, the
   fits of each method run as ONE vmapped call (kinds, seeds and densities
   batched and split over the mesh's ``data`` axis by
   :func:`reprojax.experiments.sharding.vmap_sharded`; ranks through rank masks, vmapped
   on each device), scored on all unobserved entries.
   tensorly's masked ``parafac`` runs at the planted rank in a Python loop.
2. Kinetic (tensorly's fluorescence tensor): 20% of the observed entries held
   out by each of ``kinetic.n_splits`` seeded splits (seeds from ``kinetic.split_seed``,
   recorded in the config); the claims read the paired per-split differences; tensorly masked CP
   at rank 4 against our CP, Tucker, LFT and ALFT at rank 4, ALFT's aligned pair
   being (excitation, emission) with the offset in nm (Stokes shift); the random
   initialisations are split over the mesh like the synthetic replicas.

:func:`run` computes, writes the figures (:mod:`reprojax.experiments.alft.plots`) and
returns the flat metrics; :func:`claims` gives the verdicts from the config and the
metrics alone; :func:`main_step` is the main sharded computation (ALFT's synthetic fits)
for the every-paper sharding test.
"""

from __future__ import annotations

import time
from typing import Mapping

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import alft
from reprojax.data import alft as dalft
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.alft import plots
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence

KINDS = ("aligned", "control")


def _dkey(d: float) -> str:
  return f"d{int(round(100 * d)):02d}"


# ------------------------------------------------------------------ synthetic

def _synthetic_batch(config):
  """Stacked tensors and masks: ``(kinds * seeds * densities, I, I, K)`` plus the index grid."""
  c = config.synth
  dens = np.asarray(config.densities, np.float32)
  ys, trs, tes, grid = [], [], [], []
  root = jax.random.key(config.seed)
  for ki, kind in enumerate(KINDS):
    for s in range(config.num_seeds):
      kd = jax.random.fold_in(root, s)  # the same tensor for both kinds, permuted in the control
      d = dalft.aligned_tensor(kd, c.size, c.n_time, c.rank, aligned_scale=c.aligned_scale,
                               onset=c.onset, decay=c.decay, noise_std=c.noise_std,
                               control=(kind == "control"))
      km = jax.random.fold_in(kd, 1000)
      tr, te = jax.vmap(lambda dd: dalft.observation_masks(km, d.y.shape, dd))(jnp.asarray(dens))
      for di in range(dens.size):
        ys.append(d.y)
        trs.append(tr[di])
        tes.append(te[di])
        grid.append((ki, s, di))
  return jnp.stack(ys), jnp.stack(trs), jnp.stack(tes), np.asarray(grid)


def _replica_fits(config, shape):
  """``{method: fit_one}``: every synthetic fit of one tensor replica at one rank mask.

  ``fit_one(y, tr, key, scale, smooth_N, rank_mask) -> (prediction, aux)``; ``method``
  runs over ``config.methods`` (and more) and ``<name>_val`` for the methods of the
  validated protocol (``config.validation``), whose ``aux`` is the chosen ridge. ALFT's
  ``aux`` is its offset function ``h`` (first component).
  """
  c = config.synth
  r_max = max(config.ranks)
  pairs = ((0, 1),)
  w = jnp.asarray(alft.integer_offset_basis(c.size, c.size), jnp.float32)
  none = jnp.zeros(())

  # fits with the ridge as an argument (traced, so a grid of l2 is one vmap); CP-ALS has no
  # ridge in the fixed protocol (as tensorly's default), LFT and ALFT use config.l2
  def cp_als_l2(y, tr, k, s, sm, rm, l2):
    return alft.cp_to_tensor(alft.cp_als(y, tr, alft.init_cp(k, shape, r_max, s), rm,
                                         n_iter=config.n_iter_als, l2=l2)[0]), none

  def lft_als_l2(y, tr, k, s, sm, rm, l2):
    return alft.alft_predict(alft.alft_als(
        y, tr, alft.init_alft(k, shape, r_max, scale=s), (), rm, n_iter=config.n_iter_als,
        l2=l2)[0], ()), none

  def alft_als_l2(y, tr, k, s, sm, rm, l2):
    p0 = alft.init_alft(k, shape, r_max, pairs=pairs, bases=(w,),
                        n_offset_components=config.n_offset_components, scale=s)
    p, _ = alft.alft_als(y, tr, p0, (w,), rm, pairs=pairs, n_iter=config.n_iter_als,
                         l2=l2, smooth=sm, smooth_offset=config.smooth,
                         ordered_modes=(0, 1, 2))
    return alft.alft_predict(p, (w,), pairs), p.offsets[0][:, 0]  # and the offset function h

  fits_l2 = {"cp_als": cp_als_l2, "lft_als": lft_als_l2, "alft_als": alft_als_l2}
  fits = {
      "cp_als": lambda y, tr, k, s, sm, rm: cp_als_l2(y, tr, k, s, sm, rm, 0.0),
      "cp_grad": lambda y, tr, k, s, sm, rm: (alft.cp_to_tensor(alft.cp_grad(
          y, tr, alft.init_cp(k, shape, r_max, s), rm, n_iter=config.n_iter_grad,
          lr=config.learning_rate, l2=config.l2)[0]), none),
      "tucker_als": lambda y, tr, k, s, sm, rm: (alft.tucker_to_tensor(*alft.tucker_als(
          y, tr, *alft.init_tucker(k, shape, (r_max,) * 3, s), (rm,) * 3,
          n_iter=config.n_iter_als)[:2]), none),
      "lft_als": lambda y, tr, k, s, sm, rm: lft_als_l2(y, tr, k, s, sm, rm, config.l2),
      # ablation: LFT with ALFT's smoothness but no aligned pair
      "lft_smooth": lambda y, tr, k, s, sm, rm: (alft.alft_predict(alft.alft_als(
          y, tr, alft.init_alft(k, shape, r_max, scale=s), (), rm, n_iter=config.n_iter_als,
          l2=config.l2, smooth=sm, ordered_modes=(0, 1, 2))[0], ()), none),
      "alft_als": lambda y, tr, k, s, sm, rm: alft_als_l2(y, tr, k, s, sm, rm, config.l2),
  }

  # The validated protocol: every method picks its ridge from config.validation.l2_grid by the
  # RMSE on a random val_frac of its training entries (fitted on the rest), then refits on all
  # training entries with that ridge; the held-out entries are never seen. aux: the chosen l2.
  v = config.validation
  l2_grid = jnp.asarray(v.l2_grid, jnp.float32)

  def validated(fit_l2):
    def fit(y, tr, k, s, sm, rm):
      val = tr * (jax.random.uniform(jax.random.fold_in(k, 7919), tr.shape) < v.val_frac)
      fit_mask = tr - val

      def val_rmse(l2):
        pred, _ = fit_l2(y, fit_mask, k, s, sm, rm, l2)
        return jnp.sqrt(jnp.sum(((pred - y) * val) ** 2) / jnp.maximum(val.sum(), 1.0))

      l2 = l2_grid[jnp.argmin(jax.vmap(val_rmse)(l2_grid))]
      return fit_l2(y, tr, k, s, sm, rm, l2)[0], l2
    return fit

  for name in v.methods:
    fits[name + "_val"] = validated(fits_l2[name])
  return fits


def _per_replica(config, fit_one):
  """One tensor replica: ``(y, tr, te, key, scale, smooth_N) -> ((rmse, mae), aux)``, each
  ``(n_ranks, ...)``: ``fit_one`` at every rank of ``config.ranks`` (vmapped rank masks),
  scored on the held-out entries ``te``."""
  rms = alft.rank_mask(jnp.asarray(config.ranks), max(config.ranks))

  def one(y, tr, te, k, s, sm):
    def at_rank(rm):
      pred, aux = fit_one(y, tr, k, s, sm, rm)
      return alft.heldout_errors(pred, y, te), aux
    return jax.vmap(at_rank)(rms)
  return one


def _smooth_weights(config, kinds_B, n_modes):
  """ALFT's smoothness weights per replica and mode, ``(B, N)``: every mode is ordered in the
  aligned kind; in the control modes 0 and 1 are shuffled, so only mode 2 (time) is declared
  ordered there."""
  c = config.synth
  ordered = np.zeros((len(kinds_B), n_modes), np.float32)
  for b, ki in enumerate(kinds_B):
    modes = c.ordered_modes if KINDS[ki] == "aligned" else c.control_ordered_modes
    ordered[b, list(modes)] = 1.0
  return jnp.asarray(config.smooth * ordered)


def _fit_synthetic(config, y_B, tr_B, te_B, grid, mesh=None):
  """Returns ``{method: (rmse (B, n_ranks), mae (B, n_ranks))}`` and ``{"h": ALFT's offset
  functions (B, K) at the planted rank, "l2": {method_val: chosen ridge (B, n_ranks)}}``.

  ``method_val`` is ``method`` under the validated protocol (``config.validation``).

  The B tensors are independent replicas: each method is one call of
  :func:`reprojax.experiments.sharding.vmap_sharded` over them on ``mesh`` (default: every
  device on ``data``), with the ranks vmapped inside each replica.
  """
  c = config.synth
  shape = tuple(y_B.shape[1:])
  n_b = y_B.shape[0]
  keys = jax.random.split(jax.random.key(config.seed + 1), n_b)
  scale_B = jnp.sqrt(jnp.sum((y_B * tr_B) ** 2, (1, 2, 3)) / jnp.sum(tr_B, (1, 2, 3)))
  smooth_BxN = _smooth_weights(config, grid[:, 0], len(shape))
  fits = _replica_fits(config, shape)
  out = {}
  extra = {"h": None, "l2": {}}
  for name in tuple(config.methods) + tuple(m + "_val" for m in config.validation.methods):
    t0 = time.time()
    (rmse, mae), aux = sharding.vmap_sharded(_per_replica(config, fits[name]), mesh)(
        y_B, tr_B, te_B, keys, scale_B, smooth_BxN)
    out[name] = (np.asarray(rmse), np.asarray(mae))
    if name == "alft_als":  # the recovered offset function at the planted rank (for the plot)
      extra["h"] = np.asarray(aux)[:, list(config.ranks).index(c.rank)]
    if name.endswith("_val"):
      extra["l2"][name] = np.asarray(aux)  # (B, n_ranks) chosen ridge
    logging.info("synthetic %-14s %d fits in %.1f s", name, n_b * len(config.ranks), time.time() - t0)
  return out, extra


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is the synthetic part's ALFT fit (``_fit_synthetic``'s ``"alft_als"`` call,
  the same per-replica function and :func:`reprojax.experiments.sharding.vmap_sharded`)
  on the replicas of one density cell of the grid: both kinds x ``config.num_seeds``
  tensors of shape ``(synth.size, synth.size, synth.n_time)``, each fitted at every rank
  of ``config.ranks`` with ``config.n_iter_als`` sweeps (the run makes the same call with
  every density's replicas stacked). Its outputs are the held-out ``(rmse, mae)`` and
  the offset functions, per replica and rank.

  With a key: concrete, valid inputs drawn from it (Gaussian tensors, masks observing
  about ``config.densities[0]`` of the entries, the rest held out); with None:
  ``jax.ShapeDtypeStruct`` args only.
  """
  c = config.synth
  shape = (c.size, c.size, c.n_time)
  kinds_B = np.repeat(np.arange(len(KINDS)), config.num_seeds)
  n_b = kinds_B.size
  smooth_BxN = _smooth_weights(config, kinds_B, len(shape))
  fit = _per_replica(config, _replica_fits(config, shape)["alft_als"])
  if key is None:
    f32 = lambda s: jax.ShapeDtypeStruct(s, jnp.float32)
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), n_b))
    args = (f32((n_b,) + shape), f32((n_b,) + shape), f32((n_b,) + shape), keys, f32((n_b,)),
            f32(smooth_BxN.shape))
  else:
    ky, km, kk = jax.random.split(key, 3)
    y_B = jax.random.normal(ky, (n_b,) + shape, jnp.float32)
    tr_B = (jax.random.uniform(km, (n_b,) + shape) < config.densities[0]).astype(jnp.float32)
    tr_B = tr_B.at[:, 0, 0, 0].set(1.0)
    args = (np.asarray(y_B), np.asarray(tr_B), np.asarray(1.0 - tr_B),
            jax.random.split(kk, n_b), np.ones((n_b,), np.float32), np.asarray(smooth_BxN))
  return sharding.Step(build=lambda mesh: sharding.vmap_sharded(fit, mesh), args=args)


def _tensorly_synthetic(config, y_B, tr_B, te_B):
  """tensorly masked parafac at the planted rank, one fit per tensor; ``(rmse (B,), mae (B,))``."""
  import tensorly as tl  # test extra; the experiment needs it for the peer baseline
  from tensorly.decomposition import parafac
  rmse, mae = [], []
  for b in range(y_B.shape[0]):
    y, tr, te = (np.asarray(a, np.float64) for a in (y_B[b], tr_B[b], te_B[b]))
    cp = parafac(y * tr, config.synth.rank, mask=tr, init="random", random_state=config.seed + b,
                 n_iter_max=config.tensorly_n_iter, tol=config.tensorly_tol)
    e = (tl.cp_to_tensor(cp) - y)[te > 0]
    rmse.append(np.sqrt(np.mean(e ** 2)))
    mae.append(np.mean(np.abs(e)))
  return np.asarray(rmse), np.asarray(mae)


# -------------------------------------------------------------------- Kinetic

def _kinetic(config, mesh=None):
  """Held-out RMSE/MAE (original units) of each method on ``config.kinetic.n_splits`` random
  20% splits (numpy seeds ``split_seed``, ``split_seed + 1``, ...).

  Returns ``({method: (rmse (n_splits,), mae (n_splits,))}, data std)``: tensorly's one
  SVD-initialised fit per split; ours the mean over ``n_init_seeds`` random inits per split
  (the splits x inits fits of a method are one vmapped call, split over the mesh).
  """
  import tensorly as tl
  from tensorly.decomposition import parafac
  kc = config.kinetic
  k = dalft.load_kinetic(kc.manual_dir or None)
  n_s, n_i = int(kc.n_splits), int(kc.n_init_seeds)
  tl_err, y_S, tr_S, te_S, scale_S = [], [], [], [], []
  for i in range(n_s):
    tr, te = dalft.holdout_split(k.observed, int(kc.split_seed) + i, kc.holdout)
    t0 = time.time()
    cp = parafac(k.y * tr, kc.rank, mask=tr.astype(float), init="svd",
                 n_iter_max=kc.tensorly_n_iter, tol=kc.tensorly_tol)
    e = (tl.cp_to_tensor(cp) - k.y)[te]
    tl_err.append((float(np.sqrt(np.mean(e ** 2))), float(np.mean(np.abs(e)))))
    logging.info("kinetic split %d tensorly parafac rank %d: %.2f RMSE (%.1f s)",
                 int(kc.split_seed) + i, kc.rank, tl_err[-1][0], time.time() - t0)
    s = float(k.y[tr].std())
    y_S.append(k.y / s)
    tr_S.append(tr)
    te_S.append(te)
    scale_S.append(s)
  res = {"tensorly_cp": tuple(np.asarray(a) for a in zip(*tl_err))}

  # the splits x inits fits: (n_s * n_i) replicas, split-major
  rep = lambda a: jnp.asarray(np.repeat(np.stack(a), n_i, axis=0), jnp.float32)  # noqa: E731
  y_B, trm_B, tem_B = rep(y_S), rep(tr_S), rep(te_S)
  keys = jax.random.split(jax.random.key(config.seed + 7), n_i)
  keys_B = jnp.concatenate([keys] * n_s)  # the same inits on every split
  shape = k.y.shape
  knots = np.linspace(kc.offset_min_nm, kc.offset_max_nm, kc.n_knots)
  w = jnp.asarray(alft.offset_basis(k.excitation_nm, k.emission_nm, knots), jnp.float32)
  pairs = ((2, 1),)  # offset = emission - excitation (the Stokes shift), asymmetric

  def cp_fit(y, trm, key):
    return alft.cp_to_tensor(alft.cp_als(y, trm, alft.init_cp(key, shape, kc.rank),
                                         n_iter=kc.n_iter)[0])

  def tucker_fit(y, trm, key):
    core, fs, _ = alft.tucker_als(y, trm, *alft.init_tucker(key, shape, (kc.rank,) * 4),
                                  n_iter=kc.n_iter_tucker)
    return alft.tucker_to_tensor(core, fs)

  def lft_fit(y, trm, key):
    p, _ = alft.alft_als(y, trm, alft.init_alft(key, shape, kc.rank), n_iter=kc.n_iter,
                         l2=kc.l2)
    return alft.alft_predict(p, ())

  def alft_fit(y, trm, key):
    p0 = alft.init_alft(key, shape, kc.rank, pairs=pairs, bases=(w,),
                        n_offset_components=kc.n_offset_components)
    p, _ = alft.alft_als(y, trm, p0, (w,), pairs=pairs, n_iter=kc.n_iter, l2=kc.l2,
                         smooth=kc.smooth, smooth_offset=kc.smooth,
                         ordered_modes=tuple(kc.ordered_modes))
    return alft.alft_predict(p, (w,), pairs)

  scale = np.asarray(scale_S)[:, None]
  for name, fit in (("cp_als", cp_fit), ("tucker_als", tucker_fit), ("lft_als", lft_fit),
                    ("alft_als", alft_fit)):
    t0 = time.time()
    errs = sharding.vmap_sharded(
        lambda y, trm, tem, key, fit=fit: alft.heldout_errors(fit(y, trm, key), y, tem),
        mesh)(y_B, trm_B, tem_B, keys_B)
    rmse, mae = (np.asarray(a).reshape(n_s, n_i) * scale for a in errs)
    res[name] = (rmse.mean(1), mae.mean(1))  # per split, mean over inits
    logging.info("kinetic %-10s rank %d: %.2f RMSE, %.2f MAE over %d splits x %d inits "
                 "(%.1f s)", name, kc.rank, rmse.mean(), mae.mean(), n_s, n_i,
                 time.time() - t0)
  return res, float(k.y[k.observed].std())


# ------------------------------------------------------------------------ run

def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Runs both parts, writes the figures (:mod:`.plots`) and returns the flat metrics."""
  t0 = time.time()
  mesh = sharding.config_mesh(config)
  y_B, tr_B, te_B, grid = _synthetic_batch(config)
  synth, extra = _fit_synthetic(config, y_B, tr_B, te_B, grid, mesh)
  h_B = extra["h"]
  tl_synth = _tensorly_synthetic(config, y_B, tr_B, te_B)
  logging.info("synthetic part: %.1f s", time.time() - t0)
  # Kinetic: n_init_seeds = 0 switches the part off (the notebook's tiny config; its tensorly
  # SVD initialisation and four compiled fits cost seconds however few the sweeps)
  kin, data_std = _kinetic(config, mesh) if config.kinetic.n_init_seeds > 0 else ({}, None)

  metrics = {}
  dens = np.asarray(config.densities)
  ranks = list(config.ranks)
  r_idx = ranks.index(config.synth.rank)
  cells = {}  # (kind, method) -> (rmse (densities, ranks), mae) mean over seeds
  for ki, kind in enumerate(KINDS):
    for name, (rmse, mae) in synth.items():
      rm_ = np.stack([rmse[(grid[:, 0] == ki) & (grid[:, 2] == di)].mean(0) for di in range(dens.size)])
      ma_ = np.stack([mae[(grid[:, 0] == ki) & (grid[:, 2] == di)].mean(0) for di in range(dens.size)])
      cells[kind, name] = (rm_, ma_)
      for di, dd in enumerate(dens):
        metrics[f"synth_{kind}_{name}_rmse_{_dkey(dd)}"] = float(rm_[di, r_idx])
        metrics[f"synth_{kind}_{name}_mae_{_dkey(dd)}"] = float(ma_[di, r_idx])
      metrics[f"synth_{kind}_{name}_rmse_mean"] = float(rm_.mean())
      metrics[f"synth_{kind}_{name}_mae_mean"] = float(ma_.mean())
    for di, dd in enumerate(dens):
      sel = (grid[:, 0] == ki) & (grid[:, 2] == di)
      metrics[f"synth_{kind}_tensorly_cp_rmse_{_dkey(dd)}"] = float(tl_synth[0][sel].mean())
      metrics[f"synth_{kind}_tensorly_cp_mae_{_dkey(dd)}"] = float(tl_synth[1][sel].mean())

  # claim 1: aligned modes, ALFT below LFT and CP (ours and tensorly) in every density x rank cell
  a_r, a_m = cells["aligned", "alft_als"]
  base_r = np.minimum(cells["aligned", "lft_als"][0], cells["aligned", "cp_als"][0])
  base_m = np.minimum(cells["aligned", "lft_als"][1], cells["aligned", "cp_als"][1])
  tl_r = np.asarray([metrics[f"synth_aligned_tensorly_cp_rmse_{_dkey(d)}"] for d in dens])
  tl_m = np.asarray([metrics[f"synth_aligned_tensorly_cp_mae_{_dkey(d)}"] for d in dens])
  wins = (a_r < base_r) & (a_m < base_m)
  wins_tl = (a_r[:, r_idx] < tl_r) & (a_m[:, r_idx] < tl_m)
  metrics["synth_aligned_alft_win_fraction"] = float(wins.mean())
  metrics["synth_aligned_alft_win_fraction_vs_tensorly"] = float(wins_tl.mean())
  metrics["synth_aligned_rmse_ratio_alft_over_best_baseline"] = float((a_r / base_r).mean())
  # claim 2: control, ALFT within 5% of the better of LFT and CP in every cell
  c_r, c_m = cells["control", "alft_als"]
  cb_r = np.minimum(cells["control", "lft_als"][0], cells["control", "cp_als"][0])
  ratio = c_r / cb_r
  metrics["synth_control_rmse_ratio_alft_over_best_baseline_max"] = float(ratio.max())
  metrics["synth_control_rmse_ratio_alft_over_best_baseline_mean"] = float(ratio.mean())
  metrics["synth_control_alft_rmse_ratio_over_lft_max"] = float((c_r / cells["control", "lft_als"][0]).max())
  worst = np.unravel_index(np.argmax(ratio), ratio.shape)
  metrics["synth_control_worst_cell_density"] = float(dens[worst[0]])
  metrics["synth_control_worst_cell_rank"] = int(ranks[worst[1]])
  # seed spread at the worst cell: ALFT over the (on average) better baseline, seed by seed
  sel = (grid[:, 0] == KINDS.index("control")) & (grid[:, 2] == worst[0])
  base = "lft_als" if cells["control", "lft_als"][0][worst] < cells["control", "cp_als"][0][worst] else "cp_als"
  per_seed = synth["alft_als"][0][sel, worst[1]] / synth[base][0][sel, worst[1]]
  metrics["synth_control_worst_cell_ratio_per_seed_min"] = float(per_seed.min())
  metrics["synth_control_worst_cell_ratio_per_seed_max"] = float(per_seed.max())
  metrics["synth_control_worst_cell_ratio_se"] = (
      float(per_seed.std(ddof=1) / np.sqrt(per_seed.size)) if per_seed.size > 1 else float("nan"))

  # the validated protocol (each method's ridge chosen on a validation split of its training
  # entries): the same two synthetic comparisons, with the chosen ridges recorded
  if all(m + "_val" in synth for m in ("cp_als", "lft_als", "alft_als")):
    for kind in KINDS:
      a_r, a_m = cells[kind, "alft_als_val"]
      l_r, l_m = cells[kind, "lft_als_val"]
      p_r, p_m = cells[kind, "cp_als_val"]
      ratio_v = a_r / np.minimum(l_r, p_r)
      wins_v = (a_r < np.minimum(l_r, p_r)) & (a_m < np.minimum(l_m, p_m))
      metrics[f"synth_{kind}_val_rmse_ratio_alft_over_best_baseline_max"] = float(ratio_v.max())
      metrics[f"synth_{kind}_val_rmse_ratio_alft_over_best_baseline_mean"] = float(ratio_v.mean())
      metrics[f"synth_{kind}_val_alft_win_fraction"] = float(wins_v.mean())
      w_v = np.unravel_index(np.argmax(ratio_v), ratio_v.shape)
      metrics[f"synth_{kind}_val_worst_cell_density"] = float(dens[w_v[0]])
      metrics[f"synth_{kind}_val_worst_cell_rank"] = int(ranks[w_v[1]])
      for name, l2 in extra["l2"].items():
        sel_k = grid[:, 0] == KINDS.index(kind)
        chosen = l2[sel_k]
        metrics[f"synth_{kind}_{name}_l2_median"] = float(np.median(chosen))
        metrics[f"synth_{kind}_{name}_l2_at_grid_top"] = float(np.mean(chosen >= max(config.validation.l2_grid)))

  for name, (r, m) in kin.items():  # means over the splits
    metrics[f"kinetic_{name}_rmse"] = float(r.mean())
    metrics[f"kinetic_{name}_mae"] = float(m.mean())
  if kin:
    metrics["kinetic_data_std"] = data_std
    metrics["kinetic_split_seed"] = int(config.kinetic.split_seed)
    metrics["kinetic_n_splits"] = int(config.kinetic.n_splits)
    # paired per split: ALFT minus each baseline, mean and s.e. over the splits
    for base in ("tensorly_cp", "cp_als", "lft_als", "tucker_als"):
      for j, err in enumerate(("rmse", "mae")):
        d = kin["alft_als"][j] - kin[base][j]
        metrics[f"kinetic_alft_minus_{base}_{err}"] = float(d.mean())
        metrics[f"kinetic_alft_minus_{base}_{err}_se"] = (
            float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0)

  plots.write_all(workdir, config, KINDS, synth, tl_synth, grid, h_B, kin)
  return metrics


# --------------------------------------------------------------------- claims

_CONTROL_TOLERANCE = 0.05  # config.control_tolerance, which the control claims' rules state
_KINETIC = ("kinetic_alft_beats_tensorly_cp_splits",  # measured when n_init_seeds > 0
            "kinetic_alft_beats_cp_lft_splits")
_VALIDATED = ("aligned_alft_beats_lft_cp_validated", "control_alft_no_worse_validated")
CLAIMS = results.declare(
    results.Declared(
        "aligned_alft_beats_lft_cp", "paper",
        "Where modes are aligned, ALFT has lower held-out RMSE and MAE than LFT and CP at equal "
        "rank", "ALFT lower (no figures in the abstract)",
        "holds when, on the aligned synthetic tensors, ALFT's held-out RMSE and MAE (means "
        "over config.num_seeds seeds) are both below the better of our LFT's and CP's in "
        "every density x rank cell, and both below tensorly's masked CP at every density at "
        "the planted rank"),
    results.Declared(
        "control_alft_no_worse", "check",
        "On the unordered control ALFT is no worse than LFT and CP",
        "no worse (ours: within 5% RMSE)",
        "holds when, on the unordered control, the largest over density x rank cells of "
        "ALFT's seed-mean held-out RMSE over the better of LFT's and CP's is at most "
        f"1 + config.control_tolerance = {1 + _CONTROL_TOLERANCE:g}"),
    results.Declared(
        "kinetic_alft_beats_tensorly_cp_splits", "paper",
        "Kinetic, 20% held out: ALFT beats tensorly masked CP at the same rank",
        "tensorly CP ~23.7 RMSE (issue); ALFT lower",
        "holds when tensorly's masked CP ran as many ALS sweeps as ours with no early stop "
        "(config.kinetic.tensorly_n_iter == n_iter, tensorly_tol == 0) and, over "
        "config.kinetic.n_splits random 20% splits (numpy seeds from "
        "config.kinetic.split_seed), the paired per-split difference ALFT minus tensorly CP "
        "of held-out RMSE and of MAE (ALFT's per split the mean over "
        "config.kinetic.n_init_seeds random inits) are both below 0 by more than 2 s.e. "
        "over the splits; measured when config.kinetic.n_init_seeds > 0"),
    results.Declared(
        "kinetic_alft_beats_cp_lft_splits", "paper",
        "Kinetic: ALFT below our CP and LFT at equal rank", "ALFT lower",
        "holds when, over config.kinetic.n_splits random 20% splits (numpy seeds from "
        "config.kinetic.split_seed), the paired per-split differences ALFT minus our CP and "
        "ALFT minus our LFT (each method's per split the mean over "
        "config.kinetic.n_init_seeds random inits) of held-out RMSE and of MAE at "
        "config.kinetic.rank are all four below 0 by more than 2 s.e. over the splits; "
        "measured when config.kinetic.n_init_seeds > 0"),
    results.Declared(
        "aligned_alft_beats_lft_cp_validated", "paper",
        "Aligned modes, each method's ridge chosen on a validation split: ALFT below LFT and CP",
        "ALFT lower (no figures in the abstract)",
        "holds when, each method's ridge chosen from config.validation.l2_grid on a validation "
        "split of its training entries, ALFT's held-out RMSE and MAE (seed means) on the "
        "aligned synthetic tensors are both below the better of LFT's and CP's in every "
        "density x rank cell; measured when config.validation.methods runs all three"),
    results.Declared(
        "control_alft_no_worse_validated", "check",
        "Unordered control, each method's ridge chosen on a validation split: ALFT no worse "
        "than LFT and CP", "no worse (ours: within 5% RMSE)",
        "holds when, each method's ridge chosen on a validation split, the largest over "
        "density x rank cells of ALFT's seed-mean held-out RMSE on the unordered control over "
        "the better of LFT's and CP's is at most 1 + config.control_tolerance = "
        f"{1 + _CONTROL_TOLERANCE:g}; measured when config.validation.methods runs all three"),
)

RETIRED = tuple(
    results.Retired(cid, last_holds=True, commit="0a3fb17",
                    reason=f"decided on one held-out split (seed 0) and one init, no s.e. "
                           f"({gap}); decided now over config.kinetic.n_splits splits by the "
                           f"paired per-split differences and their s.e. ({cid}_splits)")
    for cid, gap in (("kinetic_alft_beats_tensorly_cp", "ALFT's RMSE 7.8% below tensorly's"),
                     ("kinetic_alft_beats_cp_lft", "ALFT's RMSE 0.9% below CP's")))


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]) -> list[Claim]:
  """The verdicts of :data:`CLAIMS`: a pure function of the config and the metrics (as
  ``results.json`` has them); the Kinetic and validated-ridge claims only when those parts ran.
  """
  m = metrics
  n_cells = len(config.densities) * len(config.ranks)
  n_dens = len(config.densities)
  tol = config.control_tolerance
  if tol != _CONTROL_TOLERANCE:
    raise ValueError(f"config.control_tolerance must be the declared rules' "
                     f"{_CONTROL_TOLERANCE} (a changed rule takes new claim ids), got {tol}")
  same_sweeps = (config.kinetic.tensorly_n_iter == config.kinetic.n_iter
                 and config.kinetic.tensorly_tol == 0)  # one stopping rule for both

  def count(fraction, size):  # a win fraction back to the number of cells it counts
    return int(round(fraction * size))

  wins = count(m["synth_aligned_alft_win_fraction"], n_cells)
  wins_tl = count(m["synth_aligned_alft_win_fraction_vs_tensorly"], n_dens)
  ratio_max = m["synth_control_rmse_ratio_alft_over_best_baseline_max"]
  planted = ("the synthetic tensors plant an offset response h(j - i) v[k] on the aligned "
             "modes, ALFT's own aligned-pair term, which CP and LFT at these ranks cannot "
             "represent (README: a check of the mechanism, not independent evidence)")
  aligned_evidence = Evidence(seeds=int(config.num_seeds), by_construction=planted)
  kinetic_note = (f"one held-out split (seed {config.kinetic.split_seed}), ours averaged over "
                  f"{config.kinetic.n_init_seeds} random init(s); no s.e.")
  out = [
      CLAIMS["aligned_alft_beats_lft_cp"].claim(
            f"ALFT lower in {wins}/{n_cells} density x rank cells (RMSE ratio to the better "
            f"baseline {m['synth_aligned_rmse_ratio_alft_over_best_baseline']:.2f}); vs tensorly "
            f"CP {wins_tl}/{n_dens}",
            bool(wins == n_cells and wins_tl == n_dens), evidence=aligned_evidence),
      CLAIMS["control_alft_no_worse"].claim(
            f"max RMSE ratio ALFT / better of LFT, CP = {ratio_max:.3f} over {n_cells} cells "
            f"(at {100 * m['synth_control_worst_cell_density']:.0f}%, rank "
            f"{m['synth_control_worst_cell_rank']}; per seed "
            f"{m['synth_control_worst_cell_ratio_per_seed_min']:.2f}-"
            f"{m['synth_control_worst_cell_ratio_per_seed_max']:.2f}, s.e. "
            f"{m['synth_control_worst_cell_ratio_se']:.3f}, {config.num_seeds} seeds); "
            f"vs LFT alone "
            f"{m['synth_control_alft_rmse_ratio_over_lft_max']:.3f}",
            bool(ratio_max <= 1.0 + tol)),
  ]
  if "kinetic_alft_als_rmse" in m:  # the Kinetic part ran (config.kinetic.n_init_seeds > 0)
    kc = config.kinetic
    n_s = int(m["kinetic_n_splits"])
    seeds_txt = (f"split seed {kc.split_seed}" if n_s == 1 else
                 f"split seeds {kc.split_seed}-{kc.split_seed + n_s - 1}")

    def paired(bases):  # every (base, error) difference below 0 by > 2 s.e. over the splits
      parts, texts = [], []
      for base in bases:
        for err in ("rmse", "mae"):
          d = m[f"kinetic_alft_minus_{base}_{err}"]
          se = m[f"kinetic_alft_minus_{base}_{err}_se"]
          parts.append(results.margin_part(d, 0.0, se, bool(d < -2.0 * se), n_s,
                                           higher_passes=False))
          texts.append(f"{err.upper()} {d:+.3f} +- {se:.3f}")
      return all(p for p, _ in parts), results.conjunction_margin(parts), texts

    def pct(*bases):  # ALFT's mean RMSE against the best of the baselines', in words
      p = 100 * (1 - m["kinetic_alft_als_rmse"] / min(m[f"kinetic_{b}_rmse"] for b in bases))
      return f"{abs(p):.1f}% {'below' if p >= 0 else 'above'}"

    kinetic_note = (f"{n_s} held-out split(s) ({seeds_txt}), ours averaged over "
                    f"{kc.n_init_seeds} random init(s) per split; paired differences, s.e. "
                    "over the splits")
    held, mg, t = paired(("tensorly_cp",))
    tl_r, al_r = m["kinetic_tensorly_cp_rmse"], m["kinetic_alft_als_rmse"]
    out.append(CLAIMS["kinetic_alft_beats_tensorly_cp_splits"].claim(
        statement=f"Kinetic, 20% held out ({n_s} splits): ALFT beats tensorly masked CP rank "
                  f"{kc.rank}",
        ours=f"tensorly {tl_r:.2f} / ALFT {al_r:.2f} RMSE (means over splits); ALFT minus "
             f"tensorly per split: {', '.join(t)}; {kc.tensorly_n_iter} / {kc.n_iter} ALS "
             "sweeps" + ("" if same_sweeps else " (unequal sweeps: not judged)"),
        holds=bool(same_sweeps and held),
        evidence=Evidence(seeds=n_s, margin_se=mg if same_sweeps else None,
                          note=f"ALFT's mean RMSE {pct('tensorly_cp')} tensorly's "
                               "(SVD init); " + kinetic_note)))
    held, mg, t = paired(("cp_als", "lft_als"))
    out.append(CLAIMS["kinetic_alft_beats_cp_lft_splits"].claim(
        statement=f"Kinetic: ALFT below our CP and LFT at equal rank {kc.rank} ({n_s} splits)",
        ours=f"ALFT {al_r:.2f} / CP {m['kinetic_cp_als_rmse']:.2f} / LFT "
             f"{m['kinetic_lft_als_rmse']:.2f} RMSE (means over splits); ALFT minus CP: "
             f"{', '.join(t[:2])}; minus LFT: {', '.join(t[2:])}",
        holds=held,
        evidence=Evidence(seeds=n_s, margin_se=mg,
                          note=f"ALFT's mean RMSE {pct('cp_als', 'lft_als')} the better of "
                               "CP and LFT; " + kinetic_note)))
  if "synth_aligned_val_alft_win_fraction" in m:  # the validated protocol ran
    grid_txt = "/".join(f"{x:g}" for x in config.validation.l2_grid)
    wins_a = count(m["synth_aligned_val_alft_win_fraction"], n_cells)
    ratio_c = m["synth_control_val_rmse_ratio_alft_over_best_baseline_max"]
    out += [
        CLAIMS["aligned_alft_beats_lft_cp_validated"].claim(
              f"ALFT lower in {wins_a}/{n_cells} density x rank cells (RMSE ratio to the "
              f"better baseline "
              f"{m['synth_aligned_val_rmse_ratio_alft_over_best_baseline_mean']:.2f}; l2 from "
              f"{grid_txt}, {100 * config.validation.val_frac:.0f}% of the training entries)",
              bool(wins_a == n_cells), evidence=aligned_evidence),
        CLAIMS["control_alft_no_worse_validated"].claim(
              f"max RMSE ratio ALFT / better of LFT, CP = {ratio_c:.3f} over {n_cells} "
              f"cells (at {100 * m['synth_control_val_worst_cell_density']:.0f}%, rank "
              f"{m['synth_control_val_worst_cell_rank']}); mean "
              f"{m['synth_control_val_rmse_ratio_alft_over_best_baseline_mean']:.3f}; "
              f"median chosen l2 CP / LFT / ALFT "
              + " / ".join(f"{m[f'synth_control_{n}_val_l2_median']:g}"
                           for n in ("cp_als", "lft_als", "alft_als")),
              bool(ratio_c <= 1.0 + tol)),
    ]
  skipped = (() if "kinetic_alft_als_rmse" in m else _KINETIC) + (
      () if "synth_aligned_val_alft_win_fraction" in m else _VALIDATED)
  return results.as_declared(out, {k: d for k, d in CLAIMS.items() if k not in skipped})
