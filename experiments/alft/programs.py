"""What the ALFT experiment computes: the stacked synthetic tensors and their masks, every
method's fit of one tensor replica (the fixed and the validated-ridge protocols), the
vmapped and sharded fits over the replicas, tensorly's masked CP baseline, and the Kinetic
held-out splits with each method's fits. :mod:`reprojax.experiments.alft.experiment` runs
them and gathers the metrics.
"""

from __future__ import annotations

import time

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import alft
from reprojax.data import alft as dalft
from reprojax.experiments import sharding

KINDS = ("aligned", "control")


# ------------------------------------------------------------------ synthetic

def synthetic_batch(config):
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


def replica_fits(config, shape):
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


def per_replica(config, fit_one):
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


def smooth_weights(config, kinds_B, n_modes):
  """ALFT's smoothness weights per replica and mode, ``(B, N)``: every mode is ordered in the
  aligned kind; in the control modes 0 and 1 are shuffled, so only mode 2 (time) is declared
  ordered there."""
  c = config.synth
  ordered = np.zeros((len(kinds_B), n_modes), np.float32)
  for b, ki in enumerate(kinds_B):
    modes = c.ordered_modes if KINDS[ki] == "aligned" else c.control_ordered_modes
    ordered[b, list(modes)] = 1.0
  return jnp.asarray(config.smooth * ordered)


def fit_synthetic(config, y_B, tr_B, te_B, grid, mesh=None):
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
  smooth_BxN = smooth_weights(config, grid[:, 0], len(shape))
  fits = replica_fits(config, shape)
  out = {}
  extra = {"h": None, "l2": {}}
  for name in tuple(config.methods) + tuple(m + "_val" for m in config.validation.methods):
    t0 = time.time()
    (rmse, mae), aux = sharding.vmap_sharded(per_replica(config, fits[name]), mesh)(
        y_B, tr_B, te_B, keys, scale_B, smooth_BxN)
    out[name] = (np.asarray(rmse), np.asarray(mae))
    if name == "alft_als":  # the recovered offset function at the planted rank (for the plot)
      extra["h"] = np.asarray(aux)[:, list(config.ranks).index(c.rank)]
    if name.endswith("_val"):
      extra["l2"][name] = np.asarray(aux)  # (B, n_ranks) chosen ridge
    logging.info("synthetic %-14s %d fits in %.1f s", name, n_b * len(config.ranks), time.time() - t0)
  return out, extra


def tensorly_synthetic(config, y_B, tr_B, te_B):
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

def kinetic(config, mesh=None):
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
