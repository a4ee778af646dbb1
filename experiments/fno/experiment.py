"""The FNO reproduction: train the FNO on Burgers 1D and Darcy 2D, report relative L2 test error.

Each entry of ``config.runs`` is one training run (one PDE at one resolution),
trained with :func:`reprojax.experiments.train.fit` in ``<workdir>/<run>/`` (so each run
checkpoints and resumes on its own), then evaluated on the held-out pairs.
"""

from __future__ import annotations

import os
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.data import pde
from reprojax.experiments import plotting
from reprojax.experiments.common import Normalizer
from reprojax.experiments.common import relative_l2
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.models import fno


def make_model(rc: ml_collections.ConfigDict) -> fno.FNO:
  return fno.FNO(modes=tuple(rc.modes), width=rc.width, projection=rc.projection,
                 padding=rc.padding, layer_init=rc.layer_init)


def load_data(config: ml_collections.ConfigDict, rc: ml_collections.ConfigDict) -> pde.Split:
  return pde.load(rc.pde, resolution=rc.resolution, solver_resolution=rc.solver_resolution,
                  n_train=rc.n_train, n_test=rc.n_test, seed=config.data_seed,
                  num_steps=rc.num_steps_solver, viscosity=rc.viscosity,
                  grf_params=tuple(rc.grf), data_dir=config.data_dir or None,
                  generate=config.generate_data)


def coupled_decay(weight_decay: float, batch_size: int) -> float:
  """The coupled L2 on our batch-*mean* loss that equals the original's on its batch *sum*.

  The original scripts minimise ``LpLoss(size_average=False)``, the relative L2 summed
  over the batch, with ``torch.optim.Adam(weight_decay=wd)``, which adds ``wd * w`` to
  that sum's gradient. Adam is invariant to the scale of its input (up to its epsilon),
  so ``B * g_mean + wd * w`` and ``g_mean + (wd / B) * w`` give the same update: on the
  mean loss the original's decay is ``wd / B`` (:func:`make_optimizer` is tested against
  torch's Adam in tests/experiments/test_fno_experiment.py).
  """
  return weight_decay / batch_size


def make_optimizer(rc: ml_collections.ConfigDict) -> optax.GradientTransformation:
  """The original's optimizer: Adam with coupled L2, the rate halved every ``decay_every_epochs``."""
  steps_per_epoch = rc.n_train // rc.batch_size
  schedule = optax.exponential_decay(rc.learning_rate, rc.decay_every_epochs * steps_per_epoch,
                                     0.5, staircase=True)
  return optax.chain(optax.add_decayed_weights(coupled_decay(rc.weight_decay, rc.batch_size)),
                     optax.scale_by_adam(), optax.scale_by_learning_rate(schedule))


def train_run(config: ml_collections.ConfigDict, rc: ml_collections.ConfigDict, workdir: str,
              mesh: jax.sharding.Mesh, data: pde.Split, stop_after: int | None = None):
  """Trains one FNO; returns (final params, model, input normaliser, output normaliser)."""
  model = make_model(rc)
  xn = Normalizer(data.x_train, rc.normalize)
  yn = Normalizer(data.y_train, rc.normalize)
  y_mean, y_std = jnp.asarray(yn.mean), jnp.asarray(yn.std)
  steps_per_epoch = rc.n_train // rc.batch_size
  num_steps = rc.epochs * steps_per_epoch
  optimizer = make_optimizer(rc)

  def loss_fn(params, batch, key):
    del key  # the FNO is deterministic
    x, y = batch
    pred = model.apply(params, x) * y_std + y_mean
    return relative_l2(pred, y), {}  # per example; fit averages the real ones

  x_train = xn.encode(data.x_train).astype(np.float32)
  state = train.fit(
      workdir=workdir, mesh=mesh, init_params=lambda k: model.init(k, x_train[:1]),
      loss_fn=loss_fn, optimizer=optimizer, train_arrays=(x_train, data.y_train),
      batch_size=rc.batch_size, num_steps=num_steps, seed=config.seed,
      log_every=config.log_every, checkpoint_every=config.checkpoint_every,
      stop_after=stop_after)
  return state.params, model, xn, yn


def test_errors(params: Any, model: fno.FNO, xn: Normalizer, yn: Normalizer, data: pde.Split,
                mesh: jax.sharding.Mesh, batch_size: int) -> np.ndarray:
  y_mean, y_std = jnp.asarray(yn.mean), jnp.asarray(yn.std)

  def per_example(params, batch):
    x, y = batch
    return relative_l2(model.apply(params, x) * y_std + y_mean, y)

  x_test = xn.encode(data.x_test).astype(np.float32)
  return train.evaluate(per_example, params, (x_test, data.y_test), mesh, batch_size)


def _plot(workdir: str, name: str, rc, data: pde.Split, pred: np.ndarray, err: float,
          curve: list[dict]) -> None:
  if rc.pde == "burgers":
    fig, axes = plotting.subplots(1, 2, figsize=(10, 3.5))
    x = np.arange(rc.resolution) / rc.resolution
    axes[0].plot(x, data.x_test[0], label="u(x, 0) (input)", alpha=0.6)
    axes[0].plot(x, data.y_test[0], label="u(x, 1) (truth)")
    axes[0].plot(x, pred, "--", label="FNO")
    axes[0].set_xlabel("x")
    axes[0].legend(fontsize=8)
  else:
    fig, axes = plotting.subplots(1, 4, figsize=(15, 3.5))
    for ax, img, title in zip(axes[:3], (data.x_test[0], data.y_test[0], pred),
                              ("coefficient a", "solution u", "FNO")):
      im = ax.imshow(np.asarray(img).T, origin="lower", extent=(0, 1, 0, 1))  # x right, y up
      ax.set_title(title)
      fig.colorbar(im, ax=ax, fraction=0.046)
  steps = [r["step"] for r in curve]
  axes[-1].semilogy(steps, [r["loss"] for r in curve])
  axes[-1].set_xlabel("step")
  axes[-1].set_ylabel("train relative L2")
  fig.suptitle(f"FNO {name}: s={rc.resolution}, n_train={rc.n_train}, test rel. L2 = {err:.4f} "
               f"(paper {rc.paper_rel_l2:.4f}, {rc.paper_setting})", fontsize=9)
  fig.tight_layout()
  plotting.save(fig, workdir, f"fno_{name}.png", dpi=110)


def run(config: ml_collections.ConfigDict, workdir: str) -> results.Outcome:
  mesh = sharding.config_mesh(config)
  for name, rc in config.runs.items():  # validate everything before any work
    if rc.batch_size < 1:
      raise ValueError(f"runs.{name}: batch_size must be >= 1, got {rc.batch_size}")
    if rc.n_train < rc.batch_size:
      raise ValueError(f"runs.{name}: n_train={rc.n_train} is below batch_size={rc.batch_size}")
  metrics, claims = {}, []
  for name, rc in config.runs.items():
    data = load_data(config, rc)
    run_dir = os.path.join(workdir, name)
    params, model, xn, yn = train_run(config, rc, run_dir, mesh, data)
    errs = test_errors(params, model, xn, yn, data, mesh, rc.batch_size)
    err = float(errs.mean())
    se = float(errs.std(ddof=1) / np.sqrt(errs.size))
    metrics[f"{name}_rel_l2"] = err
    metrics[f"{name}_rel_l2_se"] = se
    metrics[f"{name}_paper_rel_l2"] = rc.paper_rel_l2
    logging.info("%s: test relative L2 %.4f +- %.4f (paper %.4f)", name, err, se, rc.paper_rel_l2)
    if jax.process_index() == 0:
      pred = np.asarray(model.apply(params, xn.encode(data.x_test[:1]))[0]) * yn.std + yn.mean
      curve = [r for r in train.metrics_lib.MetricWriter(run_dir).read() if "loss" in r]
      _plot(workdir, name, rc, data, pred, err, curve)
    claims.append(results.Claim(
        id=f"{name}_rel_l2",
        statement=f"FNO relative L2 test error on {rc.pde} ({rc.paper_setting})",
        paper=f"{rc.paper_rel_l2:.4f}",
        ours=(f"{err:.4f} +- {se:.4f} (s={rc.resolution}, {rc.n_train} train, "
              f"{rc.epochs} epochs)"),
        holds=err <= config.tolerance * rc.paper_rel_l2))
  return results.Outcome(metrics=metrics, claims=claims)
