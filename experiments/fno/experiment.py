"""The FNO reproduction: train the FNO on Burgers 1D and Darcy 2D, report relative L2 test error.

Each entry of ``config.runs`` is one training run (one PDE at one resolution),
trained with :func:`reprojax.experiments.train.fit` in ``<workdir>/<run>/`` (so each run
checkpoints and resumes on its own), then evaluated on the held-out pairs.
"""

from __future__ import annotations

import os

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.common import Normalizer
from reprojax.experiments.common import standard_error
from reprojax.experiments.fno import plots
from reprojax.experiments.fno import programs


def _check_runs(config: ml_collections.ConfigDict) -> None:
  """Raises ValueError for a run whose batch is empty or larger than its training set."""
  for name, rc in config.runs.items():
    if rc.batch_size < 1:
      raise ValueError(f"runs.{name}: batch_size must be >= 1, got {rc.batch_size}")
    if rc.n_train < rc.batch_size:
      raise ValueError(f"runs.{name}: n_train={rc.n_train} is below batch_size={rc.batch_size}")


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  With a key: concrete, valid inputs drawn from it (synthetic is fine: no dataset
  loading, no data generation, no files); with None: ``jax.ShapeDtypeStruct`` args only.

  The step is one training step of the config's first run (Burgers in every
  config): :func:`reprojax.experiments.train.make_train_step` with that run's
  model, optimizer and loss (:func:`programs.make_loss_fn`) on a batch of ``batch_size``
  pairs at its resolution, padded and masked for the mesh as ``fit`` pads it.
  Arguments are ``(state, (x_B, y_B), key)``: the state as host numpy arrays (the
  step donates it), standard normal inputs and outputs, and the step key. The
  parameters are drawn on the host, uniform within +-1/sqrt(fan-in) of each leaf
  (PyTorch's default for a dense layer), with the optimizer's initial state:
  valid, and without compiling the model's initialiser (about 6 s of CPU). The
  output normaliser is the identity (Burgers runs unnormalised; a normalised run
  decodes with its training data's statistics).
  """
  _check_runs(config)
  rc = next(iter(config.runs.values()))
  model = programs.make_model(rc)
  optimizer = programs.make_optimizer(rc)
  ndim = 1 if rc.pde == "burgers" else 2
  shape = (rc.batch_size,) + (rc.resolution,) * ndim
  loss_fn = programs.make_loss_fn(model, Normalizer(np.zeros((1,) + shape[1:], np.float32), False))

  def init(k):
    params = model.init(k, jnp.zeros((1,) + shape[1:], jnp.float32))
    return train.TrainState(jnp.zeros((), jnp.int32), params, optimizer.init(params))

  abstract = jax.eval_shape(init, jax.random.key(0))

  def build(mesh):
    return train.make_train_step(mesh=mesh, loss_fn=loss_fn, optimizer=optimizer,
                                 batch_size=rc.batch_size, abstract_state=abstract)

  if key is None:
    data = jax.ShapeDtypeStruct(shape, jnp.float32)
    args = (abstract, (data, data), jax.eval_shape(lambda: jax.random.key(0)))
  else:
    k_host, k_step = jax.random.split(key)
    rng = np.random.default_rng(np.asarray(jax.random.key_data(k_host)))

    def draw(leaf):
      bound = 1.0 / np.sqrt(leaf.shape[-2] if len(leaf.shape) >= 2 else leaf.shape[0])
      return rng.uniform(-bound, bound, leaf.shape).astype(leaf.dtype)

    params = jax.tree.map(draw, abstract.params)
    state = train.TrainState(np.zeros((), np.int32), params,
                             jax.device_get(optimizer.init(params)))
    x, y = (rng.standard_normal(shape, np.float32) for _ in range(2))
    args = (state, (x, y), k_step)
  return sharding.Step(build, args)


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Trains and tests every run of ``config.runs``; writes a figure per run, returns the metrics.

  Metrics per run: ``<name>_rel_l2`` (mean test relative L2), its standard error
  ``<name>_rel_l2_se``, and the paper's figure ``<name>_paper_rel_l2``.
  """
  mesh = sharding.config_mesh(config)
  _check_runs(config)  # validate everything before any work
  metrics = {}
  for name, rc in config.runs.items():
    data = programs.load_data(config, rc)
    run_dir = os.path.join(workdir, name)
    params, model, xn, yn = programs.train_run(config, rc, run_dir, mesh, data)
    errs = programs.test_errors(params, model, xn, yn, data, mesh, rc.batch_size)
    err = float(errs.mean())
    se = float(standard_error(errs))
    metrics[f"{name}_rel_l2"] = err
    metrics[f"{name}_rel_l2_se"] = se
    metrics[f"{name}_paper_rel_l2"] = rc.paper_rel_l2
    logging.info("%s: test relative L2 %.4f +- %.4f (paper %.4f)", name, err, se, rc.paper_rel_l2)
    if jax.process_index() == 0:
      pred = np.asarray(model.apply(params, xn.encode(data.x_test[:1]))[0]) * yn.std + yn.mean
      curve = [r for r in train.metrics_lib.MetricWriter(run_dir).read() if "loss" in r]
      plots.prediction_and_curve(workdir, name, rc, data, pred, err, curve)
  return metrics

