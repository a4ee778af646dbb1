"""FNO's computation: the model and the data of one run of ``config.runs``, the original
scripts' optimizer and loss, the training through ``experiments.train.fit`` and the test
errors. ``experiment.run`` calls these; no claims and no result files here.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.data import pde
from reprojax.experiments import train
from reprojax.experiments.common import Normalizer
from reprojax.experiments.common import relative_l2
from reprojax.models import fno


def make_model(rc: ml_collections.ConfigDict) -> fno.FNO:
  """The FNO of the run config ``rc``."""
  return fno.FNO(modes=tuple(rc.modes), width=rc.width, projection=rc.projection,
                 padding=rc.padding, layer_init=rc.layer_init)


def load_data(config: ml_collections.ConfigDict, rc: ml_collections.ConfigDict) -> pde.Split:
  """The run's training and test pairs (read from ``config.data_dir``, or generated)."""
  return pde.load(rc.pde, resolution=rc.resolution, solver_resolution=rc.solver_resolution,
                  n_train=rc.n_train, n_test=rc.n_test, seed=config.data_seed,
                  num_steps=rc.num_steps_solver, viscosity=rc.viscosity,
                  grf_params=tuple(rc.grf), grf_constant_mode=rc.grf_constant_mode,
                  data_dir=config.data_dir or None,
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
  """The original's optimizer: Adam with coupled L2, the rate halved every ``decay_every_epochs``.

  The original steps torch's Adam (eps 1e-8, weight decay added to the gradient) on
  the loss summed over the batch; we train on the batch mean, whose gradient is 1/B
  of that. Adam is invariant to that scale except through eps and the coupled decay,
  so both are divided by B: the steps are then exactly the original's.
  """
  steps_per_epoch = rc.n_train // rc.batch_size
  schedule = optax.exponential_decay(rc.learning_rate, rc.decay_every_epochs * steps_per_epoch,
                                     0.5, staircase=True)
  return optax.chain(optax.add_decayed_weights(coupled_decay(rc.weight_decay, rc.batch_size)),
                     optax.scale_by_adam(eps=1e-8 / rc.batch_size),
                     optax.scale_by_learning_rate(schedule))


def make_loss_fn(model: fno.FNO, yn: Normalizer) -> train.LossFn:
  """The training loss: per-example relative L2 of the decoded prediction (the original's LpLoss).

  ``batch`` is ``(x, y)``: encoded inputs and raw solutions; the FNO's output is
  decoded by ``yn`` before the error, as in the original scripts.
  """
  y_mean, y_std = jnp.asarray(yn.mean), jnp.asarray(yn.std)

  def loss_fn(params, batch, key):
    del key  # the FNO is deterministic
    x, y = batch
    pred = model.apply(params, x) * y_std + y_mean
    return relative_l2(pred, y), {}  # per example; fit averages the real ones

  return loss_fn


def train_run(config: ml_collections.ConfigDict, rc: ml_collections.ConfigDict, workdir: str,
              mesh: jax.sharding.Mesh, data: pde.Split, stop_after: int | None = None):
  """Trains one FNO; returns (final params, model, input normaliser, output normaliser)."""
  model = make_model(rc)
  xn = Normalizer(data.x_train, rc.normalize)
  yn = Normalizer(data.y_train, rc.normalize)
  steps_per_epoch = rc.n_train // rc.batch_size
  num_steps = rc.epochs * steps_per_epoch
  optimizer = make_optimizer(rc)
  loss_fn = make_loss_fn(model, yn)

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
  """The relative L2 error of each held-out pair, the batches split over the mesh."""
  y_mean, y_std = jnp.asarray(yn.mean), jnp.asarray(yn.std)

  def per_example(params, batch):
    x, y = batch
    return relative_l2(model.apply(params, x) * y_std + y_mean, y)

  x_test = xn.encode(data.x_test).astype(np.float32)
  return train.evaluate(per_example, params, (x_test, data.y_test), mesh, batch_size)
