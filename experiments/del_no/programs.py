"""What the del-NO experiment computes: the backbones and del-NO around them (model factories,
channel gains, the optimizer's schedule), the replica trainer's loss and its timing, the run
plan (which replicas train together as one compiled model), the data cache
(:class:`Inputs`: datasets and their noisy encoded inputs, each built once), and the
read-outs: the grid's cells, the sweeps' learned orders and their permutation test.
``experiment.run`` orchestrates these; the side studies (``authors.py``, ``controls.py``,
``ablation.py``) reuse them.
"""

from __future__ import annotations

import zlib
from typing import Any, NamedTuple

from absl import logging
import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from scipy import stats

from reprojax.algorithms import del_no as del_no_lib
from reprojax.data import del_no_pdes
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.common import Normalizer
from reprojax.experiments.common import relative_l2
from reprojax.experiments.del_no.claims import backbones_of
from reprojax.experiments.del_no.claims import conditions
from reprojax.experiments.del_no.claims import sweep_levels
from reprojax.models import deeponet
from reprojax.models import del_no
from reprojax.models import fno
from reprojax.models import unet_operator

NOISE_PROTOCOLS = ("ours", "authors")  # config.noise_protocol (Inputs.inputs)


def make_backbone(name: str, bc: ml_collections.ConfigDict, dims: int = 1,
                  periodic: bool = True, layer_init: str = "flax") -> nn.Module:
  """One backbone for 1-D (periodic) or 2-D grids; 2-D non-periodic grids (Darcy) pad the FNO.

  ``layer_init`` (FNO only): ``"flax"`` or ``"torch"`` (PyTorch's defaults, the authors' code).
  """
  if name == "fno":
    modes = (bc.fno_modes,) if dims == 1 else (bc.fno_modes_2d,) * 2
    return fno.FNO(modes=modes, width=bc.fno_width, depth=bc.fno_depth,
                   projection=2 * bc.fno_width, padding=0 if periodic else bc.fno_padding_2d,
                   spectral_method="dft" if dims == 1 else "fft",  # same operator; fft is faster in 2-D
                   layer_init=layer_init)
  if name == "unet":
    return unet_operator.UNetOperator(dims=dims, width=bc.unet_width, levels=bc.unet_levels,
                                      padding="CIRCULAR" if periodic else "SAME")
  if name == "deeponet":
    return deeponet.DeepONet(dims=dims, branch=(bc.deeponet_width,) * 2,
                             trunk=(bc.deeponet_width,) * 2, basis=bc.deeponet_basis)
  raise ValueError(f"unknown backbone {name!r}; expected fno, unet or deeponet")


def initial_orders(m: int) -> tuple[float, ...]:
  """The paper's initial orders: the integers 1 .. max(2, m) (1, 2; and 3 for KdV)."""
  return tuple(float(k) for k in range(1, max(2, m) + 1))


def make_model(backbone: str, config: ml_collections.ConfigDict, m: int, augmented: bool,
               x_train: np.ndarray | None = None, dims: int = 1, periodic: bool = True):
  """The backbone (or del-NO around it) and its optimizer.

  del-NO's orders start at the integers 1..max(2, m) (per axis in 2D, plus a mixed
  partial at (1, 1)), its scales at 1, and the orders get ``order_lr_multiplier`` x
  the network's rate (the paper's 10x), all as the paper's README says. On a
  non-periodic grid (Darcy) the GL history is zero outside the domain.

  With ``config.channel_norm = "rms"`` (default ``"none"``) each channel gets a fixed,
  unlearned factor 1 / RMS of that channel over ``x_train`` (the clean training
  inputs: :func:`channel_gains`), so channels start at unit size and s_k at 1.

  With ``config.standardize_features`` (1-D only) and training inputs given, each
  scale s_k starts at 1 / RMS of its GL channel over those inputs, so every channel
  starts at unit size (without the h^-beta factor the order-3 channel is ~1e-2 of u
  at s = 64).
  """
  net = make_backbone(backbone, config.backbones, dims, periodic)
  norm = config.get("channel_norm", "none")
  if norm not in ("none", "rms"):
    raise ValueError(f"channel_norm must be 'none' or 'rms', got {norm!r}")
  if not augmented:
    return net, optax.adamw(schedule(config), weight_decay=config.weight_decay)
  orders = initial_orders(m)
  boundary = "periodic" if periodic else "zero"
  scales = None
  if config.get("standardize_features", False) and x_train is not None and dims == 1:
    f = del_no_lib.derivative_features(jnp.asarray(x_train[:256]), jnp.asarray(orders),
                                       jnp.ones(len(orders)), gl_terms=config.gl_terms,
                                       boundary=boundary)
    scales = tuple(float(v) for v in 1.0 / np.sqrt(np.mean(np.square(f), axis=(0, 1))))
  gains = None
  if norm == "rms":
    if x_train is None:
      raise ValueError("channel_norm='rms' needs the (clean) training inputs x_train")
    gains = channel_gains(x_train[:256], orders, dims, config.gl_terms, boundary)
  model = del_no.DelNO(net, orders=orders, dims=dims, gl_terms=config.gl_terms,
                       boundary=boundary, init_scales=scales, channel_gains=gains)
  return model, del_no.optimizer(schedule(config), config.order_lr_multiplier,
                                 config.weight_decay)


def channel_gains(x_NxS: np.ndarray, orders: tuple[float, ...], dims: int, gl_terms: int,
                  boundary: str) -> tuple[float, ...]:
  """1 / RMS of each del-NO channel (s_k = 1, initial orders; 2-D: mixed (1, 1)) over inputs ``x``.

  Computed once from the training inputs and then fixed (``DelNO.channel_gains``), so
  every channel starts at unit RMS on those inputs while its learned s_k starts at 1.
  """
  x = jnp.asarray(x_NxS, jnp.float32)
  b = jnp.asarray(orders, jnp.float32)
  ones = jnp.ones(len(orders), jnp.float32)
  if dims == 1:
    f = del_no_lib.derivative_features(x, b, ones, gl_terms=gl_terms, boundary=boundary)
  else:
    f = del_no_lib.derivative_features_2d(x, b, b, ones, ones, jnp.ones(2, jnp.float32),
                                          jnp.float32(1), gl_terms=gl_terms, boundary=boundary)
  rms = np.sqrt(np.mean(np.square(np.asarray(f, np.float64)), axis=tuple(range(f.ndim - 1))))
  return tuple(float(v) for v in 1.0 / np.maximum(rms, 1e-12))


def schedule(config) -> optax.Schedule:
  """The network's learning rate: ``learning_rate`` with cosine decay to 0 over ``steps``."""
  return optax.cosine_decay_schedule(config.learning_rate, config.steps)


def _norm_rows(y_norm, r: int):
  """Output normaliser means and stds stacked per replica: ``(R, *grid)`` each."""
  norms = [y_norm] * r if isinstance(y_norm, Normalizer) else list(y_norm)
  if len(norms) != r:
    raise ValueError(f"got {len(norms)} output normalisers for {r} replicas")
  return (np.stack([np.asarray(n.mean, np.float32) for n in norms]),
          np.stack([np.asarray(n.std, np.float32) for n in norms]))


def replica_fns(model: nn.Module, x_example: np.ndarray):
  """One replica's ``(init_params, loss_fn, test_errors)`` for :func:`train.fit_replicas`.

  The loss is the batch's per-example relative L2 error of the decoded prediction
  ``model(x) * y_std + y_mean``, with ``(y_mean, y_std)`` the replica's output
  normaliser (its ``replica_args``); ``test_errors`` is the same error on every
  test pair. ``x_example`` (one input, ``(1, *grid)``) gives ``model.init`` its shapes.
  """

  def predict(params, x, norm):
    y_mean, y_std = norm
    return model.apply(params, x) * y_std + y_mean

  def loss_fn(params, batch, key, norm):
    del key  # the loss is deterministic
    x_B, y_B = batch
    return relative_l2(predict(params, x_B, norm), y_B), {}

  def test_errors(params, arrays, norm):
    x, y = arrays
    return relative_l2(predict(params, x, norm), y)

  return (lambda key: model.init(key, x_example)), loss_fn, test_errors


class Trained(NamedTuple):
  """What :func:`train_replicas` returns."""

  params: Any  # the R replicas' parameters (leading axis R)
  losses_TxR: np.ndarray  # training loss of every step
  step_s: float  # seconds per step of the whole compiled run (all R replicas)
  test_RxM: np.ndarray | None  # per-example relative L2 test errors (None without test data)


def train_replicas(model: nn.Module, optimizer: optax.GradientTransformation,
                   x_RxNxS: np.ndarray, y_RxNxS: np.ndarray, n_R: np.ndarray, seeds_R: np.ndarray,
                   y_norm, steps: int, batch_size: int, mesh=None,
                   x_test_RxMxS: np.ndarray | None = None,
                   y_test_RxMxS: np.ndarray | None = None) -> Trained:
  """Trains R replicas for ``steps`` minibatch steps; replica r draws from its first n_R[r] pairs.

  :func:`reprojax.experiments.train.fit_replicas` with del-NO's loss: the mean over
  the batch of the relative L2 error of the decoded prediction
  ``model(x) * y_std + y_mean`` (replica r's output normaliser). Replica r starts
  from ``model.init(key(seeds_R[r]))`` and its minibatches are drawn from its seed
  alone, so replicas of one seed under different noise see the same pairs (common
  random numbers) and a replica trains alike alone or in a batch. All R replicas
  are one ``jax.jit`` of a ``jax.vmap``, split over the mesh's ``data`` axis.

  ``y_norm`` is one output :class:`Normalizer` for all replicas, or a sequence of R
  (replicas trained on different datasets).
  """
  mesh = sharding.make_mesh() if mesh is None else mesh
  r = len(seeds_R)
  init_params, loss_fn, test_errors = replica_fns(model, np.asarray(x_RxNxS)[0, :1])
  seeds = np.asarray(seeds_R)
  init_keys = jax.vmap(jax.random.key)(seeds)
  with_test = x_test_RxMxS is not None
  out = train.fit_replicas(
      mesh=mesh, init_params=init_params, loss_fn=loss_fn,
      optimizer=optimizer, init_keys=init_keys,
      # The relative L2 loss draws no randomness; the step keys (a root of their own) go unused.
      step_keys=jax.vmap(jax.random.fold_in, (None, 0))(jax.random.key(1), seeds),
      train_arrays=(np.asarray(x_RxNxS), np.asarray(y_RxNxS)), batch_size=batch_size,
      num_steps=steps, batch_seeds=[int(s) for s in seeds], num_examples=[int(n) for n in n_R],
      replica_args=_norm_rows(y_norm, r), eval_fn=test_errors if with_test else None,
      eval_arrays=(np.asarray(x_test_RxMxS), np.asarray(y_test_RxMxS)) if with_test else ())
  return Trained(out.params, out.metrics["loss"].T, out.step_s, out.evals)


def train_step_call(model, optimizer, x_BxS, y_BxS, replicas: int):
  """A no-argument call of one jitted, vmapped training step of ``replicas`` replicas."""
  params = jax.vmap(lambda k: model.init(k, x_BxS[:1]))(jax.random.split(jax.random.key(0),
                                                                          replicas))
  opt_state = jax.vmap(optimizer.init)(params)
  x = jnp.broadcast_to(x_BxS, (replicas,) + x_BxS.shape)
  y = jnp.broadcast_to(y_BxS, (replicas,) + y_BxS.shape)

  def one(p, o, xb, yb):
    g = jax.grad(lambda q: jnp.mean(relative_l2(model.apply(q, xb), yb)))(p)
    upd, o = optimizer.update(g, o, p)
    return optax.apply_updates(p, upd), o

  f = jax.jit(jax.vmap(one))
  return lambda: f(params, opt_state, x, y)


def step_time(model, optimizer, x_BxS, y_BxS, replicas: int, repeats: int) -> float:
  """Seconds per vmapped training step of ``replicas`` replicas (compiled, warm, median of repeats)."""
  return common.median_seconds(train_step_call(model, optimizer, x_BxS, y_BxS, replicas), repeats)


def pde_sizes(config, pde: str) -> ml_collections.ConfigDict:
  """Grid, sample and batch sizes of one PDE: Darcy (2-D) has its own (``config.darcy``)."""
  if pde == "darcy":
    return config.darcy
  return ml_collections.ConfigDict(dict(
      resolution=config.resolution, solver_resolution=config.solver_resolution,
      n_train=config.n_train, n_test=config.n_test, batch_size=config.batch_size))


class Replica(NamedTuple):
  """One training run's data and seed."""

  pde: str
  alpha: float  # spectral decay of the 1-D input law (GRF_DEFAULT's 2 unless swept)
  sigma: float  # relative input noise level (train and test inputs)
  n: int  # training pairs it draws from (the first n)
  seed: int


class ModelKey(NamedTuple):
  """Replicas with equal keys train as one vmapped run (one compile)."""

  backbone: str
  dims: int  # 1 (periodic) or 2 (Darcy, non-periodic)
  orders: tuple[float, ...]  # del-NO's initial orders; () for the plain backbone


def model_key(backbone: str, pde: str, augmented: bool) -> ModelKey:
  orders = initial_orders(del_no_pdes.PDE_ORDER[pde]) if augmented else ()
  return ModelKey(backbone, 2 if pde == "darcy" else 1, orders)


class Inputs:
  """Datasets by (pde, alpha), loaded once, and their encoded (noisy) inputs by (pde, alpha, sigma)."""

  def __init__(self, config):
    self.config = config
    self.data, self.x = {}, {}

  def dataset(self, pde, alpha):
    if (pde, alpha) not in self.data:
      g = del_no_pdes.GRF_DEFAULT
      sz = pde_sizes(self.config, pde)
      split = del_no_pdes.load(
          pde, resolution=sz.resolution, solver_resolution=sz.solver_resolution,
          n_train=sz.n_train, n_test=sz.n_test, seed=self.config.data_seed,
          grf_params=(g[0], g[1], alpha),
          data_dir=self.config.data_dir or None, generate=self.config.generate_data)
      # Scalar input normalisation (a pointwise one would distort the derivatives); pointwise output.
      self.data[(pde, alpha)] = (split, Normalizer(split.x_train.reshape(-1, 1), True),
                                 Normalizer(split.y_train, True))
    return self.data[(pde, alpha)]

  def inputs(self, pde, alpha, sigma):
    """Encoded (train, test) inputs with relative noise sigma (a fixed draw per setting).

    ``config.noise_protocol``: ``"ours"`` noises train and test inputs, each sample by its
    own RMS; ``"authors"`` noises the training inputs only, by one global std (their
    notebooks 2 and 3), and leaves the test inputs clean.
    """
    if (pde, alpha, sigma) not in self.x:
      split, xn, _ = self.dataset(pde, alpha)
      out = []
      protocol = self.config.get("noise_protocol", "ours")
      if protocol not in NOISE_PROTOCOLS:
        raise ValueError(f"noise_protocol must be one of {NOISE_PROTOCOLS}, got {protocol!r}")
      for part, x in (("train", split.x_train), ("test", split.x_test)):
        if sigma > 0 and (protocol == "ours" or part == "train"):
          tag = zlib.crc32(f"{pde}|{alpha:g}|{sigma:g}|{part}".encode()) & 0x7FFFFFFF
          key = jax.random.fold_in(jax.random.key(self.config.seed + 1000), tag)
          add = del_no_pdes.add_noise if protocol == "ours" else del_no_pdes.add_noise_global
          x = np.asarray(add(key, jnp.asarray(x), sigma), np.float32)
        out.append(xn.encode(x).astype(np.float32))
      self.x[(pde, alpha, sigma)] = tuple(out)
    return self.x[(pde, alpha, sigma)]


def order_summary(params_R) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
  """The learned orders of R del-NO replicas.

  Returns ``(orders_RxJ, names_J, top_R, xy_gap_R)``: every order, its name, the top
  order (1-D: the largest beta_k; 2-D: the largest directional order or the mixed
  partial's total order a + b, whichever is larger), and in 2-D the largest
  ``|beta^x_k - beta^y_k|`` (NaN in 1-D).
  """
  o = {k: np.asarray(v) for k, v in del_no.learned_orders(params_R).items()}
  if "beta" in o:
    b = o["beta"]
    return b, [f"beta{k + 1}" for k in range(b.shape[1])], b.max(1), np.full(len(b), np.nan)
  bx, by, bm = o["beta_x"], o["beta_y"], o["beta_mixed"]
  names = ([f"beta_x{k + 1}" for k in range(bx.shape[1])]
           + [f"beta_y{k + 1}" for k in range(by.shape[1])] + ["beta_mixed_x", "beta_mixed_y"])
  top = np.maximum(np.maximum(bx.max(1), by.max(1)), bm.sum(1))
  return np.concatenate([bx, by, bm], 1), names, top, np.abs(bx - by).max(1)


def train_groups(config, requests: dict[ModelKey, list[Replica]], inputs: Inputs, mesh=None):
  """Trains every requested (model, replica) once: one vmapped run per model key.

  Returns ``(per_replica, step_s)``: ``per_replica[(key, replica)]`` holds the test
  error (mean over test pairs), the final-tenth mean training loss and, for del-NO,
  the learned orders; ``step_s[key]`` is the run's seconds per step per replica.
  """
  per_replica, step_s = {}, {}
  for key, reps in requests.items():
    reps = list(dict.fromkeys(reps))
    xs = [inputs.inputs(r.pde, r.alpha, r.sigma) for r in reps]
    data = [inputs.dataset(r.pde, r.alpha) for r in reps]
    sz = pde_sizes(config, reps[0].pde)
    m = int(max(key.orders)) if key.orders else 2
    # Channel statistics come from the clean training inputs of the group's first replica's law.
    x_clean = inputs.inputs(reps[0].pde, reps[0].alpha, 0.0)[0]
    model, opt = make_model(key.backbone, config, m, bool(key.orders), x_clean, key.dims,
                            periodic=key.dims == 1)
    out = train_replicas(
        model, opt, np.stack([x[0] for x in xs]), np.stack([d[0].y_train for d in data]),
        np.asarray([r.n for r in reps]), np.asarray([r.seed for r in reps]),
        [d[2] for d in data], config.steps, sz.batch_size, mesh,
        np.stack([x[1] for x in xs]), np.stack([d[0].y_test for d in data]))
    step_s[key] = out.step_s / len(reps)
    tail = out.losses_TxR[-max(1, config.steps // 10):].mean(0)
    orders = order_summary(out.params) if key.orders else None
    for i, r in enumerate(reps):
      rec = dict(err=float(out.test_RxM[i].mean()), loss=float(tail[i]))
      if orders is not None:
        rec.update(orders=orders[0][i], names=orders[1], top=float(orders[2][i]),
                   xy_gap=float(orders[3][i]))
      per_replica[(key, r)] = rec
    logging.info("%s: %d replicas, %.2f ms per replica-step", key, len(reps), 1e3 * step_s[key])
  return per_replica, step_s


def mean_se(v) -> tuple[float, float]:
  """Mean and standard error over seeds, in float64 (the error is 0 for one value)."""
  v = np.asarray(v, np.float64)
  return float(v.mean()), float(common.standard_error(v)) if v.size > 1 else 0.0


def sweep_settings(config) -> dict[str, list[tuple[float, tuple[float, int, float]]]]:
  """Per sweep kind, its points as (value, (sigma, n, alpha)).

  * ``sigma``: input noise level, at n = n_train and the default input law;
  * ``n``: training-set size, at sigma = sweep_sigma;
  * ``alpha``: spectral decay of the input law N(0, s^2 (-Laplacian + tau^2)^-alpha): a
    smaller alpha puts more of the input's energy at high frequencies (the paper's
    "frequency content"), at sigma = sweep_sigma and n = n_train.
  """
  alpha0 = float(del_no_pdes.GRF_DEFAULT[2])
  make = {"sigma": lambda v: (float(v), int(config.n_train), alpha0),
          "n": lambda v: (float(config.sweep_sigma), int(v), alpha0),
          "alpha": lambda v: (float(config.sweep_sigma), int(config.n_train), float(v))}
  return {k: [(float(v), make[k](v)) for v in values] for k, values in sweep_levels(config).items()}


def requests(config) -> dict[ModelKey, list[Replica]]:
  """Every run the grid and the sweeps need, grouped by model.

  The plain 1-D backbones of all 1-D PDEs share a group; the sweeps join the grid's
  del-NO group of their backbone and PDE, whose clean and noisy cells they partly repeat.
  """
  alpha0 = float(del_no_pdes.GRF_DEFAULT[2])
  req: dict[ModelKey, list[Replica]] = {}
  for pde in config.pdes:
    n = pde_sizes(config, pde).n_train
    for bb in backbones_of(config, pde):
      for augmented in (False, True):
        req.setdefault(model_key(bb, pde, augmented), []).extend(
            Replica(pde, alpha0, sigma, n, int(config.seed + s))
            for _, sigma in conditions(config) for s in range(config.num_seeds))
  key = model_key(config.sweep_backbone, config.sweep_pde, True)
  for pts in sweep_settings(config).values() if config.sweep_num_seeds else ():
    for _, (sigma, n, alpha) in pts:
      req.setdefault(key, []).extend(Replica(config.sweep_pde, alpha, sigma, n, int(config.seed + s))
                                     for s in range(config.sweep_num_seeds))
  return req


def grid_cells(config, per_replica, step_s, metrics: dict) -> list[dict]:
  """The PDE x backbone x {clean, noisy} cells from the trained replicas (and their metrics)."""
  alpha0 = float(del_no_pdes.GRF_DEFAULT[2])
  cells = []
  for pde in config.pdes:
    m = del_no_pdes.PDE_ORDER[pde]
    n = pde_sizes(config, pde).n_train
    for bb in backbones_of(config, pde):
      kb, kd = model_key(bb, pde, False), model_key(bb, pde, True)
      metrics[f"{pde}_{bb}_step_overhead"] = step_s[kd] / step_s[kb] - 1
      for cname, sigma in conditions(config):
        reps = [Replica(pde, alpha0, sigma, n, int(config.seed + s))
                for s in range(config.num_seeds)]
        base = [per_replica[(kb, r)] for r in reps]
        dn = [per_replica[(kd, r)] for r in reps]
        b_mean, b_se = mean_se([x["err"] for x in base])
        d_mean, d_se = mean_se([x["err"] for x in dn])
        orders = np.mean([x["orders"] for x in dn], axis=0)
        cell = dict(pde=pde, backbone=bb, cond=cname, sigma=sigma, m=m, base=b_mean, base_se=b_se,
                    delno=d_mean, delno_se=d_se,
                    orders={nm: float(o) for nm, o in zip(dn[0]["names"], orders)},
                    max_order=float(np.mean([x["top"] for x in dn])), win=d_mean < b_mean,
                    xy_gap=float(np.mean([x["xy_gap"] for x in dn])))
        cells.append(cell)
        key = f"{pde}_{bb}_{cname}"
        metrics.update({f"{key}_base_rel_l2": b_mean, f"{key}_base_rel_l2_se": b_se,
                        f"{key}_delno_rel_l2": d_mean, f"{key}_delno_rel_l2_se": d_se,
                        f"{key}_max_order": cell["max_order"],
                        f"{key}_base_train_loss": float(np.mean([x["loss"] for x in base])),
                        f"{key}_delno_train_loss": float(np.mean([x["loss"] for x in dn]))})
        metrics.update({f"{key}_{nm}": b for nm, b in cell["orders"].items()})
        if pde == "darcy":
          metrics[f"{key}_xy_gap"] = cell["xy_gap"]
        logging.info("%s: base %.4f +- %.4f, del-NO %.4f +- %.4f, orders %s (m=%d)", key, b_mean,
                     b_se, d_mean, d_se, {nm: round(b, 3) for nm, b in cell["orders"].items()}, m)
  return cells


def sweep_results(config, per_replica, inputs: Inputs) -> tuple[dict, dict, dict]:
  """``{kind: (values_V, top_order_VxSeeds)}``, ``{alpha: the input's band edge}`` and
  ``{kind: beta_1 VxSeeds}`` (the order started at 1, which the paper's Fig. 2 plots).

  The band edge is the highest wavenumber whose mean input power exceeds the noise
  power at ``sweep_sigma``: the xi_max of the closed form in the alpha sweep.
  """
  key = model_key(config.sweep_backbone, config.sweep_pde, True)
  out, edges, first = {}, {}, {}
  for kind, pts in sweep_settings(config).items():
    recs = [[per_replica[(key, Replica(config.sweep_pde, alpha, sigma, n, int(config.seed + s)))]
             for s in range(config.sweep_num_seeds)] for _, (sigma, n, alpha) in pts]
    out[kind] = (np.asarray([v for v, _ in pts]), np.asarray([[r["top"] for r in row]
                                                              for row in recs]))
    first[kind] = np.asarray([[float(r["orders"][0]) for r in row] for row in recs])
    for _, (_, _, alpha) in pts:
      x = inputs.dataset(config.sweep_pde, alpha)[0].x_train
      power = np.mean(np.abs(np.fft.rfft(x, axis=-1)) ** 2, axis=0)
      noise = x.shape[-1] * config.sweep_sigma**2 * np.mean(x**2)
      edges[alpha] = float(max(2, np.max(np.nonzero(power > noise)[0], initial=2)))
  return out, edges, first


def sweep_significance(values_V, top_VxS, direction: int, num_resamples: int = 9999,
                       seed: int = 0) -> tuple[float, float]:
  """Spearman's rho of every replica's top order against its level, and its one-sided p-value.

  The p-value is a permutation test (levels shuffled over all V x S replicas, a
  fixed resampling seed): the chance, with no trend, of a rho at least as far in
  ``direction`` (+1: rising, -1: falling) as the one measured.
  """
  values_V, top_VxS = np.asarray(values_V, float), np.asarray(top_VxS, float)
  x = np.repeat(values_V, top_VxS.shape[1])
  y = top_VxS.reshape(-1)
  rho = float(stats.spearmanr(x, y).statistic)
  ry = stats.rankdata(y)
  ry = (ry - ry.mean()) / np.linalg.norm(ry - ry.mean())

  def rho_of(xs, axis=-1):  # Spearman's rho (Pearson of ranks), a batch of shuffles at once
    rx = stats.rankdata(np.moveaxis(xs, axis, -1), axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    return direction * (rx @ ry) / np.linalg.norm(rx, axis=-1)

  res = stats.permutation_test(
      (x,), rho_of, permutation_type="pairings", vectorized=True,
      n_resamples=num_resamples, alternative="greater", rng=np.random.default_rng(seed))
  return rho, float(res.pvalue)



def sweep_theory(config, kind: str, edges: dict[float, float]) -> list[float]:
  """The closed-form optimal order (:func:`reprojax.algorithms.del_no.optimal_order`) at each
  point of sweep ``kind``, with illustrative constants (c_b = c_v = 1, xi_c = FNO modes,
  xi_max = Nyquist, or for the alpha sweep the input's band edge above the noise,
  ``edges[alpha]``): the trend to compare, not a fit; sigma = 0 is taken as 1e-3."""
  m = del_no_pdes.PDE_ORDER[config.sweep_pde]
  out = []
  for _, (sigma, n, alpha) in sweep_settings(config)[kind]:
    xi_max = config.resolution / 2 if kind != "alpha" else edges[alpha]
    out.append(float(del_no_lib.optimal_order(
        float(m), float(n), max(sigma, 1e-3), float(config.backbones.fno_modes),
        float(xi_max))[0]))
  return out
